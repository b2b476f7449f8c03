//! Deciding gates, listing pending ones, and the standing rules: the core operations behind
//! `POST …/approvals/{aid}`, `GET /api/v1/approvals`, `GET/DELETE /api/v1/rules` and the UI's
//! server functions.
//!
//! **Invariant 30** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): every check runs before the compare-and-set; failure changes nothing.

use serde_json::Value;

use super::routes::Answered;
use super::{Core, Error};
use crate::protocol::{
    AnsweredBy, ApprovalId, ApprovalRequest, Decision, DecisionRequest, EditTarget, Mode,
    Resolution, Rule, RuleId, RuleScope, SessionId, Spelling, Timestamp,
};
use crate::server::digest::{bound_call_digest, call_digest};
use crate::server::gate::route::needs_people;
use crate::server::gate::{edit_diff, resolve, rules};
use crate::server::principal::{Principal, Scope, actors};
use crate::server::tools;

const MAX_REASON_CHARS: usize = 2000;

/// A person's answer, read and typed: what `decide` acts on. The wire's strings become enums
/// here, once, with the protocol's errors.
#[derive(Debug, Clone)]
pub struct Answer {
    pub decision: Decision,
    pub digest: Option<String>,
    pub edits: Option<Value>,
    pub reason: Option<String>,
    pub rule: Option<RuleChoice>,
    pub client_id: Option<String>,
    /// For a plan card: the mode to leave plan mode for (never plan).
    pub execution_mode: Option<Mode>,
    /// The surface it came through, when not the page or the API (never from the wire).
    pub via: Option<crate::protocol::Via>,
    /// The step-up assertion, if the card needs one.
    pub passkey: Option<super::PasskeyProof>,
}

/// The standing rule Allow always should create, as the person shaped it.
#[derive(Debug, Clone)]
pub struct RuleChoice {
    pub scope: RuleScope,
    pub pattern: Option<String>,
    pub expires_in_secs: Option<u64>,
    pub max_uses: Option<u64>,
}

impl TryFrom<DecisionRequest> for Answer {
    type Error = Error;

    fn try_from(body: DecisionRequest) -> Result<Answer, Error> {
        let decision = body
            .decision
            .as_deref()
            .and_then(Decision::parse_answer)
            .ok_or_else(|| {
                Error::InvalidDecision(
                    "decision must be one of approve, edit, deny, allow_always".into(),
                )
            })?;
        if decision != Decision::AllowAlways {
            misplaced_lifetime(body.rule.as_ref())?;
        }
        let rule = match body.rule {
            None => None,
            Some(rule) => Some(RuleChoice {
                scope: match rule.scope.as_deref() {
                    None => RuleScope::Session,
                    Some(raw) => RuleScope::from_spelling(raw).ok_or_else(|| {
                        Error::InvalidDecision(format!(
                            "rule scope must be `session` or `workspace`, not `{raw}`"
                        ))
                    })?,
                },
                pattern: rule.pattern,
                expires_in_secs: rule.expires_in_secs,
                max_uses: rule.max_uses,
            }),
        };
        let execution_mode = match body.execution_mode.as_deref() {
            None => None,
            Some(raw) => match super::parse_mode(raw)? {
                Mode::Plan => {
                    return Err(Error::InvalidDecision(
                        "a plan runs in plan, ask, auto_edit or yolo — pick one other than plan"
                            .into(),
                    ));
                }
                mode => Some(mode),
            },
        };
        Ok(Answer {
            decision,
            digest: body.digest,
            edits: body.edits,
            reason: body.reason,
            rule,
            client_id: body.client_id,
            execution_mode,
            via: None,
            passkey: body.passkey,
        })
    }
}

/// A lifetime (`expires_in_secs`, `max_uses`) only shapes the rule Allow always makes: on any
/// other answer it is refused, as a misplaced `execution_mode` is, so a client that meant to
/// grant something short-lived learns it granted nothing. (A stray `scope` or `pattern` stays
/// ignored, as it always was.)
fn misplaced_lifetime(rule: Option<&crate::protocol::RuleRequest>) -> Result<(), Error> {
    let Some(rule) = rule else { return Ok(()) };
    let field = match (rule.expires_in_secs, rule.max_uses) {
        (Some(_), _) => "expires_in_secs",
        (None, Some(_)) => "max_uses",
        (None, None) => return Ok(()),
    };
    Err(Error::InvalidDecision(format!(
        "rule.{field} applies only to allow_always"
    )))
}

