//! The adapters against a real Countersign: the built binary's `hook claude-code`, `hook
//! codex` and `mcp` as processes, the opencode bridge against a fake opencode, each talking
//! to a real server on loopback with a `gates` token, and a person answering over the REST
//! API. One test kills the server with `kill -9` while a hook waits and starts it again on
//! the same port: the hook keeps polling the same gate and gets its answer.

use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::common::fixture;
use crate::support::{Api, Lab, Out, SOON, TestServer, countersign, poll_until, str_of};

/// A `gates` token made by the admin, as a person would for an agent's hook.
async fn gates_token(admin: &Api, name: &str) -> String {
    let created = admin
        .post("/api/v1/tokens", json!({"name": name, "scope": "gates"}))
        .await
        .expect(201);
    created["token"].as_str().unwrap().to_owned()
}

/// The one pending gate (waits until there is exactly one).
async fn pending_gate(admin: &Api) -> Value {
    poll_until("one pending gate", SOON, || async {
        let list = admin
            .get("/api/v1/approvals?status=pending")
            .await
            .expect(200);
        match list.as_array().map(Vec::as_slice) {
            Some([one]) => Ok(one.clone()),
            _ => Err(list.to_string()),
        }
    })
    .await
}

async fn decide(admin: &Api, gate: &Value, body: Value) {
    let (sid, aid) = (str_of(gate, "session_id"), str_of(gate, "approval_id"));
    admin
        .post(&format!("/api/v1/sessions/{sid}/approvals/{aid}"), body)
        .await
        .expect(200);
}

/// `countersign hook <agent> --url … --token …` with `stdin`, run to its end.
async fn spawn_hook(
    agent: &str,
    url: &str,
    token: &str,
    stdin: &Value,
) -> tokio::task::JoinHandle<Out> {
    let cmd = countersign(&["hook", agent, "--url", url, "--token", token]);
    let stdin = stdin.to_string();
    tokio::task::spawn_blocking(move || crate::support::run(cmd, Some(&stdin)))
}

/// The hook's answer: it exits 0 and prints one JSON object (it may have logged a retry).
fn stdout_json(out: &Out) -> Value {
    assert_eq!(out.code(), 0, "{out:#?}");
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{out:#?}: {e}"))
}

/// Claude Code's `PreToolUse` payload for `Bash` with `command`.
fn claude_bash(command: &str, tool_use_id: &str) -> Value {
    let mut input = fixture("claude-code/pretooluse-bash.stdin.json");
    input["tool_input"]["command"] = json!(command);
    input["tool_use_id"] = json!(tool_use_id);
    input
}

#[tokio::test]
async fn claude_code_hook_gets_approve_edit_deny_and_always_from_a_person() {
    let ts = TestServer::start().await;
    let token = gates_token(&ts, "claude-hook").await;

    // Approve: the card shows the agent's call; the hook allows it.
    let hook = spawn_hook(
        "claude-code",
        &ts.base,
        &token,
        &claude_bash("npm test", "toolu_1"),
    )
    .await;
    let gate = pending_gate(&ts).await;
    assert_eq!(gate["kind"], "external");
    assert_eq!(gate["tool"], "Bash");
    assert_eq!(gate["summary"], "npm test");
    decide(&ts, &gate, json!({"decision": "approve"})).await;
    assert_eq!(
        stdout_json(&hook.await.unwrap()),
        fixture("claude-code/pretooluse-allow.stdout.json")
    );

    // The gates token opened it, and can neither list nor answer gates.
    let agent = Api::new(&ts.base).with_token(&token);
    agent
        .get("/api/v1/approvals?status=pending")
        .await
        .expect_error(403, "forbidden");

    // Edit: the person's input replaces the agent's.
    let hook = spawn_hook(
        "claude-code",
        &ts.base,
        &token,
        &claude_bash("npm test", "toolu_2"),
    )
    .await;
    let gate = pending_gate(&ts).await;
    let edited = fixture("claude-code/pretooluse-allow-updatedinput.stdout.json");
    let updated = edited["hookSpecificOutput"]["updatedInput"].clone();
    decide(&ts, &gate, json!({"decision": "edit", "edits": updated})).await;
    assert_eq!(stdout_json(&hook.await.unwrap()), edited);

    // Deny with a reason: Claude reads why.
    let hook = spawn_hook(
        "claude-code",
        &ts.base,
        &token,
        &claude_bash("git push -f", "toolu_3"),
    )
    .await;
    let gate = pending_gate(&ts).await;
    decide(
        &ts,
        &gate,
        json!({"decision": "deny", "reason": "not on main"}),
    )
    .await;
    let out = stdout_json(&hook.await.unwrap());
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecisionReason"],
        "not on main"
    );

    // Always allow: this call is allowed, and the rule answers the next like it at once,
    // without a card.
    let hook = spawn_hook(
        "claude-code",
        &ts.base,
        &token,
        &claude_bash("cargo build", "toolu_4"),
    )
    .await;
    let gate = pending_gate(&ts).await;
    decide(&ts, &gate, json!({"decision": "allow_always"})).await;
    let out = stdout_json(&hook.await.unwrap());
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");
    let hook = spawn_hook(
        "claude-code",
        &ts.base,
        &token,
        &claude_bash("cargo build --release", "toolu_5"),
    )
    .await;
    let out = stdout_json(&hook.await.unwrap());
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");
    let pending = ts.get("/api/v1/approvals?status=pending").await.expect(200);
    assert_eq!(pending, json!([]));

    // Every gate of this Claude session lives in one Countersign session, marked as its.
    let sessions = ts.get("/api/v1/sessions").await.expect(200);
    let outside: Vec<&Value> = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["source"] == "claude-code")
        .collect();
    assert_eq!(outside.len(), 1, "{sessions}");
}

