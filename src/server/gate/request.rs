//! Builds what an approval card shows: title, one-line summary, proposal (rendered and
//! sanitized on the server), unified diff for file edits, digest, deadline, allowed answers.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use similar::TextDiff;

use crate::protocol::{
    ApprovalRequestBody, Decision, GateKind, GateReason, Mode, RuleSuggestion, TimeoutOutcome,
    Timestamp, ToolClass,
};
use crate::server::agent::provider::ToolCallRequest;
use crate::server::agent::tools;
use crate::server::config::DecisionTimeout;
use crate::server::gate::rules;
use crate::server::markdown;

/// The decision kinds a checkpoint may name; anything else is shown as `other`.
pub const DECISION_KINDS: [&str; 6] = [
    "target_column",
    "prep_plan",
    "model_shortlist",
    "expensive_run",
    "plan",
    "other",
];

/// A `request_approval` call's arguments, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub kind: String,
    pub title: String,
    pub proposal: String,
}

/// Validates `request_approval {kind, title, proposal, context?}`.
pub fn parse_checkpoint(args: &Value) -> Result<Checkpoint, String> {
    let obj = args
        .as_object()
        .ok_or("request_approval takes an object {kind, title, proposal, context?}")?;
    if let Some(unknown) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "kind" | "title" | "proposal" | "context"))
    {
        return Err(format!("request_approval: unknown field `{unknown}`"));
    }
    let text = |k: &str| {
        obj.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or("")
    };
    let title = text("title");
    if title.is_empty() {
        return Err("request_approval: `title` must be a non-empty string".into());
    }
    let kind = text("kind");
    // `plan` cards come only from `exit_plan`: approving one leaves plan mode, which a
    // checkpoint must not be able to do.
    let kind = if DECISION_KINDS.contains(&kind) && kind != "plan" {
        kind
    } else {
        "other"
    };
    let mut proposal = text("proposal").to_owned();
    let context = text("context");
    if !context.is_empty() {
        proposal.push_str("\n\n");
        proposal.push_str(context);
    }
    Ok(Checkpoint {
        kind: kind.to_owned(),
        title: title.to_owned(),
        proposal,
    })
}

/// JSON with object keys sorted at every level: the input of a digest.
pub fn canonical_json(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = serde_json::Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&map[k]));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string(&sorted(value)).unwrap_or_default()
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Digest of a tool gate: sha256 of canonical `{tool, args}`.
pub fn call_digest(tool: &str, args: &Value) -> String {
    sha256_hex(&canonical_json(
        &serde_json::json!({ "tool": tool, "args": args }),
    ))
}

/// Digest of a decision gate: sha256 of its proposal.
pub fn proposal_digest(proposal: &str) -> String {
    sha256_hex(proposal)
}

fn kind_label(tool: &str, class: ToolClass) -> &'static str {
    match (tool, class) {
        ("write_file", _) => "Write file",
        ("edit_file", _) => "Edit file",
        ("shell", _) => "Shell",
        (_, ToolClass::Config) => "Config",
        (_, ToolClass::Exec) => "Command",
        (_, ToolClass::Edit) => "File change",
        _ => "Tool",
    }
}

