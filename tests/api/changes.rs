//! `GET /api/v1/changes`: the server-wide change stream the session list and the Inbox follow
//! instead of polling — a `change` notice for each session created, renamed, deleted, mode
//! changed, turn started or finished, gate opened or resolved; reachable by whoever may read
//! (an `approve` token too, never a `gates` one); ended at shutdown.

use reqwest::Method;
use serde_json::json;

use crate::support::*;

/// Opens the change stream with `token`; panics unless it is a 200 `text/event-stream`.
async fn changes(ts: &TestServer, token: &str) -> Sse {
    let sse = Sse::open(ts.anon(Method::GET, "/api/v1/changes").bearer_auth(token))
        .await
        .unwrap_or_else(|r| panic!("change stream refused: {r:?}"));
    let ct = sse.headers["content-type"].to_str().unwrap();
    assert!(ct.starts_with("text/event-stream"), "{ct}");
    sse
}

/// A new `approve`-scope token named `phone` (a phone's credential).
async fn phone_token(ts: &TestServer) -> String {
    let made = ts
        .post(
            "/api/v1/tokens",
            json!({"name": "phone", "scope": "approve"}),
        )
        .await
        .expect(201);
    made["token"].as_str().unwrap().to_owned()
}

/// Reads notices until one of `kind` for `sid` comes; every frame must be a `change`.
async fn until_notice(stream: &mut Sse, kind: &str, sid: &str) {
    let frames = stream
        .until(SOON, |f| {
            let v = f.json();
            v["kind"] == kind && v["session_id"] == sid
        })
        .await;
    for frame in &frames {
        assert!(frame.is("change"), "{frame:?}");
        assert_eq!(frame.id, None, "notices carry no id: {frame:?}");
    }
}

#[tokio::test]
async fn the_change_stream_tells_of_sessions_turns_and_gates() {
    let ts = TestServer::start().await;
    let mut stream = changes(&ts, TOKEN).await;

    let sid = ts.create_id(json!({})).await;
    until_notice(&mut stream, "session_created", &sid).await;

    let path = format!("/api/v1/sessions/{sid}");
    send(
        ts.req(Method::PATCH, &path)
            .json(&json!({"title": "Release prep"})),
    )
    .await
    .expect(200);
    until_notice(&mut stream, "session_renamed", &sid).await;

    ts.put(
        &format!("/api/v1/sessions/{sid}/mode"),
        json!({"approval_mode": "plan"}),
    )
    .await
    .expect(200);
    until_notice(&mut stream, "mode_changed", &sid).await;

    let turn = ts.send_msg(&sid, "run: ls", Some("ask")).await;
    until_notice(&mut stream, "turn_started", &sid).await;
    until_notice(&mut stream, "approval_opened", &sid).await;
    let card = ts.wait_gate(&sid).await;
    let aid = card["approval_id"].as_str().unwrap();
    ts.decide(&sid, aid, json!({"decision": "approve"}))
        .await
        .expect(200);
    until_notice(&mut stream, "approval_resolved", &sid).await;
    until_notice(&mut stream, "turn_finished", &sid).await;
    ts.wait_turn(&sid, &turn).await;

    ts.delete(&path).await.expect(204);
    until_notice(&mut stream, "session_deleted", &sid).await;

    // A notice is only a wake-up: what the list shows comes from the list.
    assert!(ts.list().await.iter().all(|s| s["id"] != sid.as_str()));
}

#[tokio::test]
async fn whoever_may_read_follows_the_changes_and_a_gates_token_may_not() {
    let ts = TestServer::start().await;
    let approve = phone_token(&ts).await;
    let made = ts
        .post("/api/v1/tokens", json!({"name": "agent", "scope": "gates"}))
        .await
        .expect(201);
    let gates = made["token"].as_str().unwrap().to_owned();

    let mut phone = changes(&ts, &approve).await;
    let sid = ts.create_id(json!({})).await;
    until_notice(&mut phone, "session_created", &sid).await;

    let refused = send(ts.anon(Method::GET, "/api/v1/changes").bearer_auth(&gates)).await;
    assert_eq!(refused.status.as_u16(), 403, "{refused:?}");
    assert!(refused.body.contains("a token with the `"), "{refused:?}");
    let anonymous = send(ts.anon(Method::GET, "/api/v1/changes")).await;
    assert_eq!(anonymous.status.as_u16(), 401, "{anonymous:?}");

    // Revoking the token ends its stream, as it ends a session's feed.
    ts.delete("/api/v1/tokens/phone").await.expect(204);
    assert!(
        phone.ends_within(SOON).await,
        "the change stream outlived its token"
    );
}

#[tokio::test]
async fn the_change_stream_ends_at_shutdown() {
    let ts = TestServer::start().await;
    let mut stream = changes(&ts, TOKEN).await;
    ts.stop().await;
    assert!(
        stream.ends_within(SOON).await,
        "the change stream outlived the server"
    );
}

/// A credential below admin holds at most 32 live streams (feeds and change streams together):
/// a stolen phone token cannot make the server re-check it without end. Another credential is
/// not held back by it, and an admin's is not counted.
#[tokio::test]
async fn one_credential_holds_at_most_its_share_of_streams() {
    let ts = TestServer::start().await;
    let phone = phone_token(&ts).await;
    let sid = ts.create_id(json!({})).await;
    let mut held = Vec::new();
    for i in 0..32 {
        let stream = if i % 2 == 0 {
            changes(&ts, &phone).await
        } else {
            Sse::open(
                ts.anon(Method::GET, &format!("/api/v1/sessions/{sid}/events"))
                    .bearer_auth(&phone),
            )
            .await
            .unwrap_or_else(|r| panic!("feed refused: {r:?}"))
        };
        held.push(stream);
    }
    for path in [
        "/api/v1/changes".to_owned(),
        format!("/api/v1/sessions/{sid}/events"),
    ] {
        let refused = send(ts.anon(Method::GET, &path).bearer_auth(&phone)).await;
        assert_eq!(refused.status.as_u16(), 429, "{path}: {refused:?}");
        assert!(refused.body.contains("too_many_streams"), "{refused:?}");
    }
    // The admin's credential is not counted: it may open more than the phone's share.
    let mut admin = Vec::new();
    for _ in 0..33 {
        admin.push(changes(&ts, &ts.token).await);
    }
    assert_eq!(held.len(), 32);
}
