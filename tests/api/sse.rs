//! protocol.md "Event feed (SSE)": framing, replay cursors, transient deltas, the exact join
//! of replay and live, keep-alive comments.

use std::time::{Duration, Instant};

use countersign::server::provider::scripted::ScriptStep;
use futures::future::join_all;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

/// A session with `n` mode_changed events (seq 1..=n), made through PUT …/mode.
async fn session_with_events(ts: &TestServer, n: u64) -> String {
    let sid = ts.create_id(json!({})).await;
    let modes = ["plan", "ask"];
    for i in 0..n {
        ts.put(
            &format!("/api/v1/sessions/{sid}/mode"),
            json!({"approval_mode": modes[(i % 2) as usize]}),
        )
        .await
        .expect(200);
    }
    assert_eq!(ts.snapshot(&sid).await["cursor"], n);
    sid
}

async fn bump(ts: &TestServer, sid: &str, mode: &str) {
    ts.put(
        &format!("/api/v1/sessions/{sid}/mode"),
        json!({ "approval_mode": mode }),
    )
    .await
    .expect(200);
}

#[tokio::test]
async fn feed_headers_and_frames() {
    let ts = TestServer::start().await;
    let sid = session_with_events(&ts, 3).await;
    let stored = ts.events(&sid).await;
    let mut feed = ts.sse(&sid, None, None).await;
    assert_eq!(feed.status.as_u16(), 200);
    let ct = feed.headers["content-type"].to_str().unwrap();
    assert!(ct.starts_with("text/event-stream"), "{ct}");

    let frames = feed.until_seq(SOON, 3).await;
    assert_eq!(frame_seqs(&frames), vec![1, 2, 3]);
    for (f, e) in frames.iter().zip(&stored) {
        f.check_consistent();
        assert!(f.is("mode_changed"), "{f:?}");
        // The frame carries the stored event, byte for byte equal as JSON.
        assert_eq!(&f.json(), e);
        // One `data:` line holding the whole JSON.
        assert_eq!(f.raw.matches("data:").count(), 1, "{:?}", f.raw);
    }
    // Then it follows live.
    bump(&ts, &sid, "yolo").await;
    let f = feed.next_frame(SOON).await.expect("live frame");
    f.check_consistent();
    assert_eq!(f.seq(), Some(4));
    let v = f.json();
    assert_eq!(v["type"], "mode_changed");
    assert_eq!(v["next"], "yolo");
    assert_eq!(v["source"], "user");
    assert_eq!(&v, ts.events(&sid).await.last().unwrap());
}

#[tokio::test]
async fn feed_is_not_compressed_for_browsers_that_accept_gzip() {
    // Browsers always send Accept-Encoding; a compressed (buffered) feed would stall live events.
    let ts = TestServer::start().await;
    let sid = session_with_events(&ts, 1).await;
    let mut feed = Sse::open(
        ts.req(Method::GET, &format!("/api/v1/sessions/{sid}/events"))
            .header("accept-encoding", "gzip, deflate, br, zstd"),
    )
    .await
    .expect("feed");
    assert!(
        feed.headers.get("content-encoding").is_none(),
        "{:?}",
        feed.headers
    );
    assert_eq!(frame_seqs(&feed.until_seq(SOON, 1).await), vec![1]);
    bump(&ts, &sid, "yolo").await;
    let f = feed.next_frame(SOON).await.expect("live frame");
    assert_eq!(f.seq(), Some(2));
}

#[tokio::test]
async fn feed_replays_after_the_cursor_from_query_header_or_the_max_of_both() {
    let ts = TestServer::start().await;
    let sid = session_with_events(&ts, 6).await;
    // (after, Last-Event-ID) → first seq replayed
    let cases: Vec<(Option<u64>, Option<u64>, u64)> = vec![
        (None, None, 1),
        (Some(0), None, 1),
        (Some(2), None, 3),
        (None, Some(4), 5),
        (Some(2), Some(4), 5),
        (Some(5), Some(1), 6),
        (Some(3), Some(3), 4),
        (Some(6), None, 7),
        (None, Some(6), 7),
        (Some(0), Some(6), 7),
    ];
    let mut feeds = Vec::new();
    for (after, lei, first) in &cases {
        feeds.push((*after, *lei, *first, ts.sse(&sid, *after, *lei).await));
    }
    // One live event, so every feed has something to end on.
    bump(&ts, &sid, "yolo").await;
    for (after, lei, first, feed) in &mut feeds {
        let frames = feed.until_seq(SOON, 7).await;
        frames.iter().for_each(Frame::check_consistent);
        assert_eq!(
            frame_seqs(&frames),
            (*first..=7).collect::<Vec<u64>>(),
            "after={after:?} Last-Event-ID={lei:?}"
        );
    }
    // A malformed cursor is a JSON error, not a stream.
    let r = send(ts.req(
        Method::GET,
        &format!("/api/v1/sessions/{sid}/events?after=abc"),
    ))
    .await;
    assert_eq!(r.status.as_u16(), 400, "{r:?}");
    r.expect_error(400, "invalid_request");
}

