//! `hook claude-code` and `hook codex` against a fake Countersign.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use countersign::external::hook::{HookArgs, HookCommand, HookContext, HookOutcome, run_with};
use serde_json::{Value, json};

use crate::common::{FakeGates, TOKEN, fixture, fixture_bytes};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    hook: HookCommand,
}

/// `countersign hook <words…>` as parsed by clap.
pub fn args(words: &[&str]) -> HookArgs {
    let argv = std::iter::once("hook").chain(words.iter().copied());
    HookArgs {
        command: Cli::try_parse_from(argv).unwrap().hook,
    }
}

pub fn ctx() -> HookContext {
    HookContext {
        home: None,
        cwd: PathBuf::from("/tmp/hook-cwd"),
        open_budget: Duration::from_secs(1),
        live_stderr: false,
        agent_attended: false,
    }
}

async fn hook(agent: &str, url: &str, stdin: &[u8], extra: &[&str]) -> HookOutcome {
    let mut words = vec![agent, "--url", url, "--token", TOKEN];
    words.extend_from_slice(extra);
    run_with(args(&words), stdin, &ctx()).await
}

fn stdout_json(outcome: &HookOutcome) -> Value {
    assert_eq!(outcome.code, 0, "stderr: {}", outcome.stderr);
    serde_json::from_str(&outcome.stdout)
        .unwrap_or_else(|e| panic!("stdout {:?}: {e}", outcome.stdout))
}

/// Runs the hook while the fake answers gate 0 with `answer`.
async fn answered(agent: &str, stdin_fixture: &str, answer: Value) -> (HookOutcome, FakeGates) {
    let fake = FakeGates::start();
    let stdin = fixture_bytes(stdin_fixture);
    let url = fake.url();
    let (outcome, ()) = tokio::join!(hook(agent, &url, &stdin, &[]), fake.resolve(0, answer));
    (outcome, fake)
}

#[tokio::test]
async fn pretooluse_approve_allows_and_opens_the_gate_as_given() {
    let (outcome, fake) = answered(
        "claude-code",
        "claude-code/pretooluse-bash.stdin.json",
        json!({"status": "approved", "decision": "approve"}),
    )
    .await;
    assert_eq!(
        stdout_json(&outcome),
        fixture("claude-code/pretooluse-allow.stdout.json")
    );
    let input = fixture("claude-code/pretooluse-bash.stdin.json");
    let opens = fake.opens();
    assert_eq!(opens.len(), 1);
    assert_eq!(
        opens[0].body,
        json!({"source": "claude-code", "external_session": "abc123",
            "cwd": "/home/user/my-project",
            "tool": {"name": "Bash", "input": input["tool_input"]},
            "capabilities": {"edit": true, "always": true, "deny_reason": true},
            "timeout_secs": 1800})
    );
    assert!(opens[0].key.as_ref().is_some_and(|k| k.len() == 64));
}

#[tokio::test]
async fn pretooluse_edit_passes_the_new_input() {
    let expected = fixture("claude-code/pretooluse-allow-updatedinput.stdout.json");
    let edited = expected["hookSpecificOutput"]["updatedInput"].clone();
    let (outcome, _fake) = answered(
        "claude-code",
        "claude-code/pretooluse-bash.stdin.json",
        json!({"status": "approved", "decision": "edit", "updated_input": edited}),
    )
    .await;
    assert_eq!(stdout_json(&outcome), expected);
}

#[tokio::test]
async fn permissionrequest_edit_and_deny() {
    let (outcome, _fake) = answered(
        "claude-code",
        "claude-code/permissionrequest-bash.stdin.json",
        json!({"status": "approved", "decision": "edit",
            "updated_input": {"command": "npm run lint"}}),
    )
    .await;
    assert_eq!(
        stdout_json(&outcome),
        fixture("claude-code/permissionrequest-allow-updatedinput.stdout.json")
    );

    let (outcome, _fake) = answered(
        "claude-code",
        "claude-code/permissionrequest-bash.stdin.json",
        json!({"status": "denied", "decision": "deny", "reason": "not on main, please."}),
    )
    .await;
    assert_eq!(
        stdout_json(&outcome),
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny",
                "message": "not on main, please."}}})
    );
}