/// The use limit a new rule gets: at least one use (the approval that makes it is not one).
fn max_uses_of(wanted: Option<&RuleChoice>) -> Result<Option<u64>, Error> {
    match wanted.and_then(|r| r.max_uses) {
        Some(0) => Err(Error::InvalidDecision("max_uses must be at least 1".into())),
        other => Ok(other),
    }
}

fn is_blank(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// What an edit changed, for the record (`Resolution::edit_diff`): a decision's revised text
/// against its proposal, a call's edited arguments against the proposed ones. Off the async
/// workers (a large file's content may be diffed); a diff that cannot be made is left out.
async fn edit_diff_of(request: &ApprovalRequest, edited: &Value) -> Option<String> {
    let body = &request.body;
    let revises_text = body.is_proposal();
    let (proposal, args, edited) = (body.proposal_md.clone(), body.args.clone(), edited.clone());
    tokio::task::spawn_blocking(move || match (&edited, revises_text) {
        (Value::String(revised), true) => edit_diff::of_proposal(&proposal, revised),
        _ => edit_diff::of_arguments(&args, &edited),
    })
    .await
    .unwrap_or_else(|e| {
        tracing::warn!(error = %e, "could not diff an edit");
        None
    })
}

/// Fail closed: an unreadable deadline has passed.
fn expired(request: &ApprovalRequest) -> bool {
    request.body.expires_at.has_passed(Timestamp::now_ms())
}

impl Core {
    /// The mode a plan card's approval leaves plan mode for: the one the person picked (an
    /// admin's choice; never one the step-up forbids, `mode_allowed`), else the one the agent
    /// proposed, held to what the step-up allows (`RequirePasskey::effective_mode`).
    fn plan_execution_mode(
        &self,
        request: &ApprovalRequest,
        picked: Option<Mode>,
        who: &Principal,
    ) -> Result<Option<Mode>, Error> {
        let proposed = request.body.execution_mode;
        match picked {
            None => {
                let step_up = self.config().config.approvals.require_passkey;
                Ok(proposed.map(|mode| step_up.effective_mode(mode)))
            }
            Some(_) if request.body.decision_kind != Some(crate::protocol::DecisionKind::Plan) => {
                Err(Error::InvalidDecision(
                    "execution_mode applies only to a plan card".into(),
                ))
            }
            // Picking the mode a plan runs in changes the session's mode: an admin's to do.
            Some(mode) if who.scope() != Scope::Admin && Some(mode) != proposed => {
                Err(Error::Forbidden(format!(
                    "a `{}` credential may approve the plan as proposed, not pick the mode it runs in",
                    who.scope().as_str()
                )))
            }
            Some(mode) => {
                self.mode_allowed(mode)?;
                Ok(Some(mode))
            }
        }
    }

    /// Checks `edits` exactly as the agent's own arguments are checked (the same check, the
    /// same floor, what the edited path is on disk included).
    async fn check_edits(
        &self,
        request: &ApprovalRequest,
        edits: Option<&Value>,
    ) -> Result<Value, Error> {
        let edits = edits.filter(|e| !is_blank(e)).ok_or(Error::EditsRequired)?;
        match request.body.edit_target() {
            EditTarget::Proposal => revised_proposal(edits),
            EditTarget::OurToolArguments => self.check_tool_edits(request, edits).await,
            EditTarget::OutsideInput => self.check_outside_edits(request, edits).await,
            EditTarget::Nothing => Err(Error::NotAllowed("a budget gate cannot be edited".into())),
        }
    }

    /// A built-in tool's edited arguments: its own check, then the floor (an edit may not turn
    /// an ordinary card into a floor action the person was never shown as one: the floor gets
    /// its own card).
    async fn check_tool_edits(
        &self,
        request: &ApprovalRequest,
        edits: &Value,
    ) -> Result<Value, Error> {
        if !edits.is_object() {
            return Err(Error::InvalidEdits(
                "edits must be an object of replacement arguments".into(),
            ));
        }
        let tool = tools::get(&request.body.tool).ok_or_else(|| {
            Error::InvalidEdits(format!("`{}` cannot be edited", request.body.tool))
        })?;
        let (settings, workspace, args) = (
            self.agent.deps().settings(),
            self.workspace.clone(),
            edits.clone(),
        );
        // The check reads the disk: off the async workers, bounded.
        let (checked, hidden) = tools::reader::blocking(
            "the edited arguments",
            tools::reader::FS_LIMIT,
            None,
            move || {
                let env = tools::CheckEnv {
                    workspace: &workspace,
                    settings: Some(&settings),
                };
                Ok((tool.check(&args, &env), tool.hidden(&args, &workspace)))
            },
        )
        .await
        .map_err(|e| Error::InvalidEdits(e.to_string()))?;
        checked.map_err(|refusal| match refusal {
            tools::Refusal::Invalid(err) => Error::InvalidEdits(err.to_string()),
            tools::Refusal::Refused(why) => Error::NotAllowed(why),
        })?;
        let live = self.config();
        if request.body.reason != crate::protocol::GateReason::SafetyFloor
            && let Some(floor) = live
                .floor
                .check(&request.body.tool, edits)
                .or_else(|| live.floor.check_hidden(&hidden))
        {
            return Err(Error::NotAllowed(format!(
                "the edited call {floor}, which is on the safety floor; deny this card and ask the agent instead"
            )));
        }
        Ok(edits.clone())
    }

    /// An outside tool's edited input: as for the built-in agent, an edit may not move the
    /// call onto the floor.
    async fn check_outside_edits(
        &self,
        request: &ApprovalRequest,
        edits: &Value,
    ) -> Result<Value, Error> {
        if !edits.is_object() {
            return Err(Error::InvalidEdits(
                "edits must be an object: the tool's whole replacement input".into(),
            ));
        }
        let live = self.config();
        let call = tools::outside::describe_as(request.body.class, &request.body.tool, edits, None);
        let floor = match request.body.reason {
            crate::protocol::GateReason::SafetyFloor => None,
            _ => super::external::floor_of(std::sync::Arc::clone(&live.floor), &call).await,
        };
        if let Some(floor) = floor {
            return Err(Error::NotAllowed(format!(
                "the edited call {floor}, which is on the safety floor; deny this card instead"
            )));
        }
        Ok(edits.clone())
    }

    /// Whether what a tool card was made from (the file its diff read, the folder a command
    /// runs in) is still what it binds: its digest, made again now. A card made before cards
    /// bound anything (its digest is the arguments' alone) still holds.
    async fn card_still_holds(&self, request: &ApprovalRequest) -> Result<bool, Error> {
        let body = &request.body;
        // A card an approver edited binds the edit (its digest is the edit's): what runs is
        // what the edit says.
        let edited = body.route.as_ref().is_some_and(|r| r.edit.is_some());
        if edited
            || !body.kind.is_our_tool_call()
            || body.digest == call_digest(&body.tool, &body.args)
        {
            return Ok(true);
        }
        let Some(tool) = tools::get(&body.tool) else {
            return Ok(true);
        };
        let (workspace, args) = (self.workspace.clone(), body.args.clone());
        let floor: std::sync::Arc<dyn tools::FloorPaths> = self.config().floor.clone();
        let bound = tools::reader::blocking(
            "the card's file",
            tools::reader::FS_LIMIT,
            None,
            move || {
                let env = tools::CardEnv {
                    workspace: &workspace,
                    floor,
                };
                Ok(tool.binds(&args, &env))
            },
        )
        .await
        .map_err(|e| Error::Internal(format!("could not read what the card shows: {e}")))?;
        Ok(bound_call_digest(&body.tool, &body.args, bound.as_deref()) == body.digest)
    }

    /// The grant an Allow always makes. It belongs to the agent whose session asked (its
    /// `source`, `None` for the built-in agent): `rules::made_for` answers only that agent's
    /// calls with it.
    async fn new_rule(
        &self,
        request: &ApprovalRequest,
        wanted: Option<&RuleChoice>,
    ) -> Result<Rule, Error> {
        let suggested =
            request.body.suggested_rule.as_ref().ok_or_else(|| {
                Error::NotAllowed("Allow always is not offered for this gate".into())
            })?;
        let scope = wanted.map_or(RuleScope::Session, |r| r.scope);
        let pattern = wanted
            .and_then(|r| r.pattern.as_deref())
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .unwrap_or(&suggested.pattern)
            .to_owned();
        rules::validate_pattern(&request.body.tool, &pattern).map_err(Error::InvalidDecision)?;
        let max_uses = max_uses_of(wanted)?;
        let expires_at = match wanted.and_then(|r| r.expires_in_secs) {
            None => None,
            Some(0) => {
                return Err(Error::InvalidDecision(
                    "expires_in_secs must be at least 1".into(),
                ));
            }
            Some(secs) => {
                let secs = i64::try_from(secs.min(10 * 365 * 86_400)).unwrap_or(i64::MAX);
                Some(Timestamp::now().plus_ms(secs * 1000))
            }
        };
        Ok(Rule {
            id: RuleId::new(uuid::Uuid::new_v4().to_string()),
            tool: request.body.tool.clone(),
            pattern,
            scope,
            session_id: (scope == RuleScope::Session).then(|| request.body.session_id.clone()),
            created_at: Timestamp::now(),
            created_by_approval: Some(request.body.approval_id.clone()),
            uses: 0,
            last_used_at: None,
            expires_at,
            max_uses,
            lapsed: None,
            source: self.session_row(&request.body.session_id).await?.source,
        })
    }

    /// A person's answer to a gate. Exactly one answer per gate succeeds. On a routed card
    /// only its approvers answer; where its route asks several people, an approval is counted
    /// and the card resolves when enough distinct people approved the same digest.
    pub async fn decide(
        &self,
        session: &SessionId,
        approval_id: &ApprovalId,
        body: Answer,
        who: &Principal,
    ) -> Result<Answered, Error> {
        let request = self.answerable(session, approval_id).await?;
        let approver = self.may_answer(&request, who).await?;
        // An answer the card does not offer changes nothing, not even a changed card.
        no_standing_answer(&request, body.decision)?;
        offered(&request, body.decision)?;
        self.still_as_shown(session, &request, &body).await?;
        blind_approval_of_an_edit(&request, &body, approver.is_some())?;
        let (resolution, new_rule) = self.resolution_of(&request, body, who).await?;
        match approver {
            Some(approver)
                if needs_people(&request.body)
                    && matches!(resolution.decision, Decision::Approve | Decision::Edit) =>
            {
                self.count_approval(session, &request, resolution, &approver)
                    .await
            }
            _ => Ok(Answered::Resolved(
                resolve::commit(&self.hub, session, &request, resolution, new_rule).await?,
            )),
        }
    }

    /// The reviewer's approval of a card (a trusted class in `on` mode), through the checks a
    /// person's answer passes: the gate still waiting and not expired, the digest it was shown,
    /// an answer the card offers; the first answer wins.
    pub async fn approve_as_reviewer(
        &self,
        card: &crate::protocol::ApprovalRequestBody,
        reason: &str,
    ) -> Result<Resolution, Error> {
        let session = &card.session_id;
        let request = self.answerable(session, &card.approval_id).await?;
        // A routed card is its approvers' to answer, never the reviewer's.
        if request.body.route.is_some() {
            return Err(Error::NotAnApprover(
                "the reviewer does not answer a card routed to named approvers".into(),
            ));
        }
        offered(&request, Decision::Approve)?;
        let body = Answer {
            decision: Decision::Approve,
            digest: Some(card.digest.clone()),
            edits: None,
            reason: None,
            rule: None,
            client_id: None,
            execution_mode: None,
            via: None,
            passkey: None,
        };
        self.still_as_shown(session, &request, &body).await?;
        let resolution = Resolution {
            reason: Some(reason.to_owned()),
            ..Resolution::plain(
                &request.body.approval_id,
                Decision::Approve,
                AnsweredBy::Reviewer,
                actors::REVIEWER,
                Timestamp::now(),
            )
        };
        Ok(resolve::commit(&self.hub, session, &request, resolution, None).await?)
    }

    /// The waiting gate an answer is for: unknown, already answered, being cancelled or past
    /// its deadline each end here (the last two resolved by the server as they stand).
    pub(super) async fn answerable(
        &self,
        session: &SessionId,
        approval_id: &ApprovalId,
    ) -> Result<ApprovalRequest, Error> {
        // The gate is looked up first (one read on the hot path); the session is checked only
        // to tell an unknown session from an unknown approval. The caller's text until the
        // store finds a gate under it.
        let Some(gate) = self.repos.gates.get_gate(session, approval_id).await? else {
            self.session_row(session).await?;
            return Err(Error::UnknownApproval(
                approval_id.as_str().chars().take(64).collect(),
            ));
        };
        if let Some(resolution) = gate.resolution {
            return Err(Error::for_resolved(resolution));
        }
        let request = gate.request;
        // A cancel that was already answered wins over any later decision.
        let by_server = if self.hub.is_cancelling(session, &request.turn_id) {
            Some((Decision::Cancelled, AnsweredBy::System))
        } else if expired(&request) {
            Some((Decision::Timeout, AnsweredBy::Timeout))
        } else {
            None
        };
        match by_server {
            Some((decision, by)) => {
                let resolution =
                    resolve::by_server(&self.hub, session, &request, decision, by).await?;
                Err(Error::for_resolved(resolution))
            }
            None => Ok(request),
        }
    }

    /// Refuses an answer to a card that no longer shows what would run: another digest, or
    /// (for an answer that lets it run) a file or folder the card was made from that has
    /// changed — that card is closed, and the turn puts the same call on a fresh one.
    async fn still_as_shown(
        &self,
        session: &SessionId,
        request: &ApprovalRequest,
        body: &Answer,
    ) -> Result<(), Error> {
        if body
            .digest
            .as_deref()
            .is_some_and(|d| d != request.body.digest)
        {
            return Err(Error::StaleDigest);
        }
        if !body.decision.lets_it_run() || self.card_still_holds(request).await? {
            return Ok(());
        }
        let closed = Resolution {
            reason: Some(
                "the file changed after this card was made; a new card shows it as it is now"
                    .into(),
            ),
            ..Resolution::plain(
                &request.body.approval_id,
                Decision::Cancelled,
                AnsweredBy::System,
                actors::STALE,
                Timestamp::now(),
            )
        };
        match resolve::commit(&self.hub, session, request, closed, None).await {
            Ok(_) => Err(Error::StaleDigest),
            Err(crate::server::store::StoreError::AlreadyResolved(winner)) => {
                Err(Error::for_resolved(*winner))
            }
            Err(other) => Err(other.into()),
        }
    }

    /// The resolution an answer records, every part of it checked (edits, a new rule, the
    /// plan's mode, then the passkey, last, so a refused answer never spends an assertion),
    /// with the rule Allow always makes.
    async fn resolution_of(
        &self,
        request: &ApprovalRequest,
        body: Answer,
        who: &Principal,
    ) -> Result<(Resolution, Option<Rule>), Error> {
        let decision = body.decision;
        let edits = match decision {
            Decision::Edit => Some(self.check_edits(request, body.edits.as_ref()).await?),
            _ => None,
        };
        let edit_diff = match &edits {
            Some(edited) => edit_diff_of(request, edited).await,
            None => None,
        };
        let new_rule = match decision {
            Decision::AllowAlways => Some(self.new_rule(request, body.rule.as_ref()).await?),
            _ => None,
        };
        let execution_mode = self.plan_execution_mode(request, body.execution_mode, who)?;
        let passkey = self.step_up(request, &body).await?;
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
            edit_diff,
            rule_id: new_rule.as_ref().map(|r| r.id.clone()),
            client_id: body.client_id.map(|c| c.chars().take(64).collect()),
            execution_mode: execution_mode.filter(|_| decision.lets_it_run()),
            via: body.via,
            passkey,
            login: who.login().cloned(),
            // Attached as it commits (`gate::resolve`), from the stored prediction.
            review: None,
            approved_by: Vec::new(),
        };
        Ok((resolution, new_rule))
    }

    /// Pending gates across all sessions, oldest first (the inbox), with the reviewer's
    /// concerns on them.
    pub async fn pending_approvals(&self) -> Result<Vec<ApprovalRequest>, Error> {
        let pending = self.repos.gates.pending_gates(None).await?;
        let pending = self.with_route_states(pending).await?;
        self.with_concerns(pending).await
    }

    pub async fn list_rules(&self) -> Result<Vec<Rule>, Error> {
        Ok(self.repos.rules.list_rules().await?)
    }

    /// Revokes a standing rule; the id is a request's, so an unknown one is `unknown_rule`.
    pub async fn revoke_rule(&self, rule_id: &RuleId, actor: &str) -> Result<(), Error> {
        if self.repos.rules.revoke_rule(rule_id, actor).await? {
            Ok(())
        } else {
            Err(Error::UnknownRule(
                rule_id.as_str().chars().take(64).collect(),
            ))
        }
    }

    /// Audit entries after `after` (at most 500), optionally of one action or subject.
    pub async fn audit(
        &self,
        after: u64,
        action: Option<&str>,
        subject: Option<&str>,
    ) -> Result<Vec<crate::protocol::AuditEntry>, Error> {
        Ok(self
            .repos
            .audit
            .audit_after(after, 500, action, subject)
            .await?)
    }

    /// Audit entries before `before` (from the newest when `None`), newest first, at most
    /// 500, optionally of one action or subject.
    pub async fn audit_newest(
        &self,
        before: Option<u64>,
        action: Option<&str>,
        subject: Option<&str>,
    ) -> Result<Vec<crate::protocol::AuditEntry>, Error> {
        Ok(self
            .repos
            .audit
            .audit_before(before, 500, action, subject)
            .await?)
    }

    /// Walks the whole audit chain; each page's hashes are checked on a blocking thread (a
    /// long chain is a lot of SHA-256, which must not hold an async worker).
    pub async fn verify_audit(&self) -> Result<crate::protocol::AuditVerdict, Error> {
        let mut verifier = crate::server::audit::Verifier::new();
        let mut after = 0;
        loop {
            let page = self
                .repos
                .audit
                .audit_after(after, 1000, None, None)
                .await?;
            let checked = tokio::task::spawn_blocking(move || {
                for entry in &page {
                    verifier.check(entry);
                }
                (verifier, page)
            })
            .await
            .map_err(|e| Error::Internal(format!("the audit check stopped: {e}")))?;
            let page;
            (verifier, page) = checked;
            match page.last() {
                Some(last) if page.len() == 1000 => after = last.n,
                _ => return Ok(verifier.verdict()),
            }
        }
    }
}

