//! `bridge opencode` between a fake opencode server and a fake Countersign.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use countersign::external::gates_client::GatesClient;
use countersign::external::opencode::bridge::{Bridge, BridgeOptions};
use countersign::external::opencode::client::OpencodeClient;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::common::{FakeGates, Restartable, TOKEN, eventually, fixture};

/// What the fake opencode knows and was sent.
#[derive(Default)]
struct OpencodeLog {
    /// Pending permissions by id (what `GET /permission` lists).
    pending: BTreeMap<String, Value>,
    /// Every reply attempt: id, body, status answered.
    replies: Vec<(String, Value, u16)>,
    connections: usize,
}

#[derive(Clone)]
struct FakeState {
    log: Arc<Mutex<OpencodeLog>>,
    /// `Some(data)`: an event; `None`: end every open stream (the connection drops).
    events: broadcast::Sender<Option<String>>,
}

/// A fake `opencode serve`: `/event` SSE driven by the test, `/permission`, and
/// `/permission/{id}/reply` that answers `404` when the permission is not pending.
pub(crate) struct FakeOpencode {
    state: FakeState,
    pub(crate) server: Restartable,
}

impl FakeOpencode {
    pub(crate) fn start() -> FakeOpencode {
        let (events, _) = broadcast::channel(64);
        let state = FakeState {
            log: Arc::default(),
            events,
        };
        let app = Router::new()
            .route("/event", get(event_stream))
            .route("/permission", get(list))
            .route("/permission/{id}/reply", post(reply))
            .with_state(state.clone());
        FakeOpencode {
            state,
            server: Restartable::start(app),
        }
    }

    fn emit(&self, event: &Value) {
        let _ = self.state.events.send(Some(event.to_string()));
    }

    /// opencode asks (the fixture's event, as captured).
    pub(crate) fn ask(&self, fixture_name: &str) -> String {
        let event = fixture(fixture_name);
        let props = event["properties"].clone();
        let id = props["id"].as_str().unwrap().to_owned();
        self.state
            .log
            .lock()
            .unwrap()
            .pending
            .insert(id.clone(), props);
        self.emit(&event);
        id
    }

    /// Someone answers in opencode's TUI.
    pub(crate) fn tui_reply(&self, id: &str, reply: &str) {
        let props = self.state.log.lock().unwrap().pending.remove(id).unwrap();
        self.emit(&replied_event(&props, reply));
    }

    fn drop_streams(&self) {
        let _ = self.state.events.send(None);
    }

    pub(crate) fn replies(&self) -> Vec<(String, Value, u16)> {
        self.state.log.lock().unwrap().replies.clone()
    }

    pub(crate) fn connections(&self) -> usize {
        self.state.log.lock().unwrap().connections
    }
}

fn replied_event(props: &Value, reply: &str) -> Value {
    json!({"id": "evt_replied", "type": "permission.replied", "properties": {
        "sessionID": props["sessionID"], "requestID": props["id"], "reply": reply}})
}

