//! ntfy's Approve and Deny (an answer capability on an HTTP action button) and the passkey
//! step-up's refusals through every door a token has (docs/api.md 13.3, 13.5). The WebAuthn
//! ceremonies themselves run in Chromium (`end2end/tests/passkey.spec.ts`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

/// A stand-in for an ntfy server: records every JSON message posted to its root.
struct Ntfy {
    base: String,
    received: Arc<Mutex<Vec<Value>>>,
}

impl Ntfy {
    async fn start() -> Ntfy {
        let received: Arc<Mutex<Vec<Value>>> = Arc::default();
        let app = axum::Router::new()
            .fallback(
                |State(seen): State<Arc<Mutex<Vec<Value>>>>, body: axum::body::Bytes| async move {
                    if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                        seen.lock().unwrap().push(v);
                    }
                    "{}"
                },
            )
            .with_state(received.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ntfy {
            base: format!("http://{addr}"),
            received,
        }
    }

    async fn wait_message(&self, approval_id: &str) -> Value {
        poll_until("the ntfy message", Duration::from_secs(20), async || {
            let seen = self.received.lock().unwrap().clone();
            seen.into_iter()
                .find(|m| {
                    m["click"]
                        .as_str()
                        .is_some_and(|c| c.ends_with(approval_id))
                })
                .ok_or("not yet")
        })
        .await
    }
}

fn ntfy_config(ntfy: &Ntfy, extra: &str) -> String {
    format!(
        "[notify]\nwebhook_url = \"{}/cards-topic\"\nformat = \"ntfy\"\npush_test_endpoints = true\n{extra}",
        ntfy.base
    )
}

/// An ntfy button's request: the URL and body the action names, no credential.
async fn tap(ts: &TestServer, action: &Value) -> Resp {
    assert_eq!(action["action"], "http");
    assert_eq!(action["method"], "POST");
    let url = action["url"].as_str().unwrap();
    let path = url
        .split_once("/api/v1/")
        .map(|(_, p)| format!("/api/v1/{p}"))
        .unwrap();
    let body: Value = serde_json::from_str(action["body"].as_str().unwrap()).unwrap();
    send(ts.anon(Method::POST, &path).json(&body)).await
}

