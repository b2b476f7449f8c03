//! Durability across a restart on the same data directory.

use std::time::Duration;

use countersign::server::provider::scripted::ScriptStep;
use serde_json::{Value, json};

use crate::support::*;

#[tokio::test]
async fn sessions_and_events_survive_a_restart_and_seq_keeps_growing() {
    let ts = TestServer::start().await;
    let a = ts
        .create(json!({"title": "Persist me", "approval_mode": "plan"}))
        .await;
    let sid = a["id"].as_str().unwrap().to_owned();
    let other = ts.create_id(json!({"title": "other"})).await;
    let turn = ts
        .send_msg(&sid, "write notes.md: hello", Some("yolo"))
        .await;
    ts.wait_turn_events(&sid, &turn).await;
    let before_snap = ts.snapshot(&sid).await;
    let before_list = ts.list().await;
    let cursor = before_snap["cursor"].as_u64().unwrap();
    assert!(cursor >= 5, "{before_snap}");

    // A feed connected across the shutdown must not hold the server up; it just ends.
    let mut feed = ts.sse(&sid, Some(cursor), None).await;
    let dir = ts.stop().await;
    assert!(
        feed.next_frame(Duration::from_secs(5)).await.is_none(),
        "feed should end on shutdown"
    );

    let ts = TestServer::start_in(dir, None, None).await;
    assert_eq!(ts.list().await, before_list);
    let after_snap = ts.snapshot(&sid).await;
    assert_eq!(after_snap, before_snap);
    assert_eq!(after_snap["session"]["title"], "Persist me");
    assert_eq!(after_snap["session"]["approval_mode"], "yolo");
    assert_eq!(after_snap["session"]["running_turn_id"], Value::Null);

    // New events continue from the old last seq, live and in the store.
    let mut feed = ts.sse(&sid, Some(cursor), None).await;
    ts.put(
        &format!("/api/v1/sessions/{sid}/mode"),
        json!({"approval_mode": "ask"}),
    )
    .await
    .expect(200);
    let f = feed.next_frame(SOON).await.expect("live after restart");
    f.check_consistent();
    assert_eq!(f.seq(), Some(cursor + 1));
    let turn = ts.send_msg(&sid, "read notes.md", Some("yolo")).await;
    let events = ts.wait_turn_events(&sid, &turn).await;
    assert_eq!(
        seqs(&events),
        (1..=events.len() as u64).collect::<Vec<u64>>()
    );
    assert_eq!(events[cursor as usize]["type"], "mode_changed");
    assert_eq!(events[cursor as usize]["source"], "user");
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["turn_id"] == turn.as_str())
        .unwrap();
    assert_eq!(result["output"], "hello");
    let frames = feed.until_turn_finished(SOON).await;
    assert_eq!(
        frame_seqs(&frames),
        ((cursor + 2)..=events.len() as u64).collect::<Vec<u64>>()
    );
    // The other session is still there, still empty.
    assert_eq!(ts.snapshot(&other).await["cursor"], 0);
}

/// A turn that was mid-way through a model call when the server stopped is resumed on the
/// next start: the model call is simply made again (it has no side effects) and the turn
/// finishes normally.
#[tokio::test]
async fn a_turn_left_running_by_a_stop_is_resumed_on_the_next_start() {
    let ts = TestServer::scripted([ScriptStep::Stall]).await;
    let sid = ts.create_id(json!({})).await;
    let turn = ts.send_msg(&sid, "never answered", None).await;
    // The stalled turn keeps running in this process, but the server stops: like a crash, as
    // far as the data directory is concerned.
    let dir = ts.stop().await;

    let ts = TestServer::start_in(dir, Some(scripted([reply("fresh")])), None).await;
    let events = ts.wait_turn_events(&sid, &turn).await;
    assert_eq!(
        types(&events),
        vec!["user_message", "assistant_message", "turn_finished"]
    );
    assert_eq!(seqs(&events), vec![1, 2, 3]);
    assert_eq!(events[1]["text"], "fresh");
    assert_eq!(events[2]["turn_id"], turn.as_str());
    assert_eq!(events[2]["status"], "completed");
    // The session is usable again.
    let t2 = ts.send_msg(&sid, "again", None).await;
    let events = ts.wait_turn_events(&sid, &t2).await;
    assert_eq!(seqs(&events), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(events[5]["status"], "completed");
}
