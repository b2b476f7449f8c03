//! What every hook answers when Countersign gives no decision. An answer Countersign sent — a
//! refusal (`401`, `403`, `429`, its storage down, an error, a body that is not its API's) or a
//! card lost while the hook waits — is a deny, for every agent in every mode. Only not reaching
//! Countersign at all (no connection, a proxy's `502`–`504` with nothing behind it, the server
//! shutting down, no token set) follows `--if-unreachable`, and its `ask` is the agent's own
//! "ask" only where that puts the call before a person: a deny where the agent would run it.

use futures::future::join_all;
use serde_json::{Value, json};

use crate::common::{FakeGates, TOKEN, fixture};
use crate::hooks::{args, ctx};
use countersign::external::hook::{HookContext, HookOutcome, run_with};

/// What a hook's output tells its agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Said {
    Allow,
    Deny,
    /// The agent's own "ask" (its prompt).
    Ask,
    /// No decision printed: the agent goes on as if there were no hook (where that is its prompt).
    Nothing,
}

/// One agent in one situation, and what its "ask" is when Countersign cannot be reached.
struct Case {
    name: &'static str,
    agent: &'static str,
    stdin: Value,
    attended: bool,
    when_unreachable: Said,
}

fn claude(event: &str, mode: &str) -> Value {
    let mut input = fixture("claude-code/pretooluse-bash.stdin.json");
    input["hook_event_name"] = json!(event);
    input["permission_mode"] = json!(mode);
    input["tool_input"] = json!({"command": "make release", "description": "ship it"});
    if event == "PermissionRequest" {
        input.as_object_mut().unwrap().remove("tool_use_id");
    }
    input
}

fn codex(mode: &str) -> Value {
    let mut input = fixture("codex/permissionrequest-bash.stdin.json");
    input["permission_mode"] = json!(mode);
    input
}

fn gemini() -> Value {
    json!({"session_id": "g1", "cwd": "/w", "hook_event_name": "BeforeTool",
        "tool_name": "run_shell_command", "tool_input": {"command": "make release"},
        "timestamp": "2026-11-30T10:00:00Z"})
}

fn qwen() -> Value {
    json!({"session_id": "q1", "cwd": "/w", "hook_event_name": "PreToolUse",
        "tool_name": "run_shell_command", "tool_input": {"command": "make release"},
        "tool_call_id": "call_1"})
}

fn copilot() -> Value {
    json!({"sessionId": "c1", "cwd": "/w", "toolName": "bash",
        "toolArgs": {"command": "make release"}, "timestamp": 1764496800000_u64})
}

fn case(name: &'static str, agent: &'static str, stdin: Value, attended: bool, when: Said) -> Case {
    Case {
        name,
        agent,
        stdin,
        attended,
        when_unreachable: when,
    }
}

/// Claude runs a call whose `PreToolUse` hook says nothing in `bypassPermissions`; `auto`'s
/// classifier and `dontAsk`'s rules ask nobody; `-p` has nobody to ask. Its dialog, in its
/// terminal, is a person's prompt. Copilot runs an "ask" unasked under `--allow-all-tools`,
/// which its input does not show; Codex asks nobody under `bypassPermissions`.
fn cases() -> Vec<Case> {
    use Said::{Ask, Deny, Nothing};
    let pre = |mode| claude("PreToolUse", mode);
    vec![
        case(
            "claude bypassPermissions -p",
            "claude-code",
            pre("bypassPermissions"),
            false,
            Deny,
        ),
        case(
            "claude bypassPermissions",
            "claude-code",
            pre("bypassPermissions"),
            true,
            Deny,
        ),
        case("claude auto", "claude-code", pre("auto"), true, Deny),
        case("claude dontAsk", "claude-code", pre("dontAsk"), true, Deny),
        case(
            "claude default -p",
            "claude-code",
            pre("default"),
            false,
            Deny,
        ),
        case("claude default", "claude-code", pre("default"), true, Ask),
        case(
            "claude PermissionRequest",
            "claude-code",
            claude("PermissionRequest", "default"),
            true,
            Nothing,
        ),
        case("codex default", "codex", codex("default"), false, Nothing),
        case(
            "codex bypassPermissions",
            "codex",
            codex("bypassPermissions"),
            false,
            Deny,
        ),
        case("gemini", "gemini", gemini(), false, Ask),
        case("qwen", "qwen", qwen(), false, Ask),
        case("copilot", "copilot", copilot(), false, Deny),
    ]
}

/// The decision in a hook's output, and its reason.
fn said(out: &HookOutcome) -> (Said, String) {
    assert!(out.code == 0, "{out:?}");
    if out.stdout.is_empty() {
        return (Said::Nothing, String::new());
    }
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let specific = &v["hookSpecificOutput"];
    let (word, why) = if specific["permissionDecision"].is_string() {
        (
            &specific["permissionDecision"],
            &specific["permissionDecisionReason"],
        )
    } else if specific["decision"]["behavior"].is_string() {
        (
            &specific["decision"]["behavior"],
            &specific["decision"]["message"],
        )
    } else if v["permissionDecision"].is_string() {
        (&v["permissionDecision"], &v["permissionDecisionReason"])
    } else if v["decision"].is_string() {
        (&v["decision"], &v["reason"])
    } else {
        // Codex's `systemMessage`: no decision, a note to the person.
        assert!(v["systemMessage"].is_string(), "{v}");
        return (Said::Nothing, String::new());
    };
    let what = match word.as_str().unwrap() {
        "allow" => Said::Allow,
        "deny" => Said::Deny,
        "ask" => Said::Ask,
        other => panic!("{other}: {v}"),
    };
    (what, why.as_str().unwrap_or_default().to_owned())
}

