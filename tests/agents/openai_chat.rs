//! A scripted OpenAI-compatible Chat Completions server on loopback, as opencode's
//! `@ai-sdk/openai-compatible` provider calls it (`POST /v1/chat/completions` streamed as
//! `data: {chunk}` lines ending `data: [DONE]`, with `tool_calls` deltas; `GET /v1/models`). It
//! follows [`crate::script`]: a call offered tools gets the next `RUN[…]` as a call of the
//! agent's shell tool, or `DONE`; a side call without tools (opencode's title) gets a short
//! text. The shell tool is asked for by the name and argument shape the agent offered it under
//! (opencode 1.18.33: `bash`, `{command, timeout?, workdir?}`); an agent that offers no such
//! tool is told so in the reply, which ends its turn without `DONE`.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::script::{Recorder, Step, ToolResult, next_step};

/// The shell tool the script asks for by default (opencode's; Copilot CLI's too).
pub const SHELL_TOOL: &str = "bash";

pub struct OpenAiChat {
    /// Ends in `/v1`, as a provider's `baseURL` does.
    pub base_url: String,
    pub recorder: Recorder,
    offered: Arc<Mutex<Option<Value>>>,
    _task: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct Scripted {
    recorder: Recorder,
    /// The name of the agent's shell tool (`bash`; Qwen Code's `run_shell_command`).
    shell: &'static str,
    /// The shell tool's definition as the agent last offered it.
    offered: Arc<Mutex<Option<Value>>>,
}

impl OpenAiChat {
    pub async fn start() -> OpenAiChat {
        OpenAiChat::start_for(SHELL_TOOL).await
    }

    /// A server whose script asks for the shell tool the agent offers as `shell`.
    pub async fn start_for(shell: &'static str) -> OpenAiChat {
        let state = Scripted {
            shell,
            recorder: Recorder::default(),
            offered: Arc::default(),
        };
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .route("/v1/models", get(models))
            .fallback(|req: Request| async move {
                tracing::debug!("scripted openai: no route for {}", req.uri());
                StatusCode::NOT_FOUND
            })
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        OpenAiChat {
            base_url,
            recorder: state.recorder,
            offered: state.offered,
            _task: task,
        }
    }

    /// The shell tool's definition (`{type: "function", function: {name, parameters, …}}`) as
    /// the agent offered it, if it ever did.
    pub fn shell_tool(&self) -> Option<Value> {
        self.offered.lock().unwrap().clone()
    }
}

async fn models() -> impl IntoResponse {
    axum::Json(json!({"object": "list", "data": [
        {"id": "scripted", "object": "model", "created": 0, "owned_by": "countersign-tests"}
    ]}))
}

async fn completions(State(state): State<Scripted>, body: axum::Json<Value>) -> Response {
    let body = body.0;
    state.recorder.request("/v1/chat/completions", &body);
    let model = body["model"].as_str().unwrap_or("scripted").to_owned();
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let (prompt, results) = read_conversation(&body["messages"]);
    let count = results.len();
    let reply = if tools.is_empty() {
        Reply::Text("Scripted session".into())
    } else {
        state.recorder.results(results);
        let shell = tools.iter().find(|t| {
            t["function"]["name"] == state.shell
                && t["function"]["parameters"]["properties"]["command"]["type"] == "string"
        });
        match (shell, next_step(&prompt, count)) {
            (None, _) => {
                let names: Vec<&str> = tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str())
                    .collect();
                Reply::Text(format!(
                    "no `{}` tool taking a string `command` among {names:?}",
                    state.shell
                ))
            }
            (Some(shell), Step::Run { n, command }) => {
                *state.offered.lock().unwrap() = Some(shell.clone());
                state.recorder.asked();
                // A `description` only where the tool takes one (Copilot's requires it,
                // opencode's has none).
                let mut arguments = json!({ "command": command });
                if shell["function"]["parameters"]["properties"]
                    .get("description")
                    .is_some()
                {
                    arguments["description"] = json!(format!("step {n}"));
                }
                Reply::Call {
                    id: format!("call_scripted_{n}"),
                    name: state.shell,
                    arguments: arguments.to_string(),
                }
            }
            (Some(shell), Step::Say(text)) => {
                *state.offered.lock().unwrap() = Some(shell.clone());
                Reply::Text(text)
            }
        }
    };
    if body["stream"].as_bool().unwrap_or(false) {
        stream(&model, &reply)
    } else {
        whole(&model, &reply)
    }
}

enum Reply {
    Text(String),
    Call {
        id: String,
        name: &'static str,
        arguments: String,
    },
}

/// The person's words (every `user` message) and the tool results (`role: "tool"`), in order.
fn read_conversation(messages: &Value) -> (String, Vec<ToolResult>) {
    let mut prompt = String::new();
    let mut results = Vec::new();
    for message in messages.as_array().into_iter().flatten() {
        match message["role"].as_str() {
            Some("user") => {
                prompt.push_str(&text_of(&message["content"]));
                prompt.push('\n');
            }
            // Chat Completions has no error flag on a tool result: the agent says it in words.
            Some("tool") => results.push(ToolResult {
                text: text_of(&message["content"]),
                is_error: false,
            }),
            _ => {}
        }
    }
    (prompt, results)
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn usage() -> Value {
    json!({"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15})
}

fn whole(model: &str, reply: &Reply) -> Response {
    let (message, finish) = match reply {
        Reply::Text(text) => (json!({"role": "assistant", "content": text}), "stop"),
        Reply::Call {
            id,
            name,
            arguments,
        } => (
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": id, "type": "function",
                "function": {"name": name, "arguments": arguments}
            }]}),
            "tool_calls",
        ),
    };
    axum::Json(json!({
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage()
    }))
    .into_response()
}

fn stream(model: &str, reply: &Reply) -> Response {
    let chunk = |choices: Value| {
        json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0,
               "model": model, "choices": choices})
    };
    let mut chunks = Vec::new();
    match reply {
        Reply::Text(text) => {
            chunks.push(chunk(
                json!([{"index": 0, "delta": {"role": "assistant", "content": text},
                                      "finish_reason": null}]),
            ));
            chunks.push(chunk(
                json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
            ));
        }
        Reply::Call {
            id,
            name,
            arguments,
        } => {
            // The call's name first, its arguments in a later delta, as OpenAI streams them.
            chunks.push(chunk(
                json!([{"index": 0, "delta": {"role": "assistant", "tool_calls": [{
                "index": 0, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}}]}, "finish_reason": null}]),
            ));
            chunks.push(chunk(json!([{"index": 0, "delta": {"tool_calls": [{
                "index": 0, "function": {"arguments": arguments}}]}, "finish_reason": null}])));
            chunks.push(chunk(
                json!([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]),
            ));
        }
    }
    let mut last = chunk(json!([]));
    last["usage"] = usage();
    chunks.push(last);
    let mut text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    text.push_str("data: [DONE]\n\n");
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        text,
    )
        .into_response()
}
