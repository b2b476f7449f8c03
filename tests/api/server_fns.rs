//! The UI's server functions (`/api/ui/*`): thin wrappers over the same core operations as the
//! REST routes, with the same checks (protocol.md preamble) and the same error body (Errors).

use countersign::server::provider::scripted::ScriptStep;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

async fn call(ts: &TestServer, name: &str, args: Value) -> Resp {
    send(ts.req(Method::POST, &format!("/api/ui/{name}")).json(&args)).await
}

#[tokio::test]
async fn server_functions_reach_the_same_core_operations() {
    let ts = TestServer::scripted([reply("from the UI")]).await;
    let s = call(&ts, "create_session", json!({})).await.expect(200);
    assert_session_shape(&s);
    assert_eq!(s["approval_mode"], "ask");
    let sid = s["id"].as_str().unwrap();
    let listed = call(&ts, "sessions", json!({})).await.expect(200);
    assert_eq!(listed, json!([s.clone()]));
    assert_eq!(json!(ts.list().await), listed);

    call(
        &ts,
        "set_mode",
        json!({"session_id": sid, "approval_mode": "plan"}),
    )
    .await
    .expect(200);
    let turn = call(
        &ts,
        "send_message",
        json!({"session_id": sid, "text": "hi", "approval_mode": "yolo"}),
    )
    .await
    .expect(200);
    let turn = turn.as_str().expect("turn id string").to_owned();
    let events = ts.wait_turn_events(sid, &turn).await;
    assert_eq!(
        types(&events),
        vec![
            "mode_changed",
            "mode_changed",
            "user_message",
            "assistant_message",
            "turn_finished"
        ]
    );
    assert_eq!(events[0]["source"], "user");
    assert_eq!(events[1]["source"], "message");
    let snap = call(&ts, "snapshot", json!({"session_id": sid}))
        .await
        .expect(200);
    assert_eq!(snap, ts.snapshot(sid).await);
    call(&ts, "delete_session", json!({"session_id": sid}))
        .await
        .expect(200);
    assert_eq!(ts.list().await, Vec::<Value>::new());
}

#[tokio::test]
async fn server_functions_refuse_what_the_rest_routes_refuse_and_change_nothing() {
    let ts = TestServer::scripted([ScriptStep::Stall]).await;
    let sid = ts.create_id(json!({})).await;
    let before = ts.state().await;
    // Each with the REST route's status and the protocol's error body.
    let refused: Vec<(&str, Value, u16, &str)> = vec![
        (
            "snapshot",
            json!({"session_id": unknown_sid()}),
            404,
            "unknown_session",
        ),
        (
            "snapshot",
            json!({"session_id": "nope"}),
            404,
            "unknown_session",
        ),
        (
            "delete_session",
            json!({"session_id": unknown_sid()}),
            404,
            "unknown_session",
        ),
        (
            "set_mode",
            json!({"session_id": sid, "approval_mode": "YOLO"}),
            400,
            "invalid_approval_mode",
        ),
        (
            "send_message",
            json!({"session_id": sid, "text": "", "approval_mode": "ask"}),
            400,
            "invalid_message",
        ),
        (
            "send_message",
            json!({"session_id": sid, "text": "x".repeat(32_769), "approval_mode": "ask"}),
            400,
            "invalid_message",
        ),
        (
            "send_message",
            json!({"session_id": sid, "text": "hi", "approval_mode": "root"}),
            400,
            "invalid_approval_mode",
        ),
        ("cancel", json!({"session_id": sid}), 409, "no_turn_running"),
    ];
    for (name, args, status, code) in &refused {
        let r = call(&ts, name, args.clone()).await;
        assert_eq!(r.status.as_u16(), *status, "{name} ({code}): {}", r.body);
        r.expect_error(*status, code);
    }
    assert_eq!(ts.state().await, before);

    // A turn in progress blocks a second one through either door.
    let turn = ts.send_msg(&sid, "stall", None).await;
    let before = ts.state().await;
    call(
        &ts,
        "send_message",
        json!({"session_id": sid, "text": "again", "approval_mode": "yolo"}),
    )
    .await
    .expect_error(409, "turn_in_progress");
    assert_eq!(ts.state().await, before);
    call(&ts, "cancel", json!({"session_id": sid}))
        .await
        .expect(200);
    let events = ts.wait_turn_events(&sid, &turn).await;
    assert_eq!(events.last().unwrap()["status"], "cancelled");
}

/// protocol.md "Errors": every non-2xx answer has the body `{"error":{"code","message"}}` —
/// server functions too, with the status the REST route would answer.
#[tokio::test]
async fn server_function_errors_use_the_protocol_error_body() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({})).await;
    call(&ts, "snapshot", json!({"session_id": unknown_sid()}))
        .await
        .expect_error(404, "unknown_session");
    call(
        &ts,
        "set_mode",
        json!({"session_id": sid, "approval_mode": "YOLO"}),
    )
    .await
    .expect_error(400, "invalid_approval_mode");
    call(
        &ts,
        "send_message",
        json!({"session_id": sid, "text": "", "approval_mode": "ask"}),
    )
    .await
    .expect_error(400, "invalid_message");
    call(&ts, "cancel", json!({"session_id": sid}))
        .await
        .expect_error(409, "no_turn_running");
}

