//! A scripted Gemini API server on loopback, as Gemini CLI calls it
//! (`POST /v1beta/models/<model>:streamGenerateContent?alt=sse`, also `:generateContent` and
//! `:countTokens`). It follows [`crate::script`], asking for `run_shell_command`; a function
//! response carrying `error` is a refused call.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::script::{Recorder, Step, ToolResult, next_step};

pub struct GeminiApi {
    pub base_url: String,
    pub recorder: Recorder,
    _task: tokio::task::JoinHandle<()>,
}

impl GeminiApi {
    pub async fn start() -> GeminiApi {
        let recorder = Recorder::default();
        let app = Router::new()
            .route("/v1beta/models/{call}", post(call))
            .with_state(recorder.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        GeminiApi {
            base_url,
            recorder,
            _task: task,
        }
    }
}

/// `<model>:<method>`.
async fn call(
    State(recorder): State<Recorder>,
    Path(call): Path<String>,
    body: axum::Json<Value>,
) -> Response {
    let body = body.0;
    let method = call.rsplit_once(':').map_or("", |(_, m)| m);
    recorder.request(&call, &body);
    if method == "countTokens" {
        return axum::Json(json!({"totalTokens": 12})).into_response();
    }
    let offers_shell = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["functionDeclarations"].as_array())
        .flatten()
        .any(|d| d["name"] == "run_shell_command");
    let (prompt, results) = read_contents(&body["contents"]);
    let count = results.len();
    let part = if offers_shell {
        recorder.results(results);
        match next_step(&prompt, count) {
            Step::Run { n, command } => {
                recorder.asked();
                json!({"functionCall": {"name": "run_shell_command",
                       "args": {"command": command, "description": format!("step {n}")}}})
            }
            Step::Say(text) => json!({"text": text}),
        }
    } else {
        json!({"text": "ok"})
    };
    let chunk = json!({
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 3, "totalTokenCount": 15},
        "modelVersion": "scripted-1"
    });
    if method == "streamGenerateContent" {
        (
            [(header::CONTENT_TYPE, "text/event-stream")],
            format!("data: {chunk}\n\n"),
        )
            .into_response()
    } else {
        axum::Json(chunk).into_response()
    }
}

/// The person's words (user text parts) and the function responses, in order.
fn read_contents(contents: &Value) -> (String, Vec<ToolResult>) {
    let mut prompt = String::new();
    let mut results = Vec::new();
    for content in contents.as_array().into_iter().flatten() {
        if content["role"] != "user" {
            continue;
        }
        for part in content["parts"].as_array().into_iter().flatten() {
            if let Some(text) = part["text"].as_str() {
                prompt.push_str(text);
                prompt.push('\n');
            }
            if let Some(response) = part.get("functionResponse") {
                let response = &response["response"];
                let (text, is_error) = match response.get("error") {
                    Some(error) => (error.as_str().unwrap_or_default().to_owned(), true),
                    None => (response.to_string(), false),
                };
                results.push(ToolResult { text, is_error });
            }
        }
    }
    (prompt, results)
}