#[tokio::test]
async fn permissionrequest_always_never_hands_claude_a_rule() {
    let (outcome, _fake) = answered(
        "claude-code",
        "claude-code/permissionrequest-bash.stdin.json",
        json!({"status": "approved", "decision": "allow_always", "rule": {"id": "rule_1"}}),
    )
    .await;
    assert_eq!(
        stdout_json(&outcome),
        fixture("claude-code/permissionrequest-allow.stdout.json")
    );
    assert!(
        stdout_json(&outcome)["hookSpecificOutput"]["decision"]
            .get("updatedPermissions")
            .is_none()
    );
}

#[tokio::test]
async fn pretooluse_deny_gives_the_reason_to_claude() {
    let (outcome, _fake) = answered(
        "claude-code",
        "claude-code/pretooluse-edit.stdin.json",
        json!({"status": "denied", "decision": "deny", "reason": "wrong file"}),
    )
    .await;
    assert_eq!(
        stdout_json(&outcome),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "wrong file"}})
    );
}

#[tokio::test]
async fn a_gate_resolved_at_once_by_a_rule_answers_without_waiting() {
    let fake = FakeGates::start();
    fake.log.lock().unwrap().resolve_on_open =
        Some(json!({"status": "approved", "decision": "approve", "answered_by": "rule"}));
    let stdin = fixture_bytes("claude-code/pretooluse-read.stdin.json");
    let outcome = hook("claude-code", &fake.url(), &stdin, &[]).await;
    assert_eq!(
        stdout_json(&outcome)["hookSpecificOutput"]["permissionDecision"],
        "allow"
    );
    assert_eq!(fake.log.lock().unwrap().polls, 0);
}

#[tokio::test]
async fn the_hooks_own_deadline_denies_and_cancels_the_gate() {
    let fake = FakeGates::start();
    let stdin = fixture_bytes("claude-code/pretooluse-bash.stdin.json");
    // `--timeout` is Claude Code's timeout for the hook: it answers 10 s before, here after 2 s.
    let outcome = hook("claude-code", &fake.url(), &stdin, &["--timeout", "12"]).await;
    assert_eq!(
        stdout_json(&outcome),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Denied in Countersign: timed out after 2 s with no answer."}})
    );
    assert_eq!(fake.opens()[0].body["timeout_secs"], 12);
    assert_eq!(
        fake.cancels(),
        vec![("apr_1".to_owned(), "timeout".to_owned())]
    );
}