/// The ntfy message of a command card it shows whole carries Approve and Deny on a capability
/// for that card and topic; a tap answers as `ntfy` via push, once; the message holds no
/// credential. A write card's message (which does not show what it would write) has only the
/// link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ntfy_button_answers_its_card_once() {
    let ntfy = Ntfy::start().await;
    let ts = TestServer::configured(&ntfy_config(&ntfy, "")).await;
    let write_sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&write_sid, "write notes/ntfy.md: hello", None)
        .await;
    let write = ts.wait_gate(&write_sid).await;
    assert_eq!(write["tool"], "write_file", "{write}");
    let write_aid = aid(&write);
    let message = ntfy.wait_message(&write_aid).await;
    let actions = message["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{message}");
    assert_eq!(actions[0]["action"], "view");
    assert!(!message.to_string().contains("/push/answers/"), "{message}");

    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "run: echo hello > ntfy.md", None).await;
    let card = ts.wait_gate(&sid).await;
    assert_eq!(card["tool"], "shell", "{card}");
    let aid = aid(&card);
    let message = ntfy.wait_message(&aid).await;
    assert_eq!(message["topic"], "cards-topic");
    let text = message.to_string();
    assert!(!text.contains(TOKEN), "no token in an ntfy message: {text}");
    let actions = message["actions"].as_array().unwrap().clone();
    assert_eq!(
        actions
            .iter()
            .map(|a| a["label"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["Approve", "Deny", "Open the card"]
    );
    let approved = tap(&ts, &actions[0]).await.expect(200);
    assert_eq!(approved["actor"], "ntfy");
    assert_eq!(approved["via"], "push");
    // Once: the second tap (Deny, or Approve again) finds it answered.
    tap(&ts, &actions[1])
        .await
        .expect_error(409, "already_resolved");
    tap(&ts, &actions[0])
        .await
        .expect_error(409, "already_resolved");
    let resolved = ts
        .wait_event(&sid, "resolved", |e| e["type"] == "approval_resolved")
        .await;
    assert_eq!(resolved["actor"], "ntfy");
    assert_eq!(resolved["decision"], "approve");
    wait_file(&ts.ws("ntfy.md"), "hello\n").await;
    // The write card still waits, unanswered and unwritten.
    let pending = ts.get("/api/v1/approvals").await.expect(200);
    assert!(pending.to_string().contains(&write_aid), "{pending}");
    assert!(!ts.ws("notes/ntfy.md").exists());
}

/// Moving notifications to another topic ends the capabilities sent to the old one; a floor
/// card's ntfy message has only the link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ntfy_capability_ends_with_its_topic_and_floor_cards_get_no_buttons() {
    let ntfy = Ntfy::start().await;
    let ts = TestServer::configured(&ntfy_config(&ntfy, "")).await;
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "write .env: SECRET=1", None).await;
    let floor = ts.wait_gate(&sid).await;
    let message = ntfy.wait_message(&aid(&floor)).await;
    let actions = message["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{message}");
    assert_eq!(actions[0]["action"], "view");
    ts.post(
        &format!("/api/v1/sessions/{sid}/approvals/{}", aid(&floor)),
        json!({"decision": "deny"}),
    )
    .await
    .expect(200);

    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "run: echo hello > a.md", None).await;
    let card = ts.wait_gate(&sid).await;
    assert_eq!(card["tool"], "shell", "{card}");
    let message = ntfy.wait_message(&aid(&card)).await;
    let approve = message["actions"][0].clone();
    assert_eq!(approve["label"], "Approve", "{message}");
    // The config file now sends to another topic (on `localhost`, so the masked view shows
    // when it is in force): the old button no longer answers.
    let config = ts.root().join("config.toml");
    let other = ntfy.base.replace("127.0.0.1", "localhost");
    std::fs::write(
        &config,
        format!(
            "[notify]\nwebhook_url = \"{other}/other-topic\"\nformat = \"ntfy\"\npush_test_endpoints = true\n"
        ),
    )
    .unwrap();
    poll_until(
        "the new topic in force",
        Duration::from_secs(20),
        async || {
            let view = ts.get("/api/v1/config").await.expect(200).to_string();
            if view.contains("set: localhost/") {
                Ok(())
            } else {
                Err("not reloaded yet")
            }
        },
    )
    .await;
    tap(&ts, &approve)
        .await
        .expect_error(410, "capability_ended");
    let pending = ts.get("/api/v1/approvals").await.expect(200);
    assert!(
        pending.to_string().contains(&aid(&card)),
        "the card still waits"
    );
    assert!(!ts.ws("a.md").exists());
}

/// With `require_passkey = "floor"`, a floor card is refused to the bearer, the UI's server
/// function, the no-script form and a made-up capability alike, and changes nothing; an
/// ordinary card stays answerable with the bearer; the setting cannot be changed over the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_covered_card_is_refused_without_a_passkey_through_every_door() {
    let ts = TestServer::configured("[approvals]\nrequire_passkey = \"floor\"\n").await;
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "write .env: SECRET=1", None).await;
    let floor = ts.wait_gate(&sid).await;
    let faid = aid(&floor);
    let digest = floor["digest"].as_str().unwrap().to_owned();
    for decision in ["approve", "deny"] {
        ts.post(
            &format!("/api/v1/sessions/{sid}/approvals/{faid}"),
            json!({"decision": decision, "digest": digest}),
        )
        .await
        .expect_error(403, "passkey_required");
    }
    // A made-up assertion is refused, not taken as one.
    ts.post(
        &format!("/api/v1/sessions/{sid}/approvals/{faid}"),
        json!({"decision": "approve", "passkey": {"ceremony": "pk1.abc.def", "credential": {}}}),
    )
    .await
    .expect_error(403, "passkey_refused");
    // The UI's server function.
    ts.post(
        "/api/ui/decide",
        json!({"session_id": sid, "approval_id": faid, "input": {"decision": "approve"}}),
    )
    .await
    .expect_error(403, "passkey_required");
    // The no-script form answers with a page, and answers nothing.
    let _ = send(ts.req(Method::POST, "/forms/decide").form(&[
        ("session_id", sid.as_str()),
        ("approval_id", faid.as_str()),
        ("decision", "approve"),
    ]))
    .await;
    // Options for a ceremony need a registered passkey (and a domain: this is 127.0.0.1).
    let options = ts
        .post(
            &format!("/api/v1/sessions/{sid}/approvals/{faid}/passkey"),
            json!({}),
        )
        .await;
    assert_eq!(options.status.as_u16(), 400, "{options:?}");
    // The setting is protected.
    ts.put(
        "/api/v1/config/approvals.require_passkey",
        json!({"value": "off"}),
    )
    .await
    .expect_error(403, "protected_key");
    let pending = ts.get("/api/v1/approvals").await.expect(200);
    assert!(
        pending.to_string().contains(&faid),
        "the floor card still waits"
    );
    assert!(!ts.ws(".env").exists());
    // An ordinary card is answered with the bearer alone.
    let other = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&other, "write notes/plain.md: hello", None)
        .await;
    let plain = ts.wait_gate(&other).await;
    let approved = ts
        .post(
            &format!("/api/v1/sessions/{other}/approvals/{}", aid(&plain)),
            json!({"decision": "approve"}),
        )
        .await
        .expect(200);
    assert_eq!(approved["decision"], "approve");
}