#[tokio::test]
async fn assistant_delta_frames_have_no_id_and_are_never_replayed() {
    let ts = TestServer::scripted([reply("Hello, streamed world.")]).await;
    let sid = ts.create_id(json!({})).await;
    let mut live = ts.sse(&sid, None, None).await;
    let turn = ts.send_msg(&sid, "hi", None).await;
    let frames = live.until_turn_finished(SOON).await;
    frames.iter().for_each(Frame::check_consistent);
    let kinds: Vec<&str> = frames.iter().map(|f| f.event.as_deref().unwrap()).collect();
    assert_eq!(
        kinds,
        vec![
            "user_message",
            "assistant_delta",
            "assistant_message",
            "turn_finished"
        ]
    );
    let delta = &frames[1];
    assert_eq!(delta.id, None, "{:?}", delta.raw);
    assert!(
        !delta.raw.contains("\nid:") && !delta.raw.starts_with("id:"),
        "{:?}",
        delta.raw
    );
    let v = delta.json();
    assert_eq!(v["text"], "Hello, streamed world.");
    assert_eq!(v["turn_id"], turn.as_str());
    assert!(v.get("seq").is_none());
    assert_eq!(frame_seqs(&frames), vec![1, 2, 3]);

    // Replays carry no deltas: not from 0, not from the middle.
    for after in [0u64, 1] {
        let mut replay = ts.sse(&sid, Some(after), None).await;
        let frames = replay.until_seq(SOON, 3).await;
        assert!(
            frames.iter().all(|f| !f.is("assistant_delta")),
            "{frames:#?}"
        );
        assert_eq!(frame_seqs(&frames), ((after + 1)..=3).collect::<Vec<u64>>());
        replay.assert_quiet(Duration::from_millis(300)).await;
    }
    // Nor does the snapshot.
    let events = ts.events(&sid).await;
    assert!(events.iter().all(|e| e["type"] != "assistant_delta"));
    assert_eq!(seqs(&events), vec![1, 2, 3]);
}

#[tokio::test]
async fn demo_deltas_stream_the_final_message() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({})).await;
    let mut live = ts.sse(&sid, None, None).await;
    // No command: the demo answers with its (multi-piece) help text.
    let turn = ts.send_msg(&sid, "what can you do?", None).await;
    let frames = live.until_turn_finished(SOON).await;
    frames.iter().for_each(Frame::check_consistent);
    let deltas: Vec<&Frame> = frames.iter().filter(|f| f.is("assistant_delta")).collect();
    assert!(deltas.len() > 1, "expected several deltas: {frames:#?}");
    let streamed: String = deltas
        .iter()
        .map(|f| f.json()["text"].as_str().unwrap().to_owned())
        .collect();
    let message = frames
        .iter()
        .find(|f| f.is("assistant_message"))
        .expect("assistant_message")
        .json();
    assert_eq!(streamed, message["text"].as_str().unwrap());
    assert_eq!(message["turn_id"], turn.as_str());
    // Every delta came before the message that completes it.
    let msg_at = frames
        .iter()
        .position(|f| f.is("assistant_message"))
        .unwrap();
    assert!(frames[msg_at..].iter().all(|f| !f.is("assistant_delta")));
    assert_eq!(frame_seqs(&frames), vec![1, 2, 3]);
}

