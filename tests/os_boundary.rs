//! The OS boundary for real (issue 37, point 2): Countersign set up with `countersign service
//! install` runs as a user of its own; an outside agent runs as another user (a person's, with a
//! login shell). The agent's hook reaches Countersign over HTTP with a `gates` token and works;
//! the agent's shell can neither read nor change anything in the data dir (the database, the
//! config, every file). The start-up warning appears when Countersign shares the agent's user
//! and not when it runs as its own, and an agent that connects as Countersign's own user is
//! reported (the admin's report, the Security page, a new `gates` token, `hook install`).
//!
//! The two-user test needs root, `useradd`, `runuser` and `setpriv` (CI has them) and is
//! skipped with a message otherwise; the doors that make a `gates` token are also checked on a
//! server that shares the test's own user, which needs none of that. Run with
//! `cargo test --features ssr --test os_boundary`.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use support::os_users::{TestUsers, as_user, exec_as_user, missing, unique_name, which};
use support::*;

/// Everything one run sets up, under one temp dir every user may enter.
struct Setup {
    base: tempfile::TempDir,
    svc: String,
    agent: String,
    agent_home: PathBuf,
    /// The binary the test runs (a copy every user may run).
    bin: String,
    /// The copy `service install` put under its prefix.
    installed: String,
    data: PathBuf,
    prefix: PathBuf,
    unit: PathBuf,
}

impl Setup {
    fn path(&self) -> &Path {
        self.base.path()
    }

    /// `countersign service <args…>` as root, with this setup's places.
    fn service(&self, verb: &str, extra: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.args(["service", verb]).args(self.place()).args(extra);
        cmd.current_dir(self.path()).env("RUST_LOG", "warn");
        cmd
    }

