//! A team answers (issue 41): cards routed by `[[approvals.route]]` to people who sign in with
//! a real OpenID provider (npm `oidc-provider`, `support/idp.rs`). A floor card routed to a
//! group with quorum 2 is approved by one member, then another; a third person gets
//! `403 not_an_approver`; a deny by either ends it; an edit starts the count again; a card
//! nobody answers escalates; the audit and the card name each person.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "support/mod.rs"]
mod support;

use reqwest::Method;
use serde_json::{Value, json};
use support::idp::*;
use support::team::{answer, open};
use support::*;

/// Alice and Bob maintain; Carol is on call. The floor needs two maintainers; a command goes
/// to one maintainer, and to Carol too after two seconds; Claude Code's edits need two, in
/// any mode.
const ROUTES: &str = r#"
[[approvals.route]]
when = "floor"
approvers = ["group:maintainers"]
quorum = 2

[[approvals.route]]
when = "exec"
approvers = ["group:maintainers"]
escalate_after_secs = 2
escalate_to = ["person:carol@other.test"]

[[approvals.route]]
when = "edit"
source = "claude-code"
approvers = ["group:maintainers", "role:admin"]
quorum = 2
"#;

/// People signed in: their session cookies.
struct Team {
    alice: String,
    bob: String,
    carol: String,
}

/// A server for `idp` with the routes above, its three people invited and signed in.
async fn team_server(idp: &Idp, default_mode: &str) -> (TestServer, Team) {
    let config = format!(
        "[server]\npublic_url = \"{PUBLIC_URL}\"\n[auth.oidc]\nissuer = \"{}\"\nclient_id = \"{CLIENT_ID}\"\nclient_secret_env = \"{SECRET_ENV}\"\n[approvals]\ndefault_mode = \"{default_mode}\"\n{ROUTES}",
        idp.issuer
    );
    let srv = TestServer::configured(&config).await;
    for (email, groups) in [
        ("alice@example.test", json!(["maintainers"])),
        ("bob@example.test", json!(["maintainers"])),
        ("carol@other.test", json!(["oncall"])),
    ] {
        srv.post(
            "/api/v1/people",
            json!({"email": email, "roles": ["approver"], "groups": groups}),
        )
        .await
        .expect(201);
    }
    let mut cookies = Vec::new();
    for account in ["alice", "bob", "carol"] {
        let signed = sign_in(&srv, account).await;
        assert!(signed.status.is_success(), "{account}: {}", signed.page);
        cookies.push(signed.session.expect("a session cookie"));
    }
    let carol = cookies.pop().unwrap();
    let bob = cookies.pop().unwrap();
    let alice = cookies.pop().unwrap();
    (srv, Team { alice, bob, carol })
}

fn approve() -> Value {
    json!({"decision": "approve"})
}

/// The card as the session lists it while it waits.
async fn card(srv: &TestServer, sid: &str) -> Value {
    srv.wait_gate(sid).await
}

/// The card's `approval_resolved`, once it has one.
async fn resolved(srv: &TestServer, sid: &str, aid: &str) -> Value {
    srv.wait_event(sid, "the card's approval_resolved", |e| {
        e["type"] == "approval_resolved" && e["approval_id"] == aid
    })
    .await
}

