//! `approvals.require_passkey = "all"`: every card is answered with a passkey, so no request
//! may put a session in a mode that opens no card (docs/api.md 13.5) — else a stolen admin
//! token would switch to yolo and never meet a card.

use serde_json::json;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_all_no_request_chooses_a_mode_that_opens_no_card() {
    let ts = TestServer::configured("[approvals]\nrequire_passkey = \"all\"\n").await;
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    for mode in ["yolo", "auto_edit"] {
        ts.put(
            &format!("/api/v1/sessions/{sid}/mode"),
            json!({"approval_mode": mode}),
        )
        .await
        .expect_error(403, "forbidden");
        ts.post("/api/v1/sessions", json!({"approval_mode": mode}))
            .await
            .expect_error(403, "forbidden");
        ts.post(
            &format!("/api/v1/sessions/{sid}/messages"),
            json!({"text": "run: echo hi", "approval_mode": mode}),
        )
        .await
        .expect_error(403, "forbidden");
    }
    let session = ts.get(&format!("/api/v1/sessions/{sid}")).await.expect(200);
    assert_eq!(session["session"]["approval_mode"], "ask", "{session}");
    // The modes that open cards are still anyone's to pick.
    for mode in ["plan", "ask"] {
        ts.put(
            &format!("/api/v1/sessions/{sid}/mode"),
            json!({"approval_mode": mode}),
        )
        .await
        .expect(200);
    }
}

/// Under "floor" the floor still asks in every mode, so every mode stays open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_floor_every_mode_stays_open() {
    let ts = TestServer::configured("[approvals]\nrequire_passkey = \"floor\"\n").await;
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.put(
        &format!("/api/v1/sessions/{sid}/mode"),
        json!({"approval_mode": "yolo"}),
    )
    .await
    .expect(200);
}
