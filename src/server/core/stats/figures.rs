//! The person's answering habits, figured from resolved cards: pure functions over rows (no
//! store, no clock), so every figure is tested against a scripted history.
//!
//! **What counts as a decision.** A card the person answered — Approve or Allow always
//! (*approved*), Deny (*denied*), Edit (*edited*) — and a card that timed out unanswered
//! (*expired*). A card resolved without the person is not one of their decisions and is left
//! out: `cancelled` (the turn ended, the agent withdrew it), and whatever a standing rule, a
//! mode change or the system resolved (`answered_by` `rule` or `system`). The reviewer's
//! answers (actor `reviewer`) are decisions under their own actor key, and never a person's
//! fast approval.
//!
//! **An expired card counts only if the person had a fair chance.** Outside agents choose
//! their cards' deadlines (`timeout_secs`, from 1 s): a card that expired less than
//! [`FAIR_CHANCE_MS`] (60 s) after it opened — or whose deadline cannot be read — is not the
//! person's and is left out of every figure (totals, rates, runs, every group), as a cancelled
//! card is. Otherwise an agent could make the page show the person letting cards expire,
//! and break their runs of approvals, at will.

use std::collections::BTreeMap;

use crate::protocol::{
    Actor, Answered, DayFigures, DecideBucket, DecisionFigures, Resolution, Timestamp,
};
use crate::server::principal::actors;
use crate::server::store::{CardEssentials, ResolvedCard};

/// The reviewer's actor (issue 40, point 4): it answers cards, but never on a person's reflex.
pub const REVIEWER: &str = "reviewer";
/// The agent key of the built-in agent's sessions (outside agents go by their source).
pub const BUILT_IN_AGENT: &str = "countersign";
/// An approval given faster than this is a *fast approval*: too fast to have read the card.
pub const FAST_APPROVAL_MS: u64 = 1000;
/// A card that expired counts as the person's expired card only when its deadline was at
/// least this long after it opened (see the module's doc).
pub const FAIR_CHANCE_MS: u64 = 60_000;

/// The histogram's bucket edges in milliseconds, with their labels: bucket *i* holds answers
/// that took from `edge[i]` up to (not including) `edge[i + 1]`; the last is open.
const BUCKETS: [(u64, &str); 7] = [
    (0, "<1 s"),
    (1_000, "1–3 s"),
    (3_000, "3–10 s"),
    (10_000, "10–30 s"),
    (30_000, "30 s–2 min"),
    (120_000, "2–10 min"),
    (600_000, ">10 min"),
];

/// How a decision ended, for the person.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Approved,
    Denied,
    Edited,
    Expired,
}

/// What a resolution counts as among the person's decisions; `None` when it is not one
/// (cancelled, or resolved by a rule, a mode or the system: see the module's doc).
/// Read through [`Resolution::answered`], the reading the reviewer's record uses too: the
/// reviewer's approvals count as approvals.
pub fn outcome(resolution: &Resolution) -> Option<Outcome> {
    Some(match resolution.answered()? {
        Answered::Approved | Answered::Reviewer => Outcome::Approved,
        Answered::Denied => Outcome::Denied,
        Answered::Edited => Outcome::Edited,
        Answered::Expired => Outcome::Expired,
    })
}

/// One decision, read once from its card: its outcome, how long it took and the keys of the
/// groups it counts in.
#[derive(Clone, Debug, PartialEq)]
pub struct Counted {
    pub outcome: Outcome,
    /// From the card shown to the answer; `None` for an expired card (its time is the
    /// timeout, not a decision) or when either time is unreadable.
    pub decide_ms: Option<u64>,
    /// A person's approval (never the reviewer's) in under [`FAST_APPROVAL_MS`].
    pub fast: bool,
    pub actor: String,
    /// The person who answered (issue 41): signed in, or through a token they made; `None`
    /// for the admin's own credentials, the reviewer and timeouts.
    pub person: Option<String>,
    pub device: String,
    pub class: String,
    pub agent: String,
    /// `YYYY-MM-DD`, the UTC day it was resolved.
    pub day: String,
}

/// Whether the card gave the person a fair chance to answer: its deadline at least
/// [`FAIR_CHANCE_MS`] after it opened (`false` when either time is unreadable).
fn gave_a_fair_chance(card: &CardEssentials) -> bool {
    card.expires_at
        .as_ref()
        .and_then(|deadline| elapsed_ms(&card.created_at, deadline))
        .is_some_and(|ms| ms >= FAIR_CHANCE_MS)
}

