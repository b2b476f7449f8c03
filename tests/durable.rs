//! Process-level crash tests (docs/product.md "Durability"; docs/protocol.md): the real
//! `countersign` binary is started as a child process, killed with SIGKILL (`kill -9`) or
//! stopped with SIGTERM at chosen moments, and started again on the same data directory.
//!
//! What is checked: pending gates come back with the same approval id and `expires_at` and
//! stay actionable; a gate that expired while the server was down resolves `timeout` at once;
//! a tool that had started is reported `interrupted` and never re-run; a decision committed
//! right before the kill is neither lost nor doubled; approval modes survive (a corrupted mode
//! record falls back to `ask`); a plan approved after a restart leaves plan mode; SIGTERM with
//! live SSE clients exits promptly and keeps pending gates pending.
//!
//! Every crash scenario loops at least 10 times. Build and run with
//! `cargo test --features ssr --test durable`.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "support/mod.rs"]
mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

const INTERRUPTED: &str = "the server stopped while this ran; it was not run again";

/// The gate's card as the inbox lists it, for one session.
async fn inbox_for(node: &Node, sid: &str) -> Vec<Value> {
    node.inbox()
        .await
        .into_iter()
        .filter(|g| g["session_id"] == sid)
        .collect()
}

/// After a restart: the log is exactly what it was before the kill, the same card is pending
/// (same id, same `expires_at`, same everything) in the snapshot and in the inbox, and the
/// resumed turn holds the session.
async fn assert_gate_parked_again(
    node: &Node,
    sid: &str,
    turn: &str,
    before: &Value,
    card: &Value,
) {
    let snap = node.snapshot(sid).await;
    assert_eq!(
        snap["events"], before["events"],
        "the log changed across the restart"
    );
    assert_eq!(snap["cursor"], before["cursor"]);
    assert_eq!(snap["pending"], json!([card]), "the pending card changed");
    assert_eq!(snap["session"]["running_turn_id"], json!(turn));
    assert_eq!(snap["session"]["pending_approvals"], json!(1));
    let inbox = inbox_for(node, sid).await;
    assert_eq!(inbox.len(), 1, "inbox: {inbox:?}");
    assert_eq!(inbox[0]["approval_id"], card["approval_id"]);
    assert_eq!(inbox[0]["expires_at"], card["expires_at"]);
    assert_eq!(inbox[0]["created_at"], card["created_at"]);
    assert_eq!(inbox[0]["digest"], card["digest"]);
    assert_eq!(
        &inbox[0], card,
        "the inbox card differs from the snapshot's"
    );
}

/// The card agrees with the approval_request event and the tool_call before it.
fn assert_card_is_logged(snap: &Value, card: &Value) -> String {
    let evs = events(snap);
    let requests = of_type(&evs, "approval_request");
    assert_eq!(requests.len(), 1, "{evs:?}");
    let req = &requests[0];
    for key in [
        "approval_id",
        "call_id",
        "expires_at",
        "created_at",
        "digest",
        "tool",
        "args",
    ] {
        assert_eq!(
            req[key], card[key],
            "{key} differs between the event and the card"
        );
    }
    let call_id = card["call_id"].as_str().unwrap().to_owned();
    let calls = for_call(&evs, "tool_call", &call_id);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["verdict"], "ask");
    call_id
}

// ---------------------------------------------------------------------------------------------
// 1. A pending gate comes back after kill -9: same id, same deadline, still actionable.
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_gate_is_parked_again_after_kill_9_and_a_decision_finishes_the_turn() {
    let mut lab = Lab::new(None);
    let mut node = lab.start().await;
    for i in 0..10 {
        let sid = node
            .create_id(json!({ "title": format!("gate {i}") }))
            .await;
        let file = format!("marker-{i}.txt");
        let turn = node
            .send_msg(&sid, &format!("write {file}: hello {i}"), Some("ask"))
            .await;
        let (before, card) = node.wait_gate_snapshot(&sid).await;
        let aid = card["approval_id"].as_str().unwrap().to_owned();
        let expires_at = card["expires_at"].as_str().unwrap().to_owned();
        assert_eq!(card["kind"], "tool");
        assert_eq!(card["tool"], "write_file");
        assert_eq!(card["turn_id"], json!(turn));
        let call_id = assert_card_is_logged(&before, &card);
        let cursor_before = cursor(&before);

        // kill -9 while parked; every third iteration crashes a second time right after the
        // restart (a resumed turn that is killed again must come back the same way).
        node.kill9().await;
        node = lab.start().await;
        assert_gate_parked_again(&node, &sid, &turn, &before, &card).await;
        if i % 3 == 2 {
            node.kill9().await;
            node = lab.start().await;
            assert_gate_parked_again(&node, &sid, &turn, &before, &card).await;
        }
        assert_eq!(lab.read(&file), None, "nothing may run before the decision");

        let (body, status, content) = match i % 3 {
            0 => (
                json!({"decision": "approve", "digest": card["digest"]}),
                "ok",
                Some(format!("hello {i}")),
            ),
            1 => (
                json!({"decision": "edit", "edits": {"path": file, "content": format!("edited {i}")}}),
                "ok",
                Some(format!("edited {i}")),
            ),
            _ => (
                json!({"decision": "deny", "reason": "not now"}),
                "denied",
                None,
            ),
        };
        let decided = node.decide(&sid, &aid, body.clone()).await.expect(200);
        assert_eq!(decided["approval_id"], json!(aid));
        assert_eq!(decided["decision"], body["decision"]);

        let done = node.wait_released(&sid, &turn).await;
        let evs = events(&done);
        assert_contiguous(&evs);
        assert_eq!(&evs[..cursor_before as usize], &events(&before)[..]);
        let new = after(&evs, cursor_before);
        let want: Vec<&str> = if status == "ok" {
            vec![
                "approval_resolved",
                "tool_started",
                "tool_result",
                "assistant_message",
                "turn_finished",
            ]
        } else {
            vec![
                "approval_resolved",
                "tool_result",
                "assistant_message",
                "turn_finished",
            ]
        };
        assert_eq!(types(&new), want, "{new:?}");
        assert_eq!(new[0]["approval_id"], json!(aid));
        assert_eq!(new[0]["decision"], body["decision"]);
        assert_eq!(new[0]["answered_by"], "user");
        let result = &for_call(&new, "tool_result", &call_id)[0];
        assert_eq!(result["status"], status, "{result}");
        assert_eq!(new.last().unwrap()["status"], "completed");
        assert_eq!(new.last().unwrap()["turn_id"], json!(turn));
        assert_eq!(lab.read(&file), content);
        // The gate is gone from every list and cannot be answered twice.
        assert_eq!(done["pending"], json!([]));
        assert!(inbox_for(&node, &sid).await.is_empty());
        let again = node
            .decide(&sid, &aid, json!({"decision": "approve"}))
            .await
            .expect_error(409, "already_resolved");
        assert_eq!(again["resolution"]["decision"], body["decision"]);
        // The deadline on record never moved.
        let req = &of_type(&evs, "approval_request")[0];
        assert_eq!(req["expires_at"], json!(expires_at));
    }
}

