//! The real `countersign` binary as a child process: one-shot CLI runs ([`run`]), long-lived
//! `serve` children killed when dropped ([`Proc`]), and a data directory that successive
//! servers start on ([`Lab`], [`Node`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Api, SOON, TOKEN, poll_until};

/// Settings the binary reads from the environment; cleared so the caller's own do not leak in.
const CLEARED_ENV: [&str; 8] = [
    "COUNTERSIGN_ADDR",
    "COUNTERSIGN_DATABASE_URL",
    "COUNTERSIGN_DATA_DIR",
    "COUNTERSIGN_WORKSPACE",
    "COUNTERSIGN_TOKEN",
    "COUNTERSIGN_CONFIG",
    "COUNTERSIGN_URL",
    "XDG_DATA_HOME",
];
/// How often a child's exit is checked.
const EXIT_POLL: Duration = Duration::from_millis(10);

/// `countersign <args…>` from the crate root, `RUST_LOG=warn`, with none of the caller's
/// `COUNTERSIGN_*` settings.
pub fn countersign(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_countersign"));
    cmd.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RUST_LOG", "warn");
    for var in CLEARED_ENV {
        cmd.env_remove(var);
    }
    cmd
}

/// `countersign serve <args…>`, as [`countersign`].
pub fn serve_command(args: &[&str]) -> Command {
    let mut cmd = countersign(&["serve"]);
    cmd.args(args);
    cmd
}

// ---------------------------------------------------------------------------------------------
// One-shot runs
// ---------------------------------------------------------------------------------------------

/// How a one-shot run ended.
#[derive(Debug)]
pub struct Out {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// The exit code; panics if the process was killed by a signal.
    #[track_caller]
    pub fn code(&self) -> i32 {
        self.status
            .code()
            .unwrap_or_else(|| panic!("exited by a signal, not a code: {self:#?}"))
    }

    /// Asserts success with nothing on stderr; returns stdout.
    #[track_caller]
    pub fn ok(&self) -> &str {
        assert_eq!(self.code(), 0, "expected success: {self:#?}");
        assert!(self.stderr.is_empty(), "stderr on success: {self:#?}");
        &self.stdout
    }

    /// Asserts a failure with `code` and a single `error: …` line containing each of `words`.
    #[track_caller]
    pub fn fails(&self, code: i32, words: &[&str]) -> &str {
        assert_eq!(self.code(), code, "exit code: {self:#?}");
        let err = self.stderr.trim_end();
        assert!(err.starts_with("error: "), "stderr: {self:#?}");
        assert_eq!(err.lines().count(), 1, "one line: {self:#?}");
        for word in words {
            assert!(err.contains(word), "stderr lacks {word:?}: {self:#?}");
        }
        err
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:#?}"))
    }
}

/// Runs `cmd` to its end (killed, and a panic, after [`SOON`]), feeding it `stdin` if given.
/// Blocks the calling thread: from async code use [`run_async`].
pub fn run(mut cmd: Command, stdin: Option<&str>) -> Out {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn countersign");
    let stdout = read_to_end(child.stdout.take().expect("stdout"));
    let stderr = read_to_end(child.stderr.take().expect("stderr"));
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(text.as_bytes()).expect("write stdin");
    }
    let deadline = Instant::now() + SOON;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} did not exit within {SOON:?}; stdout {} stderr {}",
                String::from_utf8_lossy(&stdout.join().unwrap()),
                String::from_utf8_lossy(&stderr.join().unwrap())
            );
        }
        std::thread::sleep(EXIT_POLL);
    };
    Out {
        status,
        stdout: String::from_utf8(stdout.join().unwrap()).expect("utf-8 stdout"),
        stderr: String::from_utf8(stderr.join().unwrap()).expect("utf-8 stderr"),
    }
}

