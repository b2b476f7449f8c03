//! The floor of outside agents, through the real gates API (issue 37, points 3 and 5): in
//! `yolo` and in `ask`, Countersign's own data dir, config file and database, its
//! state-changing CLI and each agent's hook settings open a floor card instead of running,
//! and so does every field an agent acts on that the catalog cannot read as one (two paths,
//! text typed into a shell, a `request_approval`'s words, an unknown tool or field). Ordinary
//! calls run as before.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

#[path = "support/mod.rs"]
mod support;

use serde_json::{Value, json};
use support::*;

/// A config whose `[safety]` floor is empty: the built-in floor must hold without it.
const NO_SAFETY: &str = "[safety]\npaths = []\ncommands = []\n";

async fn gates_token(ts: &TestServer) -> Api {
    let made = ts
        .post("/api/v1/tokens", json!({"name": "hook", "scope": "gates"}))
        .await
        .expect(201);
    Api::new(&ts.base).with_token(made["token"].as_str().unwrap())
}

fn body(source: &str, session: &str, cwd: &str, tool: &str, input: Value) -> Value {
    json!({
        "source": source,
        "external_session": session,
        "cwd": cwd,
        "tool": {"name": tool, "input": input},
    })
}

/// An outside session of `source` in `mode` (a session is the token's, the source's and the
/// agent's own), opened by an ordinary read; returns its id.
async fn session_in(
    ts: &TestServer,
    agent: &Api,
    source: &str,
    session: &str,
    mode: &str,
) -> String {
    let first = agent
        .post(
            "/api/v1/gates",
            body(
                source,
                session,
                "/home/me/app",
                "Read",
                json!({"file_path": "README.md"}),
            ),
        )
        .await
        .expect(201);
    assert_eq!(first["status"], "approved", "a plain read runs: {first}");
    let sid = first["session_id"].as_str().unwrap().to_owned();
    ts.put(
        &format!("/api/v1/sessions/{sid}/mode"),
        json!({"approval_mode": mode}),
    )
    .await
    .expect(200);
    sid
}

/// Opens each call in a session of its own in `yolo` and in `ask`: each must wait on a floor
/// card (which the test then denies).
async fn each_is_a_floor_card(ts: &TestServer, calls: &[(&str, &str, &str, Value)], tag: &str) {
    let agent = gates_token(ts).await;
    for mode in ["yolo", "ask"] {
        for (i, (source, cwd, tool, input)) in calls.iter().enumerate() {
            let session = format!("{tag}-{mode}-{i}");
            let sid = session_in(ts, &agent, source, &session, mode).await;
            let opened = agent
                .post(
                    "/api/v1/gates",
                    body(source, &session, cwd, tool, input.clone()),
                )
                .await
                .expect(201);
            assert_eq!(opened["session_id"], sid.as_str());
            assert_eq!(
                opened["status"], "pending",
                "{mode}: {tool} {input}: {opened}"
            );
            let card = ts.wait_gate(&sid).await;
            assert_eq!(
                card["reason"], "safety_floor",
                "{mode}: {tool} {input}: {card:#}"
            );
            ts.decide(
                &sid,
                card["approval_id"].as_str().unwrap(),
                json!({"decision": "deny"}),
            )
            .await
            .expect(200);
        }
    }
}