fn line_count(text: &str) -> usize {
    text.lines().count().max(usize::from(!text.is_empty()))
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The largest file a card diffs; above it the card says so instead of reading the file.
pub const MAX_DIFF_BYTES: u64 = 1024 * 1024;

/// What the file a file tool names holds now (read once per card, capped).
fn file_now(tool: &str, args: &Value, workspace: &Path) -> tools::FileNow {
    match (tool, args.get("path").and_then(Value::as_str)) {
        ("write_file" | "edit_file", Some(path)) => {
            tools::current_file(workspace, path, MAX_DIFF_BYTES)
        }
        _ => tools::FileNow::Missing,
    }
}

/// The text a file would have after the call, and the text it has now.
fn before_after(
    tool: &str,
    args: &Value,
    now: &tools::FileNow,
) -> Option<(String, String, String)> {
    let shown = tools::subject(tool, args)?;
    let current = match now {
        tools::FileNow::Text(text) => Some(text.clone()),
        tools::FileNow::Missing => None,
        tools::FileNow::TooLarge(_) => return None,
    };
    match tool {
        "write_file" => {
            let content = args.get("content")?.as_str()?.to_owned();
            Some((shown, current.unwrap_or_default(), content))
        }
        "edit_file" => {
            let old = args.get("old")?.as_str()?;
            let new = args.get("new")?.as_str()?;
            let before = current?;
            (!old.is_empty() && before.contains(old)).then(|| {
                let after = before.replacen(old, new, 1);
                (shown, before, after)
            })
        }
        _ => None,
    }
}

/// A unified diff of what a file tool would change (none for a file too large to diff).
fn diff_of(tool: &str, args: &Value, now: &tools::FileNow) -> Option<String> {
    let (shown, before, after) = before_after(tool, args, now)?;
    let diff = TextDiff::from_lines(&before, &after);
    Some(
        diff.unified_diff()
            .context_radius(3)
            .header(&format!("a/{shown}"), &format!("b/{shown}"))
            .to_string(),
    )
}

/// A unified diff of what a file tool would change. Blocking (reads the file).
#[cfg(test)]
pub fn diff(tool: &str, args: &Value, workspace: &Path) -> Option<String> {
    diff_of(tool, args, &file_now(tool, args, workspace))
}

/// One line saying what will happen. Blocking (may read the file).
#[cfg(test)]
pub fn summary(tool: &str, args: &Value, workspace: &Path) -> String {
    summary_of(tool, args, &file_now(tool, args, workspace))
}

fn size_words(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// One line saying what will happen: `write_file notes.md (1 line, new file)`.
fn summary_of(tool: &str, args: &Value, now: &tools::FileNow) -> String {
    let subject = tools::subject(tool, args).unwrap_or_default();
    match tool {
        "shell" => format!("shell: {subject}"),
        "write_file" => {
            let content = args.get("content").and_then(Value::as_str).unwrap_or("");
            let lines = plural(line_count(content), "line");
            match now {
                tools::FileNow::Text(old) => format!(
                    "write_file {subject} ({lines}, replaces {})",
                    plural(line_count(old), "line")
                ),
                tools::FileNow::TooLarge(bytes) => format!(
                    "write_file {subject} ({lines}, replaces a {} file too large to diff)",
                    size_words(*bytes)
                ),
                tools::FileNow::Missing => format!("write_file {subject} ({lines}, new file)"),
            }
        }
        "edit_file" => {
            let old = args.get("old").and_then(Value::as_str).unwrap_or("");
            let new = args.get("new").and_then(Value::as_str).unwrap_or("");
            format!(
                "edit_file {subject} (replace {} with {})",
                plural(line_count(old), "line"),
                plural(line_count(new), "line")
            )
        }
        "config_set" => {
            let key = args.get("key").and_then(Value::as_str).unwrap_or("");
            let value = args.get("value").map(Value::to_string).unwrap_or_default();
            format!("config_set {key} = {value}")
        }
        other => format!("{other} {subject}").trim().to_owned(),
    }
}

/// Everything that does not depend on the gate kind.
pub struct Common {
    pub approval_id: String,
    pub session_id: String,
    pub reason: GateReason,
    pub reason_detail: String,
    pub created_at: Timestamp,
    pub timeout: Duration,
}

fn times(common: &Common) -> (Timestamp, Timestamp) {
    let timeout_ms = i64::try_from(common.timeout.as_millis()).unwrap_or(i64::MAX);
    (
        common.created_at.clone(),
        common.created_at.plus_ms(timeout_ms),
    )
}

/// The card for a gated tool call.
/// `approved_before`: how many matching calls were approved by hand in this session.
/// Blocking: it reads the file a file tool would change (capped at `MAX_DIFF_BYTES`).
pub fn tool_gate(
    common: Common,
    call: &ToolCallRequest,
    class: ToolClass,
    workspace: &Path,
    approved_before: u32,
) -> ApprovalRequestBody {
    let floor = common.reason == GateReason::SafetyFloor;
    let mut allowed = vec![Decision::Approve, Decision::Edit, Decision::Deny];
    let suggested_rule = if floor {
        None
    } else {
        rules::default_pattern(&call.name, &call.args).map(|pattern| RuleSuggestion {
            tool: call.name.clone(),
            pattern,
            approved_before,
        })
    };
    if suggested_rule.is_some() {
        allowed.push(Decision::AllowAlways);
    }
    let (created_at, expires_at) = times(&common);
    let now = file_now(&call.name, &call.args, workspace);
    ApprovalRequestBody {
        approval_id: common.approval_id,
        session_id: common.session_id,
        call_id: call.id.clone(),
        kind: GateKind::Tool,
        tool: call.name.clone(),
        class,
        args: call.args.clone(),
        decision_kind: None,
        title: kind_label(&call.name, class).to_owned(),
        summary: summary_of(&call.name, &call.args, &now),
        proposal_md: String::new(),
        proposal_html: String::new(),
        diff: diff_of(&call.name, &call.args, &now),
        reason: common.reason,
        reason_detail: common.reason_detail,
        allowed_decisions: allowed,
        digest: call_digest(&call.name, &call.args),
        created_at,
        expires_at,
        timeout_outcome: TimeoutOutcome::Deny,
        suggested_rule,
        execution_mode: None,
    }
}

/// A decision card: the agent puts a proposal to the person (checkpoint or plan).
pub fn decision_card(
    common: Common,
    call: &ToolCallRequest,
    checkpoint: &Checkpoint,
    summary: String,
    timeout_outcome: TimeoutOutcome,
    execution_mode: Option<Mode>,
) -> ApprovalRequestBody {
    let (created_at, expires_at) = times(&common);
    ApprovalRequestBody {
        approval_id: common.approval_id,
        session_id: common.session_id,
        call_id: call.id.clone(),
        kind: GateKind::Decision,
        tool: call.name.clone(),
        class: ToolClass::Decision,
        args: call.args.clone(),
        decision_kind: Some(checkpoint.kind.clone()),
        title: checkpoint.title.clone(),
        summary,
        proposal_html: markdown::render(&checkpoint.proposal),
        proposal_md: checkpoint.proposal.clone(),
        diff: None,
        reason: common.reason,
        reason_detail: common.reason_detail,
        allowed_decisions: vec![Decision::Approve, Decision::Edit, Decision::Deny],
        digest: proposal_digest(&checkpoint.proposal),
        created_at,
        expires_at,
        timeout_outcome,
        suggested_rule: None,
        execution_mode,
    }
}

/// The card for an agent checkpoint (`request_approval`).
pub fn decision_gate(
    common: Common,
    call: &ToolCallRequest,
    checkpoint: &Checkpoint,
    on_timeout: DecisionTimeout,
) -> ApprovalRequestBody {
    let summary = format!(
        "Decision ({}): {}",
        checkpoint.kind.replace('_', " "),
        checkpoint.title
    );
    let timeout_outcome = match on_timeout {
        DecisionTimeout::ProceedUnapproved => TimeoutOutcome::ProceedUnapproved,
        DecisionTimeout::Deny => TimeoutOutcome::Deny,
    };
    decision_card(common, call, checkpoint, summary, timeout_outcome, None)
}

/// The card for leaving plan mode (`exit_plan`): the plan, and the mode it would run in. An
/// unanswered plan keeps plan mode (there is nothing to proceed with unapproved).
pub fn plan_gate(
    common: Common,
    call: &ToolCallRequest,
    plan: &str,
    default_mode: Mode,
) -> ApprovalRequestBody {
    let checkpoint = Checkpoint {
        kind: "plan".into(),
        title: "Leave plan mode and carry out this plan".into(),
        proposal: plan.to_owned(),
    };
    let summary = format!("Plan: execute in {} mode", default_mode.label());
    decision_card(
        common,
        call,
        &checkpoint,
        summary,
        TimeoutOutcome::Deny,
        Some(default_mode),
    )
}

/// Validates `exit_plan {plan}`.
pub fn parse_plan(args: &Value) -> Result<String, String> {
    let obj = args.as_object().ok_or("exit_plan takes an object {plan}")?;
    if let Some(unknown) = obj.keys().find(|k| k.as_str() != "plan") {
        return Err(format!("exit_plan: unknown field `{unknown}`"));
    }
    let plan = obj
        .get("plan")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or("");
    if plan.is_empty() {
        return Err("exit_plan: `plan` must be a non-empty string".into());
    }
    Ok(plan.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let a = json!({"b": 1, "a": {"d": [1, {"z": 0, "y": 1}], "c": 2}});
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"c":2,"d":[1,{"y":1,"z":0}]},"b":1}"#
        );
        assert_eq!(
            call_digest("t", &json!({"x": 1, "y": 2})),
            call_digest("t", &json!({"y": 2, "x": 1}))
        );
        assert_ne!(
            call_digest("t", &json!({"x": 1})),
            call_digest("t", &json!({"x": 2}))
        );
    }

    #[test]
    fn summaries_and_diffs_describe_the_change() {
        let ws = tempfile::tempdir().unwrap();
        let args = json!({"path": "notes.md", "content": "hello"});
        assert_eq!(
            summary("write_file", &args, ws.path()),
            "write_file notes.md (1 line, new file)"
        );
        let d = diff("write_file", &args, ws.path()).unwrap();
        assert!(d.contains("+++ b/notes.md") && d.contains("+hello"), "{d}");
        std::fs::write(ws.path().join("notes.md"), "a\nb\n").unwrap();
        let edit = json!({"path": "notes.md", "old": "b", "new": "c"});
        let d = diff("edit_file", &edit, ws.path()).unwrap();
        assert!(d.contains("-b") && d.contains("+c"), "{d}");
        assert_eq!(
            summary(
                "write_file",
                &json!({"path": "notes.md", "content": "x\ny\nz"}),
                ws.path()
            ),
            "write_file notes.md (3 lines, replaces 2 lines)"
        );
        assert_eq!(
            summary("shell", &json!({"command": "ls"}), ws.path()),
            "shell: ls"
        );
    }

    #[test]
    fn a_file_too_large_to_diff_is_not_read_and_the_card_says_so() {
        let ws = tempfile::tempdir().unwrap();
        let big = vec![b'x'; (MAX_DIFF_BYTES + 10) as usize];
        std::fs::write(ws.path().join("big.log"), &big).unwrap();
        let write = json!({"path": "big.log", "content": "small"});
        assert_eq!(diff("write_file", &write, ws.path()), None);
        assert_eq!(
            summary("write_file", &write, ws.path()),
            "write_file big.log (1 line, replaces a 1.0 MiB file too large to diff)"
        );
        let edit = json!({"path": "big.log", "old": "x", "new": "y"});
        assert_eq!(diff("edit_file", &edit, ws.path()), None);
        assert_eq!(
            tools::current_file(ws.path(), "big.log", 16),
            tools::FileNow::TooLarge(MAX_DIFF_BYTES + 10)
        );
        std::fs::write(ws.path().join("small.txt"), "ok").unwrap();
        assert_eq!(
            tools::current_file(ws.path(), "small.txt", 16),
            tools::FileNow::Text("ok".into())
        );
    }

    #[test]
    fn checkpoints_are_validated() {
        let c = parse_checkpoint(
            &json!({"kind": "prep_plan", "title": "Drop nulls", "proposal": "**x**"}),
        )
        .unwrap();
        assert_eq!(c.kind, "prep_plan");
        let c = parse_checkpoint(&json!({"kind": "weird", "title": "T", "proposal": ""})).unwrap();
        assert_eq!(c.kind, "other");
        let c = parse_checkpoint(&json!({"kind": "plan", "title": "T", "proposal": ""})).unwrap();
        assert_eq!(c.kind, "other", "only exit_plan makes a plan card");
        assert!(parse_checkpoint(&json!({"kind": "plan", "title": " ", "proposal": ""})).is_err());
        assert!(parse_checkpoint(&json!({"title": "T", "bogus": 1})).is_err());
        assert!(parse_checkpoint(&json!("x")).is_err());
    }
}
