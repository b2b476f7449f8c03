//! Opening an outside agent's gate, stage by stage: the body read, an `Idempotency-Key`
//! replayed, the outside session found, room for one more card, the pipeline's verdict, the
//! gate committed, then answered at once or parked for the person.

use std::sync::Arc;

use serde_json::Value;

use super::{
    Checked, MAX_KEY_CHARS, MAX_PENDING_OUTSIDE, MAX_PENDING_PER_SESSION, agent_says_of, check,
    expire_later, first_call_title, floor_of, invalid, session_title,
};
use crate::protocol::{
    AnsweredBy, ApprovalId, ApprovalRequest, ApprovalRequestBody, Decision, EventBody, GateKind,
    GateState, Mode, Resolution, RuleSuggestion, SessionId, TimeoutOutcome, Timestamp, ToolClass,
    canonical_json,
};
use crate::server::core::{Core, Error};
use crate::server::digest::{call_digest, proposal_digest};
use crate::server::gate::evaluate::{self, CheckpointInYolo, Verdict};
use crate::server::gate::policy::{self, Outcome};
use crate::server::gate::{resolve, route, rules};
use crate::server::live::Live;
use crate::server::markdown;
use crate::server::principal::{Principal, Scope, actors};
use crate::server::store::{
    Commit, ExternalGate, GateChange, IDEMPOTENCY_WINDOW_MS, NewEvent, SessionRow, StoreError,
};
use crate::server::tools::outside::{self, OutsideCall};

impl Core {
    /// `POST /api/v1/gates`: opens an outside agent's gate, or finds the one this key opened.
    /// `true` when a new gate was opened.
    pub async fn open_gate(
        &self,
        who: &Principal,
        body: Value,
        key: Option<&str>,
    ) -> Result<(bool, GateState), Error> {
        let live = self.config();
        let checked = check(body, live.config.approvals.timeout_secs)?;
        let key = idempotency_key(key)?;
        let opened_by = who.credential();
        self.own_source(who, &checked.source).await?;
        if let Some(found) = self.replayed(&checked, &opened_by, key.as_deref()).await? {
            return Ok((false, found));
        }
        let call = outside::describe(
            &checked.source,
            &checked.tool,
            &checked.input,
            checked.cwd.as_deref(),
        );
        let session_id = self
            .outside_session(&checked, (&opened_by, who.person_email()), &call, &live)
            .await?;
        // One gate decision at a time per session: the mode read here is the one it runs under.
        let handle = self.hub.enter(&session_id);
        let serial = handle.serial().await;
        self.room_for_a_gate(&session_id).await?;
        let verdict = self
            .outside_verdict(&checked, &call, &session_id, &live)
            .await?;
        let mut request = Self::request_for(&checked, &call, &session_id, &verdict);
        self.route_outside_card(&mut request.body, &live).await?;
        let external = ExternalGate {
            approval_id: request.body.approval_id.clone(),
            session_id: session_id.clone(),
            opened_by,
            idempotency_key: key,
            created_at: request.body.created_at.clone(),
        };
        if let Some(found) = self.commit_open(&checked, &request, external).await? {
            return Ok((false, found));
        }
        drop(serial);
        self.answer_or_park(&checked, &request, verdict.outcome, &live)
            .await?;
        let approval_id = &request.body.approval_id;
        Ok((true, self.stored_state(&session_id, approval_id).await?))
    }

    /// A gate the pipeline answered is resolved at once (a rule's use was spent as it matched); one that asks
    /// waits for the person, its deadline armed and the person notified.
    async fn answer_or_park(
        &self,
        checked: &Checked,
        request: &ApprovalRequest,
        outcome: Outcome,
        live: &Live,
    ) -> Result<(), Error> {
        let session_id = &request.body.session_id;
        match answer_now(&request.body.approval_id, outcome) {
            Some(resolution) => {
                resolve::commit(&self.hub, session_id, request, resolution, None).await?;
            }
            None => {
                // The reviewer's prediction runs beside the card, never in its way.
                self.reviews
                    .predict_later(&live.config, &request.body, &checked.source);
                tokio::spawn(expire_later(
                    self.hub.clone(),
                    request.clone(),
                    self.shutdown.clone(),
                ));
                let title = session_title(&checked.source, checked.cwd.as_deref());
                self.notifier
                    .gate_opened(&live.config, &request.body, &title);
            }
        }
        Ok(())
    }

