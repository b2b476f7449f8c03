//! The `countersign serve` process: what it prints, how it fails, how it stops.
//! Run with `cargo test --features ssr --test cli`.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use support::*;

fn dirs(tmp: &Path) -> (PathBuf, PathBuf) {
    (tmp.join("data"), tmp.join("ws"))
}

/// Waits for the startup lines; returns (base URL, login URL).
async fn started(p: &mut Proc) -> (String, String) {
    let base = p.listening(Duration::from_secs(60)).await;
    let login = p.line_starting("login: ", Duration::from_secs(10)).await;
    let login = login.trim_start_matches("login: ").trim().to_owned();
    (base, login)
}

/// Runs a `serve` that is expected to fail; returns (status, stdout, stderr).
fn run_failing(args: &[&str]) -> (ExitStatus, String, String) {
    let out = run(serve_command(args), None);
    (out.status, out.stdout, out.stderr)
}

#[tokio::test]
async fn serve_prints_where_it_listens_and_the_login_url() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    let mut p = Proc::spawn(serve_command(&[
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
        "--token",
        TOKEN,
    ]));
    let (base, login) = started(&mut p).await;
    let addr: SocketAddr = base
        .strip_prefix("http://")
        .expect("http:// URL")
        .parse()
        .expect("ip:port");
    assert!(addr.ip().is_loopback());
    assert_ne!(addr.port(), 0, "port 0 must be resolved to the real port");
    let code = login
        .strip_prefix(&format!("http://{addr}/login?code="))
        .unwrap_or_else(|| panic!("a login link: {login}"));
    assert!(code.len() >= 30 && !code.contains(TOKEN), "{code}");
    let ws_canon = ws.canonicalize().unwrap();
    assert!(
        p.stdout
            .iter()
            .any(|l| l.contains(ws_canon.to_str().unwrap())),
        "workspace path not printed: {:?}",
        p.stdout
    );

    let api = Api::new(&base);
    let v = send(api.anon(Method::GET, "/api/v1/health"))
        .await
        .expect(200);
    assert_eq!(v["status"], "ok");
    let r = send(api.client.get(&login)).await;
    assert_eq!(r.status.as_u16(), 303);
    assert!(
        r.header("set-cookie")
            .expect("set-cookie")
            .starts_with("countersign_session=")
    );
    // The link works once.
    let again = send(api.client.get(&login)).await;
    assert_eq!(again.status.as_u16(), 401, "a login link is single use");
    api.get("/api/v1/sessions").await.expect(200);
}

#[tokio::test]
async fn environment_variables_configure_serve() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    let mut cmd = serve_command(&[]);
    cmd.env("COUNTERSIGN_ADDR", "127.0.0.1:0")
        .env("COUNTERSIGN_DATA_DIR", &data)
        .env("COUNTERSIGN_WORKSPACE", &ws)
        .env("COUNTERSIGN_TOKEN", TOKEN);
    let mut p = Proc::spawn(cmd);
    let (base, login) = started(&mut p).await;
    assert!(login.contains("/login?code="), "{login}");
    assert!(!login.contains(TOKEN), "{login}");
    assert!(ws.is_dir());
    // The token came from the environment: none was generated and stored.
    assert!(
        !data.join("token").exists(),
        "a token file was written although COUNTERSIGN_TOKEN was set"
    );
    // The database is the one in COUNTERSIGN_DATA_DIR: a session made through the API is in it.
    let sid = Api::new(&base).session().await;
    let db = data.join("countersign.db");
    assert!(db.is_file(), "no database at {}", db.display());
    let conn =
        rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    let stored: Vec<String> = conn
        .prepare("SELECT id FROM sessions")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(stored, [sid]);
}

