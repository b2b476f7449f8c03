//! Several `countersign serve` instances on one PostgreSQL database (docs/api.md sections 3–8;
//! the multi-instance feature): the real binary is started three times, each with its own data
//! directory but the same workspace, token and database (`COUNTERSIGN_DATABASE_URL`), and the
//! tests drive them over HTTP as clients behind a load balancer would — any request may land on
//! any instance.
//!
//! What is proved:
//! - a feed (SSE) opened on one instance receives every event of a turn another instance runs,
//!   live, in order, with contiguous seqs, exactly as the owner's snapshot has them;
//! - a decision posted on one instance resolves a gate whose turn is parked on another, and that
//!   turn goes on; when 30 deciders race over three instances exactly one wins (one 200, one
//!   `approval_resolved`, one audit entry), the rest get `409 already_resolved`, and the command
//!   runs at most once;
//! - turn leases: when the instance running a turn is killed (`kill -9`), another one takes the
//!   turn over from the log within seconds, as a restart would: a pending gate keeps its
//!   approval id and deadline and stays actionable; a tool that had started is reported
//!   `interrupted` and never run again; the turn then finishes normally;
//! - a turn is never driven by two instances: an owner paused (SIGSTOP) past its lease loses the
//!   turn to another instance, and once resumed it writes nothing more for it and runs nothing
//!   again, also when the card's deadline passed while it was frozen;
//! - `POST …/cancel` on any instance cancels the turn wherever it runs (a parked gate resolves
//!   `cancelled`, a running command is killed);
//! - a database outage (a proxy between the instances and PostgreSQL drops every connection and
//!   refuses new ones): health and every request that needs the database answer
//!   `503 storage_unavailable`, a decision is not applied and a parked turn keeps waiting; when
//!   the database is back the instances recover by themselves, the gate is answered once, its
//!   command runs once and the audit chain holds.
//!
//! Needs a PostgreSQL server to create throwaway databases on: `COUNTERSIGN_TEST_POSTGRES_URL`
//! (`scripts/test` starts one and exports it). Without it the tests are skipped, except under
//! CI, where that is a failure. Each test creates its own database, so they run in parallel.
//! Build and run with `cargo test --features ssr --test instances`.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

/// Instance indexes in a [`Cluster`].
const A: usize = 0;
const B: usize = 1;
const C: usize = 2;
const NAMES: [&str; 3] = ["A", "B", "C"];

/// The lease a turn's instance renews every second (the feature's TTL).
const LEASE_TTL: Duration = Duration::from_secs(5);
/// How soon after its owner died a turn must be running elsewhere: the TTL plus a one-second
/// scan, with plenty of room for a loaded machine (two cores, shared).
const TAKEOVER: Duration = Duration::from_secs(20);
/// How long a paused owner stays stopped: well past its lease and the next scan.
const PAUSE: Duration = Duration::from_secs(12);
/// How often the "nothing changes" checks look.
const STEADY_POLL: Duration = Duration::from_millis(250);

// ---------------------------------------------------------------------------------------------
// A throwaway database
// ---------------------------------------------------------------------------------------------

/// The PostgreSQL server the tests may create databases on. CI must have one; a developer's
/// `cargo test` may not (the test is then skipped, with a note).
fn test_postgres() -> Option<String> {
    match std::env::var("COUNTERSIGN_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs the multi-instance tests on PostgreSQL: set \
                 COUNTERSIGN_TEST_POSTGRES_URL (scripts/test does)"
            );
            eprintln!("skipped: COUNTERSIGN_TEST_POSTGRES_URL is not set");
            None
        }
    }
}

/// A fresh database on the test server, dropped (with whatever is still connected to it) when
/// this drops.
struct TestDb {
    /// The server's own URL (its maintenance database), to create and drop from.
    server: String,
    name: String,
    /// The URL the instances are given.
    url: String,
}

impl TestDb {
    async fn create(server: &str) -> TestDb {
        use sqlx::Connection;
        let name = format!("cs_{}", uuid::Uuid::new_v4().simple());
        let mut conn = sqlx::postgres::PgConnection::connect(server)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to the test PostgreSQL at {server}: {e}"));
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        let _ = conn.close().await;
        let (base, _) = server
            .rsplit_once('/')
            .unwrap_or_else(|| panic!("{server} names no database"));
        TestDb {
            server: server.to_owned(),
            url: format!("{base}/{name}"),
            name,
        }
    }
}

impl Drop for TestDb {
    /// Best effort (a leftover database on a throwaway server harms nothing): on a thread of
    /// its own with its own runtime, since this may run inside the test's runtime.
    fn drop(&mut self) {
        let server = self.server.clone();
        let name = self.name.clone();
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime to drop the database");
            rt.block_on(async {
                use sqlx::Connection;
                let mut conn = sqlx::postgres::PgConnection::connect(&server).await?;
                sqlx::query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE datname = $1 AND pid <> pg_backend_pid()",
                )
                .bind(&name)
                .execute(&mut conn)
                .await?;
                sqlx::query(&format!("DROP DATABASE IF EXISTS {name}"))
                    .execute(&mut conn)
                    .await?;
                conn.close().await
            })
        })
        .join();
        match dropped {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("note: could not drop the test database {}: {e}", self.name),
            Err(_) => eprintln!("note: dropping the test database {} panicked", self.name),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Several instances on it
// ---------------------------------------------------------------------------------------------

/// N `serve` processes on one database: one shared workspace, one data directory each. An
/// instance can be killed (`kill -9`), paused and resumed (SIGSTOP, SIGCONT) and started again
/// on its data directory. Everything is killed when the cluster drops (also when a test
/// panics, which also prints every instance's log), then the database is dropped.
struct Cluster {
    /// Declared first: dropped after the processes (killed in `drop`), before the temp dir.
    db: TestDb,
    /// The URL the instances are given instead of the database's own (a proxy's), if any.
    routed_url: Option<String>,
    dir: tempfile::TempDir,
    ws: PathBuf,
    nodes: Vec<Option<Node>>,
    /// Every start's stderr (tracing), labelled with the instance and the start.
    logs: Vec<(String, Arc<Mutex<String>>)>,
    /// Process groups of shell commands a killed instance left running.
    orphans: Mutex<Vec<i32>>,
    /// The config file every instance is started with, if any (`--config`).
    config: Option<PathBuf>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
        }
        // SIGKILL and reap every instance (a stopped one too), before the database goes.
        self.nodes.clear();
        for pgid in self.orphans.lock().unwrap().drain(..) {
            kill_group(pgid);
        }
    }
}

