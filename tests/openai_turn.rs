//! A whole turn with the OpenAI-compatible provider over real HTTP: the model (a local fixture
//! speaking the real streaming format) asks to write a file, the gate waits, the server is
//! killed (SIGKILL) and restarted, the same gate is approved, the tool runs once, and the turn
//! goes on to the model's final answer. And a model with a smaller window than configured:
//! its refusal for length is answered by cutting the conversation and asking once more.

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

/// The fixture's real window: smaller than the server is told (`context_tokens = 65536`).
const FIXTURE_WINDOW: usize = 6_000;

/// What the window-enforcing fixture received, and the status it answered with.
#[derive(Clone, Default)]
struct Bounded(Arc<Mutex<Vec<(Value, u16)>>>);

/// A model with a 6,000-token window, counted roughly (the body's bytes / 4): over it, a 400
/// in OpenAI's own words; under it, a read of big.txt, then an answer saying how much of the
/// file it was shown.
async fn bounded_completions(State(seen): State<Bounded>, body: String) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let tokens = body.len() / 4;
    if tokens > FIXTURE_WINDOW {
        seen.0.lock().unwrap().push((request, 400));
        let refusal = json!({"error": {
            "message": format!("This model's maximum context length is {FIXTURE_WINDOW} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."),
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
        return Response::builder()
            .status(400)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(refusal.to_string()))
            .unwrap();
    }
    seen.0.lock().unwrap().push((request.clone(), 200));
    let last = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    let stream = if last["role"] == "tool" {
        let shown = last["content"].as_str().unwrap_or("").len();
        vec![
            chunk(
                json!({"role": "assistant", "content": format!("I was shown {shown} bytes.")}),
                None,
            ),
            chunk(json!({}), Some("stop")),
        ]
    } else {
        vec![
            chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_big", "type": "function",
                "function": {"name": "read_file", "arguments": "{\"path\": \"big.txt\"}"}}]}),
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

fn tool_content(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_refusing_a_request_as_too_long_gets_it_cut_and_the_turn_completes() {
    let seen = Bounded::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let fixture = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/v1/chat/completions", post(bounded_completions))
        .with_state(seen.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let srv = TestServer::configured(&format!(
        "[provider]\nkind = \"openai\"\nbase_url = \"http://{fixture}/v1\"\nmodel = \"fixture-model\"\napi_key_env = \"CS_FIT_NO_KEY\"\nmax_retries = 0\ncontext_tokens = 65536\n"
    ))
    .await;
    let big = format!("{}END OF big", "x".repeat(60_000 - 10));
    std::fs::write(srv.root().join("ws/big.txt"), &big).unwrap();

    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "read big.txt", Some("yolo")).await;
    let snap = srv.wait_released(&sid, &turn).await;
    let evs = turn_events(&snap, &turn);
    let finished = only(&evs, "turn_finished");
    assert_eq!(finished["status"], "completed", "{evs:#?}");

    let seen = seen.0.lock().unwrap().clone();
    let statuses: Vec<u16> = seen.iter().map(|(_, status)| *status).collect();
    assert_eq!(
        statuses,
        [200, 400, 200],
        "the call, the refusal, one retry"
    );
    // Within the server's budget, the 60 KB result went whole; the retry was cut to fit.
    assert_eq!(tool_content(&seen[1].0), big);
    let retried = tool_content(&seen[2].0);
    assert!(
        retried.contains("[output trimmed by Countersign: ") && retried.ends_with("END OF big"),
        "{retried}"
    );
    assert!(retried.len() < 5_000, "{} bytes", retried.len());
    assert!(serde_json::to_string(&seen[2].0).unwrap().len() / 4 <= FIXTURE_WINDOW);
    // The tool call and its result were sent together, as OpenAI requires.
    let roles: Vec<&str> = seen[2].0["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);

    let answer = only(&evs, "assistant_message");
    assert_eq!(
        answer["text"],
        format!("I was shown {} bytes.", retried.len())
    );
    assert_eq!(
        str_of(only(&evs, "tool_result"), "output"),
        big,
        "the log keeps it whole"
    );
}