/// Every file in `dir` (recursively) as bytes, by path.
fn files_in(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                found.push((path, bytes));
            }
        }
    }
    found
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// Without a token nothing that logs in is stored: the data dir is its owner's only, the
/// printed link works once, no file holds it (or any credential that works), and a restart
/// prints a new link.
#[tokio::test]
async fn without_a_token_only_single_use_links_log_in_and_no_file_holds_one() {
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
    let mut p = Proc::spawn(serve_command(&args));
    let (base, login) = started(&mut p).await;
    let code = login
        .split_once("?code=")
        .expect("a login link")
        .1
        .to_owned();
    let mode = std::fs::metadata(&data).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "data dir mode {mode:o}");
    assert!(!data.join("token").exists(), "no token file");
    for (path, bytes) in files_in(&data) {
        assert!(
            !contains(&bytes, &code),
            "{} holds the login code",
            path.display()
        );
    }
    let api = Api::new(&base);
    let r = send(api.client.get(&login)).await;
    assert_eq!(r.status.as_u16(), 303);
    let cookie = r.header("set-cookie").expect("a cookie").to_owned();
    let value = cookie
        .split(';')
        .next()
        .and_then(|c| c.split_once('='))
        .expect("name=value")
        .1
        .to_owned();
    for (path, bytes) in files_in(&data) {
        assert!(
            !contains(&bytes, &value),
            "{} holds the browser's cookie",
            path.display()
        );
    }
    let with_cookie = |path: &str| {
        api.client
            .get(format!("{base}{path}"))
            .header("cookie", format!("countersign_session={value}"))
    };
    assert_eq!(
        send(with_cookie("/api/v1/sessions")).await.status.as_u16(),
        200
    );
    assert_eq!(send(api.client.get(&login)).await.status.as_u16(), 401);

    p.sigterm();
    assert!(
        p.wait_exit(SOON).await.is_some(),
        "still running after SIGTERM"
    );
    drop(p);
    let mut p = Proc::spawn(serve_command(&args));
    let (base, second) = started(&mut p).await;
    assert_ne!(second, login, "a new link at every start");
    // The browser's login outlives the restart (its hash is in the database).
    let api = Api::new(&base);
    let r = send(
        api.client
            .get(format!("{base}/api/v1/sessions"))
            .header("cookie", format!("countersign_session={value}")),
    )
    .await;
    assert_eq!(r.status.as_u16(), 200);
}

/// An older data dir's token file: the token keeps working, its clear copy is removed, and
/// nothing in the data dir holds it afterwards (only its hash).
#[tokio::test]
async fn an_old_token_file_is_migrated_to_its_hash_and_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    std::fs::create_dir_all(&data).unwrap();
    let old = "0123456789abcdef0123456789abcdef0123456789abcdef";
    std::fs::write(data.join("token"), format!("{old}\n")).unwrap();
    let mut p = Proc::spawn(serve_command(&[
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
    ]));
    let (base, _) = started(&mut p).await;
    Api::new(&base).with_token(old).session().await;
    assert!(!data.join("token").exists(), "the clear copy is removed");
    for (path, bytes) in files_in(&data) {
        assert!(!contains(&bytes, old), "{} holds the token", path.display());
    }
    Api::new(&base)
        .with_token("fedcba9876543210fedcba98")
        .get("/api/v1/sessions")
        .await
        .expect_error(401, "unauthorized");
    p.sigterm();
    assert!(
        p.wait_exit(SOON).await.is_some(),
        "still running after SIGTERM"
    );
    drop(p);

    // A token file that appears later (planted by whatever can write the data dir) is taken
    // over by no later start: removed, and the token in it logs nobody in; the one taken over
    // at the upgrade still works.
    let planted = "planted-token-0123456789abcdef";
    std::fs::write(data.join("token"), planted).unwrap();
    let mut p = Proc::spawn(serve_command(&[
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
    ]));
    let (base, _) = started(&mut p).await;
    assert!(!data.join("token").exists(), "a planted file is removed");
    Api::new(&base)
        .with_token(planted)
        .get("/api/v1/sessions")
        .await
        .expect_error(401, "unauthorized");
    Api::new(&base).with_token(old).session().await;
}

