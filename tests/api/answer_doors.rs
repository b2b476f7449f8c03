//! An adversarial review of the doors an answer comes through (the REST route, the page's
//! `decide` server function, the passkey-options route), in spellings of an attacker's own: a
//! body field only the server may set, a phone's token picking the mode a plan runs in, one
//! session answered under several spellings of its id, and a page on another site writing
//! through a server function or reading the change stream. Each test passing means the
//! defence held.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

/// A named token of `scope`; its secret.
async fn token(ts: &TestServer, name: &str, scope: &str) -> String {
    let made = ts
        .post("/api/v1/tokens", json!({"name": name, "scope": scope}))
        .await
        .expect(201);
    made["token"].as_str().unwrap().to_owned()
}

/// The session's resolutions of `aid`, from its log.
async fn resolutions_of(ts: &TestServer, sid: &str, aid: &str) -> Vec<Value> {
    events(&ts.snapshot(sid).await)
        .into_iter()
        .filter(|e| e["type"] == "approval_resolved" && e["approval_id"] == aid)
        .collect()
}

/// A body may not carry what the server sets (the surface `via`, who answered, the passkey's
/// name, a passkey as bare text): every door refuses it as a shape error and answers nothing.
/// Then a phone's token naming a browser tab's `client_id` is still recorded as the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_only_fields_in_an_answer_are_refused_at_every_door() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "run: echo hi > hi.txt", None).await;
    let gate = aid(&ts.wait_gate(&sid).await);
    let forged = [
        json!({"decision": "approve", "via": "push"}),
        json!({"decision": "approve", "actor": "browser"}),
        json!({"decision": "approve", "answered_by": "rule"}),
        json!({"decision": "approve", "passkey": "pk1.abc.def"}),
        json!({"decision": "approve", "passkey": {"ceremony": "c", "credential": {}, "name": "mine"}}),
        json!({"decision": "approve", "passkey_name": "mine"}),
        json!({"decision": "approve", "rule_scope": "workspace"}),
    ];
    let route = format!("/api/v1/sessions/{sid}/approvals/{gate}");
    for body in &forged {
        ts.post(&route, body.clone())
            .await
            .expect_error(400, "invalid_request");
        let fn_answer = ts
            .post(
                "/api/ui/decide",
                json!({"session_id": sid, "approval_id": gate, "input": body}),
            )
            .await;
        assert!(fn_answer.status.as_u16() >= 400, "{body}: {fn_answer:?}");
        let options = ts.post(&format!("{route}/passkey"), body.clone()).await;
        let refused = options.expect_error(400, "invalid_request");
        assert!(
            refused.to_string().contains("invalid request body"),
            "{body}: the options route read it: {refused}"
        );
    }
    ts.assert_still_pending(&sid, &gate).await;

    let phone = Api::new(&ts.base).with_token(&token(&ts, "phone", "approve").await);
    phone
        .post(&route, json!({"decision": "approve", "client_id": "tab-1"}))
        .await
        .expect(200);
    let recorded = resolutions_of(&ts, &sid, &gate).await;
    assert_eq!(recorded.len(), 1, "{recorded:#?}");
    assert_eq!(recorded[0]["actor"], "token:phone", "{recorded:#?}");
    assert!(recorded[0]["via"].is_null(), "{recorded:#?}");
    assert!(recorded[0]["passkey"].is_null(), "{recorded:#?}");
}

/// A phone's `approve` token approves a plan as proposed but may not pick the mode it runs
/// in (changing the session's mode is an admin's): `yolo` or `auto_edit` on a card that
/// proposes `ask` is refused and answers nothing, whether or not the step-up covers the card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approve_token_cannot_pick_the_mode_a_plan_runs_in() {
    for setting in ["off", "all"] {
        let config = format!("[approvals]\nrequire_passkey = \"{setting}\"\n");
        let ts = TestServer::configured(&config).await;
        let phone = Api::new(&ts.base).with_token(&token(&ts, "phone", "approve").await);
        let sid = ts.create_id(json!({"approval_mode": "plan"})).await;
        ts.send_msg(&sid, "propose plan: tidy the notes", None)
            .await;
        let card = ts.wait_gate(&sid).await;
        assert_eq!(card["execution_mode"], "ask", "{setting}: {card}");
        let route = format!("/api/v1/sessions/{sid}/approvals/{}", aid(&card));
        for looser in ["yolo", "auto_edit"] {
            let refused = phone
                .post(
                    &route,
                    json!({"decision": "approve", "execution_mode": looser}),
                )
                .await
                .expect_error(403, "forbidden");
            assert!(
                refused.to_string().contains("not pick the mode"),
                "{setting} {looser}: {refused}"
            );
        }
        ts.assert_still_pending(&sid, &aid(&card)).await;
        let snap = ts.snapshot(&sid).await;
        assert_eq!(snap["session"]["approval_mode"], "plan", "{setting}");
        if setting == "off" {
            // As proposed, the phone's answer stands, and the plan runs in what it proposed.
            phone
                .post(
                    &route,
                    json!({"decision": "approve", "execution_mode": "ask"}),
                )
                .await
                .expect(200);
            let recorded = resolutions_of(&ts, &sid, &aid(&card)).await;
            assert_eq!(recorded[0]["execution_mode"], "ask", "{recorded:#?}");
        }
    }
}

