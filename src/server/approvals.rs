//! Deciding gates, listing pending ones, and the standing rules: the core operations behind
//! `POST …/approvals/{aid}`, `GET /api/v1/approvals`, `GET/DELETE /api/v1/rules` and the UI's
//! server functions.
//!
//! **Invariant:** every check runs before the compare-and-set, and a failed check changes
//! nothing: the gate stays pending.

use serde::Deserialize;
use serde_json::Value;

use super::agent::tools;
use super::core::Core;
use super::error::ApiError;
use super::gate::rules;
use super::principal::{Principal, actors};
use super::store::{Commit, GateChange, NewEvent, StoreError};
use crate::protocol::{
    AnsweredBy, ApprovalRequest, Decision, EventBody, GateKind, Resolution, Rule, RuleScope,
    Timestamp,
};

/// The body of `POST /api/v1/sessions/{sid}/approvals/{aid}`.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    pub decision: Option<String>,
    pub digest: Option<String>,
    pub edits: Option<Value>,
    pub reason: Option<String>,
    pub rule: Option<RuleRequest>,
    /// The answering browser tab (optional), so the card can say "you" or "another tab".
    pub client_id: Option<String>,
    /// For a plan card: the mode to leave plan mode for (default: the card's).
    pub execution_mode: Option<String>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RuleRequest {
    pub scope: Option<String>,
    pub pattern: Option<String>,
    /// The rule stops applying this many seconds after it is created (default: never).
    pub expires_in_secs: Option<u64>,
}

const MAX_REASON_CHARS: usize = 2000;

