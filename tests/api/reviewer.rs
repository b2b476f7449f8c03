//! The reviewer (issue 40) with the history reviewer and no model: predictions recorded as
//! outside agents' cards open, invisible until the card is answered (API, feed, page, the
//! agent's gate state), then carried by the resolution and counted in `GET /api/v1/review`;
//! floor cards never reviewed; trust that ends when the mode leaves `on`.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

/// An outside agent with a `gates` token.
async fn agent(ts: &TestServer) -> Api {
    let made = ts
        .post("/api/v1/tokens", json!({"name": "agent", "scope": "gates"}))
        .await
        .expect(201);
    Api::new(&ts.base).with_token(str_of(&made, "token"))
}

fn bash(command: &str) -> Value {
    json!({"source": "codex", "external_session": "rev", "cwd": "/home/me/app",
           "tool": {"name": "Bash", "input": {"command": command}}})
}

/// Opens a card for `command`; its gate state.
async fn open(agent: &Api, command: &str) -> Value {
    agent.post("/api/v1/gates", bash(command)).await.expect(201)
}

/// Waits until the reviewer stored its prediction for `gate`; its predicted word and reason.
async fn prediction_of(ts: &TestServer, gate: &Value) -> (String, String) {
    let aid = str_of(gate, "approval_id");
    for _ in 0..200 {
        if let Some(row) = ts.core().review_prediction(aid).await.unwrap() {
            return (row.predicted.as_str().to_owned(), row.reason);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no prediction for {aid}");
}

/// Answers `gate` as the person.
async fn answer(ts: &TestServer, gate: &Value, decision: &str) -> Value {
    let (sid, aid) = (str_of(gate, "session_id"), str_of(gate, "approval_id"));
    ts.post(
        &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
        json!({"decision": decision, "reason": "no"}),
    )
    .await
    .expect(200)
}

async fn reconfigure(ts: &TestServer, config: &str) {
    std::fs::write(ts.root().join("config.toml"), config).unwrap();
    ts.core().reload_config().await;
}

/// `GET /api/v1/review` once its classes count `n` answered predictions.
async fn review_with(ts: &TestServer, n: u64) -> Value {
    for _ in 0..200 {
        let state = ts.get("/api/v1/review").await.expect(200);
        let cards: u64 = state["classes"]
            .as_array()
            .map_or(0, |c| c.iter().filter_map(|c| c["cards"].as_u64()).sum());
        if cards >= n {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the review state never listed {n} predictions");
}

/// Five `echo` approvals with the reviewer off (no predictions), then shadow: the next `echo`
/// is predicted `approve`, a `npm publish` `escalate`; neither shows anywhere before the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shadow_prediction_is_recorded_unseen_then_compared_with_the_answer() {
    let ts = TestServer::configured("[review]\nmode = \"off\"\n").await;
    let agent = agent(&ts).await;
    for _ in 0..5 {
        let gate = open(&agent, "echo six").await;
        answer(&ts, &gate, "approve").await;
    }
    reconfigure(&ts, "[review]\nmode = \"shadow\"\n").await;
    assert_eq!(ts.get("/api/v1/review").await.expect(200)["mode"], "shadow");
    let echo = open(&agent, "echo six").await;
    let push = open(&agent, "npm publish").await;
    let (predicted, reason) = prediction_of(&ts, &echo).await;
    assert_eq!(predicted, "approve", "{reason}");
    assert_eq!(prediction_of(&ts, &push).await.0, "escalate");

    // Nowhere before the answer: the inbox, the snapshot, the feed, the page, the gate state.
    let sid = str_of(&echo, "session_id").to_owned();
    let unseen = |what: &str, text: &str| {
        assert!(!text.contains(&reason), "{what} shows the reason: {text}");
        assert!(
            !text.contains("\"review\""),
            "{what} shows a review: {text}"
        );
        assert!(
            !text.contains("predicted"),
            "{what} shows a prediction: {text}"
        );
    };
    unseen("the inbox", &ts.get("/api/v1/approvals").await.body);
    unseen(
        "the snapshot",
        &ts.get(&format!("/api/v1/sessions/{sid}")).await.body,
    );
    let mut feed = ts.sse(&sid, Some(0), None).await;
    let frames = feed
        .until(SOON, |f| {
            f.is("approval_request") && f.data.contains("npm publish")
        })
        .await;
    for frame in &frames {
        unseen("the feed", &frame.data);
    }
    let page = send(ts.req(Method::GET, &format!("/sessions/{sid}"))).await;
    unseen("the page", &page.body);
    // Shadow mode: an escalate puts no concern on the card either.
    no_concern_on(&ts, &push).await;
    let aid = str_of(&echo, "approval_id");
    unseen(
        "the gate state",
        &agent.get(&format!("/api/v1/gates/{aid}")).await.body,
    );

    // Answered: the resolution carries it, and the standing counts it.
    answer(&ts, &echo, "approve").await;
    answer(&ts, &push, "deny").await;
    let snap = ts.snapshot(&sid).await;
    let resolved: Vec<Value> = events(&snap)
        .into_iter()
        .filter(|e| e["type"] == "approval_resolved" && e["approval_id"] == aid)
        .collect();
    assert_eq!(resolved.len(), 1);
    assert_eq!(
        resolved[0]["review"]["predicted"], "approve",
        "{}",
        resolved[0]
    );
    assert_eq!(resolved[0]["review"]["reason"], reason.as_str());
    let state = review_with(&ts, 2).await;
    assert_eq!(state["mode"], "shadow");
    assert_eq!(state["reviewer"], "history");
    assert_eq!(
        (state["min_cards"].clone(), state["min_agreement"].clone()),
        (json!(50), json!(0.97))
    );
    let exec = &state["classes"][0];
    assert_eq!(
        (exec["class"].as_str(), exec["source"].as_str()),
        (Some("exec"), Some("codex"))
    );
    assert_eq!(
        (exec["cards"].as_u64(), exec["agreed"].as_u64()),
        (Some(2), Some(2)),
        "{state}"
    );
    assert_eq!(exec["eligible"], false);
    assert_eq!(exec["trusted"], false);
    let recent = state["recent"].as_array().unwrap();
    assert!(
        recent
            .iter()
            .any(|r| r["approval_id"] == aid && r["answered"] == "approved" && r["agreed"] == true)
    );
}

/// A floor card is never shown to the reviewer, in any mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_floor_card_is_never_reviewed() {
    let ts = TestServer::configured("[review]\nmode = \"shadow\"\n").await;
    let agent = agent(&ts).await;
    let floor = open(&agent, "cat .env").await;
    let ordinary = open(&agent, "echo hi").await;
    prediction_of(&ts, &ordinary).await;
    let aid = str_of(&floor, "approval_id");
    assert!(ts.core().review_prediction(aid).await.unwrap().is_none());
    let snap = ts.snapshot(str_of(&floor, "session_id")).await;
    let card = snap["pending"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["approval_id"] == aid)
        .unwrap()
        .clone();
    assert_eq!(card["reason"], "safety_floor", "{card}");
}

/// With the reviewer off nothing is predicted; the route says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_reviewer_off_nothing_is_predicted() {
    let ts = TestServer::start().await;
    let agent = agent(&ts).await;
    let gate = open(&agent, "echo hi").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let aid = str_of(&gate, "approval_id");
    assert!(ts.core().review_prediction(aid).await.unwrap().is_none());
    let state = ts.get("/api/v1/review").await.expect(200);
    assert_eq!(state["mode"], "off");
    assert_eq!(state["classes"], json!([]));
    // Admin only: a gates token is refused.
    agent.get("/api/v1/review").await.expect(403);
}

/// Opens `echo six` cards the history reviewer predicts `approve` (five were approved before,
/// word for word) and approves each once predicted: `n` agreeing cards.
async fn agreeing_cards(ts: &TestServer, agent: &Api, n: usize) {
    for _ in 0..n {
        let gate = open(agent, "echo six").await;
        assert_eq!(prediction_of(ts, &gate).await.0, "approve");
        answer(ts, &gate, "approve").await;
    }
}

/// The `review_concern` events of `sid`'s log.
async fn concerns(ts: &TestServer, sid: &str) -> Vec<Value> {
    events(&ts.snapshot(sid).await)
        .into_iter()
        .filter(|e| e["type"] == "review_concern")
        .collect()
}

/// `gate`'s listing among the pending cards of `listing` (the inbox, or a snapshot's
/// `pending`).
fn listed(listing: &Value, gate: &Value) -> Value {
    listing
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["approval_id"] == gate["approval_id"])
        .cloned()
        .unwrap_or_else(|| panic!("{} not listed in {listing}", gate["approval_id"]))
}

