//! Integration tests for the approval gates (docs/protocol.md "Decisions", "Timeouts",
//! "Rules"; docs/product.md modes table and safety floor), driven over HTTP against a real
//! server started in-process on loopback with the offline demo agent.
//!
//! Build and run with `cargo test --features ssr --test gates`.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "support/mod.rs"]
mod support;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::*;

const APPROVE_ALL: [&str; 4] = ["approve", "edit", "deny", "allow_always"];

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// JSON with object keys sorted at every level (serde_json's map is ordered by key already
/// unless `preserve_order` is on, so sort explicitly to be safe).
fn canonical_json(value: &Value) -> String {
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

fn is_hex_sha256(s: &str) -> bool {
    s.len() == 64
        && s.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
}

// ---------------------------------------------------------------------------------------------
// 1. approve
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_runs_the_shown_call_after_a_complete_card() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let before = chrono::Utc::now();
    let turn = srv
        .send_msg(&sid, "write notes.md: hello", Some("ask"))
        .await;
    let card = srv.wait_gate(&sid).await;

    // The card.
    let aid = aid(&card);
    assert_eq!(uuid::Uuid::parse_str(&aid).unwrap().get_version_num(), 4);
    assert_eq!(card["session_id"], sid.as_str());
    assert_eq!(card["turn_id"], turn.as_str());
    assert_eq!(card["kind"], "tool");
    assert_eq!(card["tool"], "write_file");
    assert_eq!(card["class"], "edit");
    assert_eq!(
        card["args"],
        json!({"path": "notes.md", "content": "hello"})
    );
    assert_eq!(card["reason"], "mode");
    assert_eq!(
        sorted_strs(&card["allowed_decisions"]),
        sorted(&APPROVE_ALL)
    );
    assert_eq!(card["timeout_outcome"], "deny");
    assert!(
        card.get("decision_kind").is_none_or(Value::is_null),
        "{card}"
    );
    for key in ["title", "summary"] {
        let s = str_of(&card, key);
        assert!(!s.trim().is_empty() && !s.contains('\n'), "{key}: {s:?}");
    }
    assert!(
        card["proposal_md"].is_string() && card["proposal_html"].is_string(),
        "{card}"
    );
    let diff = str_of(&card, "diff");
    assert!(diff.contains("+hello"), "diff: {diff}");
    assert!(diff.contains("notes.md"), "diff: {diff}");
    let digest = str_of(&card, "digest");
    assert!(is_hex_sha256(digest), "digest {digest:?}");
    assert_eq!(
        digest,
        sha256_hex(&canonical_json(&json!({
            "tool": "write_file",
            "args": {"path": "notes.md", "content": "hello"},
            "bound": "real:notes.md absent",
        }))),
        "digest = sha256 of canonical {{tool,args,bound}}: where the path leads, and that the file it diffs did not exist"
    );
    let created = parse_time(str_of(&card, "created_at"));
    let expires = parse_time(str_of(&card, "expires_at"));
    assert_eq!(created.offset().local_minus_utc(), 0);
    let lag = (created.with_timezone(&chrono::Utc) - before).num_seconds();
    assert!(
        (-5..=60).contains(&lag),
        "created_at {created} vs start {before}"
    );
    let window = (expires - created).num_milliseconds();
    assert!(
        (1_799_000..=1_801_000).contains(&window),
        "expires-created = {window} ms"
    );

    // The approval_request event carries the same card.
    let snap = srv.snapshot(&sid).await;
    let evs = turn_events(&snap, &turn);
    let req = only(&evs, "approval_request");
    for key in [
        "approval_id",
        "digest",
        "call_id",
        "expires_at",
        "tool",
        "kind",
        "reason",
    ] {
        assert_eq!(req[key], card[key], "{key}");
    }
    assert_eq!(snap["session"]["running_turn_id"], turn.as_str());

    // Nothing has run yet.
    assert!(!srv.ws("notes.md").exists(), "written before approval");
    assert!(of_type(&evs, "tool_started").is_empty());
    assert!(of_type(&evs, "tool_result").is_empty());

    let resp = srv
        .decide(&sid, &aid, json!({"decision": "approve", "digest": digest}))
        .await
        .expect(200);
    assert_eq!(resp["approval_id"], aid.as_str());
    assert_eq!(resp["decision"], "approve");
    let resolved_at = str_of(&resp, "resolved_at").to_owned();
    parse_time(&resolved_at);

    let snap = srv.wait_turn(&sid, &turn).await;
    assert_eq!(
        std::fs::read_to_string(srv.ws("notes.md")).unwrap(),
        "hello"
    );
    let evs = turn_events(&snap, &turn);
    assert_eq!(
        types(&evs),
        [
            "user_message",
            "tool_call",
            "approval_request",
            "approval_resolved",
            "tool_started",
            "tool_result",
            "assistant_message",
            "turn_finished"
        ]
    );
    let call_id = card["call_id"].clone();
    let call = &evs[1];
    assert_eq!(call["verdict"], "ask");
    assert_eq!(call["tool"], "write_file");
    assert_eq!(call["class"], "edit");
    assert_eq!(call["call_id"], call_id);
    assert!(call.get("rule_id").is_none_or(Value::is_null), "{call}");
    let res = &evs[3];
    assert_eq!(res["approval_id"], aid.as_str());
    assert_eq!(res["decision"], "approve");
    assert_eq!(res["answered_by"], "user");
    assert_eq!(res["resolved_at"], resolved_at.as_str());
    assert_eq!(evs[4]["call_id"], call_id);
    assert_eq!(evs[5]["call_id"], call_id);
    assert_eq!(evs[5]["status"], "ok");
    assert_eq!(evs[5]["tool"], "write_file");
    assert_eq!(evs[7]["status"], "completed");

    // The log is gap-free and the cursor is its last seq.
    let all = events(&snap);
    for (i, e) in all.iter().enumerate() {
        assert_eq!(e["seq"], json!(i as u64 + 1), "seq of {e}");
    }
    assert_eq!(snap["cursor"], json!(all.len() as u64));
    assert_eq!(snap["pending"], json!([]));
    assert_eq!(snap["session"]["pending_approvals"], 0);
    assert!(srv.inbox().await.is_empty());
}

/// `approve` runs exactly what the card showed, even if the body also carries `edits`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_ignores_edits_and_runs_the_original_arguments() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "write notes.md: original", None).await;
    let card = srv.wait_gate(&sid).await;
    srv.decide(
        &sid,
        &aid(&card),
        json!({"decision": "approve", "edits": {"path": "other.md", "content": "sneaky"}}),
    )
    .await
    .expect(200);
    let snap = srv.wait_turn(&sid, &turn).await;
    assert_eq!(
        std::fs::read_to_string(srv.ws("notes.md")).unwrap(),
        "original"
    );
    assert!(!srv.ws("other.md").exists());
    let evs = turn_events(&snap, &turn);
    assert_eq!(only(&evs, "tool_result")["status"], "ok");
}

// ---------------------------------------------------------------------------------------------
// 2. deny with reason
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_with_reason_runs_nothing_and_the_agent_reads_the_reason() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "run: touch ran.txt", Some("ask")).await;
    let card = srv.wait_gate(&sid).await;
    assert_eq!(card["tool"], "shell");
    assert_eq!(card["class"], "exec");
    assert_eq!(card["args"], json!({"command": "touch ran.txt"}));
    assert!(card.get("diff").is_none_or(Value::is_null), "{card}");
    let aid = aid(&card);

    let resp = srv
        .decide(
            &sid,
            &aid,
            json!({"decision": "deny", "reason": "use b.txt instead"}),
        )
        .await
        .expect(200);
    assert_eq!(resp["decision"], "deny");
    let snap = srv.wait_turn(&sid, &turn).await;
    let evs = turn_events(&snap, &turn);
    assert_eq!(
        types(&evs),
        [
            "user_message",
            "tool_call",
            "approval_request",
            "approval_resolved",
            "tool_result",
            "assistant_message",
            "turn_finished"
        ],
        "no tool_started after a deny"
    );
    let res = only(&evs, "approval_resolved");
    assert_eq!(res["decision"], "deny");
    assert_eq!(res["answered_by"], "user");
    assert_eq!(res["reason"], "use b.txt instead");
    let result = only(&evs, "tool_result");
    assert_eq!(result["status"], "denied");
    assert_eq!(result["call_id"], card["call_id"]);
    assert!(
        str_of(result, "output").contains("use b.txt instead"),
        "{result}"
    );
    let answer = only(&evs, "assistant_message");
    assert!(
        str_of(answer, "text").contains("use b.txt instead"),
        "{answer}"
    );
    assert_eq!(only(&evs, "turn_finished")["status"], "completed");
    assert!(!srv.ws("ran.txt").exists(), "a denied command ran");
}