/// A browser logged in with the admin token is that token's: another `--token` at the next start
/// ends it (as it ends the old token), while a browser logged in with a link stays; the login
/// page's form posts the token (never in a URL) and only from this site; `--token` on the
/// command line is warned about (every user's `ps` shows it), in the environment it is not.
#[tokio::test]
async fn an_admin_token_login_ends_with_that_token_and_the_form_posts_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    let with_token = |token: &str| {
        let mut cmd = serve_command(&[
            "--addr",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
        ]);
        cmd.env("COUNTERSIGN_TOKEN", token);
        cmd
    };
    let mut p = Proc::spawn(with_token("first-admin-token-123"));
    let (base, link) = started(&mut p).await;
    assert!(
        !p.stdout
            .iter()
            .any(|l| l.contains("--token on the command line")),
        "{:?}",
        p.stdout
    );
    let api = Api::new(&base);
    let cookie_of = |r: &Resp| {
        r.header("set-cookie")
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_owned()
    };
    let by_link = cookie_of(&send(api.client.get(&link)).await);
    let form = |origin: &str| {
        api.client
            .post(format!("{base}/login"))
            .header("origin", origin)
            .form(&[("token", "first-admin-token-123")])
    };
    let refused = send(form("http://evil.example")).await;
    assert_eq!(refused.status.as_u16(), 403, "a form from another site");
    assert!(refused.header("set-cookie").is_none());
    let posted = send(form(&base)).await;
    assert_eq!(posted.status.as_u16(), 303);
    let by_token = cookie_of(&posted);
    let get = |cookie: &str| {
        api.client
            .get(format!("{base}/api/v1/sessions"))
            .header("cookie", cookie.to_owned())
    };
    assert_eq!(send(get(&by_token)).await.status.as_u16(), 200);
    p.sigterm();
    assert!(p.wait_exit(SOON).await.is_some());
    drop(p);

    let mut p = Proc::spawn(with_token("second-admin-token-456"));
    let (base, _) = started(&mut p).await;
    let api = Api::new(&base);
    let get = |cookie: &str| {
        api.client
            .get(format!("{base}/api/v1/sessions"))
            .header("cookie", cookie.to_owned())
    };
    assert_eq!(
        send(get(&by_token)).await.status.as_u16(),
        401,
        "its token was replaced"
    );
    assert_eq!(
        send(get(&by_link)).await.status.as_u16(),
        200,
        "a link's login stays"
    );
    p.sigterm();
    assert!(p.wait_exit(SOON).await.is_some());
    drop(p);

    // On the command line: warned about.
    let mut p = Proc::spawn(serve_command(&[
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
        "--token",
        "second-admin-token-456",
    ]));
    started(&mut p).await;
    p.line_starting("warning: --token on the command line", SOON)
        .await;
}

/// Under systemd (its journal, which others may read) no login link is printed: the line says
/// how to get one.
#[tokio::test]
async fn no_login_link_goes_into_the_system_log() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    let mut cmd = serve_command(&[
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
    ]);
    cmd.env("JOURNAL_STREAM", "8:12345");
    let mut p = Proc::spawn(cmd);
    let (_, login) = started(&mut p).await;
    assert!(!login.contains("code="), "{login}");
    assert!(login.contains("countersign login"), "{login}");
}

/// `countersign login` on the server's machine prints a fresh link that works once; with
/// `--sign-out-everywhere` every browser login ends.
#[tokio::test]
async fn the_login_command_prints_a_fresh_single_use_link() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    let mut p = Proc::spawn(serve_command(&[
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
    ]));
    let (base, first) = started(&mut p).await;
    let login = |extra: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_countersign"));
        cmd.arg("login").arg("--data-dir").arg(&data).args(extra);
        cmd.env_remove("COUNTERSIGN_URL");
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let link = login(&[]);
    assert!(
        link.starts_with(&format!("{base}/login?code=")),
        "{link} (served at {base})"
    );
    assert_ne!(link, first);
    let api = Api::new(&base);
    let r = send(api.client.get(&link)).await;
    assert_eq!(r.status.as_u16(), 303);
    let cookie = r
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(send(api.client.get(&link)).await.status.as_u16(), 401);
    let as_browser = || {
        api.client
            .get(format!("{base}/api/v1/sessions"))
            .header("cookie", &cookie)
    };
    assert_eq!(send(as_browser()).await.status.as_u16(), 200);
    assert!(login(&["--sign-out-everywhere"]).contains("signed out 1"));
    assert_eq!(send(as_browser()).await.status.as_u16(), 401);
    // The first start's link still works once (each link is its own).
    assert_eq!(send(api.client.get(&first)).await.status.as_u16(), 303);
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

