//! The harness for the approval-gate tests: a real server started in-process on a loopback
//! ephemeral port with the demo agent, a bearer-authenticated client, polling helpers over the
//! session snapshot, and a small SSE reader.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use countersign::server::{self, settings::ServeArgs};
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::{Client, Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub const TOKEN: &str = "test-token-123";
/// Upper bound for anything that should happen "soon" (generous: the machine is shared).
pub const SOON: Duration = Duration::from_secs(30);

pub struct Srv {
    pub dir: tempfile::TempDir,
    pub server: server::Server,
    pub base: String,
    pub client: Client,
}

impl Drop for Srv {
    fn drop(&mut self) {
        self.server.shutdown.cancel();
    }
}

#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub text: String,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {:?}", self.text))
    }

    /// Asserts the status; returns the JSON body (`Null` when empty).
    #[track_caller]
    pub fn expect(&self, status: u16) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.text
        );
        if self.text.is_empty() {
            Value::Null
        } else {
            self.json()
        }
    }

    /// Asserts the status and the protocol's error body `{"error":{"code","message"}}`.
    #[track_caller]
    pub fn expect_error(&self, status: u16, code: &str) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status (wanted {status} {code}); body: {}",
            self.text
        );
        let v = self.json();
        assert_eq!(v["error"]["code"], json!(code), "{v}");
        let message = v["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("no error message: {v}"));
        assert!(!message.trim().is_empty(), "{v}");
        v
    }
}

pub async fn send(rb: RequestBuilder) -> Resp {
    let resp = tokio::time::timeout(SOON, rb.send())
        .await
        .expect("response in time")
        .expect("request sent");
    let status = resp.status();
    let text = tokio::time::timeout(SOON, resp.text())
        .await
        .expect("body in time")
        .expect("body read");
    Resp { status, text }
}

impl Srv {
    /// Starts the demo agent; `config` is the TOML text of a config file, if any.
    pub async fn start(config: Option<&str>) -> Srv {
        let dir = tempfile::tempdir().expect("tempdir");
        let config_path = config.map(|text| {
            let path = dir.path().join("config.toml");
            std::fs::write(&path, text).expect("write config");
            path
        });
        let args = ServeArgs {
            addr: "127.0.0.1:0".parse().unwrap(),
            data_dir: Some(dir.path().join("data")),
            workspace: Some(dir.path().join("ws")),
            token: Some(TOKEN.into()),
            config: config_path,
        };
        let settings = args.resolve().expect("settings resolve");
        let server = server::start(settings, None).await.expect("server starts");
        let base = format!("http://{}", server.addr);
        let client = Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        Srv {
            dir,
            server,
            base,
            client,
        }
    }

    /// A path inside the agent's workspace.
    pub fn ws(&self, rel: &str) -> PathBuf {
        self.dir.path().join("ws").join(rel)
    }