/// Passkeys are an admin's to manage: an approve token cannot list, start or finish a
/// registration; an admin's start needs a domain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_admin_manages_passkeys() {
    let ts = TestServer::start().await;
    let created = ts
        .post(
            "/api/v1/tokens",
            json!({"name": "phone", "scope": "approve"}),
        )
        .await
        .expect(201);
    let phone = Api::new(&ts.base).with_token(str_of(&created, "token"));
    phone
        .get("/api/v1/passkeys")
        .await
        .expect_error(403, "forbidden");
    phone
        .post("/api/v1/passkeys/registrations", json!({"name": "mine"}))
        .await
        .expect_error(403, "forbidden");
    phone
        .post(
            "/api/v1/passkeys",
            json!({"ceremony": "x", "credential": {}}),
        )
        .await
        .expect_error(403, "forbidden");
    // 127.0.0.1 is no domain: a passkey cannot be bound to it.
    let refused = ts
        .post("/api/v1/passkeys/registrations", json!({"name": "laptop"}))
        .await
        .expect_error(400, "invalid_request");
    assert!(refused.to_string().contains("localhost"), "{refused}");
    // The first passkey is trusted on first use: a bearer (the admin token here; a program can
    // hold one) may not register it, only a browser logged in with a login link or the token.
    let by_bearer = send(
        ts.req(Method::POST, "/api/v1/passkeys/registrations")
            .header("host", format!("localhost:{}", ts.addr.port()))
            .json(&json!({"name": "laptop"})),
    )
    .await
    .expect_error(403, "forbidden");
    assert!(by_bearer.to_string().contains("login link"), "{by_bearer}");
    // Through a name, from a browser, the options come.
    let login = send(ts.anon(Method::GET, &format!("/login?token={TOKEN}"))).await;
    let cookie = login
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let options = send(
        ts.anon(Method::POST, "/api/v1/passkeys/registrations")
            .header("host", format!("localhost:{}", ts.addr.port()))
            .header("cookie", &cookie)
            .header("sec-fetch-site", "same-origin")
            .json(&json!({"name": "laptop"})),
    )
    .await
    .expect(200);
    assert_eq!(options["options"]["publicKey"]["rp"]["id"], "localhost");
    assert!(options["ceremony"].as_str().unwrap().starts_with("pk2."));
    assert_eq!(ts.get("/api/v1/passkeys").await.expect(200), json!([]));
}

/// A capability travels only over TLS: an ntfy server reached over plain http (here without
/// the loopback test setting) gets the card's link and no buttons, even for a command card
/// whose notification would otherwise answer it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ntfy_server_over_plain_http_gets_no_buttons() {
    let ntfy = Ntfy::start().await;
    let ts = TestServer::configured(&format!(
        "[notify]\nwebhook_url = \"{}/cards-topic\"\nformat = \"ntfy\"\n",
        ntfy.base
    ))
    .await;
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "run: echo hello > plain.md", None).await;
    let card = ts.wait_gate(&sid).await;
    assert_eq!(card["tool"], "shell", "{card}");
    let message = ntfy.wait_message(&aid(&card)).await;
    let actions = message["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{message}");
    assert_eq!(actions[0]["action"], "view");
    assert!(!message.to_string().contains("/push/answers/"));
}

/// Writes `config` over the server's config file and applies it (as the file watcher would).
async fn reconfigure(ts: &TestServer, config: &str) {
    std::fs::write(ts.root().join("config.toml"), config).unwrap();
    ts.core().reload_config().await;
}

