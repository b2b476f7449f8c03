//! A whole turn with the OpenAI-compatible provider over real HTTP: the model (a local fixture
//! speaking the real streaming format) asks to write a file, the gate waits, the server is
//! killed (SIGKILL) and restarted, the same gate is approved, the tool runs once, and the turn
//! goes on to the model's final answer.
#![cfg(feature = "ssr")]

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use axum::routing::post;
use serde_json::{Value, json};

const TOKEN: &str = "openai-turn-token";
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

struct Server {
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(dir: &std::path::Path, addr: &str) -> Server {
    let child = Command::new(env!("CARGO_BIN_EXE_countersign"))
        .args(["serve", "--addr", addr, "--token", TOKEN])
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--workspace")
        .arg(dir.join("ws"))
        .arg("--config")
        .arg(dir.join("config.toml"))
        .env("CS_FIXTURE_KEY", KEY)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Server { child }
}

async fn wait_until<F: std::future::Future<Output = Option<T>>, T>(mut f: impl FnMut() -> F) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "condition not met within 20 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn get(client: &reqwest::Client, url: &str) -> Option<Value> {
    let r = client.get(url).bearer_auth(TOKEN).send().await.ok()?;
    r.status().is_success().then_some(())?;
    r.json().await.ok()
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

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!("[provider]\nkind = \"openai\"\nbase_url = \"http://{fixture}/v1\"\nmodel = \"fixture-model\"\napi_key_env = \"CS_FIXTURE_KEY\"\n"),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let base = format!("http://{addr}/api/v1");
    let client = reqwest::Client::new();

    let server = spawn(dir.path(), &addr);
    let health = format!("{base}/health");
    wait_until(|| get(&client, &health)).await;
    let session: Value = client
        .post(format!("{base}/sessions"))
        .bearer_auth(TOKEN)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let sid = session["id"].as_str().unwrap().to_owned();
    let sent = client
        .post(format!("{base}/sessions/{sid}/messages"))
        .bearer_auth(TOKEN)
        .json(&json!({"text": "please write the file"}))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status().as_u16(), 202);
    let gate = wait_until(|| async {
        let pending = get(&client, &format!("{base}/approvals?status=pending")).await?;
        pending.as_array()?.first().cloned()
    })
    .await;
    assert_eq!(gate["tool"], "write_file");
    assert_eq!(
        gate["args"],
        json!({"path": "oa.txt", "content": "from the model"})
    );

    drop(server); // SIGKILL
    let _server = spawn(dir.path(), &addr);
    wait_until(|| get(&client, &health)).await;
    let again = wait_until(|| async {
        let pending = get(&client, &format!("{base}/approvals?status=pending")).await?;
        pending.as_array()?.first().cloned()
    })
    .await;
    assert_eq!(again["approval_id"], gate["approval_id"]);
    assert_eq!(again["expires_at"], gate["expires_at"]);

    let aid = gate["approval_id"].as_str().unwrap();
    let decided = client
        .post(format!("{base}/sessions/{sid}/approvals/{aid}"))
        .bearer_auth(TOKEN)
        .json(&json!({"decision": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(decided.status().as_u16(), 200);
    let events = wait_until(|| async {
        let snap = get(&client, &format!("{base}/sessions/{sid}")).await?;
        let events = snap["events"].as_array()?.clone();
        events
            .iter()
            .any(|e| e["type"] == "turn_finished")
            .then_some(events)
    })
    .await;
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
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ws/oa.txt")).unwrap(),
        "from the model"
    );
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
