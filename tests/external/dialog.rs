//! `hook claude-code` where Claude Code shows its own dialog (an attended session in
//! `default`, `acceptEdits` or `plan`): the `PreToolUse` hook opens the card and lets Claude
//! ask, the `PermissionRequest` hook Claude runs beside its dialog waits on that same card, and
//! whichever is answered first wins. Against a fake Countersign; `live.rs` has the processes.

use std::time::{Duration, Instant};

use countersign::external::hook::claude_code::{self, ClaudeHookInput};
use countersign::external::hook::{HookContext, HookOutcome, run_with};
use serde_json::{Value, json};

use crate::common::{FakeGates, TOKEN, eventually, fixture};
use crate::hooks::{args, ctx};

/// A person attends the session (Claude Code's `CLAUDE_CODE_SESSION_ATTENDED=1`).
fn attended() -> HookContext {
    HookContext {
        agent_attended: true,
        ..ctx()
    }
}

async fn claude(url: &str, stdin: &Value, ctx: &HookContext) -> HookOutcome {
    let words = ["claude-code", "--url", url, "--token", TOKEN];
    run_with(args(&words), stdin.to_string().as_bytes(), ctx).await
}

fn said(out: &HookOutcome) -> Value {
    assert_eq!(out.code, 0, "{out:?}");
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// Claude's `PreToolUse` input for `command` in `mode`.
fn pre_tool_use(command: &str, mode: &str) -> Value {
    let mut input = fixture("claude-code/pretooluse-bash.stdin.json");
    input["tool_input"] = json!({"command": command, "description": "step 0"});
    input["permission_mode"] = json!(mode);
    input
}

/// The `PermissionRequest` input Claude sends for the same call beside its dialog: the same
/// session, prompt, tool and input, and no tool use id.
fn permission_request(pre: &Value) -> Value {
    let mut input = pre.clone();
    input["hook_event_name"] = json!("PermissionRequest");
    input.as_object_mut().unwrap().remove("tool_use_id");
    input
}

#[tokio::test]
async fn in_a_dialog_mode_pretooluse_opens_the_card_and_lets_claude_ask_too() {
    for mode in ["default", "acceptEdits", "plan"] {
        let fake = FakeGates::start();
        let pre = pre_tool_use("make release", mode);
        let started = Instant::now();
        let out = claude(&fake.url(), &pre, &attended()).await;
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "it did not wait"
        );
        let output = &said(&out)["hookSpecificOutput"];
        assert_eq!(output["permissionDecision"], "ask", "{mode}: {output}");
        let reason = output["permissionDecisionReason"].as_str().unwrap();
        assert!(
            reason.contains("http://countersign.test/a/apr_1"),
            "{reason}"
        );
        // The card is open, under the key the PermissionRequest hook computes, and watched.
        let gates = fake.gates();
        assert_eq!(gates.len(), 1);
        assert_eq!(gates[0].state["status"], "pending");
        let request: ClaudeHookInput = serde_json::from_value(permission_request(&pre)).unwrap();
        assert_eq!(
            gates[0].key.as_deref(),
            Some(claude_code::request_key(&request).key.as_str())
        );
        assert!(fake.log.lock().unwrap().polls >= 1, "the card is watched");

        // Claude shows its dialog and runs its PermissionRequest hook: it finds that card, and
        // the card answered first answers Claude.
        let url = fake.url();
        let polled = fake.log.lock().unwrap().polls;
        let answer = async {
            eventually("the PermissionRequest hook to wait", || {
                fake.log.lock().unwrap().polls > polled
            })
            .await;
            fake.resolve(0, json!({"status": "approved", "decision": "approve"}))
                .await;
        };
        let (request, ctx) = (permission_request(&pre), attended());
        let (out, ()) = tokio::join!(claude(&url, &request, &ctx), answer);
        assert_eq!(
            said(&out)["hookSpecificOutput"]["decision"]["behavior"],
            "allow"
        );
        assert_eq!(fake.gates().len(), 1, "{mode}: one card for the call");
    }
}

#[tokio::test]
async fn an_answer_the_card_has_at_once_is_given_without_a_dialog() {
    // A rule, the mode or the floor answers when the card opens: Claude is told that answer.
    let fake = FakeGates::start();
    fake.log.lock().unwrap().resolve_on_open =
        Some(json!({"status": "denied", "decision": "deny", "reason": "not here"}));
    let out = claude(
        &fake.url(),
        &pre_tool_use("rm -rf /", "default"),
        &attended(),
    )
    .await;
    let output = &said(&out)["hookSpecificOutput"];
    assert_eq!(output["permissionDecision"], "deny", "{output}");
    assert_eq!(output["permissionDecisionReason"], "not here");
}