// ---------------------------------------------------------------------------------------------
// 3. edit
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_runs_the_replacement_arguments_and_records_both() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv
        .send_msg(&sid, "write notes.md: hello", Some("ask"))
        .await;
    let card = srv.wait_gate(&sid).await;
    let edits = json!({"path": "notes.md", "content": "edited"});
    let resp = srv
        .decide(
            &sid,
            &aid(&card),
            json!({"decision": "edit", "edits": edits}),
        )
        .await
        .expect(200);
    assert_eq!(resp["decision"], "edit");
    let snap = srv.wait_turn(&sid, &turn).await;
    assert_eq!(
        std::fs::read_to_string(srv.ws("notes.md")).unwrap(),
        "edited"
    );
    let evs = turn_events(&snap, &turn);
    // Both versions: the call as the agent made it, the resolution with the edits.
    assert_eq!(
        only(&evs, "tool_call")["args"],
        json!({"path": "notes.md", "content": "hello"})
    );
    let res = only(&evs, "approval_resolved");
    assert_eq!(res["decision"], "edit");
    assert_eq!(res["answered_by"], "user");
    assert_eq!(res["edits"], edits);
    assert_eq!(only(&evs, "tool_result")["status"], "ok");
    assert_eq!(only(&evs, "turn_finished")["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_of_a_shell_call_runs_the_edited_command() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "run: touch original.txt", None).await;
    let card = srv.wait_gate(&sid).await;
    srv.decide(
        &sid,
        &aid(&card),
        json!({"decision": "edit", "edits": {"command": "touch edited.txt"}}),
    )
    .await
    .expect(200);
    let snap = srv.wait_turn(&sid, &turn).await;
    assert!(srv.ws("edited.txt").exists());
    assert!(!srv.ws("original.txt").exists());
    assert_eq!(
        only(&turn_events(&snap, &turn), "tool_result")["status"],
        "ok"
    );
    // The agent is told what ran: its closing words name the edited command (issue 39.6).
    let said = only(&turn_events(&snap, &turn), "assistant_message")["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(said.contains("touch edited.txt"), "{said}");
    assert!(!said.contains("original.txt"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blank_or_invalid_edits_are_refused_and_the_gate_stays_pending() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv
        .send_msg(&sid, "write notes.md: hello", Some("ask"))
        .await;
    let card = srv.wait_gate(&sid).await;
    let aid = aid(&card);

    let blanks = [
        json!({"decision": "edit"}),
        json!({"decision": "edit", "edits": null}),
        json!({"decision": "edit", "edits": ""}),
        json!({"decision": "edit", "edits": "   "}),
        json!({"decision": "edit", "edits": {}}),
    ];
    for body in blanks {
        srv.decide(&sid, &aid, body.clone())
            .await
            .expect_error(400, "edits_required");
        srv.assert_still_pending(&sid, &aid).await;
    }

    let invalid = [
        // escapes the workspace
        json!({"path": "../x", "content": "a"}),
        json!({"path": "/etc/passwd", "content": "a"}),
        // unknown field
        json!({"path": "notes.md", "content": "a", "mode": "0777"}),
        // missing field
        json!({"path": "notes.md"}),
        // wrong type
        json!({"path": "notes.md", "content": 5}),
        // not an object
        json!("notes.md"),
        json!([1]),
    ];
    for edits in invalid {
        srv.decide(&sid, &aid, json!({"decision": "edit", "edits": edits}))
            .await
            .expect_error(400, "invalid_edits");
        srv.assert_still_pending(&sid, &aid).await;
    }
    assert!(!srv.ws("notes.md").exists());
    assert!(!srv.root().join("x").exists());

    // The gate still works.
    srv.decide(&sid, &aid, json!({"decision": "approve"}))
        .await
        .expect(200);
    let snap = srv.wait_turn(&sid, &turn).await;
    assert_eq!(
        std::fs::read_to_string(srv.ws("notes.md")).unwrap(),
        "hello"
    );
    assert_eq!(of_type(&events(&snap), "approval_resolved").len(), 1);
}

// ---------------------------------------------------------------------------------------------
// 4. allow_always and standing rules
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_always_creates_a_session_rule_that_skips_the_next_card_until_revoked() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "run: echo one", Some("ask")).await;
    let card = srv.wait_gate(&sid).await;
    let aid = aid(&card);
    let resp = srv
        .decide(&sid, &aid, json!({"decision": "allow_always"}))
        .await
        .expect(200);
    assert_eq!(resp["decision"], "allow_always");
    let rule_id = str_of(&resp, "rule_id").to_owned();
    let snap = srv.wait_turn(&sid, &turn).await;
    let evs = turn_events(&snap, &turn);
    let res = only(&evs, "approval_resolved");
    assert_eq!(res["decision"], "allow_always");
    assert_eq!(res["answered_by"], "user");
    assert_eq!(res["rule_id"], rule_id.as_str());
    let result = only(&evs, "tool_result");
    assert_eq!(result["status"], "ok");
    assert!(str_of(result, "output").contains("one"), "{result}");

    let rules = srv.rules().await;
    assert_eq!(rules.len(), 1, "{rules:#?}");
    let rule = &rules[0];
    assert_eq!(rule["id"], rule_id.as_str());
    assert_eq!(rule["tool"], "shell");
    assert_eq!(rule["pattern"], "echo *");
    assert_eq!(rule["scope"], "session");
    assert_eq!(rule["session_id"], sid.as_str());
    assert_eq!(rule["created_by_approval"], aid.as_str());
    assert_eq!(rule["uses"], 0);
    parse_time(str_of(rule, "created_at"));

    // The next matching call runs without a card, naming the rule.
    let (_, evs) = srv.run_turn(&sid, "run: echo two", Some("ask")).await;
    assert_eq!(
        types(&evs),
        [
            "user_message",
            "tool_call",
            "tool_started",
            "tool_result",
            "assistant_message",
            "turn_finished"
        ]
    );
    let call = only(&evs, "tool_call");
    assert_eq!(call["verdict"], "run");
    assert_eq!(call["rule_id"], rule_id.as_str());
    assert!(str_of(only(&evs, "tool_result"), "output").contains("two"));
    let rules = srv.rules().await;
    assert_eq!(rules[0]["uses"], 1, "{rules:#?}");

    // A floor hit is never covered by a rule.
    let turn = srv.send_msg(&sid, "run: echo x > .env", Some("ask")).await;
    let floor = srv.wait_gate(&sid).await;
    assert_eq!(floor["reason"], "safety_floor");
    srv.decide(&sid, &aid_of(&floor), json!({"decision": "deny"}))
        .await
        .expect(200);
    srv.wait_turn(&sid, &turn).await;
    assert!(!srv.ws(".env").exists());
    assert_eq!(srv.rules().await[0]["uses"], 1);

    // The rule is scoped to its session.
    let other = srv.session().await;
    let turn = srv
        .send_msg(&other, "run: echo elsewhere", Some("ask"))
        .await;
    let gate = srv.wait_gate(&other).await;
    assert_eq!(gate["reason"], "mode");
    srv.decide(&other, &aid_of(&gate), json!({"decision": "deny"}))
        .await
        .expect(200);
    srv.wait_turn(&other, &turn).await;

    // Revoked: asks again.
    let del = srv.delete(&format!("/api/v1/rules/{rule_id}")).await;
    del.expect(204);
    assert!(del.body.is_empty());
    assert!(srv.rules().await.is_empty());
    let turn = srv.send_msg(&sid, "run: echo three", Some("ask")).await;
    let again = srv.wait_gate(&sid).await;
    assert_eq!(again["args"], json!({"command": "echo three"}));
    let snap = srv.snapshot(&sid).await;
    let call = only(&turn_events(&snap, &turn), "tool_call").clone();
    assert_eq!(call["verdict"], "ask");
    srv.decide(&sid, &aid_of(&again), json!({"decision": "deny"}))
        .await
        .expect(200);
    srv.wait_turn(&sid, &turn).await;

    // Unknown rule: 404, and revoking twice is unknown too.
    srv.delete(&format!("/api/v1/rules/{}", uuid::Uuid::new_v4()))
        .await
        .expect_error(404, "unknown_rule");
    srv.delete(&format!("/api/v1/rules/{rule_id}"))
        .await
        .expect_error(404, "unknown_rule");
}

fn aid_of(gate: &Value) -> String {
    aid(gate)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_always_with_workspace_scope_and_pattern_covers_other_sessions() {
    let srv = TestServer::start().await;
    let s1 = srv.session().await;
    let turn = srv.send_msg(&s1, "run: echo alpha", Some("ask")).await;
    let card = srv.wait_gate(&s1).await;
    let aid = aid(&card);

    // A bad scope or an everything-pattern is refused and changes nothing.
    srv.decide(
        &s1,
        &aid,
        json!({"decision": "allow_always", "rule": {"scope": "global"}}),
    )
    .await
    .expect_error(400, "invalid_decision");
    srv.decide(
        &s1,
        &aid,
        json!({"decision": "allow_always", "rule": {"scope": "workspace", "pattern": "*"}}),
    )
    .await
    .expect_error(400, "invalid_decision");
    srv.assert_still_pending(&s1, &aid).await;
    assert!(srv.rules().await.is_empty());

    let resp = srv
        .decide(
            &s1,
            &aid,
            json!({"decision": "allow_always", "rule": {"scope": "workspace", "pattern": "echo a*"}}),
        )
        .await
        .expect(200);
    let rule_id = str_of(&resp, "rule_id").to_owned();
    srv.wait_turn(&s1, &turn).await;
    let rules = srv.rules().await;
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["scope"], "workspace");
    assert_eq!(rules[0]["pattern"], "echo a*");
    assert!(
        rules[0].get("session_id").is_none_or(Value::is_null),
        "{}",
        rules[0]
    );

    let s2 = srv.session().await;
    let (_, evs) = srv.run_turn(&s2, "run: echo again", Some("ask")).await;
    let call = only(&evs, "tool_call");
    assert_eq!(call["verdict"], "run");
    assert_eq!(call["rule_id"], rule_id.as_str());
    assert!(of_type(&evs, "approval_request").is_empty());

    // Outside the pattern it still asks.
    let turn = srv.send_msg(&s2, "run: echo zulu", Some("ask")).await;
    let gate = srv.wait_gate(&s2).await;
    srv.decide(&s2, &aid_of(&gate), json!({"decision": "deny"}))
        .await
        .expect(200);
    srv.wait_turn(&s2, &turn).await;
    assert_eq!(srv.rules().await[0]["uses"], 1);
}

// ---------------------------------------------------------------------------------------------
// 5. timeouts
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_fail_tool_gates_closed_and_let_checkpoints_proceed_unapproved() {
    let srv = TestServer::configured("[approvals]\ntimeout_secs = 2\n").await;
    let tool_sid = srv.session().await;
    let dec_sid = srv.session().await;
    let tool_turn = srv
        .send_msg(&tool_sid, "write late.txt: x", Some("ask"))
        .await;
    let dec_turn = srv
        .send_msg(
            &dec_sid,
            "ask prep_plan: Drop nulls | drop rows",
            Some("ask"),
        )
        .await;

    // From the log, not the pending list: under load a 2 s gate may already be gone.
    let tool_card = srv.wait_request_event(&tool_sid).await;
    let dec_card = srv.wait_request_event(&dec_sid).await;
    for card in [&tool_card, &dec_card] {
        let window = (parse_time(str_of(card, "expires_at"))
            - parse_time(str_of(card, "created_at")))
        .num_milliseconds();
        assert!((1_900..=2_100).contains(&window), "window {window} ms");
    }
    assert_eq!(tool_card["timeout_outcome"], "deny");
    assert_eq!(dec_card["timeout_outcome"], "proceed_unapproved");

    // The tool gate: resolves timeout, the tool does not run.
    let snap = srv.wait_turn(&tool_sid, &tool_turn).await;
    let evs = turn_events(&snap, &tool_turn);
    let res = only(&evs, "approval_resolved");
    assert_eq!(res["approval_id"], tool_card["approval_id"]);
    assert_eq!(res["decision"], "timeout");
    assert_eq!(res["answered_by"], "timeout");
    assert!(
        parse_time(str_of(res, "resolved_at")) >= parse_time(str_of(&tool_card, "expires_at")),
        "resolved before expiry: {res}"
    );
    assert!(of_type(&evs, "tool_started").is_empty());
    assert_eq!(only(&evs, "tool_result")["status"], "timeout");
    assert_eq!(only(&evs, "turn_finished")["status"], "completed");
    assert!(!srv.ws("late.txt").exists(), "a timed-out tool ran");

    // The checkpoint: resolves timeout, the agent proceeds flagged UNAPPROVED.
    let snap = srv.wait_turn(&dec_sid, &dec_turn).await;
    let evs = turn_events(&snap, &dec_turn);
    let res = only(&evs, "approval_resolved");
    assert_eq!(res["decision"], "timeout");
    assert_eq!(res["answered_by"], "timeout");
    let result = only(&evs, "tool_result");
    assert_eq!(result["status"], "timeout");
    let out = str_of(result, "output");
    assert!(
        out.contains("proceed") && out.contains("UNAPPROVED"),
        "{out}"
    );
    assert!(
        str_of(only(&evs, "assistant_message"), "text").contains("UNAPPROVED"),
        "the answer must carry the flag"
    );
    assert_eq!(only(&evs, "turn_finished")["status"], "completed");

    // A decision after expiry: 410 gone, saying it expired.
    for (sid, card) in [(&tool_sid, &tool_card), (&dec_sid, &dec_card)] {
        let v = srv
            .decide(sid, &aid(card), json!({"decision": "approve"}))
            .await
            .expect_error(410, "gone");
        assert_eq!(v["resolution"]["decision"], "timeout", "{v}");
        assert_eq!(v["resolution"]["answered_by"], "timeout", "{v}");
        parse_time(str_of(&v["resolution"], "resolved_at"));
    }
    assert!(srv.inbox().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decision_timeout_deny_makes_a_timed_out_checkpoint_not_approved() {
    let srv =
        TestServer::configured("[approvals]\ntimeout_secs = 2\ndecision_timeout = \"deny\"\n")
            .await;
    let sid = srv.session().await;
    let turn = srv
        .send_msg(&sid, "ask prep_plan: Drop nulls | drop rows", Some("ask"))
        .await;
    let card = srv.wait_request_event(&sid).await;
    assert_eq!(card["timeout_outcome"], "deny");
    let snap = srv.wait_turn(&sid, &turn).await;
    let evs = turn_events(&snap, &turn);
    assert_eq!(only(&evs, "approval_resolved")["decision"], "timeout");
    let result = only(&evs, "tool_result");
    assert_eq!(result["status"], "timeout");
    let out = str_of(result, "output");
    assert!(out.contains("not approved"), "{out}");
    assert!(!out.contains("UNAPPROVED"), "{out}");
    assert_eq!(only(&evs, "turn_finished")["status"], "completed");
    srv.decide(&sid, &aid(&card), json!({"decision": "deny"}))
        .await
        .expect_error(410, "gone");
}

// ---------------------------------------------------------------------------------------------
// 6. cancel
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_resolves_pending_gates_cancelled_and_later_decisions_are_gone() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv
        .send_msg(
            &sid,
            "parallel:\nwrite c1.txt: x\nrun: touch c2.txt",
            Some("ask"),
        )
        .await;
    let cards = srv.wait_pending(&sid, 2).await;
    let resp = srv
        .post(&format!("/api/v1/sessions/{sid}/cancel"), json!({}))
        .await
        .expect(200);
    assert_eq!(resp["turn_id"], turn.as_str());

    let snap = srv.wait_turn(&sid, &turn).await;
    let evs = turn_events(&snap, &turn);
    let resolved = of_type(&evs, "approval_resolved");
    assert_eq!(resolved.len(), 2, "{evs:#?}");
    for res in &resolved {
        assert_eq!(res["decision"], "cancelled");
        assert_eq!(res["answered_by"], "system");
    }
    let results = of_type(&evs, "tool_result");
    assert_eq!(results.len(), 2);
    assert!(
        results.iter().all(|r| r["status"] == "cancelled"),
        "{results:#?}"
    );
    assert!(of_type(&evs, "tool_started").is_empty());
    assert_eq!(only(&evs, "turn_finished")["status"], "cancelled");
    assert_eq!(types(&evs).last().unwrap(), "turn_finished");
    assert!(!srv.ws("c1.txt").exists() && !srv.ws("c2.txt").exists());
    assert_eq!(snap["pending"], json!([]));

    for card in &cards {
        for decision in ["approve", "deny"] {
            let v = srv
                .decide(&sid, &aid(card), json!({"decision": decision}))
                .await
                .expect_error(410, "gone");
            assert_eq!(v["resolution"]["decision"], "cancelled", "{v}");
            assert_eq!(v["resolution"]["answered_by"], "system", "{v}");
        }
    }
    // Nothing ran, nothing else was logged.
    let after = srv.snapshot(&sid).await;
    assert_eq!(events(&after).len(), events(&snap).len());
    assert!(!srv.ws("c1.txt").exists() && !srv.ws("c2.txt").exists());
}

/// Once `POST …/cancel` has answered 200 the turn is cancelled: a decision sent after that
/// answer must be 410 gone, and the tool must not run. The cancel answer only signals the
/// turn's token and the turn task commits the `cancelled` resolution later, so `decide` looks
/// at the token too: a decision that finds its turn cancelling resolves the gate `cancelled`
/// itself. Background reads keep the server busy, so that the turn task is often late.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_sent_after_cancel_answered_is_gone() {
    let srv = TestServer::start().await;
    let mut gates = Vec::new();
    for i in 0..20 {
        let sid = srv.session().await;
        let file = format!("race{i}.txt");
        let turn = srv
            .send_msg(&sid, &format!("write {file}: x"), Some("ask"))
            .await;
        let card = srv.wait_gate(&sid).await;
        gates.push((sid, turn, aid(&card), file));
    }
    let srv = &srv;
    let chains = gates.iter().map(|(sid, _, aid, _)| async move {
        srv.post(&format!("/api/v1/sessions/{sid}/cancel"), json!({}))
            .await
            .expect(200);
        srv.decide(sid, aid, json!({"decision": "approve"})).await
    });
    // Background reads keep the server's workers busy, as a loaded machine would.
    let noise = (0..200).map(|i| {
        let sid = gates[i % gates.len()].0.clone();
        async move {
            srv.snapshot(&sid).await;
        }
    });
    let (answers, _) = futures::future::join(
        futures::future::join_all(chains),
        futures::future::join_all(noise),
    )
    .await;
    let mut problems = Vec::new();
    for ((sid, turn, _, file), r) in gates.iter().zip(&answers) {
        problems.extend(cancel_race_problem(srv, sid, turn, file, r).await);
    }
    // And one at a time: cancel, wait for its 200, then decide.
    for i in 0..10 {
        let sid = srv.session().await;
        let file = format!("seq{i}.txt");
        let turn = srv
            .send_msg(&sid, &format!("write {file}: x"), Some("ask"))
            .await;
        let card = srv.wait_gate(&sid).await;
        srv.post(&format!("/api/v1/sessions/{sid}/cancel"), json!({}))
            .await
            .expect(200);
        let r = srv
            .decide(&sid, &aid(&card), json!({"decision": "approve"}))
            .await;
        problems.extend(cancel_race_problem(srv, &sid, &turn, &file, &r).await);
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// What went wrong, if anything, for a decision sent after its turn's cancel answered 200.
async fn cancel_race_problem(
    srv: &TestServer,
    sid: &str,
    turn: &str,
    file: &str,
    r: &Resp,
) -> Option<String> {
    let snap = srv.wait_turn(sid, turn).await;
    let evs = turn_events(&snap, turn);
    let decision = only(&evs, "approval_resolved")["decision"].clone();
    let ran = srv.ws(file).exists();
    (r.status.as_u16() != 410 || decision != "cancelled" || ran).then(|| {
        format!(
            "{file}: the decision after cancel answered {} {}; resolution {decision}; \
             tool ran: {ran}; turn {}; events {:?}",
            r.status,
            r.body,
            only(&evs, "turn_finished")["status"],
            types(&evs)
        )
    })
}

// ---------------------------------------------------------------------------------------------
// 7. unknown ids
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_approvals_and_sessions_are_404() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let other = srv.session().await;
    let turn = srv
        .send_msg(&sid, "write notes.md: hello", Some("ask"))
        .await;
    let card = srv.wait_gate(&sid).await;
    let aid = aid(&card);
    let approve = json!({"decision": "approve"});

    let random = uuid::Uuid::new_v4().to_string();
    for bogus in [random.as_str(), "garbage", "not-a-uuid-%20x"] {
        srv.decide(&sid, bogus, approve.clone())
            .await
            .expect_error(404, "unknown_approval");
    }
    // A real approval id under another session's path.
    srv.decide(&other, &aid, approve.clone())
        .await
        .expect_error(404, "unknown_approval");
    // An unknown session, with a real approval id or not.
    let ghost = uuid::Uuid::new_v4().to_string();
    srv.decide(&ghost, &aid, approve.clone())
        .await
        .expect_error(404, "unknown_session");
    srv.decide("garbage", &aid, approve.clone())
        .await
        .expect_error(404, "unknown_session");
    srv.assert_still_pending(&sid, &aid).await;
    assert!(!srv.ws("notes.md").exists());

    srv.decide(&sid, &aid, approve).await.expect(200);
    srv.wait_turn(&sid, &turn).await;
    assert!(srv.ws("notes.md").exists());
}

// ---------------------------------------------------------------------------------------------
// 8. exactly once
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_decision_is_409_with_the_standing_resolution() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv
        .send_msg(&sid, "write notes.md: hello", Some("ask"))
        .await;
    let card = srv.wait_gate(&sid).await;
    let aid = aid(&card);
    let first = srv
        .decide(&sid, &aid, json!({"decision": "approve"}))
        .await
        .expect(200);
    for body in [
        json!({"decision": "approve"}),
        json!({"decision": "deny", "reason": "changed my mind"}),
        json!({"decision": "edit", "edits": {"path": "notes.md", "content": "late"}}),
        json!({"decision": "allow_always"}),
    ] {
        let v = srv
            .decide(&sid, &aid, body)
            .await
            .expect_error(409, "already_resolved");
        let r = &v["resolution"];
        assert_eq!(r["decision"], "approve", "{v}");
        assert_eq!(r["answered_by"], "user", "{v}");
        assert_eq!(r["resolved_at"], first["resolved_at"], "{v}");
    }
    let snap = srv.wait_turn(&sid, &turn).await;
    assert_eq!(
        std::fs::read_to_string(srv.ws("notes.md")).unwrap(),
        "hello"
    );
    assert_eq!(of_type(&events(&snap), "approval_resolved").len(), 1);
    assert!(
        srv.rules().await.is_empty(),
        "a losing allow_always made a rule"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_decisions_exactly_one_wins_and_every_client_sees_it() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "write race.txt: x", Some("ask")).await;
    let card = srv.wait_gate(&sid).await;
    let aid = aid(&card);
    let cursor = srv.snapshot(&sid).await["cursor"].as_u64().unwrap();
    let mut feed_a = srv.sse(&sid, Some(cursor), None).await;
    let mut feed_b = srv.sse(&sid, Some(cursor), None).await;

    let path = format!("/api/v1/sessions/{sid}/approvals/{aid}");
    let requests = (0..20).map(|i| {
        let decision = if i % 2 == 0 { "approve" } else { "deny" };
        let rb = srv
            .req(reqwest::Method::POST, &path)
            .json(&json!({"decision": decision}));
        async move { (decision, send(rb).await) }
    });
    let answers = futures::future::join_all(requests).await;
    let winners: Vec<_> = answers.iter().filter(|(_, r)| r.status == 200).collect();
    assert_eq!(
        winners.len(),
        1,
        "exactly one 200: {:?}",
        answers.iter().map(|(_, r)| r.status).collect::<Vec<_>>()
    );
    let (won, won_resp) = winners[0];
    let won_body = won_resp.json();
    assert_eq!(won_body["decision"], *won);
    for (_, r) in answers.iter().filter(|(_, r)| r.status != 200) {
        let v = r.expect_error(409, "already_resolved");
        assert_eq!(v["resolution"]["decision"], *won, "{v}");
        assert_eq!(
            v["resolution"]["resolved_at"], won_body["resolved_at"],
            "{v}"
        );
    }

    let snap = srv.wait_turn(&sid, &turn).await;
    let resolved = of_type(&events(&snap), "approval_resolved")
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(resolved.len(), 1, "{resolved:#?}");
    assert_eq!(resolved[0]["decision"], *won);
    let evs = turn_events(&snap, &turn);
    if *won == "approve" {
        assert!(srv.ws("race.txt").exists());
        assert_eq!(of_type(&evs, "tool_started").len(), 1);
    } else {
        assert!(!srv.ws("race.txt").exists());
        assert!(of_type(&evs, "tool_started").is_empty());
    }
    assert_eq!(of_type(&evs, "tool_result").len(), 1);

    // Both SSE clients see the same single resolution, then the end of the turn.
    for feed in [&mut feed_a, &mut feed_b] {
        let seen = feed.until(SOON, |f| f.is("turn_finished")).await;
        let res: Vec<_> = seen.iter().filter(|f| f.is("approval_resolved")).collect();
        assert_eq!(res.len(), 1, "{seen:#?}");
        assert_eq!(res[0].json(), resolved[0]);
        assert_eq!(res[0].id, Some(resolved[0]["seq"].to_string()));
    }
}

// ---------------------------------------------------------------------------------------------
// 9. invalid decisions, floor, stale digest
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_decision_values_are_400_and_change_nothing() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv
        .send_msg(&sid, "write notes.md: hello", Some("ask"))
        .await;
    let card = srv.wait_gate(&sid).await;
    let aid = aid(&card);
    for body in [
        json!({"decision": "maybe"}),
        json!({"decision": "APPROVE"}),
        json!({"decision": ""}),
        // the server's own outcomes are not answers a person may send
        json!({"decision": "timeout"}),
        json!({"decision": "cancelled"}),
        json!({}),
    ] {
        srv.decide(&sid, &aid, body.clone())
            .await
            .expect_error(400, "invalid_decision");
        srv.assert_still_pending(&sid, &aid).await;
    }
    assert!(!srv.ws("notes.md").exists());
    srv.decide(&sid, &aid, json!({"decision": "deny"}))
        .await
        .expect(200);
    srv.wait_turn(&sid, &turn).await;
    assert!(!srv.ws("notes.md").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_always_is_not_offered_on_a_floor_gate() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "write .env: x", Some("ask")).await;
    let card = srv.wait_gate(&sid).await;
    assert_eq!(card["reason"], "safety_floor");
    assert_eq!(
        sorted_strs(&card["allowed_decisions"]),
        sorted(&["approve", "edit", "deny"])
    );
    let aid = aid(&card);
    srv.decide(&sid, &aid, json!({"decision": "allow_always"}))
        .await
        .expect_error(403, "not_allowed");
    srv.decide(
        &sid,
        &aid,
        json!({"decision": "allow_always", "rule": {"scope": "workspace", "pattern": ".env"}}),
    )
    .await
    .expect_error(403, "not_allowed");
    srv.assert_still_pending(&sid, &aid).await;
    assert!(srv.rules().await.is_empty());
    assert!(!srv.ws(".env").exists());
    srv.decide(&sid, &aid, json!({"decision": "approve"}))
        .await
        .expect(200);
    srv.wait_turn(&sid, &turn).await;
    assert_eq!(std::fs::read_to_string(srv.ws(".env")).unwrap(), "x");
}

/// A floor card opens with one plain sentence, and what a floor file holds now never reaches
/// the card, the log or the inbox (issue 39.1): only the agent's own new content is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_floor_write_says_one_sentence_and_never_carries_what_the_file_holds() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let existing = "sk-existing-0123456789abcdefXYZ";
    std::fs::write(
        srv.ws(".env"),
        format!("OPENAI_API_KEY={existing}\nDEBUG=true\n"),
    )
    .unwrap();
    let turn = srv
        .send_msg(&sid, "write .env: PORT=8080", Some("yolo"))
        .await;
    let card = srv.wait_gate(&sid).await;
    assert_eq!(card["reason"], "safety_floor");
    assert_eq!(
        card["summary"],
        "Writes `.env` — a secrets file: always asks, even in Yolo."
    );
    assert!(
        card["reason_detail"].as_str().unwrap().contains("**/.env*"),
        "the pattern that matched stays in the reason: {card}"
    );
    let snapshot = srv.snapshot(&sid).await.to_string();
    let inbox = serde_json::to_string(&srv.inbox().await).unwrap();
    for (what, text) in [
        ("card", card.to_string()),
        ("log", snapshot),
        ("inbox", inbox),
    ] {
        assert!(
            !text.contains(existing),
            "the {what} holds the file's secret"
        );
        assert!(
            !text.contains("DEBUG=true"),
            "the {what} holds the file's content"
        );
    }
    srv.decide(&sid, &aid(&card), json!({"decision": "deny"}))
        .await
        .expect(200);
    srv.wait_turn(&sid, &turn).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_digest_is_409_and_the_gate_stays_pending() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv
        .send_msg(&sid, "write notes.md: hello", Some("ask"))
        .await;
    let card = srv.wait_gate(&sid).await;
    let aid = aid(&card);
    let wrong = sha256_hex("something else");
    for decision in ["approve", "deny", "allow_always"] {
        srv.decide(&sid, &aid, json!({"decision": decision, "digest": wrong}))
            .await
            .expect_error(409, "stale_digest");
        srv.assert_still_pending(&sid, &aid).await;
    }
    srv.decide(
        &sid,
        &aid,
        json!({"decision": "edit", "digest": "", "edits": {"path": "notes.md", "content": "e"}}),
    )
    .await
    .expect_error(409, "stale_digest");
    srv.assert_still_pending(&sid, &aid).await;
    assert!(srv.rules().await.is_empty());
    srv.decide(
        &sid,
        &aid,
        json!({"decision": "approve", "digest": card["digest"]}),
    )
    .await
    .expect(200);
    srv.wait_turn(&sid, &turn).await;
    assert_eq!(
        std::fs::read_to_string(srv.ws("notes.md")).unwrap(),
        "hello"
    );
}