// ---------------------------------------------------------------------------------------------
// 2. A gate that expired while the server was down resolves `timeout` right after restart.
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_that_expired_while_down_resolves_timeout_at_restart_and_never_runs() {
    let mut lab = Lab::new(Some("[approvals]\ntimeout_secs = 2\n"));
    let mut node = lab.start().await;
    for i in 0..10 {
        let sid = node.create_id(json!({})).await;
        let file = format!("late-{i}.txt");
        let turn = node
            .send_msg(&sid, &format!("write {file}: too late"), Some("ask"))
            .await;
        let (before, card) = node.wait_gate_snapshot(&sid).await;
        node.kill9().await;
        let aid = card["approval_id"].as_str().unwrap().to_owned();
        let call_id = assert_card_is_logged(&before, &card);
        assert!(resolutions(&events(&before), &aid).is_empty());
        let created = parse_time(card["created_at"].as_str().unwrap());
        let expires = parse_time(card["expires_at"].as_str().unwrap());
        assert_eq!((expires - created).num_milliseconds(), 2000, "{card}");

        // Stay down until the deadline has passed.
        let wait = (expires.with_timezone(&chrono::Utc) - chrono::Utc::now())
            .to_std()
            .unwrap_or_default();
        tokio::time::sleep(wait + Duration::from_millis(150)).await;
        // A restart that gave the gate a fresh window would now wait an hour: the turn ending
        // within the hang guard proves the stored deadline was kept, without timing it.
        std::fs::write(
            lab.dir.path().join("config.toml"),
            "[approvals]\ntimeout_secs = 3600\n",
        )
        .unwrap();
        let restarted_at = chrono::Utc::now();
        node = lab.start().await;
        let done = node.wait_released(&sid, &turn).await;
        let evs = events(&done);
        assert_contiguous(&evs);
        assert_eq!(&evs[..cursor(&before) as usize], &events(&before)[..]);
        let new = after(&evs, cursor(&before));
        assert_eq!(
            types(&new),
            [
                "approval_resolved",
                "tool_result",
                "assistant_message",
                "turn_finished"
            ],
            "{new:?}"
        );
        assert_eq!(new[0]["approval_id"], json!(aid));
        assert_eq!(new[0]["decision"], "timeout");
        assert_eq!(new[0]["answered_by"], "timeout");
        assert!(
            parse_time(new[0]["at"].as_str().unwrap())
                >= restarted_at - chrono::Duration::milliseconds(5)
        );
        assert!(parse_time(new[0]["at"].as_str().unwrap()) >= expires);
        assert_eq!(new[1]["call_id"], json!(call_id));
        assert_eq!(new[1]["status"], "timeout");
        assert!(for_call(&evs, "tool_started", &call_id).is_empty());
        assert_eq!(new[3]["status"], "completed");
        assert_eq!(lab.read(&file), None, "a timed-out tool ran");
        assert_eq!(done["pending"], json!([]));
        assert!(inbox_for(&node, &sid).await.is_empty());
        let gone = node
            .decide(&sid, &aid, json!({"decision": "approve"}))
            .await
            .expect_error(410, "gone");
        assert_eq!(gone["resolution"]["decision"], "timeout");
        assert_eq!(gone["resolution"]["answered_by"], "timeout");

        // Back to 2-second gates for the next round (the running server reloads the file).
        std::fs::write(
            lab.dir.path().join("config.toml"),
            "[approvals]\ntimeout_secs = 2\n",
        )
        .unwrap();
        poll_until("the 2 s window to be in force", SOON, async || {
            let view = node.get("/api/v1/config").await.expect(200);
            let window = view["keys"]
                .as_array()
                .and_then(|keys| keys.iter().find(|k| k["key"] == "approvals.timeout_secs"))
                .map(|k| k["value"].clone());
            if window == Some(json!(2)) {
                Ok(())
            } else {
                Err(format!("{window:?}"))
            }
        })
        .await;
    }
}

// ---------------------------------------------------------------------------------------------
// 3. A tool killed mid-run is reported `interrupted` and never re-run.
// ---------------------------------------------------------------------------------------------

/// Waits until the slow command really runs; its process group dies with the lab.
async fn wait_slow_command_running(
    lab: &Lab,
    node: &Node,
    sid: &str,
    i: usize,
) -> (Value, String, i32) {
    let (snap, call_id, pgid) = wait_slow_running(node, sid, &lab.ws, i).await;
    lab.adopt_orphan(pgid);
    (snap, call_id, pgid)
}