async fn event_stream(State(state): State<FakeState>) -> Response {
    state.log.lock().unwrap().connections += 1;
    let rx = state.events.subscribe();
    let first = Bytes::from(format!(
        "data: {}\n\n",
        fixture("opencode/sse-server-connected.json")
    ));
    let stream = futures::stream::unfold((Some(first), rx), |(first, mut rx)| async move {
        if let Some(first) = first {
            return Some((Ok::<_, Infallible>(first), (None, rx)));
        }
        match rx.recv().await {
            Ok(Some(data)) => Some((Ok(Bytes::from(format!("data: {data}\n\n"))), (None, rx))),
            _ => None,
        }
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

async fn list(State(state): State<FakeState>) -> Response {
    let pending: Vec<Value> = state
        .log
        .lock()
        .unwrap()
        .pending
        .values()
        .cloned()
        .collect();
    axum::Json(pending).into_response()
}

async fn reply(
    State(state): State<FakeState>,
    Path(id): Path<String>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let answered = {
        let mut log = state.log.lock().unwrap();
        let props = log.pending.remove(&id);
        let status = if props.is_some() { 200 } else { 404 };
        log.replies.push((id.clone(), body.clone(), status));
        props
    };
    match answered {
        Some(props) => {
            // Like opencode: the event goes out on the bus before the HTTP answer, which comes
            // a moment later.
            let _ = state.events.send(Some(
                replied_event(&props, body["reply"].as_str().unwrap()).to_string(),
            ));
            tokio::time::sleep(Duration::from_millis(100)).await;
            axum::Json(json!(true)).into_response()
        }
        None => {
            let mut not_found = fixture("opencode/post-permission-reply.404.response.json");
            not_found["requestID"] = json!(id);
            (StatusCode::NOT_FOUND, axum::Json(not_found)).into_response()
        }
    }
}

/// A running bridge between the two fakes (stopped when dropped).
struct Running(tokio::task::JoinHandle<()>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn bridge(gates: &FakeGates, opencode: &FakeOpencode) -> Running {
    let bridge = Bridge::new(
        GatesClient::new(&gates.url(), Some(TOKEN)).unwrap(),
        OpencodeClient::new(&opencode.server.url(), None, None).unwrap(),
        BridgeOptions {
            cwd: "/tmp/oc-run/proj".into(),
            timeout_secs: 1800,
            first_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_millis(200),
        },
    );
    Running(tokio::spawn(async move { bridge.run().await }))
}

pub(crate) async fn connected(opencode: &FakeOpencode, n: usize) {
    eventually("the bridge to connect", || opencode.connections() >= n).await;
    // The subscription is made before the handler returns; give the list call a moment.
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn asked_opens_a_gate_and_the_answer_goes_back_once() {
    let gates = FakeGates::start();
    let opencode = FakeOpencode::start();
    let _bridge = bridge(&gates, &opencode);
    connected(&opencode, 1).await;

    let id = opencode.ask("opencode/sse-permission-asked-bash.json");
    gates
        .resolve(0, json!({"status": "approved", "decision": "approve"}))
        .await;
    eventually("the reply", || !opencode.replies().is_empty()).await;
    assert_eq!(
        opencode.replies(),
        vec![(
            id,
            fixture("opencode/post-permission-reply.once.request.json"),
            200
        )]
    );
    let body = &gates.gates()[0].body;
    assert_eq!(body["source"], "opencode");
    assert_eq!(body["external_session"], "ses_dd282ea01ffecCV92BJtBUCgfk");
    assert_eq!(body["cwd"], "/tmp/oc-run/proj");
    assert_eq!(
        body["tool"],
        json!({"name": "bash", "input": {"command": "touch /tmp/oc-run/proj/made-by-bash.txt"}})
    );
    assert_eq!(
        body["capabilities"],
        json!({"edit": false, "always": true, "deny_reason": true})
    );

    // Always → "once" (Countersign's rule answers the next); deny → "reject" with the reason.
    let id2 = opencode.ask("opencode/sse-permission-asked-bash-2.json");
    gates
        .resolve(
            1,
            json!({"status": "approved", "decision": "allow_always", "rule": {"id": "r"}}),
        )
        .await;
    eventually("the second reply", || opencode.replies().len() == 2).await;
    assert_eq!(
        opencode.replies()[1],
        (
            id2,
            fixture("opencode/post-permission-reply.once.request.json"),
            200
        )
    );
    let id3 = opencode.ask("opencode/sse-permission-asked-edit.json");
    gates
        .resolve(
            2,
            json!({"status": "denied", "decision": "deny", "reason": "use a new file"}),
        )
        .await;
    eventually("the third reply", || opencode.replies().len() == 3).await;
    assert_eq!(
        opencode.replies()[2],
        (
            id3,
            json!({"reply": "reject", "message": "use a new file"}),
            200
        )
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        opencode.replies().len(),
        3,
        "a permission was answered twice"
    );
    assert!(
        gates.cancels().is_empty(),
        "our own replies cancelled gates"
    );
}

#[tokio::test]
async fn an_answer_in_the_tui_cancels_the_gate() {
    let gates = FakeGates::start();
    let opencode = FakeOpencode::start();
    let _bridge = bridge(&gates, &opencode);
    connected(&opencode, 1).await;

    let id = opencode.ask("opencode/sse-permission-asked-bash.json");
    eventually("the gate", || gates.gates().len() == 1).await;
    opencode.tui_reply(&id, "once");
    eventually("the cancel", || !gates.cancels().is_empty()).await;
    assert_eq!(
        gates.cancels(),
        vec![("apr_1".to_owned(), "answered_elsewhere".to_owned())]
    );
    // Countersign's answer for the cancelled gate never reaches opencode.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(opencode.replies().is_empty());
}

#[tokio::test]
async fn a_dropped_stream_reconnects_without_a_second_gate_or_reply() {
    let gates = FakeGates::start();
    let opencode = FakeOpencode::start();
    let _bridge = bridge(&gates, &opencode);
    connected(&opencode, 1).await;

    let id = opencode.ask("opencode/sse-permission-asked-bash.json");
    eventually("the gate", || gates.gates().len() == 1).await;
    opencode.drop_streams();
    connected(&opencode, 2).await;
    // opencode (or the resync list) shows the same ask again.
    opencode.emit(&fixture("opencode/sse-permission-asked-bash.json"));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        gates.gates().len(),
        1,
        "a second gate for the same permission"
    );

    gates
        .resolve(0, json!({"status": "approved", "decision": "approve"}))
        .await;
    eventually("the reply", || !opencode.replies().is_empty()).await;
    opencode.drop_streams();
    connected(&opencode, 3).await;
    opencode.emit(&fixture("opencode/sse-permission-asked-bash.json"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        opencode.replies(),
        vec![(id, json!({"reply": "once"}), 200)]
    );
    assert_eq!(gates.opens().len(), 1);
    assert!(gates.cancels().is_empty());
}

#[tokio::test]
async fn an_answer_given_while_disconnected_cancels_the_gate_on_resync() {
    let gates = FakeGates::start();
    let mut opencode = FakeOpencode::start();
    let _bridge = bridge(&gates, &opencode);
    connected(&opencode, 1).await;

    let id = opencode.ask("opencode/sse-permission-asked-bash.json");
    eventually("the gate", || gates.gates().len() == 1).await;
    opencode.server.stop();
    // Answered in the TUI while the bridge could not hear it.
    opencode.state.log.lock().unwrap().pending.remove(&id);
    opencode.server.restart();
    eventually("the cancel", || !gates.cancels().is_empty()).await;
    assert_eq!(
        gates.cancels(),
        vec![("apr_1".to_owned(), "answered_elsewhere".to_owned())]
    );
    assert!(opencode.replies().is_empty());
}

#[tokio::test]
async fn countersign_down_when_asked_is_retried_until_it_is_back() {
    let mut gates = FakeGates::start();
    let opencode = FakeOpencode::start();
    let _bridge = bridge(&gates, &opencode);
    connected(&opencode, 1).await;
    gates.server.stop();
    let id = opencode.ask("opencode/sse-permission-asked-bash.json");
    tokio::time::sleep(Duration::from_millis(600)).await;
    gates.server.restart();
    gates
        .resolve(0, json!({"status": "approved", "decision": "approve"}))
        .await;
    eventually("the reply", || !opencode.replies().is_empty()).await;
    assert_eq!(
        opencode.replies(),
        vec![(id, json!({"reply": "once"}), 200)]
    );
    assert_eq!(gates.gates().len(), 1);
}

/// A refusal Countersign sends (a wrong token, too many cards, an error of its own) is its
/// answer: the permission is rejected with why, never left waiting as if Countersign were down.
/// A card lost while the bridge waits on it is a reject too.
#[tokio::test]
async fn a_refusal_from_countersign_rejects_the_permission_with_why() {
    for (status, code) in [
        (429, "too_many_gates"),
        (401, "unauthorized"),
        (500, "internal"),
    ] {
        let gates = FakeGates::start();
        let body = json!({"error": {"code": code, "message": "no"}}).to_string();
        gates.log.lock().unwrap().opens_answer = Some((status, body));
        let opencode = FakeOpencode::start();
        let _bridge = bridge(&gates, &opencode);
        connected(&opencode, 1).await;
        let id = opencode.ask("opencode/sse-permission-asked-bash.json");
        eventually("the reply", || !opencode.replies().is_empty()).await;
        let (replied, reply, _) = opencode.replies()[0].clone();
        assert_eq!(replied, id);
        assert_eq!(reply["reply"], "reject", "{status}: {reply}");
        let message = reply["message"].as_str().unwrap();
        assert!(message.contains(&status.to_string()), "{message}");
    }
    let gates = FakeGates::start();
    let body = json!({"error": {"code": "unknown_approval", "message": "gone"}}).to_string();
    gates.log.lock().unwrap().polls_answer = Some((404, body));
    let opencode = FakeOpencode::start();
    let _bridge = bridge(&gates, &opencode);
    connected(&opencode, 1).await;
    opencode.ask("opencode/sse-permission-asked-bash.json");
    eventually("the reply", || !opencode.replies().is_empty()).await;
    let reply = &opencode.replies()[0].1;
    assert_eq!(reply["reply"], "reject", "{reply}");
    assert!(
        reply["message"].as_str().unwrap().contains("lost"),
        "{reply}"
    );
}