// ---------------------------------------------------------------------------------------------
// 10. the policy, through HTTP
// ---------------------------------------------------------------------------------------------

#[track_caller]
fn assert_refused(evs: &[Value], what: &str) {
    assert_eq!(
        types(evs),
        [
            "user_message",
            "tool_call",
            "tool_result",
            "assistant_message",
            "turn_finished"
        ],
        "{what}: {evs:#?}"
    );
    assert_eq!(only(evs, "tool_call")["verdict"], "refuse", "{what}");
    assert_eq!(only(evs, "tool_result")["status"], "refused", "{what}");
    assert_eq!(only(evs, "turn_finished")["status"], "completed", "{what}");
}

#[track_caller]
fn assert_ran_without_card(evs: &[Value], what: &str) {
    assert_eq!(
        types(evs),
        [
            "user_message",
            "tool_call",
            "tool_started",
            "tool_result",
            "assistant_message",
            "turn_finished"
        ],
        "{what}: {evs:#?}"
    );
    let call = only(evs, "tool_call");
    assert_eq!(call["verdict"], "run", "{what}");
    assert!(
        call.get("rule_id").is_none_or(Value::is_null),
        "{what}: {call}"
    );
    assert_eq!(only(evs, "tool_result")["status"], "ok", "{what}");
}

