//! Concurrent requests against one session: exactly one turn wins, seqs stay gapless, and the
//! mode history stays a chain.

use countersign::server::agent::provider::scripted::ScriptStep;
use futures::future::join_all;
use serde_json::{Value, json};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_messages_start_exactly_one_turn() {
    // One stalled turn per round: each round's winner must still be running while the other
    // eleven messages arrive.
    let ts = TestServer::scripted(vec![ScriptStep::Stall; 5]).await;
    for round in 0..5 {
        let sid = ts.create_id(json!({})).await;
        let path = format!("/api/v1/sessions/{sid}/messages");
        let answers = join_all((0..12).map(|i| {
            let mode = ["ask", "yolo", "plan"][i % 3];
            ts.post(
                &path,
                json!({"text": format!("m{i}"), "approval_mode": mode}),
            )
        }))
        .await;
        let accepted: Vec<&Resp> = answers
            .iter()
            .filter(|r| r.status.as_u16() == 202)
            .collect();
        assert_eq!(accepted.len(), 1, "round {round}: {answers:#?}");
        for r in answers.iter().filter(|r| r.status.as_u16() != 202) {
            r.expect_error(409, "turn_in_progress");
        }
        let turn = accepted[0].json()["turn_id"].as_str().unwrap().to_owned();
        let events = ts.events(&sid).await;
        // Only the winner's events: an optional mode_changed, then its user_message.
        let users: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "user_message")
            .collect();
        assert_eq!(users.len(), 1, "{events:#?}");
        assert!(
            events.iter().all(|e| e["turn_id"] == turn.as_str()),
            "{events:#?}"
        );
        assert_eq!(
            seqs(&events),
            (1..=events.len() as u64).collect::<Vec<u64>>()
        );
        let mode = users[0]["approval_mode"].clone();
        assert_eq!(ts.snapshot(&sid).await["session"]["approval_mode"], mode);
        // Leave the stalled turn cancelled; the next round uses a new session (the script is
        // empty after the first Stall, so later turns answer at once; that is fine too).
        let _ = ts
            .post(&format!("/api/v1/sessions/{sid}/cancel"), json!({}))
            .await;
        ts.wait_turn_events(&sid, &turn).await;
    }
}

/// Every `mode_changed` must start where the previous one ended, and the session's mode must
/// be the last one's `next`: the log is the source of truth, so it may not tell two stories.
fn assert_mode_chain(events: &[Value], initial: &str, final_mode: &Value) {
    let mut current = json!(initial);
    for e in events.iter().filter(|e| e["type"] == "mode_changed") {
        assert_eq!(
            e["previous"], current,
            "mode_changed seq {} says previous={} but the mode was {current}",
            e["seq"], e["previous"]
        );
        assert_ne!(
            e["previous"], e["next"],
            "a mode_changed that changes nothing: {e}"
        );
        current = e["next"].clone();
    }
    assert_eq!(
        &current, final_mode,
        "the session's mode disagrees with its log"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]

async fn concurrent_mode_changes_keep_a_consistent_chain() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({})).await;
    let path = format!("/api/v1/sessions/{sid}/mode");
    let modes = ["plan", "ask", "auto_edit", "yolo"];
    let writers = (0..4).map(|w| {
        let path = path.clone();
        let ts = &ts;
        async move {
            for i in 0..40 {
                let mode = modes[(w + i) % 4];
                ts.put(&path, json!({ "approval_mode": mode }))
                    .await
                    .expect(200);
            }
        }
    });
    join_all(writers).await;
    let snap = ts.snapshot(&sid).await;
    let events = snap["events"].as_array().unwrap();
    assert_eq!(
        seqs(events),
        (1..=events.len() as u64).collect::<Vec<u64>>()
    );
    assert_mode_chain(events, "ask", &snap["session"]["approval_mode"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_keep_seq_gapless() {
    // Many sessions, many writers: each session's seqs are 1..=n with no gap or repeat.
    let server = TestServer::start().await;
    let ts = &server;
    let sids: Vec<String> = join_all((0..4).map(|_| ts.create_id(json!({})))).await;
    let writers = sids.iter().flat_map(|sid| {
        (0..3).map(move |w| {
            let path = format!("/api/v1/sessions/{sid}/mode");
            async move {
                for i in 0..15 {
                    let mode = ["plan", "yolo"][(w + i) % 2];
                    ts.put(&path, json!({ "approval_mode": mode }))
                        .await
                        .expect(200);
                }
            }
        })
    });
    join_all(writers).await;
    for sid in &sids {
        let snap = ts.snapshot(sid).await;
        let events = snap["events"].as_array().unwrap();
        assert!(!events.is_empty());
        assert_eq!(
            seqs(events),
            (1..=events.len() as u64).collect::<Vec<u64>>()
        );
        assert_eq!(snap["cursor"], events.len() as u64);
    }
}

/// protocol.md: cancel answers `200 {"turn_id"}` or `409 no_turn_running`. A 200 names the
/// turn it stopped, so that turn should end `cancelled`. When the cancel lands after the model's
/// last reply but before `turn_finished` is written, the server answers 200 and the turn then
/// ends `completed` (the cancel token is only checked before a model call and after a tool batch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]

async fn a_cancel_answered_200_ends_the_turn_cancelled() {
    let steps: Vec<ScriptStep> = (0..200).map(|_| reply("quick")).collect();
    let ts = TestServer::scripted(steps).await;
    let sid = ts.create_id(json!({})).await;
    for attempt in 0..200 {
        let turn = ts.send_msg(&sid, "go", None).await;
        let r = ts
            .post(&format!("/api/v1/sessions/{sid}/cancel"), json!({}))
            .await;
        let events = ts.wait_turn_events(&sid, &turn).await;
        let fin = events.last().unwrap();
        if r.status.as_u16() == 200 {
            assert_eq!(r.json(), json!({ "turn_id": turn }));
            assert_eq!(
                fin["status"], "cancelled",
                "attempt {attempt}: cancel answered 200 but the turn ended {fin}"
            );
        } else {
            r.expect_error(409, "no_turn_running");
        }
    }
}
