//! Test helpers: fixture files, a restartable HTTP server, and a fake Countersign gates API that
//! records what it is sent.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

pub const TOKEN: &str = "gates-secret";

/// A fixture under `tests/fixtures/external/`.
pub fn fixture(path: &str) -> Value {
    let text = std::fs::read_to_string(fixture_path(path)).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn fixture_bytes(path: &str) -> Vec<u8> {
    std::fs::read(fixture_path(path)).unwrap()
}

pub fn fixture_path(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/external")
        .join(path)
}

/// Every fixture file in a folder whose name ends with `suffix`.
pub fn fixtures_ending(dir: &str, suffix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixture_path(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(suffix))
        .map(|n| format!("{dir}/{n}"))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no {dir}/*{suffix} fixtures");
    names
}

/// Polls `check` until it holds (or panics after a few seconds).
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..500 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// An axum app served on its own runtime and thread, so stopping it drops every connection at
/// once, like a process that died; it can come back on the same port.
pub struct Restartable {
    pub addr: SocketAddr,
    app: Router,
    running: Option<(
        tokio::sync::oneshot::Sender<()>,
        std::thread::JoinHandle<()>,
    )>,
}

impl Restartable {
    pub fn start(app: Router) -> Restartable {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut server = Restartable {
            addr,
            app,
            running: None,
        };
        server.serve(listener);
        server
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn serve(&mut self, listener: std::net::TcpListener) {
        listener.set_nonblocking(true).unwrap();
        let app = self.app.clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stopped => {}
                }
            });
            // Dropping the runtime drops every connection task with it.
            runtime.shutdown_background();
        });
        self.running = Some((stop, thread));
    }

    /// Kills the server and every open connection.
    pub fn stop(&mut self) {
        if let Some((stop, thread)) = self.running.take() {
            let _ = stop.send(());
            thread.join().unwrap();
        }
    }

    /// Serves again on the same port.
    pub fn restart(&mut self) {
        self.stop();
        let listener = std::net::TcpListener::bind(self.addr).unwrap();
        self.serve(listener);
    }
}

impl Drop for Restartable {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One `POST /api/v1/gates` as received.
#[derive(Clone, Debug)]
pub struct OpenRecord {
    pub key: Option<String>,
    pub body: Value,
    pub status: u16,
}

#[derive(Clone, Debug)]
pub struct FakeGate {
    pub id: String,
    pub key: Option<String>,
    pub body: Value,
    /// The GET answer; `status: "pending"` until resolved.
    pub state: Value,
}

#[derive(Default, Debug)]
pub struct GatesLog {
    pub gates: Vec<FakeGate>,
    pub opens: Vec<OpenRecord>,
    pub cancels: Vec<(String, String)>,
    pub polls: usize,
    /// When set, new gates are resolved at once with this answer (a rule or the mode).
    pub resolve_on_open: Option<Value>,
    /// When set, new gates say that only the card may answer them (a floor card, or one a
    /// passkey must confirm): `dialog_may_answer: false`.
    pub card_only: bool,
    /// When set, every `POST /gates` is answered with this status and raw body (a refusal of
    /// Countersign's own, or a proxy's page with nothing behind it).
    pub opens_answer: Option<(u16, String)>,
    /// When set, every `GET /gates/{id}` is answered so (the card lost while a hook waits).
    pub polls_answer: Option<(u16, String)>,
}

/// A raw answer: `status` with `body`, JSON when it parses as JSON.
fn raw(status: u16, body: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap();
    let kind = if serde_json::from_str::<Value>(body).is_ok() {
        "application/json"
    } else {
        "text/html"
    };
    (status, [("content-type", kind)], body.to_owned()).into_response()
}

/// A fake Countersign: gates live in memory shared across restarts (durable, like the real one).
pub struct FakeGates {
    pub log: Arc<Mutex<GatesLog>>,
    pub server: Restartable,
}

impl FakeGates {
    pub fn start() -> FakeGates {
        let log = Arc::new(Mutex::new(GatesLog::default()));
        let app = Router::new()
            .route("/api/v1/gates", post(open_gate))
            .route("/api/v1/gates/{id}", get(get_gate))
            .route("/api/v1/gates/{id}/cancel", post(cancel_gate))
            .with_state(Arc::clone(&log));
        FakeGates {
            log,
            server: Restartable::start(app),
        }
    }

    pub fn url(&self) -> String {
        self.server.url()
    }

    pub fn gates(&self) -> Vec<FakeGate> {
        self.log.lock().unwrap().gates.clone()
    }

    pub fn opens(&self) -> Vec<OpenRecord> {
        self.log.lock().unwrap().opens.clone()
    }

    pub fn cancels(&self) -> Vec<(String, String)> {
        self.log.lock().unwrap().cancels.clone()
    }

    /// Resolves gate `index` (in opening order) once it exists; `answer` holds the fields
    /// that change (status, decision, updated_input, reason, …).
    pub async fn resolve(&self, index: usize, answer: Value) {
        eventually("the gate to open", || self.gates().len() > index).await;
        let mut log = self.log.lock().unwrap();
        let gate = &mut log.gates[index];
        merge(&mut gate.state, answer);
    }
}

fn merge(state: &mut Value, answer: Value) {
    let defaults = json!({"answered_by": "user", "actor": "token:phone",
        "resolved_at": "2026-11-30T10:00:00Z"});
    for source in [defaults, answer] {
        for (k, v) in source.as_object().unwrap() {
            state[k] = v.clone();
        }
    }
}

fn refused() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({"error": {"code": "unauthorized", "message": "bad token"}})),
    )
        .into_response()
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok())
        == Some(format!("Bearer {TOKEN}").as_str())
}

async fn open_gate(
    State(log): State<Arc<Mutex<GatesLog>>>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if !authorized(&headers) {
        return refused();
    }
    if let Some((status, body)) = log.lock().unwrap().opens_answer.clone() {
        return raw(status, &body);
    }
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut log = log.lock().unwrap();
    if let Some(existing) = key
        .as_ref()
        .and_then(|k| log.gates.iter().find(|g| g.key.as_ref() == Some(k)))
    {
        let state = existing.state.clone();
        log.opens.push(OpenRecord {
            key,
            body,
            status: 200,
        });
        return (StatusCode::OK, axum::Json(state)).into_response();
    }
    let id = format!("apr_{}", log.gates.len() + 1);
    let mut state = json!({"approval_id": id, "session_id": "ses_cs", "status": "pending",
        "decision": null, "updated_input": null, "reason": null, "rule": null,
        "answered_by": null, "actor": null, "resolved_at": null,
        "url": format!("http://countersign.test/a/{id}"), "expires_at": "2026-11-30T10:30:00Z",
        "dialog_may_answer": !log.card_only});
    if let Some(answer) = log.resolve_on_open.clone() {
        merge(&mut state, answer);
    }
    log.gates.push(FakeGate {
        id,
        key: key.clone(),
        body: body.clone(),
        state: state.clone(),
    });
    log.opens.push(OpenRecord {
        key,
        body,
        status: 201,
    });
    (StatusCode::CREATED, axum::Json(state)).into_response()
}

async fn get_gate(
    State(log): State<Arc<Mutex<GatesLog>>>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if !authorized(&headers) {
        return refused();
    }
    if let Some((status, body)) = log.lock().unwrap().polls_answer.clone() {
        return raw(status, &body);
    }
    let wait: u64 = query.get("wait").and_then(|w| w.parse().ok()).unwrap_or(0);
    assert!(wait <= 60, "wait={wait} is over the API's limit");
    log.lock().unwrap().polls += 1;
    let until = tokio::time::Instant::now() + Duration::from_secs(wait);
    loop {
        let state = {
            let log = log.lock().unwrap();
            match log.gates.iter().find(|g| g.id == id) {
                Some(gate) => gate.state.clone(),
                None => {
                    return (
                        StatusCode::NOT_FOUND,
                        axum::Json(json!({"error": {"code": "not_found", "message": id}})),
                    )
                        .into_response();
                }
            }
        };
        if state["status"] != "pending" || tokio::time::Instant::now() >= until {
            return axum::Json(state).into_response();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn cancel_gate(
    State(log): State<Arc<Mutex<GatesLog>>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if !authorized(&headers) {
        return refused();
    }
    let why = body["why"].as_str().unwrap_or_default().to_owned();
    let mut log = log.lock().unwrap();
    log.cancels.push((id.clone(), why.clone()));
    if let Some(gate) = log.gates.iter_mut().find(|g| g.id == id)
        && gate.state["status"] == "pending"
    {
        merge(
            &mut gate.state,
            json!({"status": "cancelled", "reason": why, "answered_by": "system", "actor": "cancel"}),
        );
    }
    axum::Json(json!({"approval_id": id, "status": "cancelled"})).into_response()
}