impl Cluster {
    /// A fresh database and `n` instances on it, all listening; `None` (the test is skipped)
    /// when there is no test PostgreSQL.
    async fn start(n: usize) -> Option<Cluster> {
        Cluster::start_via(n, None, None).await
    }

    /// As [`Cluster::start`], every instance with this config file's text.
    async fn start_configured(n: usize, config: &str) -> Option<Cluster> {
        Cluster::start_via(n, None, Some(config)).await
    }

    /// As [`Cluster::start`]; with a proxy, the instances reach the database through it (the
    /// database itself is still created and dropped directly on the server).
    async fn start_via(n: usize, proxy: Option<&DbProxy>, config: Option<&str>) -> Option<Cluster> {
        assert!(n <= NAMES.len());
        let server = test_postgres()?;
        let db = TestDb::create(&server).await;
        let routed_url = proxy.map(|p| p.route(&db.url));
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let config = config.map(|text| {
            let path = dir.path().join("config.toml");
            std::fs::write(&path, text).unwrap();
            path
        });
        let mut cluster = Cluster {
            config,
            db,
            routed_url,
            dir,
            ws,
            nodes: (0..n).map(|_| None).collect(),
            logs: Vec::new(),
            orphans: Mutex::new(Vec::new()),
        };
        // All spawned before any is waited for: they start, and meet the schema, together.
        let procs: Vec<(Proc, Instant)> = (0..n).map(|i| cluster.spawn(i)).collect();
        for (i, (proc, started)) in procs.into_iter().enumerate() {
            let node = listening(proc, started).await;
            cluster.nodes[i] = Some(node);
        }
        Some(cluster)
    }

    fn data_dir(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("data-{}", NAMES[i]))
    }

    /// Starts instance `i`'s process (not waiting for it to listen).
    fn spawn(&mut self, i: usize) -> (Proc, Instant) {
        let mut cmd = serve_command(&["--addr", "127.0.0.1:0", "--token", TOKEN]);
        cmd.arg("--data-dir")
            .arg(self.data_dir(i))
            .arg("--workspace")
            .arg(&self.ws)
            .env(
                "COUNTERSIGN_DATABASE_URL",
                self.routed_url.as_deref().unwrap_or(&self.db.url),
            )
            .env("RUST_LOG", "countersign=info");
        if let Some(config) = &self.config {
            cmd.arg("--config").arg(config);
        }
        let started = Instant::now();
        let proc = Proc::spawn(cmd);
        let start = 1 + self
            .logs
            .iter()
            .filter(|(label, _)| label.starts_with(&format!("instance {} ", NAMES[i])))
            .count();
        self.logs.push((
            format!("instance {} (start {start}, pid {})", NAMES[i], proc.pid()),
            proc.stderr_buffer(),
        ));
        (proc, started)
    }

    /// The running instance `i`.
    #[track_caller]
    fn node(&self, i: usize) -> &Node {
        self.nodes[i]
            .as_ref()
            .unwrap_or_else(|| panic!("instance {} is not running", NAMES[i]))
    }

    /// `kill -9` instance `i`; returns once the process is gone.
    async fn kill9(&mut self, i: usize) {
        let node = self.nodes[i]
            .take()
            .unwrap_or_else(|| panic!("instance {} is not running", NAMES[i]));
        node.kill9().await;
    }

    /// SIGSTOP: the process freezes, its connections stay open, it answers nothing.
    fn pause(&self, i: usize) {
        self.node(i).proc.signal(libc::SIGSTOP);
    }

    /// SIGCONT: the paused process goes on where it was stopped.
    fn resume(&self, i: usize) {
        self.node(i).proc.signal(libc::SIGCONT);
    }

    /// Starts instance `i` again on its data directory (after a kill) and waits until it
    /// listens.
    async fn restart(&mut self, i: usize) -> &Node {
        assert!(
            self.nodes[i].is_none(),
            "instance {} is still running",
            NAMES[i]
        );
        let (proc, started) = self.spawn(i);
        self.nodes[i] = Some(listening(proc, started).await);
        self.node(i)
    }

    fn ws_path(&self, name: &str) -> PathBuf {
        self.ws.join(name)
    }

    /// The lines of a workspace file (none when it does not exist).
    fn lines(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.ws_path(name))
            .map(|t| t.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// Remembers a shell's process group so it is killed at the latest when the cluster drops.
    fn adopt_orphan(&self, pgid: i32) {
        self.orphans.lock().unwrap().push(pgid);
    }

    /// Kills a shell's process group now.
    fn reap(&self, pgid: i32) {
        kill_group(pgid);
        self.orphans.lock().unwrap().retain(|p| *p != pgid);
    }

    /// Every start's stderr so far, for failure messages.
    fn logs(&self) -> String {
        let mut all = String::new();
        for (label, log) in &self.logs {
            all.push_str(&format!("==== {label} ====\n"));
            all.push_str(&log.lock().unwrap());
        }
        all
    }
}

/// Waits for `listening on …` and wraps the process with a client for it.
async fn listening(mut proc: Proc, started: Instant) -> Node {
    let base = proc.listening(SOON).await;
    Node {
        proc,
        api: Api::new(&base),
        started_in: started.elapsed(),
    }
}

// ---------------------------------------------------------------------------------------------
// Turns, gates and commands
// ---------------------------------------------------------------------------------------------

/// Sends `text` in ask mode on `node` and waits until its gate is pending there (the card, and
/// its `approval_request` in the same snapshot); returns (turn id, that snapshot, the card).
async fn park_gate(node: &Node, sid: &str, text: &str) -> (String, Value, Value) {
    let turn = node.send_msg(sid, text, Some("ask")).await;
    let (snap, card) = node.wait_gate_snapshot(sid).await;
    assert_eq!(card["turn_id"], json!(turn), "{card}");
    assert_eq!(card["kind"], "tool", "{card}");
    assert_eq!(card["tool"], "shell", "{card}");
    assert_eq!(
        snap["pending"].as_array().unwrap().len(),
        1,
        "one gate: {snap:#}"
    );
    (turn, snap, card)
}

/// Sends the slow command (in `mode`) on `node` and waits until it really runs: `tool_started`
/// logged and its pid file written. Returns (turn id, the snapshot while it runs, call id, the
/// shell's process group — adopted, so it dies with the cluster at the latest).
async fn start_slow(
    cluster: &Cluster,
    node: &Node,
    sid: &str,
    tag: &str,
    mode: &str,
) -> (String, Value, String, i32) {
    let turn = node.send_msg(sid, &slow_command(tag), Some(mode)).await;
    let (now, call_id, pgid) = wait_slow_running(node, sid, &cluster.ws, tag).await;
    cluster.adopt_orphan(pgid);
    (turn, now, call_id, pgid)
}

