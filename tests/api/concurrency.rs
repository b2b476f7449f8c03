//! Concurrent requests against one session: exactly one turn wins, seqs stay gapless, and the
//! mode history stays a chain.

use std::time::Duration;

use countersign::server::provider::scripted::ScriptStep;
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
/// turn it stopped, and that turn ends `cancelled` — also when the cancel lands after the turn
/// last looked at its cancel token (before the model call, whose reply is then recorded) but
/// before it recorded its end: the turn seals how it ends, so a cancel before the seal wins
/// and one after it is answered 409 (the turn completes). The cancel follows the message after
/// a delay that moves until a cancel has landed in that window at least once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_answered_200_ends_the_turn_cancelled() {
    // At least MIN_ATTEMPTS rounds, so every outcome gets its checks; on until the window was
    // hit; never more than MAX_ATTEMPTS.
    const MIN_ATTEMPTS: usize = 30;
    const MAX_ATTEMPTS: usize = 200;
    let steps: Vec<ScriptStep> = (0..MAX_ATTEMPTS).map(|_| reply("quick")).collect();
    let ts = TestServer::scripted(steps).await;
    let sid = ts.create_id(json!({})).await;
    // The delay between the message's answer and the cancel, in µs: between one that came
    // before the model call and one that came after the turn had sealed its end.
    let (mut early, mut late) = (0.0_f64, 2000.0_f64);
    let (mut before_call, mut in_window, mut refused) = (0, 0, 0);
    for attempt in 0usize.. {
        if attempt >= MIN_ATTEMPTS && in_window > 0 {
            break;
        }
        assert!(
            attempt < MAX_ATTEMPTS,
            "no cancel landed between the model call and the turn's end in {MAX_ATTEMPTS} \
             attempts ({before_call} came before the call, {refused} after the end; delay \
             bounds {early:.0}..{late:.0} µs)"
        );
        let frac = (attempt as f64 * 0.618_033_988_749_895).fract();
        let delay = Duration::from_secs_f64((early + (late - early) * frac) / 1e6);
        let turn = ts.send_msg(&sid, "go", None).await;
        // A thread sleeps with µs precision (the runtime's timer counts whole ms).
        tokio::task::spawn_blocking(move || std::thread::sleep(delay))
            .await
            .unwrap();
        let r = ts
            .post(&format!("/api/v1/sessions/{sid}/cancel"), json!({}))
            .await;
        let events = turn_events(&ts.wait_turn(&sid, &turn).await, &turn);
        let fin = events.last().unwrap();
        assert_eq!(fin["type"], "turn_finished", "{events:#?}");
        let replied = !of_type(&events, "assistant_message").is_empty();
        let micros = delay.as_secs_f64() * 1e6;
        if r.status.as_u16() == 200 {
            assert_eq!(r.json(), json!({ "turn_id": turn }));
            assert_eq!(
                fin["status"], "cancelled",
                "attempt {attempt}: cancel answered 200 but the turn ended {fin}"
            );
            if replied {
                in_window += 1;
            } else {
                before_call += 1;
                early = early.max(micros);
                if late <= early {
                    late = early * 2.0 + 1.0;
                }
            }
        } else {
            r.expect_error(409, "no_turn_running");
            assert_eq!(
                fin["status"], "completed",
                "attempt {attempt}: cancel answered 409 but the turn ended {fin}"
            );
            assert!(replied, "attempt {attempt}: {events:#?}");
            refused += 1;
            late = late.min(micros);
            if early >= late {
                early = late / 2.0;
            }
        }
    }
    eprintln!(
        "cancel race: {before_call} before the model call, {in_window} between the call and \
         the end, {refused} after the end"
    );
}
