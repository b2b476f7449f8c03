//! A scripted OpenAI Responses server on loopback, as Codex calls it (`POST /v1/responses`,
//! streamed as server-sent events: `response.created`, `response.output_item.added`/`done`,
//! `response.completed` with usage). It follows [`crate::script`]: each step is a call of the
//! shell tool Codex offers in the request's `tools` (0.171.0: `exec_command`, `{"cmd": …}`),
//! asking to run outside Codex's sandbox (`sandbox_permissions: "require_escalated"`, with a
//! `justification`) — the only kind of call Codex asks a person about, and so its
//! `PermissionRequest` hook. A request without that tool (the thread title Codex asks for on
//! the side) gets a short text. `GET /v1/models` is answered too, though Codex 0.171.0 with a
//! custom provider asks for nothing but responses.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::script::{Recorder, Step, ToolResult, next_step};

/// The model name Codex is configured with; the server answers any.
pub const MODEL: &str = "scripted-model";

pub struct OpenAiResponses {
    /// What a provider's `base_url` is set to (ends in `/v1`).
    pub base_url: String,
    pub recorder: Recorder,
    pub clock: Clock,
    _task: tokio::task::JoinHandle<()>,
}

/// When the server asked for each scripted call, and when Codex first sent each result back
/// (for the latency figures a test prints).
#[derive(Clone, Default)]
pub struct Clock {
    inner: Arc<Mutex<Times>>,
}

#[derive(Default)]
struct Times {
    asked: Vec<Instant>,
    answered: Vec<Instant>,
}

impl Clock {
    /// When the `n`th call (from 0) was sent to Codex.
    pub fn asked(&self, n: usize) -> Option<Instant> {
        self.inner.lock().unwrap().asked.get(n).copied()
    }

    /// When Codex first sent the `n`th call's result back.
    pub fn answered(&self, n: usize) -> Option<Instant> {
        self.inner.lock().unwrap().answered.get(n).copied()
    }

    fn saw(&self, results: usize, asking: Option<usize>) {
        let now = Instant::now();
        let mut times = self.inner.lock().unwrap();
        while times.answered.len() < results {
            times.answered.push(now);
        }
        if let Some(n) = asking
            && times.asked.len() == n
        {
            times.asked.push(now);
        }
    }
}

#[derive(Clone)]
struct Shared {
    recorder: Recorder,
    clock: Clock,
}

impl OpenAiResponses {
    pub async fn start() -> OpenAiResponses {
        let recorder = Recorder::default();
        let clock = Clock::default();
        let shared = Shared {
            recorder: recorder.clone(),
            clock: clock.clone(),
        };
        let app = Router::new()
            .route("/v1/responses", post(responses))
            .route("/v1/models", get(models))
            .fallback(|req: Request| async move {
                tracing::debug!("scripted responses: no route for {}", req.uri());
                StatusCode::NOT_FOUND
            })
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        OpenAiResponses {
            base_url,
            recorder,
            clock,
            _task: task,
        }
    }
}

async fn models() -> impl IntoResponse {
    axum::Json(json!({"object": "list", "data": [{"id": MODEL, "object": "model"}]}))
}

/// The shell tools Codex has offered, and how each takes a command.
fn shell_call(tools: &Value, n: usize, command: &str) -> Option<Value> {
    let names: Vec<&str> = tools
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let escalate = |mut args: Value| {
        args["sandbox_permissions"] = json!("require_escalated");
        args["justification"] = json!(format!("step {n}"));
        args
    };
    let (name, args) = if names.contains(&"exec_command") {
        ("exec_command", escalate(json!({"cmd": command})))
    } else if names.contains(&"shell_command") {
        ("shell_command", escalate(json!({"command": command})))
    } else {
        return None;
    };
    Some(json!({
        "type": "function_call", "id": format!("fc_scripted_{n}"),
        "call_id": format!("call_scripted_{n}"), "name": name,
        "arguments": args.to_string(), "status": "completed"
    }))
}

async fn responses(State(shared): State<Shared>, body: axum::Json<Value>) -> Response {
    let body = body.0;
    shared.recorder.request("/v1/responses", &body);
    let (prompt, results) = read_conversation(&body["input"]);
    let count = results.len();
    if shell_call(&body["tools"], 0, "true").is_none() {
        return reply(vec![message("Scripted title")]);
    }
    shared.recorder.results(results);
    let item = match next_step(&prompt, count) {
        Step::Run { n, command } => {
            shared.clock.saw(count, Some(n));
            shell_call(&body["tools"], n, &command).unwrap_or_else(|| message("no shell tool"))
        }
        Step::Say(text) => {
            shared.clock.saw(count, None);
            message(&text)
        }
    };
    reply(vec![item])
}

fn message(text: &str) -> Value {
    json!({
        "type": "message", "id": "msg_scripted", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}]
    })
}

/// The person's words (user text that is not context Codex adds itself, such as
/// `<environment_context>`) and the tool results, in order.
fn read_conversation(input: &Value) -> (String, Vec<ToolResult>) {
    let mut prompt = String::new();
    let mut results = Vec::new();
    for item in input.as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("message") if item["role"] == "user" => {
                for part in item["content"].as_array().into_iter().flatten() {
                    let text = part["text"].as_str().unwrap_or("");
                    if part["type"] == "input_text" && !text.trim_start().starts_with('<') {
                        prompt.push_str(text);
                        prompt.push('\n');
                    }
                }
            }
            Some("function_call_output" | "custom_tool_call_output") => {
                results.push(result_of(&item["output"]));
            }
            _ => {}
        }
    }
    (prompt, results)
}

/// A tool output: a string, content parts, or (older Codex) `{content, success}`.
fn result_of(output: &Value) -> ToolResult {
    match output {
        Value::String(text) => ToolResult {
            text: text.clone(),
            is_error: false,
        },
        Value::Array(parts) => ToolResult {
            text: parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            is_error: false,
        },
        other => ToolResult {
            text: other["content"].as_str().unwrap_or_default().to_owned(),
            is_error: other["success"] == false,
        },
    }
}

fn reply(items: Vec<Value>) -> Response {
    let response = |status: &str, output: &[Value]| {
        json!({
            "id": "resp_scripted", "object": "response", "model": MODEL, "status": status,
            "output": output,
            "usage": {
                "input_tokens": 12, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 15
            }
        })
    };
    let mut events = vec![json!({
        "type": "response.created", "response": response("in_progress", &[])
    })];
    for (index, item) in items.iter().enumerate() {
        for kind in ["response.output_item.added", "response.output_item.done"] {
            events.push(json!({"type": kind, "output_index": index, "item": item}));
        }
    }
    events.push(json!({
        "type": "response.completed", "response": response("completed", &items)
    }));
    let text: String = events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
        })
        .collect();
    ([(header::CONTENT_TYPE, "text/event-stream")], text).into_response()
}