/// The card as a decision, or `None` when it is not one.
pub fn counted(card: &ResolvedCard) -> Option<Counted> {
    let resolution = &card.resolution;
    let outcome = outcome(resolution)?;
    if outcome == Outcome::Expired && !gave_a_fair_chance(&card.card) {
        return None;
    }
    let decide_ms = match outcome {
        Outcome::Expired => None,
        _ => elapsed_ms(&card.card.created_at, &resolution.resolved_at),
    };
    let (actor, device) = match outcome {
        Outcome::Expired => (actors::TIMEOUT.to_owned(), actors::TIMEOUT.to_owned()),
        _ => (actor_key(resolution), device_key(resolution)),
    };
    let fast = outcome == Outcome::Approved
        && actor != REVIEWER
        && decide_ms.is_some_and(|ms| ms < FAST_APPROVAL_MS);
    let person = Actor::parse(&actor).person().map(str::to_owned);
    Some(Counted {
        outcome,
        decide_ms,
        fast,
        actor,
        person,
        device,
        class: card.card.class.as_str().to_owned(),
        agent: card
            .source
            .clone()
            .unwrap_or_else(|| BUILT_IN_AGENT.to_owned()),
        day: utc_day(&resolution.resolved_at),
    })
}

/// The actor as the resolution names it (`unknown` in events written before actors existed).
fn actor_key(resolution: &Resolution) -> String {
    if resolution.actor.is_empty() {
        "unknown".to_owned()
    } else {
        resolution.actor.clone()
    }
}

/// The credential and, for a browser login, its device, in words.
fn device_key(resolution: &Resolution) -> String {
    let device = resolution.login.as_ref().map(|login| login.device.as_str());
    Actor::parse(&actor_key(resolution)).words(device)
}

/// Milliseconds from `from` to `to` (never negative); `None` when either is unreadable.
fn elapsed_ms(from: &Timestamp, to: &Timestamp) -> Option<u64> {
    let (from, to) = (from.unix_ms()?, to.unix_ms()?);
    Some(u64::try_from(to.saturating_sub(from)).unwrap_or(0))
}

/// The UTC day of an instant (`unknown` when it is unreadable).
fn utc_day(at: &Timestamp) -> String {
    match at.unix_ms() {
        Some(ms) => Timestamp::from_unix_ms(ms)
            .as_str()
            .get(..10)
            .unwrap_or_default()
            .to_owned(),
        None => "unknown".to_owned(),
    }
}

/// One group's running figures; fed decisions in the order they were resolved.
#[derive(Default)]
pub struct Tally {
    figures: DecisionFigures,
    decide_ms: Vec<u64>,
    run: u64,
}

impl Tally {
    pub fn add(&mut self, decision: &Counted) {
        let figures = &mut self.figures;
        figures.decisions += 1;
        match decision.outcome {
            Outcome::Approved => figures.approved += 1,
            Outcome::Denied => figures.denied += 1,
            Outcome::Edited => figures.edited += 1,
            Outcome::Expired => figures.expired += 1,
        }
        if decision.outcome == Outcome::Approved {
            self.run += 1;
            figures.longest_approve_run = figures.longest_approve_run.max(self.run);
        } else {
            self.run = 0;
        }
        figures.fast_approvals += u64::from(decision.fast);
        self.decide_ms.extend(decision.decide_ms);
    }

    pub fn finish(self) -> DecisionFigures {
        DecisionFigures {
            median_decide_ms: median(self.decide_ms),
            ..self.figures
        }
    }
}

/// The median (of an even count, the mean of the middle two, rounded down); `None` when empty.
pub fn median(mut values: Vec<u64>) -> Option<u64> {
    values.sort_unstable();
    let mid = values.len() / 2;
    match values.len() {
        0 => None,
        n if n % 2 == 1 => values.get(mid).copied(),
        _ => Some(values[mid - 1] + (values[mid] - values[mid - 1]) / 2),
    }
}

/// Each group's figures, by key.
pub fn grouped<'a>(
    decisions: &'a [Counted],
    key: impl Fn(&'a Counted) -> &'a str,
) -> BTreeMap<String, DecisionFigures> {
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    for decision in decisions {
        tallies
            .entry(key(decision).to_owned())
            .or_default()
            .add(decision);
    }
    tallies
        .into_iter()
        .map(|(key, tally)| (key, tally.finish()))
        .collect()
}