#[tokio::test]
async fn an_expired_or_cancelled_gate_is_a_deny_that_says_so() {
    let (outcome, _fake) = answered(
        "claude-code",
        "claude-code/permissionrequest-bash.stdin.json",
        json!({"status": "expired", "answered_by": "timeout", "actor": "timeout"}),
    )
    .await;
    let decision = &stdout_json(&outcome)["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "deny");
    assert!(decision["message"].as_str().unwrap().contains("expired"));

    let (outcome, _fake) = answered(
        "codex",
        "codex/permissionrequest-bash.stdin.json",
        json!({"status": "cancelled", "reason": "answered_elsewhere"}),
    )
    .await;
    let decision = &stdout_json(&outcome)["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "deny");
    assert!(decision["message"].as_str().unwrap().contains("cancelled"));
}

#[tokio::test]
async fn unreachable_countersign_prints_nothing_and_exits_0() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    for (agent, stdin) in [
        (
            "claude-code",
            "claude-code/permissionrequest-bash.stdin.json",
        ),
        ("codex", "codex/permissionrequest-bash.stdin.json"),
    ] {
        let started = Instant::now();
        let outcome = hook(agent, &url, &fixture_bytes(stdin), &[]).await;
        assert_eq!(outcome.stdout, "");
        assert_eq!(outcome.code, 0);
        assert!(
            outcome.stderr.contains("cannot reach Countersign"),
            "{}",
            outcome.stderr
        );
        // A few quick retries within the (test-shortened) budget, then give up.
        assert!(started.elapsed() >= Duration::from_millis(500));
        assert!(started.elapsed() < Duration::from_secs(4));
    }
}

/// A wrong token is Countersign's answer, not its absence: a deny saying so, even for the
/// `PermissionRequest` beside Claude's dialog (refusals.rs has every agent and status).
#[tokio::test]
async fn a_refused_token_is_a_deny_that_says_so() {
    let fake = FakeGates::start();
    for (stdin, decision) in [
        (
            "claude-code/pretooluse-bash.stdin.json",
            "/hookSpecificOutput/permissionDecisionReason",
        ),
        (
            "claude-code/permissionrequest-bash.stdin.json",
            "/hookSpecificOutput/decision/message",
        ),
    ] {
        let argv = ["claude-code", "--url", &fake.url(), "--token", "wrong"].map(String::from);
        let words: Vec<&str> = argv.iter().map(String::as_str).collect();
        let outcome = run_with(args(&words), &fixture_bytes(stdin), &ctx()).await;
        let said = stdout_json(&outcome);
        let reason = said.pointer(decision).and_then(Value::as_str).unwrap();
        assert!(reason.contains("refused the token"), "{said}");
        assert!(said.to_string().contains("\"deny\""), "{stdin}: {said}");
    }
    assert!(fake.gates().is_empty());
}

#[tokio::test]
async fn a_countersign_restart_while_waiting_still_gets_the_same_gates_answer() {
    let mut fake = FakeGates::start();
    let url = fake.url();
    let stdin = fixture_bytes("claude-code/pretooluse-bash.stdin.json");
    let waiting = tokio::spawn(async move { hook("claude-code", &url, &stdin, &[]).await });
    crate::common::eventually("the gate to open", || fake.gates().len() == 1).await;
    crate::common::eventually("a long-poll", || fake.log.lock().unwrap().polls >= 1).await;
    fake.server.stop();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !waiting.is_finished(),
        "the hook gave up while Countersign was down"
    );
    fake.server.restart();
    fake.resolve(0, json!({"status": "approved", "decision": "approve"}))
        .await;
    let outcome = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stdout_json(&outcome),
        fixture("claude-code/pretooluse-allow.stdout.json")
    );
    assert_eq!(fake.gates().len(), 1);
    assert_eq!(fake.opens().len(), 1);
}

#[tokio::test]
async fn a_repeated_pretooluse_call_reuses_its_gate() {
    let (first, fake) = answered(
        "claude-code",
        "claude-code/pretooluse-bash.stdin.json",
        json!({"status": "approved", "decision": "approve"}),
    )
    .await;
    // The same tool use again, from another process: same key, the same (answered) gate.
    let stdin = fixture_bytes("claude-code/pretooluse-bash.stdin.json");
    let words = [
        "claude-code",
        "--url",
        &fake.url(),
        "--token",
        TOKEN,
        "--timeout",
        "12",
    ]
    .map(String::from);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let second = run_with(args(&words), &stdin, &ctx()).await;
    assert_eq!(first.stdout, second.stdout);
    let opens = fake.opens();
    assert_eq!(opens.len(), 2);
    assert_eq!(opens[0].key, opens[1].key);
    assert_eq!((opens[0].status, opens[1].status), (201, 200));
    assert_eq!(fake.gates().len(), 1);
}