/// Countersign's own data dir, config file and database, read, written and named by
/// commands in spellings of their own, and its CLI where it changes state: floor cards in
/// yolo and in ask, with `[safety]` emptied.
#[tokio::test]
async fn countersign_s_own_files_and_cli_are_floor_cards_in_every_mode() {
    // An empty `[safety]`: what follows is built in, not configured.
    let ts = TestServer::configured(NO_SAFETY).await;
    let data = ts.data_dir().canonicalize().unwrap();
    let data = data.display().to_string();
    let root = ts.root().canonicalize().unwrap().display().to_string();
    let config = format!("{root}/config.toml");
    let ws = ts.workspace().canonicalize().unwrap().display().to_string();
    let loud = data.to_uppercase();
    let cc = "claude-code";
    let calls: Vec<(&str, &str, &str, Value)> = vec![
        // Reads of every file the data dir holds, and of the config.
        (
            cc,
            &ws,
            "Read",
            json!({"file_path": format!("{data}/vapid_private_key")}),
        ),
        (
            cc,
            &ws,
            "Read",
            json!({"file_path": format!("{loud}/TOKEN")}),
        ),
        (
            cc,
            &ws,
            "Read",
            json!({"file_path": "../data/./countersign.db"}),
        ),
        (cc, &root, "Read", json!({"file_path": "./config.toml"})),
        (
            "gemini-cli",
            &ws,
            "read_file",
            json!({"file_path": format!("{data}/instance")}),
        ),
        (
            "copilot-cli",
            &ws,
            "view",
            json!({"path": format!("{data}/../data/token")}),
        ),
        (
            cc,
            &ws,
            "Grep",
            json!({"pattern": "BEGIN", "path": data.clone()}),
        ),
        (
            cc,
            &ws,
            "Grep",
            json!({"pattern": "[0-9a-f]{48}", "path": "/"}),
        ),
        (cc, &ws, "Bash", json!({"command": "rg -uuu -l BEGIN /"})),
        (
            cc,
            &ws,
            "Glob",
            json!({"pattern": "da?a/tok*", "path": root.clone()}),
        ),
        // Commands that name them.
        (
            cc,
            &ws,
            "Bash",
            json!({"command": format!("cat {data}/token")}),
        ),
        (
            cc,
            &ws,
            "Bash",
            json!({"command": "base64 ../data/vapid_private_key"}),
        ),
        (
            cc,
            &ws,
            "Bash",
            json!({"command": format!("sqlite3 '{data}/countersign.db' 'delete from passkeys'")}),
        ),
        (
            cc,
            &ws,
            "Bash",
            json!({"command": format!("psql -f \"{data}\"/countersign.db")}),
        ),
        (
            cc,
            &ws,
            "Bash",
            json!({"command": format!("D={data}; cp \"$D/token\" /tmp/t")}),
        ),
        (
            cc,
            &ws,
            "Bash",
            json!({"command": format!("echo '[safety]' > {config}")}),
        ),
        (
            cc,
            &ws,
            "Bash",
            json!({"command": format!("env LC_ALL=C sh -c 'cat {config}'")}),
        ),
        (
            cc,
            &ws,
            "Bash",
            json!({"command": format!("python3 -c \"print(open('{data}/token').read())\"")}),
        ),
        (
            cc,
            &ws,
            "Bash",
            json!({"command": format!("cd {root} && tar cf - data | base64")}),
        ),
        (
            "codex",
            &root,
            "exec_command",
            json!({"cmd": ["cat", "data/token"]}),
        ),
        (
            "gemini-cli",
            &ws,
            "run_shell_command",
            json!({"command": "cat token", "dir_path": data.clone()}),
        ),
        // Its CLI where it changes state.
        (
            cc,
            &ws,
            "Bash",
            json!({"command": "countersign config set approvals.require_passkey off"}),
        ),
        (
            cc,
            &ws,
            "Bash",
            json!({"command": "countersign passkey reset"}),
        ),
        (
            cc,
            &ws,
            "Bash",
            json!({"command": "/usr/local/bin/countersign approvals approve 0123abcd"}),
        ),
        (
            cc,
            &ws,
            "Bash",
            json!({"command": "nohup ./target/release/Countersign token create me --scope admin"}),
        ),
        (
            "codex",
            &ws,
            "exec_command",
            json!({"cmd": "countersign serve --data-dir /tmp/mine", "shell": "/bin/bash"}),
        ),
    ];
    each_is_a_floor_card(&ts, &calls, "own").await;
}