/// Whether the process runs: it exists and is not a zombie (a killed child its server has not
/// reaped yet no longer runs).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// `POST …/cancel` on `node`, expecting 200 naming `turn`.
async fn cancel(node: &Node, sid: &str, turn: &str) {
    let v = node
        .post(&format!("/api/v1/sessions/{sid}/cancel"), json!({}))
        .await
        .expect(200);
    assert_eq!(
        v,
        json!({ "turn_id": turn }),
        "the cancel names the turn it stops"
    );
}

/// Waits until the turn's `turn_finished` is in the log as `node` reads it, within `limit`;
/// returns that snapshot.
async fn wait_finished(node: &Node, sid: &str, turn: &str, limit: Duration) -> Value {
    node.wait_snapshot_for(sid, &format!("turn {turn} to finish"), limit, |s| {
        events(s)
            .iter()
            .any(|e| e["type"] == "turn_finished" && e["turn_id"] == turn)
    })
    .await
}

/// Waits until every one of `nodes` shows the turn finished and the session free (no running
/// turn): then a next message may go to any of them. Returns the last instance's snapshot.
async fn wait_free(nodes: &[&Node], sid: &str, turn: &str) -> Value {
    let mut last = Value::Null;
    for node in nodes {
        last = node.wait_released(sid, turn).await;
    }
    last
}

/// Asserts that for `window` every one of `nodes` shows the session exactly as `expected`
/// does: the same log and the same pending cards (nothing written, nothing resolved).
async fn assert_steady(nodes: &[&Node], sid: &str, expected: &Value, window: Duration, why: &str) {
    let until = Instant::now() + window;
    loop {
        for node in nodes {
            let snap = node.snapshot(sid).await;
            assert_eq!(
                snap["events"], expected["events"],
                "{why}: the log changed (as read by {})",
                node.base
            );
            assert_eq!(
                snap["pending"], expected["pending"],
                "{why}: the pending cards changed (as read by {})",
                node.base
            );
        }
        if Instant::now() >= until {
            return;
        }
        tokio::time::sleep(STEADY_POLL).await;
    }
}

/// The audit entries of `action` about `subject`.
async fn audit_of(node: &Node, action: &str, subject: &str) -> Vec<Value> {
    node.get(&format!("/api/v1/audit?action={action}&subject={subject}"))
        .await
        .expect(200)
        .as_array()
        .expect("the audit is an array")
        .clone()
}

/// After a gated `run:` was approved and ran once: the tail of the log after `before` is the
/// approved call running to the end of a completed turn, and the command ran exactly once.
fn assert_approved_ran_once(
    cluster: &Cluster,
    done: &Value,
    before: &Value,
    card: &Value,
    marker: &str,
    line: &str,
) {
    let evs = events(done);
    assert_contiguous(&evs);
    assert_eq!(
        &evs[..cursor(before) as usize],
        &events(before)[..],
        "the log before the decision was rewritten"
    );
    let aid = aid(card);
    let call_id = id_of(card, "call_id");
    let new = after(&evs, cursor(before));
    assert_eq!(
        types(&new),
        [
            "approval_resolved",
            "tool_started",
            "tool_result",
            "assistant_message",
            "turn_finished"
        ],
        "after the approval: {new:#?}"
    );
    assert_eq!(new[0]["approval_id"], json!(aid));
    assert_eq!(new[0]["decision"], "approve");
    assert_eq!(new[0]["answered_by"], "user");
    assert_eq!(new[0]["actor"], "token:admin");
    assert_eq!(resolutions(&evs, &aid).len(), 1, "one resolution: {evs:#?}");
    assert_eq!(for_call(&evs, "tool_started", &call_id).len(), 1);
    let results = for_call(&evs, "tool_result", &call_id);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert_eq!(results[0]["status"], "ok", "{}", results[0]);
    assert_eq!(new[4]["status"], "completed", "{}", new[4]);
    assert_eq!(
        cluster.lines(marker),
        [line],
        "the approved command must run exactly once"
    );
}

// ---------------------------------------------------------------------------------------------
// 1. The feed
// ---------------------------------------------------------------------------------------------

/// A feed opened on C before anything happened receives, live, every event of a turn A runs,
/// then of a turn B runs on the same session: in order, contiguous, each exactly once, and
/// exactly what the owners' snapshots hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_on_one_instance_sees_a_turn_started_on_another() {
    let Some(cluster) = Cluster::start(3).await else {
        return;
    };
    let (a, b, c) = (cluster.node(A), cluster.node(B), cluster.node(C));
    let sid = a
        .create_id(json!({ "title": "fan-out", "approval_mode": "yolo" }))
        .await;
    // Created on A, known to every instance at once (it is in the database).
    assert_eq!(c.snapshot(&sid).await["session"]["id"], json!(sid));
    let mut feed = c.sse(&sid, Some(0), None).await;
    let opened_at = cursor(&c.snapshot(&sid).await);

    // Turn 1 on A: three calls, each run without a gate (yolo).
    let t1 = a
        .send_msg(
            &sid,
            "run: echo one\nrun: echo two\nwrite fanout.txt: three",
            None,
        )
        .await;
    let frames = feed
        .until(SOON, |f| {
            f.is("turn_finished") && f.json()["turn_id"] == json!(t1)
        })
        .await;
    let owner = events(&a.wait_turn(&sid, &t1).await);
    let mut seen: Vec<Value> = Vec::new();
    for frame in &frames {
        frame.check_consistent();
        if frame.seq().is_some() {
            seen.push(frame.json());
        }
    }
    assert_eq!(
        seen, owner,
        "C's feed must deliver exactly the log A wrote, in order"
    );
    assert_contiguous(&seen);
    assert!(
        seen.iter().all(|e| e["seq"].as_u64().unwrap() > opened_at),
        "the feed was opened at seq {opened_at}: all of the turn came live"
    );
    let turn1 = turn_events(&json!({ "events": seen }), &t1);
    assert_eq!(types(&turn1).first().unwrap(), "user_message");
    assert_eq!(types(&turn1).last().unwrap(), "turn_finished");
    assert_eq!(turn1.last().unwrap()["status"], "completed");
    let results = of_type(&turn1, "tool_result");
    assert_eq!(results.len(), 3, "{turn1:#?}");
    assert!(
        results.iter().all(|r| r["status"] == "ok"),
        "every call ran: {results:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(cluster.ws_path("fanout.txt")).ok(),
        Some("three".to_owned()),
        "A wrote into the shared workspace"
    );

    // Turn 2 on B (the session is free again wherever it is asked): the same feed goes on,
    // with no gap and no duplicate across the two owners.
    wait_free(&[a, b, c], &sid, &t1).await;
    let t2 = b.send_msg(&sid, "hello from B", None).await;
    let more = feed
        .until(SOON, |f| {
            f.is("turn_finished") && f.json()["turn_id"] == json!(t2)
        })
        .await;
    for frame in &more {
        frame.check_consistent();
        if frame.seq().is_some() {
            seen.push(frame.json());
        }
    }
    let all = events(&b.wait_turn(&sid, &t2).await);
    assert_eq!(
        seen, all,
        "C's feed must deliver A's turn, then B's, exactly as logged"
    );
    assert_contiguous(&seen);
    let turn2 = turn_events(&json!({ "events": all }), &t2);
    assert_eq!(
        types(&turn2),
        ["user_message", "assistant_message", "turn_finished"],
        "{turn2:#?}"
    );
    // Every instance reads the same log.
    assert_eq!(events(&a.snapshot(&sid).await), all);
    assert_eq!(events(&c.snapshot(&sid).await), all);
}

