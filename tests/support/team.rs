//! What the team tests (issue 41: routed cards, quorum, the page they draw) do again and again:
//! an outside agent's call opened with the admin token, and a person's answer through their
//! browser session.

use reqwest::Method;
use serde_json::{Value, json};

use super::{Resp, TestServer, send};

/// An outside agent's call, opened with the admin token; its session id and approval id.
pub async fn open(srv: &TestServer, source: &str, tool: &str, input: Value) -> (String, String) {
    let opened = srv
        .post(
            "/api/v1/gates",
            json!({
                "source": source, "external_session": "team", "cwd": "/home/me/app",
                "tool": {"name": tool, "input": input},
                "capabilities": {"edit": true, "always": true},
            }),
        )
        .await
        .expect(201);
    assert_eq!(opened["status"], "pending", "{opened}");
    let sid = opened["session_id"].as_str().unwrap().to_owned();
    let aid = opened["approval_id"].as_str().unwrap().to_owned();
    (sid, aid)
}

/// A person's answer through their browser session (its cookie).
pub async fn answer(srv: &TestServer, cookie: &str, sid: &str, aid: &str, body: Value) -> Resp {
    send(
        srv.anon(
            Method::POST,
            &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
        )
        .header("cookie", cookie)
        .header("sec-fetch-site", "same-origin")
        .json(&body),
    )
    .await
}