/// A decision card's edit: the revised proposal, as text.
fn revised_proposal(edits: &Value) -> Result<Value, Error> {
    match edits {
        Value::String(text) => Ok(Value::String(text.trim().to_owned())),
        _ => Err(Error::InvalidEdits(
            "a decision's edit is the revised proposal, as text".into(),
        )),
    }
}

/// Refuses Allow always on a card whose route asks several people: the standing rule it makes
/// would answer the next such card for them.
fn no_standing_answer(request: &ApprovalRequest, decision: Decision) -> Result<(), Error> {
    match request.body.route.as_ref() {
        Some(route) if route.quorum > 1 && decision == Decision::AllowAlways => {
            Err(Error::NotAllowed(format!(
                "Allow always is not offered on a card that needs {} approvals: a standing rule would answer the next one for them; approve this once",
                route.quorum
            )))
        }
        _ => Ok(()),
    }
}

/// Refuses an approval that names no digest toward a card several people must approve once an
/// approver has edited it: it would approve the edit, which this answer may never have seen
/// (`countersign approvals approve` sends no digest). Sent with the card's digest, it counts.
fn blind_approval_of_an_edit(
    request: &ApprovalRequest,
    body: &Answer,
    routed: bool,
) -> Result<(), Error> {
    let edited = request
        .body
        .route
        .as_ref()
        .is_some_and(|r| r.edit.is_some());
    if routed
        && edited
        && needs_people(&request.body)
        && body.decision == Decision::Approve
        && body.digest.is_none()
    {
        return Err(Error::StaleDigest);
    }
    Ok(())
}

/// Refuses a decision the card does not offer, naming those it does.
fn offered(request: &ApprovalRequest, decision: Decision) -> Result<(), Error> {
    if request.body.allowed_decisions.contains(&decision) {
        return Ok(());
    }
    let allowed: Vec<&str> = request
        .body
        .allowed_decisions
        .iter()
        .map(|d| d.as_str())
        .collect();
    Err(Error::NotAllowed(format!(
        "`{}` is not offered for this gate (allowed: {})",
        decision.as_str(),
        allowed.join(", ")
    )))
}
