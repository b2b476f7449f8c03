//! The `countersign serve` process: what it prints, how it fails, how it stops.
//! Run with `cargo test --features ssr --test cli`.

#![cfg(feature = "ssr")]

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_countersign");
const TOKEN: &str = "cli-token-123456";
const ENV_VARS: [&str; 5] = [
    "COUNTERSIGN_ADDR",
    "COUNTERSIGN_DATA_DIR",
    "COUNTERSIGN_WORKSPACE",
    "COUNTERSIGN_TOKEN",
    "COUNTERSIGN_CONFIG",
];

/// `countersign serve …` from the project root, with none of our environment's settings.
fn serve_cmd(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("serve")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("RUST_LOG", "warn");
    for var in ENV_VARS {
        cmd.env_remove(var);
    }
    cmd
}

fn dirs(tmp: &Path) -> (PathBuf, PathBuf) {
    (tmp.join("data"), tmp.join("ws"))
}

/// A running `serve` process; killed (it is our own child) if a test ends early.
struct Proc {
    child: Child,
    lines: mpsc::Receiver<String>,
    stdout: Vec<String>,
    stderr: Arc<Mutex<String>>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    fn spawn(mut cmd: Command) -> Proc {
        let mut child = cmd.spawn().expect("spawn countersign");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
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
        });
        Proc {
            child,
            lines,
            stdout: Vec::new(),
            stderr,
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Reads stdout until a line starts with `prefix`; returns that line.
    fn line_starting(&mut self, prefix: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.stdout.push(line.clone());
                    if line.starts_with(prefix) {
                        return line;
                    }
                }
                Err(e) => panic!(
                    "no line starting {prefix:?} ({e}); stdout {:?}; stderr {}",
                    self.stdout,
                    self.stderr()
                ),
            }
        }
    }

    /// Waits for the startup lines; returns (base URL, login URL).
    fn started(&mut self) -> (String, String) {
        let listening = self.line_starting("listening on ", Duration::from_secs(60));
        let base = listening
            .trim_start_matches("listening on ")
            .trim()
            .to_owned();
        let login = self.line_starting("login: ", Duration::from_secs(10));
        let login = login.trim_start_matches("login: ").trim().to_owned();
        (base, login)
    }

    async fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn sigterm(&self) {
        // SAFETY: kill(2) only sends a signal, to our own child's pid.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        assert_eq!(rc, 0, "kill failed");
    }
}