/// A floor card, or one a passkey must confirm, is answered on the card alone: in a dialog mode
/// the `PreToolUse` hook does not let Claude ask (its dialog could approve what Countersign
/// would not), it waits on the card, which answers Claude.
#[tokio::test]
async fn a_card_only_countersign_may_answer_is_not_raced_by_claudes_dialog() {
    for mode in ["default", "acceptEdits", "plan"] {
        let fake = FakeGates::start();
        fake.log.lock().unwrap().card_only = true;
        let (url, pre, ctx) = (fake.url(), pre_tool_use("cat .env", mode), attended());
        let started = Instant::now();
        let (out, ()) = tokio::join!(claude(&url, &pre, &ctx), async {
            eventually("the card to open", || !fake.gates().is_empty()).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            fake.resolve(
                0,
                json!({"status": "denied", "decision": "deny", "reason": "no"}),
            )
            .await;
        });
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "{mode}: it waited"
        );
        let output = &said(&out)["hookSpecificOutput"];
        assert_eq!(output["permissionDecision"], "deny", "{mode}: {output}");
        assert_eq!(fake.gates().len(), 1, "{mode}: one card for the call");
    }
}

#[tokio::test]
async fn where_claude_shows_no_dialog_pretooluse_still_waits_for_the_card() {
    // `auto`, `bypassPermissions`, `dontAsk` and modes this does not know never ask a person
    // in Claude; unattended (`-p`, the SDK), an "ask" is a refusal. Every call there waits on
    // Countersign.
    let cases = [
        ("auto", true),
        ("bypassPermissions", true),
        ("dontAsk", true),
        ("someNewMode", true),
        ("default", false),
        ("acceptEdits", false),
    ];
    for (mode, attended_session) in cases {
        let fake = FakeGates::start();
        let ctx = HookContext {
            agent_attended: attended_session,
            ..ctx()
        };
        let (url, pre) = (fake.url(), pre_tool_use("make deploy", mode));
        let (out, ()) = tokio::join!(
            claude(&url, &pre, &ctx),
            fake.resolve(
                0,
                json!({"status": "denied", "decision": "deny", "reason": "no"})
            )
        );
        let output = &said(&out)["hookSpecificOutput"];
        assert_eq!(output["permissionDecision"], "deny", "{mode}: {output}");
    }
}

#[tokio::test]
async fn a_yes_in_claudes_dialog_closes_the_card_once_the_call_has_run() {
    // Claude tells its PermissionRequest hook nothing of a Yes; the call's result in its
    // transcript is the sign. An earlier identical call's result, and another call's, are not.
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("session.jsonl");
    let call = |id: &str, command: &str| {
        json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": id,
            "name": "Bash", "input": {"command": command, "description": "step 0"}}]}})
    };
    let result = |id: &str| {
        json!({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": id, "content": "done"}]}})
    };
    let before: Vec<String> = [
        call("toolu_1", "make"),
        result("toolu_1"),
        call("toolu_2", "make"),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect();
    std::fs::write(&transcript, before.concat()).unwrap();
    let mut pre = pre_tool_use("make", "default");
    pre["transcript_path"] = json!(transcript.display().to_string());
    let fake = FakeGates::start();
    let url = fake.url();
    let hook = {
        let stdin = permission_request(&pre);
        tokio::spawn(async move { claude(&url, &stdin, &attended()).await })
    };
    eventually("the hook to wait on its card", || {
        fake.log.lock().unwrap().polls > 0
    })
    .await;
    let append = |line: Value| {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&transcript)
            .unwrap();
        writeln!(file, "{line}").unwrap();
    };
    append(call("toolu_3", "make test"));
    append(result("toolu_3"));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !hook.is_finished(),
        "another call's result is not this one's"
    );
    append(result("toolu_2"));
    let out = tokio::time::timeout(Duration::from_secs(10), hook)
        .await
        .expect("the hook saw the call's result")
        .unwrap();
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "", "Claude already has its answer: {out:?}");
    assert_eq!(
        fake.cancels(),
        vec![("apr_1".to_owned(), "answered_elsewhere".to_owned())]
    );
}

/// Appends `line` to the transcript at `path`, as Claude writes it.
fn append(path: &std::path::Path, line: &Value) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(file, "{line}").unwrap();
}

