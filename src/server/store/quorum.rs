//! Approvals counted toward a routed card's quorum, and a card's escalation (issue 41): rows
//! of their own beside the gate, each written with its audit entry in one transaction. A
//! narrow trait beside `Store` (which every backend also implements).

use async_trait::async_trait;

use super::StoreError;
use crate::protocol::{ApprovalId, ApprovalRequest, GivenApproval, SessionId, Timestamp};
use crate::server::audit::AuditDraft;

/// What giving an approval came to.
#[derive(Clone, Debug, PartialEq)]
pub enum Given {
    /// Recorded (or already there): the approvals on its digest now, oldest first.
    Counted(Vec<GivenApproval>),
    /// The card changed since the answer saw it (another person's edit): nothing written.
    Stale,
    /// The card no longer waits: nothing written.
    NotWaiting,
}

/// One approval to give: on the card as the answer saw it (`seen_digest`), by whom, and the
/// card as an edit revised it (an edit counts as its author's approval of the revision).
#[derive(Clone, Debug)]
pub struct Giving<'a> {
    pub session_id: &'a SessionId,
    pub approval_id: &'a ApprovalId,
    pub seen_digest: &'a str,
    pub approval: &'a GivenApproval,
    pub revised: Option<&'a ApprovalRequest>,
}

/// The digest a stored request's JSON holds (`None`: unreadable).
pub fn digest_of(request_json: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Digest {
        digest: String,
    }
    serde_json::from_str::<Digest>(request_json)
        .ok()
        .map(|d| d.digest)
}

#[async_trait]
pub trait QuorumRepo: Send + Sync {
    /// Records an approval toward a waiting card (and stores the card as an edit revised it),
    /// with its audit entry, in one transaction that holds the card: two people approving at
    /// once are counted one after the other. Nothing is written for a card that no longer
    /// waits, or whose digest is no longer the one the answer saw. The approvals on the
    /// approval's digest after it, oldest first (one row a person: approving again counts once).
    async fn give_approval(
        &self,
        giving: Giving<'_>,
        audit: AuditDraft,
    ) -> Result<Given, StoreError>;
    /// Every approval given toward a card (on any digest), oldest first.
    async fn given_approvals(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
    ) -> Result<Vec<GivenApproval>, StoreError>;
    /// Marks a waiting card escalated at `at`, with its audit entry; false (nothing written)
    /// when it already was, or no longer waits.
    async fn mark_escalated(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
        at: &Timestamp,
        audit: AuditDraft,
    ) -> Result<bool, StoreError>;
    /// When a card was escalated, if it was.
    async fn escalated_at(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
    ) -> Result<Option<Timestamp>, StoreError>;
}

/// The columns `GivenApproval` is read from, in order.
pub const COLUMNS: &str = "who, name, at, digest";