/// A card the reviewer escalates where it is not trusted (shadow, or an untrusted class in
/// `on`): nothing is committed or listed for the person before the answer.
async fn no_concern_on(ts: &TestServer, gate: &Value) {
    assert_eq!(prediction_of(ts, gate).await.0, "escalate");
    // The concern would follow the stored prediction at once: give it time to (wrongly) land.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sid = str_of(gate, "session_id");
    assert_eq!(concerns(ts, sid).await, Vec::<Value>::new());
    let inbox = ts.get("/api/v1/approvals").await.expect(200);
    assert!(listed(&inbox, gate).get("reviewer_concern").is_none());
    let snap = ts.snapshot(sid).await;
    assert!(
        listed(&snap["pending"], gate)
            .get("reviewer_concern")
            .is_none()
    );
}

fn trust(trusted: bool) -> Value {
    json!({ "trusted": trusted })
}

/// Trust is refused in shadow and below the threshold, given at 50 agreeing cards; then the
/// reviewer answers the class's cards (actor `reviewer`), the mode leaving `on` ends the trust,
/// and the person's "I would not have approved this" ends it again, for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_is_earned_used_and_lost() {
    let (hook, seen) = webhook().await;
    let with_hook = |mode: &str| {
        format!("[notify]\nwebhook_url = \"{hook}/hooks/cs\"\n[review]\nmode = \"{mode}\"\n")
    };
    let ts = TestServer::configured(&with_hook("off")).await;
    let agent = agent(&ts).await;
    for _ in 0..5 {
        let gate = open(&agent, "echo six").await;
        answer(&ts, &gate, "approve").await;
    }
    let exec = "/api/v1/review/classes/exec/codex";
    reconfigure(&ts, &with_hook("shadow")).await;
    ts.put(exec, trust(true))
        .await
        .expect_error(409, "review_not_on");
    reconfigure(&ts, &with_hook("on")).await;
    let refused = ts
        .put(exec, trust(true))
        .await
        .expect_error(409, "not_eligible");
    assert!(
        refused.to_string().contains("at least 50 cards"),
        "{refused}"
    );
    ts.put("/api/v1/review/classes/bogus/codex", trust(true))
        .await
        .expect_error(400, "invalid_request");
    // Untrusted classes stay in shadow even in `on`: the person answers each, and an
    // escalate shows nothing.
    let untrusted = open(&agent, "npm publish --dry-run").await;
    // (Left unanswered, so the class counts only the agreeing cards below.)
    no_concern_on(&ts, &untrusted).await;
    agreeing_cards(&ts, &agent, 50).await;
    let state = review_with(&ts, 50).await;
    assert_eq!(state["classes"][0]["eligible"], true, "{state}");
    let given = ts.put(exec, trust(true)).await.expect(200);
    assert_eq!(
        (given["trusted"].clone(), given["cards"].clone()),
        (json!(true), json!(50))
    );

    // Now the reviewer answers an `echo` card itself.
    let gate = open(&agent, "echo six").await;
    let aid = str_of(&gate, "approval_id").to_owned();
    let mut answered = Value::Null;
    for _ in 0..200 {
        answered = agent.get(&format!("/api/v1/gates/{aid}")).await.expect(200);
        if answered["status"] != "pending" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(answered["status"], "approved", "{answered}");
    assert_eq!(answered["answered_by"], "reviewer");
    assert_eq!(answered["actor"], "reviewer");
    // The reviewer's own words: nothing of the card's command.
    let reason = answered["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("this exact command was approved ")
            && reason.ends_with(" times here, never denied")
            && !reason.contains("echo"),
        "{answered}"
    );
    let audit = ts.get("/api/v1/audit?action=gate_resolved").await.body;
    assert!(audit.contains("\"actor\":\"reviewer\""), "{audit}");
    // The audit entry carries the reviewer's reason too.
    assert!(
        audit.contains(answered["reason"].as_str().unwrap()),
        "{audit}"
    );
    // The person is told, as information: no answer offered, the card linked.
    let told = told_by_webhook(&seen, "approved_by_reviewer").await;
    assert_eq!(told["approval_id"], aid.as_str());
    let said = told["message"].as_str().unwrap();
    assert!(said.starts_with("Approved by the reviewer — "), "{said}");
    assert!(
        said.contains(answered["reason"].as_str().unwrap()),
        "{said}"
    );
    assert!(
        str_of(&told, "url").ends_with(&format!("#gate-{aid}")),
        "{told}"
    );
    // A card the reviewer may not approve (not an approval it predicts) waits for the person.
    let other = open(&agent, "npm publish").await;
    prediction_of(&ts, &other).await;
    let waiting = agent
        .get(&format!("/api/v1/gates/{}", str_of(&other, "approval_id")))
        .await
        .expect(200);
    assert_eq!(waiting["status"], "pending");
    concern_shown_to_the_person_only(&ts, &agent, &other).await;

    // The mode leaving `on` ends every trust, audited as the file's.
    reconfigure(&ts, &with_hook("shadow")).await;
    let state = ts.get("/api/v1/review").await.expect(200);
    assert_eq!(state["classes"][0]["trusted"], false, "{state}");
    let lost = ts.get("/api/v1/audit?action=review_untrusted").await.body;
    assert!(
        lost.contains("\"actor\":\"file\"") && lost.contains("review:exec/codex"),
        "{lost}"
    );

    // Trusted again, then reported: a false approval ends it, and it is not eligible again.
    reconfigure(&ts, &with_hook("on")).await;
    ts.put(exec, trust(true)).await.expect(200);
    let other_aid = str_of(&other, "approval_id");
    ts.post(&format!("/api/v1/review/disagree/{other_aid}"), json!({}))
        .await
        .expect_error(409, "not_answered_by_reviewer");
    let reported = ts
        .post(&format!("/api/v1/review/disagree/{aid}"), json!({}))
        .await
        .expect(200);
    assert_eq!(
        (
            reported["trusted"].clone(),
            reported["false_approvals"].clone()
        ),
        (json!(false), json!(1))
    );
    let again = ts
        .post(&format!("/api/v1/review/disagree/{aid}"), json!({}))
        .await
        .expect(200);
    assert_eq!(again["false_approvals"], 1, "idempotent: {again}");
    ts.put(exec, trust(true))
        .await
        .expect_error(409, "not_eligible");
    let recent = ts.get("/api/v1/review").await.expect(200);
    let reviewed = recent["recent"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["approval_id"] == aid.as_str())
        .unwrap()
        .clone();
    assert_eq!(
        (reviewed["answered"].clone(), reviewed["agreed"].clone()),
        (json!("reviewer"), json!(false))
    );
}

