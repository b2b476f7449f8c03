//! No way around the card: every path a tool, an outside agent or a weaker credential could
//! take around a person's answer, tried against a real server in several spellings. Each
//! section is one class of attack (issue 23); the attacks are the agent's own tool calls
//! through the demo agent, or HTTP requests with the credential the attacker would hold.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

#[path = "support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

const SECRET: &str = "API_KEY=hunter2-very-secret";

/// The result of the session's tool calls, in order: (tool, status, output).
fn results(events: &[Value]) -> Vec<(String, String, String)> {
    of_type(events, "tool_result")
        .into_iter()
        .map(|r| {
            (
                r["tool"].as_str().unwrap_or("").to_owned(),
                r["status"].as_str().unwrap_or("").to_owned(),
                r["output"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// Denies the card (a test that only needed to see it ask).
async fn deny(ts: &TestServer, sid: &str, card: &Value) {
    ts.decide(
        sid,
        card["approval_id"].as_str().unwrap(),
        json!({"decision": "deny"}),
    )
    .await
    .expect(200);
}

fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a plain mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

// ---------------------------------------------------------------------------------------------
// 1. Every server-side read obeys the floor.
// ---------------------------------------------------------------------------------------------

/// `search` never returns what a floor file holds — not in plan mode (where the floor refuses
/// and reads run), not in yolo — and says how many files it left out.
#[tokio::test]
async fn search_skips_floor_files_in_every_mode_and_says_so() {
    let ts = TestServer::start().await;
    std::fs::create_dir_all(ts.ws("certs")).unwrap();
    std::fs::create_dir_all(ts.ws(".git")).unwrap();
    std::fs::write(ts.ws(".env"), format!("{SECRET}\n")).unwrap();
    std::fs::write(ts.ws(".env.local"), format!("{SECRET}\n")).unwrap();
    std::fs::write(ts.ws("certs/server.pem"), format!("{SECRET}\n")).unwrap();
    std::fs::write(ts.ws(".git/config"), format!("{SECRET}\n")).unwrap();
    std::fs::write(ts.ws("notes.md"), "API_KEY appears here too\n").unwrap();
    // The same secret under other names: a symlink and a hard link to `.env`.
    std::os::unix::fs::symlink(".env", ts.ws("alias.txt")).unwrap();
    std::fs::hard_link(ts.ws(".env"), ts.ws("copy.txt")).unwrap();
    for mode in ["plan", "ask", "auto_edit", "yolo"] {
        let sid = ts.session().await;
        let (_, evs) = ts.run_turn(&sid, "search API_KEY", Some(mode)).await;
        let found = results(&evs);
        assert_eq!(found.len(), 1, "{mode}: {found:?}");
        let (tool, status, output) = &found[0];
        assert_eq!((tool.as_str(), status.as_str()), ("search", "ok"), "{mode}");
        assert!(
            !output.contains("hunter2"),
            "{mode}: a secret leaked: {output}"
        );
        assert!(
            output.contains("notes.md:1: API_KEY appears here too"),
            "{mode}: {output}"
        );
        assert!(
            output.contains("not searched: 4 files on the safety floor"),
            "{mode}: {output}"
        );
        for skipped in [".env", ".env.local", "certs/server.pem", "copy.txt"] {
            assert!(output.contains(skipped), "{mode}: {skipped}: {output}");
        }
    }
}

/// `read_file` and `list_files` of a floor path ask (refused in plan), however the path is
/// spelled or linked; only a person's approval of that floor card reads it.
#[tokio::test]
async fn reading_a_floor_file_by_another_name_asks() {
    let ts = TestServer::start().await;
    std::fs::create_dir_all(ts.ws("keys")).unwrap();
    std::fs::create_dir_all(ts.ws(".ssh")).unwrap();
    std::fs::write(ts.ws(".env"), SECRET).unwrap();
    std::fs::write(ts.ws(".ssh/id_ed25519"), SECRET).unwrap();
    std::os::unix::fs::symlink("../.env", ts.ws("keys/app.txt")).unwrap();
    std::os::unix::fs::symlink(".ssh", ts.ws("dot")).unwrap();
    std::fs::hard_link(ts.ws(".env"), ts.ws("plain.txt")).unwrap();
    let spellings = [
        "read .env",
        "read ./keys/../.env",
        "read keys/app.txt",
        "read dot/id_ed25519",
        "read plain.txt",
        "list .ssh",
        "list dot",
    ];
    for line in spellings {
        // Plan mode: refused, nothing read.
        let sid = ts.session().await;
        let (_, evs) = ts.run_turn(&sid, line, Some("plan")).await;
        let found = results(&evs);
        assert_eq!(found[0].1, "refused", "{line} in plan: {found:?}");
        assert!(!found[0].2.contains("hunter2"), "{line}: {found:?}");
        // Yolo: a floor card, whose reason names the floor.
        let sid = ts.session().await;
        ts.send_msg(&sid, line, Some("yolo")).await;
        let card = ts.wait_gate(&sid).await;
        assert_eq!(card["reason"], "safety_floor", "{line}: {card:#}");
        let aid = card["approval_id"].as_str().unwrap();
        ts.decide(&sid, aid, json!({"decision": "deny"}))
            .await
            .expect(200);
    }
    // Approved on its floor card, the read goes through.
    let sid = ts.session().await;
    let turn = ts.send_msg(&sid, "read keys/app.txt", Some("ask")).await;
    let card = ts.wait_gate(&sid).await;
    ts.decide(
        &sid,
        card["approval_id"].as_str().unwrap(),
        json!({"decision": "approve"}),
    )
    .await
    .expect(200);
    let evs = ts.wait_turn_events(&sid, &turn).await;
    assert_eq!(results(&evs)[0].1, "ok", "{evs:#?}");
    assert_eq!(results(&evs)[0].2, SECRET);
}

/// A write to a file with other hard links is a floor card: it may be `.git/config` under
/// another name. The card shows neither file's content (it is not copied into the log).
#[tokio::test]
async fn writing_a_hard_linked_file_is_a_floor_card_in_yolo() {
    let ts = TestServer::start().await;
    std::fs::create_dir_all(ts.ws(".git")).unwrap();
    std::fs::write(ts.ws(".git/config"), "[core]\n\tbare = false\n").unwrap();
    std::fs::hard_link(ts.ws(".git/config"), ts.ws("settings.ini")).unwrap();
    for line in [
        "write settings.ini: [core]\\n\\tfsmonitor = ./evil.sh",
        "edit settings.ini: bare = false => fsmonitor = ./evil.sh",
    ] {
        let sid = ts.session().await;
        ts.send_msg(&sid, line, Some("yolo")).await;
        let card = ts.wait_gate(&sid).await;
        assert_eq!(card["reason"], "safety_floor", "{line}: {card:#}");
        assert!(
            card["reason_detail"]
                .as_str()
                .unwrap()
                .contains("hard links"),
            "{card:#}"
        );
        assert!(card["diff"].is_null(), "{card:#}");
        deny(&ts, &sid, &card).await;
    }
    assert_eq!(
        std::fs::read_to_string(ts.ws(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Only regular files, never blocking the server.
// ---------------------------------------------------------------------------------------------

/// A FIFO planted in the workspace: reading, searching, editing or diffing it is a tool error
/// at once, and the next card, Stop and another session all go on.
#[tokio::test]
async fn a_fifo_never_blocks_a_call_a_card_or_stop() {
    let ts = TestServer::start().await;
    mkfifo(&ts.ws("pipe"));
    std::fs::write(ts.ws("pipe.md"), "x\n").unwrap();
    let sid = ts.session().await;
    let started = Instant::now();
    let (_, evs) = ts
        .run_turn(
            &sid,
            "read pipe\nsearch x\nedit pipe: a => b\nwrite pipe: hello",
            Some("yolo"),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let found = results(&evs);
    assert_eq!(found.len(), 4, "{found:?}");
    assert_eq!(
        (found[0].1.as_str(), found[2].1.as_str()),
        ("error", "error")
    );
    assert!(found[0].2.contains("FIFO"), "{found:?}");
    assert!(found[1].2.contains("pipe.md:1: x"), "{found:?}");
    assert_eq!(found[3].1, "error", "{found:?}");
    // The card of a write to it is built at once and says why it shows no diff.
    let sid = ts.session().await;
    let turn = ts.send_msg(&sid, "write pipe: hello", Some("ask")).await;
    let card = ts.wait_gate(&sid).await;
    assert!(
        card["summary"].as_str().unwrap().contains("FIFO"),
        "{card:#}"
    );
    ts.post(&format!("/api/v1/sessions/{sid}/cancel"), json!({}))
        .await
        .expect(200);
    let evs = ts.wait_turn_events(&sid, &turn).await;
    assert_eq!(of_type(&evs, "turn_finished")[0]["status"], "cancelled");
}

/// SIGTERM ends the server within 5 s while a command of the agent's holds a FIFO open and
/// a card waits.
#[tokio::test]
async fn sigterm_ends_the_server_promptly_whatever_a_tool_waits_on() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    mkfifo(&ws.join("pipe"));
    let mut cmd = serve_command(&["--addr", "127.0.0.1:0", "--token", "t-sigterm"]);
    cmd.arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--workspace")
        .arg(&ws);
    let mut proc = Proc::spawn(cmd);
    let base = proc.listening(SOON).await;
    let api = Api::new(&base).with_token("t-sigterm");
    let sid = api.session().await;
    api.send_msg(&sid, "run: cat pipe", Some("yolo")).await;
    api.wait_event(&sid, "the command started", |e| e["type"] == "tool_started")
        .await;
    let other = api.session().await;
    api.send_msg(&other, "write pipe: x", Some("ask")).await;
    api.wait_gate(&other).await;
    let t0 = Instant::now();
    proc.sigterm();
    let status = proc.wait_exit(Duration::from_secs(5)).await;
    assert!(
        status.is_some(),
        "still running {:?} after SIGTERM",
        t0.elapsed()
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Stop means stopped.
// ---------------------------------------------------------------------------------------------

/// What a command starts to outlive it (a new session, a double fork, nohup) ends on Stop.
#[tokio::test]
async fn stop_ends_every_process_a_command_started() {
    let ts = TestServer::start().await;
    let sid = ts.session().await;
    let sleeper = "env CS_MARK=escape sleep 300 >/dev/null 2>&1";
    let command = format!(
        "run: setsid {sleeper} & ( ( nohup {sleeper} & ) & ) ; setsid sh -c '{sleeper} &' & exec env CS_MARK=escape sleep 300"
    );
    let turn = ts.send_msg(&sid, &command, Some("yolo")).await;
    let ws = ts.ws(".");
    poll_until("four escaped processes", SOON, async || {
        let n = marked_pids(&ws, "escape").len();
        if n >= 4 {
            Ok(())
        } else {
            Err(format!("{n} running"))
        }
    })
    .await;
    ts.post(&format!("/api/v1/sessions/{sid}/cancel"), json!({}))
        .await
        .expect(200);
    ts.wait_turn(&sid, &turn).await;
    poll_until(
        "every escaped process to end",
        SOON,
        async || match marked_pids(&ws, "escape").as_slice() {
            [] => Ok(()),
            left => Err(format!("still running: {left:?}")),
        },
    )
    .await;
}

/// A loop that keeps starting new sessions (`setsid`) until the shell timeout: when the call
/// times out, none of what it started is left.
#[tokio::test]
async fn the_shell_timeout_ends_a_loop_that_keeps_escaping() {
    let ts = TestServer::configured("[tools]\nshell_timeout_secs = 2\n").await;
    let sid = ts.session().await;
    let command = "run: while true; do setsid env CS_MARK=loop sleep 300 >/dev/null 2>&1 & \
                   nohup env CS_MARK=loop sleep 300 >/dev/null 2>&1 & sleep 0.1; done";
    let ws = ts.ws(".");
    let (_, evs) = ts.run_turn(&sid, command, Some("yolo")).await;
    assert_eq!(results(&evs)[0].1, "timeout", "{evs:#?}");
    poll_until(
        "every looped process to end",
        SOON,
        async || match marked_pids(&ws, "loop").as_slice() {
            [] => Ok(()),
            left => Err(format!("still running: {left:?}")),
        },
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// 4. Nobody on loopback can lock the person out.
// ---------------------------------------------------------------------------------------------

/// Starts the server binary with `RLIMIT_NOFILE` at `soft` (and `hard`, when given).
async fn serve_with_nofile(dir: &std::path::Path, soft: u64, hard: Option<u64>) -> (Proc, Api) {
    use std::os::unix::process::CommandExt;
    let mut cmd = serve_command(&["--addr", "127.0.0.1:0", "--token", "t-flood-token"]);
    cmd.arg("--data-dir").arg(dir.join("data"));
    // SAFETY: setrlimit in the child before exec; no allocation.
    unsafe {
        cmd.pre_exec(move || {
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
            limit.rlim_cur = soft;
            if let Some(hard) = hard {
                limit.rlim_max = hard;
            }
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut proc = Proc::spawn(cmd);
    let base = proc.listening(SOON).await;
    (proc, Api::new(&base).with_token("t-flood-token"))
}

/// Opens `n` connections that each send half a request head and then nothing.
fn half_sent(addr: &str, n: usize) -> Vec<std::net::TcpStream> {
    use std::io::Write;
    let addr = addr.trim_start_matches("http://");
    (0..n)
        .filter_map(|_| {
            let mut stream = std::net::TcpStream::connect(addr).ok()?;
            let _ = stream.write_all(b"GET /api/v1/sessions HTTP/1.1\r\nHost: x\r\nX-Slow: ");
            Some(stream)
        })
        .collect()
}

/// 1,100 half-sent requests from loopback, at a 1,024-file soft limit (raised at start) and
/// at a 1,024-file hard one (which cannot be): the person's decision still answers in well
/// under 3 s, and so does a new page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_never_lock_the_person_out() {
    for (soft, hard) in [(1024, None), (1024, Some(1024))] {
        let dir = tempfile::tempdir().unwrap();
        let (_proc, api) = serve_with_nofile(dir.path(), soft, hard).await;
        let sid = api.session().await;
        api.send_msg(&sid, "run: echo flood", Some("ask")).await;
        let card = api.wait_gate(&sid).await;
        let base = api.base.clone();
        let flood = tokio::task::spawn_blocking(move || half_sent(&base, 1100))
            .await
            .unwrap();
        assert!(
            flood.len() > 1000,
            "only {} connections opened",
            flood.len()
        );
        // A new client: the person's request comes on a new connection, after the flood.
        let person = Api::new(&api.base).with_token("t-flood-token");
        let t0 = Instant::now();
        person
            .decide(
                &sid,
                card["approval_id"].as_str().unwrap(),
                json!({"decision": "approve"}),
            )
            .await
            .expect(200);
        let took = t0.elapsed();
        assert!(
            took < Duration::from_secs(3),
            "hard={hard:?}: the decision took {took:?}"
        );
        let t0 = Instant::now();
        Api::new(&api.base)
            .with_token("t-flood-token")
            .get("/api/v1/sessions")
            .await
            .expect(200);
        assert!(
            t0.elapsed() < Duration::from_secs(3),
            "hard={hard:?}: {:?}",
            t0.elapsed()
        );
        drop(flood);
    }
}

// ---------------------------------------------------------------------------------------------
// 9. The agent can only tighten its own limits.
// ---------------------------------------------------------------------------------------------

/// `config_set` takes an allow-list of limits and only lowers them, in every mode; a person's
/// edit of its card is held to the same.
#[tokio::test]
async fn the_agent_can_only_lower_its_own_limits() {
    let ts = TestServer::start().await;
    let ts = &ts;
    let value = |key: &'static str| async move {
        let view = ts.get("/api/v1/config").await.expect(200);
        view["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["key"] == key)
            .map(|k| k["value"].clone())
            .unwrap()
    };
    let refused = [
        "set tools.shell_timeout_secs = 100000",
        "set tools.output_limit_bytes = 10000000",
        "set provider.max_retries = 50",
        "set provider.kind = \"openai\"",
        "set provider.model = \"gpt-huge\"",
        "set provider.base_url = \"http://127.0.0.1:9/v1\"",
        "set notify.webhook_url = \"http://127.0.0.1:9/\"",
        "set approvals.timeout_secs = 999999",
        "set server.public_url = \"http://evil.example\"",
        "set tools.sandbox.mode = \"off\"",
        "set storage.synchronous = \"normal\"",
        "set tools.future_key = 1",
    ];
    for line in refused {
        for mode in ["yolo", "ask"] {
            let sid = ts.session().await;
            let (_, evs) = ts.run_turn(&sid, line, Some(mode)).await;
            let found = results(&evs);
            assert_eq!(found[0].1, "refused", "{line} in {mode}: {found:?}");
            assert!(
                of_type(&evs, "approval_request").is_empty(),
                "{line}: a card"
            );
        }
    }
    assert_eq!(value("tools.shell_timeout_secs").await, json!(120));
    assert_eq!(value("provider.kind").await, json!("demo"));
    // Lowering goes through (yolo runs it); raising back above the new value is refused.
    let sid = ts.session().await;
    let (_, evs) = ts
        .run_turn(&sid, "set tools.max_parallel = 2", Some("yolo"))
        .await;
    assert_eq!(results(&evs)[0].1, "ok", "{evs:#?}");
    assert_eq!(value("tools.max_parallel").await, json!(2));
    let (_, evs) = ts
        .run_turn(&sid, "set tools.max_parallel = 3", Some("yolo"))
        .await;
    assert_eq!(results(&evs)[0].1, "refused", "{evs:#?}");
    // A card that lowers: an edit that would raise is refused, and changes nothing.
    ts.send_msg(&sid, "set tools.max_parallel = 1", Some("ask"))
        .await;
    let card = ts.wait_gate(&sid).await;
    let aid = card["approval_id"].as_str().unwrap();
    ts.decide(
        &sid,
        aid,
        json!({"decision": "edit", "edits": {"key": "tools.max_parallel", "value": 16}}),
    )
    .await
    .expect_error(403, "not_allowed");
    ts.assert_still_pending(&sid, aid).await;
    assert_eq!(value("tools.max_parallel").await, json!(2));
}

// ---------------------------------------------------------------------------------------------
// 5. Secrets never leave.
// ---------------------------------------------------------------------------------------------

const HOOK_PATH: &str = "T0AAA/B0BBB/hook-secret-9f27";

/// A webhook URL (its path is the secret) is masked in the API, the config page, the CLI, the
/// audit of a change to it (which records that it changed, not its values), a broken file's
/// error and the logs.
#[tokio::test]
async fn a_secret_config_value_is_masked_in_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    let hook = format!("http://127.0.0.1:9/services/{HOOK_PATH}");
    std::fs::write(
        &config,
        format!("[notify]\nwebhook_url = \"{hook}\"\nformat = \"slack\"\n"),
    )
    .unwrap();
    let mut cmd = serve_command(&["--addr", "127.0.0.1:0", "--token", "t-secrets-token"]);
    cmd.arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&config)
        .env("RUST_LOG", "countersign=debug");
    let mut proc = Proc::spawn(cmd);
    let base = proc.listening(SOON).await;
    let api = Api::new(&base).with_token("t-secrets-token");
    let mut seen = Vec::new();
    let view = api.get("/api/v1/config").await.expect(200);
    let row = view["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == "notify.webhook_url")
        .unwrap()
        .clone();
    assert_eq!(row["value"], "set: 127.0.0.1/… (masked)", "{row}");
    seen.push(view.to_string());
    // A gate that notifies (its post fails: the logs then talk about it).
    let sid = api.session().await;
    api.send_msg(&sid, "run: echo notify", Some("ask")).await;
    api.wait_gate(&sid).await;
    // The page, rendered on the server.
    let page = api
        .req(reqwest::Method::GET, "/config")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    seen.push(page);
    // A change in the file: audited as changed, values masked.
    std::fs::write(
        &config,
        format!("[notify]\nwebhook_url = \"{hook}-2\"\nformat = \"slack\"\n"),
    )
    .unwrap();
    let audit = poll_until("the change in the audit", SOON, async || {
        let audit = api
            .get("/api/v1/audit?action=config_changed")
            .await
            .expect(200);
        match audit
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["subject"] == "notify.webhook_url")
        {
            Some(entry) => Ok(entry.clone()),
            None => Err(audit.to_string()),
        }
    })
    .await;
    assert_eq!(audit["actor"], "file", "{audit}");
    seen.push(audit.to_string());
    // A broken file quoting the secret in its error.
    std::fs::write(
        &config,
        format!("[notify]\nwebhook_url = \"{hook}\"\nformat = 7\n"),
    )
    .unwrap();
    let view = poll_until("the file's error", SOON, async || {
        let view = api.get("/api/v1/config").await.expect(200);
        if view["error"].is_string() {
            Ok(view)
        } else {
            Err(view.to_string())
        }
    })
    .await;
    seen.push(view.to_string());
    // The local CLI.
    let out = countersign(&["config", "show", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    seen.push(String::from_utf8_lossy(&out.stdout).into_owned());
    seen.push(String::from_utf8_lossy(&out.stderr).into_owned());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    seen.push(proc.stderr());
    for (i, text) in seen.iter().enumerate() {
        assert!(
            !text.contains(HOOK_PATH),
            "output {i} leaks the secret: {text}"
        );
        assert!(
            !text.contains("hook-secret"),
            "output {i} leaks the secret: {text}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 6. Scopes are enforced where data is read.
// ---------------------------------------------------------------------------------------------

async fn token(ts: &TestServer, name: &str, scope: &str) -> String {
    let made = ts
        .post("/api/v1/tokens", json!({"name": name, "scope": scope}))
        .await
        .expect(201);
    made["token"].as_str().unwrap().to_owned()
}

/// A phone's `approve` credential: pages rendered on the server for it carry nothing it may
/// not read and no control it may not use; `/` makes no session for it; it cannot change a
/// mode, a plan card's included.
#[tokio::test]
async fn an_approve_credential_gets_only_what_its_scope_may_read() {
    let ts = TestServer::configured("[tools]\nshell_timeout_secs = 77\n").await;
    let phone = Api::new(&ts.base).with_token(&token(&ts, "phone", "approve").await);
    // The config page, rendered on the server: no key, no value.
    let page = phone
        .req(reqwest::Method::GET, "/config")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !page.contains("shell_timeout_secs"),
        "the config leaked: {page}"
    );
    assert!(page.contains("may not"), "{page}");
    let tokens = phone
        .req(reqwest::Method::GET, "/tokens")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !tokens.contains("phone</"),
        "the token list leaked: {tokens}"
    );
    // The inbox page: no controls it cannot use.
    let inbox = phone
        .req(reqwest::Method::GET, "/inbox")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for control in [
        "new-session",
        "nav-answers",
        "nav-config",
        "nav-tokens",
        "delete-session",
    ] {
        assert!(
            !inbox.contains(control),
            "{control} shown to an approve token"
        );
    }
    assert!(inbox.contains(r#"data-scope="approve""#), "{inbox}");
    // `/` sends it to the inbox and makes no session.
    let before = ts.list().await.len();
    let home = phone.req(reqwest::Method::GET, "/").send().await.unwrap();
    assert_eq!(home.status(), 303);
    assert_eq!(home.headers()["location"], "/inbox");
    assert_eq!(ts.list().await.len(), before, "a session was created");
    // Server functions refuse it themselves.
    for name in [
        "config",
        "create_session",
        "tokens",
        "set_mode",
        "send_message",
    ] {
        let resp = phone
            .req(reqwest::Method::POST, &format!("/api/ui/{name}"))
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 403, "{name}");
    }
    // A plan card: approved as proposed, yes; with another mode picked, no.
    let sid = ts.session().await;
    ts.put(
        &format!("/api/v1/sessions/{sid}/mode"),
        json!({"approval_mode": "yolo"}),
    )
    .await
    .expect(200);
    ts.send_msg(&sid, "propose plan: 1. look around", Some("plan"))
        .await;
    let card = ts.wait_gate(&sid).await;
    let aid = card["approval_id"].as_str().unwrap();
    for mode in ["yolo", "auto_edit", "ask"] {
        if card["execution_mode"] == mode {
            continue;
        }
        phone
            .decide(
                &sid,
                aid,
                json!({"decision": "approve", "execution_mode": mode}),
            )
            .await
            .expect_error(403, "forbidden");
    }
    ts.assert_still_pending(&sid, aid).await;
    phone
        .put(
            &format!("/api/v1/sessions/{sid}/mode"),
            json!({"approval_mode": "yolo"}),
        )
        .await
        .expect_error(403, "forbidden");
    phone
        .decide(&sid, aid, json!({"decision": "approve"}))
        .await
        .expect(200);
}

// ---------------------------------------------------------------------------------------------
// 7. Outside agents' input is read the way the agent will run it.
// ---------------------------------------------------------------------------------------------

fn gate_body(session: &str, tool: &str, input: Value) -> Value {
    json!({
        "source": "codex",
        "external_session": session,
        "cwd": "/home/me/app",
        "tool": {"name": tool, "input": input},
    })
}

/// Paths and commands as the agent's own file system and exec read them: each spelling of a
/// floor file is a floor card, however it is cased, slashed or dotted; a patch's every file
/// counts; argv words are not joined loosely.
#[tokio::test]
async fn outside_calls_reach_the_floor_in_every_spelling() {
    let ts = TestServer::start().await;
    let agent = Api::new(&ts.base).with_token(&token(&ts, "codex-hook", "gates").await);
    let patch = "*** Begin Patch\n*** Update File: src/ok.rs\n@@\n-a\n+b\n*** Update File: ./config/../.git/hooks/pre-commit\n@@\n-x\n+y\n*** End Patch";
    let floor_calls = [
        ("Read", json!({"file_path": "C:\\Repo\\.ENV"})),
        ("Read", json!({"file_path": "/home/me/app/./src/../.env"})),
        (
            "Write",
            json!({"file_path": "keys/../ID_RSA", "content": "x"}),
        ),
        (
            "Edit",
            json!({"file_path": ".Git\\config", "old_string": "a", "new_string": "b"}),
        ),
        ("apply_patch", json!({"input": patch})),
        (
            "apply_patch",
            json!({"input": format!("apply_patch <<'EOF'\n{patch}\nEOF")}),
        ),
        ("apply_patch", json!({"input": "not a patch at all"})),
        (
            "exec_command",
            json!({"command": ["env", "bash", "-c", "rm -rf ~/work"]}),
        ),
        (
            "exec_command",
            json!({"command": ["/bin/bash", "-lc", "cat .env"]}),
        ),
        (
            "Bash",
            json!({"command": format!("cd x && apply_patch <<'EOF'\n{patch}\nEOF")}),
        ),
        (
            "Bash",
            json!({"command": "printf '%s' \"$P\" | apply_patch"}),
        ),
        // Gemini CLI, Qwen Code and Copilot CLI name their tools and fields their own way; a
        // shell told to run in another folder is read as running there.
        (
            "run_shell_command",
            json!({"command": "cat id_ed25519", "dir_path": "/home/me/.ssh"}),
        ),
        (
            "run_shell_command",
            json!({"command": "cat config", "directory": ".git"}),
        ),
        ("create", json!({"path": "./.env", "file_text": "K=v"})),
        (
            "edit",
            json!({"path": "keys/../ID_RSA", "old_str": "a", "new_str": "b"}),
        ),
        (
            "replace",
            json!({"file_path": ".git/hooks/pre-commit", "old_string": "a", "new_string": "b"}),
        ),
        ("view", json!({"path": "/home/me/app/.env"})),
        // Search fields each agent names its own way (a read runs in every mode).
        (
            "grep_search",
            json!({"pattern": "=", "include_pattern": "**/.env*"}),
        ),
        ("grep_search", json!({"pattern": ".", "glob": "*.pem"})),
        (
            "grep",
            json!({"pattern": "=", "paths": ["src", "/home/me/app/.env.production"]}),
        ),
        // Two folders: which one the agent runs in cannot be told.
        (
            "run_shell_command",
            json!({"command": "cat config", "workdir": "/home/me/app", "dir_path": "/home/me/.ssh"}),
        ),
        ("read_many_files", json!({"file_path": ".env"})),
    ];
    for (i, (tool, input)) in floor_calls.into_iter().enumerate() {
        let opened = agent
            .post(
                "/api/v1/gates",
                gate_body(&format!("spell-{i}"), tool, input.clone()),
            )
            .await
            .expect(201);
        assert_eq!(opened["status"], "pending", "{tool} {input}: {opened}");
        let card = ts.wait_gate(opened["session_id"].as_str().unwrap()).await;
        assert_eq!(card["reason"], "safety_floor", "{tool} {input}: {card:#}");
    }
}

/// An outside session belongs to the token that opened it: a second token naming the same
/// `external_session` gets its own session, and never rides the first one's mode or rules.
#[tokio::test]
async fn an_outside_session_belongs_to_the_token_that_opened_it() {
    let ts = TestServer::start().await;
    let first = Api::new(&ts.base).with_token(&token(&ts, "hook-a", "gates").await);
    let second = Api::new(&ts.base).with_token(&token(&ts, "hook-b", "gates").await);
    let opened = first
        .post(
            "/api/v1/gates",
            gate_body("shared", "Bash", json!({"command": "make test"})),
        )
        .await
        .expect(201);
    let sid = opened["session_id"].as_str().unwrap().to_owned();
    // The person puts the first agent's session in yolo and allows `make test *` always.
    ts.put(
        &format!("/api/v1/sessions/{sid}/mode"),
        json!({"approval_mode": "yolo"}),
    )
    .await
    .expect(200);
    ts.decide(
        &sid,
        opened["approval_id"].as_str().unwrap(),
        json!({"decision": "allow_always"}),
    )
    .await
    .expect(200);
    let again = first
        .post(
            "/api/v1/gates",
            gate_body("shared", "Bash", json!({"command": "make test"})),
        )
        .await
        .expect(201);
    assert_eq!(again["session_id"], sid.as_str());
    assert_eq!(again["status"], "approved", "{again}");
    // The second token may not even name the first one's agent …
    second
        .post(
            "/api/v1/gates",
            gate_body("shared", "Bash", json!({"command": "make test"})),
        )
        .await
        .expect_error(403, "source_claimed");
    // … and under its own name, the same external session is its own session, asking.
    let mut own_name = gate_body("shared", "Bash", json!({"command": "make test"}));
    own_name["source"] = json!("other-agent");
    let other = second.post("/api/v1/gates", own_name).await.expect(201);
    assert_ne!(
        other["session_id"],
        sid.as_str(),
        "rode the first token's session"
    );
    assert_eq!(other["status"], "pending", "{other}");
}

// ---------------------------------------------------------------------------------------------
// 12. Network reads ask.
// ---------------------------------------------------------------------------------------------

/// A fetch-like outside tool is a class of its own: it asks in plan, ask and auto_edit (where
/// a plain read runs), and runs in yolo.
#[tokio::test]
async fn network_reads_ask_where_plain_reads_run() {
    let ts = TestServer::start().await;
    let agent = Api::new(&ts.base).with_token(&token(&ts, "cc-hook", "gates").await);
    let fetch = |session: &str, tool: &str| {
        json!({
            "source": "claude-code", "external_session": session, "cwd": "/home/me/app",
            "tool": {"name": tool, "input": {"url": "https://example.com/?q=secret", "prompt": "x"}},
        })
    };
    for (i, mode) in ["plan", "ask", "auto_edit", "yolo"].into_iter().enumerate() {
        // The session exists after its first gate; its mode is set, then a fetch is asked.
        let first = agent
            .post(
                "/api/v1/gates",
                json!({
                    "source": "claude-code", "external_session": format!("net-{i}"),
                    "tool": {"name": "Read", "input": {"file_path": "README.md"}},
                }),
            )
            .await
            .expect(201);
        assert_eq!(first["status"], "approved", "a plain read runs: {first}");
        let sid = first["session_id"].as_str().unwrap();
        ts.put(
            &format!("/api/v1/sessions/{sid}/mode"),
            json!({"approval_mode": mode}),
        )
        .await
        .expect(200);
        for tool in ["WebFetch", "WebSearch"] {
            let opened = agent
                .post("/api/v1/gates", fetch(&format!("net-{i}"), tool))
                .await
                .expect(201);
            let expected = if mode == "yolo" {
                "approved"
            } else {
                "pending"
            };
            assert_eq!(opened["status"], expected, "{tool} in {mode}: {opened}");
            if expected == "pending" {
                let card = ts.wait_gate(sid).await;
                assert_eq!(card["class"], "network", "{card:#}");
                deny(&ts, sid, &card).await;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 10. The card binds what it showed.
// ---------------------------------------------------------------------------------------------

/// A card's digest covers the file its diff was made from: approved after the file changed,
/// the answer gets `409 stale_digest` and a fresh card shows the file as it is now; that one,
/// approved, runs.
#[tokio::test]
async fn an_answer_to_a_card_whose_file_changed_is_stale_and_a_fresh_card_shows_the_change() {
    let ts = TestServer::start().await;
    std::fs::write(ts.ws("notes.md"), "one\n").unwrap();
    let sid = ts.session().await;
    let turn = ts
        .send_msg(&sid, "edit notes.md: one => ONE", Some("ask"))
        .await;
    let first = ts.wait_gate(&sid).await;
    assert!(
        first["diff"].as_str().unwrap().contains("-one"),
        "{first:#}"
    );
    // The file changes under the card (another process, a parallel call).
    std::fs::write(ts.ws("notes.md"), "one\ntwo, planted\n").unwrap();
    let aid = first["approval_id"].as_str().unwrap();
    let digest = first["digest"].as_str().unwrap();
    ts.decide(&sid, aid, json!({"decision": "approve", "digest": digest}))
        .await
        .expect_error(409, "stale_digest");
    // The stale card is closed (410 gone, as any closed card): only the fresh one answers.
    ts.decide(&sid, aid, json!({"decision": "approve"}))
        .await
        .expect_error(410, "gone");
    let fresh = poll_until("a fresh card", SOON, async || {
        let pending = ts.snapshot(&sid).await["pending"].clone();
        match pending.as_array().and_then(|p| p.first()) {
            Some(card) if card["approval_id"] != first["approval_id"] => Ok(card.clone()),
            _ => Err(pending.to_string()),
        }
    })
    .await;
    assert_eq!(
        fresh["call_id"], first["call_id"],
        "the same call, asked again"
    );
    assert!(
        fresh["diff"].as_str().unwrap().contains("two, planted"),
        "{fresh:#}"
    );
    assert_ne!(fresh["digest"], first["digest"]);
    ts.decide(
        &sid,
        fresh["approval_id"].as_str().unwrap(),
        json!({"decision": "approve", "digest": fresh["digest"]}),
    )
    .await
    .expect(200);
    let evs = ts.wait_turn_events(&sid, &turn).await;
    assert_eq!(
        results(&evs),
        [(
            "edit_file".to_owned(),
            "ok".to_owned(),
            "edited notes.md (1 replacement)".to_owned()
        )]
    );
    assert_eq!(
        std::fs::read_to_string(ts.ws("notes.md")).unwrap(),
        "ONE\ntwo, planted\n"
    );
    // A deny needs no fresh card: denying is always safe.
    std::fs::write(ts.ws("notes.md"), "three\n").unwrap();
    ts.send_msg(&sid, "write notes.md: four", Some("ask")).await;
    let card = ts.wait_gate(&sid).await;
    std::fs::write(ts.ws("notes.md"), "changed\n").unwrap();
    deny(&ts, &sid, &card).await;
}

// ---------------------------------------------------------------------------------------------
// Found by the adversarial review (each: the attack as it was run).
// ---------------------------------------------------------------------------------------------

/// An agent that opens a harmless gate under the `Idempotency-Key` its hook will use for a
/// dangerous call gets `409 idempotency_key_reused`, not the harmless gate's answer.
#[tokio::test]
async fn an_idempotency_key_answers_only_its_own_call() {
    let ts = TestServer::start().await;
    let agent = Api::new(&ts.base).with_token(&token(&ts, "hook", "gates").await);
    let harmless = json!({"source": "claude-code", "external_session": "scratch",
        "tool": {"name": "Read", "input": {"file_path": "README.md"}}});
    let opened = agent
        .req(reqwest::Method::POST, "/api/v1/gates")
        .header("idempotency-key", "k-shared")
        .json(&harmless)
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 201);
    for dangerous in [
        json!({"source": "claude-code", "external_session": "scratch",
            "tool": {"name": "Bash", "input": {"command": "rm -rf ~/work"}}}),
        json!({"source": "claude-code", "external_session": "victim",
            "tool": {"name": "Read", "input": {"file_path": "README.md"}}}),
        json!({"source": "codex", "external_session": "scratch",
            "tool": {"name": "Read", "input": {"file_path": "README.md"}}}),
    ] {
        let replay = agent
            .req(reqwest::Method::POST, "/api/v1/gates")
            .header("idempotency-key", "k-shared")
            .json(&dangerous)
            .send()
            .await
            .unwrap();
        assert_eq!(replay.status(), 409, "{dangerous}");
        let body: Value = replay.json().await.unwrap();
        assert_eq!(body["error"]["code"], "idempotency_key_reused", "{body}");
    }
    // The same call again still finds its gate.
    let again = agent
        .req(reqwest::Method::POST, "/api/v1/gates")
        .header("idempotency-key", "k-shared")
        .json(&harmless)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
}

/// Commands run in bash, the dialect the floor reads: `$'…'` and `((…))` hide nothing.
#[tokio::test]
async fn the_shell_the_floor_reads_is_the_shell_that_runs() {
    let ts = TestServer::start().await;
    std::fs::write(ts.ws(".env"), SECRET).unwrap();
    std::fs::write(ts.ws("id_rsa"), SECRET).unwrap();
    for command in [
        "run: echo $'\\'; cat .env #'",
        "run: ((cat<id_rsa))",
        "run: X=n; cat .e${X}v",
        "run: cat $'.\\x65nv'",
    ] {
        // Either it asks (and is denied here), or it runs without reading the floor file.
        let sid = ts.session().await;
        let turn = ts.send_msg(&sid, command, Some("yolo")).await;
        let snap = ts
            .wait_snapshot(&sid, "a card or the end of the turn", |s| {
                s["pending"].as_array().is_some_and(|p| !p.is_empty())
                    || events(s)
                        .iter()
                        .any(|e| e["type"] == "turn_finished" && e["turn_id"] == turn)
            })
            .await;
        if let Some(card) = snap["pending"].as_array().and_then(|p| p.first()) {
            deny(&ts, &sid, card).await;
        }
        let evs = ts.wait_turn_events(&sid, &turn).await;
        let leaked = results(&evs).iter().any(|r| r.2.contains("hunter2"));
        assert!(!leaked, "{command}: the secret leaked: {evs:#?}");
    }
    // Recursive readers and globs that reach a floor file on disk ask.
    for command in [
        "run: grep -r hunter2 .",
        "run: cat i?_rs?",
        "run: find . -name 'i*' -exec cat {} +",
    ] {
        let sid = ts.session().await;
        ts.send_msg(&sid, command, Some("yolo")).await;
        let card = ts.wait_gate(&sid).await;
        assert_eq!(card["reason"], "safety_floor", "{command}: {card:#}");
        deny(&ts, &sid, &card).await;
    }
}

/// A path rule is for the path as it leads: a rule made for `docs/a.md` does not cover the
/// file a symlink of that name points to; and an approved floor card reads the file it named,
/// not one swapped in before the answer.
#[tokio::test]
async fn rules_and_floor_approvals_follow_the_real_path() {
    let ts = TestServer::start().await;
    std::fs::create_dir_all(ts.ws("docs")).unwrap();
    std::fs::create_dir_all(ts.ws("src")).unwrap();
    std::fs::write(ts.ws("docs/a.md"), "doc\n").unwrap();
    std::fs::write(ts.ws("src/main.rs"), "fn main() {}\n").unwrap();
    let sid = ts.session().await;
    ts.send_msg(&sid, "write docs/a.md: v2", Some("ask")).await;
    let card = ts.wait_gate(&sid).await;
    ts.decide(
        &sid,
        card["approval_id"].as_str().unwrap(),
        json!({"decision": "allow_always"}),
    )
    .await
    .expect(200);
    ts.wait_event(&sid, "the write", |e| e["type"] == "turn_finished")
        .await;
    std::fs::remove_file(ts.ws("docs/a.md")).unwrap();
    std::os::unix::fs::symlink("../src/main.rs", ts.ws("docs/a.md")).unwrap();
    let turn = ts
        .send_msg(&sid, "write docs/a.md: rewritten", Some("ask"))
        .await;
    let card = ts.wait_gate(&sid).await;
    assert_eq!(
        card["tool"], "write_file",
        "the rule did not answer it: {card:#}"
    );
    deny(&ts, &sid, &card).await;
    ts.wait_turn(&sid, &turn).await;
    assert_eq!(
        std::fs::read_to_string(ts.ws("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );
    // A floor card for `.env.example`, answered after it became a link to `.env`.
    std::fs::write(ts.ws(".env.example"), "EXAMPLE=1\n").unwrap();
    std::fs::write(ts.ws(".env"), SECRET).unwrap();
    let sid = ts.session().await;
    ts.send_msg(&sid, "read .env.example", Some("ask")).await;
    let card = ts.wait_gate(&sid).await;
    assert_eq!(card["reason"], "safety_floor");
    std::fs::remove_file(ts.ws(".env.example")).unwrap();
    std::os::unix::fs::symlink(".env", ts.ws(".env.example")).unwrap();
    ts.decide(
        &sid,
        card["approval_id"].as_str().unwrap(),
        json!({"decision": "approve"}),
    )
    .await
    .expect_error(409, "stale_digest");
}

/// One long line and one large rewrite cost a bounded amount: a search holds at most 64 KiB
/// of a line, and a card's diff gives up being minimal after two seconds.
#[tokio::test]
async fn a_huge_line_or_a_huge_diff_does_not_take_the_server_down() {
    let ts = TestServer::start().await;
    let f = std::fs::File::create(ts.ws("big.txt")).unwrap();
    f.set_len(3 * 1024 * 1024 * 1024).unwrap(); // sparse: 3 GiB of one "line" of NULs
    std::fs::write(ts.ws("lines.txt"), "a\n".repeat(300_000)).unwrap();
    let sid = ts.session().await;
    let (_, evs) = ts.run_turn(&sid, "search zzz", Some("ask")).await;
    assert_eq!(results(&evs)[0].1, "ok", "{evs:#?}");
    let content = "b\\n".repeat(5_000);
    ts.send_msg(&sid, &format!("write lines.txt: {content}"), Some("ask"))
        .await;
    let card = ts.wait_gate(&sid).await;
    assert!(card["diff"].is_string(), "{}", card["summary"]);
    ts.get("/api/v1/health").await.expect(200);
}

/// An agent's `gates` token is no person's: connections that carry only it count against the
/// cap on strangers, a revoked token's open feed ends, a cancel is audited as the credential's,
/// and one outside session can hold only so many cards, each of a bounded size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weaker_token_cannot_crowd_out_or_outlive_the_person() {
    use std::io::{Read, Write};
    let ts = TestServer::start().await;
    let secret = token(&ts, "hook", "gates").await;
    let agent = Api::new(&ts.base).with_token(&secret);
    // 700 keep-alive connections, each having sent one request with the gates token.
    let addr = ts.base.trim_start_matches("http://").to_owned();
    let held = {
        let secret = secret.clone();
        tokio::task::spawn_blocking(move || {
            (0..700)
                .filter_map(|_| {
                    let mut s = std::net::TcpStream::connect(&addr).ok()?;
                    let req = format!(
                        "GET /api/v1/gates/nope HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {secret}\r\n\r\n"
                    );
                    s.write_all(req.as_bytes()).ok()?;
                    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
                    let mut buf = [0u8; 512];
                    let _ = s.read(&mut buf);
                    Some(s)
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap()
    };
    assert!(held.len() > 600, "{} held", held.len());
    let t0 = Instant::now();
    Api::new(&ts.base).get("/api/v1/sessions").await.expect(200);
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    drop(held);
    // A cancel names the credential that made it.
    let opened = agent
        .post(
            "/api/v1/gates",
            gate_body("cap", "Bash", json!({"command": "make"})),
        )
        .await
        .expect(201);
    let id = opened["approval_id"].as_str().unwrap();
    let cancelled = agent
        .post(&format!("/api/v1/gates/{id}/cancel"), json!({}))
        .await
        .expect(200);
    assert_eq!(cancelled["actor"], "token:hook", "{cancelled}");
    // At most 64 cards wait in one session; an input over 256 KiB is refused.
    for i in 0..64 {
        agent
            .post(
                "/api/v1/gates",
                gate_body("cap", "Bash", json!({"command": format!("make t{i}")})),
            )
            .await
            .expect(201);
    }
    agent
        .post(
            "/api/v1/gates",
            gate_body("cap", "Bash", json!({"command": "make more"})),
        )
        .await
        .expect_error(429, "too_many_gates");
    agent
        .post(
            "/api/v1/gates",
            gate_body(
                "big",
                "Write",
                json!({"file_path": "a", "content": "x".repeat(300_000)}),
            ),
        )
        .await
        .expect_error(400, "invalid_gate");
    // A revoked approve token's open feed ends within seconds.
    let phone = token(&ts, "phone", "approve").await;
    let sid = opened["session_id"].as_str().unwrap().to_owned();
    let mut feed = reqwest::Client::new()
        .get(format!("{}/api/v1/sessions/{sid}/events", ts.base))
        .bearer_auth(&phone)
        .send()
        .await
        .unwrap();
    assert_eq!(feed.status(), 200);
    ts.delete("/api/v1/tokens/phone").await.expect(204);
    let ended = tokio::time::timeout(Duration::from_secs(15), async {
        while let Ok(Some(_)) = feed.chunk().await {}
    })
    .await;
    assert!(ended.is_ok(), "the revoked token's feed is still open");
}

/// An open feed belongs to the exact token it was opened with: made again under the same name
/// (another secret), or its stored scope become one this build cannot read, the old feed ends;
/// a feed of the token as it is now stays open.
#[tokio::test]
async fn an_open_feed_ends_when_its_exact_token_stops_authenticating() {
    let ts = TestServer::scripted([]).await;
    let sid = ts.create_id(json!({"title": "t"})).await;
    let open = |secret: String| {
        let url = format!("{}/api/v1/sessions/{sid}/events", ts.base);
        async move {
            let feed = reqwest::Client::new()
                .get(url)
                .bearer_auth(secret)
                .send()
                .await
                .unwrap();
            assert_eq!(feed.status(), 200);
            feed
        }
    };
    let ends = |mut feed: reqwest::Response| async move {
        tokio::time::timeout(Duration::from_secs(15), async {
            while let Ok(Some(_)) = feed.chunk().await {}
        })
        .await
        .is_ok()
    };

    // Revoked and made again at once, before the feed's next check: same name, same scope.
    let old = open(token(&ts, "phone", "approve").await).await;
    ts.delete("/api/v1/tokens/phone").await.expect(204);
    let new_secret = token(&ts, "phone", "approve").await;
    let mut new = open(new_secret).await;
    assert!(ends(old).await, "the old secret's feed outlived its token");
    let still_open = tokio::time::timeout(Duration::from_secs(7), async {
        while let Ok(Some(_)) = new.chunk().await {}
    })
    .await
    .is_err();
    assert!(still_open, "the current token's feed ended");

    // A phone logged in with the token (the named-token cookie, no bearer) likewise.
    let secret = token(&ts, "tablet", "approve").await;
    let login = send(ts.anon(reqwest::Method::GET, &format!("/login?token={secret}"))).await;
    assert_eq!(login.status.as_u16(), 303, "{login:?}");
    let cookie = login.header("set-cookie").expect("Set-Cookie").to_owned();
    let cookie = cookie.split(';').next().unwrap().trim().to_owned();
    let by_cookie = reqwest::Client::new()
        .get(format!("{}/api/v1/sessions/{sid}/events", ts.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(by_cookie.status(), 200);
    ts.delete("/api/v1/tokens/tablet").await.expect(204);
    token(&ts, "tablet", "approve").await;
    assert!(
        ends(by_cookie).await,
        "the cookie's feed outlived its token"
    );

    // Its stored scope turned into one this build cannot read.
    let odd = open(token(&ts, "odd", "approve").await).await;
    assert_eq!(
        sql(
            &ts.db(),
            "UPDATE tokens SET scope = 'Approve' WHERE name = 'odd'"
        ),
        1
    );
    assert!(
        ends(odd).await,
        "a feed outlived its token's readable scope"
    );
}