    pub fn req(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, format!("{}{}", self.base, path))
            .bearer_auth(TOKEN)
    }

    pub async fn get(&self, path: &str) -> Resp {
        send(self.req(Method::GET, path)).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Resp {
        send(self.req(Method::POST, path).json(&body)).await
    }

    pub async fn delete(&self, path: &str) -> Resp {
        send(self.req(Method::DELETE, path)).await
    }

    /// `POST /api/v1/sessions`, expecting 201; returns the id.
    pub async fn session(&self) -> String {
        let v = self.post("/api/v1/sessions", json!({})).await.expect(201);
        v["id"].as_str().expect("session id").to_owned()
    }

    /// `POST …/messages`, expecting 202 `{"turn_id"}`; returns the turn id.
    pub async fn send_msg(&self, sid: &str, text: &str, mode: Option<&str>) -> String {
        let mut body = json!({ "text": text });
        if let Some(mode) = mode {
            body["approval_mode"] = json!(mode);
        }
        let v = self
            .post(&format!("/api/v1/sessions/{sid}/messages"), body)
            .await
            .expect(202);
        v["turn_id"].as_str().expect("turn_id").to_owned()
    }

    pub async fn snapshot(&self, sid: &str) -> Value {
        self.get(&format!("/api/v1/sessions/{sid}"))
            .await
            .expect(200)
    }

    /// Polls the snapshot until `pred` holds; returns that snapshot.
    pub async fn wait_snapshot(
        &self,
        sid: &str,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + SOON;
        loop {
            let snap = self.snapshot(sid).await;
            if pred(&snap) {
                return snap;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; snapshot: {snap:#}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until exactly `n` gates are pending in the session; returns them.
    pub async fn wait_pending(&self, sid: &str, n: usize) -> Vec<Value> {
        let snap = self
            .wait_snapshot(sid, &format!("{n} pending gate(s)"), |s| {
                s["pending"].as_array().is_some_and(|p| p.len() == n)
            })
            .await;
        snap["pending"].as_array().unwrap().clone()
    }

    /// Waits for the one pending gate of the session; returns it.
    pub async fn wait_gate(&self, sid: &str) -> Value {
        self.wait_pending(sid, 1).await.remove(0)
    }

    /// Waits for the session's first `approval_request` event; returns it. Unlike the pending
    /// list, the event stays in the log after the gate resolves.
    pub async fn wait_request_event(&self, sid: &str) -> Value {
        let snap = self
            .wait_snapshot(sid, "an approval_request event", |s| {
                events(s).iter().any(|e| e["type"] == "approval_request")
            })
            .await;
        events(&snap)
            .into_iter()
            .find(|e| e["type"] == "approval_request")
            .unwrap()
    }

    /// Waits until the turn's `turn_finished` is stored; returns the snapshot.
    pub async fn wait_turn(&self, sid: &str, turn_id: &str) -> Value {
        self.wait_snapshot(sid, &format!("turn {turn_id} to finish"), |s| {
            events(s)
                .iter()
                .any(|e| e["type"] == "turn_finished" && e["turn_id"] == turn_id)
        })
        .await
    }

    /// Sends a message and waits for its turn to finish; returns (turn id, the turn's events).
    pub async fn run_turn(
        &self,
        sid: &str,
        text: &str,
        mode: Option<&str>,
    ) -> (String, Vec<Value>) {
        let turn = self.send_msg(sid, text, mode).await;
        let snap = self.wait_turn(sid, &turn).await;
        let evs = turn_events(&snap, &turn);
        (turn, evs)
    }

    pub async fn decide(&self, sid: &str, aid: &str, body: Value) -> Resp {
        self.post(&format!("/api/v1/sessions/{sid}/approvals/{aid}"), body)
            .await
    }

    /// `GET /api/v1/approvals?status=pending`.
    pub async fn inbox(&self) -> Vec<Value> {
        self.get("/api/v1/approvals?status=pending")
            .await
            .expect(200)
            .as_array()
            .expect("inbox is an array")
            .clone()
    }

    pub async fn inbox_ids(&self) -> Vec<String> {
        self.inbox()
            .await
            .iter()
            .map(|g| g["approval_id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Asserts that the gate is still pending: in the inbox and in its session's snapshot.
    pub async fn assert_still_pending(&self, sid: &str, aid: &str) {
        assert!(
            self.inbox_ids().await.iter().any(|a| a == aid),
            "{aid} should still be in the pending inbox"
        );
        let snap = self.snapshot(sid).await;
        assert!(
            snap["pending"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["approval_id"] == aid),
            "{aid} should still be pending in the snapshot: {snap:#}"
        );
        assert!(
            !events(&snap)
                .iter()
                .any(|e| e["type"] == "approval_resolved" && e["approval_id"] == aid),
            "{aid} must have no approval_resolved yet"
        );
    }

    pub async fn rules(&self) -> Vec<Value> {
        self.get("/api/v1/rules")
            .await
            .expect(200)
            .as_array()
            .expect("rules array")
            .clone()
    }

    pub async fn sse(&self, sid: &str, after: u64) -> Sse {
        let resp = self
            .req(
                Method::GET,
                &format!("/api/v1/sessions/{sid}/events?after={after}"),
            )
            .send()
            .await
            .expect("SSE request");
        assert_eq!(resp.status(), StatusCode::OK, "SSE status");
        Sse {
            stream: eventsource_stream::Eventsource::eventsource(resp.bytes_stream()).boxed(),
        }
    }
}

/// One durable or transient event as it came off the SSE wire.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub id: String,
    pub kind: String,
    pub data: Value,
}

pub struct Sse {
    stream: BoxStream<
        'static,
        Result<eventsource_stream::Event, eventsource_stream::EventStreamError<reqwest::Error>>,
    >,
}

impl Sse {
    /// Reads durable events (those with an id) until `stop` holds for one; returns them all.
    pub async fn until(&mut self, stop: impl Fn(&SseEvent) -> bool) -> Vec<SseEvent> {
        let deadline = tokio::time::Instant::now() + SOON;
        let mut seen = Vec::new();
        loop {
            let next = tokio::time::timeout_at(deadline, self.stream.next())
                .await
                .unwrap_or_else(|_| panic!("SSE: stop condition never met; seen {seen:#?}"))
                .expect("SSE stream ended early")
                .expect("SSE stream error");
            if next.id.is_empty() {
                continue; // transient (assistant_delta)
            }
            let ev = SseEvent {
                id: next.id,
                kind: next.event,
                data: serde_json::from_str(&next.data).expect("SSE data is JSON"),
            };
            let done = stop(&ev);
            seen.push(ev);
            if done {
                return seen;
            }
        }
    }
}

/// The snapshot's events.
pub fn events(snap: &Value) -> Vec<Value> {
    snap["events"].as_array().expect("events").clone()
}

/// The events of one turn, in log order.
pub fn turn_events(snap: &Value, turn_id: &str) -> Vec<Value> {
    events(snap)
        .into_iter()
        .filter(|e| e["turn_id"] == turn_id)
        .collect()
}

pub fn types(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .map(|e| e["type"].as_str().unwrap_or("?").to_owned())
        .collect()
}

pub fn of_type<'a>(evs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    evs.iter().filter(|e| e["type"] == kind).collect()
}

/// The single event of this type; panics if there are none or several.
#[track_caller]
pub fn only<'a>(evs: &'a [Value], kind: &str) -> &'a Value {
    let found = of_type(evs, kind);
    assert_eq!(
        found.len(),
        1,
        "expected exactly one {kind}; events: {evs:#?}"
    );
    found[0]
}

pub fn aid(gate: &Value) -> String {
    gate["approval_id"]
        .as_str()
        .expect("approval_id")
        .to_owned()
}

pub fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string in {v}"))
}

/// Sorted strings of a JSON array.
pub fn sorted_strs(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().expect("string").to_owned())
        .collect();
    out.sort();
    out
}

pub fn sorted(items: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = items.iter().map(|s| s.to_string()).collect();
    out.sort();
    out
}

pub fn parse_time(s: &str) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_rfc3339(s).unwrap_or_else(|e| panic!("{s:?} is not RFC 3339: {e}"))
}

pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// JSON with object keys sorted at every level (serde_json's map is ordered by key already
/// unless `preserve_order` is on, so sort explicitly to be safe).
pub fn canonical_json(value: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = serde_json::Map::new();
                for k in keys {
                    out.insert(k.clone(), sort(&map[k]));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string(&sort(value)).unwrap()
}

pub fn is_hex_sha256(s: &str) -> bool {
    s.len() == 64
        && s.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
}
