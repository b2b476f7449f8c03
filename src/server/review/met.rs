//! A prediction meets its card's answer: the resolution carries it (`resolution.review`), and
//! the prediction's row records what it met. Called as every gate resolves (`gate::resolve`)
//! and again when a prediction arrives after the answer, so neither order loses the
//! comparison. A false approval where the reviewer is trusted ends that trust at once.

use crate::protocol::{Answered, AnsweredBy, Predicted, Resolution, Timestamp};
use crate::server::store::review::{PredictionRow, ReviewRepo};

/// Why a class loses its trust when the person refused what the reviewer would have approved.
pub const REFUSED_FIRST: &str =
    "the person denied or edited a card the reviewer would have approved";

/// The prediction for this card, as its resolution carries it; `None` when there is none or
/// the store cannot say (the answer never waits on the reviewer's rows).
pub async fn attach(repo: &dyn ReviewRepo, resolution: &mut Resolution) {
    match repo.prediction(resolution.approval_id.as_str()).await {
        Ok(Some(row)) => {
            resolution.review = Some(crate::protocol::ResolutionReview {
                predicted: row.predicted,
                reason: row.reason,
            });
        }
        Ok(None) => {}
        Err(err) => tracing::warn!(error = %err, "could not read the reviewer's prediction"),
    }
}

/// What the answer means to a prediction: the reviewer's own answer, a person's, the
/// deadline's; `None` for a cancel (no answer).
pub fn answered(resolution: &Resolution) -> Option<Answered> {
    if resolution.answered_by == AnsweredBy::Reviewer {
        return Some(Answered::Reviewer);
    }
    Answered::of(resolution.decision)
}

/// Records what the card's answer was for its prediction (once), and ends the class's trust
/// when the person refused what the reviewer would have approved.
pub async fn record(repo: &dyn ReviewRepo, resolution: &Resolution) {
    let Some(answer) = answered(resolution) else {
        return;
    };
    let id = resolution.approval_id.as_str();
    let row = match repo.prediction(id).await {
        Ok(Some(row)) => row,
        Ok(None) => return,
        Err(err) => {
            tracing::warn!(error = %err, "could not read the reviewer's prediction");
            return;
        }
    };
    let at = Timestamp::now();
    match repo.record_answer(id, answer, &at).await {
        Ok(true) => lose_trust_if_refused(repo, &row, answer, &resolution.actor).await,
        Ok(false) => {}
        Err(err) => tracing::warn!(error = %err, "could not record what a prediction met"),
    }
}

/// A person's deny or edit where the reviewer predicted `approve`: the class is no longer
/// trusted (a no-op where it was not).
async fn lose_trust_if_refused(
    repo: &dyn ReviewRepo,
    row: &PredictionRow,
    answer: Answered,
    actor: &str,
) {
    let refused = matches!(answer, Answered::Denied | Answered::Edited);
    if row.predicted != Predicted::Approve || !refused {
        return;
    }
    if let Err(err) = repo
        .untrust_class(row.class, &row.source, actor, REFUSED_FIRST)
        .await
    {
        tracing::error!(error = %err, "could not end the reviewer's trust after a false approval");
    }
}