/// Each agent's hook and permission settings, written by its own tools and by commands:
/// floor cards in yolo and in ask, with `[safety]` emptied.
#[tokio::test]
async fn each_agents_hook_settings_are_floor_cards_in_every_mode() {
    let ts = TestServer::configured(NO_SAFETY).await;
    let app = "/home/me/app";
    let calls: Vec<(&str, &str, &str, Value)> = vec![
        (
            "claude-code",
            app,
            "Write",
            json!({"file_path": ".claude/settings.json", "content": "{}"}),
        ),
        (
            "claude-code",
            app,
            "Edit",
            json!({"file_path": "/home/me/.claude/settings.json", "old_string": "hooks", "new_string": "x"}),
        ),
        (
            "claude-code",
            app,
            "Bash",
            json!({"command": "echo '{}' > ./.Claude/Settings.Local.json"}),
        ),
        (
            "codex",
            app,
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Update File: ../.codex/hooks.json\n@@\n-a\n+b\n*** End Patch"}),
        ),
        (
            "codex",
            app,
            "exec_command",
            json!({"cmd": "sed -i '/countersign/d' ~/.codex/config.toml"}),
        ),
        (
            "gemini-cli",
            app,
            "write_file",
            json!({"file_path": "/home/me/app/.gemini/settings.json", "content": "{}"}),
        ),
        (
            "qwen-code",
            app,
            "edit",
            json!({"file_path": "/home/me/.qwen/settings.json", "old_string": "a", "new_string": "b"}),
        ),
        (
            "copilot-cli",
            app,
            "create",
            json!({"path": "/home/me/.copilot/hooks/countersign.json", "file_text": "{}"}),
        ),
        (
            "copilot-cli",
            app,
            "bash",
            json!({"command": "rm .github/hooks/countersign.json"}),
        ),
        (
            "opencode",
            app,
            "edit",
            json!({"filepath": "/home/me/app/opencode.json", "diff": "-a\n+b"}),
        ),
        (
            "opencode",
            app,
            "bash",
            json!({"command": "cp x ~/.config/opencode/opencode.jsonc"}),
        ),
    ];
    each_is_a_floor_card(&ts, &calls, "settings").await;
}

/// Every field an agent acts on is read: two path fields that differ (the card would read one
/// and the agent write the other), text typed into a running shell, every string of a
/// `request_approval`, and what the catalog cannot read (an unknown tool or field).
#[tokio::test]
async fn every_field_an_agent_acts_on_is_read() {
    let ts = TestServer::start().await;
    let app = "/home/me/app";
    let mcp = "mcp";
    let calls: Vec<(&str, &str, &str, Value)> = vec![
        // Two path fields: Copilot, Gemini, Qwen, Codex, Claude Code.
        (
            "copilot-cli",
            app,
            "create",
            json!({"path": "src/main.rs", "file_path": "notes.md", "file_text": "x"}),
        ),
        (
            "copilot-cli",
            app,
            "edit",
            json!({"path": "~/.ssh/authorized_keys", "file_path": "README.md", "old_str": "", "new_str": "ssh-ed25519 AAAA"}),
        ),
        (
            "copilot-cli",
            app,
            "str_replace_editor",
            json!({"command": "create", "path": "./.git/hooks/pre-commit", "file_text": "#!/bin/sh"}),
        ),
        (
            "gemini-cli",
            app,
            "write_file",
            json!({"file_path": "docs/a.md", "path": "src/lib.rs", "content": ""}),
        ),
        (
            "qwen-code",
            app,
            "edit",
            json!({"file_path": "a.txt", "filePath": "b.txt", "old_string": "a", "new_string": "b"}),
        ),
        (
            "codex",
            app,
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch", "patch": "*** Begin Patch\n*** Add File: b.txt\n+x\n*** End Patch"}),
        ),
        (
            "claude-code",
            app,
            "Write",
            json!({"file_path": "notes.md", "path": "src/app.py", "content": "x"}),
        ),
        (
            "claude-code",
            app,
            "Bash",
            json!({"command": "make test", "cmd": "make deploy"}),
        ),
        // Text typed into a running shell.
        (
            "copilot-cli",
            app,
            "write_bash",
            json!({"shellId": "1", "input": "sudo rm -rf ~/work{enter}"}),
        ),
        (
            "copilot-cli",
            app,
            "write_bash",
            json!({"shellId": "1", "input": "SUDO_ASKPASS=x sudo -A true\n"}),
        ),
        (
            "copilot-cli",
            app,
            "write_bash",
            json!({"shellId": "1", "input": "{up}{enter}"}),
        ),
        (
            "copilot-cli",
            app,
            "write_bash",
            json!({"shellId": "1", "input": "rm -r"}),
        ),
        (
            "copilot-cli",
            app,
            "write_powershell",
            json!({"shellId": "1", "input": "Remove-Item -Recurse C:\\w{enter}"}),
        ),
        (
            "codex",
            app,
            "write_stdin",
            json!({"session_id": 7, "chars": "cat .ENV\r"}),
        ),
        // Every string of a request_approval, from the MCP server or posing as it.
        (
            mcp,
            app,
            "request_approval",
            json!({"title": "Clean up", "details_markdown": "I'll run `sudo rm -rf /srv/app` and restart."}),
        ),
        (
            mcp,
            app,
            "request_approval",
            json!({"title": "Clean up", "script": "sudo rm -rf /srv/app"}),
        ),
        (
            mcp,
            app,
            "request_approval",
            json!({"title": "Read the keys in ~/.ssh/id_ed25519", "kind": "ops"}),
        ),
        (
            "gemini-cli",
            app,
            "request_approval",
            json!({"title": "Tidy", "script": "echo ok"}),
        ),
        // What the catalog cannot read.
        (
            "claude-code",
            app,
            "mcp__db__query",
            json!({"sql": "DROP TABLE users"}),
        ),
        ("copilot-cli", app, "sql", json!({"query": "select 1"})),
        (
            "claude-code",
            app,
            "Read",
            json!({"file_path": "README.md", "and_then": "~/.aws/credentials"}),
        ),
        (
            "codex",
            app,
            "exec_command",
            json!({"cmd": "import os", "shell": "python3"}),
        ),
    ];
    each_is_a_floor_card(&ts, &calls, "fields").await;
}