/// One round of the join race: a `loop 40` turn (≈123 events) with feeds connecting at
/// staggered moments from various cursors. Returns (feeds checked, feeds that connected while
/// the turn was still appending).
async fn race_round(ts: &TestServer, round: u64) -> (usize, usize) {
    let sid = ts.create_id(json!({"approval_mode": "yolo"})).await;
    // One feed is connected before anything happens.
    let early = ts.sse(&sid, Some(0), None).await;
    let turn = ts.send_msg(&sid, "loop 40", Some("yolo")).await;
    let delays_ms: Vec<u64> = vec![0, 2, 5, 11, 23, 40, 70, 110, 170, 260, 400]
        .into_iter()
        .map(|d| d + (round * 7) % 13)
        .collect();
    let late = delays_ms.iter().enumerate().map(|(k, &delay)| {
        let sid = sid.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            let c = ts.snapshot(&sid).await["cursor"].as_u64().unwrap();
            let (after, lei) = match (k as u64 + round) % 5 {
                0 => (Some(0), None),
                1 => (Some(c.saturating_sub(1)), None),
                2 => (None, Some(c / 2)),
                3 => (Some(c / 3), Some(c.saturating_sub(2))),
                _ => (Some(c.saturating_sub(3)), Some(c / 4)),
            };
            let feed = ts.sse(&sid, after, lei).await;
            (after.unwrap_or(0).max(lei.unwrap_or(0)), c, feed)
        }
    });
    let mut feeds = vec![(0, 0, early)];
    feeds.extend(join_all(late).await);

    let results = join_all(feeds.into_iter().map(|(start, seen, mut feed)| async move {
        let frames = feed.until_turn_finished(Duration::from_secs(60)).await;
        (start, seen, frames)
    }))
    .await;
    let events = ts.wait_turn_events(&sid, &turn).await;
    let last = events.last().unwrap()["seq"].as_u64().unwrap();
    assert_eq!(seqs(&events), (1..=last).collect::<Vec<u64>>());
    assert_eq!(events.last().unwrap()["type"], "turn_finished");
    assert_eq!(events.last().unwrap()["status"], "completed");
    assert_eq!(
        events.iter().filter(|e| e["type"] == "tool_call").count(),
        40
    );
    let mut mid_turn = 0;
    for (start, seen, frames) in &results {
        let got = frame_seqs(frames);
        let want: Vec<u64> = ((start + 1)..=last).collect();
        assert_eq!(
            got, want,
            "round {round}: feed from cursor {start} (connected at cursor {seen}) saw a gap, \
             a duplicate or a reorder"
        );
        for f in frames {
            f.check_consistent();
            if let Some(seq) = f.seq() {
                assert_eq!(
                    &f.json(),
                    &events[(seq - 1) as usize],
                    "live ≠ stored at {seq}"
                );
            }
        }
        if *seen > 0 && *seen < last {
            mid_turn += 1;
        }
    }
    (results.len(), mid_turn)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feeds_joining_during_appends_see_each_seq_once_in_order() {
    let ts = TestServer::start().await;
    let started = Instant::now();
    let mut feeds = 0;
    let mut mid_turn = 0;
    // 30 rounds, 3 at a time.
    for wave in 0..10u64 {
        let rounds = (0..3u64).map(|i| race_round(&ts, wave * 3 + i));
        for (n, m) in join_all(rounds).await {
            feeds += n;
            mid_turn += m;
        }
    }
    eprintln!(
        "join race: {feeds} feeds, {mid_turn} joined mid-turn, {:?}",
        started.elapsed()
    );
    assert_eq!(feeds, 30 * 12);
    // The test is only worth something if many feeds really joined while events were appended.
    assert!(
        mid_turn * 3 >= feeds,
        "only {mid_turn} of {feeds} feeds joined mid-turn; retune the delays"
    );
}

#[tokio::test]
async fn an_idle_feed_gets_a_keep_alive_comment_within_15_s() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({})).await;
    let mut feed = ts.sse(&sid, None, None).await;
    // The first thing an idle feed sends (15 s, plus slack for a busy machine) is the server's
    // keep-alive comment: not a frame, not the end of the stream.
    match feed.next_item(Duration::from_millis(16_500)).await {
        Ok(Some(Item::Comment(text))) => assert_eq!(text, "keep-alive"),
        other => panic!("expected a comment line, got {other:?}"),
    }
    // The stream is still alive afterwards.
    bump(&ts, &sid, "plan").await;
    let f = feed.next_frame(SOON).await.expect("frame after keep-alive");
    assert_eq!(f.seq(), Some(1));
}

#[tokio::test]
async fn a_feed_after_the_end_waits_and_then_follows() {
    // A cursor at (or past) the end replays nothing and does not end the stream.
    let ts = TestServer::scripted([ScriptStep::Stall]).await;
    let sid = session_with_events(&ts, 2).await;
    let mut feed = ts.sse(&sid, Some(2), None).await;
    feed.assert_quiet(Duration::from_millis(300)).await;
    let turn = ts.send_msg(&sid, "x", None).await;
    let f = feed.next_frame(SOON).await.expect("live");
    assert_eq!(f.seq(), Some(3));
    assert_eq!(f.json()["type"], "user_message");
    ts.post(&format!("/api/v1/sessions/{sid}/cancel"), json!({}))
        .await
        .expect(200);
    let f = feed.next_frame(SOON).await.expect("turn_finished");
    f.check_consistent();
    assert_eq!(f.seq(), Some(4));
    let v: Value = f.json();
    assert_eq!(v["type"], "turn_finished");
    assert_eq!(v["status"], "cancelled");
    assert_eq!(v["turn_id"], turn.as_str());
}