// ---------------------------------------------------------------------------------------------
// 2. A decision on another instance
// ---------------------------------------------------------------------------------------------

/// A's turn waits on a gate; B sees it in its inbox and approves it; A's turn runs the command
/// (into the shared workspace) and completes, and C reads the same, single resolution.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_parked_on_one_instance_is_approved_on_another() {
    let Some(cluster) = Cluster::start(3).await else {
        return;
    };
    let (a, b, c) = (cluster.node(A), cluster.node(B), cluster.node(C));
    let sid = a.create_id(json!({ "title": "approve elsewhere" })).await;
    let turn = a
        .send_msg(&sid, "run: echo ok > approved.txt", Some("ask"))
        .await;

    // B finds the gate in its inbox and its snapshot: the same card A parked on.
    let card = b.wait_inbox_gate(&sid).await;
    assert_eq!(card["turn_id"], json!(turn), "{card}");
    assert_eq!(card["tool"], "shell", "{card}");
    let (before, a_card) = a.wait_gate_snapshot(&sid).await;
    assert_eq!(
        card, a_card,
        "B's inbox card differs from A's snapshot card"
    );
    let b_snap = b.snapshot(&sid).await;
    assert_eq!(b_snap["pending"], json!([card]), "B's snapshot: {b_snap:#}");
    assert!(
        !cluster.ws_path("approved.txt").exists(),
        "nothing may run before the decision"
    );

    let decided = b
        .decide(
            &sid,
            &aid(&card),
            json!({ "decision": "approve", "digest": card["digest"] }),
        )
        .await
        .expect(200);
    assert_eq!(decided["approval_id"], card["approval_id"]);
    assert_eq!(decided["decision"], "approve");

    wait_file(&cluster.ws_path("approved.txt"), "ok\n").await;
    let done = wait_finished(c, &sid, &turn, SOON).await;
    assert_approved_ran_once(&cluster, &done, &before, &card, "approved.txt", "ok");
    assert_eq!(done["pending"], json!([]));
    for node in [a, b, c] {
        assert!(
            node.inbox().await.iter().all(|g| g["session_id"] != sid),
            "the gate is still in {}'s inbox",
            node.base
        );
        assert_eq!(
            events(&node.snapshot(&sid).await),
            events(&done),
            "{} reads another log",
            node.base
        );
    }
    // Answering again, anywhere, is refused with the standing resolution.
    let again = c
        .decide(&sid, &aid(&card), json!({ "decision": "deny" }))
        .await
        .expect_error(409, "already_resolved");
    assert_eq!(again["resolution"]["decision"], "approve", "{again}");
}

// ---------------------------------------------------------------------------------------------
// 3. Racing deciders
// ---------------------------------------------------------------------------------------------

/// 30 decisions, approvals and denials, fired together at one gate through all three
/// instances: exactly one 200; every other answer is 409 already_resolved naming the winner's
/// decision; the log has one `approval_resolved`, the winner's; the audit one `gate_resolved`;
/// the command ran once if the approval won, never if the denial did. Three rounds, each with
/// its turn on another instance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_deciders_over_three_instances_one_wins() {
    const DECIDERS: usize = 30;
    let Some(cluster) = Cluster::start(3).await else {
        return;
    };
    let nodes = [cluster.node(A), cluster.node(B), cluster.node(C)];
    let mut outcomes = Vec::new();
    for round in 0..3 {
        let owner = nodes[round];
        let sid = owner.session().await;
        let marker = format!("ran-{round}.txt");
        let (turn, before, card) =
            park_gate(owner, &sid, &format!("run: echo x >> {marker}")).await;
        let aid = aid(&card);
        let call_id = id_of(&card, "call_id");

        let bodies: Vec<Value> = (0..DECIDERS)
            .map(|i| {
                json!({
                    "decision": if i % 2 == 0 { "approve" } else { "deny" },
                    "reason": format!("decider {i}"),
                    "client_id": format!("decider-{i}"),
                })
            })
            .collect();
        let answers = futures::future::join_all(
            bodies
                .iter()
                .enumerate()
                .map(|(i, body)| nodes[i % 3].decide(&sid, &aid, body.clone())),
        )
        .await;

        let winners: Vec<usize> = (0..DECIDERS)
            .filter(|i| answers[*i].status.as_u16() == 200)
            .collect();
        assert_eq!(
            winners.len(),
            1,
            "round {round}: exactly one decision may win; answers: {:#?}",
            answers
                .iter()
                .map(|r| (r.status.as_u16(), r.body.as_str()))
                .collect::<Vec<_>>()
        );
        let w = winners[0];
        let won = bodies[w]["decision"].as_str().unwrap().to_owned();
        let ok = answers[w].json();
        assert_eq!(ok["approval_id"], json!(aid), "{ok}");
        assert_eq!(ok["decision"], json!(won), "{ok}");
        for (i, answer) in answers.iter().enumerate() {
            if i == w {
                continue;
            }
            let lost = answer.expect_error(409, "already_resolved");
            assert_eq!(
                lost["resolution"]["decision"],
                json!(won),
                "round {round}: decider {i} was told another resolution: {lost}"
            );
        }

        let done = wait_finished(nodes[(round + 1) % 3], &sid, &turn, SOON).await;
        let evs = events(&done);
        assert_contiguous(&evs);
        assert_eq!(&evs[..cursor(&before) as usize], &events(&before)[..]);
        let res = resolutions(&evs, &aid);
        assert_eq!(res.len(), 1, "round {round}: resolutions {res:#?}");
        assert_eq!(res[0]["decision"], json!(won));
        assert_eq!(
            res[0]["client_id"],
            json!(format!("decider-{w}")),
            "round {round}: the logged resolution is not the one answered 200"
        );
        let gate_resolved = audit_of(nodes[(round + 2) % 3], "gate_resolved", &aid).await;
        assert_eq!(
            gate_resolved.len(),
            1,
            "round {round}: one audit entry for the gate: {gate_resolved:#?}"
        );
        let started = for_call(&evs, "tool_started", &call_id);
        let results = for_call(&evs, "tool_result", &call_id);
        assert_eq!(results.len(), 1, "round {round}: {results:#?}");
        let lines = cluster.lines(&marker);
        if won == "approve" {
            assert_eq!(started.len(), 1, "round {round}: {started:#?}");
            assert_eq!(results[0]["status"], "ok", "{}", results[0]);
            assert_eq!(
                lines,
                ["x"],
                "round {round}: the approved command must run exactly once"
            );
        } else {
            assert!(started.is_empty(), "round {round}: a denied tool started");
            assert_eq!(results[0]["status"], "denied", "{}", results[0]);
            assert!(
                lines.is_empty(),
                "round {round}: a denied tool ran: {lines:?}"
            );
        }
        assert_eq!(only(&evs, "turn_finished")["status"], "completed");
        outcomes.push(format!("round {round}: decider {w} ({won}) won"));
    }
    // One audit chain for all three instances, and it holds.
    let verify = nodes[C].get("/api/v1/audit/verify").await.expect(200);
    assert_eq!(verify["ok"], true, "{verify}");
    eprintln!("{}", outcomes.join("; "));
}