/// Each person's figures, by email: their answers through every credential of theirs (their
/// browser logins and their tokens) together; answers no person gave are in no group.
pub fn per_person(decisions: &[Counted]) -> BTreeMap<String, DecisionFigures> {
    let mut tallies: BTreeMap<&str, Tally> = BTreeMap::new();
    for decision in decisions {
        if let Some(person) = &decision.person {
            tallies.entry(person).or_default().add(decision);
        }
    }
    tallies
        .into_iter()
        .map(|(key, tally)| (key.to_owned(), tally.finish()))
        .collect()
}

/// All decisions' figures.
pub fn total(decisions: &[Counted]) -> DecisionFigures {
    let mut tally = Tally::default();
    decisions.iter().for_each(|d| tally.add(d));
    tally.finish()
}

/// Decisions per UTC day, by outcome, oldest day first (days without one are left out).
pub fn per_day(decisions: &[Counted]) -> Vec<DayFigures> {
    let mut days: BTreeMap<&str, DayFigures> = BTreeMap::new();
    for decision in decisions {
        let day = days
            .entry(decision.day.as_str())
            .or_insert_with(|| DayFigures {
                day: decision.day.clone(),
                ..DayFigures::default()
            });
        match decision.outcome {
            Outcome::Approved => day.approved += 1,
            Outcome::Denied => day.denied += 1,
            Outcome::Edited => day.edited += 1,
            Outcome::Expired => day.expired += 1,
        }
    }
    days.into_values().collect()
}

