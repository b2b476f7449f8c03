//! `countersign approvals …`: the pending inbox, and answering one gate by id or id prefix.
//!
//! The decision route needs the gate's session, so an id is looked up in the inbox first and,
//! when it is no longer pending, in the sessions' logs (so a late answer gets the server's
//! `409 already_resolved` / `410 gone`, told in words).

use std::collections::HashSet;
use std::io::Read;

use serde::Deserialize;
use serde_json::Value;

use super::client::{CliError, Client, typed};
use super::table::{self, Table, clean, clean_within};
use super::{ApprovalsCommand, IdMatch, RuleScopeArg, match_id};
use crate::protocol::{
    AnsweredBy, ApprovalId, ApprovalRequest, Decision, DecisionRequest, ErrorCode, GateKind,
    GateReason, RuleRequest, SessionId,
};
use crate::text::short_id;

/// A gate, as far as answering it goes: from the inbox or from a session's log.
#[derive(Deserialize, Clone, Debug)]
struct GateRef {
    approval_id: ApprovalId,
    session_id: SessionId,
    kind: GateKind,
    tool: String,
    #[serde(default)]
    summary: String,
    #[serde(default)]
    args: Value,
}

impl From<&ApprovalRequest> for GateRef {
    fn from(gate: &ApprovalRequest) -> Self {
        GateRef {
            approval_id: gate.body.approval_id.clone(),
            session_id: gate.body.session_id.clone(),
            kind: gate.body.kind,
            tool: gate.body.tool.clone(),
            summary: summary_text(gate),
            args: gate.body.args.clone(),
        }
    }
}

enum Answer {
    Approve,
    Deny(Option<String>),
    Edit(String),
    AllowAlways {
        scope: RuleScopeArg,
        pattern: Option<String>,
        max_uses: Option<u64>,
        expires_in_secs: Option<u64>,
    },
}

pub async fn run(client: &Client, json: bool, command: ApprovalsCommand) -> Result<(), CliError> {
    let (id, answer) = match command {
        ApprovalsCommand::List => return list(client, json).await,
        ApprovalsCommand::Approve { approval_id } => (approval_id, Answer::Approve),
        ApprovalsCommand::Deny {
            approval_id,
            reason,
        } => (approval_id, Answer::Deny(reason)),
        ApprovalsCommand::Edit { approval_id, edits } => {
            (approval_id, Answer::Edit(read_edits(edits)?))
        }
        ApprovalsCommand::AllowAlways {
            approval_id,
            scope,
            pattern,
            max_uses,
            expires_in_secs,
        } => (
            approval_id,
            Answer::AllowAlways {
                scope,
                pattern,
                max_uses,
                expires_in_secs,
            },
        ),
    };
    decide(client, json, &id, answer).await
}

/// `GET /api/v1/approvals?status=pending`: the raw answer and the gates, oldest first.
async fn pending(client: &Client) -> Result<(Value, Vec<ApprovalRequest>), CliError> {
    let raw = client.get(&["approvals"], &[("status", "pending")]).await?;
    let mut gates: Vec<ApprovalRequest> = typed(raw.clone(), "the pending list")?;
    gates.sort_by_key(|g| g.body.created_at.unix_ms());
    Ok((raw, gates))
}

async fn list(client: &Client, json: bool) -> Result<(), CliError> {
    let (raw, gates) = pending(client).await?;
    if json {
        println!("{}", table::pretty(&raw));
    } else if gates.is_empty() {
        println!("no pending approvals");
    } else {
        println!(
            "{}",
            inbox_table(&gates, crate::protocol::Timestamp::now_ms()).render()
        );
    }
    Ok(())
}

fn inbox_table(gates: &[ApprovalRequest], now: i64) -> Table {
    let mut table = Table::new(&["ID", "SESSION", "KIND", "SUMMARY", "EXPIRES"]);
    for gate in gates {
        table.row(vec![
            short_id(gate.body.approval_id.as_str()),
            short_id(gate.body.session_id.as_str()),
            kind_label(gate),
            clean_within(&summary_text(gate), 64),
            time_left(&gate.body.expires_at, now),
        ]);
    }
    table
}

fn kind_label(gate: &ApprovalRequest) -> String {
    match gate.body.kind {
        GateKind::Tool => format!("tool {}", clean(&gate.body.tool)),
        GateKind::Decision => format!(
            "decision {}",
            gate.body
                .decision_kind
                .unwrap_or(crate::protocol::DecisionKind::Other)
                .as_str()
        ),
        GateKind::Budget => "budget".to_owned(),
        GateKind::External => format!("outside {}", clean(&gate.body.tool)),
    }
}