// ---------------------------------------------------------------------------------------------
// 4. Takeover of a killed owner's gate
// ---------------------------------------------------------------------------------------------

/// A's turn waits on a gate; A is killed. Past A's lease (when another instance has taken the
/// turn over) the gate is exactly as it was — same card, same approval id and `expires_at`, no
/// event written — and an approval on B lets the turn run the command once and complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_killed_with_a_gate_pending_is_taken_over() {
    let Some(mut cluster) = Cluster::start(3).await else {
        return;
    };
    let sid = cluster.node(A).session().await;
    let (turn, before, card) = park_gate(cluster.node(A), &sid, "run: echo ran >> ran.txt").await;
    let killed_at = Instant::now();
    cluster.kill9(A).await;

    // Through the lease's lapse and the takeover: the takeover writes nothing, the card
    // stays as it was, on every surviving instance.
    let (b, c) = (cluster.node(B), cluster.node(C));
    let window = (LEASE_TTL + Duration::from_secs(3)).saturating_sub(killed_at.elapsed());
    assert_steady(
        &[b, c],
        &sid,
        &before,
        window,
        "a takeover must park the gate again as it was",
    )
    .await;
    let pending = b.snapshot(&sid).await["pending"].clone();
    assert_eq!(pending, json!([card]), "the pending card changed");
    assert_eq!(pending[0]["approval_id"], card["approval_id"]);
    assert_eq!(pending[0]["expires_at"], card["expires_at"]);
    let inbox: Vec<Value> = b
        .inbox()
        .await
        .into_iter()
        .filter(|g| g["session_id"] == sid)
        .collect();
    assert_eq!(inbox, vec![card.clone()], "B's inbox card differs");
    assert!(
        cluster.lines("ran.txt").is_empty(),
        "nothing ran before the decision"
    );

    b.decide(
        &sid,
        &aid(&card),
        json!({ "decision": "approve", "digest": card["digest"] }),
    )
    .await
    .expect(200);
    let limit = TAKEOVER.saturating_sub(killed_at.elapsed()).max(LEASE_TTL);
    let done = wait_finished(c, &sid, &turn, limit).await;
    assert_approved_ran_once(&cluster, &done, &before, &card, "ran.txt", "ran");
    assert_eq!(done["pending"], json!([]));
    assert_eq!(events(&b.snapshot(&sid).await), events(&done));
    // The session is free again: a next turn starts on any instance.
    wait_free(&[b, c], &sid, &turn).await;
    let (_, next) = b.run_turn(&sid, "hello again", None).await;
    assert_eq!(
        only(&next, "turn_finished")["status"],
        "completed",
        "{next:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// 5. Takeover of a killed owner's running command
// ---------------------------------------------------------------------------------------------

/// A's turn runs a slow command; A is killed (and the command with it). Within the takeover
/// bound another instance reports the call `interrupted` — never running it again — and the
/// turn completes. A started again on its data directory changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_killed_with_a_command_running_is_taken_over_interrupted() {
    let Some(mut cluster) = Cluster::start(3).await else {
        return;
    };
    let sid = cluster.node(A).session().await;
    let (turn, before, call_id, pgid) =
        start_slow(&cluster, cluster.node(A), &sid, "killed", "yolo").await;
    let call = &for_call(&events(&before), "tool_call", &call_id)[0];
    assert_eq!(call["verdict"], "run", "{call}");
    let killed_at = Instant::now();
    cluster.kill9(A).await;
    cluster.reap(pgid);

    // Wait for the end of the turn, or for evidence of a re-run (a second tool_started or a
    // second start marker; a re-run would then sleep 30 s).
    let marker = "started-killed.txt";
    let done = {
        let b = cluster.node(B);
        let cluster = &cluster;
        b.wait_snapshot_for(
            &sid,
            "another instance to finish the killed owner's turn (or to re-run its command)",
            TAKEOVER,
            |s| {
                let evs = events(s);
                evs.iter()
                    .any(|e| e["type"] == "turn_finished" && e["turn_id"] == turn)
                    || for_call(&evs, "tool_started", &call_id).len() > 1
                    || cluster.lines(marker).len() > 1
            },
        )
        .await
    };
    let took = killed_at.elapsed();
    if let Some(again) = marked_group(&cluster.ws, "slow-killed")
        && again != pgid
    {
        // A re-run started a new shell group: make sure it dies with the cluster.
        cluster.adopt_orphan(again);
    }
    assert_eq!(
        cluster.lines(marker),
        ["start"],
        "the command ran again after the takeover"
    );
    let evs = events(&done);
    assert_eq!(
        for_call(&evs, "tool_started", &call_id).len(),
        1,
        "the call was started again after the takeover"
    );
    assert_contiguous(&evs);
    assert_eq!(
        &evs[..cursor(&before) as usize],
        &events(&before)[..],
        "the log before the kill was rewritten"
    );
    let new = after(&evs, cursor(&before));
    assert_eq!(
        types(&new),
        ["tool_result", "assistant_message", "turn_finished"],
        "after the takeover: {new:#?}"
    );
    assert_eq!(new[0]["call_id"], json!(call_id));
    assert_eq!(new[0]["tool"], "shell");
    assert_eq!(new[0]["status"], "interrupted", "{}", new[0]);
    assert!(
        new[0]["output"]
            .as_str()
            .is_some_and(|o| !o.trim().is_empty()),
        "an interrupted result says why: {}",
        new[0]
    );
    let summary = new[1]["text"].as_str().unwrap();
    assert!(
        summary.contains("[interrupted]"),
        "the agent's summary does not mention the interruption: {summary}"
    );
    assert_eq!(new[2]["turn_id"], json!(turn));
    assert_eq!(new[2]["status"], "completed", "{}", new[2]);
    assert_eq!(of_type(&evs, "tool_call").len(), 1);
    eprintln!("the killed owner's turn was finished elsewhere {took:?} after the kill");

    // A comes back on its data directory: it finds the turn finished and leaves it alone.
    cluster.restart(A).await;
    let (a, b, c) = (cluster.node(A), cluster.node(B), cluster.node(C));
    assert_steady(
        &[a, b, c],
        &sid,
        &done,
        Duration::from_secs(3),
        "the restarted owner must leave a finished turn alone",
    )
    .await;
    assert_eq!(cluster.lines(marker), ["start"], "the command ran again");
    // The session is free again: a next turn starts on any instance.
    wait_free(&[a, b, c], &sid, &turn).await;
    let t2 = c.send_msg(&sid, "run: echo after >> after.txt", None).await;
    let snap = wait_finished(a, &sid, &t2, SOON).await;
    assert_eq!(
        of_type(&events(&snap), "turn_finished").last().unwrap()["status"],
        "completed"
    );
    assert_eq!(cluster.lines("after.txt"), ["after"]);
}