    /// Puts the `[[approvals.route]]` the card matches on it, with its session's owner (read
    /// only when a route matches).
    async fn route_outside_card(
        &self,
        card: &mut ApprovalRequestBody,
        live: &Live,
    ) -> Result<(), Error> {
        let routes = &live.config.approvals.route;
        if route::matching(routes, card).is_none() {
            return Ok(());
        }
        let owner = self.session_row(&card.session_id).await?.owner;
        route::route_card(routes, card, owner.as_deref());
        Ok(())
    }

    /// Whether this credential may open gates as `source`: an admin credential (the person)
    /// may use any name; a token claims a name at its first gate, and no other token may use
    /// it after — everything kept per agent (its grants, the reviewer's trust in it, its
    /// figures) would otherwise be any token's for the asking.
    async fn own_source(&self, who: &Principal, source: &str) -> Result<(), Error> {
        if who.scope() == Scope::Admin {
            return Ok(());
        }
        // A person who signed in answers cards; an agent opens gates with a token of its own.
        // (An approver's browser claiming `claude-code` would keep it after they are removed.)
        if who.scope() == Scope::View {
            return Err(Error::Forbidden(
                "a `view` credential reads and opens no gates: an agent opens them with its own `gates` token".into(),
            ));
        }
        if matches!(who, Principal::Person { .. }) {
            return Err(Error::Forbidden(
                "a person who signed in answers cards and opens no gates: an agent opens them with its own `gates` token".into(),
            ));
        }
        let actor = who.credential();
        let owner = self.repos.outside.claim_source(source, &actor).await?;
        if owner == actor {
            return Ok(());
        }
        Err(Error::SourceClaimed(format!(
            "`source` `{source}` belongs to {owner}, the credential that first opened gates as it; \
             give this agent its own name, or revoke {owner} to free it"
        )))
    }

    /// The gate this credential opened under `key` within the window, if it is this very call's.
    async fn replayed(
        &self,
        checked: &Checked,
        opened_by: &str,
        key: Option<&str>,
    ) -> Result<Option<GateState>, Error> {
        let Some(key) = key else {
            return Ok(None);
        };
        let since = Timestamp::now().plus_ms(-IDEMPOTENCY_WINDOW_MS);
        let found = self
            .repos
            .outside
            .gate_by_idempotency_key(opened_by, key, &since)
            .await?;
        let Some((approval_id, session_id)) = found else {
            return Ok(None);
        };
        self.same_call(checked, opened_by, &session_id, &approval_id)
            .await?;
        Ok(Some(self.stored_state(&session_id, &approval_id).await?))
    }

    /// The session the call's gates live in, made on its first call. An outside session
    /// belongs to the credential that opened it: another token naming the same
    /// `external_session` gets a session of its own, with its own mode and rules.
    async fn outside_session(
        &self,
        checked: &Checked,
        (opened_by, owner): (&str, Option<&str>),
        call: &OutsideCall,
        live: &Live,
    ) -> Result<SessionId, Error> {
        let row = SessionRow {
            id: uuid::Uuid::new_v4().to_string().into(),
            title: first_call_title(&checked.source, checked.cwd.as_deref(), &call.summary),
            created_at: Timestamp::now(),
            approval_mode: live.config.approvals.default_mode.into(),
            last_seq: 0,
            pre_plan_mode: None,
            plan_execution_mode: None,
            source: Some(checked.source.clone()),
            owner: owner.map(crate::protocol::email_key),
        };
        let owned = format!("{opened_by}\u{1f}{}", checked.external_session);
        Ok(self
            .repos
            .outside
            .external_session(&checked.source, &owned, &row)
            .await?)
    }

    /// Refuses one more card where too many already wait: in this session, or from outside
    /// agents in all. Counted, not read: a refused open must cost the agent's token little.
    async fn room_for_a_gate(&self, session_id: &SessionId) -> Result<(), Error> {
        let waiting = self.repos.gates.waiting_counts(session_id).await?;
        if waiting.in_session >= MAX_PENDING_PER_SESSION as u64 {
            return Err(Error::TooManyGates(format!(
                "this session already has {MAX_PENDING_PER_SESSION} cards waiting; answer or cancel some first"
            )));
        }
        if waiting.outside >= MAX_PENDING_OUTSIDE as u64 {
            return Err(Error::TooManyGates(format!(
                "{MAX_PENDING_OUTSIDE} outside agents' cards are already waiting; answer or cancel some first"
            )));
        }
        Ok(())
    }

