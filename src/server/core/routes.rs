//! Routed cards (issue 41): who may answer one (`[[approvals.route]]`, snapshotted on the
//! card), approvals counted toward its quorum, and where a waiting card stands.
//!
//! **Invariants 67, 68** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): only a
//! routed card's approvers answer it; its quorum counts distinct people on one digest.

use std::collections::HashMap;

use serde_json::json;

use super::{Core, Error};
use crate::protocol::{
    Answerer, ApprovalRequest, CardEdit, Decision, Event, EventBody, GivenApproval, Resolution,
    Role, RouteState, SessionId, Timestamp, email_key,
};
use crate::server::audit::AuditDraft;
use crate::server::digest::{call_digest, proposal_digest};
use crate::server::gate::resolve;
use crate::server::principal::Principal;
use crate::server::store::quorum::{Given, Giving};
use crate::server::store::{NewEvent, StoreError};

/// The audit action of one approval counted toward a quorum (subject: the approval id).
pub const APPROVAL_GIVEN: &str = "approval_given";
/// The audit action of a card routed also to its `escalate_to`.
pub const APPROVAL_ESCALATED: &str = "approval_escalated";

/// What an answer came to: the card resolved, or (a routed card that needs more approvals)
/// this approval counted and the card waits for the rest.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // one short-lived value per answer; boxing buys nothing
pub enum Answered {
    Resolved(Resolution),
    Counted {
        /// The approvals on the card's current digest, this one included, oldest first.
        approvals: Vec<GivenApproval>,
        quorum: u32,
    },
}

/// Who is answering, as the eligibility check reads them: the admin's own credentials, or a
/// person with their roles and groups from the people store, read now.
#[derive(Clone, Debug)]
pub struct Answering {
    /// `None`: the admin's own credentials.
    person: Option<PersonNow>,
}

#[derive(Clone, Debug)]
struct PersonNow {
    email: String,
    name: Option<String>,
    roles: Vec<Role>,
    groups: Vec<String>,
}

impl Answering {
    pub fn answerer(&self) -> Answerer<'_> {
        match &self.person {
            None => Answerer::Admin,
            Some(p) => Answerer::Person {
                email: &p.email,
                roles: &p.roles,
                groups: &p.groups,
            },
        }
    }

    fn given(&self, digest: &str) -> GivenApproval {
        GivenApproval {
            who: self.answerer().key(),
            name: self.person.as_ref().and_then(|p| p.name.clone()),
            at: Timestamp::now(),
            digest: digest.to_owned(),
        }
    }
}

/// The card an answer leaves to be approved: as it was for an approval; for an edit, the card
/// as edited (its new digest, the edit on its route), with the edit.
fn revised(
    request: &ApprovalRequest,
    resolution: &Resolution,
    approver: &Answering,
) -> Result<(ApprovalRequest, Option<CardEdit>), Error> {
    if resolution.decision != Decision::Edit {
        return Ok((request.clone(), None));
    }
    let edits = resolution.edits.clone().ok_or(Error::EditsRequired)?;
    // The others approve the edit as their card shows it: one whose changes the card could
    // not show whole would have them approve what they never saw.
    if resolution
        .edit_diff
        .as_deref()
        .is_some_and(crate::server::gate::edit_diff::is_cut)
    {
        return Err(Error::InvalidDecision(
            "an edit of a card others approve after you is shown to them whole, and this one changes too much to show (over 64 KiB of changes): make a smaller edit, or deny the card".into(),
        ));
    }
    let body = &request.body;
    let digest = match &edits {
        serde_json::Value::String(text) if body.is_proposal() => proposal_digest(text),
        _ => call_digest(&body.tool, &edits),
    };
    let edit = CardEdit {
        by: approver.given(&digest),
        edits,
        edit_diff: resolution.edit_diff.clone(),
        digest,
    };
    let mut card = request.clone();
    edit.apply(&mut card.body);
    Ok((card, Some(edit)))
}

/// The answer that resolves a card its quorum approved: approved by each of them; when an
/// approver edited it, an edit (what runs is the edited call), as the edit said.
fn approved_as_edited(
    card: &ApprovalRequest,
    resolution: Resolution,
    approvals: Vec<GivenApproval>,
) -> Resolution {
    let edit = card.body.route.as_ref().and_then(|r| r.edit.clone());
    match edit {
        None => Resolution {
            decision: Decision::Approve,
            edits: None,
            edit_diff: None,
            approved_by: approvals,
            ..resolution
        },
        Some(edit) => Resolution {
            decision: Decision::Edit,
            edits: Some(edit.edits),
            edit_diff: edit.edit_diff,
            approved_by: approvals,
            ..resolution
        },
    }
}