/// Ordinary calls run as before: in yolo they run, in ask a command or a change waits on an
/// ordinary card, and a read runs.
#[tokio::test]
async fn ordinary_outside_calls_run_as_before() {
    let ts = TestServer::start().await;
    let agent = gates_token(&ts).await;
    let app = "/home/me/app";
    let calls: Vec<(&str, &str, Value, &str)> = vec![
        (
            "claude-code",
            "Bash",
            json!({"command": "npm test", "description": "Run the tests", "timeout": 120000}),
            "exec",
        ),
        (
            "claude-code",
            "Edit",
            json!({"file_path": "src/app.ts", "old_string": "3", "new_string": "5", "replace_all": false}),
            "edit",
        ),
        (
            "copilot-cli",
            "create",
            json!({"path": "src/new.rs", "file_text": "fn x() {}"}),
            "edit",
        ),
        (
            "copilot-cli",
            "edit",
            json!({"path": "src/new.rs", "old_str": "x", "new_str": "y"}),
            "edit",
        ),
        (
            "copilot-cli",
            "write_bash",
            json!({"shellId": "1", "input": "npm test{enter}", "delay": 10}),
            "exec",
        ),
        (
            "codex",
            "write_stdin",
            json!({"session_id": 1, "chars": "y\n"}),
            "exec",
        ),
        (
            "gemini-cli",
            "run_shell_command",
            json!({"command": "ls", "description": "list", "dir_path": "src"}),
            "exec",
        ),
        (
            "qwen-code",
            "write_file",
            json!({"file_path": "/home/me/app/notes.md", "content": "hi"}),
            "edit",
        ),
        (
            "codex",
            "exec_command",
            json!({"cmd": "cargo test", "workdir": "/home/me/app", "login": true}),
            "exec",
        ),
        (
            "opencode",
            "bash",
            json!({"command": "git status --short"}),
            "exec",
        ),
        (
            "claude-code",
            "Bash",
            json!({"command": "countersign approvals list --json"}),
            "exec",
        ),
    ];
    for mode in ["yolo", "ask"] {
        for (i, (source, tool, input, class)) in calls.iter().enumerate() {
            let session = format!("plain-{mode}-{i}");
            let sid = session_in(&ts, &agent, source, &session, mode).await;
            let opened = agent
                .post(
                    "/api/v1/gates",
                    body(source, &session, app, tool, input.clone()),
                )
                .await
                .expect(201);
            if mode == "yolo" {
                assert_eq!(opened["status"], "approved", "{tool} {input}: {opened}");
                continue;
            }
            assert_eq!(opened["status"], "pending", "{tool} {input}: {opened}");
            let card = ts.wait_gate(&sid).await;
            assert_eq!(card["reason"], "mode", "{tool} {input}: {card:#}");
            assert_eq!(card["class"], *class, "{tool} {input}: {card:#}");
            ts.decide(
                &sid,
                card["approval_id"].as_str().unwrap(),
                json!({"decision": "deny"}),
            )
            .await
            .expect(200);
        }
        // Reads run in either mode.
        let session = format!("reads-{mode}");
        session_in(&ts, &agent, "claude-code", &session, mode).await;
        for (tool, input) in [
            (
                "Read",
                json!({"file_path": "src/app.ts", "offset": 1, "limit": 20}),
            ),
            (
                "Grep",
                json!({"pattern": "TODO", "path": "src", "glob": "*.ts"}),
            ),
        ] {
            let opened = agent
                .post(
                    "/api/v1/gates",
                    body("claude-code", &session, app, tool, input.clone()),
                )
                .await
                .expect(201);
            assert_eq!(
                opened["status"], "approved",
                "{mode}: {tool} {input}: {opened}"
            );
        }
    }
    // A checkpoint that proposes nothing on the floor: in yolo the agent's own call.
    let sid = session_in(&ts, &agent, "mcp", "checkpoint", "yolo").await;
    let asked = agent
        .post(
            "/api/v1/gates",
            body("mcp", "checkpoint", app, "request_approval", json!({"title": "Ship v1.2?", "details_markdown": "I'll tag it and push the branch."})),
        )
        .await
        .expect(201);
    assert_eq!(asked["session_id"], sid.as_str());
    assert_eq!(asked["status"], "approved", "{asked}");
}