/// [`run`] on a blocking thread, so the runtime (and an in-process server on it) keeps going.
pub async fn run_async(cmd: Command, stdin: Option<&str>) -> Out {
    let stdin = stdin.map(str::to_owned);
    tokio::task::spawn_blocking(move || run(cmd, stdin.as_deref()))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

fn read_to_end(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

// ---------------------------------------------------------------------------------------------
// Long-lived children
// ---------------------------------------------------------------------------------------------

/// A running child, killed (SIGKILL) and reaped when dropped, also when a test panics. Its
/// stdout is read line by line as it comes, its stderr collected.
pub struct Proc {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// The stdout lines read so far.
    pub stdout: Vec<String>,
    stderr: Arc<Mutex<String>>,
    /// Set when stderr reached its end: after that, [`Proc::stderr`] is all there will be.
    stderr_done: Arc<AtomicBool>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    pub fn spawn(mut cmd: Command) -> Proc {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn countersign");
        let out = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut err = child.stderr.take().expect("stderr");
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let stderr_done = Arc::new(AtomicBool::new(false));
        let done = stderr_done.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
            done.store(true, Ordering::SeqCst);
        });
        Proc {
            child,
            lines,
            stdout: Vec::new(),
            stderr,
            stderr_done,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Everything on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until stderr has reached its end (after the exit: everything the process wrote
    /// has been read); false if it is still open after `within`.
    pub async fn stderr_ended(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while !self.stderr_done.load(Ordering::SeqCst) {
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(EXIT_POLL).await;
        }
        true
    }

    /// The stderr buffer itself, to read after the process is gone.
    pub fn stderr_buffer(&self) -> Arc<Mutex<String>> {
        self.stderr.clone()
    }

    /// Reads stdout until a line starts with `prefix`; returns that line.
    pub async fn line_starting(&mut self, prefix: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            match self.lines.try_recv() {
                Ok(line) => {
                    self.stdout.push(line.clone());
                    if line.starts_with(prefix) {
                        return line;
                    }
                }
                Err(mpsc::TryRecvError::Empty) if Instant::now() < deadline => {
                    tokio::time::sleep(EXIT_POLL).await;
                }
                Err(e) => panic!(
                    "no line starting {prefix:?} within {within:?} ({e}); stdout {:?}; stderr {}",
                    self.stdout,
                    self.stderr()
                ),
            }
        }
    }

    /// Every stdout line that arrives within `within` (also kept in [`Proc::stdout`]).
    pub async fn lines_for(&mut self, within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        let mut got = Vec::new();
        while Instant::now() < deadline {
            match self.lines.try_recv() {
                Ok(line) => {
                    self.stdout.push(line.clone());
                    got.push(line);
                }
                Err(mpsc::TryRecvError::Empty) => tokio::time::sleep(EXIT_POLL).await,
                Err(mpsc::TryRecvError::Disconnected) => break,
            }
        }
        got
    }

    /// Waits for `listening on <url>`; returns the URL.
    pub async fn listening(&mut self, within: Duration) -> String {
        let line = self.line_starting("listening on ", within).await;
        line.trim_start_matches("listening on ").trim().to_owned()
    }

    /// Sends `signal` to the child.
    #[track_caller]
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) only sends a signal, to our own child's pid, not reaped yet.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        assert_eq!(rc, 0, "kill -{signal} {} failed", self.child.id());
    }

    pub fn sigterm(&self) {
        self.signal(libc::SIGTERM);
    }

    /// The exit status, or `None` if still running after `within`.
    pub async fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(EXIT_POLL).await;
        }
    }

    /// `kill -9`: no graceful anything. Waits until the process is gone, killed by that signal.
    pub async fn kill9(&mut self) {
        use std::os::unix::process::ExitStatusExt;
        self.signal(libc::SIGKILL);
        let status = self
            .wait_exit(SOON)
            .await
            .expect("the killed process is gone");
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Servers on one data directory
// ---------------------------------------------------------------------------------------------

/// One data directory and workspace, used by successive server processes. Process groups of
/// shell commands a kill left running are killed when it drops.
pub struct Lab {
    pub dir: tempfile::TempDir,
    pub data: PathBuf,
    pub ws: PathBuf,
    config: Option<PathBuf>,
    env: Vec<(String, String)>,
    /// Every start's stderr (tracing), in order.
    logs: Vec<Arc<Mutex<String>>>,
    orphans: Mutex<Vec<i32>>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for pgid in self.orphans.lock().unwrap().drain(..) {
            kill_group(pgid);
        }
    }
}