// ---------------------------------------------------------------------------------------------
// 6. A paused owner is fenced
// ---------------------------------------------------------------------------------------------

/// A's turn waits on a gate; A is paused (SIGSTOP) well past its lease, so another instance
/// takes the turn over. B approves; the taker runs the command and completes the turn. A is
/// resumed: it still believes it parks the gate, now answered — yet it must write nothing more
/// for the turn (its writes are fenced by the lease) and run nothing. The log stays exactly as
/// the taker left it, and the command ran once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_owner_loses_its_turn_and_writes_nothing_after() {
    let Some(cluster) = Cluster::start(3).await else {
        return;
    };
    let (a, b, c) = (cluster.node(A), cluster.node(B), cluster.node(C));
    let sid = a.session().await;
    let (turn, before, card) = park_gate(a, &sid, "run: echo start >> paused.txt").await;

    cluster.pause(A);
    // Fixed on purpose: the paused owner shows nothing to poll for; this is past its lease
    // (5 s) and the scan that takes the turn over.
    tokio::time::sleep(PAUSE).await;
    let still = b.snapshot(&sid).await;
    assert_eq!(
        still["events"], before["events"],
        "nothing happens to a parked turn while its owner is paused"
    );
    assert_eq!(still["pending"], json!([card]));

    b.decide(&sid, &aid(&card), json!({ "decision": "approve" }))
        .await
        .expect(200);
    // A is still frozen: only the instance that took the turn over can finish it.
    let done = wait_finished(c, &sid, &turn, SOON).await;
    assert_approved_ran_once(&cluster, &done, &before, &card, "paused.txt", "start");

    // A wakes with the turn it thought it held; whatever it tries for it must not land.
    resume_former_owner(&cluster, &[b, c], &sid, &done, "paused.txt").await;
    let evs = events(&b.snapshot(&sid).await);
    assert_contiguous(&evs);
    let call_id = id_of(&card, "call_id");
    assert_eq!(
        for_call(&evs, "tool_started", &call_id).len(),
        1,
        "{evs:#?}"
    );
    assert_eq!(for_call(&evs, "tool_result", &call_id).len(), 1, "{evs:#?}");
    assert_eq!(of_type(&evs, "turn_finished").len(), 1, "{evs:#?}");
    assert_eq!(
        evs.last().unwrap()["type"],
        "turn_finished",
        "nothing may follow the turn's end: {evs:#?}"
    );

    // A is a working instance again: it reads the same log, lets go of the turn it lost, and
    // can run a turn of its own.
    assert_eq!(events(&a.snapshot(&sid).await), evs, "A reads another log");
    wait_free(&[a, b, c], &sid, &turn).await;
    let (t2, next) = a
        .run_turn(&sid, "run: echo again >> again.txt", Some("yolo"))
        .await;
    assert_eq!(
        only(&next, "turn_finished")["status"],
        "completed",
        "A's next turn {t2}: {next:#?}"
    );
    assert_eq!(cluster.lines("again.txt"), ["again"]);
    assert_eq!(cluster.lines("paused.txt"), ["start"]);
}

/// The same pause, but the card's deadline passes while the owner is frozen: on waking, its
/// deadline fires before any news of the answer, its timeout loses to the answer another
/// instance recorded, and the log shows that instance's `tool_started`. That start is not
/// this instance's to continue: it must not run the command (a second time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_owner_past_the_cards_deadline_does_not_run_the_call_again() {
    let Some(cluster) = Cluster::start_configured(3, "[approvals]\ntimeout_secs = 9\n").await
    else {
        return;
    };
    let (a, b, c) = (cluster.node(A), cluster.node(B), cluster.node(C));
    let sid = a.session().await;
    let (turn, before, card) = park_gate(a, &sid, "run: echo start >> deadline.txt").await;
    cluster.pause(A);
    // Past the lease (5 s) and the takeover scan, inside the card's 9 s.
    tokio::time::sleep(Duration::from_secs(7)).await;
    b.decide(&sid, &aid(&card), json!({ "decision": "approve" }))
        .await
        .expect(200);
    let done = wait_finished(c, &sid, &turn, SOON).await;
    assert_approved_ran_once(&cluster, &done, &before, &card, "deadline.txt", "start");
    // Past the card's deadline, then A wakes.
    tokio::time::sleep(PAUSE - Duration::from_secs(7)).await;
    resume_former_owner(&cluster, &[b, c], &sid, &done, "deadline.txt").await;
}

/// Resumes the paused former owner (A) and checks that, for the turn it lost, it writes
/// nothing (the others still read `done`) and runs nothing again (`marker` holds one line).
async fn resume_former_owner(
    cluster: &Cluster,
    others: &[&Node],
    sid: &str,
    done: &Value,
    marker: &str,
) {
    cluster.resume(A);
    assert_steady(
        others,
        sid,
        done,
        Duration::from_secs(5),
        "the resumed former owner wrote to a turn it had lost",
    )
    .await;
    assert_eq!(
        cluster.lines(marker),
        ["start"],
        "the resumed former owner ran the command again"
    );
}

// ---------------------------------------------------------------------------------------------
// 7. Cancel from another instance
// ---------------------------------------------------------------------------------------------

