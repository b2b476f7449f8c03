//! The harness: an in-process server on 127.0.0.1:0, a bearer-authenticated client, response
//! assertions that check the protocol's error shape, and a small SSE reader that keeps ids,
//! event names and comment lines exactly as they came off the wire.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use countersign::server::agent::provider::scripted::{ScriptStep, ScriptedProvider};
use countersign::server::agent::provider::{Completion, Provider};
use countersign::server::core::Core;
use countersign::server::{self, settings::ServeArgs};
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::HeaderMap;
use reqwest::{Client, Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};

pub const TOKEN: &str = "test-token-123";
/// Upper bound for anything that should happen "soon" (generous: the machine is shared).
pub const SOON: Duration = Duration::from_secs(20);

pub fn client() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("reqwest client")
}

pub fn scripted(steps: impl IntoIterator<Item = ScriptStep>) -> Arc<dyn Provider> {
    Arc::new(ScriptedProvider::new(steps))
}

pub fn reply(text: &str) -> ScriptStep {
    ScriptStep::Reply(Completion {
        text: text.to_owned(),
        ..Completion::default()
    })
}

pub struct TestServer {
    pub dir: Option<tempfile::TempDir>,
    pub server: Option<server::Server>,
    pub addr: SocketAddr,
    pub base: String,
    pub client: Client,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(server) = &self.server {
            server.shutdown.cancel();
        }
    }
}

impl TestServer {
    /// The demo agent, default config.
    pub async fn start() -> Self {
        Self::start_with(None, None).await
    }

    pub async fn scripted(steps: impl IntoIterator<Item = ScriptStep>) -> Self {
        Self::start_with(Some(scripted(steps)), None).await
    }