/// However the session's UUID is spelled in a path or an argument, it is one session: the
/// first answer (under upper case) stands, the page's under braces loses the race, a third
/// under no hyphens is `409`, and the log holds one resolution under the canonical id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_answered_under_several_spellings_of_its_id_is_one_session() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "run: echo once > once.txt", None).await;
    let gate = aid(&ts.wait_gate(&sid).await);
    let upper = sid.to_uppercase();
    let braced = format!("{{{sid}}}");
    let bare = sid.replace('-', "");

    let seen = ts
        .get(&format!("/api/v1/sessions/urn:uuid:{sid}"))
        .await
        .expect(200);
    assert_eq!(seen["session"]["id"], sid.as_str(), "{seen}");
    ts.decide(&upper, &gate, json!({"decision": "approve"}))
        .await
        .expect(200);
    let lost = ts
        .post(
            "/api/ui/decide",
            json!({"session_id": braced, "approval_id": gate, "input": {"decision": "deny"}}),
        )
        .await
        .expect(200);
    assert_eq!(lost["outcome"], "lost", "{lost}");
    assert_eq!(lost["resolution"]["decision"], "approve", "{lost}");
    let third = ts.decide(&bare, &gate, json!({"decision": "deny"})).await;
    assert_eq!(third.status.as_u16(), 409, "{third:?}");

    let recorded = resolutions_of(&ts, &sid, &gate).await;
    assert_eq!(recorded.len(), 1, "{recorded:#?}");
    let listed = ts.list().await;
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(listed[0]["id"], sid.as_str());
}

/// A page on another site, with the browser's cookie: a write through the `decide` server
/// function is `403 csrf` and answers nothing; a GET of it answers nothing either; the change
/// stream it may open (a GET is not a write) grants it no CORS read, and no preflight does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_site_cannot_answer_through_the_page_or_read_the_change_stream() {
    let ts = TestServer::start().await;
    let login = send(ts.anon(Method::GET, &format!("/login?token={}", ts.token))).await;
    let cookie = login
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .unwrap()
        .to_owned();
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "run: echo csrf > csrf.txt", None).await;
    let gate = aid(&ts.wait_gate(&sid).await);
    let answer = json!({"session_id": sid, "approval_id": gate, "input": {"decision": "approve"}});
    let hostile: [(&str, &str); 3] = [
        ("sec-fetch-site", "cross-site"),
        ("origin", "http://evil.example"),
        ("origin", "null"),
    ];
    for (name, value) in hostile {
        let r = send(
            ts.anon(Method::POST, "/api/ui/decide")
                .header("cookie", &cookie)
                .header(name, value)
                .header("content-type", "text/plain")
                .body(answer.to_string()),
        )
        .await;
        r.expect_error(403, "csrf");
    }
    let query =
        format!("/api/ui/decide?session_id={sid}&approval_id={gate}&input[decision]=approve");
    let got = send(ts.anon(Method::GET, &query).header("cookie", &cookie)).await;
    assert!(!got.status.is_success(), "{got:?}");
    ts.assert_still_pending(&sid, &gate).await;

    let stream = response(
        ts.anon(Method::GET, "/api/v1/changes")
            .header("cookie", &cookie)
            .header("origin", "http://evil.example")
            .header("sec-fetch-site", "cross-site"),
    )
    .await;
    assert!(
        stream
            .headers()
            .get("access-control-allow-origin")
            .is_none(),
        "{:?}",
        stream.headers()
    );
    drop(stream);
    let preflight = send(
        ts.anon(Method::OPTIONS, "/api/v1/changes")
            .header("origin", "http://evil.example")
            .header("access-control-request-method", "GET"),
    )
    .await;
    assert!(
        preflight.header("access-control-allow-origin").is_none(),
        "{preflight:?}"
    );
}