#[tokio::test]
async fn a_repeated_hook_call_finds_the_same_gate() {
    let ts = TestServer::start().await;
    let token = gates_token(&ts, "claude-hook").await;
    let input = claude_bash("make deploy", "toolu_same");
    let first = spawn_hook("claude-code", &ts.base, &token, &input).await;
    let gate = pending_gate(&ts).await;
    // Claude Code retries the hook (say it timed out on its side): same tool_use_id.
    let second = spawn_hook("claude-code", &ts.base, &token, &input).await;
    // Whether it opened before or after the answer, it finds the same gate.
    decide(&ts, &gate, json!({"decision": "approve"})).await;
    for hook in [first, second] {
        let out = stdout_json(&hook.await.unwrap());
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");
    }
    let snapshot = ts
        .get(&format!("/api/v1/sessions/{}", str_of(&gate, "session_id")))
        .await
        .expect(200);
    let opened =
        crate::support::of_type(&crate::support::events(&snapshot), "approval_request").len();
    assert_eq!(opened, 1, "one card for one tool call");

    // Asked again after the answer: the same answer, at once, still one card.
    let third = spawn_hook("claude-code", &ts.base, &token, &input).await;
    let out = stdout_json(&third.await.unwrap());
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");
    let snapshot = ts
        .get(&format!("/api/v1/sessions/{}", str_of(&gate, "session_id")))
        .await
        .expect(200);
    let opened =
        crate::support::of_type(&crate::support::events(&snapshot), "approval_request").len();
    assert_eq!(opened, 1);
}

/// A hook process whose stderr is read as it writes: the test can see that it opened (or
/// found) its gate and is waiting.
struct WaitingHook {
    child: tokio::process::Child,
    stderr: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStderr>>,
}

impl WaitingHook {
    async fn start(agent: &str, url: &str, token: &str, stdin: &Value) -> WaitingHook {
        WaitingHook::start_with(agent, url, token, stdin, &[]).await
    }

    /// The same, with `env` added to the hook's environment.
    async fn start_with(
        agent: &str,
        url: &str,
        token: &str,
        stdin: &Value,
        env: &[(&str, &str)],
    ) -> WaitingHook {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_countersign"))
            .args(["hook", agent, "--url", url, "--token", token])
            .envs(env.iter().copied())
            .env_remove("COUNTERSIGN_TOKEN")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(stdin.to_string().as_bytes()).await.unwrap();
        drop(pipe);
        let stderr = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        WaitingHook { child, stderr }
    }

    /// Until it says it waits for an answer (its gate is open, pending).
    async fn waiting(&mut self) {
        let found = tokio::time::timeout(SOON, async {
            while let Some(line) = self.stderr.next_line().await.unwrap() {
                if line.contains("waiting for an answer") {
                    return;
                }
            }
            panic!("the hook ended without waiting");
        })
        .await;
        assert!(found.is_ok(), "the hook did not start waiting");
    }

    async fn answer(self) -> Value {
        let out = tokio::time::timeout(SOON, self.child.wait_with_output())
            .await
            .expect("the hook answered in time")
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{out:?}: {e}"))
    }
}