#[tokio::test]
async fn permissionrequest_asks_anew_once_its_gate_was_answered() {
    let fake = FakeGates::start();
    fake.log.lock().unwrap().resolve_on_open =
        Some(json!({"status": "approved", "decision": "approve"}));
    let stdin = fixture_bytes("claude-code/permissionrequest-bash.stdin.json");
    let words = ["claude-code", "--url", &fake.url(), "--token", TOKEN].map(String::from);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    for _ in 0..3 {
        let outcome = run_with(args(&words), &stdin, &ctx()).await;
        assert_eq!(
            stdout_json(&outcome),
            fixture("claude-code/permissionrequest-allow.stdout.json")
        );
    }
    // The same request asked three times: each ask after an answer gets a gate of its own,
    // under a key chained to the answered one (which concurrent retries would share).
    let opens = fake.opens();
    let keys: Vec<&str> = opens.iter().map(|o| o.key.as_deref().unwrap()).collect();
    let statuses: Vec<u16> = opens.iter().map(|o| o.status).collect();
    assert_eq!(statuses, [201, 200, 201, 200, 200, 201]);
    let (k1, k2, k3) = (keys[0], keys[2], keys[5]);
    assert_eq!(keys, [k1, k1, k2, k1, k2, k3]);
    assert!(k1 != k2 && k2 != k3 && k1 != k3);
    assert_eq!(fake.gates().len(), 3);
}

#[tokio::test]
async fn codex_approve_and_deny_print_only_what_codex_accepts() {
    let (outcome, fake) = answered(
        "codex",
        "codex/permissionrequest-bash.stdin.json",
        json!({"status": "approved", "decision": "approve"}),
    )
    .await;
    assert_eq!(
        stdout_json(&outcome),
        fixture("codex/permissionrequest-allow.stdout.json")
    );
    let body = &fake.opens()[0].body;
    assert_eq!(body["source"], "codex");
    assert_eq!(
        body["external_session"],
        "019fac90-fbcb-7121-a9dc-5b4e866eb680"
    );
    assert_eq!(body["cwd"], "/home/user/app");
    assert_eq!(
        body["capabilities"],
        json!({"edit": false, "always": true, "deny_reason": true})
    );

    let (outcome, _fake) = answered(
        "codex",
        "codex/permissionrequest-apply_patch.stdin.json",
        json!({"status": "denied", "decision": "deny", "reason": "not during the release freeze."}),
    )
    .await;
    assert_eq!(
        stdout_json(&outcome),
        fixture("codex/permissionrequest-deny.stdout.json")
    );

    let (outcome, _fake) = answered(
        "codex",
        "codex/permissionrequest-mcp.stdin.json",
        json!({"status": "approved", "decision": "allow_always", "rule": {"id": "r"}}),
    )
    .await;
    assert_eq!(
        stdout_json(&outcome),
        fixture("codex/permissionrequest-allow.stdout.json")
    );
}

#[tokio::test]
async fn codex_cannot_take_an_edit_so_it_is_denied() {
    let (outcome, _fake) = answered(
        "codex",
        "codex/permissionrequest-bash.stdin.json",
        json!({"status": "approved", "decision": "edit", "updated_input": {"command": "ls"}}),
    )
    .await;
    let out = stdout_json(&outcome);
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "deny");
    assert!(
        out["hookSpecificOutput"]["decision"]
            .get("updatedInput")
            .is_none()
    );
}

