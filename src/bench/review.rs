//! Figure 12 (issue 40, point 5): how many cards still reach the person with the reviewer on,
//! against every card with it off, and how many the reviewer let through that the person
//! would have refused — over a replayed day of cards and answers ([`corpus`]).
//!
//! The replay runs the history reviewer (no model) on each card in order, with the past
//! answers of the cards before it, and counts its standing the way `GET /api/v1/review` does
//! (`server::review::standing`). A class stays in shadow until it is eligible; the person then
//! trusts it at once. From then on the reviewer's `approve` answers that class's cards: when
//! the person would have denied or edited one, that is a false approval (the person says "I
//! would not have approved this") and the class loses its trust at once. Its `escalate` sends
//! the card to the person, as does any card of an untrusted class.

pub mod corpus;

use super::Figure;
use crate::protocol::{Predicted, ToolClass};
use crate::server::review::PastAnswer;
use crate::server::review::history;
use crate::server::review::standing::{
    self, Answered, Outcome, Thresholds, class_standing, is_false_approval,
};
use corpus::{Answer, Step};

/// The agent every card of the corpus comes from.
const SOURCE: &str = "countersign";

/// What a replay counted.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Replay {
    pub cards: usize,
    /// Cards the person saw (the reviewer did not answer them).
    pub to_person: usize,
    /// Cards the reviewer answered.
    pub reviewer_answered: usize,
    /// Cards the reviewer answered that the person would have denied or edited.
    pub false_approvals: usize,
    /// `approve` predictions in shadow met by a deny or an edit (they let nothing through).
    pub shadow_false_approvals: usize,
    /// Predictions of `approve`, and how many of them the person approved (or would have).
    pub predicted_approve: usize,
    pub predicted_approve_right: usize,
    /// The person's approvals in all.
    pub approvals: usize,
    /// Times a class was trusted, and lost its trust.
    pub trusted_times: usize,
    pub trust_lost: usize,
    pub standings: Vec<crate::protocol::ClassStanding>,
}

fn outcome_of(answer: Answer) -> Outcome {
    match answer {
        Answer::Approved => Outcome::Approved,
        Answer::Denied => Outcome::Denied,
        Answer::Edited => Outcome::Edited,
        Answer::Expired => Outcome::Expired,
    }
}

type ClassKey = (ToolClass, String);

/// Replays `steps` in order through the history reviewer and the trust rules.
pub fn replay(steps: &[Step], thresholds: &Thresholds) -> Replay {
    let mut out = Replay {
        cards: steps.len(),
        ..Replay::default()
    };
    let mut past: Vec<PastAnswer> = Vec::new();
    let mut by_class: Vec<(ClassKey, Vec<Answered>)> = Vec::new();
    let mut trusted: Vec<ClassKey> = Vec::new();
    for step in steps {
        let card = &step.card;
        let prediction = history::predict(card, &past);
        let key: ClassKey = (card.class, SOURCE.to_owned());
        let is_trusted = trusted.contains(&key);
        let outcome = answer_one(&mut out, step, prediction.predicted, is_trusted);
        if is_false_approval(prediction.predicted, outcome) && is_trusted {
            trusted.retain(|k| *k != key);
            out.trust_lost += 1;
        }
        past.push(past_answer(step, outcome));
        let at = match by_class.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                by_class.push((key.clone(), Vec::new()));
                by_class.len() - 1
            }
        };
        let list = &mut by_class[at].1;
        list.push(Answered {
            approval_id: card.approval_id.clone(),
            class: card.class,
            source: SOURCE.to_owned(),
            predicted: prediction.predicted,
            reason: prediction.reason,
            outcome,
            at: card.created_at.clone(),
        });
        let refs: Vec<&Answered> = list.iter().collect();
        let standing = class_standing(card.class, SOURCE.into(), &refs, thresholds, false);
        if standing.eligible && !trusted.contains(&key) {
            trusted.push(key);
            out.trusted_times += 1;
        }
    }
    let all: Vec<Answered> = by_class.into_iter().flat_map(|(_, list)| list).collect();
    out.standings = standing::standing(&all, thresholds, &trusted);
    out
}

/// What the history reviewer learns from one answered card.
fn past_answer(step: &Step, outcome: Outcome) -> PastAnswer {
    PastAnswer {
        tool: step.card.tool.clone(),
        class: step.card.class,
        subject: history::subject_of(&step.card),
        approved: matches!(outcome, Outcome::Approved | Outcome::Reviewer),
        refused: matches!(
            outcome,
            Outcome::Denied | Outcome::Edited | Outcome::Disagreed
        ),
    }
}

/// Who answers one card, counted: the reviewer (a trusted class, `approve`) or the person.
fn answer_one(out: &mut Replay, step: &Step, predicted: Predicted, trusted: bool) -> Outcome {
    let person_approves = step.answer == Answer::Approved;
    if person_approves {
        out.approvals += 1;
    }
    if predicted == Predicted::Approve {
        out.predicted_approve += 1;
        if person_approves {
            out.predicted_approve_right += 1;
        }
    }
    let refused = matches!(step.answer, Answer::Denied | Answer::Edited);
    if trusted && predicted == Predicted::Approve {
        out.reviewer_answered += 1;
        if refused {
            out.false_approvals += 1;
            return Outcome::Disagreed;
        }
        return Outcome::Reviewer;
    }
    out.to_person += 1;
    if predicted == Predicted::Approve && refused {
        out.shadow_false_approvals += 1;
    }
    outcome_of(step.answer)
}

/// Figure 12 over the generated day.
pub fn figure() -> Figure {
    let steps = corpus::day();
    let thresholds = Thresholds::default();
    let r = replay(&steps, &thresholds);
    let share_on = 100.0 * r.to_person as f64 / r.cards.max(1) as f64;
    let fewer = r.cards as f64 / r.to_person.max(1) as f64;
    let classes = r
        .standings
        .iter()
        .map(|s| {
            format!(
                "{} {} cards agreement {:.3}{}",
                s.class,
                s.cards,
                s.agreement,
                if s.eligible { " eligible" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    Figure {
        id: 12,
        name: "reviewer: cards that reach the person",
        values: vec![
            ("reviewer off", 100.0, "%"),
            ("reviewer on", share_on, "%"),
            ("fewer", fewer, "x"),
            ("false approvals", r.false_approvals as f64, "cards"),
        ],
        target: ">= 5x fewer cards, 0 false approvals",
        met: Some(fewer >= 5.0 && r.false_approvals == 0),
        conditions: format!(
            "a generated day of {} cards (seed {}, {} tasks), history reviewer, min_cards {}, \
             min_agreement {}; answered by the reviewer {}, classes trusted {} times, trust lost \
             {} times; approve predicted {} times, {} of them right, of the person's {} \
             approvals; in shadow {} approve predictions met a deny or edit; per class: {}",
            r.cards,
            corpus::SEED,
            corpus::TASKS,
            thresholds.min_cards,
            thresholds.min_agreement,
            r.reviewer_answered,
            r.trusted_times,
            r.trust_lost,
            r.predicted_approve,
            r.predicted_approve_right,
            r.approvals,
            r.shadow_false_approvals,
            classes
        ),
    }
}

#[cfg(test)]
mod tests;