/// The last edit each card of `events` had while it waited for its quorum.
pub fn edits_in(events: &[Event]) -> HashMap<&str, &CardEdit> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ApprovalGiven {
                approval_id,
                edit: Some(edit),
                ..
            } => Some((approval_id.as_str(), edit)),
            _ => None,
        })
        .collect()
}

/// Where each routed card of `events` stands: its approvals and whether it escalated.
pub fn route_states_in(events: &[Event]) -> HashMap<&str, RouteState> {
    let mut states: HashMap<&str, RouteState> = HashMap::new();
    for event in events {
        match &event.body {
            EventBody::ApprovalGiven {
                approval_id,
                approval,
                ..
            } => states
                .entry(approval_id.as_str())
                .or_default()
                .approvals
                .push(approval.clone()),
            EventBody::ApprovalEscalated { approval_id, .. } => {
                states.entry(approval_id.as_str()).or_default().escalated = true;
            }
            _ => {}
        }
    }
    states
}

impl Core {
    /// Who `who` is for a routed card: a person (their email from the credential,
    /// `Principal::person_email`; roles and groups from the people store now; a person no
    /// longer there has none), or the admin's own credentials. A notification's one-time
    /// link (ntfy) names nobody: it answers no routed card.
    pub(super) async fn approver(&self, who: &Principal) -> Result<Answering, Error> {
        if matches!(who, Principal::Ntfy) {
            return Err(Error::NotAnApprover(
                "a notification's link cannot answer a card routed to named approvers: open the card".into(),
            ));
        }
        let Some(email) = who.person_email() else {
            return Ok(Answering { person: None });
        };
        self.person_now(email).await
    }

    /// The person of `email` as the people store has them now (none: no roles, no groups).
    async fn person_now(&self, email: &str) -> Result<Answering, Error> {
        let email = email_key(email);
        let found = self.repos.people.person_by_email(&email).await?;
        let person = PersonNow {
            name: found.as_ref().and_then(|p| p.name.clone()),
            roles: found.as_ref().map(|p| p.roles.clone()).unwrap_or_default(),
            groups: found.map(|p| p.groups).unwrap_or_default(),
            email,
        };
        Ok(Answering {
            person: Some(person),
        })
    }

    /// A person's roles and groups as the people store has them now (none for one no longer
    /// there), for the page's buttons.
    pub async fn roles_and_groups(&self, email: &str) -> Result<(Vec<Role>, Vec<String>), Error> {
        Ok(
            crate::server::store::people::roles_and_groups(self.repos.people.as_ref(), email)
                .await?,
        )
    }

    /// Whether the card has been routed also to its `escalate_to`: its time has passed
    /// (whether or not the escalation was announced yet).
    fn escalated(request: &ApprovalRequest) -> bool {
        request
            .body
            .route
            .as_ref()
            .and_then(|r| r.escalate_at.as_ref())
            .is_some_and(|at| at.has_passed(Timestamp::now_ms()))
    }

    /// Refuses anyone a routed card's route does not name (`403 not_an_approver`, nothing
    /// changes); the approver for a routed card, `None` for a card with no route.
    pub(super) async fn may_answer(
        &self,
        request: &ApprovalRequest,
        who: &Principal,
    ) -> Result<Option<Answering>, Error> {
        let Some(route) = &request.body.route else {
            return Ok(None);
        };
        let approver = self.approver(who).await?;
        let escalated = Self::escalated(request);
        if route.may_answer(&approver.answerer(), escalated) {
            return Ok(Some(approver));
        }
        Err(Error::NotAnApprover(format!(
            "you may not answer this card: {}",
            route.needs(escalated)
        )))
    }