    pub async fn start_with(provider: Option<Arc<dyn Provider>>, config: Option<&str>) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        Self::start_in(dir, provider, config).await
    }

    /// Starts on an existing directory (`data/` and `ws/` inside it): used to restart.
    pub async fn start_in(
        dir: tempfile::TempDir,
        provider: Option<Arc<dyn Provider>>,
        config: Option<&str>,
    ) -> Self {
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
        let server = server::start(settings, provider)
            .await
            .expect("server starts");
        let addr = server.addr;
        assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
        TestServer {
            dir: Some(dir),
            server: Some(server),
            addr,
            base: format!("http://{addr}"),
            client: client(),
        }
    }

    /// Graceful stop: cancel, then the serve task must end (and end cleanly) within 10 s.
    /// Returns the directory so a new server can start on the same data.
    pub async fn stop(mut self) -> tempfile::TempDir {
        let server = self.server.take().expect("running");
        server.shutdown.cancel();
        let result = tokio::time::timeout(Duration::from_secs(10), server.task)
            .await
            .expect("server task ends within 10 s of shutdown");
        result
            .expect("server task did not panic")
            .expect("server exited cleanly");
        drop(server.core);
        self.dir.take().expect("dir")
    }

    pub fn core(&self) -> &Arc<Core> {
        &self.server.as_ref().expect("running").core
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.as_ref().unwrap().path().join("ws")
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A request with the bearer token.
    pub fn req(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(path))
            .bearer_auth(TOKEN)
    }

    /// A request with no credentials at all.
    pub fn anon(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, self.url(path))
    }

    pub async fn get(&self, path: &str) -> Resp {
        send(self.req(Method::GET, path)).await
    }

    pub async fn delete(&self, path: &str) -> Resp {
        send(self.req(Method::DELETE, path)).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Resp {
        send(self.req(Method::POST, path).json(&body)).await
    }

    pub async fn put(&self, path: &str, body: Value) -> Resp {
        send(self.req(Method::PUT, path).json(&body)).await
    }

    /// `POST /api/v1/sessions`, expecting 201; returns the Session.
    pub async fn create(&self, body: Value) -> Value {
        self.post("/api/v1/sessions", body).await.expect(201)
    }

    pub async fn create_id(&self, body: Value) -> String {
        self.create(body).await["id"]
            .as_str()
            .expect("id")
            .to_owned()
    }

    pub async fn snapshot(&self, sid: &str) -> Value {
        self.get(&format!("/api/v1/sessions/{sid}"))
            .await
            .expect(200)
    }

    pub async fn events(&self, sid: &str) -> Vec<Value> {
        self.snapshot(sid).await["events"]
            .as_array()
            .expect("events")
            .clone()
    }

    pub async fn list(&self) -> Vec<Value> {
        self.get("/api/v1/sessions")
            .await
            .expect(200)
            .as_array()
            .expect("list is an array")
            .clone()
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
        assert_eq!(keys(&v), vec!["turn_id"], "{v}");
        let turn = v["turn_id"].as_str().expect("turn_id").to_owned();
        assert_uuid_v4(&turn);
        turn
    }

    /// Polls the snapshot until the turn's `turn_finished` is stored; returns all events.
    pub async fn wait_turn(&self, sid: &str, turn_id: &str) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let events = self.events(sid).await;
            if events
                .iter()
                .any(|e| e["type"] == "turn_finished" && e["turn_id"] == turn_id)
            {
                return events;
            }
            assert!(
                Instant::now() < deadline,
                "turn {turn_id} did not finish within 30 s; events: {events:#?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Polls until some stored event satisfies `pred`; returns all events.
    pub async fn wait_event(&self, sid: &str, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let events = self.events(sid).await;
            if events.iter().any(&pred) {
                return events;
            }
            assert!(
                Instant::now() < deadline,
                "awaited event never came; events: {events:#?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Everything a client can observe: the session list and every session's full log.
    /// Used to prove that a refused request changed nothing.
    pub async fn state(&self) -> Value {
        let list = self.list().await;
        let mut logs = serde_json::Map::new();
        for s in &list {
            let id = s["id"].as_str().unwrap();
            logs.insert(id.to_owned(), json!(self.events(id).await));
        }
        json!({ "sessions": list, "events": logs })
    }

    pub async fn sse(&self, sid: &str, after: Option<u64>, last_event_id: Option<u64>) -> Sse {
        let mut path = format!("/api/v1/sessions/{sid}/events");
        if let Some(after) = after {
            path.push_str(&format!("?after={after}"));
        }
        let mut rb = self.req(Method::GET, &path);
        if let Some(id) = last_event_id {
            rb = rb.header("Last-Event-ID", id.to_string());
        }
        Sse::open(rb)
            .await
            .unwrap_or_else(|r| panic!("SSE refused: {r:?}"))
    }
}

#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

pub async fn send(rb: RequestBuilder) -> Resp {
    let resp = tokio::time::timeout(SOON, rb.send())
        .await
        .expect("response within 20 s")
        .expect("request sent");
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = tokio::time::timeout(SOON, resp.text())
        .await
        .expect("body within 20 s")
        .expect("body read");
    Resp {
        status,
        headers,
        body,
    }
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {:?}", self.body))
    }

    /// Asserts the status; returns the JSON body (`Null` when empty).
    #[track_caller]
    pub fn expect(&self, status: u16) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.body
        );
        if self.body.is_empty() {
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
            "unexpected status; body: {}",
            self.body
        );
        let ct = self.header("content-type").unwrap_or("");
        assert!(
            ct.starts_with("application/json"),
            "error content-type {ct:?}, body {:?}",
            self.body
        );
        let v = self.json();
        let error = v
            .get("error")
            .and_then(Value::as_object)
            .unwrap_or_else(|| panic!("no error object: {v}"));
        assert_eq!(error.get("code"), Some(&json!(code)), "{v}");
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no error message: {v}"));
        assert!(!message.trim().is_empty(), "{v}");
        v
    }
}

/// The sorted keys of a JSON object.
pub fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect();
    k.sort();
    k
}

#[track_caller]
pub fn assert_uuid_v4(s: &str) {
    let u = uuid::Uuid::parse_str(s).unwrap_or_else(|e| panic!("{s:?} is not a UUID: {e}"));
    assert_eq!(u.get_version_num(), 4, "{s} is not v4");
    assert_eq!(u.hyphenated().to_string(), s, "not canonical lowercase");
}

#[track_caller]
pub fn assert_rfc3339_utc(s: &str) {
    let t = chrono::DateTime::parse_from_rfc3339(s)
        .unwrap_or_else(|e| panic!("{s:?} is not RFC 3339: {e}"));
    assert_eq!(t.offset().local_minus_utc(), 0, "{s} is not UTC");
}

