//! The person's own answering habits on the wire (`GET /api/v1/stats/decisions`, issue 40):
//! how many cards they answered and how, how fast, and how long they went on approving.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Timestamp;

/// The figures of one group of decisions (all of them, one actor's, one class's …).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct DecisionFigures {
    /// Approved + denied + edited + expired.
    pub decisions: u64,
    /// Approve and Allow always.
    pub approved: u64,
    pub denied: u64,
    pub edited: u64,
    /// Cards that timed out unanswered.
    pub expired: u64,
    /// The median time from the card shown to its answer, over answered cards (an expired
    /// card's time is its timeout, not a decision); `null` with none.
    pub median_decide_ms: Option<u64>,
    /// Approvals given in under a second (never the reviewer's).
    pub fast_approvals: u64,
    /// The most approvals in a row, in the order they were given; any other decision ends a run.
    pub longest_approve_run: u64,
}

/// One UTC day of decisions, by outcome.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct DayFigures {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub approved: u64,
    pub denied: u64,
    pub edited: u64,
    pub expired: u64,
}

/// One bucket of the time-to-decide histogram: answers that took `from_ms` ≤ t < `to_ms`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DecideBucket {
    /// In words, for the plot's axis ("1–3 s").
    pub label: String,
    pub from_ms: u64,
    /// `null` for the last, open bucket.
    pub to_ms: Option<u64>,
    pub count: u64,
}

/// `GET /api/v1/stats/decisions`: the decisions resolved in `[since, until)`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct DecisionStats {
    pub since: Timestamp,
    pub until: Timestamp,
    pub total: DecisionFigures,
    /// By the actor's text as the resolution has it: `browser`, `token:<name>`, `ntfy`,
    /// `person:<email>`, `person:<email> via token:<name>`, `timeout` (every expired card),
    /// `reviewer`.
    pub by_actor: BTreeMap<String, DecisionFigures>,
    /// By person (issue 41), their email: each one's answers through all their credentials
    /// (signed in, or through a token they made). Answers no person gave are in none.
    #[serde(default)]
    pub by_person: BTreeMap<String, DecisionFigures>,
    /// By tool class (`read`, `edit`, `exec`, `config`, `decision`, `network`).
    pub by_class: BTreeMap<String, DecisionFigures>,
    /// By credential and device in words (`browser login · Firefox on Linux`, `token phone`).
    pub by_device: BTreeMap<String, DecisionFigures>,
    /// By agent: `countersign` for the built-in one, else the outside agent's source.
    pub by_agent: BTreeMap<String, DecisionFigures>,
    /// Every UTC day of the window that had a decision, oldest first.
    pub per_day: Vec<DayFigures>,
    /// Answered cards by time to decide, in fixed buckets (expired cards are not in it).
    pub decide_ms_histogram: Vec<DecideBucket>,
    /// More cards were resolved in the window than one answer reads
    /// (`stats::MAX_CARDS`): the figures cover the oldest of them only.
    pub truncated: bool,
}
