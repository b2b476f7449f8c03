//! How far the reviewer has earned the person's trust (issue 40, point 4), as arithmetic over
//! answered predictions: pure, so the route, the trust switch and the benchmark all count the
//! same way.
//!
//! A prediction *agrees* when `approve` meets an approval, or `escalate` meets a deny or an
//! edit; `escalate` met by an approval disagrees. Only a PERSON's answer (approved, denied,
//! edited) grades the reviewer: a timeout is nobody's answer (an agent sets its own gates'
//! deadlines, and 52 one-second gates once made a class eligible in five seconds) and the
//! reviewer's own answers would have it grade itself; both are listed in `recent` but counted
//! nowhere. A *false approval* is `approve` met by a person's deny or edit, or the person's "I
//! would not have approved this" on a card the reviewer answered. A class (tool class × agent)
//! is *eligible* with at least `min_cards` person-answered predictions, agreement at or above
//! `min_agreement` over its last `min_cards` of them, and at least `min_cards` of them since
//! its newest false approval. The window is the recent one on purpose: a history reviewer
//! escalates each new subject until the person has approved it five times, and counted over a
//! class's whole life those early disagreements would keep it below the bar for ever; what
//! earns trust is how the reviewer does now. The all-time agreement is still reported.

use std::collections::BTreeMap;

use crate::protocol::{
    ApprovalId, ClassStanding, Predicted, RecentPrediction, Timestamp, ToolClass,
};

/// Predictions a class needs before it may be trusted (the setting may only raise it).
pub const MIN_CARDS: u64 = 50;
/// The share of them that must agree (the setting may only raise it).
pub const MIN_AGREEMENT: f64 = 0.97;
/// How many answered predictions `GET /api/v1/review` lists.
pub const RECENT: usize = 20;

/// What met a prediction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The person approved (approve or allow always).
    Approved,
    Denied,
    /// The person approved an edited call: not what was asked.
    Edited,
    /// Nobody answered before the card expired.
    Expired,
    /// The reviewer answered it (a trusted class), and nobody said otherwise.
    Reviewer,
    /// The reviewer answered it, and the person said "I would not have approved this".
    Disagreed,
}

impl Outcome {
    /// As `recent[].answered` spells it: a card the reviewer answered is `reviewer`, whether
    /// or not the person disagreed (`agreed` says that).
    pub fn answered_word(self) -> &'static str {
        match self {
            Outcome::Approved => "approved",
            Outcome::Denied => "denied",
            Outcome::Edited => "edited",
            Outcome::Expired => "expired",
            Outcome::Reviewer | Outcome::Disagreed => "reviewer",
        }
    }
}

/// One prediction and the answer that met it.
#[derive(Clone, Debug, PartialEq)]
pub struct Answered {
    pub approval_id: ApprovalId,
    pub class: ToolClass,
    /// `countersign` for the built-in agent, else the outside agent's source.
    pub source: String,
    pub predicted: Predicted,
    pub reason: String,
    pub outcome: Outcome,
    /// When it was answered.
    pub at: Timestamp,
}

/// Whether `predicted` agrees with what met it.
pub fn agrees(predicted: Predicted, outcome: Outcome) -> bool {
    match (predicted, outcome) {
        (_, Outcome::Reviewer) => true,
        (_, Outcome::Disagreed) => false,
        (Predicted::Approve, Outcome::Approved) => true,
        (Predicted::Approve, _) => false,
        (Predicted::Escalate, Outcome::Approved) => false,
        (Predicted::Escalate, _) => true,
    }
}

/// Whether it was a false approval: the reviewer would have let through (or let through) what
/// the person refused. A trusted class loses its trust at the first one.
pub fn is_false_approval(predicted: Predicted, outcome: Outcome) -> bool {
    matches!(
        (predicted, outcome),
        (Predicted::Approve, Outcome::Denied | Outcome::Edited) | (_, Outcome::Disagreed)
    )
}

/// The thresholds a class must reach to be eligible (the settings may only raise them).
#[derive(Clone, Debug, PartialEq)]
pub struct Thresholds {
    pub min_cards: u64,
    pub min_agreement: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            min_cards: MIN_CARDS,
            min_agreement: MIN_AGREEMENT,
        }
    }
}

