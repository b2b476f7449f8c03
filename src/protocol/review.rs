//! The reviewer's words on the wire (issue 40): what it predicted for a card, and how far the
//! person can trust it per tool class and agent (`GET /api/v1/review`).

use serde::{Deserialize, Serialize};
use strum::{Display, EnumString, IntoStaticStr, VariantArray, VariantNames};

use super::{ApprovalId, ToolClass};

/// Whether the reviewer runs: not at all, beside the person without ever answering
/// (`shadow`), or answering the classes the person trusted it with (`on`).
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReviewMode {
    #[default]
    Off,
    Shadow,
    On,
}

/// Which reviewer predicts: past answers in this workspace (no model), or a model.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReviewerKind {
    #[default]
    History,
    Model,
}

/// What the reviewer predicts the person would answer. It never predicts a deny: at most it
/// sends the card to the person with its concern.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Predicted {
    Approve,
    Escalate,
}

/// The answer a prediction met. A cancelled card met none.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Answered {
    /// Approve or Allow always, by a person (or a rule, a mode).
    Approved,
    Denied,
    Edited,
    /// Its deadline passed unanswered.
    Expired,
    /// The reviewer itself answered it (a trusted class in `on` mode).
    Reviewer,
}

impl Answered {
    /// What a resolution's decision met the prediction with; `None` for a cancel (no answer).
    pub fn of(decision: super::Decision) -> Option<Answered> {
        use super::Decision;
        match decision {
            Decision::Approve | Decision::AllowAlways => Some(Answered::Approved),
            Decision::Deny => Some(Answered::Denied),
            Decision::Edit => Some(Answered::Edited),
            Decision::Timeout => Some(Answered::Expired),
            Decision::Cancelled => None,
        }
    }
}

/// The reviewer's prediction as an answered card's resolution carries it
/// (`resolution.review`): never on a card before it is answered.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ResolutionReview {
    pub predicted: Predicted,
    pub reason: String,
}

/// How the reviewer stands with the person for one tool class of one agent.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ClassStanding {
    pub class: ToolClass,
    /// `countersign` for the built-in agent, else the outside agent's source.
    pub source: String,
    /// Predictions met by an answer.
    pub cards: u64,
    pub agreed: u64,
    /// `agreed / cards`, over the class's whole history; 0 with no cards.
    pub agreement: f64,
    /// The share of the last `min_cards` predictions that agreed (all of them while there are
    /// fewer); 0 with none. Eligibility is judged on this one, so early learning does not
    /// count against a class for ever.
    pub recent_agreement: f64,
    pub false_approvals: u64,
    pub trusted: bool,
    pub eligible: bool,
}

/// One answered prediction, newest first in [`ReviewState::recent`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RecentPrediction {
    pub approval_id: ApprovalId,
    pub predicted: Predicted,
    /// The answer it met: `approved`, `denied`, `edited`, `expired`, or `reviewer` when the
    /// reviewer itself answered.
    pub answered: String,
    pub reason: String,
    pub agreed: bool,
}

/// `GET /api/v1/review`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ReviewState {
    pub mode: ReviewMode,
    pub reviewer: ReviewerKind,
    pub min_cards: u64,
    pub min_agreement: f64,
    pub classes: Vec<ClassStanding>,
    pub recent: Vec<RecentPrediction>,
}