async fn run(case: &Case, url: &str, extra: &[&str]) -> HookOutcome {
    let mut words = vec![case.agent, "--url", url];
    if !extra.contains(&"--token") {
        words.extend(["--token", TOKEN]);
    }
    words.extend_from_slice(extra);
    let ctx = HookContext {
        agent_attended: case.attended,
        ..ctx()
    };
    run_with(args(&words), case.stdin.to_string().as_bytes(), &ctx).await
}

/// Every case against `url` at once, with `extra` flags.
async fn all(url: &str, extra: &[&str]) -> Vec<(&'static str, Said, String, Said)> {
    let cases = cases();
    let outs = join_all(cases.iter().map(|c| run(c, url, extra))).await;
    cases
        .iter()
        .zip(outs)
        .map(|(case, out)| {
            let (what, why) = said(&out);
            (case.name, what, why, case.when_unreachable)
        })
        .collect()
}

fn error(code: &str) -> String {
    json!({"error": {"code": code, "message": "as Countersign says it"}}).to_string()
}

#[tokio::test]
async fn a_refusal_countersign_sent_is_a_deny_for_every_agent_in_every_mode() {
    let refusals = [
        (429, error("too_many_gates")),
        (401, error("unauthorized")),
        (403, error("forbidden")),
        (500, error("internal")),
        (500, "<html>Internal Server Error</html>".to_owned()),
        (503, error("storage_unavailable")),
        (404, error("not_found")),
        (200, "<html>not the gates API</html>".to_owned()),
    ];
    for (status, body) in refusals {
        let fake = FakeGates::start();
        fake.log.lock().unwrap().opens_answer = Some((status, body.clone()));
        // `--if-unreachable ask` (the default) changes nothing: this is Countersign's answer.
        for (name, what, why, _) in all(&fake.url(), &[]).await {
            assert_eq!(what, Said::Deny, "{status} {body} for {name}");
            assert!(why.contains(&status.to_string()), "{name}: {why}");
        }
    }
}

#[tokio::test]
async fn only_not_reaching_countersign_follows_if_unreachable() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let proxies = [
        (502, "<html>502 Bad Gateway</html>".to_owned()),
        (503, "Service Unavailable".to_owned()),
        (504, String::new()),
        (503, error("shutting_down")),
    ];
    let mut fakes = Vec::new();
    let mut urls = vec![nowhere];
    for (status, body) in proxies {
        let fake = FakeGates::start();
        fake.log.lock().unwrap().opens_answer = Some((status, body));
        urls.push(fake.url());
        fakes.push(fake);
    }
    for url in &urls {
        for (name, what, why, expected) in all(url, &[]).await {
            assert_eq!(what, expected, "{url} for {name}: {why}");
            if what == Said::Deny {
                assert!(why.contains("start Countersign again"), "{name}: {why}");
            }
        }
        for (name, what, why, _) in all(url, &["--if-unreachable", "deny"]).await {
            assert_eq!(what, Said::Deny, "{url} for {name}");
            assert!(why.contains("could not be reached"), "{name}: {why}");
        }
    }
    // No token: Countersign is not asked at all, as if it could not be reached.
    for (name, what, _, expected) in all(&urls[1], &["--token", ""]).await {
        assert_eq!(what, expected, "no token, {name}");
    }
    for fake in &fakes {
        assert!(fake.gates().is_empty());
    }
}

#[tokio::test]
async fn a_card_lost_while_the_hook_waits_is_a_deny() {
    for (status, body) in [(404, error("unknown_approval")), (500, error("internal"))] {
        for card_only in [false, true] {
            let fake = FakeGates::start();
            {
                let mut log = fake.log.lock().unwrap();
                log.polls_answer = Some((status, body.clone()));
                log.card_only = card_only;
            }
            for (name, what, why, _) in all(&fake.url(), &[]).await {
                // Where Claude's dialog may answer beside the card, the PreToolUse hook lets it
                // ask and does not wait: the PermissionRequest hook beside the dialog waits.
                if name == "claude default" && !card_only {
                    assert_eq!(what, Said::Ask, "{name}");
                    continue;
                }
                assert_eq!(what, Said::Deny, "{status}, card only {card_only}: {name}");
                // Beside Claude's dialog a card only Countersign may answer is a deny at once,
                // before any wait (see dialog.rs).
                let said = if name == "claude PermissionRequest" && card_only {
                    "needs Countersign's card"
                } else {
                    "lost"
                };
                assert!(why.contains(said), "{name}: {why}");
            }
        }
    }
}