/// Drops the leading `mode_changed` a message's mode switch adds.
fn without_mode_change(evs: Vec<Value>) -> Vec<Value> {
    evs.into_iter()
        .filter(|e| e["type"] != "mode_changed")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modes_decide_run_ask_or_refuse_through_http() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    std::fs::write(srv.ws("r.txt"), "readable text").unwrap();

    // plan: edits, commands and floor hits are refused, nothing happens, no card.
    for (text, file) in [
        ("write a.txt: x", "a.txt"),
        ("run: echo x > p.txt", "p.txt"),
        ("run: touch p2.txt", "p2.txt"),
        ("write .env: x", ".env"),
    ] {
        let (_, evs) = srv.run_turn(&sid, text, Some("plan")).await;
        assert_refused(&without_mode_change(evs), &format!("plan {text}"));
        assert!(!srv.ws(file).exists(), "plan mode wrote {file}");
    }
    assert!(srv.inbox().await.is_empty());

    // yolo: runs edits and commands without a card…
    let (_, evs) = srv.run_turn(&sid, "write a.txt: x", Some("yolo")).await;
    assert_ran_without_card(&without_mode_change(evs), "yolo write");
    assert_eq!(std::fs::read_to_string(srv.ws("a.txt")).unwrap(), "x");
    let (_, evs) = srv.run_turn(&sid, "run: touch y.txt", Some("yolo")).await;
    assert_ran_without_card(&without_mode_change(evs), "yolo run");
    assert!(srv.ws("y.txt").exists());

    // …but still asks on the floor, without Allow always.
    let turn = srv.send_msg(&sid, "write .env: x", Some("yolo")).await;
    let card = srv.wait_gate(&sid).await;
    assert_eq!(card["reason"], "safety_floor");
    assert_eq!(card["tool"], "write_file");
    assert_eq!(
        sorted_strs(&card["allowed_decisions"]),
        sorted(&["approve", "edit", "deny"])
    );
    let snap = srv.snapshot(&sid).await;
    assert_eq!(
        only(&turn_events(&snap, &turn), "tool_call")["verdict"],
        "ask"
    );
    srv.decide(&sid, &aid(&card), json!({"decision": "deny"}))
        .await
        .expect(200);
    srv.wait_turn(&sid, &turn).await;
    assert!(!srv.ws(".env").exists());

    // yolo: request_approval is not offered (refused, no card).
    let (_, evs) = srv
        .run_turn(&sid, "ask prep_plan: Drop nulls | drop rows", Some("yolo"))
        .await;
    let evs = without_mode_change(evs);
    assert_refused(&evs, "yolo checkpoint");
    assert_eq!(only(&evs, "tool_call")["class"], "decision");
    assert!(
        str_of(only(&evs, "tool_result"), "output").contains("not offered"),
        "{evs:#?}"
    );

    // auto_edit: writes run, commands ask.
    let (_, evs) = srv
        .run_turn(&sid, "write b.txt: y", Some("auto_edit"))
        .await;
    assert_ran_without_card(&without_mode_change(evs), "auto_edit write");
    assert_eq!(std::fs::read_to_string(srv.ws("b.txt")).unwrap(), "y");
    let turn = srv
        .send_msg(&sid, "run: touch ae.txt", Some("auto_edit"))
        .await;
    let card = srv.wait_gate(&sid).await;
    assert_eq!(card["reason"], "mode");
    assert_eq!(card["class"], "exec");
    assert!(!srv.ws("ae.txt").exists());
    srv.decide(&sid, &aid(&card), json!({"decision": "approve"}))
        .await
        .expect(200);
    srv.wait_turn(&sid, &turn).await;
    assert!(srv.ws("ae.txt").exists());

    // auto_edit: a floor write still asks.
    let turn = srv
        .send_msg(&sid, "write .env.local: x", Some("auto_edit"))
        .await;
    let card = srv.wait_gate(&sid).await;
    assert_eq!(card["reason"], "safety_floor");
    srv.decide(&sid, &aid(&card), json!({"decision": "deny"}))
        .await
        .expect(200);
    srv.wait_turn(&sid, &turn).await;
    assert!(!srv.ws(".env.local").exists());

    // read runs in every mode.
    for mode in ["plan", "ask", "auto_edit", "yolo"] {
        let (_, evs) = srv.run_turn(&sid, "read r.txt", Some(mode)).await;
        let evs = without_mode_change(evs);
        assert_ran_without_card(&evs, &format!("read in {mode}"));
        assert_eq!(only(&evs, "tool_call")["class"], "read");
        assert!(
            str_of(only(&evs, "tool_result"), "output").contains("readable text"),
            "{mode}: {evs:#?}"
        );
    }
    assert!(srv.inbox().await.is_empty());
}