/// The card a message leaves waiting in `sid`, or the refusal its turn ended with.
async fn outcome_of(ts: &TestServer, sid: &str, text: &str) -> (String, Result<Value, String>) {
    let turn = ts.send_msg(sid, text, None).await;
    let snap = ts
        .wait_snapshot(sid, "a card or the turn's end", |s| {
            s["pending"].as_array().is_some_and(|p| !p.is_empty())
                || events(s)
                    .iter()
                    .any(|e| e["type"] == "turn_finished" && e["turn_id"] == turn)
        })
        .await;
    let outcome = match snap["pending"].as_array().and_then(|p| p.first()) {
        Some(card) => Ok(card.clone()),
        None => Err(events(&snap)
            .iter()
            .filter(|e| e["type"] == "tool_result" && e["turn_id"] == turn)
            .map(|e| e["status"].to_string())
            .collect()),
    };
    (turn, outcome)
}

/// With `require_passkey = "all"`, no session runs a consequential call without a card,
/// whatever mode it was put in before the setting: its stored looser mode acts as `ask` (the
/// card needs a passkey), plan still refuses; an outside agent's session in yolo asks too; no
/// request may choose a looser mode; the stored mode is kept for when the setting goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_step_up_holds_in_every_mode_the_session_was_in() {
    let ts = TestServer::configured("[approvals]\nrequire_passkey = \"off\"\n").await;
    let mut sessions = Vec::new();
    for mode in ["plan", "ask", "auto_edit", "yolo"] {
        sessions.push((mode, ts.create_id(json!({"approval_mode": mode})).await));
    }
    let agent = {
        let made = ts
            .post("/api/v1/tokens", json!({"name": "agent", "scope": "gates"}))
            .await
            .expect(201);
        Api::new(&ts.base).with_token(str_of(&made, "token"))
    };
    let bash = |command: &str| {
        json!({"source": "claude-code", "external_session": "yolo-outside", "cwd": "/home/me/app",
               "tool": {"name": "Bash", "input": {"command": command}}})
    };
    let first = agent
        .post("/api/v1/gates", bash("echo one"))
        .await
        .expect(201);
    ts.put(
        &format!("/api/v1/sessions/{}/mode", str_of(&first, "session_id")),
        json!({"approval_mode": "yolo"}),
    )
    .await
    .expect(200);
    let ran = agent
        .post("/api/v1/gates", bash("echo two"))
        .await
        .expect(201);
    assert_eq!(
        ran["status"], "approved",
        "yolo runs it while the setting is off: {ran}"
    );

    reconfigure(&ts, "[approvals]\nrequire_passkey = \"all\"\n").await;
    for (mode, sid) in &sessions {
        for (text, file) in [
            ("run: echo hi > ran.txt", "ran.txt"),
            ("write wrote.md: hi", "wrote.md"),
        ] {
            let (turn, outcome) = outcome_of(&ts, sid, text).await;
            match outcome {
                Ok(card) => {
                    assert_ne!(*mode, "plan", "{text}: {card}");
                    assert_eq!(card["reason"], "mode", "{mode} {text}: {card}");
                    let aid = aid(&card);
                    ts.post(
                        &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
                        json!({"decision": "approve"}),
                    )
                    .await
                    .expect_error(403, "passkey_required");
                    ts.post(&format!("/api/v1/sessions/{sid}/cancel"), json!({}))
                        .await;
                    ts.wait_released(sid, &turn).await;
                }
                Err(statuses) => {
                    assert_eq!(
                        *mode, "plan",
                        "{text} ran with no card in {mode}: {statuses}"
                    );
                    assert!(statuses.contains("refused"), "{statuses}");
                }
            }
            assert!(!ts.ws(file).exists(), "{mode}: {text} ran");
        }
        // The stored mode is the person's, kept; no request may set a looser one now.
        let snap = ts.get(&format!("/api/v1/sessions/{sid}")).await.expect(200);
        assert_eq!(snap["session"]["approval_mode"], *mode, "{snap}");
        for looser in ["auto_edit", "yolo"] {
            ts.put(
                &format!("/api/v1/sessions/{sid}/mode"),
                json!({"approval_mode": looser}),
            )
            .await
            .expect_error(403, "forbidden");
        }
    }
    // The outside agent's session, still stored in yolo, now asks.
    let asked = agent
        .post("/api/v1/gates", bash("echo three"))
        .await
        .expect(201);
    assert_eq!(asked["status"], "pending", "{asked}");
}

