//! A scripted Anthropic Messages server on loopback, as Claude Code calls it
//! (`POST /v1/messages?beta=true`, streamed as server-sent events; `count_tokens`; side calls
//! without tools, such as a title, get a short text). It follows [`crate::script`].

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::script::{Recorder, Step, ToolResult, next_step};

pub struct Anthropic {
    pub base_url: String,
    pub recorder: Recorder,
    _task: tokio::task::JoinHandle<()>,
}

impl Anthropic {
    pub async fn start() -> Anthropic {
        let recorder = Recorder::default();
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/messages/count_tokens", post(count_tokens))
            .fallback(|req: Request| async move {
                tracing::debug!("scripted anthropic: no route for {}", req.uri());
                StatusCode::NOT_FOUND
            })
            .with_state(recorder.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Anthropic {
            base_url,
            recorder,
            _task: task,
        }
    }
}

async fn count_tokens() -> impl IntoResponse {
    axum::Json(json!({"input_tokens": 12}))
}

async fn messages(State(recorder): State<Recorder>, body: axum::Json<Value>) -> Response {
    let body = body.0;
    recorder.request("/v1/messages", &body);
    let model = body["model"].as_str().unwrap_or("claude").to_owned();
    let stream = body["stream"].as_bool().unwrap_or(false);
    let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let (prompt, results) = read_conversation(&body["messages"]);
    let count = results.len();
    if has_tools {
        recorder.results(results);
    }
    let blocks = if !has_tools {
        vec![json!({"type": "text", "text": "ok"})]
    } else {
        match next_step(&prompt, count) {
            Step::Run { n, command } => {
                recorder.asked();
                vec![json!({
                "type": "tool_use", "id": format!("toolu_scripted_{n}"), "name": "Bash",
                "input": {"command": command, "description": format!("step {n}")}
                })]
            }
            Step::Say(text) => vec![json!({"type": "text", "text": text})],
        }
    };
    reply(&model, blocks, stream)
}

/// The person's words (every user text block that is not a tool result) and the tool results,
/// in order.
fn read_conversation(messages: &Value) -> (String, Vec<ToolResult>) {
    let mut prompt = String::new();
    let mut results = Vec::new();
    for message in messages.as_array().into_iter().flatten() {
        if message["role"] != "user" {
            continue;
        }
        match &message["content"] {
            Value::String(text) => prompt.push_str(text),
            Value::Array(blocks) => {
                for block in blocks {
                    match block["type"].as_str() {
                        Some("text") => prompt.push_str(block["text"].as_str().unwrap_or("")),
                        Some("tool_result") => results.push(ToolResult {
                            text: text_of(&block["content"]),
                            is_error: block["is_error"].as_bool().unwrap_or(false),
                        }),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        prompt.push('\n');
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

fn reply(model: &str, blocks: Vec<Value>, stream: bool) -> Response {
    let stop = if blocks.iter().any(|b| b["type"] == "tool_use") {
        "tool_use"
    } else {
        "end_turn"
    };
    let usage = json!({"input_tokens": 12, "output_tokens": 3});
    if !stream {
        return axum::Json(json!({
            "id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
            "content": blocks, "stop_reason": stop, "stop_sequence": null, "usage": usage
        }))
        .into_response();
    }
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage
        }}),
    )];
    for (index, block) in blocks.iter().enumerate() {
        let (start, delta) = if block["type"] == "tool_use" {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        } else {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        };
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ));
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": 3}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    let text: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    ([(header::CONTENT_TYPE, "text/event-stream")], text).into_response()
}
