//! Every input/output mapping against the captured, documented or source-derived fixtures.

use countersign::external::gates_client::GateState;
use countersign::external::hook::claude_code::{self, ClaudeEvent, ClaudeHookInput};
use countersign::external::hook::codex::{self, CodexHookInput};
use countersign::external::hook::install::{Agent, handler, merge_hook};
use countersign::external::mcp::answers::approval_prompt_text;
use countersign::external::mcp::{ApprovalPromptArgs, RequestApprovalArgs};
use countersign::external::opencode::event::{
    OpencodeEvent, PermissionAsked, Reply, open_gate, parse_event, reply_for,
};
use countersign::external::verdict::Verdict;
use serde_json::{Value, json};

use crate::common::{fixture, fixture_path, fixtures_ending};
use crate::hooks::ctx;

fn allow() -> Verdict {
    Verdict::Allow {
        updated_input: None,
        always: false,
    }
}

fn edit(input: Value) -> Verdict {
    Verdict::Allow {
        updated_input: Some(input),
        always: false,
    }
}

fn always() -> Verdict {
    Verdict::Allow {
        updated_input: None,
        always: true,
    }
}

fn denied(reason: &str) -> Verdict {
    let state: GateState = serde_json::from_value(
        json!({"approval_id": "a", "session_id": "s", "status": "denied", "decision": "deny",
            "reason": reason, "url": "http://x/a/a", "expires_at": "2026-11-30T10:30:00Z"}),
    )
    .unwrap();
    Verdict::from_state(&state)
}