/// The person's edited arguments are validated like the agent's: an edit that moves a
/// harmless write onto a safety-floor path is refused `403 not_allowed` (the floor gets its own
/// card, README "Deviations"), and the gate stays pending, still answerable as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_cannot_move_a_call_onto_the_safety_floor() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv
        .send_msg(&sid, "write notes.md: hello", Some("ask"))
        .await;
    let (before, card) = srv.wait_gate_snapshot(&sid).await;
    assert_eq!(card["reason"], "mode");
    srv.decide(
        &sid,
        &aid(&card),
        json!({"decision": "edit", "edits": {"path": ".env", "content": "SECRET=1"}}),
    )
    .await
    .expect_error(403, "not_allowed");
    // Nothing happened: the same card is pending, the log did not move, nothing was written.
    srv.assert_still_pending(&sid, &aid(&card)).await;
    let after = srv.snapshot(&sid).await;
    assert_eq!(
        after["events"], before["events"],
        "the refused edit was logged"
    );
    assert_eq!(after["pending"], json!([card]));
    assert!(
        !srv.ws(".env").exists(),
        "an edit wrote a safety-floor path"
    );
    // The gate still takes an answer, and the call runs with its own arguments.
    srv.decide(&sid, &aid(&card), json!({"decision": "approve"}))
        .await
        .expect(200);
    srv.wait_turn(&sid, &turn).await;
    assert_eq!(
        std::fs::read_to_string(srv.ws("notes.md")).unwrap(),
        "hello"
    );
    assert!(!srv.ws(".env").exists());
}