/// A browser logged in with a phone's `approve` token is that token, not the admin's browser:
/// its no-script form answer (a form can carry no `client_id` or `via`) is recorded as
/// `token:phone`; it follows the change stream, and revoking the token ends that stream and
/// its cookie with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_logged_in_with_a_phone_token_answers_and_follows_as_that_token() {
    let ts = TestServer::start().await;
    let secret = token(&ts, "phone", "approve").await;
    let login = send(ts.anon(Method::GET, &format!("/login?token={secret}"))).await;
    let cookie = login
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .unwrap()
        .to_owned();
    let mut stream = Sse::open(
        ts.anon(Method::GET, "/api/v1/changes")
            .header("cookie", &cookie),
    )
    .await
    .unwrap_or_else(|r| panic!("change stream refused: {r:?}"));

    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "run: echo form > form.txt", None).await;
    let card = ts.wait_gate(&sid).await;
    let gate = aid(&card);
    let forged = send(
        ts.anon(Method::POST, "/forms/decide")
            .header("cookie", &cookie)
            .header("sec-fetch-site", "same-origin")
            .form(&[
                ("session_id", sid.as_str()),
                ("approval_id", gate.as_str()),
                ("digest", card["digest"].as_str().unwrap()),
                ("decision", "approve"),
                ("back", "session"),
                ("via", "push"),
            ]),
    )
    .await;
    assert!(!forged.status.is_success(), "{forged:?}");
    assert!(!forged.status.is_redirection(), "{forged:?}");
    ts.assert_still_pending(&sid, &gate).await;
    let answered = send(
        ts.anon(Method::POST, "/forms/decide")
            .header("cookie", &cookie)
            .header("sec-fetch-site", "same-origin")
            .form(&[
                ("session_id", sid.to_uppercase().as_str()),
                ("approval_id", gate.as_str()),
                ("digest", card["digest"].as_str().unwrap()),
                ("decision", "approve"),
                ("back", "session"),
            ]),
    )
    .await;
    assert_eq!(answered.status.as_u16(), 303, "{answered:?}");
    let recorded = resolutions_of(&ts, &sid, &gate).await;
    assert_eq!(recorded.len(), 1, "{recorded:#?}");
    assert_eq!(recorded[0]["actor"], "token:phone", "{recorded:#?}");
    assert!(recorded[0]["via"].is_null(), "{recorded:#?}");
    stream
        .until(SOON, |f| {
            f.json()["kind"] == "approval_resolved" && f.json()["session_id"] == sid.as_str()
        })
        .await;

    ts.delete("/api/v1/tokens/phone").await.expect(204);
    assert!(
        stream.ends_within(SOON).await,
        "the change stream outlived the token its browser logged in with"
    );
    let after = send(
        ts.anon(Method::GET, "/api/v1/changes")
            .header("cookie", &cookie),
    )
    .await;
    assert_eq!(after.status.as_u16(), 401, "{after:?}");
}

/// The page's `decide` takes its answer in `input` alone: a server-only field sent beside it,
/// at the top level of the arguments, is refused or ignored — never recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_only_fields_beside_the_page_s_answer_record_nothing() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "run: echo beside > beside.txt", None)
        .await;
    let gate = aid(&ts.wait_gate(&sid).await);
    let r = ts
        .post(
            "/api/ui/decide",
            json!({"session_id": sid, "approval_id": gate, "input": {"decision": "deny"},
                   "via": "push", "actor": "token:someone", "passkey": "pk1.a.b"}),
        )
        .await;
    if r.status.is_success() {
        let recorded = resolutions_of(&ts, &sid, &gate).await;
        assert_eq!(recorded.len(), 1, "{recorded:#?}");
        assert_eq!(recorded[0]["actor"], "token:admin", "{recorded:#?}");
        assert!(recorded[0]["via"].is_null(), "{recorded:#?}");
        assert!(recorded[0]["passkey"].is_null(), "{recorded:#?}");
    } else {
        ts.assert_still_pending(&sid, &gate).await;
    }
}

/// An agent's `gates` token, trying other spellings of the answer routes' paths (a trailing
/// slash, a doubled slash, a percent-encoded letter, upper case), reaches no door that
/// answers: every one is refused and the card still waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gates_token_reaches_no_answer_under_another_spelling_of_its_path() {
    let ts = TestServer::start().await;
    let agent = Api::new(&ts.base).with_token(&token(&ts, "hook", "gates").await);
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "run: echo path > path.txt", None).await;
    let gate = aid(&ts.wait_gate(&sid).await);
    let answer = json!({"decision": "approve"});
    let page_answer = json!({"session_id": sid, "approval_id": gate, "input": answer});
    let route = format!("/api/v1/sessions/{sid}/approvals/{gate}");
    let tries = [
        ("/api/ui/decide/".to_owned(), &page_answer),
        ("/api/ui//decide".to_owned(), &page_answer),
        ("/api/ui/decid%65".to_owned(), &page_answer),
        ("/API/UI/DECIDE".to_owned(), &page_answer),
        ("/api//ui/decide".to_owned(), &page_answer),
        (format!("{route}/"), &answer),
        (route.replace("/approvals/", "//approvals/"), &answer),
        (route.replace("approvals", "approv%61ls"), &answer),
        (route.replace("/api/v1/", "/api/v1/./"), &answer),
    ];
    for (path, body) in tries {
        let r = agent.post(&path, body.clone()).await;
        assert!(!r.status.is_success(), "{path}: {r:?}");
    }
    ts.assert_still_pending(&sid, &gate).await;
}
