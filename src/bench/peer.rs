//! The in-memory peer `bench --compare` runs beside Countersign: the seed's architecture
//! (a registry of futures, nothing durable) behind the few routes the bench's client uses, so
//! the same client and counts measure both and the ratio is one command away.
//!
//! What it does per message: each `write <path>: <content>` line (all at once after a
//! `parallel:` line) is a gate: an `approval_request` on the session's feed and a oneshot in
//! the registry; the decision POST completes the oneshot; the turn writes the file and sends
//! `tool_result`, then `turn_finished`. No log, no fsync, no policy, no floor, no audit, no
//! digest, no restart: what Countersign does beyond this is the price of keeping its promises.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, Sse};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::{Stream, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{broadcast, oneshot};
use tokio_stream::wrappers::BroadcastStream;
use tokio_util::sync::CancellationToken;

/// One event on a session's feed: its type and its JSON.
type FeedEvent = (&'static str, String);

/// The peer's whole state: feeds by session, and the futures waiting for a decision.
#[derive(Default)]
struct Registry {
    feeds: Mutex<HashMap<String, broadcast::Sender<FeedEvent>>>,
    waiting: Mutex<HashMap<String, Waiting>>,
    /// The turn running in each session that has one.
    running: Mutex<HashMap<String, String>>,
    workspace: PathBuf,
}

/// A gate waiting: its session (the inbox lists it) and where the answer goes.
struct Waiting {
    session_id: String,
    answer: oneshot::Sender<bool>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Registry {
    fn feed(&self, session_id: &str) -> Option<broadcast::Sender<FeedEvent>> {
        lock(&self.feeds).get(session_id).cloned()
    }

    fn send(&self, session_id: &str, kind: &'static str, data: Value) {
        if let Some(feed) = self.feed(session_id) {
            let _ = feed.send((kind, data.to_string()));
        }
    }
}

/// A running peer on 127.0.0.1.
pub struct Peer {
    pub addr: std::net::SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Peer {
    /// Starts on a free loopback port; files are written under `workspace`.
    pub async fn start(workspace: PathBuf) -> std::io::Result<Peer> {
        std::fs::create_dir_all(&workspace)?;
        let registry = Arc::new(Registry {
            workspace,
            ..Registry::default()
        });
        let app = Router::new()
            .route("/api/v1/sessions", post(create_session).get(sessions))
            .route("/api/v1/sessions/{sid}/messages", post(message))
            .route("/api/v1/sessions/{sid}/events", get(events))
            .route("/api/v1/sessions/{sid}/approvals/{aid}", post(decide))
            .route("/api/v1/approvals", get(pending))
            .with_state(registry);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();
        let until = stop.clone();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move { until.cancelled().await })
                .await
        });
        Ok(Peer { addr, stop, task })
    }

    /// Stops serving (open feeds end with it).
    pub async fn stop(self) -> std::io::Result<()> {
        self.stop.cancel();
        self.task.abort();
        match self.task.await {
            Ok(served) => served,
            Err(_) => Ok(()),
        }
    }
}

async fn create_session(State(registry): State<Arc<Registry>>) -> Json<Value> {
    let id = uuid::Uuid::new_v4().to_string();
    lock(&registry.feeds).insert(id.clone(), broadcast::channel(4096).0);
    Json(json!({ "id": id }))
}

#[derive(Deserialize)]
struct Message {
    text: String,
}

/// The writes a message asks for: `(path, content)` per `write <path>: <content>` line whose
/// path is plain and relative (the peer listens on loopback without a credential while the
/// bench runs: no `..`, no absolute path, so nobody else can write outside its folder).
fn writes(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| line.strip_prefix("write "))
        .filter_map(|rest| rest.split_once(": "))
        .filter(|(path, _)| {
            !path.is_empty()
                && std::path::Path::new(path)
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)))
        })
        .map(|(path, content)| (path.to_owned(), content.to_owned()))
        .collect()
}