// ---------------------------------------------------------------------------------------------
// 11. parallel gates
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_open_one_card_each_and_are_decided_independently() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv
        .send_msg(
            &sid,
            "parallel:\nwrite a.txt: 1\nwrite b.txt: 2",
            Some("ask"),
        )
        .await;
    let cards = srv.wait_pending(&sid, 2).await;
    let inbox = srv.inbox_ids().await;
    assert_eq!(inbox.len(), 2);
    let by_path = |p: &str| {
        cards
            .iter()
            .find(|c| c["args"]["path"] == p)
            .unwrap_or_else(|| panic!("no card for {p}: {cards:#?}"))
            .clone()
    };
    let (a, b) = (by_path("a.txt"), by_path("b.txt"));
    assert_ne!(a["call_id"], b["call_id"]);
    assert_ne!(a["approval_id"], b["approval_id"]);
    assert_eq!(a["turn_id"], b["turn_id"]);
    assert!(inbox.contains(&aid(&a)) && inbox.contains(&aid(&b)));

    srv.decide(&sid, &aid(&a), json!({"decision": "approve"}))
        .await
        .expect(200);
    // a runs while b still waits; the turn does not end.
    let snap = srv
        .wait_snapshot(&sid, "a.txt's result", |s| {
            events(s)
                .iter()
                .any(|e| e["type"] == "tool_result" && e["call_id"] == a["call_id"])
        })
        .await;
    assert_eq!(std::fs::read_to_string(srv.ws("a.txt")).unwrap(), "1");
    assert_eq!(snap["pending"].as_array().unwrap().len(), 1);
    assert_eq!(snap["pending"][0]["approval_id"], b["approval_id"]);
    assert!(of_type(&turn_events(&snap, &turn), "turn_finished").is_empty());
    assert_eq!(snap["session"]["running_turn_id"], turn.as_str());

    srv.decide(
        &sid,
        &aid(&b),
        json!({"decision": "deny", "reason": "not b"}),
    )
    .await
    .expect(200);
    let snap = srv.wait_turn(&sid, &turn).await;
    assert!(!srv.ws("b.txt").exists());
    let evs = turn_events(&snap, &turn);
    assert_eq!(of_type(&evs, "approval_request").len(), 2);
    assert_eq!(of_type(&evs, "approval_resolved").len(), 2);
    let status_of = |call: &Value| {
        of_type(&evs, "tool_result")
            .into_iter()
            .find(|r| r["call_id"] == *call)
            .map(|r| r["status"].clone())
    };
    assert_eq!(status_of(&a["call_id"]), Some(json!("ok")));
    assert_eq!(status_of(&b["call_id"]), Some(json!("denied")));
    let text = str_of(only(&evs, "assistant_message"), "text");
    assert!(text.contains("not b"), "{text}");
    assert_eq!(only(&evs, "turn_finished")["status"], "completed");
}