/// The audit's (actor, action) pairs about one card.
async fn audit_of(srv: &TestServer, aid: &str) -> Vec<(String, String)> {
    let entries = srv
        .get(&format!("/api/v1/audit?subject={aid}"))
        .await
        .expect(200);
    let entries = entries["entries"]
        .as_array()
        .or(entries.as_array())
        .cloned()
        .unwrap_or_default();
    entries
        .iter()
        .map(|e| {
            (
                e["actor"].as_str().unwrap_or("").to_owned(),
                e["action"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_floor_card_needs_two_maintainers_and_names_each() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let (srv, team) = team_server(&idp, "ask").await;
    let (sid, aid) = open(&srv, "codex", "Bash", json!({"command": "cat .env"})).await;
    let shown = card(&srv, &sid).await;
    assert_eq!(shown["reason"], "safety_floor", "{shown:#}");
    assert_eq!(shown["route"]["quorum"], 2, "{shown:#}");
    assert_eq!(shown["route"]["approvers"], json!(["group:maintainers"]));
    assert!(
        !shown["allowed_decisions"]
            .as_array()
            .unwrap()
            .contains(&json!("allow_always"))
    );

    // Carol is no maintainer; the admin's own token is `role:admin` only: neither answers,
    // and nothing changes.
    answer(&srv, &team.carol, &sid, &aid, approve())
        .await
        .expect_error(403, "not_an_approver");
    let refused = srv.decide(&sid, &aid, approve()).await;
    let body = refused.expect_error(403, "not_an_approver");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Needs 2 of: group maintainers"),
        "{body}"
    );
    answer(&srv, &team.carol, &sid, &aid, json!({"decision": "deny"}))
        .await
        .expect_error(403, "not_an_approver");

    // Alice approves: counted, the card waits; approving again counts once.
    let first = answer(&srv, &team.alice, &sid, &aid, approve())
        .await
        .expect(202);
    assert_eq!(first["status"], "counted");
    assert_eq!(first["approvals"].as_array().unwrap().len(), 1);
    let again = answer(&srv, &team.alice, &sid, &aid, approve())
        .await
        .expect(202);
    assert_eq!(again["approvals"].as_array().unwrap().len(), 1, "{again}");
    let waiting = card(&srv, &sid).await;
    assert_eq!(
        waiting["route_state"]["approvals"][0]["who"],
        "alice@example.test"
    );
    assert_eq!(
        waiting["route_state"]["approvals"][0]["name"],
        "Alice Example"
    );

    // Bob's approval is the second distinct one: the card resolves, naming both.
    let done = answer(&srv, &team.bob, &sid, &aid, approve())
        .await
        .expect(200);
    assert_eq!(done["decision"], "approve");
    let event = resolved(&srv, &sid, &aid).await;
    assert_eq!(event["actor"], "person:bob@example.test");
    let names: Vec<&str> = event["approved_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Alice Example", "Bob Example"]);
    let audit = audit_of(&srv, &aid).await;
    let given: Vec<&str> = audit
        .iter()
        .filter(|(_, action)| action == "approval_given")
        .map(|(actor, _)| actor.as_str())
        .collect();
    // Each approval is its own entry (Alice's second counted once); Bob's resolved it.
    assert_eq!(
        given,
        ["person:alice@example.test", "person:bob@example.test"],
        "{audit:?}"
    );
    assert!(
        audit.contains(&("person:bob@example.test".into(), "gate_resolved".into())),
        "{audit:?}"
    );
    // Answered: a late answer is told so.
    answer(&srv, &team.alice, &sid, &aid, approve())
        .await
        .expect_error(409, "already_resolved");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deny_by_either_maintainer_ends_it() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let (srv, team) = team_server(&idp, "ask").await;
    let (sid, aid) = open(&srv, "codex", "Bash", json!({"command": "cat .env"})).await;
    card(&srv, &sid).await;
    answer(&srv, &team.alice, &sid, &aid, approve())
        .await
        .expect(202);
    let denied = answer(&srv, &team.bob, &sid, &aid, json!({"decision": "deny"}))
        .await
        .expect(200);
    assert_eq!(denied["decision"], "deny");
    let event = resolved(&srv, &sid, &aid).await;
    assert_eq!(event["actor"], "person:bob@example.test");
    assert_eq!(event["decision"], "deny");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_shows_the_others_and_starts_the_count_again() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let (srv, team) = team_server(&idp, "ask").await;
    let (sid, aid) = open(&srv, "codex", "Bash", json!({"command": "cat .env"})).await;
    let before = card(&srv, &sid).await;
    let old_digest = before["digest"].as_str().unwrap().to_owned();
    answer(&srv, &team.alice, &sid, &aid, approve())
        .await
        .expect(202);
    // Bob edits: the card changes, his edit is his approval, Alice's no longer counts.
    let edited = answer(
        &srv,
        &team.bob,
        &sid,
        &aid,
        json!({"decision": "edit", "edits": {"command": "cat .env.example"}}),
    )
    .await
    .expect(202);
    let counted: Vec<&str> = edited["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["who"].as_str().unwrap())
        .collect();
    assert_eq!(counted, ["bob@example.test"]);
    let shown = card(&srv, &sid).await;
    assert_ne!(shown["digest"], old_digest.as_str());
    assert_eq!(
        shown["route"]["edit"]["edits"]["command"],
        "cat .env.example"
    );
    // Alice's answer to the card as it was is refused; to the card as it is, it resolves.
    answer(
        &srv,
        &team.alice,
        &sid,
        &aid,
        json!({"decision": "approve", "digest": old_digest}),
    )
    .await
    .expect_error(409, "stale_digest");
    let digest = shown["digest"].clone();
    answer(
        &srv,
        &team.alice,
        &sid,
        &aid,
        json!({"decision": "approve", "digest": digest}),
    )
    .await
    .expect(200);
    let event = resolved(&srv, &sid, &aid).await;
    assert_eq!(event["decision"], "edit", "{event:#}");
    assert_eq!(event["edits"]["command"], "cat .env.example");
    let who: Vec<&str> = event["approved_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["who"].as_str().unwrap())
        .collect();
    assert_eq!(who, ["bob@example.test", "alice@example.test"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_nobody_answers_goes_also_to_escalate_to() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let (srv, team) = team_server(&idp, "ask").await;
    let (sid, aid) = open(&srv, "codex", "Bash", json!({"command": "make test"})).await;
    let shown = card(&srv, &sid).await;
    let expires_at = shown["expires_at"].clone();
    assert_eq!(shown["route"]["quorum"], 1);
    // Before its time Carol may not answer it.
    answer(&srv, &team.carol, &sid, &aid, approve())
        .await
        .expect_error(403, "not_an_approver");
    let escalated = srv
        .wait_event(&sid, "approval_escalated", |e| {
            e["type"] == "approval_escalated" && e["approval_id"] == aid.as_str()
        })
        .await;
    assert_eq!(escalated["escalate_to"], json!(["person:carol@other.test"]));
    let listed = srv.wait_inbox_gate(&sid).await;
    assert_eq!(listed["route_state"]["escalated"], true, "{listed:#}");
    // The deadline stays where it was.
    assert_eq!(listed["expires_at"], expires_at);
    assert!(
        audit_of(&srv, &aid)
            .await
            .contains(&("escalation".into(), "approval_escalated".into()))
    );
    answer(&srv, &team.carol, &sid, &aid, approve())
        .await
        .expect(200);
    let event = resolved(&srv, &sid, &aid).await;
    assert_eq!(event["actor"], "person:carol@other.test");
    // Bob, a maintainer, is too late, and no one else was ever asked twice.
    answer(&srv, &team.bob, &sid, &aid, approve())
        .await
        .expect_error(409, "already_resolved");
}

/// A route that asks two people holds in every mode: no mode, rule or grant answers its call.
#[tokio::test(flavor = "multi_thread")]
async fn a_quorum_route_is_not_answered_by_the_mode() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let (srv, team) = team_server(&idp, "yolo").await;
    let (sid, aid) = open(
        &srv,
        "claude-code",
        "Write",
        json!({"file_path": "/home/me/app/notes.md", "content": "hi"}),
    )
    .await;
    let shown = card(&srv, &sid).await;
    assert_eq!(shown["route"]["quorum"], 2);
    // Allow always would answer the next one for them: refused, and nothing changes.
    answer(
        &srv,
        &team.alice,
        &sid,
        &aid,
        json!({"decision": "allow_always"}),
    )
    .await
    .expect_error(403, "not_allowed");
    // The admin is one of its approvers here (`role:admin`), and counts as one person.
    srv.decide(&sid, &aid, approve()).await.expect(202);
    srv.decide(&sid, &aid, approve()).await.expect(202);
    answer(&srv, &team.alice, &sid, &aid, approve())
        .await
        .expect(200);
    let event = resolved(&srv, &sid, &aid).await;
    let who: Vec<&str> = event["approved_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["who"].as_str().unwrap())
        .collect();
    assert_eq!(who, ["admin", "alice@example.test"]);
}

/// A card keeps the route it was made with across a restart and a config change, and a card
/// whose escalation time passed while the server was down escalates as it starts.
#[tokio::test(flavor = "multi_thread")]
async fn a_card_escalates_after_a_restart_with_the_route_it_was_made_with() {
    let routed = "[[approvals.route]]\nwhen = \"exec\"\napprovers = [\"role:admin\"]\nescalate_after_secs = 1\nescalate_to = [\"group:oncall\"]\n";
    let srv = TestServer::configured(routed).await;
    let (sid, aid) = open(&srv, "codex", "Bash", json!({"command": "make deploy"})).await;
    let before = card(&srv, &sid).await;
    assert_eq!(before["route"]["escalate_to"], json!(["group:oncall"]));
    let dir = srv.stop().await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    // The routes are gone from the config: the waiting card keeps its own.
    let srv = TestServer::start_in(dir, None, Some("")).await;
    let after = card(&srv, &sid).await;
    assert_eq!(after["route"], before["route"]);
    srv.wait_event(&sid, "approval_escalated", |e| {
        e["type"] == "approval_escalated" && e["approval_id"] == aid.as_str()
    })
    .await;
    // A token still answers as the admin, whom the route names (`role:admin`).
    let done = srv.decide(&sid, &aid, approve()).await.expect(200);
    assert_eq!(done["decision"], "approve");
}

/// `owner` is the person whose session it is: here the admin Carol, whose own login opened the
/// agent's session. Only she answers its card; the admin token is not her.
#[tokio::test(flavor = "multi_thread")]
async fn the_owner_of_a_session_answers_its_cards() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let config = format!(
        "[server]\npublic_url = \"{PUBLIC_URL}\"\n[auth.oidc]\nissuer = \"{}\"\nclient_id = \"{CLIENT_ID}\"\nclient_secret_env = \"{SECRET_ENV}\"\n[[approvals.route]]\nwhen = \"exec\"\napprovers = [\"owner\"]\n",
        idp.issuer
    );
    let srv = TestServer::configured(&config).await;
    for (email, role) in [
        ("alice@example.test", "approver"),
        ("carol@other.test", "admin"),
    ] {
        srv.post("/api/v1/people", json!({"email": email, "roles": [role]}))
            .await
            .expect(201);
    }
    let alice = sign_in(&srv, "alice").await.session.unwrap();
    let carol = sign_in(&srv, "carol").await.session.unwrap();
    let opened = send(
        srv.anon(Method::POST, "/api/v1/gates")
            .header("cookie", &carol)
            .header("sec-fetch-site", "same-origin")
            .json(&json!({
                "source": "codex", "external_session": "mine", "cwd": "/home/carol",
                "tool": {"name": "Bash", "input": {"command": "make test"}},
            })),
    )
    .await
    .expect(201);
    let sid = opened["session_id"].as_str().unwrap().to_owned();
    let aid = opened["approval_id"].as_str().unwrap().to_owned();
    let shown = card(&srv, &sid).await;
    assert_eq!(shown["route"]["owner"], "carol@other.test", "{shown:#}");
    answer(&srv, &alice, &sid, &aid, approve())
        .await
        .expect_error(403, "not_an_approver");
    srv.decide(&sid, &aid, approve())
        .await
        .expect_error(403, "not_an_approver");
    answer(&srv, &carol, &sid, &aid, approve())
        .await
        .expect(200);
}

/// Routes are the file's alone: the API refuses to change them, and a file with a bad entry
/// is refused naming it, the routes in force staying as they were.
#[tokio::test(flavor = "multi_thread")]
async fn a_bad_route_is_refused_by_name_and_the_routes_in_force_stay() {
    let good = "[[approvals.route]]\nwhen = \"exec\"\napprovers = [\"role:admin\"]\nquorum = 2\n";
    let srv = TestServer::configured(good).await;
    let view = srv.get("/api/v1/config").await.expect(200);
    let row = view["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == "approvals.route")
        .cloned()
        .unwrap_or_else(|| panic!("approvals.route listed: {view:#}"));
    assert_eq!(row["protected"], true, "{row}");
    srv.put("/api/v1/config/approvals.route", json!({"value": []}))
        .await
        .expect_error(403, "protected_key");
    let bad = good.replace("role:admin", "group: maintainers");
    std::fs::write(srv.root().join("config.toml"), bad).unwrap();
    let view = poll_until("the refusal", SOON, async || {
        let view = srv.get("/api/v1/config").await.expect(200);
        if view["error"].is_string() {
            Ok(view)
        } else {
            Err(view)
        }
    })
    .await;
    assert!(
        view["error"]
            .as_str()
            .unwrap()
            .contains("`group: maintainers`"),
        "{view}"
    );
    let (sid, _) = open(&srv, "codex", "Bash", json!({"command": "make test"})).await;
    let shown = card(&srv, &sid).await;
    assert_eq!(shown["route"]["approvers"], json!(["role:admin"]));
    assert_eq!(shown["route"]["quorum"], 2);
}

/// The built-in agent's cards are routed too: a command in yolo still waits for two
/// approvals (the admin counts once), and a deny ends it with nothing run.
#[tokio::test(flavor = "multi_thread")]
async fn the_built_in_agents_card_waits_for_its_quorum_in_yolo() {
    let config = "[[approvals.route]]\nwhen = \"exec\"\nsource = \"countersign\"\napprovers = [\"role:admin\", \"group:maintainers\"]\nquorum = 2\n";
    let srv = TestServer::configured(config).await;
    let sid = srv.session().await;
    let turn = srv.send_msg(&sid, "run: touch ran.txt", Some("yolo")).await;
    let shown = srv.wait_gate(&sid).await;
    assert_eq!(shown["tool"], "shell");
    assert_eq!(shown["route"]["quorum"], 2, "{shown:#}");
    let aid = shown["approval_id"].as_str().unwrap().to_owned();
    let counted = srv.decide(&sid, &aid, approve()).await.expect(202);
    assert_eq!(counted["quorum"], 2);
    // The admin again is the same person: still one of two.
    let again = srv.decide(&sid, &aid, approve()).await.expect(202);
    assert_eq!(again["approvals"].as_array().unwrap().len(), 1);
    srv.decide(&sid, &aid, json!({"decision": "deny", "reason": "not now"}))
        .await
        .expect(200);
    srv.wait_turn(&sid, &turn).await;
    assert!(!srv.workspace().join("ran.txt").exists());
}

/// The passkey step-up is asked of each person: under `require_passkey = "floor"` an approval
/// toward a floor card's quorum without its own assertion is refused, and nothing is counted.
#[tokio::test(flavor = "multi_thread")]
async fn each_approval_toward_a_quorum_needs_its_own_passkey() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let config = format!(
        "[server]\npublic_url = \"{PUBLIC_URL}\"\n[auth.oidc]\nissuer = \"{}\"\nclient_id = \"{CLIENT_ID}\"\nclient_secret_env = \"{SECRET_ENV}\"\n[approvals]\nrequire_passkey = \"floor\"\n[[approvals.route]]\nwhen = \"floor\"\napprovers = [\"group:maintainers\"]\nquorum = 2\n",
        idp.issuer
    );
    let srv = TestServer::configured(&config).await;
    srv.post(
        "/api/v1/people",
        json!({"email": "alice@example.test", "roles": ["approver"], "groups": ["maintainers"]}),
    )
    .await
    .expect(201);
    let alice = sign_in(&srv, "alice").await.session.unwrap();
    let (sid, aid) = open(&srv, "codex", "Bash", json!({"command": "cat .env"})).await;
    card(&srv, &sid).await;
    answer(&srv, &alice, &sid, &aid, approve())
        .await
        .expect_error(403, "passkey_required");
    let waiting = card(&srv, &sid).await;
    assert!(
        waiting["route_state"]["approvals"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{waiting:#}"
    );
    let audit = audit_of(&srv, &aid).await;
    assert!(
        !audit.iter().any(|(_, action)| action == "approval_given"),
        "{audit:?}"
    );
}