    /// The pipeline's verdict on an outside call. What an outside agent brings: every string
    /// of the call read by the floor (its own approval requests included), a tool the catalog
    /// may not know, and checkpoints that go on in yolo.
    async fn outside_verdict(
        &self,
        checked: &Checked,
        call: &OutsideCall,
        session_id: &SessionId,
        live: &Live,
    ) -> Result<Verdict, Error> {
        let stored_mode = self
            .hub
            .session(session_id)
            .await?
            .map_or(Mode::Ask, |r| r.mode());
        let input = evaluate::Input {
            stored_mode,
            step_up: live.config.approvals.require_passkey,
            class: call.class,
            floor: floor_of(Arc::clone(&live.floor), call).await,
            unknown_tool: call.unknown_tool.clone(),
            checkpoint_in_yolo: CheckpointInYolo::Proceed,
            held_for_people: route::held_for_people(
                &live.config.approvals.route,
                call.class,
                Some(&checked.source),
            ),
        };
        let find_rule = || {
            rules::matching_subject(
                self.repos.rules.as_ref(),
                rules::Caller {
                    session_id: session_id.as_str(),
                    source: Some(checked.source.as_str()),
                },
                &checked.tool,
                call.rule_subject.as_ref(),
                &|_| true,
            )
        };
        Ok(evaluate::evaluate(input, find_rule).await?)
    }

    /// Commits the opened gate with its event. When another request with the same key won
    /// the race, that gate's state (if it is this very call's) instead.
    async fn commit_open(
        &self,
        checked: &Checked,
        request: &ApprovalRequest,
        external: ExternalGate,
    ) -> Result<Option<GateState>, Error> {
        let open = Commit {
            gate: Some(GateChange::Open(Box::new(request.clone()))),
            external: Some(external),
            ..Commit::default()
        };
        let event = NewEvent::new(
            Some(&request.turn_id),
            EventBody::ApprovalRequest(Box::new(request.body.clone())),
        );
        let session_id = &request.body.session_id;
        match self.hub.commit(session_id, vec![event], open, || ()).await {
            Ok(_) => Ok(None),
            Err(StoreError::KeyUsed(existing)) => {
                let gate = self
                    .repos
                    .outside
                    .external_gate(&existing)
                    .await?
                    .ok_or_else(|| Error::UnknownApproval(existing.clone()))?;
                self.same_call(
                    checked,
                    &gate.opened_by,
                    &gate.session_id,
                    &gate.approval_id,
                )
                .await?;
                Ok(Some(
                    self.stored_state(&gate.session_id, &gate.approval_id)
                        .await?,
                ))
            }
            Err(other) => Err(other.into()),
        }
    }

    /// Refuses to hand back a gate found by an `Idempotency-Key` unless it is the gate of this
    /// very call: the same session (source, external session, credential), tool and input.
    /// Otherwise an agent could open a harmless gate under the key its hook will use for a
    /// dangerous call, and the hook would read the harmless gate's answer as its own.
    async fn same_call(
        &self,
        checked: &Checked,
        opened_by: &str,
        session_id: &SessionId,
        approval_id: &ApprovalId,
    ) -> Result<(), Error> {
        let gate = self.gate_row(session_id, approval_id).await?;
        let session = self.hub.session(session_id).await?;
        let owned = format!("{opened_by}\u{1f}{}", checked.external_session);
        let expected = self
            .repos
            .outside
            .external_session_id(&checked.source, &owned)
            .await?;
        let same = session.is_some_and(|s| s.source.as_deref() == Some(checked.source.as_str()))
            && expected.as_ref() == Some(session_id)
            && gate.request.body.tool == checked.tool
            && canonical_json(&gate.request.body.args) == canonical_json(&checked.input);
        if same {
            Ok(())
        } else {
            Err(Error::KeyReused(
                "this Idempotency-Key names the gate of another call; use a key of this call's own"
                    .into(),
            ))
        }
    }

