//! `GET /api/v1/review`: the reviewer's standing with the person, per class and agent, from
//! the stored predictions and trusts through the `standing` arithmetic.

use super::standing::{self, Outcome, Thresholds};
use crate::protocol::{Answered, ReviewState};
use crate::server::config::ReviewConfig;
use crate::server::store::review::{PredictionRow, TrustRow};

/// How many answered predictions the standing is counted over, newest first: far more than
/// any threshold, bounded so the page stays cheap.
pub const COUNTED: u32 = 20_000;

/// The outcome a stored prediction met, as the arithmetic reads it.
pub fn outcome_of(row: &PredictionRow) -> Option<Outcome> {
    Some(match row.answered? {
        Answered::Approved => Outcome::Approved,
        Answered::Denied => Outcome::Denied,
        Answered::Edited => Outcome::Edited,
        Answered::Expired => Outcome::Expired,
        Answered::Reviewer if row.disagreed_at.is_some() => Outcome::Disagreed,
        Answered::Reviewer => Outcome::Reviewer,
    })
}

/// Stored predictions as the arithmetic counts them (the unanswered left out).
pub fn answered(rows: &[PredictionRow]) -> Vec<standing::Answered> {
    rows.iter()
        .filter_map(|row| {
            Some(standing::Answered {
                approval_id: row.approval_id.clone(),
                class: row.class,
                source: row.source.clone(),
                predicted: row.predicted,
                reason: row.reason.clone(),
                outcome: outcome_of(row)?,
                at: row.answered_at.clone()?,
            })
        })
        .collect()
}

/// The thresholds `[review]` sets.
pub fn thresholds(config: &ReviewConfig) -> Thresholds {
    Thresholds {
        min_cards: config.min_cards,
        min_agreement: config.min_agreement,
    }
}

/// The whole state the route answers with.
/// `in_force` is the reviewer's key ([`crate::server::review::reviewer_key`]).
pub fn review_state(
    config: &ReviewConfig,
    in_force: &str,
    rows: &[PredictionRow],
    trusted: &[TrustRow],
) -> ReviewState {
    // Only the reviewer in force is graded: another reviewer's record — another kind, or
    // another model or endpoint — says nothing of this one.
    let rows: Vec<PredictionRow> = rows
        .iter()
        .filter(|r| r.reviewer == in_force)
        .cloned()
        .collect();
    let rows = rows.as_slice();
    let answered = answered(rows);
    let trusted: Vec<_> = trusted
        .iter()
        .map(|t| (t.class, t.source.clone()))
        .collect();
    ReviewState {
        mode: config.mode,
        reviewer: config.reviewer,
        min_cards: config.min_cards,
        min_agreement: config.min_agreement,
        classes: standing::standing(&answered, &thresholds(config), &trusted),
        recent: standing::recent(&answered, standing::RECENT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Predicted, ReviewerKind, Timestamp, ToolClass};

    fn row(id: &str, predicted: Predicted, answered: Option<Answered>) -> PredictionRow {
        PredictionRow {
            approval_id: id.into(),
            session_id: "s".into(),
            class: ToolClass::Exec,
            source: "codex".into(),
            reviewer: "history".into(),
            predicted,
            reason: "r".into(),
            predicted_at: Timestamp::now(),
            answered,
            answered_at: answered.map(|_| Timestamp::now()),
            disagreed_at: None,
        }
    }

    /// Unanswered predictions are not counted, nor is the reviewer's own answer as a card; a
    /// reviewer's answer the person disagreed with is still a false approval.
    #[test]
    fn only_answered_predictions_count_and_a_disagreement_is_a_false_approval() {
        let mut disagreed = row("c", Predicted::Approve, Some(Answered::Reviewer));
        disagreed.disagreed_at = Some(Timestamp::now());
        let rows = vec![
            row("a", Predicted::Approve, Some(Answered::Approved)),
            row("b", Predicted::Escalate, None),
            disagreed,
        ];
        let state = review_state(&ReviewConfig::default(), "history", &rows, &[]);
        assert_eq!(state.classes.len(), 1);
        let exec = &state.classes[0];
        assert_eq!((exec.cards, exec.agreed, exec.false_approvals), (1, 1, 1));
        assert_eq!(state.recent.len(), 2);
        assert!(
            state
                .recent
                .iter()
                .any(|r| r.answered == "reviewer" && !r.agreed)
        );
    }

    /// Only the reviewer in force is graded: another kind's predictions, and another
    /// model's (or endpoint's) of the same kind, count for nothing; a row kept before the key
    /// was (the kind alone) counts for no model.
    #[test]
    fn only_the_reviewer_in_force_is_counted() {
        let judge = "model http://127.0.0.1:9/v1 judge";
        let by = |id: &str, reviewer: &str| {
            let mut made = row(id, Predicted::Approve, Some(Answered::Approved));
            made.reviewer = reviewer.into();
            made
        };
        let rows = vec![
            by("h", "history"),
            by("m", judge),
            by("m2", "model http://127.0.0.1:9/v1 judge-2"),
            by("old", "model"),
        ];
        let history = review_state(&ReviewConfig::default(), "history", &rows, &[]);
        assert_eq!(history.classes[0].cards, 1);
        assert_eq!(history.recent.len(), 1);
        let model = ReviewConfig {
            reviewer: ReviewerKind::Model,
            ..ReviewConfig::default()
        };
        let state = review_state(&model, judge, &rows, &[]);
        assert_eq!(state.classes[0].cards, 1);
        assert_eq!(state.recent[0].approval_id.as_str(), "m");
    }
}