/// Trust is the reviewer's that earned it: switching `review.reviewer` (or the model
/// reviewer's endpoint or model) ends it, audited with why, and the standing then counts only
/// the reviewer in force; switching back does not bring the trust back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_does_not_survive_a_change_of_reviewer() {
    let history = "[review]\nmode = \"on\"\n";
    let model = |name: &str| {
        format!(
            "[review]\nmode = \"on\"\nreviewer = \"model\"\n\
             base_url = \"http://127.0.0.1:9/v1\"\nmodel = \"{name}\"\n"
        )
    };
    let ts = TestServer::configured("[review]\nmode = \"off\"\n").await;
    let agent = agent(&ts).await;
    for _ in 0..5 {
        let gate = open(&agent, "echo six").await;
        answer(&ts, &gate, "approve").await;
    }
    reconfigure(&ts, history).await;
    agreeing_cards(&ts, &agent, 50).await;
    review_with(&ts, 50).await;
    let exec = "/api/v1/review/classes/exec/codex";
    ts.put(exec, trust(true)).await.expect(200);

    reconfigure(&ts, &model("judge")).await;
    let state = ts.get("/api/v1/review").await.expect(200);
    assert_eq!(state["reviewer"], "model");
    let listed: Vec<&Value> = state["classes"].as_array().unwrap().iter().collect();
    assert!(
        listed
            .iter()
            .all(|c| c["trusted"] == false && c["cards"] == 0),
        "the history reviewer's record is not the model's: {state}"
    );
    let lost = ts.get("/api/v1/audit?action=review_untrusted").await.body;
    assert!(
        lost.contains("review:exec/codex") && lost.contains("the reviewer changed"),
        "{lost}"
    );
    ts.put(exec, trust(true))
        .await
        .expect_error(409, "not_eligible");

    // Back to the history reviewer: its record counts again, its trust is not restored.
    reconfigure(&ts, history).await;
    let back = ts.get("/api/v1/review").await.expect(200);
    assert_eq!(back["classes"][0]["trusted"], false, "{back}");
    assert_eq!(back["classes"][0]["eligible"], true, "{back}");
    // A trust the model reviewer earned ends when its model changes: trusted under
    // `judge` (through the store, as if earned), gone once `judge-2` is in force.
    reconfigure(&ts, &model("judge")).await;
    let row = countersign::server::store::review::TrustRow {
        class: countersign::protocol::ToolClass::Exec,
        source: "codex".into(),
        trusted_at: countersign::protocol::Timestamp::now(),
        reviewer: countersign::server::review::reviewer_key(&ts.core().config().config),
    };
    ts.core()
        .reviews_repo()
        .trust_class(&row, "test")
        .await
        .unwrap();
    ts.core().reload_config().await;
    assert_eq!(
        ts.core()
            .reviews_repo()
            .trusted_classes()
            .await
            .unwrap()
            .len(),
        1,
        "the same reviewer keeps its trust"
    );
    reconfigure(&ts, &model("judge-2")).await;
    assert!(
        ts.core()
            .reviews_repo()
            .trusted_classes()
            .await
            .unwrap()
            .is_empty()
    );
}