async fn message(
    State(registry): State<Arc<Registry>>,
    Path(sid): Path<String>,
    Json(body): Json<Message>,
) -> Result<(StatusCode, Json<Value>), StatusCode> {
    if registry.feed(&sid).is_none() {
        return Err(StatusCode::NOT_FOUND);
    }
    let turn_id = uuid::Uuid::new_v4().to_string();
    // One turn at a time per session, as Countersign has it.
    match lock(&registry.running).entry(sid.clone()) {
        std::collections::hash_map::Entry::Occupied(_) => return Err(StatusCode::CONFLICT),
        std::collections::hash_map::Entry::Vacant(slot) => {
            slot.insert(turn_id.clone());
        }
    }
    tokio::spawn(turn(Arc::clone(&registry), sid, body.text));
    Ok((StatusCode::ACCEPTED, Json(json!({ "turn_id": turn_id }))))
}

/// One turn: every gate of the message at once, each write when its answer comes.
async fn turn(registry: Arc<Registry>, sid: String, text: String) {
    let gates = writes(&text).into_iter().map(|(path, content)| {
        let registry = Arc::clone(&registry);
        let sid = sid.clone();
        async move {
            let aid = uuid::Uuid::new_v4().to_string();
            let (answer, answered) = oneshot::channel();
            lock(&registry.waiting).insert(
                aid.clone(),
                Waiting {
                    session_id: sid.clone(),
                    answer,
                },
            );
            registry.send(
                &sid,
                "approval_request",
                json!({ "approval_id": aid, "session_id": sid, "tool": "write_file", "args": {"path": path} }),
            );
            let output = match answered.await {
                Ok(true) => {
                    let file = registry.workspace.join(&path);
                    let written = match file.parent() {
                        Some(dir) => tokio::fs::create_dir_all(dir).await,
                        None => Ok(()),
                    };
                    match written {
                        Ok(()) => tokio::fs::write(&file, content.as_bytes()).await,
                        Err(e) => Err(e),
                    }
                    .map_or_else(|e| e.to_string(), |()| "written".to_owned())
                }
                _ => "denied".to_owned(),
            };
            registry.send(
                &sid,
                "tool_result",
                json!({ "approval_id": aid, "output": output }),
            );
        }
    });
    futures::future::join_all(gates).await;
    lock(&registry.running).remove(&sid);
    registry.send(&sid, "turn_finished", json!({ "status": "completed" }));
}

#[derive(Deserialize)]
struct Decision {
    decision: String,
}

async fn decide(
    State(registry): State<Arc<Registry>>,
    Path((_sid, aid)): Path<(String, String)>,
    Json(body): Json<Decision>,
) -> Result<Json<Value>, StatusCode> {
    let waiting = lock(&registry.waiting)
        .remove(&aid)
        .ok_or(StatusCode::CONFLICT)?;
    let _ = waiting.answer.send(body.decision == "approve");
    Ok(Json(
        json!({ "approval_id": aid, "decision": body.decision }),
    ))
}

async fn sessions(State(registry): State<Arc<Registry>>) -> Json<Value> {
    let running = lock(&registry.running).clone();
    let sessions: Vec<Value> = lock(&registry.feeds)
        .keys()
        .map(|id| json!({ "id": id, "running_turn_id": running.get(id) }))
        .collect();
    Json(Value::Array(sessions))
}

async fn pending(State(registry): State<Arc<Registry>>) -> Json<Value> {
    let gates: Vec<Value> = lock(&registry.waiting)
        .iter()
        .map(|(aid, w)| json!({ "approval_id": aid, "session_id": w.session_id }))
        .collect();
    Json(Value::Array(gates))
}

async fn events(
    State(registry): State<Arc<Registry>>,
    Path(sid): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, StatusCode> {
    let feed = registry.feed(&sid).ok_or(StatusCode::NOT_FOUND)?;
    let stream = BroadcastStream::new(feed.subscribe()).filter_map(|item| async move {
        item.ok()
            .map(|(kind, data)| Ok(Event::default().event(kind).data(data)))
    });
    Ok(Sse::new(stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_names_its_writes() {
        assert_eq!(
            writes(
                "parallel:\nwrite a/1.txt: one\nwrite ../x: no\nwrite /etc/x: no\nwrite b.txt: two\nsay hi"
            ),
            vec![
                ("a/1.txt".to_owned(), "one".to_owned()),
                ("b.txt".to_owned(), "two".to_owned())
            ]
        );
    }
}