/// The id of the thread running the test: a thread of this process (the server runs in it)
/// other than the main one, alive while the test runs.
fn a_thread_of_this_process() -> u32 {
    let link = std::fs::read_link("/proc/thread-self").unwrap();
    let tid = link.file_name().unwrap().to_str().unwrap().parse().unwrap();
    assert_ne!(
        tid,
        std::process::id(),
        "the test runs on a thread of its own"
    );
    tid
}

/// The ways round the outside floor an adversarial review found (issue 37, points 3 and 5),
/// each in spellings of this test's own, through the real gates API with `[safety]` emptied:
/// the CLI pointed elsewhere, wrappers and interpreters, the program under another name,
/// SQLite names built or encoded, `~+`, `/proc/…/root`, line continuations, shell input,
/// symlinks made earlier, folders holding agent settings, the server's process by any thread,
/// whole-tree readers, written content, startup files and hidden words. Floor cards in yolo
/// and in ask.
#[tokio::test]
async fn the_ways_round_the_outside_floor_are_floor_cards() {
    let ts = TestServer::configured(NO_SAFETY).await;
    let data = ts.data_dir().canonicalize().unwrap().display().to_string();
    let root = ts.root().canonicalize().unwrap().display().to_string();
    let ws_path = ts.workspace().canonicalize().unwrap();
    let ws = ws_path.display().to_string();
    // A symlink made by an earlier call, which named nothing of Countersign's.
    std::os::unix::fs::symlink("/", ws_path.join("up")).unwrap();
    let exe = std::env::current_exe().unwrap().display().to_string();
    let pid = std::process::id();
    let thread = a_thread_of_this_process();
    let (cc, codex, oc) = ("claude-code", "codex", "opencode");
    let bash = |command: String| json!({ "command": command });
    let calls: Vec<(&str, &str, &str, Value)> = vec![
        // 1. A read-only CLI command pointed elsewhere, or with its environment changed.
        (
            cc,
            &ws,
            "Bash",
            bash("countersign approvals list --url http://127.0.0.1:9".into()),
        ),
        (
            cc,
            &ws,
            "Bash",
            bash("COUNTERSIGN_URL=http://127.0.0.1:9 countersign audit export".into()),
        ),
        (
            cc,
            &ws,
            "Bash",
            bash("env -u COUNTERSIGN_TOKEN countersign rules list".into()),
        ),
        (
            cc,
            &ws,
            "Bash",
            bash("countersign approvals --config list approve 0123abcd".into()),
        ),
        // 2. Wrappers and interpreters.
        (
            codex,
            &ws,
            "exec_command",
            json!({"cmd": "runuser -u me -- countersign passkey reset"}),
        ),
        (
            cc,
            &ws,
            "Bash",
            bash("tmux new -d 'countersign passkey reset'".into()),
        ),
        (
            cc,
            &ws,
            "Bash",
            bash("echo 'countersign passkey reset' | at now".into()),
        ),
        (
            cc,
            &ws,
            "Bash",
            bash(
                "node -e \"require('child_process').execSync('countersign passkey reset')\"".into(),
            ),
        ),
        (
            cc,
            &ws,
            "Bash",
            bash("cargo run -q -- config set approvals.require_passkey off".into()),
        ),
        // 3. The program under another name: the server's executable, any `countersign`.
        (
            cc,
            &ws,
            "Bash",
            bash(format!("cp {exe} /tmp/cs && /tmp/cs passkey reset")),
        ),
        (
            cc,
            &ws,
            "Bash",
            bash("ln -s /usr/local/bin/countersign ./cs".into()),
        ),
        // 4. SQLite names built or encoded.
        (
            cc,
            &ws,
            "Bash",
            bash(format!(
                "sqlite3 :memory: \"attach '{data}/counter'||'sign.db' as x; insert into x.t values (1)\""
            )),
        ),
        (
            cc,
            &ws,
            "Bash",
            bash(format!(
                "sqlite3 'file://{data}/countersign%2edb?mode=rw' 'select 1'"
            )),
        ),
        // 5. `~+` is where the command runs.
        (
            cc,
            &root,
            "Bash",
            bash("printf '[safety]' >> ~+/config.toml".into()),
        ),
        // 6. A process's root is `/`.
        (
            cc,
            &ws,
            "Read",
            json!({"file_path": format!("/proc/self/root{data}/token")}),
        ),
        (
            oc,
            &ws,
            "read",
            json!({"filePath": format!("/proc/thread-self/root{root}/config.toml")}),
        ),
        // 7. A line continuation joins a word.
        (
            cc,
            &ws,
            "Bash",
            bash("counter\\\nsign passkey reset".into()),
        ),
        // 10. Text typed into a running shell.
        (
            "copilot-cli",
            &ws,
            "write_bash",
            json!({"shellId": "1", "input": "cat token{enter}"}),
        ),
        (
            codex,
            &ws,
            "write_stdin",
            json!({"session_id": 2, "chars": "countersign approvals list\n"}),
        ),
        // 11. A symlink made earlier, and a new one to `/`.
        (
            cc,
            &ws,
            "Read",
            json!({"file_path": format!("up{data}/token")}),
        ),
        (cc, &ws, "Bash", bash("ln -s / r".into())),
        // 12. Folders that hold an agent's settings.
        (cc, &ws, "Bash", bash("mv ~/.claude ~/.claude.bak".into())),
        (
            "gemini-cli",
            &ws,
            "run_shell_command",
            json!({"command": "rm -r .gemini"}),
        ),
        // 13. The server's process, by any thread.
        (cc, &ws, "Bash", bash(format!("cat /proc/{thread}/environ"))),
        (
            cc,
            &ws,
            "Read",
            json!({"file_path": format!("/proc/{thread}/cmdline")}),
        ),
        (cc, &ws, "Bash", bash(format!("kill -9 {thread}"))),
        (cc, &ws, "Bash", bash(format!("ps eww {pid}"))),
        (cc, &ws, "Bash", bash(format!("gdb -p {pid} -batch -ex bt"))),
        // 14. Whole-tree readers and written content.
        (
            cc,
            &ws,
            "Bash",
            bash("restic -r /tmp/repo backup ..".into()),
        ),
        (
            cc,
            &ws,
            "Write",
            json!({"file_path": "reset.sh", "content": "#!/bin/sh\ncountersign passkey reset\n"}),
        ),
        (
            codex,
            &ws,
            "apply_patch",
            json!({"input": format!("*** Begin Patch\n*** Add File: go.sh\n+cat {data}/token\n*** End Patch")}),
        ),
        // 15. Startup files, opencode's directory globs, hidden words in a proposal.
        (
            cc,
            &ws,
            "Edit",
            json!({"file_path": "~/.bashrc", "old_string": "a", "new_string": "export COUNTERSIGN_URL=http://x"}),
        ),
        (
            oc,
            &ws,
            "external_directory",
            json!({"patterns": [format!("{root}/*")]}),
        ),
        (
            "mcp",
            &ws,
            "request_approval",
            json!({"title": "Tidy", "details_markdown": "Then `counter\u{200b}sign passkey reset`."}),
        ),
    ];
    each_is_a_floor_card(&ts, &calls, "ways-round").await;
}