/// After the restart: the open call is reported interrupted, the agent summarizes, the turn
/// completes, and the command did not run a second time.
async fn assert_interrupted_not_rerun(
    lab: &Lab,
    node: &Node,
    sid: &str,
    turn: &str,
    before: &Value,
    call_id: &str,
    i: usize,
) {
    // Wait for the end of the turn, or for evidence of a re-run (a second tool_started or a
    // second start marker; a re-run would then sleep 30 s).
    let marker = format!("started-{i}.txt");
    let done = node
        .wait_snapshot_for(sid, "turn_finished or a re-run", SOON, |s| {
            let evs = events(s);
            evs.iter()
                .any(|e| e["type"] == "turn_finished" && e["turn_id"] == turn)
                || for_call(&evs, "tool_started", call_id).len() > 1
                || lab.lines(&marker).len() > 1
        })
        .await;
    if let Some(pgid) = marked_group(&lab.ws, &format!("slow-{i}")) {
        // A re-run started a new shell group: make sure it dies with the lab.
        lab.adopt_orphan(pgid);
    }
    assert_eq!(
        lab.lines(&marker),
        ["start"],
        "iteration {i}: the command ran again after the restart"
    );
    let evs = events(&done);
    assert_eq!(
        for_call(&evs, "tool_started", call_id).len(),
        1,
        "iteration {i}: the call was started again after the restart"
    );
    assert_contiguous(&evs);
    assert_eq!(&evs[..cursor(before) as usize], &events(before)[..]);
    let new = after(&evs, cursor(before));
    assert_eq!(
        types(&new),
        ["tool_result", "assistant_message", "turn_finished"],
        "{new:?}"
    );
    assert_eq!(new[0]["call_id"], json!(call_id));
    assert_eq!(new[0]["tool"], "shell");
    assert_eq!(new[0]["status"], "interrupted");
    assert_eq!(new[0]["output"], INTERRUPTED);
    let summary = new[1]["text"].as_str().unwrap();
    assert!(
        summary.contains(&format!("[interrupted] {INTERRUPTED}")),
        "the agent's summary does not mention the interruption: {summary}"
    );
    assert_eq!(new[2]["status"], "completed");
    assert_eq!(for_call(&evs, "tool_started", call_id).len(), 1);
    assert_eq!(of_type(&evs, "tool_call").len(), 1);
    assert_eq!(
        lab.lines(&format!("started-{i}.txt")),
        ["start"],
        "the command ran again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_killed_mid_run_is_reported_interrupted_and_never_rerun() {
    let mut lab = Lab::new(None);
    let mut node = lab.start().await;
    for i in 0..10 {
        let sid = node.create_id(json!({})).await;
        let turn = node.send_msg(&sid, &slow_command(i), Some("yolo")).await;
        let (before, call_id, pgid) = wait_slow_command_running(&lab, &node, &sid, i).await;
        let call = &for_call(&events(&before), "tool_call", &call_id)[0];
        assert_eq!(call["verdict"], "run");
        node.kill9().await;
        lab.reap(pgid);
        node = lab.start().await;
        assert_interrupted_not_rerun(&lab, &node, &sid, &turn, &before, &call_id, i).await;
        // Later turns of the session work normally (the session was released).
        let t2 = node
            .send_msg(&sid, "run: echo after >> after.txt", None)
            .await;
        let snap = node.wait_released(&sid, &t2).await;
        assert_eq!(
            of_type(&events(&snap), "turn_finished").last().unwrap()["status"],
            "completed"
        );
    }
    assert_eq!(lab.lines("after.txt").len(), 10);
}

/// The same, for a gated call that was approved and had started when the process died: the
/// resolution is on record, but the tool must still not run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_tool_killed_mid_run_is_reported_interrupted_and_never_rerun() {
    let mut lab = Lab::new(None);
    let mut node = lab.start().await;
    for i in 0..10 {
        let sid = node.create_id(json!({})).await;
        let turn = node.send_msg(&sid, &slow_command(i), Some("ask")).await;
        let (_, card) = node.wait_gate_snapshot(&sid).await;
        let aid = card["approval_id"].as_str().unwrap().to_owned();
        node.decide(&sid, &aid, json!({"decision": "approve"}))
            .await
            .expect(200);
        let (before, call_id, pgid) = wait_slow_command_running(&lab, &node, &sid, i).await;
        assert_eq!(card["call_id"], json!(call_id));
        node.kill9().await;
        lab.reap(pgid);
        node = lab.start().await;
        assert_interrupted_not_rerun(&lab, &node, &sid, &turn, &before, &call_id, i).await;
        assert_eq!(
            resolutions(&events(&node.snapshot(&sid).await), &aid).len(),
            1
        );
    }
}

/// An approval given while its turn is parked commits the call's `tool_started` with it (one
/// fsync fewer before the tool runs). A call approved while it waits for a free slot
/// (`tools.max_parallel = 1`, the other call of its batch running) has therefore "started" when
/// the process dies: it is reported `interrupted` and never run after the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_waiting_for_a_slot_at_the_kill_is_interrupted_never_run() {
    let mut lab = Lab::new(Some("[tools]\nmax_parallel = 1\n"));
    let mut node = lab.start().await;
    for i in 0..10 {
        let sid = node.create_id(json!({})).await;
        let queued = format!("queued-{i}.txt");
        let batch = format!("parallel:\n{}\nwrite {queued}: q", slow_command(i));
        let turn = node.send_msg(&sid, &batch, Some("ask")).await;
        let snap = node
            .wait_snapshot_for(&sid, "both cards", SOON, |s| {
                s["pending"].as_array().is_some_and(|p| p.len() == 2)
            })
            .await;
        let card = |tool: &str| {
            snap["pending"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["tool"] == tool)
                .unwrap_or_else(|| panic!("no {tool} card: {snap}"))
                .clone()
        };
        let (shell, write) = (card("shell"), card("write_file"));
        let aid = |c: &Value| c["approval_id"].as_str().unwrap().to_owned();
        node.decide(&sid, &aid(&shell), json!({"decision": "approve"}))
            .await
            .expect(200);
        let (_, shell_call, pgid) = wait_slow_command_running(&lab, &node, &sid, i).await;
        node.decide(&sid, &aid(&write), json!({"decision": "approve"}))
            .await
            .expect(200);
        let write_call = write["call_id"].as_str().unwrap().to_owned();
        let before = node.snapshot(&sid).await;
        let evs = events(&before);
        assert_eq!(
            for_call(&evs, "tool_started", &write_call).len(),
            1,
            "iteration {i}: the approval did not record the start: {evs:?}"
        );
        assert!(for_call(&evs, "tool_result", &write_call).is_empty());
        assert!(lab.read(&queued).is_none(), "it ran with the slot taken");
        node.kill9().await;
        lab.reap(pgid);
        node = lab.start().await;
        let done = node.wait_released(&sid, &turn).await;
        let evs = events(&done);
        assert_contiguous(&evs);
        assert_eq!(&evs[..cursor(&before) as usize], &events(&before)[..]);
        for call in [&shell_call, &write_call] {
            assert_eq!(for_call(&evs, "tool_started", call).len(), 1, "{evs:?}");
            let results = for_call(&evs, "tool_result", call);
            assert_eq!(results.len(), 1, "{results:?}");
            assert_eq!(results[0]["status"], "interrupted");
            assert_eq!(results[0]["output"], INTERRUPTED);
        }
        assert!(
            lab.read(&queued).is_none(),
            "iteration {i}: the queued write ran after the restart"
        );
        assert_eq!(lab.lines(&format!("started-{i}.txt")), ["start"]);
    }
}