/// The card's one-line summary (its title when empty), flagged when it is a floor action.
fn summary_text(gate: &ApprovalRequest) -> String {
    let text = if gate.body.summary.trim().is_empty() {
        &gate.body.title
    } else {
        &gate.body.summary
    };
    let floor = match gate.body.reason {
        GateReason::SafetyFloor => "[safety floor] ",
        _ => "",
    };
    clean(&format!("{floor}{text}"))
}

fn time_left(expires_at: &crate::protocol::Timestamp, now: i64) -> String {
    if expires_at.has_passed(now) {
        "expired".to_owned()
    } else {
        table::relative(expires_at, now)
    }
}

async fn decide(client: &Client, json: bool, wanted: &str, answer: Answer) -> Result<(), CliError> {
    let gate = find_gate(client, wanted).await?;
    let body = decision_body(&answer, &gate)?;
    let path = [
        "sessions",
        gate.session_id.as_str(),
        "approvals",
        gate.approval_id.as_str(),
    ];
    let reply = client
        .post(&path, &body)
        .await
        .map_err(|e| explain_resolved(e, &gate))?;
    if json {
        println!("{}", table::pretty(&reply));
    } else {
        println!("{}", done_line(&answer, &gate, &reply));
    }
    Ok(())
}

/// The gate an id (or id prefix) names: pending ones first, then every session's log.
async fn find_gate(client: &Client, wanted: &str) -> Result<GateRef, CliError> {
    let (_, gates) = pending(client).await?;
    let open: Vec<GateRef> = gates.iter().map(GateRef::from).collect();
    if let Some(gate) = pick(&open, wanted)? {
        return Ok(gate);
    }
    let logged = logged_gates(client).await?;
    pick(&logged, wanted)?.ok_or_else(|| {
        CliError::NoMatch(format!(
            "no approval matches `{}` in any session (`countersign approvals list` shows the pending ones)",
            clean(wanted)
        ))
    })
}