/// A cancel posted on B stops a turn that runs on A: a parked gate resolves `cancelled` and
/// nothing runs; a running command is killed. Either turn ends `cancelled`, as C reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_on_one_instance_stops_the_turn_on_another() {
    let Some(cluster) = Cluster::start(3).await else {
        return;
    };
    let (a, b, c) = (cluster.node(A), cluster.node(B), cluster.node(C));

    // A turn parked on a gate.
    let gated = a.session().await;
    let (turn, before, card) = park_gate(a, &gated, "run: echo no >> never.txt").await;
    cancel(b, &gated, &turn).await;
    let done = wait_finished(c, &gated, &turn, SOON).await;
    let evs = events(&done);
    assert_contiguous(&evs);
    assert_eq!(&evs[..cursor(&before) as usize], &events(&before)[..]);
    // Whether a cancelled turn still gets a summary is not this test's business.
    let new: Vec<Value> = after(&evs, cursor(&before))
        .into_iter()
        .filter(|e| e["type"] != "assistant_message")
        .collect();
    assert_eq!(
        types(&new),
        ["approval_resolved", "tool_result", "turn_finished"],
        "after the cancel: {new:#?}"
    );
    assert_eq!(new[0]["approval_id"], card["approval_id"]);
    assert_eq!(new[0]["decision"], "cancelled", "{}", new[0]);
    assert_eq!(new[0]["answered_by"], "system", "{}", new[0]);
    assert_eq!(new[1]["status"], "cancelled", "{}", new[1]);
    assert_eq!(new[2]["status"], "cancelled", "{}", new[2]);
    assert!(of_type(&evs, "tool_started").is_empty());
    assert_eq!(done["pending"], json!([]));
    let gone = c
        .decide(&gated, &aid(&card), json!({ "decision": "approve" }))
        .await
        .expect_error(410, "gone");
    assert_eq!(gone["resolution"]["decision"], "cancelled", "{gone}");
    assert!(
        cluster.lines("never.txt").is_empty(),
        "a cancelled gate's command ran"
    );

    // A turn running a slow command (30 s): it can only end soon because the cancel killed it.
    let running = a.session().await;
    let (turn, before, call_id, pid) = start_slow(&cluster, a, &running, "cancel", "yolo").await;
    assert!(alive(pid), "the command is not running");
    let cancelled_at = Instant::now();
    cancel(b, &running, &turn).await;
    let done = wait_finished(c, &running, &turn, SOON).await;
    let evs = events(&done);
    assert_contiguous(&evs);
    assert_eq!(&evs[..cursor(&before) as usize], &events(&before)[..]);
    let results = for_call(&evs, "tool_result", &call_id);
    assert_eq!(results.len(), 1, "{evs:#?}");
    assert_eq!(results[0]["status"], "cancelled", "{}", results[0]);
    let fin = only(&evs, "turn_finished");
    assert_eq!(fin["turn_id"], json!(turn));
    assert_eq!(fin["status"], "cancelled", "{fin}");
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(25),
        "the turn ended only when the command did ({:?}): the cancel did not kill it",
        cancelled_at.elapsed()
    );
    poll_until("the cancelled command to be gone", SOON, async || {
        if alive(pid) {
            Err(format!("pid {pid} still runs"))
        } else {
            Ok(())
        }
    })
    .await;
    assert_eq!(cluster.lines("started-cancel.txt"), ["start"]);
    // Nothing is running any more: a second cancel, from any instance, has nothing to stop.
    wait_free(&[a, b, c], &running, &turn).await;
    for node in [a, b, c] {
        node.post(&format!("/api/v1/sessions/{running}/cancel"), json!({}))
            .await
            .expect_error(409, "no_turn_running");
    }
}

// ---------------------------------------------------------------------------------------------
// 8. A database outage
// ---------------------------------------------------------------------------------------------

/// How long the database stays away: past a turn's lease, which its owner cannot renew
/// meanwhile, so the instances come back to lapsed leases.
const OUTAGE: Duration = LEASE_TTL.saturating_add(Duration::from_secs(3));

