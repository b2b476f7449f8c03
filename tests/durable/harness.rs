//! The harness for the process-level crash tests: the real `countersign` binary started as a
//! child process on a loopback port, killed with SIGKILL (a real `kill -9`) or stopped with
//! SIGTERM, and started again on the same data directory; a bearer-authenticated HTTP client;
//! polling helpers over the session snapshot; a raw SSE reader.
//!
//! Every child is killed when its handle drops (also when a test panics), and every shell
//! process group a kill left orphaned is killed when its `Lab` drops.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub const TOKEN: &str = "test-token-123";
/// Upper bound for anything that should happen "soon" (generous: the machine is shared).
pub const SOON: Duration = Duration::from_secs(30);
/// How often snapshots are polled.
const POLL: Duration = Duration::from_millis(15);

/// One data directory and workspace, used by successive server processes.
pub struct Lab {
    pub dir: tempfile::TempDir,
    pub data: PathBuf,
    pub ws: PathBuf,
    config: Option<PathBuf>,
    starts: usize,
    /// Process groups of shell commands a kill left running; killed on drop.
    orphans: Mutex<Vec<i32>>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for pgid in self.orphans.lock().unwrap().drain(..) {
            kill_group(pgid);
        }
    }
}

fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: plain syscall; a negative pid addresses the process group we recorded.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

impl Lab {
    /// A fresh temp dir; `config` (TOML) is written to a file passed with `--config`.
    pub fn new(config: Option<&str>) -> Lab {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let config = config.map(|text| {
            let path = dir.path().join("config.toml");
            std::fs::write(&path, text).unwrap();
            path
        });
        Lab {
            dir,
            data,
            ws,
            config,
            starts: 0,
            orphans: Mutex::new(Vec::new()),
        }
    }

    pub fn db(&self) -> PathBuf {
        self.data.join("countersign.db")
    }

    pub fn ws_path(&self, name: &str) -> PathBuf {
        self.ws.join(name)
    }

    /// A workspace file's text, if it exists.
    pub fn read(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.ws_path(name)).ok()
    }

    /// The lines of a workspace file (none when it does not exist).
    pub fn lines(&self, name: &str) -> Vec<String> {
        self.read(name)
            .map(|t| t.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// Remembers a shell's process group so it is killed at the latest when the lab drops.
    pub fn adopt_orphan(&self, pgid: i32) {
        self.orphans.lock().unwrap().push(pgid);
    }

    /// Kills a shell's process group now.
    pub fn reap(&self, pgid: i32) {
        kill_group(pgid);
        self.orphans.lock().unwrap().retain(|p| *p != pgid);
    }

    /// Runs one SQL statement on the database file while no server runs: the `sqlite3` CLI
    /// when installed, else python3's sqlite3 module.
    pub fn sql(&self, statement: &str) {
        let db = self.db();
        let cli = std::process::Command::new("sqlite3")
            .arg(&db)
            .arg(statement)
            .output();
        let out = match cli {
            Ok(out) => out,
            Err(_) => std::process::Command::new("python3")
                .arg("-c")
                .arg(
                    "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\nc.execute(sys.argv[2])\nc.commit()\nc.close()",
                )
                .arg(&db)
                .arg(statement)
                .output()
                .expect("neither sqlite3 nor python3 could run"),
        };
        assert!(
            out.status.success(),
            "SQL failed: {statement}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The server's stderr (tracing) from every start so far.
    pub fn logs(&self) -> String {
        let mut all = String::new();
        for n in 1..=self.starts {
            let path = self.dir.path().join(format!("server-{n}.log"));
            all.push_str(&format!("==== start {n} ====\n"));
            all.push_str(&std::fs::read_to_string(path).unwrap_or_default());
        }
        all
    }

    /// Starts the real binary on a free loopback port and waits until it listens.
    pub async fn start(&mut self) -> Node {
        self.starts += 1;
        let log_path = self.dir.path().join(format!("server-{}.log", self.starts));
        let log = std::fs::File::create(&log_path).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_countersign"));
        cmd.arg("serve")
            .arg("--addr")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(&self.data)
            .arg("--workspace")
            .arg(&self.ws)
            .arg("--token")
            .arg(TOKEN);
        if let Some(config) = &self.config {
            cmd.arg("--config").arg(config);
        }
        for var in [
            "COUNTERSIGN_ADDR",
            "COUNTERSIGN_DATA_DIR",
            "COUNTERSIGN_WORKSPACE",
            "COUNTERSIGN_TOKEN",
            "COUNTERSIGN_CONFIG",
        ] {
            cmd.env_remove(var);
        }
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("RUST_LOG", "countersign=info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .kill_on_drop(true);
        let started = Instant::now();
        let mut child = cmd.spawn().expect("spawn countersign");
        let pid = child.id().expect("pid") as i32;
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let found = tokio::time::timeout(SOON, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.trim().strip_prefix("listening on ") {
                    return Some(url.to_owned());
                }
            }
            None
        })
        .await;
        let base = match found {
            Ok(Some(url)) => url,
            _ => {
                let _ = child.start_kill();
                panic!(
                    "server did not print `listening on` within {SOON:?}\n{}",
                    std::fs::read_to_string(&log_path).unwrap_or_default()
                );
            }
        };
        // Keep draining stdout so a later println never meets a closed pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let client = Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        Node {
            child,
            pid,
            base,
            client,
            started_in: started.elapsed(),
        }
    }
}

/// One running server process.
pub struct Node {
    child: Child,
    pub pid: i32,
    pub base: String,
    pub client: Client,
    pub started_in: Duration,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub text: String,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {:?}", self.text))
    }

    /// Asserts the status; returns the JSON body (`Null` when empty).
    #[track_caller]
    pub fn expect(&self, status: u16) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.text
        );
        if self.text.is_empty() {
            Value::Null
        } else {
            self.json()
        }
    }

    /// Asserts the status and the protocol's error code.
    #[track_caller]
    pub fn expect_error(&self, status: u16, code: &str) -> Value {
        let v = self.expect(status);
        assert_eq!(v["error"]["code"], json!(code), "{v}");
        v
    }
}