#[tokio::test]
async fn a_repeated_permission_request_shares_the_open_card_and_a_later_one_asks_anew() {
    let ts = TestServer::start().await;
    let token = gates_token(&ts, "claude-hook").await;
    let mut input = fixture("claude-code/permissionrequest-bash.stdin.json");
    input["tool_input"]["command"] = json!("make docs");

    // Two hook processes with the same request while its card is open: one card.
    let mut first = WaitingHook::start("claude-code", &ts.base, &token, &input).await;
    first.waiting().await;
    let mut second = WaitingHook::start("claude-code", &ts.base, &token, &input).await;
    second.waiting().await;
    let gate = pending_gate(&ts).await;
    decide(&ts, &gate, json!({"decision": "approve"})).await;
    let allow = json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
        "decision": {"behavior": "allow"}}});
    assert_eq!(first.answer().await, allow);
    assert_eq!(second.answer().await, allow);

    // The same request after that answer is a new ask: a new card, not the old answer.
    let third = spawn_hook("claude-code", &ts.base, &token, &input).await;
    let again = pending_gate(&ts).await;
    assert_ne!(again["approval_id"], gate["approval_id"]);
    decide(
        &ts,
        &again,
        json!({"decision": "deny", "reason": "not twice"}),
    )
    .await;
    let out = stdout_json(&third.await.unwrap());
    assert_eq!(
        out["hookSpecificOutput"]["decision"]["message"],
        "not twice"
    );
    let snapshot = ts
        .get(&format!("/api/v1/sessions/{}", str_of(&gate, "session_id")))
        .await
        .expect(200);
    let opened =
        crate::support::of_type(&crate::support::events(&snapshot), "approval_request").len();
    assert_eq!(opened, 2, "one card per ask");
}

#[tokio::test]
async fn codex_hook_allows_and_denies_with_the_persons_message() {
    let ts = TestServer::start().await;
    let token = gates_token(&ts, "codex-hook").await;
    let mut input = fixture("codex/permissionrequest-bash.stdin.json");
    input["tool_input"]["command"] = json!("cargo test");

    let hook = spawn_hook("codex", &ts.base, &token, &input).await;
    let gate = pending_gate(&ts).await;
    assert_eq!(gate["tool"], "Bash");
    // Codex cannot run an edited input: the card does not offer Edit.
    let (sid, aid) = (str_of(&gate, "session_id"), str_of(&gate, "approval_id"));
    ts.post(
        &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
        json!({"decision": "edit", "edits": {"command": "cargo check"}}),
    )
    .await
    .expect_error(403, "not_allowed");
    decide(&ts, &gate, json!({"decision": "approve"})).await;
    assert_eq!(
        stdout_json(&hook.await.unwrap()),
        fixture("codex/permissionrequest-allow.stdout.json")
    );

    let hook = spawn_hook("codex", &ts.base, &token, &input).await;
    let gate = pending_gate(&ts).await;
    decide(
        &ts,
        &gate,
        json!({"decision": "deny", "reason": "not during the release freeze."}),
    )
    .await;
    assert_eq!(
        stdout_json(&hook.await.unwrap()),
        fixture("codex/permissionrequest-deny.stdout.json")
    );
}

#[tokio::test]
async fn codex_hook_puts_a_null_transcript_and_a_network_access_on_a_card() {
    // Codex's schema allows `transcript_path: null` (a session with no transcript on disk) and
    // names `NetworkAccess` among its tools: the real binary reads both, a person is asked, and
    // the answer reaches Codex.
    let ts = TestServer::start().await;
    let token = gates_token(&ts, "codex-hook").await;
    let mut input = fixture("codex/permissionrequest-bash.stdin.json");
    input["transcript_path"] = Value::Null;
    input["tool_name"] = json!("NetworkAccess");
    input["tool_input"] = json!({"command": "network-access registry.npmjs.org",
        "description": "network-access registry.npmjs.org"});
    let hook = spawn_hook("codex", &ts.base, &token, &input).await;
    let gate = pending_gate(&ts).await;
    assert_eq!(gate["tool"], "NetworkAccess", "{gate}");
    assert_eq!(
        gate["args"]["command"], "network-access registry.npmjs.org",
        "{gate}"
    );
    decide(&ts, &gate, json!({"decision": "approve"})).await;
    let out = hook.await.unwrap();
    assert_eq!(
        stdout_json(&out),
        fixture("codex/permissionrequest-allow.stdout.json"),
        "{out:#?}"
    );
}