// ---------------------------------------------------------------------------------------------
// 4. A decision committed right before the kill: resolved (ran once) or pending, never both.
// ---------------------------------------------------------------------------------------------

/// A race loops at least this many times, and on until its interesting outcome has shown up…
const MIN_ATTEMPTS: usize = 10;
/// … but fails if it has not after this many.
const MAX_ATTEMPTS: usize = 30;

/// When to kill, counted from the request the kill races: a different moment each attempt
/// (golden-ratio steps, so no two come close), between 0 and a bound that moves with what the
/// kills found: it shrinks to a delay that came after everything the race is about, and grows
/// while its upper half still comes before it. It learns how fast this machine is instead of
/// assuming it.
struct KillDelay {
    /// In ms.
    bound: f64,
    attempt: u32,
}

impl KillDelay {
    fn new(guess_ms: f64) -> KillDelay {
        KillDelay {
            bound: guess_ms,
            attempt: 0,
        }
    }

    fn next(&mut self) -> Duration {
        self.attempt += 1;
        let frac = (f64::from(self.attempt) * 0.618_033_988_749_895).fract();
        Duration::from_secs_f64(self.bound * frac / 1000.0)
    }

    /// The kill came before the moment the race is about.
    fn too_early(&mut self, delay: Duration) {
        if delay.as_secs_f64() * 1000.0 > self.bound / 2.0 {
            self.bound *= 2.0;
        }
    }

    /// The kill came after it.
    fn too_late(&mut self, delay: Duration) {
        self.bound = self.bound.min(delay.as_secs_f64() * 1000.0);
    }
}