/// Kills a process group (a shell command a killed server left running).
pub fn kill_group(pgid: i32) {
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
            env: Vec::new(),
            logs: Vec::new(),
            orphans: Mutex::new(Vec::new()),
        }
    }

    /// An environment variable every server of this lab gets.
    pub fn with_env(mut self, key: &str, value: &str) -> Lab {
        self.env.push((key.to_owned(), value.to_owned()));
        self
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

    /// The live processes a killed server of this lab left behind: a command it had started
    /// (its working directory is inside the lab) or a child it had forked but not yet turned
    /// into the command (it still has the server's command line, which names the lab's data
    /// dir). Zombies show neither, so everything listed is still running. Only meaningful
    /// while no server of this lab runs.
    pub fn leftovers(&self) -> Vec<String> {
        let root = self.dir.path().to_path_buf();
        let canonical = root.canonicalize().unwrap_or_else(|_| root.clone());
        let inside = |p: &Path| p.starts_with(&root) || p.starts_with(&canonical);
        // With the separator: another lab's name could start with this one's.
        let names = [
            format!("{}/", root.display()),
            format!("{}/", canonical.display()),
        ];
        let me = std::process::id();
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            // Either read fails once the process is gone (or is not ours to look at).
            let cmdline = std::fs::read(entry.path().join("cmdline"))
                .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
                .unwrap_or_default();
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok();
            if cwd.as_deref().is_some_and(inside)
                || names.iter().any(|name| cmdline.contains(name.as_str()))
            {
                found.push(format!("pid {pid}, cwd {cwd:?}: {cmdline}"));
            }
        }
        found
    }

    /// After a kill: waits until the commands the killed server had started have ended, so
    /// that what they write is all written before anything is counted or a new server starts.
    pub async fn wait_leftovers_gone(&self) {
        poll_until("the killed server's commands to end", SOON, async || {
            let left = self.leftovers();
            if left.is_empty() {
                Ok(())
            } else {
                Err(left.join("\n"))
            }
        })
        .await
    }

    /// Runs one SQL statement on the database file; returns how many rows it changed.
    pub fn sql(&self, statement: &str) -> usize {
        sql(&self.db(), statement)
    }

    /// The server's stderr (tracing) from every start so far.
    pub fn logs(&self) -> String {
        let mut all = String::new();
        for (n, log) in self.logs.iter().enumerate() {
            all.push_str(&format!("==== start {} ====\n", n + 1));
            all.push_str(&log.lock().unwrap());
        }
        all
    }

    /// Starts the real binary on a free loopback port and waits until it listens.
    pub async fn start(&mut self) -> Node {
        self.start_at("127.0.0.1:0").await
    }

    /// Starts the real binary listening on `addr` (e.g. the address a killed start had, so a
    /// client that kept its URL finds the server back) and waits until it listens.
    pub async fn start_at(&mut self, addr: &str) -> Node {
        let mut cmd = serve_command(&["--addr", addr, "--token", TOKEN]);
        cmd.arg("--data-dir")
            .arg(&self.data)
            .arg("--workspace")
            .arg(&self.ws)
            .env("RUST_LOG", "countersign=info")
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(config) = &self.config {
            cmd.arg("--config").arg(config);
        }
        let started = Instant::now();
        let mut proc = Proc::spawn(cmd);
        self.logs.push(proc.stderr_buffer());
        let base = proc.listening(SOON).await;
        Node {
            proc,
            api: Api::new(&base),
            started_in: started.elapsed(),
        }
    }
}

/// One running server process and an [`Api`] client for it (through `Deref`).
pub struct Node {
    pub proc: Proc,
    pub api: Api,
    pub started_in: Duration,
}

impl Deref for Node {
    type Target = Api;

    fn deref(&self) -> &Api {
        &self.api
    }
}

impl Node {
    pub fn pid(&self) -> i32 {
        self.proc.pid()
    }

    /// `kill -9`, and the process is gone.
    pub async fn kill9(mut self) {
        self.proc.kill9().await;
    }

    /// Sends SIGTERM and returns the exit status and how long the exit took, or `None` if
    /// the process was still running after `limit` (it is then killed). After an exit, the
    /// lab's logs hold everything the process wrote.
    pub async fn sigterm(mut self, limit: Duration) -> Option<(ExitStatus, Duration)> {
        let t0 = Instant::now();
        self.proc.sigterm();
        let status = self.proc.wait_exit(limit).await?;
        let took = t0.elapsed();
        assert!(
            self.proc.stderr_ended(SOON).await,
            "stderr still open {SOON:?} after the exit"
        );
        Some((status, took))
    }
}