// ---------------------------------------------------------------------------------------------
// 12. decision checkpoints
// ---------------------------------------------------------------------------------------------

const PROPOSAL: &str =
    "Remove rows where **price** is empty <img src=x onerror=alert(1)> [x](javascript:alert(1))";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_card_is_sanitized_and_edit_revises_the_proposal() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv
        .send_msg(
            &sid,
            &format!("ask prep_plan: Drop null rows | {PROPOSAL}"),
            Some("ask"),
        )
        .await;
    let card = srv.wait_gate(&sid).await;
    let aid = aid(&card);
    assert_eq!(card["kind"], "decision");
    assert_eq!(card["decision_kind"], "prep_plan");
    assert_eq!(card["class"], "decision");
    assert_eq!(card["tool"], "request_approval");
    assert_eq!(card["reason"], "agent_checkpoint");
    assert_eq!(card["title"], "Drop null rows");
    assert_eq!(card["proposal_md"], PROPOSAL);
    assert_eq!(
        sorted_strs(&card["allowed_decisions"]),
        sorted(&["approve", "edit", "deny"])
    );
    assert_eq!(card["timeout_outcome"], "proceed_unapproved");
    let html = str_of(&card, "proposal_html");
    assert!(html.contains("<strong>price</strong>"), "{html}");
    assert!(!html.to_ascii_lowercase().contains("<img"), "{html}");
    assert!(!html.to_ascii_lowercase().contains("javascript:"), "{html}");
    // Raw HTML may survive only as escaped text, never as a tag.
    assert!(
        !html.contains("<img") && !html.contains("<script"),
        "{html}"
    );
    let digest = str_of(&card, "digest");
    assert!(is_hex_sha256(digest));
    assert_eq!(
        digest,
        sha256_hex(PROPOSAL),
        "decision digest = sha256 of the proposal"
    );

    // Wrong shapes for a decision's edit; Allow always is not offered.
    srv.decide(
        &sid,
        &aid,
        json!({"decision": "edit", "edits": {"proposal": "keep rows"}}),
    )
    .await
    .expect_error(400, "invalid_edits");
    srv.decide(
        &sid,
        &aid,
        json!({"decision": "edit", "edits": ["keep rows"]}),
    )
    .await
    .expect_error(400, "invalid_edits");
    srv.decide(&sid, &aid, json!({"decision": "edit", "edits": "  "}))
        .await
        .expect_error(400, "edits_required");
    srv.decide(&sid, &aid, json!({"decision": "allow_always"}))
        .await
        .expect_error(403, "not_allowed");
    srv.assert_still_pending(&sid, &aid).await;

    let revised = "Keep the rows; impute **price** with the median";
    srv.decide(
        &sid,
        &aid,
        json!({"decision": "edit", "edits": revised, "digest": digest}),
    )
    .await
    .expect(200);
    let snap = srv.wait_turn(&sid, &turn).await;
    let evs = turn_events(&snap, &turn);
    let res = only(&evs, "approval_resolved");
    assert_eq!(res["decision"], "edit");
    assert_eq!(res["edits"], revised);
    let result = only(&evs, "tool_result");
    assert_eq!(result["status"], "ok");
    assert_eq!(result["tool"], "request_approval");
    assert!(str_of(result, "output").contains(revised), "{result}");
    assert!(
        of_type(&evs, "tool_started").is_empty(),
        "a checkpoint runs no tool"
    );
    assert_eq!(only(&evs, "turn_finished")["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoint_approve_and_deny_reach_the_agent() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv
        .send_msg(
            &sid,
            "ask target_column: Predict churn | use `churned`",
            Some("ask"),
        )
        .await;
    let card = srv.wait_gate(&sid).await;
    assert_eq!(card["decision_kind"], "target_column");
    srv.decide(&sid, &aid(&card), json!({"decision": "approve"}))
        .await
        .expect(200);
    let snap = srv.wait_turn(&sid, &turn).await;
    let result = only(&turn_events(&snap, &turn), "tool_result").clone();
    assert_eq!(result["status"], "ok");
    assert!(str_of(&result, "output").contains("approved"), "{result}");

    let turn = srv
        .send_msg(
            &sid,
            "ask expensive_run: Train 50 models | 3 GPU hours",
            Some("ask"),
        )
        .await;
    let card = srv.wait_gate(&sid).await;
    srv.decide(
        &sid,
        &aid(&card),
        json!({"decision": "deny", "reason": "too costly today"}),
    )
    .await
    .expect(200);
    let snap = srv.wait_turn(&sid, &turn).await;
    let evs = turn_events(&snap, &turn);
    let result = only(&evs, "tool_result");
    assert_eq!(result["status"], "denied");
    assert!(str_of(result, "output").contains("too costly today"));
    assert!(str_of(only(&evs, "assistant_message"), "text").contains("too costly today"));
}

// ---------------------------------------------------------------------------------------------
// 13. snapshot and session list
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_gates_show_in_the_snapshot_and_the_session_list() {
    let srv = TestServer::start().await;
    let idle = srv.session().await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "run: echo hi", Some("ask")).await;
    let card = srv.wait_gate(&sid).await;

    let snap = srv.snapshot(&sid).await;
    assert_eq!(snap["pending"].as_array().unwrap().len(), 1);
    assert_eq!(snap["pending"][0]["approval_id"], card["approval_id"]);
    assert_eq!(snap["pending"][0]["turn_id"], turn.as_str());
    assert_eq!(snap["session"]["pending_approvals"], 1);
    assert_eq!(snap["session"]["running_turn_id"], turn.as_str());
    assert_eq!(
        snap["cursor"],
        events(&snap).last().unwrap()["seq"],
        "cursor = last seq"
    );

    let list = srv.get("/api/v1/sessions").await.expect(200);
    let list = list.as_array().unwrap();
    let find = |id: &str| {
        list.iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("{id} not listed"))
            .clone()
    };
    assert_eq!(find(&sid)["pending_approvals"], 1);
    assert_eq!(find(&idle)["pending_approvals"], 0);
    assert_eq!(srv.snapshot(&idle).await["pending"], json!([]));

    let inbox = srv.inbox().await;
    assert_eq!(inbox.len(), 1);
    assert_eq!(inbox[0]["approval_id"], card["approval_id"]);
    assert_eq!(inbox[0]["session_id"], sid.as_str());
    assert_eq!(inbox[0]["turn_id"], turn.as_str());
    // A bad inbox filter is a 400, not a silent everything.
    let bad = srv.get("/api/v1/approvals?status=bogus").await;
    assert_eq!(bad.status.as_u16(), 400, "{}", bad.body);

    srv.decide(&sid, &aid(&card), json!({"decision": "approve"}))
        .await
        .expect(200);
    let snap = srv.wait_turn(&sid, &turn).await;
    assert_eq!(snap["pending"], json!([]));
    // The turn lease may be released a moment after turn_finished is stored.
    let snap = srv
        .wait_snapshot(&sid, "the turn to be released", |s| {
            s["session"]["running_turn_id"].is_null()
        })
        .await;
    assert_eq!(snap["session"]["pending_approvals"], 0);
    let list = srv.get("/api/v1/sessions").await.expect(200);
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|s| s["pending_approvals"] == 0),
        "{list:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// Beyond the list: session deletion, rule scope of compound commands, gates not built yet.
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_session_closes_its_pending_gate() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    srv.send_msg(&sid, "write gone.txt: x", Some("ask")).await;
    let card = srv.wait_gate(&sid).await;
    srv.delete(&format!("/api/v1/sessions/{sid}"))
        .await
        .expect(204);
    assert!(
        srv.inbox().await.is_empty(),
        "a deleted session's gate is still in the inbox"
    );
    srv.decide(&sid, &aid(&card), json!({"decision": "approve"}))
        .await
        .expect_error(404, "unknown_session");
    assert!(!srv.ws("gone.txt").exists());
}