/// Fires `decision` at a pending `run:` gate and kills the process a moment later, then checks
/// after the restart: the gate is resolved (once, as decided, and a 200 answer was never lost)
/// or still pending (same card, nothing ran) — never both; the command ran at most once,
/// exactly once when it reports `ok`. The moment of the kill moves until the race has reached
/// the branch it is about: an approved command that was running when the process died (it is
/// reported `interrupted`), or for a denial, the kill landing before the decision's commit
/// once and after it once.
async fn decision_racing_a_kill(decision: &str) {
    let mut lab = Lab::new(None);
    let mut node = lab.start().await;
    let (mut stayed_pending, mut resolved_before, mut ran, mut interrupted, mut denied) =
        (0, 0, 0, 0, 0);
    let mut timing = KillDelay::new(10.0);
    let mut tried = Vec::new();
    for i in 0usize.. {
        let reached = if decision == "approve" {
            interrupted > 0
        } else {
            stayed_pending > 0 && resolved_before > 0
        };
        if i >= MIN_ATTEMPTS && reached {
            break;
        }
        assert!(
            i < MAX_ATTEMPTS,
            "{decision}: after {MAX_ATTEMPTS} kills the race never reached its branch \
             ({stayed_pending} stayed pending, {resolved_before} resolved before the kill; \
             {ran} ran, {interrupted} interrupted, {denied} denied); kill delays and outcomes: \
             {tried:?}"
        );
        let delay = timing.next();
        let sid = node.create_id(json!({})).await;
        let file = format!("counter-{i}.txt");
        let turn = node
            .send_msg(&sid, &format!("run: echo x >> {file}"), Some("ask"))
            .await;
        let (before, card) = node.wait_gate_snapshot(&sid).await;
        let aid = card["approval_id"].as_str().unwrap().to_owned();
        let call_id = assert_card_is_logged(&before, &card);

        // Fire the decision and kill the process `delay` later.
        let url = node.url(&format!("/api/v1/sessions/{sid}/approvals/{aid}"));
        let client = node.client.clone();
        let body = json!({"decision": decision, "reason": "raced"});
        let post = tokio::spawn(async move {
            client
                .post(url)
                .bearer_auth(TOKEN)
                .json(&body)
                .send()
                .await
                .map(|r| r.status().as_u16())
        });
        tokio::time::sleep(delay).await;
        node.kill9().await;
        let answered = post.await.unwrap().ok();
        // A command the kill orphaned finishes its append before anything is counted.
        lab.wait_leftovers_gone().await;
        let ran_before_restart = lab.lines(&file).len();
        assert!(ran_before_restart <= 1);

        node = lab.start().await;
        let snap = node.snapshot(&sid).await;
        let evs = events(&snap);
        assert_contiguous(&evs);
        assert_eq!(&evs[..cursor(&before) as usize], &events(&before)[..]);
        let res = resolutions(&evs, &aid);
        let pending_here = snap["pending"].as_array().unwrap().len();
        let in_inbox = inbox_for(&node, &sid).await.len();
        let was_pending = match res.len() {
            0 => {
                // Still pending: nothing ran, the same card is actionable; a 200 was not lost.
                assert_ne!(
                    answered,
                    Some(200),
                    "iteration {i}: the decision was acknowledged, then lost"
                );
                assert_eq!((pending_here, in_inbox), (1, 1), "{snap}");
                assert_eq!(snap["pending"][0], card);
                assert_eq!(ran_before_restart, 0);
                assert!(for_call(&evs, "tool_started", &call_id).is_empty());
                stayed_pending += 1;
                node.decide(&sid, &aid, json!({"decision": decision, "reason": "raced"}))
                    .await
                    .expect(200);
                true
            }
            1 => {
                assert_eq!(
                    (pending_here, in_inbox),
                    (0, 0),
                    "resolved but still listed pending: {snap}"
                );
                assert_eq!(res[0]["decision"], decision);
                assert_eq!(res[0]["answered_by"], "user");
                resolved_before += 1;
                node.decide(&sid, &aid, json!({"decision": "deny"}))
                    .await
                    .expect_error(409, "already_resolved");
                false
            }
            n => panic!("{n} resolutions of one gate: {res:?}"),
        };
        let done = node.wait_released(&sid, &turn).await;
        let evs = events(&done);
        assert_contiguous(&evs);
        assert_eq!(resolutions(&evs, &aid).len(), 1);
        let started = for_call(&evs, "tool_started", &call_id);
        let results = for_call(&evs, "tool_result", &call_id);
        assert_eq!(results.len(), 1, "iteration {i}: tool_result {results:?}");
        let lines = lab.lines(&file);
        let status = results[0]["status"].as_str().unwrap().to_owned();
        match status.as_str() {
            "ok" => {
                assert_eq!(
                    lines,
                    ["x"],
                    "iteration {i}: an approved tool must run exactly once"
                );
                assert_eq!(started.len(), 1, "iteration {i}: tool_started {started:?}");
                ran += 1;
                // Ran before the kill: the kill came after the whole race.
                if ran_before_restart == 1 {
                    timing.too_late(delay);
                } else {
                    timing.too_early(delay);
                }
            }
            "interrupted" => {
                assert_eq!(started.len(), 1, "iteration {i}: tool_started {started:?}");
                assert_eq!(results[0]["output"], INTERRUPTED);
                assert!(
                    lines.len() <= 1,
                    "iteration {i}: interrupted tool ran again: {lines:?}"
                );
                interrupted += 1;
            }
            "denied" => {
                assert_eq!(decision, "deny");
                assert!(started.is_empty(), "a denied tool started: {started:?}");
                assert!(lines.is_empty(), "a denied tool ran: {lines:?}");
                assert!(
                    results[0]["output"].as_str().unwrap().contains("raced"),
                    "{}",
                    results[0]
                );
                denied += 1;
                if was_pending {
                    timing.too_early(delay);
                } else {
                    timing.too_late(delay);
                }
            }
            other => panic!("unexpected tool_result status {other}: {results:?}"),
        }
        tried.push(format!(
            "{delay:?}: {} then {status}",
            if was_pending { "pending" } else { "resolved" }
        ));
        assert_eq!(
            of_type(&evs, "turn_finished").last().unwrap()["status"],
            "completed"
        );
    }
    eprintln!(
        "{decision} racing a kill: {stayed_pending} stayed pending, {resolved_before} were \
         resolved before the kill; results: {ran} ran, {interrupted} interrupted, {denied} \
         denied; {tried:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_racing_a_kill_is_neither_lost_nor_doubled() {
    decision_racing_a_kill("approve").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_racing_a_kill_is_neither_lost_nor_doubled() {
    decision_racing_a_kill("deny").await;
}

// ---------------------------------------------------------------------------------------------
// 5. kill -9 at any moment of a multi-step yolo turn: no call runs twice, none is lost.
// ---------------------------------------------------------------------------------------------

/// The kill moves over the turn until it has landed while a step's command ran (that step is
/// reported `interrupted`) at least once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_at_any_moment_of_a_running_turn_neither_loses_nor_repeats_a_call() {
    let mut lab = Lab::new(None);
    let mut node = lab.start().await;
    let mut timing = KillDelay::new(120.0);
    let mut interrupted_turns = 0;
    let mut tried = Vec::new();
    for i in 0usize.. {
        if i >= MIN_ATTEMPTS && interrupted_turns > 0 {
            break;
        }
        assert!(
            i < MAX_ATTEMPTS,
            "after {MAX_ATTEMPTS} kills none landed while a step's command ran; kill delays \
             and the lines written before each kill: {tried:?}"
        );
        let delay = timing.next();
        let sid = node.create_id(json!({})).await;
        let file = format!("steps-{i}.txt");
        let text: Vec<String> = (1..=4)
            .map(|k| format!("run: echo {k} >> {file}"))
            .collect();
        let turn = node.send_msg(&sid, &text.join("\n"), Some("yolo")).await;
        tokio::time::sleep(delay).await;
        node.kill9().await;
        // A step the kill orphaned appends before the count, and before a later step can.
        lab.wait_leftovers_gone().await;
        let ran_before_restart = lab.lines(&file).len();
        node = lab.start().await;
        let done = node.wait_released(&sid, &turn).await;
        let evs = events(&done);
        assert_contiguous(&evs);
        let calls = of_type(&evs, "tool_call");
        assert_eq!(
            calls.len(),
            4,
            "every line is one call, issued once: {calls:?}"
        );
        let lines = lab.lines(&file);
        let mut interrupted = 0;
        for (k, call) in calls.iter().enumerate() {
            let call_id = call["call_id"].as_str().unwrap();
            assert_eq!(call["args"]["command"], format!("echo {} >> {file}", k + 1));
            assert_eq!(call["verdict"], "run");
            let results = for_call(&evs, "tool_result", call_id);
            assert_eq!(results.len(), 1, "{results:?}");
            assert!(for_call(&evs, "tool_started", call_id).len() == 1);
            let times = lines.iter().filter(|l| **l == (k + 1).to_string()).count();
            match results[0]["status"].as_str().unwrap() {
                "ok" => assert_eq!(times, 1, "step {} ran {times} times: {lines:?}", k + 1),
                "interrupted" => {
                    assert!(times <= 1, "step {} ran {times} times", k + 1);
                    assert_eq!(results[0]["output"], INTERRUPTED);
                    interrupted += 1;
                }
                other => panic!("status {other}: {results:?}"),
            }
        }
        let mut sorted = lines.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, lines, "steps ran out of order or twice: {lines:?}");
        assert_eq!(of_type(&evs, "turn_finished").len(), 1);
        assert_eq!(of_type(&evs, "turn_finished")[0]["status"], "completed");
        tried.push(format!(
            "{delay:?}: {ran_before_restart} line(s), {interrupted} interrupted"
        ));
        if interrupted > 0 {
            interrupted_turns += 1;
        } else if ran_before_restart == 0 {
            timing.too_early(delay);
        } else if ran_before_restart == calls.len() {
            timing.too_late(delay);
        }
    }
    eprintln!("kills over a running turn: {tried:?}");
}

// ---------------------------------------------------------------------------------------------
// 6. Approval modes survive kill -9; a corrupt mode record falls back to `ask`.
// ---------------------------------------------------------------------------------------------