    fn place(&self) -> Vec<String> {
        let s = |p: &Path| p.display().to_string();
        vec![
            "--user".into(),
            self.svc.clone(),
            "--data-dir".into(),
            s(&self.data),
            "--prefix".into(),
            s(&self.prefix),
            "--unit-file".into(),
            s(&self.unit),
        ]
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode_of(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn uid_of(user: &str) -> Option<u32> {
    let out = Command::new("id").args(["-u", user]).output().unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().parse().unwrap())
}

fn fixture(path: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/external")
        .join(path);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Claude Code's recorded `PreToolUse` payload for `Bash`, with this command.
fn bash_payload(command: &str, id: &str) -> String {
    let mut input = fixture("claude-code/pretooluse-bash.stdin.json");
    input["tool_input"]["command"] = json!(command);
    input["tool_use_id"] = json!(id);
    input["cwd"] = json!("/tmp");
    input.to_string()
}

/// The users, the temp dir (0755) and a copy of the binary every user may run.
fn set_up(users: &mut TestUsers) -> Setup {
    let base = tempfile::Builder::new()
        .prefix("cs-boundary")
        .tempdir()
        .unwrap();
    chmod(base.path(), 0o755);
    let (svc, agent) = (unique_name("s"), unique_name("a"));
    users.adopt(&svc);
    let agent_home = base.path().join("agent-home");
    users.person(&agent, &agent_home);
    let bin_dir = base.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    chmod(&bin_dir, 0o755);
    let bin = bin_dir.join("countersign");
    std::fs::copy(env!("CARGO_BIN_EXE_countersign"), &bin).unwrap();
    chmod(&bin, 0o755);
    let prefix = base.path().join("prefix");
    Setup {
        svc,
        agent,
        agent_home,
        bin: bin.display().to_string(),
        installed: prefix.join("bin/countersign").display().to_string(),
        data: base.path().join("svc-data"),
        unit: base.path().join("countersign.service"),
        prefix,
        base,
    }
}

/// A dry run (anyone's) changes nothing; the real thing refuses a non-root user with what to
/// run instead; as root it makes the user, the data dir, the config, the binary and the unit;
/// a second run changes nothing.
async fn install(s: &Setup) {
    let mut dry = as_user(&s.agent, s.path(), &s.bin, &["service", "install"]);
    dry.args(s.place()).arg("--dry-run");
    let out = run_async(dry, None).await;
    assert_eq!(out.code(), 0, "{out:#?}");
    assert!(
        out.stdout.contains("dry run: would do") && out.stdout.contains("useradd --system"),
        "{out:#?}"
    );
    assert!(
        uid_of(&s.svc).is_none() && !s.data.exists(),
        "a dry run changed something"
    );

    let mut refused = as_user(&s.agent, s.path(), &s.bin, &["service", "install"]);
    refused.args(s.place());
    let out = run_async(refused, None).await;
    assert_eq!(out.code(), 2, "{out:#?}");
    assert!(
        out.stderr.starts_with("error: ") && out.stderr.contains("sudo "),
        "{out:#?}"
    );
    assert!(out.stderr.contains("--dry-run"), "{out:#?}");

    refuses_places_a_person_controls(s).await;

    let out = run_async(s.service("install", &["--listen", "127.0.0.1:8080"]), None).await;
    assert_eq!(out.code(), 0, "{out:#?}");
    for said in [
        "useradd --system",
        "runuser -u",
        "setpriv --reuid",
        "login --data-dir",
        "systemctl daemon-reload",
    ] {
        assert!(
            out.stdout.contains(said),
            "install did not say {said:?}: {out:#?}"
        );
    }
    check_installed(s);
    let again = run_async(s.service("install", &["--listen", "127.0.0.1:8080"]), None).await;
    assert_eq!(again.code(), 0, "{again:#?}");
    assert!(
        again.stdout.starts_with("nothing to change"),
        "not idempotent: {again:#?}"
    );
}

/// A data dir or a binary in a folder the agent's user owns could be swapped by it: refused,
/// before anything is made.
async fn refuses_places_a_person_controls(s: &Setup) {
    let inside = s.agent_home.join("cs-data").display().to_string();
    let prefix = s.agent_home.join("prefix").display().to_string();
    for (flag, value) in [("--data-dir", &inside), ("--prefix", &prefix)] {
        let mut cmd = Command::new(&s.bin);
        let mut args = s.place();
        let at = args.iter().position(|a| a == flag).unwrap();
        args[at + 1] = value.clone();
        cmd.args(["service", "install", "--no-systemd"])
            .args(&args)
            .current_dir(s.path());
        let out = run_async(cmd, None).await;
        assert_eq!(out.code(), 2, "{flag} {value}: {out:#?}");
        assert!(out.stderr.contains("would let another user"), "{out:#?}");
    }
    assert!(uid_of(&s.svc).is_none(), "a refused install made the user");
}

fn check_installed(s: &Setup) {
    let svc_uid = uid_of(&s.svc).expect("the service user exists");
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    let line = passwd
        .lines()
        .find(|l| l.starts_with(&format!("{}:", s.svc)))
        .unwrap();
    assert!(
        line.ends_with("nologin") || line.ends_with("false"),
        "{line}"
    );
    let config = s.data.join("config.toml");
    for (path, mode) in [(&s.data, 0o700), (&config, 0o600)] {
        let meta = std::fs::symlink_metadata(path).unwrap();
        assert_eq!(
            (meta.uid(), meta.mode() & 0o7777),
            (svc_uid, mode),
            "{}",
            path.display()
        );
    }
    let installed = std::fs::metadata(&s.installed).unwrap();
    assert_eq!((installed.uid(), installed.mode() & 0o777), (0, 0o755));
    let unit = std::fs::read_to_string(&s.unit).unwrap();
    let data = s.data.display();
    for line in [
        format!("User={}", s.svc),
        format!("ReadWritePaths={data} {data}/workspace"),
        format!(
            "ExecStart={} serve --data-dir {data} --addr 127.0.0.1:8080 --workspace {data}/workspace",
            s.installed
        ),
        "NoNewPrivileges=yes".into(),
        "ProtectSystem=strict".into(),
        "PrivateTmp=yes".into(),
    ] {
        assert!(
            unit.lines().any(|l| l == line),
            "the unit lacks {line:?}:\n{unit}"
        );
    }
}

/// `countersign serve` as `user` (setpriv: the server is the child itself), its URL and the
/// stdout lines that follow the login line.
async fn serve_as(user: &str, cwd: &Path, bin: &str, data: &Path) -> (Proc, String, Vec<String>) {
    let data_arg = data.display().to_string();
    let mut cmd = exec_as_user(
        user,
        cwd,
        bin,
        &["serve", "--data-dir", &data_arg, "--addr", "127.0.0.1:0"],
    );
    // In the environment, not on the command line (where every user's `ps` sees it).
    cmd.env("HOME", data).env("COUNTERSIGN_TOKEN", TOKEN);
    let mut server = Proc::spawn(cmd);
    let url = server.listening(Duration::from_secs(60)).await;
    server
        .line_starting("login: ", Duration::from_secs(10))
        .await;
    let after = server.lines_for(Duration::from_millis(700)).await;
    (server, url, after)
}

async fn gates_token(admin: &Api, name: &str) -> Value {
    admin
        .post("/api/v1/tokens", json!({"name": name, "scope": "gates"}))
        .await
        .expect(201)
}

/// Runs a hook (`cmd`, fed `payload`), approves the card it opens as the person, and returns
/// how the hook ended.
async fn hook_approved(admin: &Api, cmd: Command, payload: String) -> Out {
    let hook = tokio::spawn(async move { run_async(cmd, Some(&payload)).await });
    let gate = poll_until("the hook's card", SOON, || async {
        let list = admin
            .get("/api/v1/approvals?status=pending")
            .await
            .expect(200);
        match list.as_array().map(Vec::as_slice) {
            Some([one]) => Ok(one.clone()),
            _ => Err(list.to_string()),
        }
    })
    .await;
    let (sid, aid) = (str_of(&gate, "session_id"), str_of(&gate, "approval_id"));
    admin
        .post(
            &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
            json!({"decision": "approve"}),
        )
        .await
        .expect(200);
    hook.await.unwrap()
}

/// Every path under `dir` (itself included), as root sees them.
fn every_path(dir: &Path) -> Vec<PathBuf> {
    let mut found = vec![dir.to_owned()];
    let mut i = 0;
    while i < found.len() {
        if found[i].is_dir() && !found[i].is_symlink() {
            let mut inner: Vec<PathBuf> = std::fs::read_dir(&found[i])
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            inner.sort();
            found.extend(inner);
        }
        i += 1;
    }
    found
}

/// What each file holds, to see that nothing changed.
fn contents(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    every_path(dir)
        .into_iter()
        .map(|p| {
            let bytes = p.is_file().then(|| std::fs::read(&p).unwrap());
            (p, bytes)
        })
        .collect()
}

/// What the agent's shell tries on the data dir and on each path in it.
fn attempts_on(s: &Setup, paths: &[PathBuf]) -> Vec<String> {
    let home = s.agent_home.display();
    let data = s.data.display();
    // The data dir itself (its parent lets everyone in): list, copy, plant, remove, move.
    let mut attempts = vec![
        format!("ls -la '{data}'"),
        format!("cp -r '{data}' '{home}/stolen'"),
        format!("touch '{data}/planted'"),
        format!("rm -rf '{data}'"),
        format!("find '{data}' -type f"),
        format!("mv '{data}' '{data}.moved'"),
    ];
    // Everything in it: read, copy, list, write, link, remove, plant beside.
    for path in &paths[1..] {
        let p = path.display();
        attempts.extend([
            format!("cat '{p}'"),
            format!("cp -r '{p}' '{home}/stolen'"),
            format!("ls -la '{p}'"),
            format!("echo planted >> '{p}'"),
            format!("ln '{p}' '{home}/hardlink'"),
            format!("rm -rf '{p}'"),
            format!("touch '{p}/planted'"),
            format!("base64 '{p}'"),
        ]);
    }
    let db = s.data.join("countersign.db");
    if which("sqlite3").is_some() {
        attempts.push(format!(
            "sqlite3 '{}' 'select count(*) from sessions'",
            db.display()
        ));
        attempts.push(format!("sqlite3 '{}' 'delete from passkeys'", db.display()));
    } else {
        eprintln!("sqlite3 is not installed: its attempts are left out");
    }
    attempts
}

/// The agent's shell tries to read, copy, list, write, link, remove and open with sqlite3
/// everything in the data dir; each attempt must fail with permission denied.
async fn agent_is_locked_out(s: &Setup) {
    let before = contents(&s.data);
    let paths = every_path(&s.data);
    assert!(
        paths.len() >= 5,
        "the data dir holds the server's files: {paths:?}"
    );
    assert!(
        paths.contains(&s.data.join("countersign.db"))
            && paths.contains(&s.data.join("config.toml"))
    );
    let attempts = attempts_on(s, &paths);
    for attempt in &attempts {
        let out = run_async(
            as_user(&s.agent, &s.agent_home, "sh", &["-c", attempt]),
            None,
        )
        .await;
        let denied = out.stderr.contains("Permission denied")
            || out.stderr.contains("unable to open database");
        assert!(
            !out.status.success() && denied,
            "the agent's `{attempt}` was not refused: {out:#?}"
        );
    }
    assert_eq!(contents(&s.data), before, "the agent changed the data dir");
    // `cp -r` makes its target folder before it finds it cannot read the source: empty.
    let stolen = s.agent_home.join("stolen");
    let taken: Vec<PathBuf> = if stolen.exists() {
        every_path(&stolen)
    } else {
        Vec::new()
    };
    assert!(
        taken.len() <= 1 && taken.iter().all(|p| p.is_dir()),
        "the agent copied {taken:?}"
    );
    assert!(!s.agent_home.join("hardlink").exists());
}

/// `hook install claude-code` as `cmd` says (a `runuser`/`setpriv` command), with the server's
/// URL and a token in the environment and `data` named as the data dir.
async fn hook_install(mut cmd: Command, url: &str, token: &str, data: &Path) -> Out {
    cmd.env("COUNTERSIGN_URL", url)
        .env("COUNTERSIGN_TOKEN", token)
        .env("COUNTERSIGN_DATA_DIR", data);
    let out = run_async(cmd, None).await;
    assert_eq!(out.code(), 0, "{out:#?}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_of_another_user_reaches_countersign_only_over_http() {
    if let Some(why) = missing() {
        eprintln!("skipping the OS-boundary test: {why}");
        return;
    }
    // Declared first, dropped last: the servers are gone before the users are removed.
    let mut users = TestUsers::default();
    let s = set_up(&mut users);
    install(&s).await;
    let token = own_user_holds(&s).await;
    same_user_is_reported(&s, &token).await;
    shared_user_warns(&s).await;
    status_fix_and_uninstall(&s).await;
}

/// The report holds, a new `gates` token carries no warning, and that token reads neither the
/// report nor anything about the server but whether it runs as the server's user. Returns it.
async fn holds_for_a_fresh_token(s: &Setup, url: &str, admin: &Api) -> String {
    let report = admin.get("/api/v1/boundary").await.expect(200);
    assert_eq!(
        (report["holds"].clone(), report["dedicated"].clone()),
        (json!(true), json!(true)),
        "{report}"
    );
    assert_eq!(report["user"], s.svc.as_str());
    let created = gates_token(admin, "agent-hook").await;
    assert!(created.get("os_user_warning").is_none(), "{created}");
    let token = created["token"].as_str().unwrap().to_owned();
    let agent_api = Api::new(url).with_token(&token);
    agent_api
        .get("/api/v1/boundary")
        .await
        .expect_error(403, "forbidden");
    assert_eq!(
        agent_api.get("/api/v1/gates/os-user").await.expect(200),
        json!({"same_user": false})
    );
    token
}

/// Served as its own user: no warning; the agent's hook works over HTTP; its shell gets nothing.
/// Returns the agent's `gates` token.
async fn own_user_holds(s: &Setup) -> String {
    let (server, url, after) = serve_as(&s.svc, s.path(), &s.installed, &s.data).await;
    assert!(
        !after.iter().any(|l| l.starts_with("warning:")),
        "{after:?}"
    );
    assert!(
        !server.stderr().contains("not as a user of its own"),
        "{}",
        server.stderr()
    );
    let admin = Api::new(&url).with_token(TOKEN);
    let token = holds_for_a_fresh_token(s, &url, &admin).await;
    let hook = as_user(
        &s.agent,
        &s.agent_home,
        &s.installed,
        &["hook", "claude-code", "--url", &url, "--token", &token],
    );
    let out = hook_approved(
        &admin,
        hook,
        bash_payload("echo from-the-agent", "toolu_agent"),
    )
    .await;
    assert_eq!(out.code(), 0, "{out:#?}");
    assert_eq!(
        serde_json::from_str::<Value>(&out.stdout).unwrap(),
        fixture("claude-code/pretooluse-allow.stdout.json")
    );
    let install = as_user(
        &s.agent,
        &s.agent_home,
        &s.installed,
        &[
            "hook",
            "install",
            "claude-code",
            "--project",
            &s.agent_home.display().to_string(),
        ],
    );
    let out = hook_install(install, &url, &token, &s.data).await;
    assert!(
        !out.stderr.contains("runs as your OS user")
            && !out.stderr.contains(&s.data.display().to_string()),
        "{out:#?}"
    );
    let report = admin.get("/api/v1/boundary").await.expect(200);
    assert_eq!(report["same_user_agents"], json!([]), "{report}");
    stop(server).await;
    // Stopped, so that nothing but the agent could change a file while it tries.
    agent_is_locked_out(s).await;
    token
}

async fn stop(mut server: Proc) {
    server.sigterm();
    server.wait_exit(SOON).await.expect("the server stops");
}

/// The Security page names the agent seen as Countersign's user, and a new `gates` token warns.
async fn the_page_and_a_new_token_say_so(admin: &Api) {
    let page = admin.get("/security").await;
    assert_eq!(page.status.as_u16(), 200);
    for said in [
        "data-holds=\"false\"",
        "os-boundary-alert",
        "token:agent-hook",
        "Outside agents and the OS boundary",
    ] {
        assert!(
            page.body.contains(said),
            "the Security page lacks {said:?}: {}",
            page.body
        );
    }
    let created = gates_token(admin, "second-hook").await;
    let warning = created["os_user_warning"].as_str().unwrap_or_default();
    assert!(
        warning.contains("as its own OS user") && warning.contains("README"),
        "{created}"
    );
}

/// A hook run as Countersign's own user is seen: logged, reported, on the Security page, on a
/// new `gates` token, and told to `hook install` run as that user.
async fn same_user_is_reported(s: &Setup, token: &str) {
    let (server, url, _) = serve_as(&s.svc, s.path(), &s.installed, &s.data).await;
    let admin = Api::new(&url).with_token(TOKEN);
    let mut hook = exec_as_user(
        &s.svc,
        s.path(),
        &s.installed,
        &["hook", "claude-code", "--url", &url, "--token", token],
    );
    hook.env("HOME", &s.data);
    let out = hook_approved(
        &admin,
        hook,
        bash_payload("echo as-countersign", "toolu_same"),
    )
    .await;
    assert_eq!(out.code(), 0, "{out:#?}");
    let report = admin.get("/api/v1/boundary").await.expect(200);
    assert_eq!(
        (report["holds"].clone(), report["dedicated"].clone()),
        (json!(false), json!(true)),
        "{report}"
    );
    assert_eq!(
        report["same_user_agents"][0]["credential"], "token:agent-hook",
        "{report}"
    );
    assert!(
        report["warning"]
            .as_str()
            .unwrap()
            .contains("connected to Countersign as its own OS user"),
        "{report}"
    );
    assert!(
        server
            .stderr()
            .contains("an outside agent connected as Countersign's own OS user"),
        "{}",
        server.stderr()
    );
    the_page_and_a_new_token_say_so(&admin).await;
    let workspace = s.data.join("workspace").display().to_string();
    let mut install = exec_as_user(
        &s.svc,
        s.path(),
        &s.installed,
        &["hook", "install", "claude-code", "--project", &workspace],
    );
    install.env("HOME", &s.data);
    let out = hook_install(install, &url, token, &s.data).await;
    assert!(out.stderr.contains("runs as your OS user"), "{out:#?}");
    assert!(
        out.stderr.contains(&format!(
            "you can read Countersign's data dir {}",
            s.data.display()
        )),
        "{out:#?}"
    );
    stop(server).await;
}

/// Served as the agent's own user (a person's, with a login shell): the warning line follows
/// the login line, the log says it, a `gates` token and `hook install` say it.
async fn shared_user_warns(s: &Setup) {
    let data = s.agent_home.join("cs-data");
    let (server, url, after) = serve_as(&s.agent, &s.agent_home, &s.installed, &data).await;
    let first = after.first().map(String::as_str).unwrap_or_default();
    assert!(
        first.starts_with(&format!("warning: Countersign runs as `{}`", s.agent)),
        "{after:?}"
    );
    assert!(
        first.contains("sudo countersign service install"),
        "{first}"
    );
    assert!(
        server.stderr().contains("not as a user of its own"),
        "{}",
        server.stderr()
    );
    assert_eq!(
        mode_of(&data),
        0o700,
        "a data dir the server makes is closed from the start"
    );
    let admin = Api::new(&url).with_token(TOKEN);
    let created = gates_token(&admin, "shared-hook").await;
    let warning = created["os_user_warning"].as_str().unwrap_or_default();
    assert!(warning.contains("not as a user of its own"), "{created}");
    let token = created["token"].as_str().unwrap();
    let project = s.agent_home.display().to_string();
    let install = as_user(
        &s.agent,
        &s.agent_home,
        &s.installed,
        &["hook", "install", "claude-code", "--project", &project],
    );
    let out = hook_install(install, &url, token, &data).await;
    assert!(
        out.stderr.contains(&format!(
            "you can read Countersign's data dir {}",
            data.display()
        )),
        "{out:#?}"
    );
    assert!(out.stderr.contains("runs as your OS user"), "{out:#?}");
    let page = admin.get("/security").await.body;
    assert!(
        page.contains("data-holds=\"false\"") && page.contains("not as a user of its own"),
        "{page}"
    );
    stop(server).await;
}

/// `service status` says whether the boundary holds; a loosened mode is found and `install`
/// closes it again; `uninstall` removes the unit and keeps the data, `--purge` removes all.
async fn status_fix_and_uninstall(s: &Setup) {
    let out = run_async(s.service("status", &[]), None).await;
    assert_eq!(out.code(), 0, "{out:#?}");
    assert!(out.stdout.contains("the boundary holds"), "{out:#?}");
    let mut as_agent = as_user(
        &s.agent,
        &s.agent_home,
        &s.installed,
        &["service", "status"],
    );
    as_agent.args(s.place());
    let out = run_async(as_agent, None).await;
    assert_eq!(out.code(), 0, "{out:#?}");
    assert!(out.stdout.contains("not visible to you"), "{out:#?}");

    let config = s.data.join("config.toml");
    chmod(&s.data, 0o755);
    chmod(&config, 0o644);
    let out = run_async(s.service("status", &[]), None).await;
    assert_eq!(out.code(), 1, "{out:#?}");
    assert!(
        out.stdout.contains("does not hold") && out.stdout.contains("0755"),
        "{out:#?}"
    );
    let out = run_async(s.service("install", &["--listen", "127.0.0.1:8080"]), None).await;
    assert_eq!(out.code(), 0, "{out:#?}");
    assert!(
        out.stdout
            .contains(&format!("chmod 0700 {}", s.data.display())),
        "{out:#?}"
    );
    assert!(
        out.stdout
            .contains(&format!("chmod 0600 {}", config.display())),
        "{out:#?}"
    );
    assert_eq!((mode_of(&s.data), mode_of(&config)), (0o700, 0o600));
    assert_eq!(run_async(s.service("status", &[]), None).await.code(), 0);

    let out = run_async(s.service("uninstall", &[]), None).await;
    assert_eq!(out.code(), 0, "{out:#?}");
    assert!(
        !s.unit.exists() && s.data.is_dir() && uid_of(&s.svc).is_some(),
        "{out:#?}"
    );
    let out = run_async(s.service("uninstall", &["--purge"]), None).await;
    assert_eq!(out.code(), 0, "{out:#?}");
    assert!(!s.data.exists() && uid_of(&s.svc).is_none(), "{out:#?}");
    assert!(!Path::new(&s.installed).exists(), "{out:#?}");
}

/// Where the server shares the test's own user (root, or a person's login account), every door
/// that makes a `gates` token says so — REST, the Tokens page's server function, the CLI — and
/// an `approve` token (a phone's, never an agent's) carries nothing. Needs no root.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gates_token_made_on_a_shared_user_says_so_at_every_door() {
    let ts = TestServer::start().await;
    let report = ts.get("/api/v1/boundary").await.expect(200);
    let shared = report["dedicated"] == json!(false);
    if !shared {
        eprintln!("this test runs as a user of Countersign's own: no door should warn");
    }
    let says_so = |created: &Value| {
        created["os_user_warning"].as_str().is_some_and(|w| {
            w.contains("not as a user of its own") && w.contains("service install")
        })
    };
    let rest = ts
        .post("/api/v1/tokens", json!({"name": "rest", "scope": "gates"}))
        .await
        .expect(201);
    let ui = send(
        ts.req(reqwest::Method::POST, "/api/ui/create_token")
            .json(&json!({"name": "ui", "scope": "gates"})),
    )
    .await
    .expect(200);
    assert_eq!(
        (says_so(&rest), says_so(&ui)),
        (shared, shared),
        "{rest} {ui}"
    );
    let phone = ts
        .post(
            "/api/v1/tokens",
            json!({"name": "phone", "scope": "approve"}),
        )
        .await
        .expect(201);
    assert!(phone.get("os_user_warning").is_none(), "{phone}");

    let cli = countersign(&[
        "token", "create", "cli-hook", "--scope", "gates", "--url", &ts.base, "--token", TOKEN,
    ]);
    let out = run_async(cli, None).await;
    assert_eq!(out.code(), 0, "{out:#?}");
    assert_eq!(
        out.stdout.lines().count(),
        1,
        "the secret alone on stdout: {out:#?}"
    );
    assert_eq!(
        out.stderr.contains("not as a user of its own"),
        shared,
        "{out:#?}"
    );

    // This process runs as the server's user, and a gates request says so to it alone.
    let token = rest["token"].as_str().unwrap();
    let agent = Api::new(&ts.base).with_token(token);
    let answer = agent.get("/api/v1/gates/os-user").await.expect(200);
    if cfg!(target_os = "linux") {
        assert_eq!(answer, json!({"same_user": true}));
        let report = ts.get("/api/v1/boundary").await.expect(200);
        assert_eq!(
            report["same_user_agents"][0]["credential"], "token:rest",
            "{report}"
        );
    }
    // The admin's own requests are never taken for an agent's.
    assert_eq!(
        ts.get("/api/v1/gates/os-user").await.expect(200),
        json!({"same_user": null})
    );
}