    /// Counts an approval (or an edit, which is its author's approval of the edited card)
    /// toward a card that needs several: recorded with its audit entry, announced
    /// (`approval_given`); the card resolves, through the one resolve path, when the quorum of
    /// distinct people approved its current digest — as edited, if it was.
    pub(super) async fn count_approval(
        &self,
        session: &SessionId,
        request: &ApprovalRequest,
        resolution: Resolution,
        approver: &Answering,
    ) -> Result<Answered, Error> {
        let quorum = request.body.route.as_ref().map_or(1, |r| r.quorum);
        let (card, edit) = revised(request, &resolution, approver)?;
        let given = approver.given(&card.body.digest);
        let audit = AuditDraft {
            actor: resolution.actor.clone(),
            action: APPROVAL_GIVEN,
            subject: request.body.approval_id.to_string(),
            detail: json!({
                "session_id": session, "digest": given.digest, "who": given.who,
                "name": given.name, "quorum": quorum, "passkey": resolution.passkey,
                "edited": edit.is_some(), "edit_diff": edit.as_ref().and_then(|e| e.edit_diff.clone()),
            }),
        };
        let giving = Giving {
            session_id: session,
            approval_id: &request.body.approval_id,
            seen_digest: &request.body.digest,
            approval: &given,
            revised: edit.as_ref().map(|_| &card),
        };
        let approvals = match self.repos.quorum.give_approval(giving, audit).await? {
            Given::Counted(approvals) => approvals,
            Given::Stale => return Err(Error::StaleDigest),
            Given::NotWaiting => return Err(self.answer_that_stands(session, request).await?),
        };
        let approvals = self.still_named(request, approvals).await?;
        if (approvals.len() as u64) < u64::from(quorum) {
            self.announce_approval(&card, given, edit).await;
            return Ok(Answered::Counted { approvals, quorum });
        }
        let resolution = approved_as_edited(&card, resolution, approvals);
        match resolve::commit(&self.hub, session, &card, resolution, None).await {
            Ok(resolved) => Ok(Answered::Resolved(resolved)),
            // Another approval reached the quorum at the same moment: that one resolved it.
            Err(StoreError::AlreadyResolved(winner)) => Err(Error::for_resolved(*winner)),
            Err(other) => Err(other.into()),
        }
    }

    /// The approvals whose authors the card's route names *now*: one taken out of its group,
    /// left with no role that answers, or removed since they approved no longer counts (their
    /// row stays, audited; a quorum is of people who may answer when it completes).
    async fn still_named(
        &self,
        request: &ApprovalRequest,
        approvals: Vec<GivenApproval>,
    ) -> Result<Vec<GivenApproval>, Error> {
        let Some(route) = &request.body.route else {
            return Ok(approvals);
        };
        let escalated = Self::escalated(request);
        let mut named = Vec::with_capacity(approvals.len());
        for approval in approvals {
            let now = self.answering_as(&approval.who).await?;
            if route.may_answer(&now.answerer(), escalated) {
                named.push(approval);
            }
        }
        Ok(named)
    }

    /// Who an approval's key (`admin`, or a person's email) is now.
    async fn answering_as(&self, who: &str) -> Result<Answering, Error> {
        if who == Answerer::Admin.key() {
            return Ok(Answering { person: None });
        }
        self.person_now(who).await
    }

    /// The error for an answer to a card that stopped waiting meanwhile.
    async fn answer_that_stands(
        &self,
        session: &SessionId,
        request: &ApprovalRequest,
    ) -> Result<Error, Error> {
        let gate = self
            .repos
            .gates
            .get_gate(session, &request.body.approval_id)
            .await?;
        Ok(match gate.and_then(|g| g.resolution) {
            Some(resolution) => Error::for_resolved(resolution),
            None => Error::UnknownApproval(request.body.approval_id.to_string()),
        })
    }

    /// Tells every tab the card has one more approval (its `approval_given` event, with the
    /// edit that changed it if it was one), while it still waits. The approval is already
    /// recorded: a failure here is only logged.
    async fn announce_approval(
        &self,
        request: &ApprovalRequest,
        approval: GivenApproval,
        edit: Option<CardEdit>,
    ) {
        let session = &request.body.session_id;
        let event = NewEvent::new(
            Some(&request.turn_id),
            EventBody::ApprovalGiven {
                approval_id: request.body.approval_id.clone(),
                approval,
                edit,
            },
        );
        let approval_id = &request.body.approval_id;
        let gates = self.repos.gates.as_ref();
        if let Err(e) = self
            .hub
            .commit_while_waiting(session, approval_id, gates, vec![event])
            .await
        {
            tracing::warn!(error = %e, "could not announce an approval toward a quorum");
        }
    }

    /// The pending cards with where each routed one stands (approvals so far, escalated),
    /// from the store.
    pub(super) async fn with_route_states(
        &self,
        mut pending: Vec<ApprovalRequest>,
    ) -> Result<Vec<ApprovalRequest>, Error> {
        for gate in pending.iter_mut().filter(|g| g.body.route.is_some()) {
            let (session, id) = (&gate.body.session_id, &gate.body.approval_id);
            let approvals = self.repos.quorum.given_approvals(session, id).await?;
            let escalated = self.repos.quorum.escalated_at(session, id).await?.is_some();
            gate.route_state = Some(RouteState {
                approvals,
                escalated,
            });
        }
        Ok(pending)
    }
}