/// Claude's dialog is up (its `PermissionRequest` hook runs beside it) for a card only
/// Countersign may answer — the `PreToolUse` hook got no card to wait on, only the
/// `PermissionRequest` hook is installed, or Claude's own rules asked: the dialog must not
/// answer it. The hook answers deny at once, so the dialog closes; the dialog's Yes that Claude
/// would write afterwards closes nothing and approves nothing; the card stays open, watched, and
/// the call made again waits on it and gets its answer.
#[tokio::test]
async fn beside_claudes_dialog_a_card_only_countersign_may_answer_is_denied_at_once() {
    for attended_session in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("session.jsonl");
        let mut pre = pre_tool_use("make release", "default");
        pre["transcript_path"] = json!(transcript.display().to_string());
        append(
            &transcript,
            &json!({"type": "assistant", "message": {"content": [{"type": "tool_use",
                "id": "toolu_9", "name": "Bash", "input": pre["tool_input"]}]}}),
        );
        let fake = FakeGates::start();
        fake.log.lock().unwrap().card_only = true;
        let ctx = HookContext {
            agent_attended: attended_session,
            ..ctx()
        };
        let started = Instant::now();
        let out = claude(&fake.url(), &permission_request(&pre), &ctx).await;
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "it did not wait"
        );
        let decision = &said(&out)["hookSpecificOutput"]["decision"];
        assert_eq!(decision["behavior"], "deny", "{decision}");
        let message = decision["message"].as_str().unwrap();
        assert!(message.contains("needs Countersign's card"), "{message}");
        assert!(
            message.contains("http://countersign.test/a/apr_1"),
            "{message}"
        );
        // The dialog's Yes, written after the call ran: there is no hook left to take it.
        append(
            &transcript,
            &json!({"type": "user", "message": {"content": [{"type": "tool_result",
                "tool_use_id": "toolu_9", "content": "done"}]}}),
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            fake.gates()[0].state["status"],
            "pending",
            "nothing answered it"
        );
        assert!(fake.cancels().is_empty(), "{:?}", fake.cancels());
        assert!(fake.log.lock().unwrap().polls >= 1, "the card is watched");
        if attended_session {
            made_again_waits_on_the_card(&fake, &pre).await;
        }
    }
}

/// The call made again: the `PreToolUse` hook finds the open card and waits on it.
async fn made_again_waits_on_the_card(fake: &FakeGates, pre: &Value) {
    let (url, polled, ctx) = (fake.url(), fake.log.lock().unwrap().polls, attended());
    let (out, ()) = tokio::join!(claude(&url, pre, &ctx), async {
        eventually("the PreToolUse hook to wait", || {
            fake.log.lock().unwrap().polls > polled
        })
        .await;
        fake.resolve(0, json!({"status": "approved", "decision": "approve"}))
            .await;
    });
    let output = &said(&out)["hookSpecificOutput"];
    assert_eq!(output["permissionDecision"], "allow", "{output}");
    assert_eq!(fake.gates().len(), 1, "one card for the call");
}

/// The card was opened where the dialog could answer (the `PreToolUse` hook let Claude ask),
/// and then came to need Countersign alone (a passkey setting changed): the `PermissionRequest`
/// hook reads the card as it is now and answers deny at once.
#[tokio::test]
async fn a_card_that_came_to_need_countersign_alone_is_not_raced_either() {
    let fake = FakeGates::start();
    let pre = pre_tool_use("make release", "default");
    let out = claude(&fake.url(), &pre, &attended()).await;
    assert_eq!(
        said(&out)["hookSpecificOutput"]["permissionDecision"],
        "ask"
    );
    fake.log.lock().unwrap().gates[0].state["dialog_may_answer"] = json!(false);
    let out = claude(&fake.url(), &permission_request(&pre), &attended()).await;
    let decision = &said(&out)["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "deny", "{decision}");
    assert_eq!(fake.gates()[0].state["status"], "pending");
}

/// Once the `PreToolUse` hook has seen that only the card may answer, nothing hands the call
/// back to Claude's dialog: Countersign going away while it waits is waited out to the hook's
/// deadline, a deny.
#[tokio::test]
async fn a_card_only_wait_never_falls_back_to_the_dialog() {
    let mut fake = FakeGates::start();
    fake.log.lock().unwrap().card_only = true;
    let url = fake.url();
    let pre = pre_tool_use("make release", "default");
    let stdin = pre.to_string();
    let hook = tokio::spawn(async move {
        let words = [
            "claude-code",
            "--url",
            &url,
            "--token",
            TOKEN,
            "--timeout",
            "12",
        ];
        run_with(args(&words), stdin.as_bytes(), &attended()).await
    });
    eventually("a long-poll", || fake.log.lock().unwrap().polls >= 1).await;
    fake.server.stop();
    let out = tokio::time::timeout(Duration::from_secs(20), hook)
        .await
        .unwrap()
        .unwrap();
    let output = &said(&out)["hookSpecificOutput"];
    assert_eq!(output["permissionDecision"], "deny", "{output}");
    assert!(
        output["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{output}"
    );
}