#[tokio::test]
async fn a_hook_waiting_across_a_server_crash_gets_its_answer_after_the_restart() {
    let mut lab = Lab::new(None);
    let node = lab.start().await;
    let base = node.base.clone();
    let token = gates_token(&node, "claude-hook").await;
    let hook = spawn_hook(
        "claude-code",
        &base,
        &token,
        &claude_bash("terraform apply", "toolu_crash"),
    )
    .await;
    let gate = pending_gate(&node).await;

    node.kill9().await;
    // Countersign is gone for a moment; the hook keeps its gate and polls again.
    let addr = base.trim_start_matches("http://").to_owned();
    let node = lab.start_at(&addr).await;
    assert_eq!(node.base, base);
    let again = pending_gate(&node).await;
    assert_eq!(
        again["approval_id"], gate["approval_id"],
        "the same gate, durable"
    );
    decide(
        &node,
        &again,
        json!({"decision": "deny", "reason": "plan it first"}),
    )
    .await;
    let out = hook.await.unwrap();
    let answer = stdout_json(&out);
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecisionReason"], "plan it first",
        "stderr: {}",
        out.stderr
    );
    // Still one card: the hook did not open a second gate after the restart.
    let snapshot = node
        .get(&format!("/api/v1/sessions/{}", str_of(&gate, "session_id")))
        .await
        .expect(200);
    let opened =
        crate::support::of_type(&crate::support::events(&snapshot), "approval_request").len();
    assert_eq!(opened, 1);
}