/// Runs one SQL statement on a database file, waiting up to 5 s for a lock (the server may
/// hold the file: SQLite in WAL mode lets another connection write between its commits).
/// Returns how many rows it changed.
pub fn sql(db: &Path, statement: &str) -> usize {
    // Read-write, never create: a wrong path must fail here, not write to a new empty file.
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)
            .unwrap_or_else(|e| panic!("open {}: {e}", db.display()));
    conn.busy_timeout(Duration::from_secs(5))
        .expect("set the busy timeout");
    conn.execute(statement, [])
        .unwrap_or_else(|e| panic!("SQL failed: {statement}\n{e}"))
}

// ---------------------------------------------------------------------------------------------
// A long command to kill servers under
// ---------------------------------------------------------------------------------------------

/// A demo-agent message running a shell command that records that it started
/// (`started-<tag>.txt`, one line per run), then sleeps long with `CS_MARK=slow-<tag>` in its
/// environment (found by [`marked_group`]): what a server is killed under to test
/// `interrupted`.
pub fn slow_command(tag: impl std::fmt::Display) -> String {
    format!("run: echo start >> started-{tag}.txt; exec env CS_MARK=slow-{tag} sleep 30")
}

/// The host process group of a live process whose environment holds `CS_MARK=<mark>` and that
/// runs in the folder `cwd`. A command runs in a PID namespace of its own, so `$$` inside it
/// is not a host pid: tests find its processes this way instead.
pub fn marked_group(cwd: &Path, mark: &str) -> Option<i32> {
    marked_pids(cwd, mark).into_iter().find_map(|pid| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // After the parenthesized name: state, ppid, pgrp.
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(2)?
            .parse()
            .ok()
    })
}

/// The live (not zombie) processes whose environment holds `CS_MARK=<mark>` and that run in
/// the folder `cwd`.
pub fn marked_pids(cwd: &Path, mark: &str) -> Vec<i32> {
    let wanted = format!("CS_MARK={mark}");
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|dir| dir == cwd)
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == wanted.as_bytes()))
                && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                    stat.rsplit_once(')')
                        .and_then(|(_, rest)| rest.split_whitespace().next())
                        .is_some_and(|state| state != "Z" && state != "X")
                })
        })
        .collect()
}

/// Waits until [`marked_group`] finds the mark; returns the group.
pub async fn wait_marked_group(cwd: &Path, mark: &str) -> i32 {
    poll_until(
        &format!("a process marked {mark} in {}", cwd.display()),
        SOON,
        async || marked_group(cwd, mark).ok_or_else(|| "not yet".to_owned()),
    )
    .await
}

/// Waits until a file exists with a complete first line; returns that line.
pub async fn wait_file_line(path: &Path, limit: Duration) -> String {
    poll_until(
        &format!("{} to hold a complete line", path.display()),
        limit,
        async || match std::fs::read_to_string(path) {
            Ok(text) => match text.split_once('\n') {
                Some((line, _)) => Ok(line.to_owned()),
                None => Err(format!("{text:?}")),
            },
            Err(e) => Err(e.to_string()),
        },
    )
    .await
}

/// Waits until [`slow_command`] runs on the server `api` talks to: its `tool_started` logged
/// and its pid file (in the workspace `ws`) written; then checks the log stands still (the
/// command sleeps). Returns that snapshot, the call id and the shell's process group (for the
/// caller to adopt, so it dies with the test at the latest).
pub async fn wait_slow_running(
    api: &Api,
    sid: &str,
    ws: &Path,
    tag: impl std::fmt::Display,
) -> (Value, String, i32) {
    let snap = api
        .wait_snapshot(sid, "the slow command's tool_started", |s| {
            !super::of_type(&super::events(s), "tool_started").is_empty()
        })
        .await;
    let pgid = wait_marked_group(ws, &format!("slow-{tag}")).await;
    let now = api.snapshot(sid).await;
    assert_eq!(
        now["events"], snap["events"],
        "the log moved on while the command sleeps"
    );
    let evs = super::events(&now);
    let call_id = super::id_of(super::only(&evs, "tool_started"), "call_id");
    (now, call_id, pgid)
}
