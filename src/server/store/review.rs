//! The reviewer's rows (issue 40): its predictions, each with the answer it met, and the
//! classes the person trusts it with. A narrow trait of its own beside `Store`, so the
//! reviewer reaches these rows and nothing else.
//!
//! Predictions outlive their session: deleting a session must not erase the reviewer's record
//! with the person (a false approval forgotten would let a class be trusted again). A row
//! holds the class, the agent, what was predicted and a one-line reason, never the card.

use async_trait::async_trait;

use super::StoreError;
use crate::protocol::{
    Answered, ApprovalId, ApprovalRequest, Predicted, Resolution, SessionId, Timestamp, ToolClass,
};

/// One prediction as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct PredictionRow {
    pub approval_id: ApprovalId,
    pub session_id: SessionId,
    pub class: ToolClass,
    /// `countersign` for the built-in agent, else the outside agent's source.
    pub source: String,
    /// The reviewer that made it, as [`crate::server::review::reviewer_key`] names it (its
    /// kind, and for a model its endpoint and model): only the reviewer in force is graded.
    /// Rows stored before the key was kept hold the kind alone (`history`, `model`).
    pub reviewer: String,
    pub predicted: Predicted,
    pub reason: String,
    pub predicted_at: Timestamp,
    /// The answer it met, once the card was answered (a cancel is none).
    pub answered: Option<Answered>,
    pub answered_at: Option<Timestamp>,
    /// The person said "I would not have approved this" of the reviewer's answer.
    pub disagreed_at: Option<Timestamp>,
}

/// A class of one agent the person trusts the reviewer with.
#[derive(Clone, Debug, PartialEq)]
pub struct TrustRow {
    pub class: ToolClass,
    pub source: String,
    pub trusted_at: Timestamp,
    /// The reviewer that earned it, as [`crate::server::review::reviewer_key`] names it: a
    /// trust ends when the reviewer in force is another.
    pub reviewer: String,
}

/// How many answered cards the history reviewer reads back, at most.
pub const PAST_CARDS: u32 = 2000;

#[async_trait]
pub trait ReviewRepo: Send + Sync {
    /// Stores a prediction; a second one for the same card is ignored (`false`).
    async fn save_prediction(&self, row: &PredictionRow) -> Result<bool, StoreError>;

    async fn prediction(&self, approval_id: &str) -> Result<Option<PredictionRow>, StoreError>;

    /// Records the answer a prediction met, once: `false` when there is no prediction or it
    /// already met one.
    async fn record_answer(
        &self,
        approval_id: &str,
        answered: Answered,
        at: &Timestamp,
    ) -> Result<bool, StoreError>;

    /// Marks the reviewer's answer as one the person would not have given, once (`false`
    /// when it already was, or the reviewer did not answer it).
    async fn mark_disagreed(&self, approval_id: &str, at: &Timestamp) -> Result<bool, StoreError>;

    /// Answered predictions, newest first, at most `limit`.
    async fn answered_predictions(&self, limit: u32) -> Result<Vec<PredictionRow>, StoreError>;

    /// The classes the person trusts the reviewer with.
    async fn trusted_classes(&self) -> Result<Vec<TrustRow>, StoreError>;

    /// Trusts a class (audited `review_trusted` as `actor`); `false` when it already was.
    async fn trust_class(&self, row: &TrustRow, actor: &str) -> Result<bool, StoreError>;

    /// Ends the trust in a class (audited `review_untrusted` as `actor`, with `why`); `false`
    /// when it had none.
    async fn untrust_class(
        &self,
        class: ToolClass,
        source: &str,
        actor: &str,
        why: &str,
    ) -> Result<bool, StoreError>;

    /// Ends every trust at once (each audited); how many there were.
    async fn untrust_all(&self, actor: &str, why: &str) -> Result<u64, StoreError>;

    /// The cards of the workspace a PERSON answered (`answered_by: user`), newest first: what
    /// the history reviewer learns from. Their denies and edits (at most
    /// [`PERSON_REFUSALS`]) are read apart from their approvals (at most `limit`), so no
    /// number of approvals — nor of cards a rule, a mode or the clock answered — can push a
    /// refusal out. A row that does not read is left out.
    async fn answered_cards(
        &self,
        limit: u32,
    ) -> Result<Vec<(ApprovalRequest, Resolution)>, StoreError>;
}

/// How many of the person's refusals the history reviewer reads at most: far more than any
/// workspace gathers, bounded so a read stays cheap.
pub const PERSON_REFUSALS: u32 = 10_000;

/// The audit entry of a trust given or lost: the class and agent, never any card.
pub fn trust_audit_draft(
    actor: &str,
    action: &'static str,
    class: ToolClass,
    source: &str,
    why: Option<&str>,
) -> crate::server::audit::AuditDraft {
    let mut detail = serde_json::json!({ "class": class.as_str(), "source": source });
    if let (Some(why), Some(map)) = (why, detail.as_object_mut()) {
        map.insert("why".into(), serde_json::Value::String(why.to_owned()));
    }
    crate::server::audit::AuditDraft {
        actor: actor.to_owned(),
        action,
        subject: format!("review:{}/{source}", class.as_str()),
        detail,
    }
}

/// A stored card and its answer, read from their JSON columns; `None` when either does not
/// read (a row written by another build is skipped, not an error).
pub fn answered_card(request: &str, resolution: &str) -> Option<(ApprovalRequest, Resolution)> {
    let request = serde_json::from_str(request).ok()?;
    let resolution = serde_json::from_str(resolution).ok()?;
    Some((request, resolution))
}

/// The columns of a prediction row, in [`PredictionRow`]'s order.
pub const PREDICTION_COLUMNS: &str = "approval_id, session_id, class, source, reviewer, predicted, reason, predicted_at, answered, answered_at, disagreed_at";

/// A prediction row from its columns as text; `None` when a closed set does not read.
pub fn prediction_row(texts: PredictionTexts) -> Option<PredictionRow> {
    Some(PredictionRow {
        approval_id: ApprovalId::new(texts.approval_id),
        session_id: texts.session_id.into(),
        class: ToolClass::parse(&texts.class)?,
        source: texts.source,
        reviewer: texts.reviewer,
        predicted: Predicted::parse(&texts.predicted)?,
        reason: texts.reason,
        predicted_at: texts.predicted_at.into(),
        answered: match texts.answered {
            Some(a) => Some(Answered::parse(&a)?),
            None => None,
        },
        answered_at: texts.answered_at.map(Timestamp::from),
        disagreed_at: texts.disagreed_at.map(Timestamp::from),
    })
}

/// A prediction row as both backends read it: text columns.
pub struct PredictionTexts {
    pub approval_id: String,
    pub session_id: String,
    pub class: String,
    pub source: String,
    pub reviewer: String,
    pub predicted: String,
    pub reason: String,
    pub predicted_at: String,
    pub answered: Option<String>,
    pub answered_at: Option<String>,
    pub disagreed_at: Option<String>,
}