/// A TCP proxy between the instances and PostgreSQL, to take the database away and give it
/// back. It forwards every connection it accepts to the database server, both ways. `cut`
/// closes every connection it forwards at once and from then on closes each new one as soon as
/// it is accepted (connecting fails at once instead of hanging); `restore` forwards again.
struct DbProxy {
    port: u16,
    state: Arc<Mutex<ProxyState>>,
    accept: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct ProxyState {
    cut: bool,
    /// The forwarding tasks; each owns both ends of its connection.
    conns: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for DbProxy {
    fn drop(&mut self) {
        self.accept.abort();
        for conn in self.state.lock().unwrap().conns.drain(..) {
            conn.abort();
        }
    }
}

impl DbProxy {
    /// Listens on a free loopback port and forwards to the server `db_url` names.
    async fn start(db_url: &str) -> DbProxy {
        let url = reqwest::Url::parse(db_url).unwrap_or_else(|e| panic!("{db_url}: {e}"));
        let host = url
            .host_str()
            .unwrap_or_else(|| panic!("{db_url} names no host"));
        let upstream = format!("{host}:{}", url.port().unwrap_or(5432));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(ProxyState::default()));
        let shared = state.clone();
        let accept = tokio::spawn(async move {
            loop {
                let client = match listener.accept().await {
                    Ok((client, _)) => client,
                    Err(_) => {
                        tokio::time::sleep(POLL).await;
                        continue;
                    }
                };
                let mut state = shared.lock().unwrap();
                if state.cut {
                    drop(client);
                    continue;
                }
                let upstream = upstream.clone();
                let conn = tokio::spawn(async move {
                    let mut client = client;
                    if let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                state.conns.retain(|c| !c.is_finished());
                state.conns.push(conn);
            }
        });
        DbProxy {
            port,
            state,
            accept,
        }
    }

    /// `db_url` with the proxy in place of the database server.
    fn route(&self, db_url: &str) -> String {
        let mut url = reqwest::Url::parse(db_url).unwrap_or_else(|e| panic!("{db_url}: {e}"));
        url.set_host(Some("127.0.0.1")).unwrap();
        url.set_port(Some(self.port)).unwrap();
        url.to_string()
    }

    /// The database goes away: every forwarded connection is closed (both ends) before this
    /// returns, and new ones are closed as soon as they are accepted.
    async fn cut(&self) {
        let conns = {
            let mut state = self.state.lock().unwrap();
            state.cut = true;
            std::mem::take(&mut state.conns)
        };
        for conn in conns {
            conn.abort();
            let _ = conn.await;
        }
    }

    /// The database comes back: new connections are forwarded again.
    fn restore(&self) {
        self.state.lock().unwrap().cut = false;
    }
}

/// Polls `GET /api/v1/health` on instance `i` until it answers `status`; returns that answer.
async fn wait_health(cluster: &Cluster, i: usize, status: u16, limit: Duration) -> Resp {
    let node = cluster.node(i);
    poll_until(
        &format!("instance {}'s health to answer {status}", NAMES[i]),
        limit,
        async || {
            let resp = node.get("/api/v1/health").await;
            if resp.status.as_u16() == status {
                Ok(resp)
            } else {
                Err(format!("{} {}", resp.status, resp.body))
            }
        },
    )
    .await
}

/// A's turn waits on a gate (B sees it too) when the database goes away. While it is away:
/// health and every request that needs it answer `503 storage_unavailable` on both instances,
/// and an approval is refused, not applied; the turn keeps waiting. Once it is back, the
/// instances recover by themselves: health is 200 again, the gate is still pending as it was,
/// an approval on B lets the command run once and the turn complete, the log and the audit
/// chain are whole, and A runs a new session's turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_answers_503_and_the_instance_recovers() {
    let Some(server) = test_postgres() else {
        return;
    };
    // Declared before the cluster: it drops after it (the instances are gone first).
    let proxy = DbProxy::start(&server).await;
    let Some(cluster) = Cluster::start_via(2, Some(&proxy), None).await else {
        return;
    };
    let (a, b) = (cluster.node(A), cluster.node(B));
    let sid = a.create_id(json!({ "approval_mode": "ask" })).await;
    let (turn, before, card) = park_gate(a, &sid, "run: echo once >> out.txt").await;
    let (b_before, b_card) = b.wait_gate_snapshot(&sid).await;
    assert_eq!(b_card, card, "B's card differs from A's");
    assert_eq!(b_before["events"], before["events"], "B reads another log");
    let aid = aid(&card);

    // The database goes away.
    let cut_at = Instant::now();
    proxy.cut().await;
    for i in [A, B] {
        let resp = wait_health(&cluster, i, 503, SOON).await;
        let body = resp.expect_error(503, "storage_unavailable");
        assert_eq!(
            body["status"], "unavailable",
            "instance {}: {body}",
            NAMES[i]
        );
    }
    let unavailable_in = cut_at.elapsed();
    // Health said so: every connection is gone, so whatever needs the database fails now.
    for (i, node) in [(A, a), (B, b)] {
        let who = NAMES[i];
        node.post(
            "/api/v1/sessions",
            json!({ "title": format!("during the outage ({who})") }),
        )
        .await
        .expect_error(503, "storage_unavailable");
        node.get(&format!("/api/v1/sessions/{sid}"))
            .await
            .expect_error(503, "storage_unavailable");
        node.decide(
            &sid,
            &aid,
            json!({ "decision": "approve", "client_id": format!("outage-{who}") }),
        )
        .await
        .expect_error(503, "storage_unavailable");
    }
    // Past the turn's lease, still away: nothing ran, and both instances still say so.
    tokio::time::sleep(OUTAGE.saturating_sub(cut_at.elapsed())).await;
    assert!(
        cluster.lines("out.txt").is_empty(),
        "the command ran during the outage"
    );
    for i in [A, B] {
        wait_health(&cluster, i, 503, Duration::ZERO)
            .await
            .expect_error(503, "storage_unavailable");
    }

    // The database comes back; the instances find it by themselves.
    let restored_at = Instant::now();
    proxy.restore();
    for i in [A, B] {
        let ok = wait_health(&cluster, i, 200, SOON).await.expect(200);
        assert_eq!(ok["status"], "ok", "instance {}: {ok}", NAMES[i]);
    }
    let healthy_in = restored_at.elapsed();

    // The gate is as it was: not resolved by the refused approvals, nothing written for it.
    for node in [a, b] {
        let snap = node.snapshot(&sid).await;
        assert_eq!(
            snap["events"], before["events"],
            "the log changed across the outage (as read by {})",
            node.base
        );
        assert_eq!(
            snap["pending"],
            json!([card]),
            "the gate is no longer pending as it was (as read by {})",
            node.base
        );
        assert_eq!(
            snap["session"]["running_turn_id"],
            json!(turn),
            "the turn no longer runs (as read by {})",
            node.base
        );
    }
    assert!(
        audit_of(b, "gate_resolved", &aid).await.is_empty(),
        "a refused approval left an audit entry"
    );
    assert!(
        b.inbox_ids().await.contains(&aid),
        "the gate is not in B's inbox"
    );

    let decided = b
        .decide(
            &sid,
            &aid,
            json!({ "decision": "approve", "digest": card["digest"] }),
        )
        .await
        .expect(200);
    assert_eq!(decided["approval_id"], json!(aid), "{decided}");
    assert_eq!(decided["decision"], "approve", "{decided}");
    let done = wait_finished(a, &sid, &turn, SOON).await;
    assert_approved_ran_once(&cluster, &done, &before, &card, "out.txt", "once");
    let evs = events(&done);
    for kind in [
        "approval_resolved",
        "tool_started",
        "tool_result",
        "turn_finished",
    ] {
        assert_eq!(of_type(&evs, kind).len(), 1, "one {kind}: {evs:#?}");
    }
    assert_eq!(events(&b.snapshot(&sid).await), evs, "B reads another log");
    let resolved = audit_of(a, "gate_resolved", &aid).await;
    assert_eq!(
        resolved.len(),
        1,
        "one audit entry for the gate: {resolved:#?}"
    );
    let verify = a.get("/api/v1/audit/verify").await.expect(200);
    assert_eq!(verify["ok"], true, "the audit chain is broken: {verify}");
    assert!(verify.get("first_bad").is_none(), "{verify}");

    // Who drove the turn after the outage (the lease had lapsed): for the record.
    let took_over: Vec<&str> = cluster
        .logs
        .iter()
        .filter(|(_, log)| log.lock().unwrap().contains("taking a turn over"))
        .map(|(label, _)| label.as_str())
        .collect();

    // A works again on its own: a new session, a new turn.
    wait_free(&[a, b], &sid, &turn).await;
    let fresh = a.session().await;
    let (t2, next) = a
        .run_turn(&fresh, "run: echo after >> after.txt", Some("yolo"))
        .await;
    assert_eq!(
        only(&next, "turn_finished")["status"],
        "completed",
        "A's turn {t2} after the outage: {next:#?}"
    );
    assert_eq!(cluster.lines("after.txt"), ["after"]);
    assert_eq!(cluster.lines("out.txt"), ["once"]);
    eprintln!(
        "health answered 503 {unavailable_in:?} after the cut and 200 {healthy_in:?} after the \
         restore; turns taken over by: {took_over:?}"
    );
}