fn last_mode_changed(events: &[Value]) -> Option<Value> {
    of_type(events, "mode_changed").last().copied().cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_modes_survive_kill_9_and_a_corrupt_record_falls_back_to_ask() {
    let mut lab = Lab::new(None);
    let mut node = lab.start().await;
    // A: yolo; B: the one we corrupt; C: untouched, default ask.
    let a = node.create_id(json!({"title": "A"})).await;
    let t = node.send_msg(&a, "list", Some("yolo")).await;
    node.wait_released(&a, &t).await;
    let b = node.create_id(json!({"title": "B"})).await;
    let t = node.send_msg(&b, "list", Some("auto_edit")).await;
    node.wait_released(&b, &t).await;
    let c = node.create_id(json!({"title": "C"})).await;
    let mut b_mode = "auto_edit";
    let mut restores = 0;
    let garbage = [
        "garbage",
        "YOLO",
        "",
        "plan ",
        "{\"mode\":\"yolo\"}",
        "ask\n",
        "null",
    ];
    for i in 0..10usize {
        let snap_a = node.snapshot(&a).await;
        let snap_b = node.snapshot(&b).await;
        let snap_c = node.snapshot(&c).await;
        node.kill9().await;
        let corrupt = i % 2 == 0;
        if corrupt {
            let g = garbage[(i / 2) % garbage.len()].replace('\'', "''");
            lab.sql(&format!(
                "UPDATE sessions SET approval_mode = '{g}' WHERE id = '{b}'"
            ));
        }
        node = lab.start().await;

        // A and C are untouched.
        let a_now = node.snapshot(&a).await;
        assert_eq!(a_now["session"]["approval_mode"], "yolo");
        assert_eq!(a_now["events"], snap_a["events"]);
        let c_now = node.snapshot(&c).await;
        assert_eq!(c_now["session"]["approval_mode"], "ask");
        assert_eq!(c_now["events"], snap_c["events"]);
        assert_eq!(c_now["cursor"], 0);

        let b_now = node.snapshot(&b).await;
        let b_evs = events(&b_now);
        assert_contiguous(&b_evs);
        assert_eq!(&b_evs[..cursor(&snap_b) as usize], &events(&snap_b)[..]);
        if corrupt {
            restores += 1;
            assert_eq!(
                b_now["session"]["approval_mode"], "ask",
                "corrupt mode must come back as ask"
            );
            let new = after(&b_evs, cursor(&snap_b));
            assert_eq!(types(&new), ["mode_changed"], "{new:?}");
            assert_eq!(new[0]["previous"], b_mode);
            assert_eq!(new[0]["next"], "ask");
            assert_eq!(new[0]["source"], "restore");
            assert!(
                new[0].get("turn_id").is_none_or(Value::is_null),
                "{}",
                new[0]
            );
            b_mode = "ask";
        } else {
            assert_eq!(
                b_now["session"]["approval_mode"], b_mode,
                "mode lost across restart"
            );
            assert_eq!(b_now["events"], snap_b["events"]);
        }
        let restore_events = b_evs
            .iter()
            .filter(|e| e["type"] == "mode_changed" && e["source"] == "restore")
            .count();
        assert_eq!(restore_events, restores, "one restore event per corruption");
        // In every listing too.
        let list = node.get("/api/v1/sessions").await.expect(200);
        let row = |id: &str| {
            list.as_array()
                .unwrap()
                .iter()
                .find(|s| s["id"] == id)
                .cloned()
                .unwrap()
        };
        assert_eq!(row(&a)["approval_mode"], "yolo");
        assert_eq!(row(&b)["approval_mode"], json!(b_mode));
        assert_eq!(row(&c)["approval_mode"], "ask");

        // Yolo is really in force: a shell command runs without a card.
        let t = node
            .send_msg(&a, &format!("run: echo {i} >> a.txt"), None)
            .await;
        let done = node.wait_released(&a, &t).await;
        let new = after(&events(&done), cursor(&a_now));
        assert!(of_type(&new, "approval_request").is_empty(), "{new:?}");
        assert_eq!(of_type(&new, "tool_result")[0]["status"], "ok");

        // An explicit mode on the next message wins now (and after the next restart).
        let next = if i % 2 == 0 { "auto_edit" } else { "yolo" };
        let t = node
            .send_msg(&b, &format!("write b-{i}.txt: v{i}"), Some(next))
            .await;
        let done = node.wait_released(&b, &t).await;
        let new = after(&events(&done), cursor(&b_now));
        if next != b_mode {
            let mc = last_mode_changed(&new).expect("mode_changed for the message's mode");
            assert_eq!(mc["previous"], b_mode);
            assert_eq!(mc["next"], next);
            assert_eq!(mc["source"], "message");
        } else {
            assert!(last_mode_changed(&new).is_none());
        }
        assert!(of_type(&new, "approval_request").is_empty(), "{new:?}");
        assert_eq!(
            lab.read(&format!("b-{i}.txt")).as_deref(),
            Some(format!("v{i}").as_str())
        );
        assert_eq!(done["session"]["approval_mode"], next);
        b_mode = next;
    }
    // And once more after the last explicit mode.
    node.kill9().await;
    node = lab.start().await;
    assert_eq!(
        node.snapshot(&b).await["session"]["approval_mode"],
        json!(b_mode)
    );
    assert_eq!(node.snapshot(&a).await["session"]["approval_mode"], "yolo");
    assert_eq!(lab.lines("a.txt").len(), 10);
}

// ---------------------------------------------------------------------------------------------
// 7. A plan card approved after kill -9 leaves plan mode for the card's execution mode.
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_approved_after_kill_9_leaves_plan_mode_and_the_turn_carries_it_out() {
    let mut lab = Lab::new(None);
    let mut node = lab.start().await;
    for i in 0..10usize {
        let sid = node.create_id(json!({})).await;
        let r = node
            .put(
                &format!("/api/v1/sessions/{sid}/mode"),
                json!({"approval_mode": "auto_edit"}),
            )
            .await
            .expect(200);
        assert_eq!(r, json!({"previous": "ask", "approval_mode": "auto_edit"}));
        let r = node
            .put(
                &format!("/api/v1/sessions/{sid}/mode"),
                json!({"approval_mode": "plan"}),
            )
            .await
            .expect(200);
        assert_eq!(r, json!({"previous": "auto_edit", "approval_mode": "plan"}));
        let file = format!("after-plan-{i}.txt");
        let turn = node
            .send_msg(
                &sid,
                &format!("propose plan: do it {i}\nwrite {file}: x{i}"),
                None,
            )
            .await;
        let (before, card) = node.wait_gate_snapshot(&sid).await;
        assert_eq!(card["kind"], "decision");
        assert_eq!(card["decision_kind"], "plan");
        assert_eq!(card["tool"], "exit_plan");
        assert_eq!(card["execution_mode"], "auto_edit");
        let aid = card["approval_id"].as_str().unwrap().to_owned();
        let call_id = assert_card_is_logged(&before, &card);

        node.kill9().await;
        node = lab.start().await;
        assert_gate_parked_again(&node, &sid, &turn, &before, &card).await;
        assert_eq!(
            node.snapshot(&sid).await["session"]["approval_mode"],
            "plan"
        );

        node.decide(&sid, &aid, json!({"decision": "approve"}))
            .await
            .expect(200);
        let done = node.wait_released(&sid, &turn).await;
        assert_eq!(done["session"]["approval_mode"], "auto_edit");
        let evs = events(&done);
        assert_contiguous(&evs);
        let new = after(&evs, cursor(&before));
        assert_eq!(
            types(&new),
            [
                "approval_resolved",
                "mode_changed",
                "tool_result",
                "tool_call",
                "tool_started",
                "tool_result",
                "assistant_message",
                "turn_finished"
            ],
            "{new:?}"
        );
        assert_eq!(new[0]["decision"], "approve");
        assert_eq!(new[1]["previous"], "plan");
        assert_eq!(new[1]["next"], "auto_edit");
        assert_eq!(new[2]["call_id"], json!(call_id));
        assert_eq!(new[2]["status"], "ok");
        assert_eq!(new[3]["tool"], "write_file");
        assert_eq!(
            new[3]["verdict"], "run",
            "auto_edit runs writes without a card"
        );
        assert_eq!(new[5]["status"], "ok");
        assert_eq!(new[7]["status"], "completed");
        assert_eq!(lab.read(&file).as_deref(), Some(format!("x{i}").as_str()));

        if i % 2 == 1 {
            // The mode it left plan for survives the next crash too.
            node.kill9().await;
            node = lab.start().await;
            let snap = node.snapshot(&sid).await;
            assert_eq!(snap["session"]["approval_mode"], "auto_edit");
            assert_eq!(snap["events"], done["events"]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 8. SIGTERM with three SSE clients: prompt exit, streams end, pending gate stays pending.
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_three_sse_clients_exits_promptly_and_keeps_the_gate_pending() {
    let mut lab = Lab::new(None);
    let mut node = lab.start().await;
    for i in 0..10usize {
        let sid = node.create_id(json!({})).await;
        let other = node.create_id(json!({})).await;
        let file = format!("term-{i}.txt");
        let turn = node
            .send_msg(&sid, &format!("run: echo t >> {file}"), Some("ask"))
            .await;
        let (before, card) = node.wait_gate_snapshot(&sid).await;
        let aid = card["approval_id"].as_str().unwrap().to_owned();
        let last = cursor(&before);
        // Three clients: two replaying this session, one idle on another session.
        let mut s1 = node.sse(&sid, Some(0), None).await;
        let mut s2 = node.sse(&sid, Some(last - 1), None).await;
        let mut s3 = node.sse(&other, Some(0), None).await;
        s1.until_seq(SOON, last).await;
        s2.until_seq(SOON, last).await;

        // SOON only guards against a hang. "Promptly" is what the server itself says: it waits
        // at most 5 s for its connections, and says so when it gives up on them.
        let (status, _) = node.sigterm(SOON).await.unwrap_or_else(|| {
            panic!(
                "iteration {i}: still running {SOON:?} after SIGTERM\n{}",
                lab.logs()
            )
        });
        assert!(
            status.success(),
            "exit status after SIGTERM: {status:?}\n{}",
            lab.logs()
        );
        assert!(
            !lab.logs().contains("still open after 5 s"),
            "iteration {i}: the server had to give up on its open streams\n{}",
            lab.logs()
        );
        // The process is gone, so every stream has ended: each reads to its end.
        for (n, s) in [&mut s1, &mut s2, &mut s3].into_iter().enumerate() {
            assert!(s.ends_within(SOON).await, "stream {n} did not end");
        }

        node = lab.start().await;
        assert_gate_parked_again(&node, &sid, &turn, &before, &card).await;
        assert_eq!(lab.read(&file), None);
        node.decide(&sid, &aid, json!({"decision": "approve"}))
            .await
            .expect(200);
        let done = node.wait_released(&sid, &turn).await;
        let new = after(&events(&done), last);
        assert_eq!(
            types(&new),
            [
                "approval_resolved",
                "tool_started",
                "tool_result",
                "assistant_message",
                "turn_finished"
            ]
        );
        assert_eq!(new[2]["status"], "ok");
        assert_eq!(new[4]["status"], "completed");
        assert_eq!(lab.lines(&file), ["t"]);
    }
}

/// A kill -9 leaves the data dir restartable (how fast a restart is, is the bench's figure).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_9_leaves_the_server_restartable() {
    let mut lab = Lab::new(None);
    let node = lab.start().await;
    let health = node.get("/api/v1/health").await.expect(200);
    assert_eq!(health["status"], "ok");
    let sid = node.session().await;
    node.kill9().await;
    let node = lab.start().await;
    node.get("/api/v1/health").await.expect(200);
    assert_eq!(node.list().await.len(), 1, "{sid} survived");
}

// ---------------------------------------------------------------------------------------------
// 9. A snapshot (what a reload or a restarted client restores from) tells one story.
// ---------------------------------------------------------------------------------------------

/// The snapshot's pending cards are exactly the gates its events opened and did not resolve.
fn snapshot_story(snap: &Value) -> Result<(), String> {
    let evs = events(snap);
    let ids = |ty: &str| -> std::collections::BTreeSet<String> {
        of_type(&evs, ty)
            .iter()
            .map(|e| e["approval_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let open: Vec<String> = ids("approval_request")
        .difference(&ids("approval_resolved"))
        .cloned()
        .collect();
    let pending: Vec<String> = snap["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["approval_id"].as_str().unwrap().to_owned())
        .collect();
    let last = evs.last().map(|e| e["seq"].as_u64().unwrap()).unwrap_or(0);
    if cursor(snap) != last {
        return Err(format!("cursor {} but last seq {last}", cursor(snap)));
    }
    if open != pending {
        return Err(format!(
            "events (up to cursor {last}) leave {open:?} open but pending lists {pending:?}"
        ));
    }
    if snap["session"]["pending_approvals"] != json!(pending.len()) {
        return Err(format!(
            "pending_approvals {} but {} cards",
            snap["session"]["pending_approvals"],
            pending.len()
        ));
    }
    Ok(())
}

/// Snapshots of one session taken one after another, each checked with [`snapshot_story`],
/// for as long as `during` runs (a transition of the session, ended by what its feed says),
/// then one more after it. Returns what `during` returned.
async fn snapshots_during<T>(
    node: &Node,
    sid: &str,
    phase: &str,
    tally: &mut Tally,
    during: impl Future<Output = T>,
) -> T {
    let mut during = std::pin::pin!(during);
    loop {
        tokio::select! {
            biased;
            out = &mut during => {
                tally.check(phase, &node.snapshot(sid).await);
                return out;
            }
            snap = node.snapshot(sid) => {
                tally.check(phase, &snap);
                tally.mid_transition += 1;
            }
        }
    }
}

#[derive(Default)]
struct Tally {
    checked: usize,
    /// Snapshots that were taken while the transition was still going on.
    mid_transition: usize,
    bad: Vec<String>,
}

impl Tally {
    fn check(&mut self, phase: &str, snap: &Value) {
        self.checked += 1;
        if let Err(e) = snapshot_story(snap) {
            self.bad.push(format!("{phase}: {e}"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_are_consistent_with_their_pending_cards() {
    let mut lab = Lab::new(None);
    let node = lab.start().await;
    let (mut opening, mut resolving) = (Tally::default(), Tally::default());
    for i in 0..20usize {
        let sid = node.create_id(json!({})).await;
        let mut feed = node.sse(&sid, None, None).await;
        let turn = node
            .send_msg(&sid, &format!("run: echo c >> snap-{i}.txt"), Some("ask"))
            .await;
        // Snapshots across the gate opening, until the feed shows its request …
        let phase = format!("iteration {i}, opening");
        let frames = snapshots_during(
            &node,
            &sid,
            &phase,
            &mut opening,
            feed.until(SOON, |f| f.is("approval_request")),
        )
        .await;
        let request = frames.last().unwrap().json();
        let aid = str_of(&request, "approval_id").to_owned();
        // … and across its resolution, until the feed shows the command starting.
        let phase = format!("iteration {i}, resolving");
        let (answer, _) = snapshots_during(&node, &sid, &phase, &mut resolving, async {
            tokio::join!(
                node.decide(&sid, &aid, json!({"decision": "approve"})),
                feed.until(SOON, |f| f.is("tool_started"))
            )
        })
        .await;
        answer.expect(200);
        node.wait_released(&sid, &turn).await;
    }
    for (phase, tally) in [("opening", &opening), ("resolving", &resolving)] {
        assert!(
            tally.bad.is_empty(),
            "{} of {} snapshots were inconsistent:\n{}",
            tally.bad.len(),
            tally.checked,
            tally.bad.join("\n")
        );
        // Worth something only if some snapshots were taken while the gate was changing.
        assert!(
            tally.mid_transition > 0,
            "no snapshot was taken while a gate was {phase}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 10. Parallel gates: every card of a batch comes back; one answered before the kill stays done.
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_gate_of_a_parallel_batch_is_parked_again_and_none_runs_twice() {
    let mut lab = Lab::new(None);
    let mut node = lab.start().await;
    for i in 0..10usize {
        let sid = node.create_id(json!({})).await;
        let (fa, fb) = (format!("pa-{i}.txt"), format!("pb-{i}.txt"));
        let turn = node
            .send_msg(
                &sid,
                &format!("parallel:\nrun: echo a >> {fa}\nrun: echo b >> {fb}"),
                Some("ask"),
            )
            .await;
        let snap = node
            .wait_snapshot(&sid, "two pending gates", |s| {
                s["pending"].as_array().unwrap().len() == 2
                    && of_type(&events(s), "approval_request").len() == 2
            })
            .await;
        let cards = snap["pending"].as_array().unwrap().clone();
        let card_of = |file: &str| {
            cards
                .iter()
                .find(|c| c["args"]["command"].as_str().unwrap().ends_with(file))
                .cloned()
                .unwrap()
        };
        let (ca, cb) = (card_of(&fa), card_of(&fb));
        assert_ne!(ca["approval_id"], cb["approval_id"]);
        // Odd iterations answer one card before the crash and let it run.
        let answered_first = i % 2 == 1;
        if answered_first {
            node.decide(
                &sid,
                ca["approval_id"].as_str().unwrap(),
                json!({"decision": "approve"}),
            )
            .await
            .expect(200);
            let call = ca["call_id"].as_str().unwrap().to_owned();
            node.wait_snapshot(&sid, "the first call's result", |s| {
                !for_call(&events(s), "tool_result", &call).is_empty()
            })
            .await;
        }
        let before = node.snapshot(&sid).await;
        node.kill9().await;
        node = lab.start().await;
        let snap = node.snapshot(&sid).await;
        assert_eq!(snap["events"], before["events"]);
        let still: Vec<Value> = if answered_first {
            vec![cb.clone()]
        } else {
            vec![ca.clone(), cb.clone()]
        };
        let mut pending = snap["pending"].as_array().unwrap().clone();
        pending.sort_by_key(|c| c["args"]["command"].as_str().unwrap().to_owned());
        assert_eq!(
            pending, still,
            "the pending cards changed across the restart"
        );
        assert_eq!(inbox_for(&node, &sid).await.len(), still.len());
        assert_eq!(snap["session"]["running_turn_id"], json!(turn));
        for card in &still {
            node.decide(
                &sid,
                card["approval_id"].as_str().unwrap(),
                json!({"decision": "approve"}),
            )
            .await
            .expect(200);
        }
        let done = node.wait_released(&sid, &turn).await;
        let evs = events(&done);
        assert_contiguous(&evs);
        for card in [&ca, &cb] {
            let call = card["call_id"].as_str().unwrap();
            assert_eq!(for_call(&evs, "tool_started", call).len(), 1);
            let results = for_call(&evs, "tool_result", call);
            assert_eq!(results.len(), 1);
            assert_eq!(results[0]["status"], "ok");
            assert_eq!(
                resolutions(&evs, card["approval_id"].as_str().unwrap()).len(),
                1
            );
        }
        assert_eq!(lab.lines(&fa), ["a"]);
        assert_eq!(lab.lines(&fb), ["b"]);
        assert_eq!(of_type(&evs, "turn_finished")[0]["status"], "completed");
        assert_eq!(of_type(&evs, "assistant_message").len(), 1);
    }
}
