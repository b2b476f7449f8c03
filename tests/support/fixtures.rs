//! A local stand-in for an OpenAI-compatible chat-completions endpoint: it records every
//! request and answers each one with the next scripted reply (a streamed answer, a stream that
//! stalls, or a whole answer with a status), in the real streaming format.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// What the fixture answers to one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// These raw pieces of an event stream, one write each.
    Stream(Vec<String>),
    /// These pieces, then no more data, only a keep-alive comment every 100 ms (a model that
    /// never finishes); the stream is abandoned after two minutes so nothing hangs forever.
    StreamThenStall(Vec<String>),
    /// A whole answer: this status and this JSON body.
    Whole(u16, String),
}

#[derive(Clone, Default)]
struct FixtureState {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Value>>>,
}

/// The fixture server, on 127.0.0.1; runs until the test's runtime ends.
pub struct OpenAiFixture {
    pub addr: SocketAddr,
    state: FixtureState,
}

impl OpenAiFixture {
    pub async fn start(replies: Vec<Reply>) -> OpenAiFixture {
        let state = FixtureState::default();
        state.replies.lock().unwrap().extend(replies);
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        OpenAiFixture { addr, state }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// A config file selecting this endpoint, the key read from `key_env`, no retries (so a
    /// failure is final at once).
    pub fn config(&self, key_env: &str) -> String {
        format!(
            "[provider]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"fixture-model\"\napi_key_env = \"{key_env}\"\nmax_retries = 0\n",
            self.base_url()
        )
    }

    /// The JSON bodies of every request received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.state.requests.lock().unwrap().clone()
    }
}

async fn completions(State(state): State<FixtureState>, body: Bytes) -> Response {
    let request = serde_json::from_slice(&body).unwrap_or(Value::Null);
    state.requests.lock().unwrap().push(request);
    let reply = state.replies.lock().unwrap().pop_front();
    match reply {
        Some(Reply::Stream(pieces)) => event_stream(pieces, false),
        Some(Reply::StreamThenStall(pieces)) => event_stream(pieces, true),
        Some(Reply::Whole(status, body)) => (
            StatusCode::from_u16(status).unwrap(),
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        None => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the fixture has no reply left",
        )
            .into_response(),
    }
}

fn event_stream(pieces: Vec<String>, stall: bool) -> Response {
    let start = (VecDeque::from(pieces), 0u32);
    let stream = futures::stream::unfold(start, move |(mut pieces, ticks)| async move {
        if let Some(piece) = pieces.pop_front() {
            return Some((Ok::<_, Infallible>(Bytes::from(piece)), (pieces, ticks)));
        }
        if stall && ticks < 1200 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            return Some((
                Ok(Bytes::from_static(b": keep-alive\n\n")),
                (pieces, ticks + 1),
            ));
        }
        None
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

/// One `data:` event of OpenAI's stream carrying a chunk with this delta.
pub fn openai_chunk(delta: Value, finish_reason: Option<&str>) -> String {
    let chunk = json!({
        "id": "chatcmpl-fixture", "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": "fixture-model",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}]
    });
    format!("data: {chunk}\n\n")
}

/// The opening of an answer: the role chunk, then `text` as content.
pub fn openai_text_start(text: &str) -> Vec<String> {
    vec![
        openai_chunk(json!({"role": "assistant", "content": ""}), None),
        openai_chunk(json!({"content": text}), None),
    ]
}

/// A whole streamed text answer (in two content pieces), finished, with usage, then `[DONE]`.
pub fn openai_text_answer(text: &str) -> Vec<String> {
    let (head, tail) = text.split_at(text.len() / 2);
    let mut pieces = openai_text_start(head);
    let usage = json!({
        "id": "chatcmpl-fixture", "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": "fixture-model", "choices": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    });
    pieces.extend([
        openai_chunk(json!({"content": tail}), None),
        openai_chunk(json!({}), Some("stop")),
        format!("data: {usage}\n\n"),
        "data: [DONE]\n\n".to_owned(),
    ]);
    pieces
}
