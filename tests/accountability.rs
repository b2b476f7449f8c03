//! Accountability over HTTP: the audit chain records gates, rules and modes and detects an
//! altered or deleted entry at exactly that entry; the budget kill-switch suspends a turn at
//! its ceiling in every mode (continue goes on, stop and timeout end it `stopped`); rules
//! expire and are recommended after three hand approvals.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "support/mod.rs"]
mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// The turn's `turn_finished` event, once stored.
async fn finished(srv: &TestServer, sid: &str, turn: &str) -> Value {
    let snap = srv.wait_turn(sid, turn).await;
    only(&turn_events(&snap, turn), "turn_finished").clone()
}

async fn audit(srv: &TestServer) -> Vec<Value> {
    srv.get("/api/v1/audit")
        .await
        .expect(200)
        .as_array()
        .unwrap()
        .clone()
}

/// Builds a session with a gate approved, a rule created, used and revoked, and a mode change.
async fn audited_history(srv: &TestServer) -> String {
    let sid = srv.session().await;
    let t1 = srv.send_msg(&sid, "run: echo one", Some("auto_edit")).await;
    let card = srv.wait_gate(&sid).await;
    srv.decide(
        &sid,
        &aid(&card),
        json!({"decision": "allow_always", "client_id": "tab-1"}),
    )
    .await
    .expect(200);
    finished(srv, &sid, &t1).await;
    let t2 = srv.send_msg(&sid, "run: echo two", None).await;
    finished(srv, &sid, &t2).await;
    let rules = srv.get("/api/v1/rules").await.expect(200);
    let rule = rules[0]["id"].as_str().unwrap().to_owned();
    srv.delete(&format!("/api/v1/rules/{rule}"))
        .await
        .expect(204);
    sid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_records_who_allowed_what_in_a_verified_chain() {
    let srv = TestServer::start().await;
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
    assert_eq!(
        entries[0]["actor"], "token:admin",
        "the mode change names the credential"
    );
    // The actor is the credential (the startup token), never the body's `client_id`.
    assert_eq!(entries[2]["actor"], "token:admin");
    assert_eq!(entries[2]["detail"]["decision"], "allow_always");
    assert_eq!(entries[1]["actor"], "agent");
    assert!(entries[4]["actor"].as_str().unwrap().starts_with("rule:"));
    assert_eq!(entries[5]["actor"], "token:admin");
    for pair in entries.windows(2) {
        assert_eq!(pair[1]["prev_hash"], pair[0]["hash"]);
    }
    assert_eq!(
        srv.get("/api/v1/audit/verify").await.expect(200),
        json!({"ok": true, "entries": 6})
    );
    // Filters and paging.
    let resolved = srv
        .get("/api/v1/audit?action=gate_resolved")
        .await
        .expect(200);
    assert_eq!(resolved.as_array().unwrap().len(), 1);
    assert_eq!(
        srv.get("/api/v1/audit?after=4")
            .await
            .expect(200)
            .as_array()
            .unwrap()
            .len(),
        2
    );
    srv.get("/api/v1/audit?after=x")
        .await
        .expect_error(400, "invalid_request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn altering_one_stored_entry_fails_verify_at_exactly_that_entry() {
    let srv = TestServer::start().await;
    audited_history(&srv).await;
    sql(
        &srv.db(),
        "UPDATE audit SET detail = '{\"decision\":\"deny\"}' WHERE n = 3",
    );
    let verdict = srv.get("/api/v1/audit/verify").await.expect(200);
    assert_eq!(verdict, json!({"ok": false, "entries": 6, "first_bad": 3}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_altered_actor_or_a_recomputed_hash_is_caught_too() {
    let srv = TestServer::start().await;
    audited_history(&srv).await;
    sql(
        &srv.db(),
        "UPDATE audit SET actor = 'user:someone-else' WHERE n = 5",
    );
    assert_eq!(
        srv.get("/api/v1/audit/verify").await.expect(200)["first_bad"],
        5
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_an_entry_is_detected() {
    let srv = TestServer::start().await;
    audited_history(&srv).await;
    sql(&srv.db(), "DELETE FROM audit WHERE n = 2");
    let verdict = srv.get("/api/v1/audit/verify").await.expect(200);
    assert_eq!(verdict["ok"], false);
    assert_eq!(verdict["first_bad"], 3, "{verdict}");
    assert_eq!(verdict["entries"], 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_card_appears_at_the_ceiling_even_in_yolo_and_continue_goes_on() {
    let srv = TestServer::configured("[budget]\nmax_tool_calls = 3\n").await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "loop 5", Some("yolo")).await;
    let card = srv.wait_gate(&sid).await;
    assert_eq!(card["kind"], "budget");
    assert_eq!(card["reason"], "budget");
    assert_eq!(card["allowed_decisions"], json!(["approve", "deny"]));
    assert!(
        card["summary"]
            .as_str()
            .unwrap()
            .contains("3 of 3 tool calls")
    );
    let snap = srv.snapshot(&sid).await;
    let results = snap["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .count();
    assert_eq!(results, 3, "the card stops the turn at the ceiling");
    srv.decide(&sid, &aid(&card), json!({"decision": "approve"}))
        .await
        .expect(200);
    let finished = finished(&srv, &sid, &turn).await;
    assert_eq!(finished["status"], "completed");
    let snap = srv.snapshot(&sid).await;
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
    let srv = TestServer::configured("[budget]\nmax_tool_calls = 2\n").await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "loop 4", None).await;
    let card = srv.wait_gate(&sid).await;
    assert_eq!(card["kind"], "budget");
    srv.decide(&sid, &aid(&card), json!({"decision": "deny"}))
        .await
        .expect(200);
    assert_eq!(finished(&srv, &sid, &turn).await["status"], "stopped");
    srv.decide(&sid, &aid(&card), json!({"decision": "allow_always"}))
        .await
        .expect_error(409, "already_resolved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_budget_card_times_out_and_stops_the_turn() {
    let srv =
        TestServer::configured("[budget]\nmax_tool_calls = 1\n[approvals]\ntimeout_secs = 1\n")
            .await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "loop 3", Some("yolo")).await;
    let finished = finished(&srv, &sid, &turn).await;
    assert_eq!(finished["status"], "stopped");
    let snap = srv.snapshot(&sid).await;
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
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    for i in 0..4 {
        let turn = srv.send_msg(&sid, &format!("run: echo n{i}"), None).await;
        let card = srv.wait_gate(&sid).await;
        assert_eq!(card["suggested_rule"]["pattern"], "echo *");
        assert_eq!(card["suggested_rule"]["approved_before"], i, "{card}");
        srv.decide(&sid, &aid(&card), json!({"decision": "approve"}))
            .await
            .expect(200);
        finished(&srv, &sid, &turn).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_rule_stops_applying_at_once() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "run: echo a", None).await;
    let card = srv.wait_gate(&sid).await;
    let body = json!({"decision": "allow_always", "rule": {"expires_in_secs": 1}});
    srv.decide(&sid, &aid(&card), body).await.expect(200);
    finished(&srv, &sid, &turn).await;
    let rules = srv.get("/api/v1/rules").await.expect(200);
    let expires_at = parse_time(str_of(&rules[0], "expires_at"));
    let created_at = parse_time(str_of(&rules[0], "created_at"));
    assert!(
        expires_at > created_at && expires_at <= created_at + chrono::TimeDelta::seconds(1),
        "{rules}"
    );
    // Wait for that moment itself (the server shares this clock); then the rule must be gone
    // at once: no grace, no polling.
    loop {
        let left = expires_at.with_timezone(&chrono::Utc) - chrono::Utc::now();
        // Strictly past it: the rule applies until then.
        if left < chrono::TimeDelta::zero() {
            break;
        }
        tokio::time::sleep(left.to_std().unwrap() + Duration::from_millis(1)).await;
    }
    // Listed still (issue 40: the Rules page says why a grant stopped answering), lapsed.
    let rules = srv.get("/api/v1/rules").await.expect(200);
    assert_eq!(rules[0]["lapsed"], "expired", "{rules}");
    srv.send_msg(&sid, "run: echo b", None).await;
    let card = srv.wait_gate(&sid).await;
    assert_eq!(
        card["tool"], "shell",
        "the expired rule no longer spares the card"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_use_grant_answers_two_calls_then_the_third_asks() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "run: echo a", None).await;
    let card = srv.wait_gate(&sid).await;
    let body = json!({"decision": "allow_always", "rule": {"pattern": "echo *", "max_uses": 2}});
    srv.decide(&sid, &aid(&card), body).await.expect(200);
    assert_eq!(finished(&srv, &sid, &turn).await["status"], "completed");
    let rules = srv.get("/api/v1/rules").await.expect(200);
    assert_eq!(rules[0]["max_uses"], 2, "{rules}");
    assert_eq!(
        rules[0]["uses"], 0,
        "the approval that made it is not a use: {rules}"
    );
    assert!(rules[0].get("lapsed").is_none(), "{rules}");
    for word in ["b", "c"] {
        let turn = srv.send_msg(&sid, &format!("run: echo {word}"), None).await;
        assert_eq!(
            finished(&srv, &sid, &turn).await["status"],
            "completed",
            "echo {word} runs unasked"
        );
    }
    let rules = srv.get("/api/v1/rules").await.expect(200);
    assert_eq!(rules[0]["uses"], 2, "{rules}");
    assert_eq!(rules[0]["lapsed"], "used_up", "{rules}");
    assert!(rules[0]["last_used_at"].is_string(), "{rules}");
    srv.send_msg(&sid, "run: echo d", None).await;
    let card = srv.wait_gate(&sid).await;
    assert_eq!(
        card["tool"], "shell",
        "the used-up grant no longer spares the card"
    );
    // A lapsed grant can be revoked: it leaves the list.
    let id = str_of(&rules[0], "id").to_owned();
    srv.delete(&format!("/api/v1/rules/{id}")).await.expect(204);
    assert_eq!(srv.get("/api/v1/rules").await.expect(200), json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_of_no_uses_or_a_lifetime_on_another_answer_is_refused() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    srv.send_msg(&sid, "run: echo a", None).await;
    let card = srv.wait_gate(&sid).await;
    let refused = [
        json!({"decision": "allow_always", "rule": {"max_uses": 0}}),
        json!({"decision": "approve", "rule": {"max_uses": 3}}),
        json!({"decision": "deny", "rule": {"expires_in_secs": 60}}),
    ];
    for body in refused {
        srv.decide(&sid, &aid(&card), body)
            .await
            .expect_error(400, "invalid_decision");
    }
    srv.assert_still_pending(&sid, &aid(&card)).await;
    assert_eq!(srv.get("/api/v1/rules").await.expect(200), json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_past_the_call_ceiling_waits_for_the_budget_card_before_its_extra_calls() {
    let srv = TestServer::configured("[budget]\nmax_tool_calls = 2\n").await;
    let sid = srv.session().await;
    let turn = srv
        .send_msg(&sid, "parallel:\nlist\nlist .\nlist ./", Some("yolo"))
        .await;
    let card = srv.wait_gate(&sid).await;
    assert_eq!(card["kind"], "budget", "{card}");
    assert!(
        card["summary"]
            .as_str()
            .unwrap()
            .contains("2 of 2 tool calls"),
        "{card}"
    );
    let results = |snap: &Value| {
        events(snap)
            .iter()
            .filter(|e| e["type"] == "tool_result")
            .count()
    };
    assert_eq!(results(&srv.snapshot(&sid).await), 2, "charged per call");
    srv.decide(&sid, &aid(&card), json!({"decision": "approve"}))
        .await
        .expect(200);
    assert_eq!(finished(&srv, &sid, &turn).await["status"], "completed");
    assert_eq!(results(&srv.snapshot(&sid).await), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_waiting_for_a_person_does_not_count_against_the_turns_time_budget() {
    let srv = TestServer::configured("[budget]\nmax_turn_secs = 1\n").await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "write a.txt: x\nlist", None).await;
    let gate = srv.wait_gate(&sid).await;
    assert_eq!(gate["kind"], "tool");
    // The person takes longer than the whole turn's time budget to answer.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    srv.decide(&sid, &aid(&gate), json!({"decision": "approve"}))
        .await
        .expect(200);
    assert_eq!(finished(&srv, &sid, &turn).await["status"], "completed");
    let budget_cards: Vec<Value> = srv
        .events(&sid)
        .await
        .into_iter()
        .filter(|e| e["type"] == "approval_request" && e["kind"] == "budget")
        .collect();
    assert!(budget_cards.is_empty(), "{budget_cards:?}");
}