fn pick(gates: &[GateRef], wanted: &str) -> Result<Option<GateRef>, CliError> {
    match match_id(gates, |g| g.approval_id.as_str(), wanted)? {
        IdMatch::One(gate) => Ok(Some(gate.clone())),
        IdMatch::None => Ok(None),
        IdMatch::Many(found) => Err(CliError::NoMatch(format!(
            "`{}` matches {} approvals ({}); give more of the id",
            clean(wanted),
            found.len(),
            found
                .iter()
                .map(|g| g.approval_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Every gate any session's log has opened, resolved or not.
async fn logged_gates(client: &Client) -> Result<Vec<GateRef>, CliError> {
    let sessions: Vec<Value> = typed(client.get(&["sessions"], &[]).await?, "the session list")?;
    let mut seen = HashSet::new();
    let mut gates = Vec::new();
    for id in sessions.iter().filter_map(|s| s["id"].as_str()) {
        let snapshot = match client.get(&["sessions", id], &[]).await {
            Ok(snapshot) => snapshot,
            // Deleted since it was listed.
            Err(CliError::Api {
                code: ErrorCode::UnknownSession,
                ..
            }) => continue,
            Err(e) => return Err(e),
        };
        for gate in gates_in(&snapshot) {
            if seen.insert(gate.approval_id.clone()) {
                gates.push(gate);
            }
        }
    }
    Ok(gates)
}

fn gates_in(snapshot: &Value) -> Vec<GateRef> {
    snapshot["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["type"] == "approval_request")
        .filter_map(|e| serde_json::from_value(e.clone()).ok())
        .collect()
}

fn read_edits(edits: String) -> Result<String, CliError> {
    if edits != "-" {
        return Ok(edits);
    }
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| CliError::Usage(format!("cannot read --edits from stdin: {e}")))?;
    Ok(text.trim_end_matches(['\n', '\r']).to_owned())
}

/// Labels decisions sent from here (the audit names the token that sent them).
const CLIENT_ID: &str = "cli";

/// The answer as the decision route reads it (the one body every door sends).
fn decision_body(answer: &Answer, gate: &GateRef) -> Result<DecisionRequest, CliError> {
    Ok(DecisionRequest {
        client_id: Some(CLIENT_ID.to_owned()),
        ..answer_body(answer, gate)?
    })
}

fn answer_body(answer: &Answer, gate: &GateRef) -> Result<DecisionRequest, CliError> {
    Ok(match answer {
        Answer::Approve => DecisionRequest::of("approve"),
        Answer::Deny(reason) => DecisionRequest {
            reason: reason.clone(),
            ..DecisionRequest::of("deny")
        },
        Answer::Edit(text) => DecisionRequest {
            edits: Some(edits_value(gate, text)?),
            ..DecisionRequest::of("edit")
        },
        Answer::AllowAlways {
            scope,
            pattern,
            max_uses,
            expires_in_secs,
        } => DecisionRequest {
            rule: Some(RuleRequest {
                scope: Some(scope.as_str().to_owned()),
                pattern: pattern.clone(),
                expires_in_secs: *expires_in_secs,
                max_uses: *max_uses,
            }),
            ..DecisionRequest::of("allow_always")
        },
    })
}

/// A tool gate takes a JSON object of replacement arguments; a decision takes text.
fn edits_value(gate: &GateRef, text: &str) -> Result<Value, CliError> {
    if !gate.kind.is_our_tool_call() {
        return Ok(Value::String(text.to_owned()));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        _ => Err(CliError::Usage(format!(
            "--edits for a tool gate is the full replacement arguments as a JSON object; this card's are {}",
            clean_within(&gate.args.to_string(), 300)
        ))),
    }
}

fn done_line(answer: &Answer, gate: &GateRef, reply: &Value) -> String {
    let verb = match answer {
        Answer::Approve => "approved",
        Answer::Deny(_) => "denied",
        Answer::Edit(_) => "approved with edits",
        Answer::AllowAlways { .. } => "allowed always",
    };
    let what = if gate.summary.is_empty() {
        clean(&gate.tool)
    } else {
        clean(&gate.summary)
    };
    let mut line = format!("{verb} {}: {what}", short_id(gate.approval_id.as_str()));
    // A routed card that needs several people (`202`, issue 41): counted, it waits.
    if reply["status"] == "counted" {
        let given = reply["approvals"].as_array().map_or(0, Vec::len);
        let quorum = reply["quorum"].as_u64().unwrap_or(0);
        line.push_str(&format!(
            "
your approval counted ({given} of {quorum}): the card waits for the others"
        ));
    }
    if let Answer::Deny(Some(reason)) = answer {
        line.push_str(&format!(" (reason: {})", clean_within(reason, 120)));
    }
    if let (Answer::AllowAlways { scope, .. }, Some(rule)) = (answer, reply["rule_id"].as_str()) {
        line.push_str(&format!(
            "\nrule {} created ({} scope); `countersign rules list` shows it",
            short_id(rule),
            scope.as_str()
        ));
    }
    line
}

/// What `409 already_resolved` / `410 gone` carry about the answer that stands.
#[derive(Deserialize)]
struct ResolutionWords {
    decision: Decision,
    answered_by: AnsweredBy,
    #[serde(default)]
    actor: String,
    resolved_at: crate::protocol::Timestamp,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    login: Option<crate::protocol::LoginRef>,
}

impl ResolutionWords {
    fn describe(&self, now: i64) -> String {
        let what = match self.decision {
            Decision::Timeout => "expired without an answer".to_owned(),
            Decision::Cancelled => "cancelled with its turn".to_owned(),
            d if self.answered_by == AnsweredBy::User && !self.actor.is_empty() => {
                let device = self.login.as_ref().map(|login| login.device.as_str());
                let actor = crate::protocol::Actor::parse(&self.actor).words(device);
                format!("{} {} ({actor})", verb(d), by_whom(self.answered_by))
            }
            d => format!("{} {}", verb(d), by_whom(self.answered_by)),
        };
        let mut text = format!("{what} {}", table::relative(&self.resolved_at, now));
        if let Some(reason) = self.reason.as_deref().filter(|r| !r.trim().is_empty()) {
            text.push_str(&format!(" (reason: {})", clean_within(reason, 120)));
        }
        text
    }
}

fn verb(decision: Decision) -> &'static str {
    match decision {
        Decision::Approve => "approved",
        Decision::Edit => "approved with edits",
        Decision::Deny => "denied",
        Decision::AllowAlways => "allowed always",
        Decision::Timeout => "expired",
        Decision::Cancelled => "cancelled",
    }
}

fn by_whom(answered_by: AnsweredBy) -> &'static str {
    match answered_by {
        AnsweredBy::User => "by a person",
        AnsweredBy::Rule => "by a standing rule",
        AnsweredBy::Timeout => "on timeout",
        AnsweredBy::System => "by the server",
        AnsweredBy::Reviewer => "by the reviewer",
    }
}

/// Rewrites a 409/410 answer's message to say, in words, how the gate was resolved.
fn explain_resolved(err: CliError, gate: &GateRef) -> CliError {
    let CliError::Api {
        status,
        code,
        message,
        body,
    } = err
    else {
        return err;
    };
    let lead = match code {
        ErrorCode::AlreadyResolved => "was already answered",
        ErrorCode::Gone => "is no longer open",
        _ => "",
    };
    let words = body
        .get("resolution")
        .or_else(|| body["error"].get("resolution"))
        .and_then(|r| serde_json::from_value::<ResolutionWords>(r.clone()).ok())
        .map(|r| r.describe(crate::protocol::Timestamp::now_ms()));
    let message = match words {
        Some(words) if !lead.is_empty() => {
            format!(
                "approval {} {lead}: {words}",
                short_id(gate.approval_id.as_str())
            )
        }
        _ => message,
    };
    CliError::Api {
        status,
        code,
        message,
        body,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn gate(kind: GateKind) -> GateRef {
        GateRef {
            approval_id: ApprovalId::from("g1"),
            session_id: SessionId::from("s1"),
            kind,
            tool: "shell".into(),
            summary: String::new(),
            args: json!({"command": "ls"}),
        }
    }

    /// The body sent is the one the route reads, with exactly the fields each answer had
    /// when it was written out by hand: nothing more goes on the wire.
    #[test]
    fn each_answer_is_sent_as_the_decision_body() {
        let tool = gate(GateKind::Tool);
        let cases = [
            (Answer::Approve, json!({"decision": "approve"})),
            (Answer::Deny(None), json!({"decision": "deny"})),
            (
                Answer::Deny(Some("no".into())),
                json!({"decision": "deny", "reason": "no"}),
            ),
            (
                Answer::Edit(r#"{"command":"pwd"}"#.into()),
                json!({"decision": "edit", "edits": {"command": "pwd"}}),
            ),
            (
                Answer::AllowAlways {
                    scope: RuleScopeArg::Workspace,
                    pattern: None,
                    max_uses: None,
                    expires_in_secs: None,
                },
                json!({"decision": "allow_always", "rule": {"scope": "workspace"}}),
            ),
            (
                Answer::AllowAlways {
                    scope: RuleScopeArg::Session,
                    pattern: Some("ls *".into()),
                    max_uses: None,
                    expires_in_secs: None,
                },
                json!({"decision": "allow_always", "rule": {"scope": "session", "pattern": "ls *"}}),
            ),
            (
                Answer::AllowAlways {
                    scope: RuleScopeArg::Session,
                    pattern: None,
                    max_uses: Some(10),
                    expires_in_secs: Some(3600),
                },
                json!({"decision": "allow_always", "rule": {
                    "scope": "session", "max_uses": 10, "expires_in_secs": 3600,
                }}),
            ),
        ];
        for (answer, mut expected) in cases {
            expected["client_id"] = json!(CLIENT_ID);
            let body = decision_body(&answer, &tool)
                .ok()
                .and_then(|b| serde_json::to_value(b).ok());
            assert_eq!(body, Some(expected));
        }
        let decision = gate(GateKind::Decision);
        let edited = answer_body(&Answer::Edit("new plan".into()), &decision).ok();
        assert_eq!(edited.and_then(|b| b.edits), Some(json!("new plan")));
        assert!(answer_body(&Answer::Edit("not json".into()), &tool).is_err());
    }

    /// A 409/410 is told in words by matching on its code, and any other code is left as is.
    #[test]
    fn a_resolved_answer_is_explained_by_its_code() {
        let resolution = json!({"resolution": {
            "decision": "deny", "answered_by": "user", "actor": "browser",
            "resolved_at": "2026-01-01T00:00:00.000Z",
        }});
        let api = |code: ErrorCode| CliError::Api {
            status: 409,
            code,
            message: "as sent".into(),
            body: resolution.clone(),
        };
        let message = |err: CliError| match err {
            CliError::Api { message, .. } => message,
            _ => String::new(),
        };
        let tool = gate(GateKind::Tool);
        let said = message(explain_resolved(api(ErrorCode::AlreadyResolved), &tool));
        assert!(
            said.starts_with(
                "approval g1 was already answered: denied by a person (browser login)"
            ),
            "{said}"
        );
        let said = message(explain_resolved(api(ErrorCode::Gone), &tool));
        assert!(said.contains("is no longer open"), "{said}");
        let other = ErrorCode::Other("brand_new".into());
        assert_eq!(message(explain_resolved(api(other), &tool)), "as sent");
    }

    /// An approval counted toward a routed card's quorum says so, not that the card is done.
    #[test]
    fn a_counted_approval_says_the_card_waits() {
        let tool = gate(GateKind::Tool);
        let reply = serde_json::json!({"status": "counted", "approvals": [{}], "quorum": 2});
        let line = done_line(&Answer::Approve, &tool, &reply);
        assert!(line.contains("your approval counted (1 of 2)"), "{line}");
        let done = done_line(
            &Answer::Approve,
            &tool,
            &serde_json::json!({"decision": "approve"}),
        );
        assert!(!done.contains("counted"), "{done}");
    }
}
