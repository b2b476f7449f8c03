//! Accountability over HTTP: the audit chain records gates, rules and modes and detects an
//! altered or deleted entry at exactly that entry; the budget kill-switch suspends a turn at
//! its ceiling in every mode (continue goes on, stop and timeout end it `stopped`); rules
//! expire and are recommended after three hand approvals.
#![cfg(feature = "ssr")]

use std::path::Path;
use std::time::{Duration, Instant};

use countersign::server::{self, Server, settings::ServeArgs};
use serde_json::{Value, json};

const TOKEN: &str = "accountability-token";

struct Srv {
    _dir: tempfile::TempDir,
    db: std::path::PathBuf,
    base: String,
    client: reqwest::Client,
    running: Server,
}

impl Drop for Srv {
    fn drop(&mut self) {
        self.running.shutdown.cancel();
    }
}

impl Srv {
    async fn start(config: Option<&str>) -> Srv {
        let dir = tempfile::tempdir().unwrap();
        let config_path = config.map(|text| {
            let path = dir.path().join("config.toml");
            std::fs::write(&path, text).unwrap();
            path
        });
        let args = ServeArgs {
            addr: "127.0.0.1:0".parse().unwrap(),
            data_dir: Some(dir.path().join("data")),
            workspace: Some(dir.path().join("ws")),
            token: Some(TOKEN.into()),
            config: config_path,
        };
        let running = server::start(args.resolve().unwrap(), None).await.unwrap();
        Srv {
            db: dir.path().join("data/countersign.db"),
            base: format!("http://{}/api/v1", running.addr),
            client: reqwest::Client::new(),
            running,
            _dir: dir,
        }
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    async fn session(&self) -> String {
        self.post("/sessions", json!({})).await.1["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn send(&self, sid: &str, text: &str, mode: Option<&str>) -> String {
        let mut body = json!({"text": text});
        if let Some(mode) = mode {
            body["approval_mode"] = json!(mode);
        }
        let (status, answer) = self.post(&format!("/sessions/{sid}/messages"), body).await;
        assert_eq!(status, 202, "{answer}");
        answer["turn_id"].as_str().unwrap().to_owned()
    }

    /// Polls the snapshot until `done` holds (20 s at most).
    async fn wait(&self, sid: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (_, snap) = self.get(&format!("/sessions/{sid}")).await;
            if done(&snap) {
                return snap;
            }
            assert!(
                Instant::now() < deadline,
                "waited 20 s for {what}: {snap:#}"
            );
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
    }

    async fn pending_card(&self, sid: &str) -> Value {
        let snap = self
            .wait(sid, "a pending card", |s| {
                s["pending"].as_array().is_some_and(|p| !p.is_empty())
            })
            .await;
        snap["pending"][0].clone()
    }

    async fn finished(&self, sid: &str, turn: &str) -> Value {
        let snap = self
            .wait(sid, "turn_finished", |s| {
                s["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|e| e["type"] == "turn_finished" && e["turn_id"] == turn)
            })
            .await;
        snap["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["type"] == "turn_finished" && e["turn_id"] == turn)
            .cloned()
            .unwrap()
    }

    async fn decide(&self, sid: &str, card: &Value, body: Value) -> (u16, Value) {
        let aid = card["approval_id"].as_str().unwrap();
        self.post(&format!("/sessions/{sid}/approvals/{aid}"), body)
            .await
    }
}

fn sql(db: &Path, statement: &str) {
    let status = std::process::Command::new("python3")
        .args(["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()"])
        .arg(db)
        .arg(statement)
        .status()
        .unwrap();
    assert!(status.success(), "{statement}");
}

async fn audit(srv: &Srv) -> Vec<Value> {
    srv.get("/audit").await.1.as_array().unwrap().clone()
}

/// Builds a session with a gate approved, a rule created, used and revoked, and a mode change.
async fn audited_history(srv: &Srv) -> String {
    let sid = srv.session().await;
    let t1 = srv.send(&sid, "run: echo one", Some("auto_edit")).await;
    let card = srv.pending_card(&sid).await;
    assert_eq!(
        srv.decide(
            &sid,
            &card,
            json!({"decision": "allow_always", "client_id": "tab-1"})
        )
        .await
        .0,
        200
    );
    srv.finished(&sid, &t1).await;
    let t2 = srv.send(&sid, "run: echo two", None).await;
    srv.finished(&sid, &t2).await;
    let rules = srv.get("/rules").await.1;
    let rule = rules[0]["id"].as_str().unwrap().to_owned();
    let revoke = srv
        .client
        .delete(format!("{}/rules/{rule}", srv.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(revoke.status().as_u16(), 204);
    sid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_records_who_allowed_what_in_a_verified_chain() {
    let srv = Srv::start(None).await;
    let sid = audited_history(&srv).await;
    let entries = audit(&srv).await;
    let actions: Vec<&str> = entries
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        vec![
            "mode_changed",
            "gate_opened",
            "gate_resolved",
            "rule_created",
            "rule_used",
            "rule_revoked"
        ]
    );
    let ns: Vec<u64> = entries.iter().map(|e| e["n"].as_u64().unwrap()).collect();
    assert_eq!(ns, vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(entries[0]["subject"], sid.as_str());
    assert_eq!(entries[2]["actor"], "user:tab-1");
    assert_eq!(entries[2]["detail"]["decision"], "allow_always");
    assert_eq!(entries[1]["actor"], "agent");
    assert!(entries[4]["actor"].as_str().unwrap().starts_with("rule:"));
    assert_eq!(entries[5]["actor"], "user:api");
    for pair in entries.windows(2) {
        assert_eq!(pair[1]["prev_hash"], pair[0]["hash"]);
    }
    assert_eq!(
        srv.get("/audit/verify").await.1,
        json!({"ok": true, "entries": 6})
    );
    // Filters and paging.
    let resolved = srv.get("/audit?action=gate_resolved").await.1;
    assert_eq!(resolved.as_array().unwrap().len(), 1);
    assert_eq!(
        srv.get("/audit?after=4").await.1.as_array().unwrap().len(),
        2
    );
    let (status, body) = srv.get("/audit?after=x").await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_request"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn altering_one_stored_entry_fails_verify_at_exactly_that_entry() {
    let srv = Srv::start(None).await;
    audited_history(&srv).await;
    sql(
        &srv.db,
        "UPDATE audit SET detail = '{\"decision\":\"deny\"}' WHERE n = 3",
    );
    let verdict = srv.get("/audit/verify").await.1;
    assert_eq!(verdict, json!({"ok": false, "entries": 6, "first_bad": 3}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_altered_actor_or_a_recomputed_hash_is_caught_too() {
    let srv = Srv::start(None).await;
    audited_history(&srv).await;
    sql(
        &srv.db,
        "UPDATE audit SET actor = 'user:someone-else' WHERE n = 5",
    );
    assert_eq!(srv.get("/audit/verify").await.1["first_bad"], 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_an_entry_is_detected() {
    let srv = Srv::start(None).await;
    audited_history(&srv).await;
    sql(&srv.db, "DELETE FROM audit WHERE n = 2");
    let verdict = srv.get("/audit/verify").await.1;
    assert_eq!(verdict["ok"], false);
    assert_eq!(verdict["first_bad"], 3, "{verdict}");
    assert_eq!(verdict["entries"], 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_card_appears_at_the_ceiling_even_in_yolo_and_continue_goes_on() {
    let srv = Srv::start(Some("[budget]\nmax_tool_calls = 3\n")).await;
    let sid = srv.session().await;
    let turn = srv.send(&sid, "loop 5", Some("yolo")).await;
    let card = srv.pending_card(&sid).await;
    assert_eq!(card["kind"], "budget");
    assert_eq!(card["reason"], "budget");
    assert_eq!(card["allowed_decisions"], json!(["approve", "deny"]));
    assert!(
        card["summary"]
            .as_str()
            .unwrap()
            .contains("3 of 3 tool calls")
    );
    let snap = srv.get(&format!("/sessions/{sid}")).await.1;
    let results = snap["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .count();
    assert_eq!(results, 3, "the card stops the turn at the ceiling");
    assert_eq!(
        srv.decide(&sid, &card, json!({"decision": "approve"}))
            .await
            .0,
        200
    );
    let finished = srv.finished(&sid, &turn).await;
    assert_eq!(finished["status"], "completed");
    let snap = srv.get(&format!("/sessions/{sid}")).await.1;
    let results = snap["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .count();
    assert_eq!(results, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_at_the_budget_card_ends_the_turn_stopped() {
    let srv = Srv::start(Some("[budget]\nmax_tool_calls = 2\n")).await;
    let sid = srv.session().await;
    let turn = srv.send(&sid, "loop 4", None).await;
    let card = srv.pending_card(&sid).await;
    assert_eq!(card["kind"], "budget");
    assert_eq!(
        srv.decide(&sid, &card, json!({"decision": "deny"})).await.0,
        200
    );
    assert_eq!(srv.finished(&sid, &turn).await["status"], "stopped");
    let (status, body) = srv
        .decide(&sid, &card, json!({"decision": "allow_always"}))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("already_resolved"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_budget_card_times_out_and_stops_the_turn() {
    let srv = Srv::start(Some(
        "[budget]\nmax_tool_calls = 1\n[approvals]\ntimeout_secs = 1\n",
    ))
    .await;
    let sid = srv.session().await;
    let turn = srv.send(&sid, "loop 3", Some("yolo")).await;
    let finished = srv.finished(&sid, &turn).await;
    assert_eq!(finished["status"], "stopped");
    let snap = srv.get(&format!("/sessions/{sid}")).await.1;
    let resolved = snap["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "approval_resolved")
        .unwrap()
        .clone();
    assert_eq!(resolved["decision"], "timeout");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_three_hand_approvals_the_card_recommends_the_rule() {
    let srv = Srv::start(None).await;
    let sid = srv.session().await;
    for i in 0..4 {
        let turn = srv.send(&sid, &format!("run: echo n{i}"), None).await;
        let card = srv.pending_card(&sid).await;
        assert_eq!(card["suggested_rule"]["pattern"], "echo *");
        assert_eq!(card["suggested_rule"]["approved_before"], i, "{card}");
        assert_eq!(
            srv.decide(&sid, &card, json!({"decision": "approve"}))
                .await
                .0,
            200
        );
        srv.finished(&sid, &turn).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_rule_stops_applying_at_once() {
    let srv = Srv::start(None).await;
    let sid = srv.session().await;
    let turn = srv.send(&sid, "run: echo a", None).await;
    let card = srv.pending_card(&sid).await;
    let body = json!({"decision": "allow_always", "rule": {"expires_in_secs": 1}});
    assert_eq!(srv.decide(&sid, &card, body).await.0, 200);
    srv.finished(&sid, &turn).await;
    let rules = srv.get("/rules").await.1;
    assert!(rules[0]["expires_at"].is_string(), "{rules}");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(srv.get("/rules").await.1, json!([]));
    srv.send(&sid, "run: echo b", None).await;
    let card = srv.pending_card(&sid).await;
    assert_eq!(
        card["tool"], "shell",
        "the expired rule no longer spares the card"
    );
}