/// A config that would start sessions in a mode the step-up forbids is refused at load, with
/// an error naming both keys; setting `approvals.default_mode` to one over the API is refused
/// too, and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_mode_the_step_up_forbids_is_refused_naming_both_keys() {
    for mode in ["auto_edit", "yolo"] {
        let text = format!("[approvals]\nrequire_passkey = \"all\"\ndefault_mode = \"{mode}\"\n");
        let err = countersign::server::config::Config::parse(&text, std::path::Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("approvals.default_mode") && err.contains("approvals.require_passkey"),
            "{err}"
        );
    }
    let ts = TestServer::configured("[approvals]\nrequire_passkey = \"all\"\n").await;
    // Over the API the key is protected; the local CLI's `config set` checks the whole file.
    ts.put(
        "/api/v1/config/approvals.default_mode",
        json!({"value": "yolo"}),
    )
    .await
    .expect_error(403, "protected_key");
    let file = ts.root().join("config.toml");
    let before = std::fs::read_to_string(&file).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_countersign"))
        .args([
            "config",
            "set",
            "approvals.default_mode",
            "\"yolo\"",
            "--config",
        ])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("approvals.default_mode") && stderr.contains("approvals.require_passkey"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        before,
        "nothing written"
    );
    let sid = ts.create_id(json!({})).await;
    let snap = ts.get(&format!("/api/v1/sessions/{sid}")).await.expect(200);
    assert_eq!(snap["session"]["approval_mode"], "ask");
}

/// A plan card cannot put the session in a mode the step-up forbids: picking `yolo` on it is
/// refused (before any passkey is asked for), and the session stays in plan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_card_cannot_choose_a_mode_the_step_up_forbids() {
    let ts = TestServer::configured("[approvals]\nrequire_passkey = \"all\"\n").await;
    let sid = ts.create_id(json!({"approval_mode": "plan"})).await;
    ts.send_msg(&sid, "propose plan: tidy the notes", None)
        .await;
    let card = ts.wait_gate(&sid).await;
    for looser in ["yolo", "auto_edit"] {
        let refused = ts
            .post(
                &format!("/api/v1/sessions/{sid}/approvals/{}", aid(&card)),
                json!({"decision": "approve", "execution_mode": looser}),
            )
            .await
            .expect_error(403, "forbidden");
        assert!(refused.to_string().contains("require_passkey"), "{refused}");
    }
    ts.assert_still_pending(&sid, &aid(&card)).await;
    let snap = ts.get(&format!("/api/v1/sessions/{sid}")).await.expect(200);
    assert_eq!(snap["session"]["approval_mode"], "plan");
}

/// Under `"all"` a standing rule answers nothing — one made before the setting included —, and
/// a call the policy let run unasked before the setting changed is decided again when it gets
/// its turn to run: refused, not run (the agent may ask again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_and_calls_already_let_run_are_held_to_the_step_up() {
    let ts = TestServer::configured(
        "[approvals]\nrequire_passkey = \"off\"\n[tools]\nmax_parallel = 1\n",
    )
    .await;
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    let first = ts.send_msg(&sid, "run: echo first > first.txt", None).await;
    let card = ts.wait_gate(&sid).await;
    ts.post(
        &format!("/api/v1/sessions/{sid}/approvals/{}", aid(&card)),
        json!({"decision": "allow_always", "rule": {"scope": "workspace", "pattern": "echo *"}}),
    )
    .await
    .expect(200);
    ts.wait_released(&sid, &first).await;
    assert!(ts.ws("first.txt").exists());
    reconfigure(
        &ts,
        "[approvals]\nrequire_passkey = \"all\"\n[tools]\nmax_parallel = 1\n",
    )
    .await;
    let (_, outcome) = outcome_of(&ts, &sid, "run: echo ruled > ruled.txt").await;
    let card = outcome.expect("a card, not the rule");
    assert_eq!(card["reason"], "mode", "{card}");
    assert!(!ts.ws("ruled.txt").exists());

    // A yolo turn whose second call waits for the one slot while the setting changes (the
    // first holds it long enough for a reload under a loaded machine).
    reconfigure(
        &ts,
        "[approvals]\nrequire_passkey = \"off\"\n[tools]\nmax_parallel = 1\n",
    )
    .await;
    let other = ts.create_id(json!({"approval_mode": "yolo"})).await;
    let turn = ts
        .send_msg(
            &other,
            "parallel:\nrun: sleep 6\nrun: echo late > late.txt",
            None,
        )
        .await;
    ts.wait_event(&other, "the first call to start", |e| {
        e["type"] == "tool_started"
    })
    .await;
    reconfigure(
        &ts,
        "[approvals]\nrequire_passkey = \"all\"\n[tools]\nmax_parallel = 1\n",
    )
    .await;
    let snap = ts.wait_released(&other, &turn).await;
    let results: Vec<Value> = events(&snap)
        .into_iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 2, "{results:#?}");
    assert_eq!(results[1]["status"], "refused", "{results:#?}");
    assert!(str_of(&results[1], "output").contains("require_passkey"));
    assert!(!ts.ws("late.txt").exists(), "it ran with no card");
}

