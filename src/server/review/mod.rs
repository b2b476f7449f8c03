//! The reviewer (issue 40): as a card opens, a second opinion predicts the person's answer.
//! In `shadow` mode it is only recorded and compared with the answer; in `on` mode it answers
//! the cards of the classes the person trusted it with, once it has earned that in the open.
//!
//! It never sees floor, config or passkey cards, never denies, and its time never delays a
//! card: a reviewer that is slow, down or out of format leaves the card to the person.

pub mod history;
pub mod met;
pub mod model;
pub mod reviewable;
pub mod shadow;
pub mod standing;
pub mod state;
#[cfg(test)]
pub(crate) mod test_cards;
pub mod wrote_lately;

use async_trait::async_trait;

use crate::protocol::{ApprovalRequestBody, Predicted, ResolutionReview, ToolClass};

/// The longest a prediction may take; past it there is none.
pub const DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// A reviewer's prediction for one card, with its one-line reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prediction {
    pub predicted: Predicted,
    pub reason: String,
}

impl Prediction {
    pub fn escalate(reason: impl Into<String>) -> Prediction {
        Prediction {
            predicted: Predicted::Escalate,
            reason: reason.into(),
        }
    }

    pub fn approve(reason: impl Into<String>) -> Prediction {
        Prediction {
            predicted: Predicted::Approve,
            reason: reason.into(),
        }
    }

    /// As an answered card's resolution carries it.
    pub fn as_review(&self) -> ResolutionReview {
        ResolutionReview {
            predicted: self.predicted,
            reason: self.reason.clone(),
        }
    }
}

/// An earlier card of this workspace and how the person answered it: what the history
/// reviewer learns from.
#[derive(Clone, Debug, PartialEq)]
pub struct PastAnswer {
    pub tool: String,
    pub class: ToolClass,
    /// What the card was about, as [`history::subject_of`] reads it: `git status` (a program and
    /// its subcommand) or a file pattern; `None` when it has none (a decision card).
    pub subject: Option<String>,
    /// Approved (approve or allow_always); anything else the person said is not.
    pub approved: bool,
    /// Denied or edited: a reason for the history reviewer never to approve that subject.
    pub refused: bool,
}

/// What a reviewer is shown of a card. The caller has already left out the cards it may
/// never see (floor, config, passkey).
#[derive(Clone, Debug)]
pub struct ReviewInput {
    pub card: ApprovalRequestBody,
    /// `countersign` for the built-in agent, else the outside agent's source.
    pub source: String,
    /// Earlier answered cards of this workspace, newest first (the history reviewer's
    /// evidence; a model reviewer may ignore it).
    pub past: Vec<PastAnswer>,
}

/// A reviewer: `None` when it has no prediction (down, timed out); a reply it cannot read is
/// `escalate`, never `None` and never `approve`.
#[async_trait]
pub trait Reviewer: Send + Sync {
    async fn predict(&self, input: &ReviewInput) -> Option<Prediction>;
}

/// The reviewer `config` runs, as one key: its kind, and for the model reviewer the endpoint
/// and model in effect (after falling back to `[provider]`). Trust is earned by one reviewer
/// and ends when this key changes: another reviewer's record says nothing of this one.
pub fn reviewer_key(config: &crate::server::config::Config) -> String {
    match config.review.reviewer {
        crate::protocol::ReviewerKind::History => "history".to_owned(),
        crate::protocol::ReviewerKind::Model => {
            let endpoint = config.review_endpoint();
            format!(
                "model {} {}",
                endpoint.base_url.trim_end_matches('/'),
                endpoint.model
            )
        }
    }
}

#[cfg(test)]
mod key_tests {
    use super::reviewer_key;
    use crate::protocol::ReviewerKind;
    use crate::server::config::Config;

    /// The key changes with the kind, the endpoint and the model — also when they come from
    /// `[provider]` — and with nothing else.
    #[test]
    fn the_reviewer_key_names_kind_endpoint_and_model() {
        let mut config = Config::default();
        assert_eq!(reviewer_key(&config), "history");
        config.review.reviewer = ReviewerKind::Model;
        config.review.base_url = "http://127.0.0.1:9/v1/".into();
        config.review.model = "judge".into();
        let judge = reviewer_key(&config);
        assert_eq!(judge, "model http://127.0.0.1:9/v1 judge");
        config.review.min_cards = 90;
        assert_eq!(
            reviewer_key(&config),
            judge,
            "thresholds are not the reviewer"
        );
        config.review.model = "judge-2".into();
        assert_ne!(reviewer_key(&config), judge);
        config.review.model = String::new();
        let fallback = reviewer_key(&config);
        config.provider.model = format!("{}-other", config.provider.model);
        assert_ne!(
            reviewer_key(&config),
            fallback,
            "the [provider] model it falls back to"
        );
    }
}
