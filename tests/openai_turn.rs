//! A whole turn with the OpenAI-compatible provider over real HTTP: the model (a local fixture
//! speaking the real streaming format) asks to write a file, the gate waits, the server is
//! killed (SIGKILL) and restarted, the same gate is approved, the tool runs once, and the turn
//! goes on to the model's final answer.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "support/mod.rs"]
mod support;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use axum::routing::post;
use serde_json::{Value, json};
use support::*;

const KEY: &str = "sk-fixture-key";

/// One request the fixture received: its Authorization header and JSON body.
type Request = (Option<String>, Value);

#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Request>>>);

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let body = json!({
        "id": "c", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {body}\n\n")
}

/// First call: a write_file tool call with its arguments split mid-token. After a tool result:
/// a final answer quoting it.
async fn completions(State(seen): State<Seen>, headers: HeaderMap, body: String) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    seen.0.lock().unwrap().push((auth, request.clone()));
    let last = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    let stream = if last["role"] == "tool" {
        let result = last["content"].as_str().unwrap_or("").to_owned();
        vec![
            chunk(json!({"role": "assistant", "content": "Done: "}), None),
            chunk(json!({"content": result}), None),
            chunk(json!({}), Some("stop")),
        ]
    } else {
        vec![
            chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_w", "type": "function",
                "function": {"name": "write_file", "arguments": "{\"pa"}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\": \"oa.txt\", \"con"}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "tent\": \"from the model\"}"}}]}),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
        ]
    };
    let mut text = stream.concat();
    text.push_str("data: [DONE]\n\n");
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from(text))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_turn_survives_a_crash_at_its_gate_and_finishes_after_approval() {
    let seen = Seen::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let fixture = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(seen.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let mut lab = Lab::new(Some(&format!(
        "[provider]\nkind = \"openai\"\nbase_url = \"http://{fixture}/v1\"\nmodel = \"fixture-model\"\napi_key_env = \"CS_FIXTURE_KEY\"\n"
    )))
    .with_env("CS_FIXTURE_KEY", KEY);

    let node = lab.start().await;
    let sid = node.session().await;
    let turn = node.send_msg(&sid, "please write the file", None).await;
    let gate = node.wait_inbox_gate(&sid).await;
    assert_eq!(gate["tool"], "write_file");
    assert_eq!(
        gate["args"],
        json!({"path": "oa.txt", "content": "from the model"})
    );

    node.kill9().await;
    let node = lab.start().await;
    let again = node.wait_inbox_gate(&sid).await;
    assert_eq!(again["approval_id"], gate["approval_id"]);
    assert_eq!(again["expires_at"], gate["expires_at"]);

    node.decide(&sid, &aid(&gate), json!({"decision": "approve"}))
        .await
        .expect(200);
    let events = node.wait_turn_events(&sid, &turn).await;
    let finished = events
        .iter()
        .find(|e| e["type"] == "turn_finished")
        .unwrap();
    assert_eq!(finished["status"], "completed", "{events:#?}");
    let answer = events
        .iter()
        .rev()
        .find(|e| e["type"] == "assistant_message")
        .unwrap();
    assert_eq!(answer["text"], "Done: wrote 14 bytes to oa.txt (new file)");
    assert_eq!(lab.read("oa.txt").as_deref(), Some("from the model"));
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "tool_started")
            .count(),
        1
    );

    let seen = seen.0.lock().unwrap().clone();
    assert_eq!(
        seen.len(),
        2,
        "one call before the gate, one after the tool ran"
    );
    for (auth, request) in &seen {
        assert_eq!(auth.as_deref(), Some(&*format!("Bearer {KEY}")));
        assert_eq!(request["model"], "fixture-model");
        assert_eq!(request["stream"], true);
    }
    let tool_msg = seen[1].1["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(tool_msg["role"], "tool");
    assert_eq!(tool_msg["tool_call_id"], "call_w");
}