/// Checks the shape of a Session object.
#[track_caller]
pub fn assert_session_shape(s: &Value) {
    assert_eq!(
        keys(s),
        vec![
            "approval_mode",
            "created_at",
            "id",
            "pending_approvals",
            "running_turn_id",
            "title"
        ],
        "{s}"
    );
    assert_uuid_v4(s["id"].as_str().unwrap());
    assert_rfc3339_utc(s["created_at"].as_str().unwrap());
    assert!(s["title"].is_string(), "{s}");
    assert!(s["pending_approvals"].is_u64(), "{s}");
    assert!(
        ["plan", "ask", "auto_edit", "yolo"].contains(&s["approval_mode"].as_str().unwrap()),
        "{s}"
    );
}

/// Checks the common shape of a stored event: seq, type, at.
#[track_caller]
pub fn assert_event_shape(e: &Value) {
    assert!(e["seq"].as_u64().is_some_and(|s| s >= 1), "{e}");
    assert!(e["type"].is_string(), "{e}");
    assert_rfc3339_utc(e["at"].as_str().unwrap_or_else(|| panic!("no at: {e}")));
}

pub fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

pub fn seqs(events: &[Value]) -> Vec<u64> {
    events.iter().map(|e| e["seq"].as_u64().unwrap()).collect()
}

/// A random session id that does not exist.
pub fn unknown_sid() -> String {
    uuid::Uuid::new_v4().to_string()
}

// ------------------------------------------------------------------------------------------
// SSE
// ------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct Frame {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
    /// The block exactly as received, for failure messages.
    pub raw: String,
}

impl Frame {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("frame data is not JSON ({e}): {:?}", self.raw))
    }

    pub fn seq(&self) -> Option<u64> {
        self.id.as_ref().map(|id| {
            id.parse()
                .unwrap_or_else(|_| panic!("id is not a number: {:?}", self.raw))
        })
    }

    pub fn is(&self, kind: &str) -> bool {
        self.event.as_deref() == Some(kind)
    }

    /// Asserts `id`, `event` and `data` agree: id == data.seq (or both absent), event ==
    /// data.type; `assistant_delta` has no id, every other type has one.
    #[track_caller]
    pub fn check_consistent(&self) {
        let v = self.json();
        assert_eq!(
            self.event.as_deref(),
            v["type"].as_str(),
            "event name vs type: {:?}",
            self.raw
        );
        match self.seq() {
            Some(seq) => {
                assert_eq!(v["seq"].as_u64(), Some(seq), "{:?}", self.raw);
                assert!(
                    !self.is("assistant_delta"),
                    "a delta with an id: {:?}",
                    self.raw
                );
            }
            None => {
                assert!(v.get("seq").is_none(), "{:?}", self.raw);
                assert!(
                    self.is("assistant_delta"),
                    "a durable event without an id: {:?}",
                    self.raw
                );
            }
        }
    }
}

#[derive(Debug, Clone)]
pub enum Item {
    Frame(Frame),
    Comment(String),
}

pub struct Sse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    stream: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: Vec<u8>,
    pending: VecDeque<Item>,
    ended: bool,
}

impl Sse {
    /// Sends the request; a non-200 answer comes back as `Err(Resp)`.
    #[allow(clippy::result_large_err)] // a test helper: the error is the whole response, on purpose
    pub async fn open(rb: RequestBuilder) -> Result<Sse, Resp> {
        let resp = tokio::time::timeout(SOON, rb.send())
            .await
            .expect("SSE response within 20 s")
            .expect("SSE request sent");
        let status = resp.status();
        let headers = resp.headers().clone();
        if status != StatusCode::OK {
            let body = resp.text().await.unwrap_or_default();
            return Err(Resp {
                status,
                headers,
                body,
            });
        }
        Ok(Sse {
            status,
            headers,
            stream: resp.bytes_stream().boxed(),
            buf: Vec::new(),
            pending: VecDeque::new(),
            ended: false,
        })
    }