impl Node {
    /// `kill -9`: no graceful anything. Waits until the process is gone.
    pub async fn kill9(mut self) {
        // SAFETY: plain syscall on our own child's pid, which is not reaped yet.
        let rc = unsafe { libc::kill(self.pid, libc::SIGKILL) };
        assert_eq!(rc, 0, "kill -9 {} failed", self.pid);
        let status = self.child.wait().await.expect("wait for killed server");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    }

    /// Sends SIGTERM and returns the exit status and how long the exit took, or `None` if
    /// the process was still running after `limit` (it is then killed).
    pub async fn sigterm(mut self, limit: Duration) -> Option<(ExitStatus, Duration)> {
        let t0 = Instant::now();
        // SAFETY: plain syscall on our own child's pid, which is not reaped yet.
        let rc = unsafe { libc::kill(self.pid, libc::SIGTERM) };
        assert_eq!(rc, 0, "kill -TERM {} failed", self.pid);
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(status) => Some((status.expect("wait"), t0.elapsed())),
            Err(_) => None,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Resp {
        let resp = req
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap_or_else(|e| panic!("request failed: {e}"));
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        Resp { status, text }
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.send(self.client.get(self.url(path))).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Resp {
        self.send(self.client.post(self.url(path)).json(&body))
            .await
    }

    pub async fn put(&self, path: &str, body: Value) -> Resp {
        self.send(self.client.put(self.url(path)).json(&body)).await
    }

    /// Creates a session; returns its id.
    pub async fn session(&self, body: Value) -> String {
        let v = self.post("/api/v1/sessions", body).await.expect(201);
        v["id"].as_str().expect("session id").to_owned()
    }

    /// Sends a message; returns the turn id.
    pub async fn message(&self, sid: &str, text: &str, mode: Option<&str>) -> String {
        let mut body = json!({ "text": text });
        if let Some(mode) = mode {
            body["approval_mode"] = json!(mode);
        }
        let v = self
            .post(&format!("/api/v1/sessions/{sid}/messages"), body)
            .await
            .expect(202);
        v["turn_id"].as_str().expect("turn id").to_owned()
    }

    pub async fn snapshot(&self, sid: &str) -> Value {
        self.get(&format!("/api/v1/sessions/{sid}"))
            .await
            .expect(200)
    }

    pub async fn decide(&self, sid: &str, aid: &str, body: Value) -> Resp {
        self.post(&format!("/api/v1/sessions/{sid}/approvals/{aid}"), body)
            .await
    }

    /// The inbox: pending gates across sessions.
    pub async fn inbox(&self) -> Vec<Value> {
        let v = self
            .get("/api/v1/approvals?status=pending")
            .await
            .expect(200);
        v.as_array().expect("inbox is an array").clone()
    }

    /// Polls the snapshot until `pred` holds; panics with the last snapshot after `limit`.
    pub async fn wait_snap_for(
        &self,
        sid: &str,
        what: &str,
        limit: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let snap = self.snapshot(sid).await;
            if pred(&snap) {
                return snap;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out after {limit:?} waiting for {what}; last snapshot:\n{}",
                    serde_json::to_string_pretty(&snap).unwrap()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    pub async fn wait_snap(&self, sid: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.wait_snap_for(sid, what, SOON, pred).await
    }

    /// Waits for the first pending gate of the session; returns (snapshot, card).
    pub async fn wait_gate(&self, sid: &str) -> (Value, Value) {
        // Both the card and its approval_request event: a snapshot is not read atomically
        // (see `snapshots_are_consistent_with_their_pending_cards` in durable.rs).
        let snap = self
            .wait_snap(sid, "a pending gate", |s| {
                s["pending"].as_array().is_some_and(|p| !p.is_empty())
                    && events(s).iter().any(|e| {
                        e["type"] == "approval_request"
                            && e["approval_id"] == s["pending"][0]["approval_id"]
                    })
            })
            .await;
        let card = snap["pending"][0].clone();
        (snap, card)
    }

    /// Waits for `turn_finished` of this turn; returns the snapshot.
    pub async fn wait_turn_for(&self, sid: &str, turn: &str, limit: Duration) -> Value {
        self.wait_snap_for(sid, "turn_finished", limit, |s| {
            events(s)
                .iter()
                .any(|e| e["type"] == "turn_finished" && e["turn_id"] == turn)
                && s["session"]["running_turn_id"].is_null()
        })
        .await
    }

    pub async fn wait_turn(&self, sid: &str, turn: &str) -> Value {
        self.wait_turn_for(sid, turn, SOON).await
    }

    /// Opens the SSE feed; returns the response once the headers arrived.
    pub async fn sse(&self, sid: &str, after: u64) -> reqwest::Response {
        let resp = self
            .client
            .get(self.url(&format!("/api/v1/sessions/{sid}/events?after={after}")))
            .bearer_auth(TOKEN)
            .timeout(Duration::from_secs(3600))
            .send()
            .await
            .expect("open SSE");
        assert_eq!(resp.status(), 200);
        let ct = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        assert!(ct.starts_with("text/event-stream"), "{ct}");
        resp
    }
}

/// Reads an SSE response until `needle` has been seen; returns everything read.
pub async fn sse_read_until(resp: &mut reqwest::Response, needle: &str, limit: Duration) -> String {
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + limit;
    while !text.contains(needle) {
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some(bytes))) => text.push_str(&String::from_utf8_lossy(&bytes)),
            other => panic!("SSE ended or stalled before {needle:?} ({other:?}); got:\n{text}"),
        }
    }
    text
}

/// How an SSE stream ended.
#[derive(Debug, PartialEq)]
pub enum StreamEnd {
    /// Clean end of the body.
    Eof,
    /// The connection broke.
    Error(String),
    /// Still open at the deadline.
    StillOpen,
}

/// Reads until the stream ends or `deadline`.
pub async fn sse_until_end(
    resp: &mut reqwest::Response,
    deadline: tokio::time::Instant,
) -> StreamEnd {
    loop {
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some(_))) => continue,
            Ok(Ok(None)) => return StreamEnd::Eof,
            Ok(Err(e)) => return StreamEnd::Error(e.to_string()),
            Err(_) => return StreamEnd::StillOpen,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Snapshot helpers
// ---------------------------------------------------------------------------------------------

pub fn events(snap: &Value) -> Vec<Value> {
    snap["events"].as_array().cloned().unwrap_or_default()
}

pub fn cursor(snap: &Value) -> u64 {
    snap["cursor"].as_u64().expect("cursor")
}

/// Events of one type.
pub fn of_type(events: &[Value], ty: &str) -> Vec<Value> {
    events.iter().filter(|e| e["type"] == ty).cloned().collect()
}

/// Events with seq greater than `after`.
pub fn after(events: &[Value], after: u64) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["seq"].as_u64().unwrap_or(0) > after)
        .cloned()
        .collect()
}

pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// Asserts the seqs are exactly 1..=n.
#[track_caller]
pub fn assert_contiguous(events: &[Value]) {
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    let want: Vec<u64> = (1..=events.len() as u64).collect();
    assert_eq!(seqs, want, "seqs are not 1..=n");
}

/// Events of one type for one call.
pub fn for_call(events: &[Value], ty: &str, call_id: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["type"] == ty && e["call_id"] == call_id)
        .cloned()
        .collect()
}

/// Resolutions of one gate.
pub fn resolutions(events: &[Value], aid: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["type"] == "approval_resolved" && e["approval_id"] == aid)
        .cloned()
        .collect()
}

pub fn parse_time(s: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(s)
        .unwrap_or_else(|e| panic!("not RFC 3339 ({e}): {s}"))
        .with_timezone(&chrono::Utc)
}

/// Waits until a workspace file exists with a complete first line; returns that line.
pub async fn wait_file_line(path: &Path, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Some((line, _)) = text.split_once('\n')
        {
            return line.to_owned();
        }
        if Instant::now() > deadline {
            panic!("{} has no complete line after {limit:?}", path.display());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