/// A PostgreSQL database that cannot be reached at start: a clear error naming it and a
/// non-zero exit, never a server without storage.
#[test]
fn an_unreachable_database_exits_non_zero_saying_so() {
    // A port that takes connections and hangs up at once: nothing speaks PostgreSQL there.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            drop(conn);
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    let url = format!("postgres://countersign@127.0.0.1:{port}/countersign");
    let (status, stdout, stderr) = run_failing(&[
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
        "--token",
        TOKEN,
        "--database-url",
        &url,
    ]);
    assert!(!status.success());
    assert!(stderr.contains("cannot connect to PostgreSQL"), "{stderr}");
    assert!(!stdout.contains("listening on"), "{stdout}");
}

#[tokio::test]
async fn sigterm_exits_promptly_with_a_feed_connected() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = dirs(tmp.path());
    let mut p = Proc::spawn(serve_command(&[
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
        "--token",
        TOKEN,
    ]));
    let (base, _) = started(&mut p).await;
    let api = Api::new(&base);
    let sid = api.session().await;
    let mut feed = api.sse(&sid, None, None).await;
    // Make sure the stream is live: one event through it.
    api.put(
        &format!("/api/v1/sessions/{sid}/mode"),
        json!({"approval_mode": "plan"}),
    )
    .await
    .expect(200);
    match feed.next_item(Duration::from_secs(10)).await {
        Ok(Some(Item::Frame(first))) => assert!(first.is("mode_changed"), "{first:?}"),
        other => panic!("first frame: {other:?}"),
    }

    // SOON only guards against a hang. "Promptly" is what the server itself says: it waits at
    // most 5 s for its connections to close, and says so when it has to give up on them.
    p.sigterm();
    let status = p.wait_exit(SOON).await.unwrap_or_else(|| {
        panic!(
            "still running {SOON:?} after SIGTERM; stderr {}",
            p.stderr()
        )
    });
    assert!(
        p.stderr_ended(SOON).await,
        "stderr still open after the exit"
    );
    assert!(status.success(), "{status:?}; stderr {}", p.stderr());
    assert!(
        !p.stderr().contains("still open after"),
        "the server had to give up on the open feed: {}",
        p.stderr()
    );
    // The feed ended (the server closed it) rather than hanging.
    assert!(
        feed.ends_within(SOON).await,
        "feed still open after the server exited"
    );
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
    let mut p = Proc::spawn(serve_command(&args));
    let (base, _) = started(&mut p).await;
    let api = Api::new(&base);
    let sid = api.session().await;
    // A unique sleep duration, so the process can be found (and must be gone) afterwards.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let sleep_arg = format!("60.{nanos:09}");
    let turn = api
        .send_msg(&sid, &format!("run: sleep {sleep_arg}"), Some("yolo"))
        .await;
    api.wait_snapshot(&sid, "the command to start", |v| {
        !of_type(&events(v), "tool_started").is_empty()
            && !processes_with_cmdline(&sleep_arg).is_empty()
    })
    .await;

    p.sigterm();
    let status = p.wait_exit(SOON).await;
    assert!(status.is_some(), "still running {SOON:?} after SIGTERM");
    // Left alone, the command would sleep for a minute: it ends within the wait only if the
    // server killed it.
    poll_until("the command to die with the server", SOON, async || {
        let left = processes_with_cmdline(&sleep_arg);
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("the command outlived the server: {left:?}"))
        }
    })
    .await;
    drop(p);

    let mut p = Proc::spawn(serve_command(&args));
    let (base, _) = started(&mut p).await;
    // The resumed turn reports the command interrupted (never re-run) and goes on to finish.
    let v = Api::new(&base).wait_turn(&sid, &turn).await;
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