/// A tool the catalog does not know asks in every mode, but Allow always on its card makes a
/// standing rule for that very tool, which answers its later calls in yolo and in ask; another
/// unknown tool still asks, and a field of it that holds a command is still read.
#[tokio::test]
async fn a_standing_rule_answers_an_unknown_tool() {
    let ts = TestServer::start().await;
    let agent = gates_token(&ts).await;
    let (source, session, app) = ("claude-code", "mcp-rule", "/home/me/app");
    let sid = session_in(&ts, &agent, source, session, "yolo").await;
    let open = |tool: &'static str, input: Value| {
        agent.post("/api/v1/gates", body(source, session, app, tool, input))
    };
    let first = open("mcp__db__query", json!({"sql": "select 1"}))
        .await
        .expect(201);
    assert_eq!(first["status"], "pending", "{first}");
    let card = ts.wait_gate(&sid).await;
    assert_eq!(card["reason"], "safety_floor", "{card:#}");
    assert_eq!(
        card["suggested_rule"]["pattern"], "mcp__db__query",
        "{card:#}"
    );
    assert!(
        card["allowed_decisions"]
            .as_array()
            .unwrap()
            .contains(&json!("allow_always")),
        "{card:#}"
    );
    ts.decide(
        &sid,
        card["approval_id"].as_str().unwrap(),
        json!({"decision": "allow_always", "rule": {"scope": "session"}}),
    )
    .await
    .expect(200);
    let again = open("mcp__db__query", json!({"sql": "select 2"}))
        .await
        .expect(201);
    assert_eq!(again["status"], "approved", "{again}");
    ts.put(
        &format!("/api/v1/sessions/{sid}/mode"),
        json!({"approval_mode": "ask"}),
    )
    .await
    .expect(200);
    let in_ask = open("mcp__db__query", json!({"sql": "select 3"}))
        .await
        .expect(201);
    assert_eq!(in_ask["status"], "approved", "{in_ask}");
    for (tool, input) in [
        ("mcp__db__drop", json!({"sql": "drop table t"})),
        (
            "mcp__db__query",
            json!({"command": "countersign passkey reset"}),
        ),
    ] {
        let opened = open(tool, input.clone()).await.expect(201);
        assert_eq!(opened["status"], "pending", "{tool} {input}: {opened}");
        let card = ts.wait_gate(&sid).await;
        assert_eq!(card["reason"], "safety_floor", "{tool} {input}: {card:#}");
        ts.decide(
            &sid,
            card["approval_id"].as_str().unwrap(),
            json!({"decision": "deny"}),
        )
        .await
        .expect(200);
    }
}