/// Runs a `serve` that is expected to fail; returns (status, stdout, stderr).
fn run_failing(args: &[&str]) -> (ExitStatus, String, String) {
    let mut child = serve_cmd(args).spawn().expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "serve {args:?} did not exit; stdout {} stderr {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

async fn create_session(base: &str, token: &str) -> String {
    let r = http()
        .post(format!("{base}/api/v1/sessions"))
        .bearer_auth(token)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn serve_prints_where_it_listens_and_the_login_url() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    let mut p = Proc::spawn(serve_cmd(&[
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
        "--token",
        TOKEN,
    ]));
    let (base, login) = p.started();
    let addr: SocketAddr = base
        .strip_prefix("http://")
        .expect("http:// URL")
        .parse()
        .expect("ip:port");
    assert!(addr.ip().is_loopback());
    assert_ne!(addr.port(), 0, "port 0 must be resolved to the real port");
    assert_eq!(login, format!("http://{addr}/login?token={TOKEN}"));
    let ws_canon = ws.canonicalize().unwrap();
    assert!(
        p.stdout
            .iter()
            .any(|l| l.contains(ws_canon.to_str().unwrap())),
        "workspace path not printed: {:?}",
        p.stdout
    );

    let r = http()
        .get(format!("{base}/api/v1/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["status"], "ok");
    let r = http().get(&login).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert!(
        r.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .starts_with("countersign_session=")
    );
    let r = http()
        .get(format!("{base}/api/v1/sessions"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[tokio::test]
async fn environment_variables_configure_serve() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    let mut cmd = serve_cmd(&[]);
    cmd.env("COUNTERSIGN_ADDR", "127.0.0.1:0")
        .env("COUNTERSIGN_DATA_DIR", &data)
        .env("COUNTERSIGN_WORKSPACE", &ws)
        .env("COUNTERSIGN_TOKEN", TOKEN);
    let mut p = Proc::spawn(cmd);
    let (base, login) = p.started();
    assert!(login.ends_with(&format!("/login?token={TOKEN}")), "{login}");
    assert!(data.join("countersign.db").exists() || data.read_dir().unwrap().next().is_some());
    assert!(ws.is_dir());
    let sid = create_session(&base, TOKEN).await;
    assert!(!sid.is_empty());
}

#[tokio::test]
async fn without_a_token_one_is_generated_stored_0600_and_reused() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    let args = [
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
    ];
    let mut p = Proc::spawn(serve_cmd(&args));
    let (base, login) = p.started();
    let token = login
        .split_once("?token=")
        .expect("token in login URL")
        .1
        .to_owned();
    assert!(token.len() >= 16, "{token}");
    let token_files: Vec<PathBuf> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && std::fs::read_to_string(p).is_ok_and(|s| s.trim() == token))
        .collect();
    assert_eq!(
        token_files.len(),
        1,
        "the token is stored once in the data dir"
    );
    let mode = std::fs::metadata(&token_files[0])
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "token file mode {mode:o}");
    create_session(&base, &token).await;

    p.sigterm();
    assert!(p.wait_exit(Duration::from_secs(10)).await.is_some());
    drop(p);
    let mut p = Proc::spawn(serve_cmd(&args));
    let (base, login) = p.started();
    assert!(
        login.ends_with(&format!("?token={token}")),
        "token changed: {login}"
    );
    create_session(&base, &token).await;
}

#[test]
fn a_bad_flag_exits_non_zero_with_a_message() {
    let (status, _, stderr) = run_failing(&["--bogus-flag"]);
    assert!(!status.success());
    assert!(stderr.contains("--bogus-flag"), "{stderr}");
    let (status, _, stderr) = run_failing(&["--addr", "not-an-address"]);
    assert!(!status.success());
    assert!(
        stderr.contains("--addr") && stderr.contains("not-an-address"),
        "{stderr}"
    );
}

fn run_with_config(text: &str) -> (ExitStatus, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    let config = tmp.path().join("c.toml");
    std::fs::write(&config, text).unwrap();
    run_failing(&[
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
        "--token",
        TOKEN,
        "--config",
        config.to_str().unwrap(),
    ])
}

#[test]
fn a_config_with_an_unknown_key_exits_naming_the_key() {
    for (text, key) in [
        ("[approvals]\ntimeout_sec = 3\n", "timeout_sec"),
        ("[provider]\nkind = \"demo\"\nmodell = \"x\"\n", "modell"),
        ("[bogus_section]\na = 1\n", "bogus_section"),
        ("top_level_typo = true\n", "top_level_typo"),
    ] {
        let (status, stdout, stderr) = run_with_config(text);
        assert!(!status.success(), "{text:?} was accepted");
        assert!(
            stderr.contains(key),
            "{text:?}: stderr does not name {key}: {stderr}"
        );
        assert!(!stdout.contains("listening on"), "{stdout}");
    }
}

#[test]
fn a_config_with_a_bad_value_exits_naming_the_key() {
    for (text, key) in [
        ("[approvals]\ntimeout_secs = \"soon\"\n", "timeout_secs"),
        ("[approvals]\ntimeout_secs = 0\n", "timeout_secs"),
        (
            "[approvals]\ndefault_mode = \"sometimes\"\n",
            "default_mode",
        ),
        (
            "[approvals]\ndecision_timeout = \"maybe\"\n",
            "decision_timeout",
        ),
        ("[provider]\nkind = \"magic\"\n", "kind"),
        ("[budget]\nmax_tool_calls = -1\n", "max_tool_calls"),
    ] {
        let (status, stdout, stderr) = run_with_config(text);
        assert!(!status.success(), "{text:?} was accepted");
        assert!(
            stderr.contains(key),
            "{text:?}: stderr does not name {key}: {stderr}"
        );
        assert!(!stdout.contains("listening on"), "{stdout}");
    }
    // A config file that does not exist is an error too.
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing.toml");
    let (status, _, stderr) = run_failing(&[
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        tmp.path().join("d").to_str().unwrap(),
        "--token",
        TOKEN,
        "--config",
        missing.to_str().unwrap(),
    ]);
    assert!(!status.success());
    assert!(stderr.contains("missing.toml"), "{stderr}");
}

#[test]
fn a_busy_port_exits_non_zero_saying_so() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    let (status, stdout, stderr) = run_failing(&[
        "--addr",
        &addr,
        "--data-dir",
        data.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
        "--token",
        TOKEN,
    ]);
    assert!(!status.success());
    assert!(stderr.to_lowercase().contains("busy"), "{stderr}");
    assert!(stderr.contains(&addr), "{stderr}");
    assert!(!stdout.contains("listening on"), "{stdout}");
    drop(listener);
}

#[tokio::test]
async fn sigterm_exits_promptly_with_a_feed_connected() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    let mut p = Proc::spawn(serve_cmd(&[
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
        "--token",
        TOKEN,
    ]));
    let (base, _) = p.started();
    let sid = create_session(&base, TOKEN).await;
    let feed = reqwest::Client::new()
        .get(format!("{base}/api/v1/sessions/{sid}/events"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(feed.status().as_u16(), 200);
    let mut body = feed.bytes_stream();
    // Make sure the stream is live: one event through it.
    let r = http()
        .put(format!("{base}/api/v1/sessions/{sid}/mode"))
        .bearer_auth(TOKEN)
        .json(&json!({"approval_mode": "plan"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let first = tokio::time::timeout(Duration::from_secs(10), body.next())
        .await
        .expect("first frame")
        .expect("stream open")
        .expect("bytes");
    assert!(String::from_utf8_lossy(&first).contains("mode_changed"));

    let sent = Instant::now();
    p.sigterm();
    let status = p
        .wait_exit(Duration::from_secs(10))
        .await
        .unwrap_or_else(|| panic!("still running 10 s after SIGTERM; stderr {}", p.stderr()));
    let took = sent.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "exit took {took:?}; stderr {}",
        p.stderr()
    );
    assert!(status.success(), "{status:?}; stderr {}", p.stderr());
    // The feed ended rather than hanging.
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match body.next().await {
                None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(end.is_ok(), "feed still open after the server exited");
}

/// A process's command line, NUL-separated args joined by spaces; None if it is gone.
fn processes_with_cmdline(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(raw) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
            if cmd.contains(needle) {
                // A zombie has an empty cmdline, so anything found here is alive.
                found.push(format!("{name}: {cmd}"));
            }
        }
    }
    found
}

#[tokio::test]
async fn sigterm_during_a_command_kills_it_and_the_restart_reports_it_interrupted() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    let args = [
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
        "--token",
        TOKEN,
    ];
    let mut p = Proc::spawn(serve_cmd(&args));
    let (base, _) = p.started();
    let sid = create_session(&base, TOKEN).await;
    // A unique sleep duration, so the process can be found (and must be gone) afterwards.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let sleep_arg = format!("60.{nanos:09}");
    let r = http()
        .post(format!("{base}/api/v1/sessions/{sid}/messages"))
        .bearer_auth(TOKEN)
        .json(&json!({"text": format!("run: sleep {sleep_arg}"), "approval_mode": "yolo"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v: Value = http()
            .get(format!("{base}/api/v1/sessions/{sid}"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if v["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "tool_started")
            && !processes_with_cmdline(&sleep_arg).is_empty()
        {
            break;
        }
        assert!(Instant::now() < deadline, "the command never started: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    p.sigterm();
    let status = p.wait_exit(Duration::from_secs(10)).await;
    assert!(status.is_some(), "still running 10 s after SIGTERM");
    let mut left = processes_with_cmdline(&sleep_arg);
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = processes_with_cmdline(&sleep_arg);
    }
    assert!(left.is_empty(), "the command outlived the server: {left:?}");
    drop(p);

    let mut p = Proc::spawn(serve_cmd(&args));
    let (base, _) = p.started();
    // The resumed turn reports the command interrupted (never re-run) and goes on to finish.
    let deadline = Instant::now() + Duration::from_secs(20);
    let v: Value = loop {
        let v: Value = http()
            .get(format!("{base}/api/v1/sessions/{sid}"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if v["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "turn_finished")
        {
            break v;
        }
        assert!(
            Instant::now() < deadline,
            "the resumed turn never finished: {v}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        processes_with_cmdline(&sleep_arg).is_empty(),
        "the interrupted command was run again"
    );
    let events = v["events"].as_array().unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        vec![
            "mode_changed",
            "user_message",
            "tool_call",
            "tool_started",
            "tool_result",
            "assistant_message",
            "turn_finished"
        ],
        "{v:#}"
    );
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(events[4]["status"], "interrupted");
    assert_eq!(
        events[4]["output"],
        "the server stopped while this ran; it was not run again"
    );
    assert_eq!(events[4]["call_id"], events[2]["call_id"]);
    assert!(
        events[5]["text"]
            .as_str()
            .unwrap()
            .contains("not run again")
    );
    assert_eq!(events[6]["status"], "completed");
    assert_eq!(v["session"]["running_turn_id"], Value::Null);
}