fn chunked(body: Vec<u8>) -> reqwest::Body {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        body.chunks(64 * 1024).map(|c| Ok(c.to_vec())).collect();
    reqwest::Body::wrap_stream(futures::stream::iter(chunks))
}

/// protocol.md "Auth": bodies over 1 MiB are `413 payload_too_large` — server functions too.
#[tokio::test]
async fn server_function_bodies_over_1_mib_are_413() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({})).await;
    let before = ts.state().await;
    let body = serde_json::to_vec(&json!({
        "session_id": sid, "text": "x".repeat(2 * 1024 * 1024), "approval_mode": "ask"
    }))
    .unwrap();
    // Declared length.
    let r = send(
        ts.req(Method::POST, "/api/ui/send_message")
            .header("content-type", "application/json")
            .body(body.clone()),
    )
    .await;
    r.expect_error(413, "payload_too_large");
    assert_eq!(ts.state().await, before);
}

#[tokio::test]
#[ignore = "a deviation (README): a chunked body over 1 MiB to a server function is cut off at the limit by Leptos's decoder and answered 500 invalid_request (\"length limit exceeded\"), not 413 payload_too_large"]
async fn server_function_chunked_bodies_over_1_mib_are_413() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({})).await;
    let before = ts.state().await;
    let body = serde_json::to_vec(&json!({
        "session_id": sid, "text": "x".repeat(2 * 1024 * 1024), "approval_mode": "ask"
    }))
    .unwrap();
    let r = send(
        ts.req(Method::POST, "/api/ui/send_message")
            .header("content-type", "application/json")
            .body(chunked(body)),
    )
    .await;
    r.expect_error(413, "payload_too_large");
    assert_eq!(ts.state().await, before);
}

/// The session page starts with the recent turns only (whole turns, the pending gate inside)
/// and pages older turns in; put together, the pages are exactly the log.
#[tokio::test]
async fn the_page_snapshot_is_the_recent_turns_and_older_turns_page_in() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({"approval_mode": "yolo"})).await;
    for _ in 0..4 {
        let turn = ts.send_msg(&sid, "loop 40", None).await;
        ts.wait_turn_events(&sid, &turn).await;
    }
    ts.send_msg(&sid, "write windowed.txt: x", Some("ask"))
        .await;
    ts.wait_gate(&sid).await;
    let full = ts.snapshot(&sid).await;
    let all = events(&full);
    assert!(all.len() > 400, "{} events", all.len());

    let snap = call(&ts, "snapshot", json!({"session_id": sid}))
        .await
        .expect(200);
    let recent = events(&snap);
    assert!(
        recent.len() >= 300 && recent.len() < all.len(),
        "{} of {} events",
        recent.len(),
        all.len()
    );
    assert_eq!(recent[0]["type"], "user_message", "starts at a turn");
    assert_eq!(recent.last(), all.last());
    assert_eq!(snap["cursor"], full["cursor"]);
    assert_eq!(snap["pending"].as_array().map(Vec::len), Some(1));
    assert_eq!(snap["pending"], full["pending"]);
    assert_eq!(snap["session"], full["session"]);

    let mut shown = recent;
    let mut pages = 0;
    while let Some(first) = shown[0]["seq"].as_u64().filter(|s| *s > 1) {
        let older = call(
            &ts,
            "older_events",
            json!({"session_id": sid, "before": first}),
        )
        .await
        .expect(200);
        let mut older = older.as_array().expect("an array of events").clone();
        assert_eq!(older.last().unwrap()["seq"], first - 1, "ends right before");
        assert!(older[0]["type"] == "user_message" || older[0]["seq"] == 1);
        older.append(&mut shown);
        shown = older;
        pages += 1;
        assert!(pages < 10, "paging does not converge");
    }
    assert_eq!(shown, all);
    assert_eq!(
        call(&ts, "older_events", json!({"session_id": sid, "before": 1}))
            .await
            .expect(200),
        json!([])
    );
    call(
        &ts,
        "older_events",
        json!({"session_id": unknown_sid(), "before": 5}),
    )
    .await
    .expect_error(404, "unknown_session");
}

