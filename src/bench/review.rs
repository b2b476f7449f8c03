//! Figure 12 (issue 40, point 5): how many cards still reach the person with the reviewer on,
//! against every card with it off, and how many the reviewer let through that the person
//! would have refused — over a replayed working week of cards and answers ([`corpus`]), in all
//! and on its last day (once trust has had time to be earned).
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
    /// Per working day: cards, cards the person saw, cards the reviewer answered.
    pub days: Vec<DayCount>,
    /// When classes were trusted and lost their trust, in order.
    pub trust_events: Vec<TrustEvent>,
    /// The cards the reviewer answered that the person would have refused: (day, summary).
    pub false_approval_cards: Vec<(usize, String)>,
    /// The shadow `approve` predictions the person refused (no harm: the class was not
    /// trusted), the same way.
    pub shadow_false_approval_cards: Vec<(usize, String)>,
}

/// One day's counts.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DayCount {
    pub cards: usize,
    pub to_person: usize,
    pub reviewer_answered: usize,
}

/// A class trusted (`gained`) or losing its trust, at the `card`-th card of the replay (from
/// 0) on `day`.
#[derive(Debug, Clone, PartialEq)]
pub struct TrustEvent {
    pub class: ToolClass,
    pub day: usize,
    pub card: usize,
    pub gained: bool,
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
    for (index, step) in steps.iter().enumerate() {
        let card = &step.card;
        let prediction = history::predict(card, &past);
        let key: ClassKey = (card.class, SOURCE.to_owned());
        let is_trusted = trusted.contains(&key);
        let seen_before = out.to_person;
        let outcome = answer_one(&mut out, step, prediction.predicted, is_trusted);
        let to_person = out.to_person > seen_before;
        count_day(&mut out, step, to_person);
        if is_false_approval(prediction.predicted, outcome) && is_trusted {
            trusted.retain(|k| *k != key);
            out.trust_lost += 1;
            out.trust_events
                .push(event(card.class, step.day, index, false));
        }
        past.push(past_answer(step, outcome));
        let list = class_list(&mut by_class, &key);
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
            out.trust_events
                .push(event(card.class, step.day, index, true));
        }
    }
    let all: Vec<Answered> = by_class.into_iter().flat_map(|(_, list)| list).collect();
    out.standings = standing::standing(&all, thresholds, &trusted);
    out
}

fn event(class: ToolClass, day: usize, card: usize, gained: bool) -> TrustEvent {
    TrustEvent {
        class,
        day,
        card,
        gained,
    }
}

/// The predictions of one class so far (a new, empty list for a class not seen yet).
fn class_list<'a>(
    by_class: &'a mut Vec<(ClassKey, Vec<Answered>)>,
    key: &ClassKey,
) -> &'a mut Vec<Answered> {
    let at = match by_class.iter().position(|(k, _)| k == key) {
        Some(at) => at,
        None => {
            by_class.push((key.clone(), Vec::new()));
            by_class.len() - 1
        }
    };
    &mut by_class[at].1
}

/// Counts one card into its day.
fn count_day(out: &mut Replay, step: &Step, to_person: bool) {
    if out.days.len() <= step.day {
        out.days.resize(step.day + 1, DayCount::default());
    }
    let day = &mut out.days[step.day];
    day.cards += 1;
    if to_person {
        day.to_person += 1;
    } else {
        day.reviewer_answered += 1;
    }
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
            out.false_approval_cards
                .push((step.day, step.card.summary.clone()));
            return Outcome::Disagreed;
        }
        return Outcome::Reviewer;
    }
    out.to_person += 1;
    if predicted == Predicted::Approve && refused {
        out.shadow_false_approvals += 1;
        out.shadow_false_approval_cards
            .push((step.day, step.card.summary.clone()));
    }
    outcome_of(step.answer)
}

/// Figure 12 over the generated week.
pub fn figure() -> Figure {
    let steps = corpus::week();
    let thresholds = Thresholds::default();
    let r = replay(&steps, &thresholds);
    let share_on = 100.0 * r.to_person as f64 / r.cards.max(1) as f64;
    let fewer = r.cards as f64 / r.to_person.max(1) as f64;
    let last = r.days.last().cloned().unwrap_or_default();
    let share_last = 100.0 * last.to_person as f64 / last.cards.max(1) as f64;
    let fewer_last = last.cards as f64 / last.to_person.max(1) as f64;
    Figure {
        id: 12,
        name: "reviewer: cards that reach the person",
        values: vec![
            ("reviewer off", 100.0, "%"),
            ("reviewer on, week", share_on, "%"),
            ("fewer, week", fewer, "x"),
            ("reviewer on, last day", share_last, "%"),
            ("fewer, last day", fewer_last, "x"),
            ("false approvals", r.false_approvals as f64, "cards"),
        ],
        target: ">= 5x fewer cards, 0 false approvals",
        met: Some(fewer >= 5.0 && r.false_approvals == 0),
        conditions: conditions(&r, &steps, &thresholds),
    }
}

/// `day N X cards, Y to the person, Z by the reviewer`, `; `-separated.
fn per_day(days: &[DayCount]) -> String {
    days.iter()
        .enumerate()
        .map(|(d, c)| {
            format!(
                "day {} {} cards, {} to the person, {} by the reviewer",
                d + 1,
                c.cards,
                c.to_person,
                c.reviewer_answered
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `exec trusted day 2 card 1867`, comma-separated.
fn trust_events(events: &[TrustEvent]) -> String {
    events
        .iter()
        .map(|e| {
            let what = if e.gained { "trusted" } else { "lost" };
            format!("{} {what} day {} card {}", e.class, e.day + 1, e.card + 1)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `day N: \`summary\``, comma-separated.
fn dated(cards: &[(usize, String)]) -> String {
    cards
        .iter()
        .map(|(d, s)| format!("day {}: `{s}`", d + 1))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The figure's conditions: the corpus, the thresholds, and what happened day by day.
fn conditions(r: &Replay, steps: &[Step], thresholds: &Thresholds) -> String {
    let per_day = per_day(&r.days);
    let events = trust_events(&r.trust_events);
    let false_approvals = dated(&r.false_approval_cards);
    let shadow = dated(&r.shadow_false_approval_cards);
    let classes = r
        .standings
        .iter()
        .map(|s| {
            format!(
                "{} {} cards agreement {:.3} recent {:.3}{}",
                s.class,
                s.cards,
                s.agreement,
                s.recent_agreement,
                if s.eligible { " eligible" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let refused = steps
        .iter()
        .filter(|s| matches!(s.answer, Answer::Denied | Answer::Edited))
        .count();
    format!(
        "a generated week of {} cards ({} days x {} tasks, seed {}, Zipf s {}, {} refused), \
         history reviewer, min_cards {}, min_agreement {}; goal judged on the whole week (the corpus); {per_day}; \
         answered by the reviewer {}; trust: {events}; false approvals: [{false_approvals}]; \
         approve predicted {} times, {} right, of the person's {} approvals; in shadow {} \
         approve predictions met a deny or edit: [{shadow}]; per class: {classes}",
        r.cards,
        corpus::DAYS,
        corpus::TASKS,
        corpus::SEED,
        corpus::ZIPF_S,
        refused,
        thresholds.min_cards,
        thresholds.min_agreement,
        r.reviewer_answered,
        r.predicted_approve,
        r.predicted_approve_right,
        r.approvals,
        r.shadow_false_approvals,
    )
}

#[cfg(test)]
mod tests;