    fn parse_blocks(&mut self) {
        loop {
            let Some(pos) = self.buf.windows(2).position(|w| w == b"\n\n") else {
                return;
            };
            let block: Vec<u8> = self.buf.drain(..pos + 2).collect();
            let raw = String::from_utf8(block).expect("SSE is UTF-8");
            let mut id = None;
            let mut event = None;
            let mut data: Option<String> = None;
            let mut comment = None;
            for line in raw.split('\n') {
                let line = line.strip_suffix('\r').unwrap_or(line);
                if line.is_empty() {
                    continue;
                }
                if let Some(c) = line.strip_prefix(':') {
                    comment = Some(c.trim().to_owned());
                    continue;
                }
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => id = Some(value.to_owned()),
                    "event" => event = Some(value.to_owned()),
                    "data" => match data.as_mut() {
                        Some(d) => {
                            d.push('\n');
                            d.push_str(value);
                        }
                        None => data = Some(value.to_owned()),
                    },
                    _ => {}
                }
            }
            if id.is_some() || event.is_some() || data.is_some() {
                self.pending.push_back(Item::Frame(Frame {
                    id,
                    event,
                    data: data.unwrap_or_default(),
                    raw,
                }));
            } else if let Some(c) = comment {
                self.pending.push_back(Item::Comment(c));
            }
        }
    }

    /// The next frame or comment; `Ok(None)` when the stream ended; `Err(())` on timeout.
    pub async fn next_item(&mut self, within: Duration) -> Result<Option<Item>, ()> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Ok(Some(item));
            }
            if self.ended {
                return Ok(None);
            }
            match tokio::time::timeout_at(deadline, self.stream.next()).await {
                Err(_) => return Err(()),
                Ok(None) | Ok(Some(Err(_))) => self.ended = true,
                Ok(Some(Ok(bytes))) => {
                    self.buf.extend_from_slice(&bytes);
                    self.parse_blocks();
                }
            }
        }
    }

    /// The next frame (comments skipped); `None` when the stream ended. Panics on timeout.
    pub async fn next_frame(&mut self, within: Duration) -> Option<Frame> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_item(left).await {
                Ok(Some(Item::Frame(f))) => return Some(f),
                Ok(Some(Item::Comment(_))) => continue,
                Ok(None) => return None,
                Err(()) => panic!("no SSE frame within {within:?}"),
            }
        }
    }

    /// Frames up to and including the first that matches `pred`. Panics on timeout or end.
    pub async fn until(&mut self, within: Duration, pred: impl Fn(&Frame) -> bool) -> Vec<Frame> {
        let deadline = Instant::now() + within;
        let mut frames = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let item = match self.next_item(left).await {
                Ok(item) => item,
                Err(()) => panic!("timed out after {within:?}; frames so far: {frames:#?}"),
            };
            match item {
                Some(Item::Frame(f)) => {
                    let done = pred(&f);
                    frames.push(f);
                    if done {
                        return frames;
                    }
                }
                Some(Item::Comment(_)) => {}
                None => panic!("stream ended early; frames so far: {frames:#?}"),
            }
        }
    }

    pub async fn until_turn_finished(&mut self, within: Duration) -> Vec<Frame> {
        self.until(within, |f| f.is("turn_finished")).await
    }

    pub async fn until_seq(&mut self, within: Duration, seq: u64) -> Vec<Frame> {
        self.until(within, |f| f.seq() == Some(seq)).await
    }

    /// Asserts nothing arrives for `quiet` (neither frame nor end of stream).
    pub async fn assert_quiet(&mut self, quiet: Duration) {
        match self.next_item(quiet).await {
            Err(()) => {}
            Ok(Some(Item::Comment(_))) => {}
            Ok(other) => panic!("expected silence, got {other:?}"),
        }
    }
}

/// The seqs of the frames that carry an id, in arrival order.
pub fn frame_seqs(frames: &[Frame]) -> Vec<u64> {
    frames.iter().filter_map(Frame::seq).collect()
}

// ------------------------------------------------------------------------------------------
// Raw HTTP (for requests reqwest will not make: a declared length with no body)
// ------------------------------------------------------------------------------------------

/// Writes `head` (must end with a blank line) and `body`, then reads the answer to EOF.
/// Returns (status, headers+body text).
pub async fn raw_http(addr: SocketAddr, head: &str, body: &[u8]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("write head");
    if !body.is_empty() {
        stream.write_all(body).await.expect("write body");
    }
    let mut out = Vec::new();
    let _ = tokio::time::timeout(SOON, stream.read_to_end(&mut out))
        .await
        .expect("raw answer within 20 s");
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    (status, text)
}

/// The body part of a raw HTTP answer (after the blank line).
pub fn raw_body(text: &str) -> &str {
    text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("")
}
