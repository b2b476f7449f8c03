//! A prediction meets its card's answer: the resolution carries it (`resolution.review`), and
//! the prediction's row records what it met. Called as every gate resolves (`gate::resolve`)
//! and again when a prediction arrives after the answer, so neither order loses the
//! comparison. A false approval where the reviewer is trusted ends that trust at once.

use crate::protocol::{Answered, Predicted, Resolution, Timestamp};
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

/// Records what the card's answer was for its prediction (once), and ends the class's trust
/// when the person refused what the reviewer would have approved.
pub async fn record(repo: &dyn ReviewRepo, resolution: &Resolution) {
    let Some(answer) = resolution.answered() else {
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;

    use super::*;
    use crate::protocol::{AnsweredBy, ApprovalRequest, Decision, Timestamp, ToolClass};
    use crate::server::store::StoreError;
    use crate::server::store::review::TrustRow;

    /// One prediction and the trusted classes, in memory; what `record` reaches.
    struct OneCard {
        row: Mutex<PredictionRow>,
        trusted: Mutex<Vec<(ToolClass, String, String)>>,
    }

    #[async_trait]
    impl ReviewRepo for OneCard {
        async fn save_prediction(&self, _: &PredictionRow) -> Result<bool, StoreError> {
            Ok(false)
        }
        async fn prediction(&self, id: &str) -> Result<Option<PredictionRow>, StoreError> {
            let row = self.row.lock().unwrap().clone();
            Ok((row.approval_id.as_str() == id).then_some(row))
        }
        async fn record_answer(
            &self,
            _: &str,
            answered: Answered,
            at: &Timestamp,
        ) -> Result<bool, StoreError> {
            let mut row = self.row.lock().unwrap();
            if row.answered.is_some() {
                return Ok(false);
            }
            row.answered = Some(answered);
            row.answered_at = Some(at.clone());
            Ok(true)
        }
        async fn mark_disagreed(&self, _: &str, _: &Timestamp) -> Result<bool, StoreError> {
            Ok(false)
        }
        async fn answered_predictions(&self, _: u32) -> Result<Vec<PredictionRow>, StoreError> {
            Ok(Vec::new())
        }
        async fn trusted_classes(&self) -> Result<Vec<TrustRow>, StoreError> {
            Ok(Vec::new())
        }
        async fn trust_class(&self, _: &TrustRow, _: &str) -> Result<bool, StoreError> {
            Ok(false)
        }
        async fn untrust_class(
            &self,
            class: ToolClass,
            source: &str,
            actor: &str,
            _: &str,
        ) -> Result<bool, StoreError> {
            self.trusted
                .lock()
                .unwrap()
                .push((class, source.to_owned(), actor.to_owned()));
            Ok(true)
        }
        async fn untrust_all(&self, _: &str, _: &str) -> Result<u64, StoreError> {
            Ok(0)
        }
        async fn answered_cards(
            &self,
            _: u32,
        ) -> Result<Vec<(ApprovalRequest, Resolution)>, StoreError> {
            Ok(Vec::new())
        }
    }

    fn card(predicted: Predicted) -> OneCard {
        OneCard {
            row: Mutex::new(PredictionRow {
                approval_id: "a1".into(),
                session_id: "s".into(),
                class: ToolClass::Exec,
                source: "codex".into(),
                reviewer: "history".into(),
                predicted,
                reason: "r".into(),
                predicted_at: Timestamp::now(),
                answered: None,
                answered_at: None,
                disagreed_at: None,
            }),
            trusted: Mutex::new(Vec::new()),
        }
    }

    fn answer(decision: Decision) -> Resolution {
        Resolution::plain(
            &"a1".into(),
            decision,
            AnsweredBy::User,
            "browser",
            Timestamp::now(),
        )
    }

    /// A person's deny or edit where the reviewer would have approved ends the class's trust
    /// (in the person's name); an approval, or an `escalate` met by a deny, does not.
    #[tokio::test]
    async fn a_refusal_of_what_the_reviewer_would_approve_ends_the_trust() {
        for (predicted, decision, ends) in [
            (Predicted::Approve, Decision::Deny, true),
            (Predicted::Approve, Decision::Edit, true),
            (Predicted::Approve, Decision::Approve, false),
            (Predicted::Escalate, Decision::Deny, false),
            (Predicted::Approve, Decision::Timeout, false),
        ] {
            let repo = card(predicted);
            record(&repo, &answer(decision)).await;
            let ended = repo.trusted.lock().unwrap().clone();
            assert_eq!(!ended.is_empty(), ends, "{predicted:?} met by {decision:?}");
            if ends {
                assert_eq!(
                    ended[0],
                    (ToolClass::Exec, "codex".into(), "browser".into())
                );
            }
        }
    }

    /// A rule's or a mode's answer is nobody's judgement of the reviewer: nothing recorded.
    #[tokio::test]
    async fn a_rule_or_the_system_answering_is_no_answer() {
        for by in [AnsweredBy::Rule, AnsweredBy::System] {
            for decision in [Decision::Approve, Decision::Deny] {
                let repo = card(Predicted::Approve);
                let mut resolution = answer(decision);
                resolution.answered_by = by;
                record(&repo, &resolution).await;
                assert_eq!(
                    repo.row.lock().unwrap().answered,
                    None,
                    "{by:?} {decision:?}"
                );
                assert!(repo.trusted.lock().unwrap().is_empty());
            }
        }
    }

    /// A cancel is no answer; what a card met is recorded once; the reviewer's own answer is
    /// `reviewer`; the resolution carries the prediction.
    #[tokio::test]
    async fn a_prediction_meets_one_answer_and_a_cancel_is_none() {
        let repo = card(Predicted::Approve);
        record(&repo, &answer(Decision::Cancelled)).await;
        assert_eq!(repo.row.lock().unwrap().answered, None);
        let mut by_reviewer = answer(Decision::Approve);
        by_reviewer.answered_by = AnsweredBy::Reviewer;
        record(&repo, &by_reviewer).await;
        record(&repo, &answer(Decision::Deny)).await;
        assert_eq!(repo.row.lock().unwrap().answered, Some(Answered::Reviewer));
        assert!(repo.trusted.lock().unwrap().is_empty(), "recorded once");
        let mut carried = answer(Decision::Approve);
        attach(&repo, &mut carried).await;
        assert_eq!(
            carried.review.map(|r| r.predicted),
            Some(Predicted::Approve)
        );
    }
}