/// The page's `decide` takes the decision route's own body (`DecisionRequest`): an Allow
/// always with its `rule` makes that rule; a body of another shape (the old flattened
/// `rule_scope`) is refused and answers nothing; a malformed session id is `unknown_session`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_decide_server_function_takes_the_decision_routes_body() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "run: echo hi > hi.txt", None).await;
    let card = ts.wait_gate(&sid).await;
    let gate = aid(&card);
    let old_shape = call(
        &ts,
        "decide",
        json!({"session_id": sid, "approval_id": gate,
               "input": {"decision": "allow_always", "rule_scope": "workspace"}}),
    )
    .await;
    assert!(old_shape.status.as_u16() >= 400, "{}", old_shape.body);
    let body: Value = serde_json::from_str(&old_shape.body).unwrap_or_default();
    assert_eq!(
        body["error"]["code"], "invalid_request",
        "{}",
        old_shape.body
    );
    call(
        &ts,
        "decide",
        json!({"session_id": "not-a-uuid", "approval_id": gate, "input": {"decision": "deny"}}),
    )
    .await
    .expect_error(404, "unknown_session");
    ts.assert_still_pending(&sid, &gate).await;
    let decided = call(
        &ts,
        "decide",
        json!({"session_id": sid, "approval_id": gate, "input": {
            "decision": "allow_always", "rule": {"scope": "workspace", "pattern": "echo *"},
        }}),
    )
    .await
    .expect(200);
    assert_eq!(decided["outcome"], "decided", "{decided}");
    let rules = ts.get("/api/v1/rules").await.expect(200);
    assert_eq!(rules[0]["scope"], "workspace", "{rules}");
    assert_eq!(rules[0]["pattern"], "echo *", "{rules}");
}

/// `phone_login`: a new `approve` token's login link (a single-use code, never the secret) and
/// its QR code; the link logs a browser in as that token, once; nothing but an admin may ask,
/// and only for an `approve` token's secret.
#[tokio::test]
async fn a_phones_login_link_logs_in_once_as_its_approve_token() {
    let ts = TestServer::scripted([]).await;
    let made =
        |name: &str, scope: &str| ts.post("/api/v1/tokens", json!({"name": name, "scope": scope}));
    let phone = made("pixel", "approve").await.expect(201)["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let hook = made("hook", "gates").await.expect(201)["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let origin = ts.url("");
    let answer = call(
        &ts,
        "phone_login",
        json!({"token": phone, "origin": origin}),
    )
    .await
    .expect(200);
    let link = answer["link"].as_str().unwrap().to_owned();
    assert!(
        link.starts_with(&format!("{origin}/login?code=csp_")),
        "{link}"
    );
    assert!(!link.contains(&phone), "the link carries no secret");
    assert!(
        answer["qr_svg"].as_str().unwrap().starts_with("<svg"),
        "{answer}"
    );

    // Not for a gates token, nor a made-up secret, nor another origin scheme; not for the
    // phone itself (an admin's function).
    for token in [hook.as_str(), "cst_made-up"] {
        call(
            &ts,
            "phone_login",
            json!({"token": token, "origin": origin}),
        )
        .await
        .expect_error(403, "forbidden");
    }
    call(
        &ts,
        "phone_login",
        json!({"token": phone, "origin": "javascript:alert(1)"}),
    )
    .await
    .expect_error(400, "invalid_request");
    let as_phone = send(
        ts.anon(Method::POST, "/api/ui/phone_login")
            .bearer_auth(&phone)
            .json(&json!({"token": phone, "origin": origin})),
    )
    .await;
    assert_eq!(as_phone.status.as_u16(), 403, "{as_phone:?}");

    // The link logs in as the token (the Inbox, the approve scope), once.
    let path = link.strip_prefix(&origin).unwrap();
    let first = send(ts.anon(Method::GET, path)).await;
    assert_eq!(first.status.as_u16(), 303, "{first:?}");
    assert_eq!(first.header("location"), Some("/inbox"));
    let set = first.header("set-cookie").expect("Set-Cookie").to_owned();
    let cookie = set.split(';').next().unwrap().trim().to_owned();
    let inbox = send(ts.anon(Method::GET, "/inbox").header("cookie", &cookie)).await;
    assert!(
        inbox.body.contains(r#"data-scope="approve""#),
        "{}",
        inbox.body
    );
    let again = send(ts.anon(Method::GET, path)).await;
    assert_eq!(again.status.as_u16(), 401, "single use");
    // Both the link's making and its login are audited, naming the token, never the code.
    let audit = ts.get("/api/v1/audit").await.expect(200);
    let of = |action: &str| {
        audit
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["action"] == action)
            .cloned()
            .collect::<Vec<Value>>()
    };
    let made = of("phone_link_made");
    assert_eq!(made.len(), 1, "{audit:#}");
    assert_eq!(made[0]["subject"], "pixel", "{audit:#}");
    let logged_in = of("browser_logged_in");
    assert_eq!(logged_in.len(), 1, "{audit:#}");
    assert_eq!(logged_in[0]["actor"], "token:pixel", "{audit:#}");
    assert_eq!(logged_in[0]["detail"]["with"], "phone_link", "{audit:#}");
    let code = path.rsplit('=').next().unwrap();
    assert!(!audit.to_string().contains(code), "no code in the audit");

    // A link whose token was revoked logs nobody in.
    let fresh = call(
        &ts,
        "phone_login",
        json!({"token": phone, "origin": origin}),
    )
    .await
    .expect(200);
    ts.delete("/api/v1/tokens/pixel").await.expect(204);
    let fresh = fresh["link"]
        .as_str()
        .unwrap()
        .strip_prefix(&origin)
        .unwrap()
        .to_owned();
    let revoked = send(ts.anon(Method::GET, &fresh)).await;
    assert_eq!(revoked.status.as_u16(), 401, "{revoked:?}");
}
