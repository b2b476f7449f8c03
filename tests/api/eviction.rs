//! The hub's eviction rule, end to end: a session nobody watches, with no running turn and no
//! parked gate, leaves memory; the next request rebuilds it from the log, and what it shows
//! (feed replay, pending gates, the model's history) is what it showed before.

use std::time::Duration;

use countersign::server::conversation::ChatMessage;
use countersign::server::provider::scripted::ScriptStep;
use countersign::server::provider::{Completion, ToolCallRequest};
use serde_json::{Value, json};

use crate::support::*;

fn write_call(id: &str, path: &str) -> ScriptStep {
    ScriptStep::Reply(Completion {
        text: String::new(),
        tool_calls: vec![ToolCallRequest {
            id: id.into(),
            name: "write_file".into(),
            args: json!({"path": path, "content": "x"}),
        }],
        tokens: 1,
    })
}

/// Waits until the hub holds exactly `n` sessions.
async fn wait_live(ts: &TestServer, n: usize, what: &str) {
    poll_until(what, SOON, || async {
        let live = ts.core().live_sessions();
        if live == n {
            Ok(())
        } else {
            Err(format!("{live} live sessions"))
        }
    })
    .await;
}

async fn history(ts: &TestServer, sid: &str) -> Vec<ChatMessage> {
    ts.core().conversation(&sid.into()).await.unwrap()
}

#[tokio::test]
async fn an_idle_session_is_evicted_and_rebuilt_from_the_log() {
    let steps = vec![
        write_call("call_1", "one.txt"),
        reply("done one"),
        write_call("call_2", "two.txt"),
        reply("done two"),
    ];
    let (ts, model) = TestServer::with_script(steps, "").await;
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    wait_live(&ts, 0, "a created session holds nothing").await;

    // While a card waits, the turn holds the session whether or not anyone watches.
    let mut feed = ts.sse(&sid, Some(0), None).await;
    let turn = ts.send_msg(&sid, "write one", None).await;
    let card = ts.wait_gate(&sid).await;
    wait_live(&ts, 1, "the waiting turn and the feed hold it").await;
    drop(feed);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(ts.core().live_sessions(), 1, "a parked gate holds it");

    let answer = ts
        .decide(&sid, &aid(&card), json!({"decision": "approve"}))
        .await;
    assert!(answer.status.is_success(), "{}", answer.body);
    let before = ts.wait_released(&sid, &turn).await;
    let history_before = history(&ts, &sid).await;
    wait_live(&ts, 0, "nothing holds an idle session").await;

    // Rebuilt: the same snapshot, the same history, and a full replay on a new feed.
    let after = ts.snapshot(&sid).await;
    assert_eq!(after, before, "the snapshot of a rebuilt session");
    assert_eq!(history(&ts, &sid).await, history_before);
    assert!(
        matches!(history_before.last(), Some(ChatMessage::Assistant { text, .. }) if text == "done one"),
        "{history_before:?}"
    );
    feed = ts.sse(&sid, Some(0), None).await;
    let replayed = feed.until_seq(SOON, cursor(&after)).await;
    assert_eq!(frame_seqs(&replayed), seqs(&events(&after)), "the replay");
    wait_live(&ts, 1, "the new feed holds it").await;

    // A new turn in the rebuilt session: its gate and the model's context work as before.
    let turn = ts.send_msg(&sid, "write two", None).await;
    let card = ts.wait_gate(&sid).await;
    assert_eq!(card["args"]["path"], "two.txt", "{card}");
    let live = feed.until(SOON, |f| f.is("approval_request")).await;
    assert!(live.last().is_some_and(|f| f.is("approval_request")));
    let calls = model.calls();
    assert_eq!(
        calls.last(),
        Some(&(history_before.len() + 2)),
        "the model sees the system prompt, the whole conversation and the new message: {calls:?}"
    );
    drop(feed);
    ts.decide(&sid, &aid(&card), json!({"decision": "approve"}))
        .await;
    let done = ts.wait_released(&sid, &turn).await;
    wait_live(&ts, 0, "idle again").await;
    let texts: Vec<Value> = events(&done)
        .into_iter()
        .filter(|e| e["type"] == "assistant_message")
        .map(|e| e["text"].clone())
        .collect();
    assert_eq!(texts, [json!("done one"), json!("done two")]);
    assert!(ts.workspace().join("one.txt").is_file() && ts.workspace().join("two.txt").is_file());
}

#[tokio::test]
async fn fifty_idle_sessions_leave_nothing_behind() {
    let ts = TestServer::start().await;
    let mut ids = Vec::new();
    for n in 0..50 {
        let sid = ts.create_id(json!({"title": format!("s{n}")})).await;
        let (_, evs) = ts.run_turn(&sid, "say hello", Some("yolo")).await;
        assert!(!evs.is_empty());
        ids.push(sid);
    }
    wait_live(&ts, 0, "every finished session leaves memory").await;
    // Any of them comes back whole on demand.
    let snap = ts.snapshot(&ids[25]).await;
    assert_eq!(snap["session"]["title"], "s25");
    assert!(
        events(&snap).iter().any(|e| e["type"] == "turn_finished"),
        "{snap}"
    );
}