fn is_blank(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// Fail closed: an unreadable deadline has passed.
fn expired(request: &ApprovalRequest) -> bool {
    request.body.expires_at.has_passed(Timestamp::now_ms())
}

impl Core {
    /// Checks `edits` exactly as the agent's own arguments are checked.
    fn check_edits(
        &self,
        request: &ApprovalRequest,
        edits: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let edits = edits
            .filter(|e| !is_blank(e))
            .ok_or(ApiError::EditsRequired)?;
        match request.body.kind {
            GateKind::Decision => match edits {
                Value::String(text) => Ok(Value::String(text.trim().to_owned())),
                _ => Err(ApiError::InvalidEdits(
                    "a decision's edit is the revised proposal, as text".into(),
                )),
            },
            GateKind::Tool if request.body.tool == super::agent::CONFIG_TOOL => {
                let (key, value) =
                    super::agent::parse_config_set(edits).map_err(ApiError::InvalidEdits)?;
                match self.check_config_change(&key, &value) {
                    Ok(()) => Ok(edits.clone()),
                    Err(ApiError::ProtectedKey(why)) => Err(ApiError::NotAllowed(why)),
                    Err(other) => Err(ApiError::InvalidEdits(other.to_string())),
                }
            }
            GateKind::Tool => {
                if !edits.is_object() {
                    return Err(ApiError::InvalidEdits(
                        "edits must be an object of replacement arguments".into(),
                    ));
                }
                tools::validate(&request.body.tool, edits, &self.workspace)
                    .map_err(|e| ApiError::InvalidEdits(e.to_string()))?;
                // An edit may not turn an ordinary card into a floor action the person was
                // never shown as one: the floor gets its own card.
                if request.body.reason != crate::protocol::GateReason::SafetyFloor
                    && let Some(floor) = self.config().floor.check(&request.body.tool, edits)
                {
                    return Err(ApiError::NotAllowed(format!(
                        "the edited call {floor}, which is on the safety floor; deny this card and ask the agent instead"
                    )));
                }
                Ok(edits.clone())
            }
            GateKind::Budget => Err(ApiError::NotAllowed(
                "a budget gate cannot be edited".into(),
            )),
        }
    }

    fn new_rule(
        &self,
        request: &ApprovalRequest,
        wanted: Option<&RuleRequest>,
    ) -> Result<Rule, ApiError> {
        let suggested = request.body.suggested_rule.as_ref().ok_or_else(|| {
            ApiError::NotAllowed("Allow always is not offered for this gate".into())
        })?;
        let scope = match wanted.and_then(|r| r.scope.as_deref()) {
            None | Some("session") => RuleScope::Session,
            Some("workspace") => RuleScope::Workspace,
            Some(other) => {
                return Err(ApiError::InvalidDecision(format!(
                    "rule scope must be `session` or `workspace`, not `{other}`"
                )));
            }
        };
        let pattern = wanted
            .and_then(|r| r.pattern.as_deref())
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .unwrap_or(&suggested.pattern)
            .to_owned();
        rules::validate_pattern(&request.body.tool, &pattern).map_err(ApiError::InvalidDecision)?;
        let expires_at = match wanted.and_then(|r| r.expires_in_secs) {
            None => None,
            Some(0) => {
                return Err(ApiError::InvalidDecision(
                    "expires_in_secs must be at least 1".into(),
                ));
            }
            Some(secs) => {
                let secs = i64::try_from(secs.min(10 * 365 * 86_400)).unwrap_or(i64::MAX);
                Some(Timestamp::now().plus_ms(secs * 1000))
            }
        };
        Ok(Rule {
            id: uuid::Uuid::new_v4().to_string(),
            tool: request.body.tool.clone(),
            pattern,
            scope,
            session_id: (scope == RuleScope::Session).then(|| request.body.session_id.clone()),
            created_at: Timestamp::now(),
            created_by_approval: Some(request.body.approval_id.clone()),
            uses: 0,
            last_used_at: None,
            expires_at,
        })
    }

    /// Resolves a gate with the server's own answer (timeout, cancel) unless someone already
    /// did; either way returns the resolution that stands, and wakes the waiting turn.
    pub async fn resolve_by_server(
        &self,
        session_id: &str,
        request: &ApprovalRequest,
        decision: Decision,
        answered_by: AnsweredBy,
    ) -> Result<Resolution, StoreError> {
        // The server answers only for the deadline and for a cancel.
        let actor = match answered_by {
            AnsweredBy::Timeout => actors::TIMEOUT,
            _ => actors::CANCEL,
        };
        let resolution = Resolution::plain(
            &request.body.approval_id,
            decision,
            answered_by,
            actor,
            Timestamp::now(),
        );
        match self
            .commit_resolution(session_id, request, resolution, None)
            .await
        {
            Ok(r) => Ok(r),
            Err(StoreError::AlreadyResolved(winner)) => Ok(*winner),
            Err(other) => Err(other),
        }
    }

    async fn commit_resolution(
        &self,
        session_id: &str,
        request: &ApprovalRequest,
        resolution: Resolution,
        new_rule: Option<Rule>,
    ) -> Result<Resolution, StoreError> {
        let event = NewEvent::new(
            Some(&request.turn_id),
            EventBody::ApprovalResolved(resolution.clone()),
        );
        let commit = Commit {
            gate: Some(GateChange::Resolve {
                resolution: resolution.clone(),
                new_rule,
            }),
            ..Commit::default()
        };
        self.hub
            .commit(session_id, vec![event], commit, || ())
            .await?;
        self.hub.wake(session_id, resolution.clone());
        Ok(resolution)
    }

    /// A person's answer to a gate. Exactly one answer per gate succeeds.
    pub async fn decide(
        &self,
        session_id: &str,
        approval_id: &str,
        body: DecisionRequest,
        who: &Principal,
    ) -> Result<Resolution, ApiError> {
        let session = super::core::parse_session_id(session_id)?;
        let decision = body
            .decision
            .as_deref()
            .and_then(Decision::parse_answer)
            .ok_or_else(|| {
                ApiError::InvalidDecision(
                    "decision must be one of approve, edit, deny, allow_always".into(),
                )
            })?;
        // The gate is looked up first (one read on the hot path); the session is checked only
        // to tell an unknown session from an unknown approval.
        let Some(gate) = self.hub.store().get_gate(&session, approval_id).await? else {
            self.session_row(session_id).await?;
            return Err(ApiError::UnknownApproval(
                approval_id.chars().take(64).collect(),
            ));
        };
        if let Some(resolution) = gate.resolution {
            return Err(ApiError::for_resolved(resolution));
        }
        let request = gate.request;
        // A cancel that was already answered wins over any later decision.
        if self.hub.is_cancelling(&session, &request.turn_id) {
            let resolution = self
                .resolve_by_server(&session, &request, Decision::Cancelled, AnsweredBy::System)
                .await?;
            return Err(ApiError::for_resolved(resolution));
        }
        if expired(&request) {
            let resolution = self
                .resolve_by_server(&session, &request, Decision::Timeout, AnsweredBy::Timeout)
                .await?;
            return Err(ApiError::for_resolved(resolution));
        }
        if body
            .digest
            .as_deref()
            .is_some_and(|d| d != request.body.digest)
        {
            return Err(ApiError::StaleDigest);
        }
        if !request.body.allowed_decisions.contains(&decision) {
            return Err(ApiError::NotAllowed(format!(
                "`{}` is not offered for this gate (allowed: {})",
                decision.as_str(),
                request
                    .body
                    .allowed_decisions
                    .iter()
                    .map(|d| d.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let edits = match decision {
            Decision::Edit => Some(self.check_edits(&request, body.edits.as_ref())?),
            _ => None,
        };
        let new_rule = match decision {
            Decision::AllowAlways => Some(self.new_rule(&request, body.rule.as_ref())?),
            _ => None,
        };
        let execution_mode = match body.execution_mode.as_deref() {
            None => request.body.execution_mode,
            Some(_) if request.body.decision_kind.as_deref() != Some("plan") => {
                return Err(ApiError::InvalidDecision(
                    "execution_mode applies only to a plan card".into(),
                ));
            }
            Some(raw) => match super::core::parse_mode(raw)? {
                crate::protocol::Mode::Plan => {
                    return Err(ApiError::InvalidDecision(
                        "a plan runs in plan, ask, auto_edit or yolo — pick one other than plan"
                            .into(),
                    ));
                }
                mode => Some(mode),
            },
        };
        let reason = body
            .reason
            .map(|r| r.trim().chars().take(MAX_REASON_CHARS).collect::<String>())
            .filter(|r| !r.is_empty());
        let resolution = Resolution {
            approval_id: request.body.approval_id.clone(),
            decision,
            answered_by: AnsweredBy::User,
            actor: who.actor(),
            resolved_at: Timestamp::now(),
            reason,
            edits,
            rule_id: new_rule.as_ref().map(|r| r.id.clone()),
            client_id: body.client_id.map(|c| c.chars().take(64).collect()),
            execution_mode: execution_mode.filter(|_| decision.lets_it_run()),
        };
        Ok(self
            .commit_resolution(&session, &request, resolution, new_rule)
            .await?)
    }

    /// Pending gates across all sessions, oldest first (the inbox).
    pub async fn pending_approvals(&self) -> Result<Vec<ApprovalRequest>, ApiError> {
        Ok(self.hub.store().pending_gates(None).await?)
    }

    pub async fn list_rules(&self) -> Result<Vec<Rule>, ApiError> {
        Ok(self.hub.store().list_rules().await?)
    }

    pub async fn revoke_rule(&self, rule_id: &str, actor: &str) -> Result<(), ApiError> {
        if self.hub.store().revoke_rule(rule_id, actor).await? {
            Ok(())
        } else {
            Err(ApiError::UnknownRule(rule_id.chars().take(64).collect()))
        }
    }

    /// Audit entries after `after` (at most 500), optionally of one action or subject.
    pub async fn audit(
        &self,
        after: u64,
        action: Option<&str>,
        subject: Option<&str>,
    ) -> Result<Vec<crate::protocol::AuditEntry>, ApiError> {
        Ok(self
            .hub
            .store()
            .audit_after(after, 500, action, subject)
            .await?)
    }

    /// Walks the whole audit chain.
    pub async fn verify_audit(&self) -> Result<crate::protocol::AuditVerdict, ApiError> {
        let mut verifier = super::audit::Verifier::new();
        let mut after = 0;
        loop {
            let page = self
                .hub
                .store()
                .audit_after(after, 1000, None, None)
                .await?;
            for entry in &page {
                verifier.check(entry);
            }
            match page.last() {
                Some(last) if page.len() == 1000 => after = last.n,
                _ => return Ok(verifier.verdict()),
            }
        }
    }

    /// A standing rule in force that covers this call in this session, if any.
    pub async fn matching_rule(
        &self,
        session_id: &str,
        tool: &str,
        args: &Value,
    ) -> Result<Option<Rule>, StoreError> {
        let rules = self.hub.store().list_rules().await?;
        Ok(rules.into_iter().find(|rule| {
            let in_scope = match rule.scope {
                RuleScope::Workspace => true,
                RuleScope::Session => rule.session_id.as_deref() == Some(session_id),
            };
            in_scope && rules::covers(rule, tool, args)
        }))
    }
}
