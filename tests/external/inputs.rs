//! Every input an agent's published schema allows is read by its hook, never refused: each
//! payload made from the schemas in `tests/fixtures/external/*/schema/` goes through the hook
//! against a fake Countersign that approves at once. For the event the hook answers, the card
//! shows the call as sent and the agent is told yes (in a shape its own output schema takes,
//! where it ships one); for any other event the hook stays out of the way (exit 0, no card).

use serde_json::{Value, json};

use crate::common::{FakeGates, TOKEN};
use crate::hooks::{args, ctx};
use crate::schemas::{Schema, schemas_in};
use countersign::external::hook::{HookOutcome, run_with};

/// What one agent's hook reads and answers.
struct Agent {
    command: &'static str,
    /// The event field, and the events the hook answers (Copilot's input names none).
    event_field: Option<&'static str>,
    answers: &'static [&'static str],
    /// The tool's name and arguments as the card must show them.
    tool: fn(&Value) -> (Value, Value),
    /// Whether stdout says the call may run.
    allowed: fn(&Value) -> bool,
}

fn snake_tool(input: &Value) -> (Value, Value) {
    (input["tool_name"].clone(), input["tool_input"].clone())
}

fn copilot_tool(input: &Value) -> (Value, Value) {
    let args = match &input["toolArgs"] {
        Value::String(text) => serde_json::from_str(text).unwrap(),
        Value::Null => json!({}),
        other => other.clone(),
    };
    (input["toolName"].clone(), args)
}

fn specific_allow(out: &Value) -> bool {
    out["hookSpecificOutput"]["permissionDecision"] == "allow"
        || out["hookSpecificOutput"]["decision"]["behavior"] == "allow"
}

async fn run(agent: &Agent, url: &str, stdin: &Value) -> HookOutcome {
    let words = [agent.command, "--url", url, "--token", TOKEN];
    run_with(args(&words), stdin.to_string().as_bytes(), &ctx()).await
}

/// Every payload of every schema in `dir` through `agent`'s hook.
async fn each_payload_is_read(agent: &Agent, dir: &str) -> usize {
    let mut tried = 0;
    for schema in schemas_in(dir) {
        if schema.path.contains(".output.") {
            continue;
        }
        for input in schema.instances() {
            read_one(agent, &schema, &input).await;
            tried += 1;
        }
    }
    tried
}

/// One payload through the hook, against a Countersign of its own (payloads made from one
/// schema may share an id the agent would never reuse).
async fn read_one(agent: &Agent, schema: &Schema, input: &Value) {
    let fake = FakeGates::start();
    fake.log.lock().unwrap().resolve_on_open =
        Some(json!({"status": "approved", "decision": "approve"}));
    let out = run(agent, &fake.url(), input).await;
    let what = format!("{} via {}: {input}\n{out:?}", agent.command, schema.path);
    assert_eq!(out.code, 0, "refused: {what}");
    let answered = match agent.event_field {
        Some(field) => agent
            .answers
            .iter()
            .any(|e| input[field].as_str() == Some(e)),
        None => true,
    };
    let gates = fake.gates();
    if !answered {
        assert!(gates.is_empty(), "a card for another event: {what}");
        return;
    }
    let [gate] = gates.as_slice() else {
        panic!("not one card: {what}");
    };
    let (name, tool_input) = (agent.tool)(input);
    assert_eq!(gate.body["tool"]["name"], name, "{what}");
    assert_eq!(gate.body["tool"]["input"], tool_input, "{what}");
    let said: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {what}"));
    assert!((agent.allowed)(&said), "not allowed: {what}");
}

#[tokio::test]
async fn codex_reads_every_input_its_schemas_allow() {
    let codex = Agent {
        command: "codex",
        event_field: Some("hook_event_name"),
        answers: &["PermissionRequest"],
        tool: snake_tool,
        allowed: specific_allow,
    };
    let shipped = each_payload_is_read(&codex, "codex/schema/0.171.0").await;
    let earlier = each_payload_is_read(&codex, "codex/schema/earlier").await;
    assert!(
        shipped > 100 && earlier > 10,
        "{shipped} + {earlier} payloads"
    );
}

#[tokio::test]
async fn codex_answers_in_the_shape_its_output_schema_takes() {
    // Codex reads the answer with `deny_unknown_fields`: what the hook prints must pass the
    // schema Codex ships for it, for an allow, a deny and no decision alike.
    let output = Schema::load("codex/schema/0.171.0/permission-request.command.output.schema.json");
    let input = Schema::load("codex/schema/0.171.0/permission-request.command.input.schema.json");
    let mut stdin = input.instances().remove(0);
    stdin["transcript_path"] = Value::Null;
    for answer in [
        json!({"status": "approved", "decision": "approve"}),
        json!({"status": "denied", "decision": "deny", "reason": "not today"}),
        json!({"status": "approved", "decision": "edit", "updated_input": {"command": "ls"}}),
    ] {
        let fake = FakeGates::start();
        fake.log.lock().unwrap().resolve_on_open = Some(answer.clone());
        let codex = Agent {
            command: "codex",
            event_field: Some("hook_event_name"),
            answers: &["PermissionRequest"],
            tool: snake_tool,
            allowed: |_| true,
        };
        let out = run(&codex, &fake.url(), &stdin).await;
        assert_eq!(out.code, 0, "{out:?}");
        let said: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(output.check(&said), Ok(()), "{answer}: {said}");
    }
}

#[tokio::test]
async fn claude_code_reads_every_input_its_bundle_allows() {
    let claude = Agent {
        command: "claude-code",
        event_field: Some("hook_event_name"),
        answers: &["PreToolUse", "PermissionRequest"],
        tool: snake_tool,
        allowed: specific_allow,
    };
    assert!(each_payload_is_read(&claude, "claude-code/schema").await > 50);
}

#[tokio::test]
async fn gemini_qwen_and_copilot_read_every_input_their_bundles_allow() {
    let gemini = Agent {
        command: "gemini",
        event_field: Some("hook_event_name"),
        answers: &["BeforeTool"],
        tool: snake_tool,
        allowed: |out| out["decision"] == "allow",
    };
    let qwen = Agent {
        command: "qwen",
        event_field: Some("hook_event_name"),
        answers: &["PreToolUse"],
        tool: snake_tool,
        allowed: specific_allow,
    };
    let copilot = Agent {
        command: "copilot",
        event_field: None,
        answers: &[],
        tool: copilot_tool,
        allowed: |out| out["permissionDecision"] == "allow",
    };
    assert!(each_payload_is_read(&gemini, "gemini/schema").await > 5);
    assert!(each_payload_is_read(&qwen, "qwen/schema").await > 5);
    assert!(each_payload_is_read(&copilot, "copilot/schema").await > 5);
}