fn claude_input(path: &str) -> ClaudeHookInput {
    serde_json::from_value(fixture(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn every_claude_stdin_fixture_maps_to_a_gate_as_given() {
    for path in fixtures_ending("claude-code", ".stdin.json") {
        let raw = fixture(&path);
        let input = claude_input(&path);
        let event = ClaudeEvent::parse(&input.hook_event_name).unwrap();
        let gate = claude_code::open_gate(&input, &ctx(), 1800);
        assert_eq!(gate.source, "claude-code");
        assert_eq!(gate.external_session, raw["session_id"].as_str().unwrap());
        assert_eq!(gate.cwd, raw["cwd"].as_str().unwrap());
        assert_eq!(gate.tool.name, raw["tool_name"].as_str().unwrap(), "{path}");
        assert_eq!(gate.tool.input, raw["tool_input"], "{path}");
        assert!(gate.capabilities.edit && gate.capabilities.always);
        // PreToolUse keys name the tool use; PermissionRequest keys are a hash of the request.
        // Either way the same input gives the same key, in any process.
        let key = claude_code::key(&input, event);
        assert_eq!(key, claude_code::key(&input, event), "{path}");
        assert_eq!(key.key.len(), 64, "{path}");
        match event {
            ClaudeEvent::PreToolUse => assert!(key.names_one_call, "{path}"),
            ClaudeEvent::PermissionRequest => {
                assert!(raw.get("tool_use_id").is_none(), "{path}");
                assert!(!key.names_one_call, "{path}");
            }
        }
    }
}

#[test]
fn pretooluse_outputs_match_the_fixtures() {
    let input = claude_input("claude-code/pretooluse-bash.stdin.json");
    assert_eq!(
        claude_code::render(ClaudeEvent::PreToolUse, &allow(), &input),
        fixture("claude-code/pretooluse-allow.stdout.json")
    );
    let expected = fixture("claude-code/pretooluse-allow-updatedinput.stdout.json");
    let edited = expected["hookSpecificOutput"]["updatedInput"].clone();
    assert_eq!(
        claude_code::render(ClaudeEvent::PreToolUse, &edit(edited), &input),
        expected
    );
    assert_eq!(
        claude_code::render(ClaudeEvent::PreToolUse, &Verdict::timed_out(1800), &input),
        fixture("claude-code/pretooluse-deny.stdout.json")
    );
}

#[test]
fn permissionrequest_outputs_match_the_fixtures() {
    let bash = claude_input("claude-code/permissionrequest-bash.stdin.json");
    let render = |v: &Verdict, i: &ClaudeHookInput| {
        claude_code::render(ClaudeEvent::PermissionRequest, v, i)
    };
    assert_eq!(
        render(&allow(), &bash),
        fixture("claude-code/permissionrequest-allow.stdout.json")
    );
    assert_eq!(
        render(&edit(json!({"command": "npm run lint"})), &bash),
        fixture("claude-code/permissionrequest-allow-updatedinput.stdout.json")
    );
    // Allow always: allowed, and Claude's own rule suggestion is not echoed back (the rule
    // lives in Countersign, where it can be revoked).
    assert_eq!(
        render(&always(), &bash),
        fixture("claude-code/permissionrequest-allow.stdout.json")
    );
    // The deny fixture's wording ("Denied from Countersign by token:phone: …") is a proposal;
    // the shape is the contract; the message is the person's reason, word for word.
    let mut expected = fixture("claude-code/permissionrequest-deny.stdout.json");
    expected["hookSpecificOutput"]["decision"]["message"] = json!("not on main, please.");
    assert_eq!(render(&denied("not on main, please."), &bash), expected);
}

#[test]
fn always_echoes_only_an_allow_rule_and_never_invents_one() {
    // Claude Code offers a mode change for edits; Allow always in Countersign made a rule for
    // this path, not that, so nothing is echoed (Countersign's rule answers the next one).
    let edit_input = claude_input("claude-code/permissionrequest-edit.stdin.json");
    let out = claude_code::render(ClaudeEvent::PermissionRequest, &always(), &edit_input);
    assert_eq!(
        out,
        fixture("claude-code/permissionrequest-allow.stdout.json")
    );
    let mut bare = edit_input.clone();
    bare.permission_suggestions = None;
    let out = claude_code::render(ClaudeEvent::PermissionRequest, &always(), &bare);
    assert_eq!(
        out,
        fixture("claude-code/permissionrequest-allow.stdout.json")
    );
    let suggestions = vec![
        json!({"type": "setMode", "mode": "acceptEdits", "destination": "session"}),
        json!({"type": "addRules", "rules": [], "behavior": "deny", "destination": "session"}),
        json!({"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "allow",
            "destination": "localSettings"}),
    ];
    assert_eq!(
        claude_code::suggestion(&suggestions),
        Some(suggestions[2].clone())
    );
    assert_eq!(claude_code::suggestion(&suggestions[..2]), None);
}

#[test]
fn every_codex_stdin_fixture_maps_to_a_gate_without_edit() {
    for path in fixtures_ending("codex", ".stdin.json") {
        let raw = fixture(&path);
        let input: CodexHookInput = serde_json::from_value(raw.clone()).unwrap();
        let gate = codex::open_gate(&input, &ctx(), 1800);
        assert_eq!(gate.source, "codex");
        assert_eq!(gate.external_session, raw["session_id"].as_str().unwrap());
        assert_eq!(gate.tool.name, raw["tool_name"].as_str().unwrap());
        assert_eq!(gate.tool.input, raw["tool_input"]);
        assert!(!gate.capabilities.edit, "{path}");
        let key = codex::key(&input);
        assert_eq!(key, codex::key(&input), "{path}");
        assert!(!key.names_one_call, "{path}");
    }
}

#[test]
fn codex_outputs_match_the_fixtures_and_hold_only_accepted_keys() {
    assert_eq!(
        codex::render(&allow()),
        fixture("codex/permissionrequest-allow.stdout.json")
    );
    assert_eq!(
        codex::render(&always()),
        fixture("codex/permissionrequest-allow.stdout.json")
    );
    assert_eq!(
        codex::render(&denied("not during the release freeze.")),
        fixture("codex/permissionrequest-deny.stdout.json")
    );
    // deny_unknown_fields on every level of Codex's wire struct.
    for verdict in [
        allow(),
        always(),
        edit(json!({})),
        denied("x"),
        Verdict::timed_out(5),
    ] {
        let out = codex::render(&verdict);
        let keys = |v: &Value| -> Vec<String> {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(keys(&out), ["hookSpecificOutput"]);
        assert_eq!(
            keys(&out["hookSpecificOutput"]),
            ["decision", "hookEventName"]
        );
        let decision = keys(&out["hookSpecificOutput"]["decision"]);
        assert!(
            decision == ["behavior"] || decision == ["behavior", "message"],
            "{decision:?}"
        );
        if out["hookSpecificOutput"]["decision"]["behavior"] == "deny" {
            assert!(
                !out["hookSpecificOutput"]["decision"]["message"]
                    .as_str()
                    .unwrap()
                    .is_empty()
            );
        }
    }
}

#[test]
fn installer_snippets_match_the_fixtures() {
    let mut codex_file = json!({});
    merge_hook(&mut codex_file, Agent::Codex, handler(Agent::Codex, 1800)).unwrap();
    assert_eq!(codex_file, fixture("codex/hooks.json"));
    let mut claude = json!({});
    merge_hook(
        &mut claude,
        Agent::ClaudeCode,
        handler(Agent::ClaudeCode, 1800),
    )
    .unwrap();
    for event in ["PreToolUse", "PermissionRequest"] {
        let group = &mut claude["hooks"][event][0]["hooks"][0];
        assert_eq!(
            group["statusMessage"],
            "Waiting for approval in Countersign"
        );
        group.as_object_mut().unwrap().remove("statusMessage");
    }
    assert_eq!(claude, fixture("claude-code/settings.hooks.json"));
}

#[test]
fn every_opencode_event_fixture_parses() {
    for path in fixtures_ending("opencode", ".json")
        .into_iter()
        .filter(|p| p.contains("sse-"))
    {
        let raw = fixture(&path);
        let envelope = parse_event(&raw.to_string()).unwrap_or_else(|e| panic!("{path}: {e}"));
        let payload = raw.get("payload").unwrap_or(&raw);
        match (&envelope.event, payload["type"].as_str().unwrap()) {
            (OpencodeEvent::Asked(asked), "permission.asked") => {
                assert_eq!(asked.id, payload["properties"]["id"].as_str().unwrap());
                assert_eq!(
                    asked.session_id,
                    payload["properties"]["sessionID"].as_str().unwrap()
                );
                assert!(!asked.patterns.is_empty());
            }
            (OpencodeEvent::Replied { request_id, reply }, "permission.replied") => {
                assert_eq!(
                    request_id,
                    payload["properties"]["requestID"].as_str().unwrap()
                );
                assert_eq!(reply, payload["properties"]["reply"].as_str().unwrap());
            }
            (OpencodeEvent::Other(kind), other) => assert_eq!(kind, other),
            (event, kind) => panic!("{path}: {kind} parsed as {event:?}"),
        }
        assert_eq!(
            envelope.directory.as_deref(),
            raw.get("directory").and_then(Value::as_str),
            "{path}"
        );
    }
}

#[test]
fn opencode_asks_become_gates() {
    let asked = |path: &str| -> PermissionAsked {
        serde_json::from_value(fixture(path)["properties"].clone()).unwrap()
    };
    let bash = open_gate(
        &asked("opencode/sse-permission-asked-bash.json"),
        "/p",
        1800,
    );
    assert_eq!(bash.source, "opencode");
    assert_eq!(bash.external_session, "ses_dd282ea01ffecCV92BJtBUCgfk");
    assert_eq!(bash.cwd, "/p");
    assert_eq!(bash.tool.name, "bash");
    assert_eq!(
        bash.tool.input,
        json!({"command": "touch /tmp/oc-run/proj/made-by-bash.txt"})
    );
    assert!(!bash.capabilities.edit && bash.capabilities.always);
    let reason = bash.reason.unwrap();
    assert!(reason.contains("`touch *`"), "{reason}");

    let edit = open_gate(
        &asked("opencode/sse-permission-asked-edit.json"),
        "/p",
        1800,
    );
    assert_eq!(edit.tool.name, "edit");
    assert!(
        edit.tool.input["diff"]
            .as_str()
            .unwrap()
            .contains("+hello world")
    );

    let listed: Vec<PermissionAsked> =
        serde_json::from_value(fixture("opencode/get-permission-list.response.json")).unwrap();
    assert_eq!(
        listed,
        vec![asked("opencode/sse-permission-asked-bash.json")]
    );
}

#[test]
fn opencode_replies_match_the_captured_requests() {
    let as_json = |r: Reply| serde_json::to_value(r).unwrap();
    assert_eq!(
        as_json(reply_for(&allow())),
        fixture("opencode/post-permission-reply.once.request.json")
    );
    // Allow always answers `once`: Countersign's rule answers the next like it.
    assert_eq!(
        as_json(reply_for(&always())),
        fixture("opencode/post-permission-reply.once.request.json")
    );
    assert_eq!(
        as_json(reply_for(&Verdict::Deny {
            message: "Not now - use a new file instead".into()
        })),
        fixture("opencode/post-permission-reply.reject.request.json")
    );
    assert_eq!(reply_for(&edit(json!({}))).reply, "reject");
}

#[test]
fn mcp_arguments_and_results_match_the_fixtures() {
    let args: ApprovalPromptArgs = serde_json::from_value(fixture(
        "claude-code/permission-prompt-tool.call-arguments.json",
    ))
    .unwrap();
    assert_eq!(args.tool_use_id.as_deref(), Some("toolu_01ABC123"));
    let text_of = |path: &str| -> Value {
        serde_json::from_str(fixture(path)["content"][0]["text"].as_str().unwrap()).unwrap()
    };
    let allowed: Value =
        serde_json::from_str(&approval_prompt_text(&allow(), &args.input)).unwrap();
    assert_eq!(
        allowed,
        text_of("claude-code/permission-prompt-tool.result-allow.json")
    );
    let denied_text: Value =
        serde_json::from_str(&approval_prompt_text(&denied("no"), &args.input)).unwrap();
    let expected = text_of("claude-code/permission-prompt-tool.result-deny.json");
    assert_eq!(denied_text["behavior"], expected["behavior"]);
    assert!(denied_text["message"].is_string());

    // The real wire transcript's tool calls parse as our arguments.
    let transcript = std::fs::read_to_string(fixture_path("mcp/stdio-transcript.jsonl")).unwrap();
    let mut calls = 0;
    for line in transcript.lines() {
        let msg = &serde_json::from_str::<Value>(line).unwrap()["msg"];
        if msg["method"] != "tools/call" {
            continue;
        }
        let arguments = msg["params"]["arguments"].clone();
        match msg["params"]["name"].as_str().unwrap() {
            "approval_prompt" => {
                serde_json::from_value::<ApprovalPromptArgs>(arguments).unwrap();
            }
            "request_approval" => {
                serde_json::from_value::<RequestApprovalArgs>(arguments).unwrap();
            }
            other => panic!("unknown tool {other}"),
        }
        calls += 1;
    }
    assert_eq!(calls, 2);
}