/// Oldest first, by when answered (an unreadable time keeps its place among equals).
fn in_order(answered: &[Answered]) -> Vec<&Answered> {
    let mut ordered: Vec<&Answered> = answered.iter().collect();
    ordered.sort_by_key(|a| a.at.unix_ms().unwrap_or(i64::MIN));
    ordered
}

/// Each class's standing, sorted by class then source. `trusted` lists the (class, source)
/// pairs the person trusts; a pair with no prediction yet is listed too.
pub fn standing(
    answered: &[Answered],
    thresholds: &Thresholds,
    trusted: &[(ToolClass, String)],
) -> Vec<ClassStanding> {
    let mut by_class: BTreeMap<(&'static str, String), (ToolClass, Vec<&Answered>)> =
        BTreeMap::new();
    for a in in_order(answered) {
        by_class
            .entry((a.class.into(), a.source.clone()))
            .or_insert_with(|| (a.class, Vec::new()))
            .1
            .push(a);
    }
    for (class, source) in trusted {
        by_class
            .entry(((*class).into(), source.clone()))
            .or_insert_with(|| (*class, Vec::new()));
    }
    by_class
        .into_iter()
        .map(|((_, source), (class, list))| {
            let is_trusted = trusted.iter().any(|(c, s)| *c == class && *s == source);
            class_standing(class, source, &list, thresholds, is_trusted)
        })
        .collect()
}

/// Whether a person answered the card (approved, denied, edited): the only answers that say
/// anything about the reviewer. A timeout is nobody's answer (an agent can make its gates
/// expire at will) and the reviewer's own answer would be the reviewer grading itself.
pub fn by_a_person(outcome: Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Approved | Outcome::Denied | Outcome::Edited
    )
}

/// One class's standing from its predictions, oldest first. Only predictions a person
/// answered count towards cards and agreement; a false approval (a person's refusal of an
/// approve, or their disagreement with the reviewer's answer) keeps the class ineligible until
/// `min_cards` person-answered predictions have come after it.
pub fn class_standing(
    class: ToolClass,
    source: String,
    list: &[&Answered],
    thresholds: &Thresholds,
    trusted: bool,
) -> ClassStanding {
    let judged: Vec<&Answered> = list
        .iter()
        .copied()
        .filter(|a| by_a_person(a.outcome))
        .collect();
    let cards = judged.len() as u64;
    let agreed = count_agreeing(&judged) as u64;
    let false_approvals = list
        .iter()
        .filter(|a| is_false_approval(a.predicted, a.outcome))
        .count() as u64;
    let agreement = share(agreed as usize, judged.len());
    let window = usize::try_from(thresholds.min_cards).unwrap_or(usize::MAX);
    let last: Vec<&Answered> = judged.iter().rev().take(window).copied().collect();
    let recent_agreement = share(count_agreeing(&last), last.len());
    let eligible = cards >= thresholds.min_cards
        && recent_agreement >= thresholds.min_agreement
        && judged_since_last_false_approval(list) >= thresholds.min_cards;
    ClassStanding {
        class,
        source,
        cards,
        agreed,
        agreement,
        recent_agreement,
        false_approvals,
        trusted,
        eligible,
    }
}

fn count_agreeing(list: &[&Answered]) -> usize {
    list.iter()
        .filter(|a| agrees(a.predicted, a.outcome))
        .count()
}

/// `part / whole`, 0 with nothing to divide.
fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// How many person-answered predictions came after the newest false approval (all of them
/// when there was none), the list oldest first.
fn judged_since_last_false_approval(list: &[&Answered]) -> u64 {
    list.iter()
        .rev()
        .take_while(|a| !is_false_approval(a.predicted, a.outcome))
        .filter(|a| by_a_person(a.outcome))
        .count() as u64
}

/// The last `limit` answered predictions, newest first.
pub fn recent(answered: &[Answered], limit: usize) -> Vec<RecentPrediction> {
    in_order(answered)
        .into_iter()
        .rev()
        .take(limit)
        .map(|a| RecentPrediction {
            approval_id: a.approval_id.clone(),
            predicted: a.predicted,
            answered: a.outcome.answered_word().into(),
            reason: a.reason.clone(),
            agreed: agrees(a.predicted, a.outcome),
        })
        .collect()
}

#[cfg(test)]
mod tests;