    /// The card an outside call is put to the person on (and recorded by, when the pipeline
    /// answers it at once).
    fn request_for(
        checked: &Checked,
        call: &OutsideCall,
        session_id: &SessionId,
        verdict: &Verdict,
    ) -> ApprovalRequest {
        let (mode, reason, floor) = (verdict.mode, verdict.reason, verdict.floor.as_deref());
        // The floor's reason is only that the catalog does not know the tool: Allow always
        // may make a standing rule for it.
        let unknown_only = verdict.unknown_only;
        let approval_id = ApprovalId::new(uuid::Uuid::new_v4().to_string());
        let created_at = Timestamp::now();
        let timeout_ms = i64::try_from(checked.timeout.as_millis()).unwrap_or(i64::MAX);
        let is_decision = call.class == ToolClass::Decision;
        let suggested_rule = (checked.always && (floor.is_none() || unknown_only) && !is_decision)
            .then(|| suggested_rule(checked, call))
            .flatten();
        let allowed = allowed_decisions(checked.edit, suggested_rule.is_some());
        let proposal_md = checked.reason.clone().unwrap_or_default();
        let digest = if is_decision {
            proposal_digest(&proposal_md)
        } else {
            call_digest(&checked.tool, &checked.input)
        };
        ApprovalRequest {
            reviewer_concern: None,
            route_state: None,
            turn_id: format!("ext-{approval_id}").into(),
            body: ApprovalRequestBody {
                route: None,
                cwd: checked.cwd.clone(),
                source: Some(checked.source.clone()),
                call_id: format!("ext-{approval_id}").into(),
                approval_id,
                session_id: session_id.clone(),
                kind: GateKind::External,
                tool: checked.tool.clone(),
                class: call.class,
                args: checked.input.clone(),
                decision_kind: None,
                title: checked.title.as_ref().unwrap_or(&checked.tool).clone(),
                summary: call.summary.clone(),
                proposal_html: markdown::render(&proposal_md),
                proposal_md,
                diff: call.diff.clone(),
                reason,
                reason_detail: policy::reason_detail(reason, mode, call.class, floor),
                allowed_decisions: allowed,
                digest,
                expires_at: created_at.plus_ms(timeout_ms),
                created_at,
                timeout_outcome: TimeoutOutcome::Deny,
                suggested_rule,
                execution_mode: None,
                agent_says: agent_says_of(checked),
            },
        }
    }
}

/// The standing rule Allow always would make for an outside call: its subject's default
/// pattern, if it has one.
fn suggested_rule(checked: &Checked, call: &OutsideCall) -> Option<RuleSuggestion> {
    let pattern = call
        .rule_subject
        .as_ref()
        .and_then(rules::default_pattern_of)?;
    Some(RuleSuggestion {
        tool: checked.tool.clone(),
        pattern,
        approved_before: 0,
    })
}

/// The answers an outside card offers: Approve and Deny, Edit where the agent takes an edited
/// input, Allow always where a rule could be made.
fn allowed_decisions(edit: bool, always: bool) -> Vec<Decision> {
    let mut allowed = vec![Decision::Approve];
    if edit {
        allowed.push(Decision::Edit);
    }
    allowed.push(Decision::Deny);
    if always {
        allowed.push(Decision::AllowAlways);
    }
    allowed
}

/// The `Idempotency-Key` header, trimmed; empty or overlong is a bad request.
fn idempotency_key(key: Option<&str>) -> Result<Option<String>, Error> {
    match key.map(str::trim) {
        None => Ok(None),
        Some("") => Err(invalid("the Idempotency-Key header is empty")),
        Some(k) if k.chars().count() > MAX_KEY_CHARS => Err(invalid(format!(
            "the Idempotency-Key header must be at most {MAX_KEY_CHARS} characters"
        ))),
        Some(k) => Ok(Some(k.to_owned())),
    }
}

/// The resolution the pipeline's outcome gives a gate as it opens: none when it asks.
fn answer_now(approval_id: &ApprovalId, outcome: Outcome) -> Option<Resolution> {
    let plain = |decision, by, actor: &str| {
        Resolution::plain(approval_id, decision, by, actor, Timestamp::now())
    };
    match outcome {
        Outcome::Ask { .. } => None,
        Outcome::Run {
            rule_id: Some(rule_id),
        } => Some(Resolution {
            rule_id: Some(rule_id.clone()),
            ..plain(Decision::Approve, AnsweredBy::Rule, &actors::rule(&rule_id))
        }),
        Outcome::Run { rule_id: None } => {
            Some(plain(Decision::Approve, AnsweredBy::System, actors::MODE))
        }
        Outcome::Refuse { why } => Some(Resolution {
            reason: Some(why),
            ..plain(Decision::Deny, AnsweredBy::System, actors::MODE)
        }),
    }
}