/// A standing rule `echo *` is meant for `echo …`; a compound command that merely starts with
/// `echo` (`echo ok; touch pwned.txt`) runs something the person never allowed, so it must ask.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_rule_does_not_cover_chained_commands() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "run: echo one", Some("ask")).await;
    let card = srv.wait_gate(&sid).await;
    srv.decide(&sid, &aid(&card), json!({"decision": "allow_always"}))
        .await
        .expect(200);
    srv.wait_turn(&sid, &turn).await;
    assert_eq!(srv.rules().await[0]["pattern"], "echo *");

    for (i, chained) in [
        "echo ok; touch pwned0.txt",
        "echo ok && touch pwned1.txt",
        "echo $(touch pwned2.txt)",
    ]
    .into_iter()
    .enumerate()
    {
        let turn = srv
            .send_msg(&sid, &format!("run: {chained}"), Some("ask"))
            .await;
        let snap = srv
            .wait_snapshot(&sid, "a card or the end of the turn", |s| {
                events(s)
                    .iter()
                    .any(|e| e["type"] == "turn_finished" && e["turn_id"] == turn)
                    || s["pending"].as_array().is_some_and(|p| !p.is_empty())
            })
            .await;
        let file = format!("pwned{i}.txt");
        assert!(
            !srv.ws(&file).exists(),
            "`{chained}` ran under the rule `echo *` without a card"
        );
        let gate = snap["pending"][0].clone();
        assert_eq!(gate["args"]["command"], chained);
        srv.decide(&sid, &aid(&gate), json!({"decision": "deny"}))
            .await
            .expect(200);
        srv.wait_turn(&sid, &turn).await;
    }
}

/// product.md: config (config_set) asks in ask mode; the demo's `set <key> = <value>`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_set_is_gated_in_ask_mode() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let turn = srv
        .send_msg(&sid, "set tools.max_parallel = 2", Some("ask"))
        .await;
    let pending = [the_one_card(&srv, &sid, &turn, "config").await];
    assert_eq!(pending[0]["tool"], "config_set");
    assert_eq!(pending[0]["class"], "config");
    assert_eq!(pending[0]["reason"], "mode");
}

/// product.md "Leaving plan mode": `propose plan:` in plan mode opens a plan card (a decision,
/// no Allow always); denying keeps plan mode and passes the reason; approving switches the
/// session back to the mode it had before plan, or to the one picked on the card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_card_leaves_plan_mode_only_when_approved() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;

    // Deny: still in plan mode, the agent reads why.
    let turn = srv
        .send_msg(&sid, "propose plan: 1. write a.txt", Some("plan"))
        .await;
    let card = srv.wait_gate(&sid).await;
    assert_eq!(card["kind"], "decision");
    assert_eq!(card["decision_kind"], "plan");
    assert_eq!(card["tool"], "exit_plan");
    assert_eq!(
        sorted_strs(&card["allowed_decisions"]),
        sorted(&["approve", "edit", "deny"])
    );
    srv.decide(&sid, &aid(&card), json!({"decision": "allow_always"}))
        .await
        .expect_error(403, "not_allowed");
    srv.decide(
        &sid,
        &aid(&card),
        json!({"decision": "deny", "reason": "too vague"}),
    )
    .await
    .expect(200);
    let snap = srv.wait_turn(&sid, &turn).await;
    let evs = turn_events(&snap, &turn);
    let result = only(&evs, "tool_result");
    assert_eq!(result["status"], "denied");
    assert!(str_of(result, "output").contains("too vague"), "{result}");
    assert_eq!(snap["session"]["approval_mode"], "plan");

    // Approve: back to the mode before plan (ask).
    let turn = srv
        .send_msg(&sid, "propose plan: 1. write a.txt", Some("plan"))
        .await;
    let card = srv.wait_gate(&sid).await;
    srv.decide(&sid, &aid(&card), json!({"decision": "approve"}))
        .await
        .expect(200);
    let snap = srv.wait_turn(&sid, &turn).await;
    assert_eq!(
        only(&turn_events(&snap, &turn), "tool_result")["status"],
        "ok"
    );
    assert_eq!(snap["session"]["approval_mode"], "ask");

    // Approve with a picked execution mode.
    let turn = srv
        .send_msg(&sid, "propose plan: 2. write b.txt", Some("plan"))
        .await;
    let card = srv.wait_gate(&sid).await;
    srv.decide(
        &sid,
        &aid(&card),
        json!({"decision": "approve", "execution_mode": "plan"}),
    )
    .await
    .expect_error(400, "invalid_decision");
    srv.assert_still_pending(&sid, &aid(&card)).await;
    srv.decide(
        &sid,
        &aid(&card),
        json!({"decision": "approve", "execution_mode": "auto_edit"}),
    )
    .await
    .expect(200);
    let snap = srv.wait_turn(&sid, &turn).await;
    assert_eq!(snap["session"]["approval_mode"], "auto_edit");
}

/// product.md "Budget kill-switch": a turn past its tool-call ceiling suspends on a budget card
/// (no Allow always), in every mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_past_its_tool_call_budget_suspends_on_a_budget_card() {
    let srv = TestServer::configured("[budget]\nmax_tool_calls = 3\n").await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "loop 5", Some("yolo")).await;
    let pending = [the_one_card(&srv, &sid, &turn, "budget").await];
    let card = &pending[0];
    assert_eq!(card["kind"], "budget");
    assert_eq!(card["reason"], "budget");
    assert!(
        !sorted_strs(&card["allowed_decisions"]).contains(&"allow_always".to_string()),
        "{card}"
    );
    srv.decide(&sid, &aid(card), json!({"decision": "allow_always"}))
        .await
        .expect_error(403, "not_allowed");
}

/// Waits for the turn to open a card (or end), and returns its one pending card.
async fn the_one_card(srv: &TestServer, sid: &str, turn: &str, what: &str) -> Value {
    let snap = srv
        .wait_snapshot(sid, "a card or the end of the turn", |s| {
            events(s)
                .iter()
                .any(|e| e["type"] == "turn_finished" && e["turn_id"] == turn)
                || s["pending"].as_array().is_some_and(|p| !p.is_empty())
        })
        .await;
    let pending = snap["pending"].as_array().unwrap();
    assert_eq!(
        pending.len(),
        1,
        "no {what} card: {:#?}",
        turn_events(&snap, turn)
    );
    pending[0].clone()
}

/// A grant revoked while calls it already matched wait for an execution slot stops them: each
/// is decided again when its slot comes, and with no grant left it goes to the person on a
/// card (docs/approvals.md "the next call asks") — none of them runs unasked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_revoked_while_its_calls_wait_for_a_slot_runs_none_of_them() {
    let srv = TestServer::configured("[tools]\nmax_parallel = 1\n").await;
    let sid = srv.session().await;
    let grant = async |command: &str, pattern: &str| {
        let turn = srv
            .send_msg(&sid, &format!("run: {command}"), Some("ask"))
            .await;
        let card = srv.wait_gate(&sid).await;
        let resp = srv
            .decide(
                &sid,
                &aid_of(&card),
                json!({"decision": "allow_always", "rule": {"scope": "session", "pattern": pattern}}),
            )
            .await
            .expect(200);
        srv.wait_turn(&sid, &turn).await;
        str_of(&resp, "rule_id").to_owned()
    };
    grant("sleep 0", "sleep *").await;
    let touch = grant("touch granted.txt", "touch *").await;
    let turn = srv
        .send_msg(
            &sid,
            "parallel:\nrun: sleep 5\nrun: touch queued1.txt\nrun:   touch  queued2.txt",
            Some("ask"),
        )
        .await;
    srv.wait_event(&sid, "the sleep to start", |e| e["type"] == "tool_started")
        .await;
    srv.delete(&format!("/api/v1/rules/{touch}"))
        .await
        .expect(204);
    let cards = srv.wait_pending(&sid, 2).await;
    for card in &cards {
        assert_eq!(card["reason"], "mode", "{card}");
        srv.decide(&sid, &aid_of(card), json!({"decision": "deny"}))
            .await
            .expect(200);
    }
    let snap = srv.wait_turn(&sid, &turn).await;
    let evs = turn_events(&snap, &turn);
    let calls = of_type(&evs, "tool_call");
    assert_eq!(calls.len(), 3, "{calls:#?}");
    assert!(!srv.ws("queued1.txt").exists(), "ran on a revoked grant");
    assert!(!srv.ws("queued2.txt").exists(), "ran on a revoked grant");
}