#[tokio::test]
async fn other_events_make_no_decision_and_unreadable_input_is_blocked() {
    let fake = FakeGates::start();
    let post = json!({"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {}});
    let outcome = hook("claude-code", &fake.url(), post.to_string().as_bytes(), &[]).await;
    assert_eq!((outcome.stdout.as_str(), outcome.code), ("", 0));
    let outcome = hook("codex", &fake.url(), post.to_string().as_bytes(), &[]).await;
    assert_eq!((outcome.stdout.as_str(), outcome.code), ("", 0));
    // Unreadable input is not waved through (Claude's auto mode would ask nobody): exit 2,
    // which blocks the call, and why.
    let outcome = hook("claude-code", &fake.url(), b"not json", &[]).await;
    assert_eq!((outcome.stdout.as_str(), outcome.code), ("", 2));
    assert!(outcome.stderr.contains("not allowed"), "{}", outcome.stderr);
    assert!(fake.opens().is_empty());
    // A lone surrogate (as JavaScript's JSON.stringify writes one) still reaches a card.
    let lone = br#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"ls","description":"clean \ud800"}}"#;
    let _ = tokio::time::timeout(
        Duration::from_secs(3),
        hook("claude-code", &fake.url(), lone, &[]),
    )
    .await;
    assert_eq!(fake.opens().len(), 1, "the call reached Countersign");
}

/// Runs `agent`'s hook on `stdin_fixture` with its `transcript_path` set to `transcript`, and
/// returns the body the hook opened the gate with.
async fn opened_with_transcript(agent: &str, stdin_fixture: &str, transcript: &str) -> Value {
    opened_with_transcript_flags(agent, stdin_fixture, transcript, &[]).await
}

async fn opened_with_transcript_flags(
    agent: &str,
    stdin_fixture: &str,
    transcript: &str,
    flags: &[&str],
) -> Value {
    let mut stdin = fixture(stdin_fixture);
    stdin["transcript_path"] = json!(transcript);
    let fake = FakeGates::start();
    let url = fake.url();
    let bytes = serde_json::to_vec(&stdin).unwrap();
    let (outcome, ()) = tokio::join!(
        hook(agent, &url, &bytes, flags),
        fake.resolve(0, json!({"status": "approved", "decision": "approve"}))
    );
    stdout_json(&outcome);
    fake.opens()[0].body.clone()
}

#[tokio::test]
async fn the_hooks_send_what_the_agent_last_said_from_its_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let claude = dir.path().join("claude.jsonl");
    let lines = [
        json!({"type": "user", "message": {"role": "user", "content": "tidy the repo"}}),
        json!({"type": "assistant", "message": {"content": [
            {"type": "text", "text": "The build folder is stale; removing it."},
            {"type": "tool_use", "name": "Bash", "input": {"command": "rm -rf build"}}]}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&claude, text.join("\n")).unwrap();
    let body = opened_with_transcript(
        "claude-code",
        "claude-code/permissionrequest-bash.stdin.json",
        claude.to_str().unwrap(),
    )
    .await;
    assert_eq!(
        body["agent_says"],
        "The build folder is stale; removing it."
    );

    let codex = dir.path().join("rollout.jsonl");
    let lines = [
        json!({"type": "event_msg", "payload": {"type": "user_message", "message": "clean"}}),
        json!({"type": "response_item", "payload": {"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "Deleting the temp file first."}]}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&codex, text.join("\n")).unwrap();
    let body = opened_with_transcript(
        "codex",
        "codex/permissionrequest-bash.stdin.json",
        codex.to_str().unwrap(),
    )
    .await;
    assert_eq!(body["agent_says"], "Deleting the temp file first.");
    // Asked not to, the hook sends none of the conversation.
    let body = opened_with_transcript_flags(
        "codex",
        "codex/permissionrequest-bash.stdin.json",
        codex.to_str().unwrap(),
        &["--no-transcript"],
    )
    .await;
    assert!(body.get("agent_says").is_none(), "{body}");
}

#[tokio::test]
async fn a_transcript_that_cannot_be_read_opens_the_gate_without_words() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("planted.jsonl");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    for path in [
        fifo.to_str().unwrap(),
        "/nonexistent/transcript.jsonl",
        "/",
        "",
    ] {
        let body = opened_with_transcript(
            "claude-code",
            "claude-code/permissionrequest-bash.stdin.json",
            path,
        )
        .await;
        assert!(body.get("agent_says").is_none(), "{path}: {body}");
        assert!(body["tool"]["input"]["command"].is_string());
    }
}

#[tokio::test]
async fn a_timeout_the_hook_cannot_keep_is_refused_before_anything_runs() {
    // Too short to answer before the agent gives up (Gemini, Qwen and Copilot then run the
    // call), or too long for the agent's timers: refused as a usage error, no gate opened.
    let fake = FakeGates::start();
    for bad in ["5", "604801", "2200000", "soon"] {
        let words = ["gemini", "--url", &fake.url(), "--timeout", bad].map(String::from);
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let parsed = Cli::try_parse_from(std::iter::once("hook").chain(words.iter().copied()));
        assert!(parsed.is_err(), "--timeout {bad} was accepted");
    }
    assert!(fake.opens().is_empty());
}