/// Answered decisions by time to decide, every bucket listed (empty ones with 0).
pub fn histogram(decisions: &[Counted]) -> Vec<DecideBucket> {
    let mut counts = [0u64; BUCKETS.len()];
    for ms in decisions.iter().filter_map(|d| d.decide_ms) {
        let bucket = BUCKETS
            .iter()
            .rposition(|(from, _)| ms >= *from)
            .unwrap_or(0);
        counts[bucket] += 1;
    }
    BUCKETS
        .iter()
        .enumerate()
        .map(|(i, (from, label))| DecideBucket {
            label: (*label).to_owned(),
            from_ms: *from,
            to_ms: BUCKETS.get(i + 1).map(|(to, _)| *to),
            count: counts[i],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AnsweredBy, ApprovalId, Decision, GateKind, LoginRef, ToolClass};

    const T0: i64 = 1_796_000_000_000; // 2026-11-30T…Z

    /// A card of `class` opened at `T0 + opened` and resolved `took` ms later as `decision`
    /// by `actor` (`answered_by` from the actor, as the server writes it).
    fn card(
        n: usize,
        class: ToolClass,
        opened: i64,
        took: i64,
        decision: Decision,
        actor: &str,
    ) -> ResolvedCard {
        let answered_by = match actor {
            "timeout" => AnsweredBy::Timeout,
            REVIEWER => AnsweredBy::Reviewer,
            "mode" | "cancel" => AnsweredBy::System,
            a if a.starts_with("rule:") => AnsweredBy::Rule,
            _ => AnsweredBy::User,
        };
        let id = ApprovalId::from(format!("a{n}"));
        let mut resolution = Resolution::plain(
            &id,
            decision,
            answered_by,
            actor,
            Timestamp::from_unix_ms(T0 + opened + took),
        );
        if actor == "browser" {
            resolution.login = Some(LoginRef {
                id: "l1".into(),
                device: "Firefox on Linux".into(),
            });
        }
        ResolvedCard {
            card: CardEssentials {
                approval_id: id,
                session_id: "s1".into(),
                kind: GateKind::Tool,
                tool: "shell".into(),
                class,
                created_at: Timestamp::from_unix_ms(T0 + opened),
                // The built-in agent's default deadline, 10 minutes.
                expires_at: Some(Timestamp::from_unix_ms(T0 + opened + 600_000)),
            },
            resolution,
            source: (class == ToolClass::Edit).then(|| "claude-code".to_owned()),
        }
    }

    /// A scripted history, in resolution order: browser approvals (two of them fast), a
    /// phone's deny and edit, a timeout, a cancel, a rule's and a mode's approvals, and the
    /// reviewer's fast approval.
    fn history() -> Vec<ResolvedCard> {
        use Decision::{AllowAlways, Approve, Cancelled, Deny, Timeout};
        use ToolClass::{Exec, Read};
        vec![
            card(1, Exec, 0, 400, Approve, "browser"),       // fast
            card(2, Exec, 1_000, 2_000, Approve, "browser"), // 2 s
            card(3, ToolClass::Edit, 5_000, 900, AllowAlways, "browser"), // fast; run of 3
            card(4, Exec, 10_000, 5_000, Deny, "token:phone"),
            card(5, Exec, 20_000, 120_000, Timeout, "timeout"), // expired: no decide time
            card(6, Exec, 30_000, 100, Cancelled, "cancel"),    // not a decision
            card(7, Exec, 40_000, 0, Approve, "rule:r1"),       // not a decision
            card(8, Exec, 50_000, 0, Approve, "mode"),          // not a decision
            card(9, Read, 60_000, 20_000, Decision::Edit, "token:phone"),
            card(10, Exec, 90_000, 1_500, Approve, "browser"),
            card(11, Exec, 100_000, 200, Approve, "reviewer"), // not a person's fast approval
            card(12, Exec, 110_000, 3_000, Approve, "browser"),
        ]
    }

    fn counted_history() -> Vec<Counted> {
        history().iter().filter_map(counted).collect()
    }

    #[test]
    fn only_the_persons_answers_and_timeouts_are_decisions() {
        let decisions = counted_history();
        assert_eq!(decisions.len(), 9, "cancel, rule and mode are left out");
        let total = total(&decisions);
        assert_eq!(
            (total.approved, total.denied, total.edited, total.expired),
            (6, 1, 1, 1)
        );
        assert_eq!(total.decisions, 9);
    }

    #[test]
    fn the_median_is_over_answered_cards_and_null_without_any() {
        // Answered times: 400, 2000, 900, 5000, 20000, 1500, 200, 3000 → sorted
        // 200 400 900 1500 2000 3000 5000 20000 → (1500 + 2000) / 2.
        assert_eq!(total(&counted_history()).median_decide_ms, Some(1_750));
        assert_eq!(total(&[]).median_decide_ms, None);
        assert_eq!(median(vec![7, 1, 4]), Some(4));
        let only_expired: Vec<Counted> = counted_history()
            .into_iter()
            .filter(|d| d.outcome == Outcome::Expired)
            .collect();
        assert_eq!(total(&only_expired).median_decide_ms, None);
    }

    #[test]
    fn fast_approvals_are_a_persons_under_one_second() {
        assert_eq!(total(&counted_history()).fast_approvals, 2);
        let by_actor = grouped(&counted_history(), |d| &d.actor);
        assert_eq!(by_actor["browser"].fast_approvals, 2);
        assert_eq!(by_actor["reviewer"].fast_approvals, 0);
        assert_eq!(by_actor["reviewer"].approved, 1);
    }

    /// An outside agent's card with a deadline shorter than a fair chance (1 s, 59.9 s), or
    /// an unreadable one, is in no figure when it expires: the rates and runs stay the
    /// person's own. From 60 s on, an expiry is the person's.
    #[test]
    fn a_card_that_gave_no_fair_chance_is_no_expiry_of_the_person() {
        let with_deadline = |n: usize, opened: i64, deadline: Option<i64>| {
            let mut c = card(n, ToolClass::Exec, opened, 0, Decision::Timeout, "timeout");
            c.card.expires_at = deadline.map(|ms| Timestamp::from_unix_ms(T0 + opened + ms));
            c.resolution.resolved_at = Timestamp::from_unix_ms(T0 + opened + deadline.unwrap_or(1));
            c.source = Some("codex".into());
            c
        };
        let mut rows = history();
        let baseline = total(&counted_history());
        // Five 1-second cards between the browser's approvals, as the red team made them.
        for (n, deadline) in [
            (21, Some(1_000)),
            (22, Some(1)),
            (23, Some(59_999)),
            (24, None),
            (25, Some(0)),
        ] {
            rows.insert(1, with_deadline(n, 500 + n as i64, deadline));
        }
        let mut unreadable = with_deadline(26, 700, Some(120_000));
        unreadable.card.created_at = Timestamp::from("yesterday");
        rows.insert(2, unreadable);
        let decisions: Vec<Counted> = rows.iter().filter_map(counted).collect();
        assert_eq!(
            total(&decisions),
            baseline,
            "the short cards changed the figures"
        );
        assert!(!grouped(&decisions, |d| &d.agent).contains_key("codex"));

        rows.insert(1, with_deadline(27, 600, Some(FAIR_CHANCE_MS as i64)));
        let decisions: Vec<Counted> = rows.iter().filter_map(counted).collect();
        assert_eq!(total(&decisions).expired, baseline.expired + 1);
        assert_eq!(grouped(&decisions, |d| &d.agent)["codex"].expired, 1);
    }

    #[test]
    fn the_longest_run_is_broken_by_any_other_decision() {
        let decisions = counted_history();
        // approve approve allow | deny | expired | edit | approve reviewer-approve approve
        assert_eq!(total(&decisions).longest_approve_run, 3);
        let by_actor = grouped(&decisions, |d| &d.actor);
        // The browser's own answers in order: a a a a a (the phone's are not in its group).
        assert_eq!(by_actor["browser"].longest_approve_run, 5);
        assert_eq!(by_actor["token:phone"].longest_approve_run, 0);
    }

    #[test]
    fn groups_split_by_actor_device_class_and_agent() {
        let decisions = counted_history();
        let by_actor = grouped(&decisions, |d| &d.actor);
        assert_eq!(
            by_actor.keys().collect::<Vec<_>>(),
            ["browser", "reviewer", "timeout", "token:phone"]
        );
        assert_eq!(by_actor["timeout"].expired, 1);
        let phone = &by_actor["token:phone"];
        assert_eq!((phone.decisions, phone.denied, phone.edited), (2, 1, 1));
        assert_eq!(phone.median_decide_ms, Some(12_500));
        let by_device = grouped(&decisions, |d| &d.device);
        assert_eq!(by_device["browser login · Firefox on Linux"].decisions, 5);
        assert_eq!(by_device["token phone"].decisions, 2);
        let by_class = grouped(&decisions, |d| &d.class);
        assert_eq!(by_class["exec"].decisions, 7);
        assert_eq!(by_class["edit"].approved, 1);
        assert_eq!(by_class["read"].edited, 1);
        let by_agent = grouped(&decisions, |d| &d.agent);
        assert_eq!(by_agent["claude-code"].decisions, 1);
        assert_eq!(by_agent[BUILT_IN_AGENT].decisions, 8);
    }

    /// A person's answers through their browser login and through their tokens are theirs;
    /// the admin's, the reviewer's and timeouts are no person's.
    #[test]
    fn a_persons_answers_through_any_credential_of_theirs_are_theirs() {
        use Decision::{Approve, Deny};
        use ToolClass::Exec;
        let decisions: Vec<Counted> = [
            card(1, Exec, 0, 2_000, Approve, "person:alice@x.test"),
            card(
                2,
                Exec,
                1_000,
                4_000,
                Deny,
                "person:alice@x.test via token:phone",
            ),
            card(
                3,
                Exec,
                2_000,
                2_000,
                Approve,
                "person:bob@x.test via token:wall",
            ),
            card(4, Exec, 3_000, 2_000, Approve, "browser"),
            card(
                5,
                Exec,
                4_000,
                2_000,
                Approve,
                "person:alice@x.test via token:",
            ),
            card(6, Exec, 5_000, 200, Approve, REVIEWER),
        ]
        .iter()
        .filter_map(counted)
        .collect();
        let people = per_person(&decisions);
        assert_eq!(
            people.keys().collect::<Vec<_>>(),
            ["alice@x.test", "bob@x.test"]
        );
        let alice = &people["alice@x.test"];
        assert_eq!((alice.decisions, alice.approved, alice.denied), (2, 1, 1));
        assert_eq!(alice.median_decide_ms, Some(3_000));
        assert_eq!(people["bob@x.test"].approved, 1);
        let by_device = grouped(&decisions, |d| &d.device);
        assert_eq!(by_device["alice@x.test via token phone"].denied, 1);
    }

    #[test]
    fn days_and_the_histogram_count_every_decision_in_its_place() {
        let mut decisions = counted_history();
        let next_day = card(
            13,
            ToolClass::Exec,
            86_400_000,
            700_000,
            Decision::Deny,
            "browser",
        );
        decisions.extend(counted(&next_day));
        let days = per_day(&decisions);
        assert_eq!(days.len(), 2);
        assert_eq!(days[0].day, Timestamp::from_unix_ms(T0).as_str()[..10]);
        assert_eq!(
            (
                days[0].approved,
                days[0].denied,
                days[0].edited,
                days[0].expired
            ),
            (6, 1, 1, 1)
        );
        assert_eq!((days[1].denied, days[1].approved), (1, 0));
        let bars = histogram(&decisions);
        let counts: Vec<u64> = bars.iter().map(|b| b.count).collect();
        // <1 s: 400 900 200 · 1–3 s: 2000 1500 · 3–10 s: 5000 3000 · 10–30 s: 20000 ·
        // >10 min: 700000; the expired card is in none.
        assert_eq!(counts, [3, 2, 2, 1, 0, 0, 1]);
        assert_eq!(bars[0].label, "<1 s");
        assert_eq!((bars[1].from_ms, bars[1].to_ms), (1_000, Some(3_000)));
        assert_eq!(bars[6].to_ms, None);
    }
}