/// A session stored in yolo before plan mode: while `require_passkey = "all"` holds, its plan
/// card proposes `ask` (its summary and `execution_mode`), and the page's picker offers only
/// the modes the setting allows, starting on `ask`; with the setting off, the same session's
/// card proposes yolo and the picker offers it. Approving as proposed then asks for the passkey,
/// not for a mode the setting forbids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_card_proposes_and_offers_only_the_modes_the_step_up_allows() {
    let ts = TestServer::configured("[approvals]\nrequire_passkey = \"off\"\n").await;
    let sid = ts.create_id(json!({"approval_mode": "yolo"})).await;
    ts.put(
        &format!("/api/v1/sessions/{sid}/mode"),
        json!({"approval_mode": "plan"}),
    )
    .await
    .expect(200);
    let picker = async |ts: &TestServer| {
        let page = send(ts.req(Method::GET, &format!("/sessions/{sid}"))).await;
        assert_eq!(page.status.as_u16(), 200);
        let start = page
            .body
            .find("data-testid=\"execution-mode\"")
            .expect("the picker");
        let select = &page.body[start..];
        let select = select[..select.find("</select>").unwrap()].to_owned();
        let body = &page.body[page.body.find("<body").unwrap()..];
        let body = body[..body.find('>').unwrap()].to_owned();
        (select, body)
    };

    let turn = ts
        .send_msg(&sid, "propose plan: tidy the notes", None)
        .await;
    let card = ts.wait_gate(&sid).await;
    assert_eq!(card["summary"], "Plan: execute in Yolo mode", "{card}");
    assert_eq!(card["execution_mode"], "yolo");
    let (select, body) = picker(&ts).await;
    for mode in ["ask", "auto_edit", "yolo"] {
        assert!(select.contains(&format!("value=\"{mode}\"")), "{select}");
    }
    assert!(
        body.contains("data-modes=\"plan ask auto_edit yolo\""),
        "{body}"
    );
    ts.post(
        &format!("/api/v1/sessions/{sid}/approvals/{}", aid(&card)),
        json!({"decision": "deny"}),
    )
    .await
    .expect(200);
    ts.wait_turn(&sid, &turn).await;

    reconfigure(&ts, "[approvals]\nrequire_passkey = \"all\"\n").await;
    ts.send_msg(&sid, "propose plan: tidy the notes again", None)
        .await;
    let card = poll_until("the second plan card", SOON, async || {
        let pending = ts.inbox().await;
        pending
            .into_iter()
            .find(|c| c["session_id"] == sid.as_str())
            .ok_or("not yet")
    })
    .await;
    assert_eq!(card["summary"], "Plan: execute in Ask mode", "{card}");
    assert_eq!(card["execution_mode"], "ask");
    let (select, body) = picker(&ts).await;
    assert!(select.contains("value=\"ask\""), "{select}");
    for forbidden in ["auto_edit", "yolo"] {
        assert!(
            !select.contains(&format!("value=\"{forbidden}\"")),
            "{select}"
        );
    }
    assert!(body.contains("data-modes=\"plan ask\""), "{body}");
    // As proposed, and as the picker starts: the passkey is what is missing, nothing else.
    for answer in [
        json!({"decision": "approve"}),
        json!({"decision": "approve", "execution_mode": "ask"}),
    ] {
        ts.post(
            &format!("/api/v1/sessions/{sid}/approvals/{}", aid(&card)),
            answer,
        )
        .await
        .expect_error(403, "passkey_required");
    }
    ts.assert_still_pending(&sid, &aid(&card)).await;
}