/// In a trusted class, the reviewer's escalate puts its concern on the waiting card: one
/// `review_concern` event, `reviewer_concern` on the card in the inbox and the snapshot, and
/// nothing of it in the outside agent's gate state.
async fn concern_shown_to_the_person_only(ts: &TestServer, agent: &Api, gate: &Value) {
    let (predicted, reason) = prediction_of(ts, gate).await;
    assert_eq!(predicted, "escalate");
    let sid = str_of(gate, "session_id");
    let mut raised = Vec::new();
    for _ in 0..200 {
        raised = concerns(ts, sid).await;
        if !raised.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(raised.len(), 1, "{raised:?}");
    assert_eq!(raised[0]["approval_id"], gate["approval_id"]);
    assert_eq!(raised[0]["reason"], reason.as_str());
    let inbox = ts.get("/api/v1/approvals").await.expect(200);
    assert_eq!(listed(&inbox, gate)["reviewer_concern"], reason.as_str());
    let snap = ts.snapshot(sid).await;
    assert_eq!(
        listed(&snap["pending"], gate)["reviewer_concern"],
        reason.as_str()
    );
    let aid = str_of(gate, "approval_id");
    let state = agent.get(&format!("/api/v1/gates/{aid}")).await.body;
    assert!(
        !state.contains(&reason),
        "the agent reads the concern: {state}"
    );
    assert!(!state.contains("concern"), "{state}");
    let page = send(ts.req(Method::GET, &format!("/sessions/{sid}"))).await;
    assert!(
        page.body.contains("data-testid=\"reviewer-concern\""),
        "the page lacks the concern"
    );
    // Under the page's own label, the reviewer's words quoted apart.
    let concern = page
        .body
        .split("data-testid=\"reviewer-concern\"")
        .nth(1)
        .unwrap_or_default();
    let (label, words) = concern
        .split_once("data-testid=\"reviewer-words\"")
        .unwrap_or_default();
    assert!(
        label.contains("s concern:") && words.contains(&format!("<code>{reason}<")),
        "the concern is not quoted under its label: {concern}"
    );
}

/// What the webhook receiver was sent: each body.
type Calls = std::sync::Arc<std::sync::Mutex<Vec<Value>>>;

/// A webhook receiver on loopback: records each body it is sent.
async fn webhook() -> (String, Calls) {
    use axum::extract::State;
    use axum::routing::post;
    let seen: Calls = Calls::default();
    async fn record(State(seen): State<Calls>, body: axum::Json<Value>) -> &'static str {
        seen.lock().unwrap().push(body.0);
        "ok"
    }
    let app = axum::Router::new()
        .route("/{*rest}", post(record))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

/// The first webhook message of `event` (waiting for it).
async fn told_by_webhook(seen: &Calls, event: &str) -> Value {
    for _ in 0..200 {
        let found = seen
            .lock()
            .unwrap()
            .iter()
            .find(|b| b["event"] == event)
            .cloned();
        if let Some(found) = found {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no {event} message on the webhook");
}

/// A scripted OpenAI-compatible reviewer on loopback: approves `echo …`, answers prose for a
/// `printf`, hangs on a `sleep`, escalates the rest.
async fn scripted_model() -> String {
    let app = axum::Router::new().fallback(|body: axum::body::Bytes| async move {
        let asked = String::from_utf8_lossy(&body).into_owned();
        let content = if asked.contains("sleep") {
            tokio::time::sleep(Duration::from_secs(60)).await;
            String::new()
        } else if asked.contains("printf") {
            "I would probably let this one through.".to_owned()
        } else if asked.contains("echo") {
            json!({"decision": "approve", "reason": "echo only prints"}).to_string()
        } else {
            json!({"decision": "escalate", "reason": "this publishes a package"}).to_string()
        };
        axum::Json(json!({
            "id": "r", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}]
        }))
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/v1")
}

/// The model reviewer: its approve and escalate recorded as it said them, a prose reply read
/// as `escalate`, a reply that never comes no prediction at all — and the card still waits
/// for the person.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_reviewer_is_read_strictly_and_never_waited_for() {
    let base = scripted_model().await;
    let config = format!(
        "[review]\nmode = \"shadow\"\nreviewer = \"model\"\nbase_url = \"{base}\"\nmodel = \"m\"\n"
    );
    let ts = TestServer::configured(&config).await;
    let agent = agent(&ts).await;
    let hang = open(&agent, "sleep 100").await;
    let echo = open(&agent, "echo hello").await;
    let publish = open(&agent, "npm publish").await;
    let prose = open(&agent, "printf hi").await;
    assert_eq!(
        prediction_of(&ts, &echo).await,
        ("approve".into(), "echo only prints".into())
    );
    assert_eq!(prediction_of(&ts, &publish).await.0, "escalate");
    assert_eq!(prediction_of(&ts, &prose).await.0, "escalate");
    // The hung reviewer held nothing up: the card waits for the person, and past the
    // deadline there is still no prediction.
    let aid = str_of(&hang, "approval_id");
    assert_eq!(hang["status"], "pending");
    tokio::time::sleep(Duration::from_millis(10_500)).await;
    assert!(ts.core().review_prediction(aid).await.unwrap().is_none());
    let still = agent.get(&format!("/api/v1/gates/{aid}")).await.expect(200);
    assert_eq!(still["status"], "pending");
    let resolved = answer(&ts, &hang, "approve").await;
    assert!(
        resolved.get("review").is_none_or(Value::is_null),
        "{resolved}"
    );
}

/// The card `sid` has waiting once its turn put one up.
async fn waiting_card(ts: &TestServer, sid: &str) -> Value {
    let snap = ts
        .wait_snapshot(sid, "a card", |s| {
            s["pending"].as_array().is_some_and(|p| !p.is_empty())
        })
        .await;
    snap["pending"][0].clone()
}

/// The built-in agent's cards are reviewed as they open, under the source `countersign`; its
/// config cards never are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_built_in_agents_cards_are_reviewed_but_never_its_config_cards() {
    let ts = TestServer::configured("[review]\nmode = \"shadow\"\n").await;
    let sid = ts.session().await;
    ts.send_msg(&sid, "set tools.output_limit_bytes = 4096", Some("ask"))
        .await;
    let config = waiting_card(&ts, &sid).await;
    assert_eq!(config["class"], "config", "{config}");
    let config_id = str_of(&config, "approval_id").to_owned();
    ts.post(
        &format!("/api/v1/sessions/{sid}/approvals/{config_id}"),
        json!({"decision": "deny"}),
    )
    .await
    .expect(200);
    ts.wait_snapshot(&sid, "the turn's end", |s| {
        events(s).iter().any(|e| e["type"] == "turn_finished")
    })
    .await;
    ts.send_msg(&sid, "run: echo hello > reviewed.md", None)
        .await;
    let shell = waiting_card(&ts, &sid).await;
    let row = prediction_of(&ts, &json!({"approval_id": shell["approval_id"]})).await;
    assert_eq!(row.0, "escalate", "no past answers: {row:?}");
    let aid = str_of(&shell, "approval_id");
    let stored = ts.core().review_prediction(aid).await.unwrap().unwrap();
    assert_eq!(stored.source, "countersign");
    assert!(
        ts.core()
            .review_prediction(&config_id)
            .await
            .unwrap()
            .is_none()
    );
}

/// An outside Write card for `path` (the `codex` agent of these tests).
fn write(path: &str) -> Value {
    json!({"source": "codex", "external_session": "rev", "cwd": "/home/me/app",
           "tool": {"name": "Write", "input": {"file_path": path, "content": "notes"}}})
}

/// Answers a card with `decision` once the reviewer predicted `expected` for it.
async fn predicted_then_answered(ts: &TestServer, gate: &Value, expected: &str) {
    assert_eq!(prediction_of(ts, gate).await.0, expected, "{gate}");
    answer(ts, gate, "approve").await;
}

/// The gate state of `gate` once it is no longer pending (or after four seconds).
async fn settled(agent: &Api, gate: &Value) -> Value {
    let aid = str_of(gate, "approval_id");
    let mut state = Value::Null;
    for _ in 0..200 {
        state = agent.get(&format!("/api/v1/gates/{aid}")).await.expect(200);
        if state["status"] != "pending" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    state
}

/// With `edit` and `exec` both trusted, the reviewer approves commands until it approves one
/// of the agent's file edits; then for a day a command it would approve goes to the person,
/// the card saying why (the agent could otherwise run what it wrote, read by nobody).
#[tokio::test]
async fn after_approving_an_edit_the_reviewer_leaves_commands_to_the_person() {
    let ts = TestServer::configured("[review]\nmode = \"off\"\n").await;
    let agent = agent(&ts).await;
    let notes = "/home/me/app/notes.txt";
    for _ in 0..5 {
        answer(&ts, &open(&agent, "echo six").await, "approve").await;
        let gate = agent.post("/api/v1/gates", write(notes)).await.expect(201);
        answer(&ts, &gate, "approve").await;
    }
    reconfigure(&ts, "[review]\nmode = \"on\"\n").await;
    agreeing_cards(&ts, &agent, 50).await;
    for _ in 0..50 {
        let gate = agent.post("/api/v1/gates", write(notes)).await.expect(201);
        predicted_then_answered(&ts, &gate, "approve").await;
    }
    for class in ["exec", "edit"] {
        ts.put(
            &format!("/api/v1/review/classes/{class}/codex"),
            trust(true),
        )
        .await
        .expect(200);
    }
    let command = settled(&agent, &open(&agent, "echo six").await).await;
    assert_eq!(command["answered_by"], "reviewer", "{command}");
    let edit = agent.post("/api/v1/gates", write(notes)).await.expect(201);
    let edit = settled(&agent, &edit).await;
    assert_eq!(edit["answered_by"], "reviewer", "{edit}");

    let held = open(&agent, "echo six").await;
    concern_shown_to_the_person_only_as(&ts, &held, "may run what they wrote").await;
    assert_eq!(settled(&agent, &held).await["status"], "pending");
}

/// `gate` waits for the person with a concern holding `words` on it.
async fn concern_shown_to_the_person_only_as(ts: &TestServer, gate: &Value, words: &str) {
    for _ in 0..200 {
        let inbox = ts.get("/api/v1/approvals").await.expect(200);
        let concern = listed(&inbox, gate)["reviewer_concern"].clone();
        if let Some(text) = concern.as_str() {
            assert!(text.contains(words), "{text}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no concern on {gate}");
}
