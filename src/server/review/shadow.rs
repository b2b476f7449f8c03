//! The reviewer beside the person: as a card opens, a prediction is made on a task of its own
//! (never awaited by the card) under [`DEADLINE`], and stored where nothing shows it — not the
//! log, the snapshots, the inbox, the feed or an outside agent's gate state — until the card
//! is answered and its resolution carries it (`met`).

use std::sync::{Arc, OnceLock, Weak};

use async_trait::async_trait;

use super::history::{HistoryReviewer, subject_of};
use super::model::ModelReviewer;
use super::reviewable::reviewable;
use super::{DEADLINE, PastAnswer, Prediction, ReviewInput, Reviewer};
use crate::protocol::{
    AnsweredBy, ApprovalRequest, ApprovalRequestBody, Decision, Resolution, ReviewerKind, Timestamp,
};
use crate::server::config::Config;
use crate::server::secret::Secret;
use crate::server::store::review::{PAST_CARDS, PredictionRow, ReviewRepo};
use crate::server::store::{GateRepo, StoreError};

/// The source the built-in agent's cards are counted under.
pub const BUILT_IN: &str = "countersign";

/// The reviewer's rows and the gates it reads back: one per server.
pub struct Reviews {
    repo: Arc<dyn ReviewRepo>,
    gates: Arc<dyn GateRepo>,
    /// Who acts on a prediction for a card still waiting (the core, in `on` mode).
    answerer: OnceLock<Weak<dyn Answerer>>,
}

/// Acts on a fresh prediction for a card that still waits: in `on` mode, a trusted class's
/// `approve` answers it; anything else leaves it to the person. Implemented by the core,
/// which answers through the same checks a person's answer passes.
#[async_trait]
pub trait Answerer: Send + Sync {
    async fn act_on(&self, card: &ApprovalRequestBody, source: &str, prediction: &Prediction);
}

/// The reviewer `config` names; `None` when it cannot be built (a model reviewer with no URL
/// or model): then no card gets a prediction, and each still goes to the person.
pub fn reviewer_for(config: &Config) -> Option<Arc<dyn Reviewer>> {
    match config.review.reviewer {
        ReviewerKind::History => Some(Arc::new(HistoryReviewer)),
        ReviewerKind::Model => {
            let endpoint = config.review_endpoint();
            let key = std::env::var(&endpoint.api_key_env)
                .ok()
                .filter(|k| !k.trim().is_empty())
                .map(Secret::new);
            match ModelReviewer::new(&endpoint.base_url, &endpoint.model, key) {
                Ok(reviewer) => Some(Arc::new(reviewer)),
                Err(err) => {
                    tracing::warn!(error = %err, "the model reviewer cannot run");
                    None
                }
            }
        }
    }
}

/// An answered card as the history reviewer learns from it: only a person's answers count
/// (a rule's or a mode's approval says nothing of what the person would do), and never a card
/// no reviewer may see (floor, config, budget, plan).
pub fn past_answer(request: &ApprovalRequest, resolution: &Resolution) -> Option<PastAnswer> {
    if resolution.answered_by != AnsweredBy::User
        || super::reviewable::never_reviewed(&request.body)
    {
        return None;
    }
    Some(PastAnswer {
        tool: request.body.tool.clone(),
        class: request.body.class,
        subject: subject_of(&request.body),
        approved: matches!(
            resolution.decision,
            Decision::Approve | Decision::AllowAlways
        ),
        refused: matches!(resolution.decision, Decision::Deny | Decision::Edit),
    })
}

impl Reviews {
    pub fn new(repo: Arc<dyn ReviewRepo>, gates: Arc<dyn GateRepo>) -> Arc<Reviews> {
        Arc::new(Reviews {
            repo,
            gates,
            answerer: OnceLock::new(),
        })
    }

    /// Names who acts on predictions (once, at start).
    pub fn set_answerer(&self, answerer: Weak<dyn Answerer>) {
        let _ = self.answerer.set(answerer);
    }

    pub fn repo(&self) -> &Arc<dyn ReviewRepo> {
        &self.repo
    }

    /// Starts a prediction for a card that just opened, when the reviewer runs and may see
    /// it; returns at once (the card never waits for it).
    pub fn predict_later(
        self: &Arc<Self>,
        config: &Config,
        card: &ApprovalRequestBody,
        source: &str,
    ) {
        if !reviewable(card, config) {
            return;
        }
        let Some(reviewer) = reviewer_for(config) else {
            return;
        };
        let (this, card, source) = (Arc::clone(self), card.clone(), source.to_owned());
        let kind = config.review.reviewer;
        let key = super::reviewer_key(config);
        tokio::spawn(async move {
            if let Err(err) = this.predict_now(reviewer, (kind, key), card, source).await {
                tracing::warn!(error = %err, "the reviewer's prediction was not stored");
            }
        });
    }

    /// Predicts within [`DEADLINE`] (past it: no prediction), stores it, and compares it with
    /// the answer at once when the card was answered first.
    async fn predict_now(
        &self,
        reviewer: Arc<dyn Reviewer>,
        (kind, key): (ReviewerKind, String),
        card: ApprovalRequestBody,
        source: String,
    ) -> Result<(), StoreError> {
        let approval_id = card.approval_id.clone();
        // The deadline covers reading the evidence too: all of it is the reviewer's time.
        let predicted = tokio::time::timeout(DEADLINE, async {
            let past = match kind {
                ReviewerKind::History => self.past().await?,
                ReviewerKind::Model => Vec::new(),
            };
            let input = ReviewInput { card, source, past };
            let prediction = reviewer.predict(&input).await;
            Ok::<_, StoreError>((input, prediction))
        })
        .await;
        let (input, prediction) = match predicted {
            Ok(Ok((input, Some(prediction)))) => (input, prediction),
            Ok(Err(err)) => return Err(err),
            Ok(Ok((_, None))) | Err(_) => {
                tracing::info!(%approval_id, "the reviewer made no prediction in time");
                return Ok(());
            }
        };
        let row = row_of(&input, key, prediction.clone());
        if !self.repo.save_prediction(&row).await? {
            return Ok(());
        }
        let gate = self
            .gates
            .get_gate(&input.card.session_id, &input.card.approval_id)
            .await?;
        match gate.and_then(|g| g.resolution) {
            Some(resolution) => super::met::record(self.repo.as_ref(), &resolution).await,
            None => {
                if let Some(answerer) = self.answerer.get().and_then(Weak::upgrade) {
                    answerer
                        .act_on(&input.card, &input.source, &prediction)
                        .await;
                }
            }
        }
        Ok(())
    }

    /// The workspace's latest answered cards, newest first, as the history reviewer reads them.
    async fn past(&self) -> Result<Vec<PastAnswer>, StoreError> {
        let cards = self.repo.answered_cards(PAST_CARDS).await?;
        Ok(cards
            .iter()
            .filter_map(|(request, resolution)| past_answer(request, resolution))
            .collect())
    }
}

/// The row a prediction is stored as.
fn row_of(input: &ReviewInput, reviewer: String, prediction: Prediction) -> PredictionRow {
    PredictionRow {
        approval_id: input.card.approval_id.clone(),
        session_id: input.card.session_id.clone(),
        class: input.card.class,
        source: input.source.clone(),
        reviewer,
        predicted: prediction.predicted,
        reason: prediction.reason,
        predicted_at: Timestamp::now(),
        answered: None,
        answered_at: None,
        disagreed_at: None,
    }
}