#[tokio::test]
async fn unreachable_countersign_leaves_the_choice_to_the_agent_where_it_asks_a_person() {
    // A port nothing listens on. Claude's own dialog is a person's prompt: in an attended
    // session in `default` mode the PreToolUse hook asks Claude to show it, and the
    // PermissionRequest hook beside that dialog prints nothing.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let (pre, request) = claude_dialog_call("down", "ls");
    let said = attended_hook(&url, "cst_nobody", &pre).await;
    assert_eq!(
        said["hookSpecificOutput"]["permissionDecision"], "ask",
        "{said}"
    );
    let mut cmd = countersign(&["hook", "claude-code", "--url", &url, "--token", "cst_x"]);
    cmd.envs(ATTENDED);
    let stdin = request.to_string();
    let out = tokio::task::spawn_blocking(move || crate::support::run(cmd, Some(&stdin)))
        .await
        .unwrap();
    assert_eq!((out.code(), out.stdout.as_str()), (0, ""), "{out:#?}");
    // Unattended (`claude -p`), or in a mode that shows no dialog, nobody would be asked: a
    // deny that says how to go on.
    for mode in ["default", "bypassPermissions"] {
        let mut input = claude_bash("ls", "toolu_x");
        input["permission_mode"] = json!(mode);
        let out = spawn_hook("claude-code", &url, "cst_nobody", &input).await;
        let said = stdout_json(&out.await.unwrap());
        assert_eq!(
            said["hookSpecificOutput"]["permissionDecision"], "deny",
            "{said}"
        );
        let why = said["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap();
        assert!(why.contains("start Countersign again"), "{why}");
    }
}

#[tokio::test]
async fn mcp_over_stdio_asks_the_real_server_and_returns_the_answer() {
    let ts = TestServer::start().await;
    let token = gates_token(&ts, "mcp").await;
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_countersign"));
    cmd.args(["mcp", "--url", &ts.base, "--token", &token])
        .env_remove("COUNTERSIGN_TOKEN")
        .env("RUST_LOG", "warn")
        .stderr(Stdio::inherit());
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();

    let arguments = fixture("claude-code/permission-prompt-tool.call-arguments.json");
    let call = {
        let params = CallToolRequestParams::new("approval_prompt")
            .with_arguments(arguments.as_object().unwrap().clone());
        client.call_tool(params)
    };
    let decide_it = async {
        let gate = pending_gate(&ts).await;
        assert_eq!(gate["kind"], "external");
        decide(
            &ts,
            &gate,
            json!({"decision": "deny", "reason": "use the staging db"}),
        )
        .await;
    };
    let (result, ()) = tokio::join!(call, decide_it);
    let result = result.unwrap();
    let text = &result.content[0].as_text().unwrap().text;
    let answer: Value = serde_json::from_str(text).unwrap();
    assert_eq!(answer["behavior"], "deny");
    assert_eq!(answer["message"], "use the staging db");

    // request_approval: a decision card, approved.
    let call = {
        let params = CallToolRequestParams::new("request_approval").with_arguments(
            json!({"title": "Ship 2.0 tonight?", "details_markdown": "All green."})
                .as_object()
                .unwrap()
                .clone(),
        );
        client.call_tool(params)
    };
    let decide_it = async {
        let gate = pending_gate(&ts).await;
        assert_eq!(gate["class"], "decision");
        decide(&ts, &gate, json!({"decision": "approve"})).await;
    };
    let (result, ()) = tokio::join!(call, decide_it);
    let text = result.unwrap().content[0].as_text().unwrap().text.clone();
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer, json!({"approved": true}));

    // Edit on a decision card revises its text; the host gets it as `revised`.
    let call = {
        let params = CallToolRequestParams::new("request_approval").with_arguments(
            json!({"title": "Ship 2.0 tonight?"})
                .as_object()
                .unwrap()
                .clone(),
        );
        client.call_tool(params)
    };
    let decide_it = async {
        let gate = pending_gate(&ts).await;
        decide(
            &ts,
            &gate,
            json!({"decision": "edit", "edits": "Ship 2.0 tomorrow morning"}),
        )
        .await;
    };
    let (result, ()) = tokio::join!(call, decide_it);
    let text = result.unwrap().content[0].as_text().unwrap().text.clone();
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        answer,
        json!({"approved": true, "revised": "Ship 2.0 tomorrow morning"})
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn opencode_bridge_carries_a_persons_answer_back_once() {
    let ts = TestServer::start().await;
    let token = gates_token(&ts, "opencode").await;
    let opencode = crate::opencode::FakeOpencode::start();
    let mut bridge = tokio::process::Command::new(env!("CARGO_BIN_EXE_countersign"));
    bridge
        .args(["bridge", "opencode", "--url", &ts.base, "--token", &token])
        .args(["--opencode-url", &opencode.server.url()])
        .env_remove("COUNTERSIGN_TOKEN")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let mut bridge = bridge.spawn().unwrap();
    crate::opencode::connected(&opencode, 1).await;

    let id = opencode.ask("opencode/sse-permission-asked-bash.json");
    let gate = pending_gate(&ts).await;
    assert_eq!(gate["tool"], "bash");
    decide(&ts, &gate, json!({"decision": "approve"})).await;
    crate::common::eventually("opencode to get the reply", || {
        !opencode.replies().is_empty()
    })
    .await;
    assert_eq!(
        opencode.replies(),
        vec![(
            id,
            fixture("opencode/post-permission-reply.once.request.json"),
            200
        )]
    );

    // Answered in opencode's TUI instead: the card closes as answered elsewhere.
    let id = opencode.ask("opencode/sse-permission-asked-bash-2.json");
    let gate = pending_gate(&ts).await;
    opencode.tui_reply(&id, "once");
    let aid = str_of(&gate, "approval_id");
    poll_until("the card to be cancelled", SOON, || async {
        let state = ts.get(&format!("/api/v1/gates/{aid}")).await.expect(200);
        if state["status"] == "cancelled" {
            Ok(state)
        } else {
            Err(state.to_string())
        }
    })
    .await;
    assert_eq!(opencode.replies().len(), 1, "never answered twice");
    bridge.start_kill().unwrap();
    let _ = bridge.wait().await;
}

#[tokio::test]
async fn a_hook_the_agent_stops_closes_its_card_and_no_answer_is_taken_after() {
    let ts = TestServer::start().await;
    let token = gates_token(&ts, "claude-hook").await;
    let mut input = fixture("claude-code/permissionrequest-bash.stdin.json");
    input["tool_input"]["command"] = json!("make release");
    for signal in ["TERM", "INT", "HUP"] {
        input["session_id"] = json!(format!("stopped-by-{signal}"));
        let mut hook = WaitingHook::start("claude-code", &ts.base, &token, &input).await;
        hook.waiting().await;
        let gate = pending_gate(&ts).await;
        // The agent answered in its own prompt (or the person pressed Esc): it stops the hook.
        let pid = hook.child.id().unwrap().to_string();
        let killed = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(killed.success());
        let exited = tokio::time::timeout(SOON, hook.child.wait()).await;
        assert!(exited.is_ok(), "SIGTERM ended the hook in time");
        // Its card is closed, saying why, and a late answer is refused, not recorded.
        let (sid, aid) = (str_of(&gate, "session_id"), str_of(&gate, "approval_id"));
        let late = ts
            .post(
                &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
                json!({"decision": "approve"}),
            )
            .await;
        assert_eq!(late.status.as_u16(), 410, "{signal}: {}", late.body);
        let resolution = &late.json()["resolution"];
        assert_eq!(
            resolution["decision"], "cancelled",
            "{signal}: {resolution}"
        );
        assert_eq!(resolution["reason"], "agent_gone", "{signal}: {resolution}");
    }
}

#[tokio::test]
async fn a_hook_killed_outright_has_its_card_closed_within_5_s() {
    // SIGKILL leaves the hook no time to cancel (Codex kills its hook so on Esc); the kernel
    // closes its connection, the server notices the long-poll it was waiting on go, and closes
    // the card itself. A live hook's card meanwhile stays open.
    let ts = TestServer::start().await;
    let token = gates_token(&ts, "claude-hook").await;
    let mut input = fixture("claude-code/permissionrequest-bash.stdin.json");
    input["tool_input"]["command"] = json!("make docs");
    input["session_id"] = json!("killed-outright");
    let mut hook = WaitingHook::start("claude-code", &ts.base, &token, &input).await;
    hook.waiting().await;
    let gate = pending_gate(&ts).await;
    let mut alive = input.clone();
    alive["session_id"] = json!("still-waiting");
    alive["tool_input"]["command"] = json!("make test");
    let mut other = WaitingHook::start("claude-code", &ts.base, &token, &alive).await;
    other.waiting().await;
    // Its long-poll has begun (it says it waits just before).
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    hook.child.start_kill().unwrap();
    let _ = hook.child.wait().await;
    let killed_at = std::time::Instant::now();
    let aid = str_of(&gate, "approval_id");
    let closed = poll_until("the killed hook's card to close", SOON, || async {
        let state = ts.get(&format!("/api/v1/gates/{aid}")).await.expect(200);
        if state["status"] == "cancelled" {
            Ok(state)
        } else {
            Err(state.to_string())
        }
    })
    .await;
    let took = killed_at.elapsed();
    assert_eq!(closed["reason"], "agent_gone", "{closed}");
    assert!(
        took <= std::time::Duration::from_secs(5),
        "closed {took:?} after the kill"
    );
    let (sid, aid) = (str_of(&gate, "session_id"), str_of(&gate, "approval_id"));
    let late = ts
        .post(
            &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(late.status.as_u16(), 410, "{}", late.body);
    // The hook still polling keeps its card, past the grace and past a lapse.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let list = ts.get("/api/v1/approvals?status=pending").await.expect(200);
    let pending: Vec<&Value> = list.as_array().unwrap().iter().collect();
    assert_eq!(pending.len(), 1, "{list}");
    assert_eq!(pending[0]["args"]["command"], "make test");
    other.child.start_kill().unwrap();
}

#[tokio::test]
async fn a_client_that_drops_its_poll_and_polls_again_keeps_its_card() {
    // What a live adapter does on a network blip or its own poll timeout: its connection goes
    // mid-wait and it polls again. A new poll within the grace keeps the card; one answered
    // poll followed by the next keeps it as well; only silence after a dropped poll closes it.
    let ts = TestServer::start().await;
    let token = gates_token(&ts, "reconnecting").await;
    let gates = Api::new(&ts.base).with_token(&token);
    let body = json!({"source": "test", "external_session": "reconnect", "cwd": "/tmp",
        "tool": {"name": "Bash", "input": {"command": "make release"}}});
    let opened = gates.post("/api/v1/gates", body).await.expect(201);
    let aid = str_of(&opened, "approval_id").to_owned();
    let poll = |wait: u64| {
        let request = gates.req(
            reqwest::Method::GET,
            &format!("/api/v1/gates/{aid}?wait={wait}&watch=15"),
        );
        tokio::spawn(async move { request.send().await.map(|r| r.status().as_u16()) })
    };
    let status =
        || async { gates.get(&format!("/api/v1/gates/{aid}")).await.expect(200)["status"].clone() };
    for _ in 0..3 {
        let waiting = poll(60);
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        // The connection closes mid-wait (the task holding it is dropped) …
        waiting.abort();
        let _ = waiting.await;
        // … and the client polls again a moment later, as a reconnect does.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    let last = poll(2);
    assert_eq!(last.await.unwrap().unwrap(), 200, "an answered poll");
    let next = poll(60);
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert_eq!(
        status().await,
        "pending",
        "a client that keeps polling keeps its card"
    );
    // Now it goes for good, mid-wait.
    next.abort();
    let _ = next.await;
    let gone_at = std::time::Instant::now();
    poll_until("the silent client's card to close", SOON, || async {
        match status().await {
            s if s == "cancelled" => Ok(()),
            other => Err(other.to_string()),
        }
    })
    .await;
    assert!(gone_at.elapsed() <= std::time::Duration::from_secs(5));
}

/// What Claude Code sets for its hooks in its interactive terminal.
const ATTENDED: [(&str, &str); 1] = [("CLAUDE_CODE_SESSION_ATTENDED", "1")];

/// Claude Code's `PreToolUse` (and the same call's `PermissionRequest`) for `command` in
/// `default` mode, in session `session`.
fn claude_dialog_call(session: &str, command: &str) -> (Value, Value) {
    let mut pre = fixture("claude-code/pretooluse-bash.stdin.json");
    pre["session_id"] = json!(session);
    pre["permission_mode"] = json!("default");
    pre["tool_input"] = json!({"command": command, "description": "step 0"});
    let mut request = pre.clone();
    request["hook_event_name"] = json!("PermissionRequest");
    request.as_object_mut().unwrap().remove("tool_use_id");
    (pre, request)
}

/// `hook claude-code` run to its end in an attended session.
async fn attended_hook(url: &str, token: &str, stdin: &Value) -> Value {
    let mut cmd = countersign(&["hook", "claude-code", "--url", url, "--token", token]);
    cmd.envs(ATTENDED);
    let stdin = stdin.to_string();
    let out = tokio::task::spawn_blocking(move || crate::support::run(cmd, Some(&stdin)))
        .await
        .unwrap();
    stdout_json(&out)
}

#[tokio::test]
async fn claudes_dialog_and_the_card_race_and_the_loser_closes() {
    let ts = TestServer::start().await;
    let token = gates_token(&ts, "claude-hook").await;
    let (pre, request) = claude_dialog_call("dialog-race", "make release");
    // PreToolUse opens the card and lets Claude show its dialog.
    let said = attended_hook(&ts.base, &token, &pre).await;
    assert_eq!(
        said["hookSpecificOutput"]["permissionDecision"], "ask",
        "{said}"
    );
    let gate = pending_gate(&ts).await;
    // Beside the dialog, Claude's PermissionRequest hook waits on that same card.
    let mut hook =
        WaitingHook::start_with("claude-code", &ts.base, &token, &request, &ATTENDED).await;
    hook.waiting().await;
    let again = pending_gate(&ts).await;
    assert_eq!(again["approval_id"], gate["approval_id"], "one card");
    // The card answered first answers Claude, and its dialog closes.
    decide(&ts, &gate, json!({"decision": "approve"})).await;
    let answer = hook.answer().await;
    assert_eq!(
        answer["hookSpecificOutput"]["decision"]["behavior"],
        "allow"
    );

    // The dialog's No first: Claude aborts the turn and stops its hooks (SIGTERM); the card
    // closes and takes no answer after.
    let (pre, request) = claude_dialog_call("dialog-race", "make publish");
    attended_hook(&ts.base, &token, &pre).await;
    let gate = pending_gate(&ts).await;
    let mut hook =
        WaitingHook::start_with("claude-code", &ts.base, &token, &request, &ATTENDED).await;
    hook.waiting().await;
    let pid = hook.child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let _ = hook.child.wait().await;
    let (sid, aid) = (str_of(&gate, "session_id"), str_of(&gate, "approval_id"));
    let late = ts
        .post(
            &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(late.status.as_u16(), 410, "{}", late.body);

    // No PermissionRequest hook ever takes the card over (Claude allowed the call itself, or
    // hooks were turned off): the card does not outlive the call; it closes when its watch
    // lapses.
    let (pre, _) = claude_dialog_call("dialog-race", "make clean");
    attended_hook(&ts.base, &token, &pre).await;
    let gate = pending_gate(&ts).await;
    let aid = str_of(&gate, "approval_id");
    let closed = poll_until("the untaken card to close", SOON, || async {
        let state = ts.get(&format!("/api/v1/gates/{aid}")).await.expect(200);
        if state["status"] == "cancelled" {
            Ok(state)
        } else {
            Err(state.to_string())
        }
    })
    .await;
    assert_eq!(closed["reason"], "agent_gone", "{closed}");

    // A floor card is never raced: Claude is not told to ask (its dialog could allow what only
    // the card may), the PreToolUse hook waits on the card, and the card answers Claude.
    let (pre, _) = claude_dialog_call("dialog-race", "cat .env");
    let mut hook = WaitingHook::start_with("claude-code", &ts.base, &token, &pre, &ATTENDED).await;
    hook.waiting().await;
    let gate = pending_gate(&ts).await;
    assert_eq!(gate["reason"], "safety_floor", "{gate}");
    let aid = str_of(&gate, "approval_id");
    let state = ts.get(&format!("/api/v1/gates/{aid}")).await.expect(200);
    assert_eq!(state["dialog_may_answer"], false, "{state}");
    decide(&ts, &gate, json!({"decision": "deny"})).await;
    let answer = hook.answer().await;
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
}

/// Under `approvals.require_passkey = "all"` only the card answers, with a passkey. Claude's
/// dialog is up for the call (its `PermissionRequest` hook runs beside it): the hook answers it
/// deny at once, so no Yes there can approve the call; the dialog's Yes that Claude would write
/// to its transcript closes nothing; the card stays open, refuses an answer without a passkey,
/// and the call made again waits on that same card.
#[tokio::test]
async fn under_require_passkey_all_claudes_dialog_never_answers_the_card() {
    let ts = TestServer::configured("[approvals]\nrequire_passkey = \"all\"\n").await;
    let token = gates_token(&ts, "claude-hook").await;
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("session.jsonl");
    std::fs::write(&transcript, "").unwrap();
    let (mut pre, mut request) = claude_dialog_call("step-up", "make release");
    for input in [&mut pre, &mut request] {
        input["transcript_path"] = json!(transcript.display().to_string());
    }
    let said = attended_hook(&ts.base, &token, &request).await;
    let decision = &said["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "deny", "{said}");
    let message = str_of(decision, "message");
    assert!(message.contains("needs Countersign's card"), "{said}");
    let gate = pending_gate(&ts).await;
    let aid = str_of(&gate, "approval_id");
    let state = || async { ts.get(&format!("/api/v1/gates/{aid}")).await.expect(200) };
    assert_eq!(state().await["dialog_may_answer"], false);

    // What Claude writes after its dialog's Yes: the call and its result.
    let lines = [
        json!({"type": "assistant", "message": {"content": [{"type": "tool_use",
            "id": "toolu_yes", "name": "Bash", "input": pre["tool_input"]}]}}),
        json!({"type": "user", "message": {"content": [{"type": "tool_result",
            "tool_use_id": "toolu_yes", "content": "done"}]}}),
    ];
    std::fs::write(&transcript, format!("{}\n{}\n", lines[0], lines[1])).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(
        state().await["status"],
        "pending",
        "the dialog closed nothing"
    );

    // Without a passkey the card answers nothing.
    let (sid, path) = (str_of(&gate, "session_id"), format!("/approvals/{aid}"));
    ts.post(
        &format!("/api/v1/sessions/{sid}{path}"),
        json!({"decision": "approve"}),
    )
    .await
    .expect_error(403, "passkey_required");

    // The call made again: PreToolUse finds that card and waits on it (no dialog).
    let mut hook = WaitingHook::start_with("claude-code", &ts.base, &token, &pre, &ATTENDED).await;
    hook.waiting().await;
    let again = pending_gate(&ts).await;
    assert_eq!(again["approval_id"], gate["approval_id"], "one card");
    // Claude stops it (SIGTERM: the person pressed Esc): the card closes.
    let pid = hook.child.id().unwrap().to_string();
    let term = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    assert!(term.unwrap().success());
    let _ = hook.child.wait().await;
    let closed = state().await;
    assert_eq!(closed["status"], "cancelled", "{closed}");
    assert_eq!(closed["reason"], "agent_gone", "{closed}");
}

/// An agent that opens 64 cards in its session (the most one outside session may have waiting)
/// makes Countersign answer `429 too_many_gates` for the next: that refusal is a deny, in
/// Claude's `bypassPermissions` (where a hook that prints nothing lets the call run) as in every
/// mode. A wrong token is a deny for every hook too.
#[tokio::test]
async fn a_refusal_from_the_real_server_is_a_deny_for_every_hook() {
    let ts = TestServer::start().await;
    let token = gates_token(&ts, "claude-hook").await;
    let agent = Api::new(&ts.base).with_token(&token);
    let session = "abc123";
    for i in 0..64 {
        agent
            .post(
                "/api/v1/gates",
                json!({"source": "claude-code", "external_session": session, "cwd": "/tmp",
                    "tool": {"name": "Bash", "input": {"command": format!("touch /tmp/flood-{i}")}}}),
            )
            .await
            .expect(201);
    }
    let mut flood = claude_bash("make release", "toolu_65");
    flood["session_id"] = json!(session);
    flood["permission_mode"] = json!("bypassPermissions");
    let out = spawn_hook("claude-code", &ts.base, &token, &flood).await;
    let said = stdout_json(&out.await.unwrap());
    let output = &said["hookSpecificOutput"];
    assert_eq!(output["permissionDecision"], "deny", "{said}");
    assert!(
        str_of(output, "permissionDecisionReason").contains("too_many_gates"),
        "{said}"
    );

    let inputs = [
        ("claude-code", flood.clone()),
        ("codex", fixture("codex/permissionrequest-bash.stdin.json")),
        (
            "gemini",
            json!({"session_id": "g", "cwd": "/w", "hook_event_name": "BeforeTool",
                "tool_name": "run_shell_command", "tool_input": {"command": "make release"}}),
        ),
        (
            "qwen",
            json!({"session_id": "q", "cwd": "/w", "hook_event_name": "PreToolUse",
                "tool_name": "run_shell_command", "tool_input": {"command": "make release"},
                "tool_call_id": "c1"}),
        ),
        (
            "copilot",
            json!({"sessionId": "c", "cwd": "/w", "toolName": "bash",
                "toolArgs": {"command": "make release"}}),
        ),
    ];
    let base = ts.base.as_str();
    let hooks = inputs.iter().map(|(agent, input)| async move {
        let out = spawn_hook(agent, base, "cst_wrong", input).await;
        (agent, stdout_json(&out.await.unwrap()))
    });
    for (agent, said) in futures::future::join_all(hooks).await {
        let text = said.to_string();
        assert!(text.contains("\"deny\""), "{agent}: {said}");
        assert!(text.contains("refused the token"), "{agent}: {said}");
    }
}
