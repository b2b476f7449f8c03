//! Storage faults: when the database cannot commit, a decision answers 503 with the JSON
//! error, the gate stays pending, nothing is half-applied, and reads keep working.
//!
//! The fault is real: a second connection holds SQLite's write lock (as another process
//! would), so the server's own commit fails after its busy timeout.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "support/mod.rs"]
mod support;

use serde_json::json;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_that_cannot_commit_is_503_and_the_gate_stays_pending() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    srv.send_msg(&sid, "write fault.txt: x", None).await;
    let aid = aid(&srv.wait_inbox_gate(&sid).await);
    let before = srv.snapshot(&sid).await;

    // Another connection takes the write lock and keeps it.
    let db = srv.db();
    let blocker = rusqlite::Connection::open(&db).unwrap();
    blocker.execute_batch("BEGIN EXCLUSIVE").unwrap();

    let body = srv
        .decide(&sid, &aid, json!({"decision": "approve"}))
        .await
        .expect_error(503, "storage_unavailable");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nothing was changed")
    );

    // Reads still work while writes cannot, and nothing moved.
    let during = srv.snapshot(&sid).await;
    assert_eq!(during["events"], before["events"]);
    assert_eq!(during["pending"][0]["approval_id"], aid.as_str());
    assert!(!srv.ws("fault.txt").exists());

    blocker.execute_batch("ROLLBACK").unwrap();
    drop(blocker);

    // The same gate is still decidable, and the tool runs once.
    srv.decide(&sid, &aid, json!({"decision": "approve"}))
        .await
        .expect(200);
    wait_file(&srv.ws("fault.txt"), "x").await;
}
