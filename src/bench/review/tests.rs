use super::*;
use crate::server::review::test_cards::shell;

fn step(command: &str, answer: Answer) -> Step {
    Step {
        card: shell(command),
        answer,
        day: 0,
    }
}

#[test]
fn the_corpus_is_the_same_every_time_and_of_a_week() {
    let day = corpus::week();
    assert_eq!(day.len(), corpus::week().len());
    assert!((1500..=10000).contains(&day.len()), "{}", day.len());
    assert_eq!(day.last().map(|s| s.day), Some(corpus::DAYS - 1));
    assert!(day.windows(2).all(|w| w[0].day <= w[1].day));
    let summaries: Vec<&str> = day.iter().map(|s| s.card.summary.as_str()).collect();
    let again = corpus::week();
    assert!(
        summaries
            .iter()
            .zip(&again)
            .all(|(a, b)| *a == b.card.summary)
    );
    let refused = day
        .iter()
        .filter(|s| matches!(s.answer, Answer::Denied | Answer::Edited))
        .count();
    assert!(refused > 0 && refused * 10 < day.len(), "{refused}");
}

/// A few commands make most of the calls, and a long tail turns up.
#[test]
fn the_commands_repeat_like_a_coding_agents() {
    let week = corpus::week();
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for s in week.iter().filter(|s| s.card.tool == "shell") {
        *counts.entry(s.card.summary.as_str()).or_default() += 1;
    }
    let mut by_use: Vec<usize> = counts.values().copied().collect();
    by_use.sort_unstable_by(|a, b| b.cmp(a));
    let total: usize = by_use.iter().sum();
    let top5: usize = by_use.iter().take(5).sum();
    assert!(
        top5 * 3 > total,
        "the top 5 of {} make {top5} of {total}",
        by_use.len()
    );
    assert!(
        by_use.iter().filter(|n| **n <= 3).count() >= 10,
        "{by_use:?}"
    );
}

#[test]
fn the_days_are_counted_and_trust_events_dated() {
    let thresholds = Thresholds {
        min_cards: 10,
        min_agreement: 0.5,
    };
    let mut steps: Vec<Step> = (0..12)
        .map(|_| step("cargo check", Answer::Approved))
        .collect();
    for s in steps.iter_mut().skip(6) {
        s.day = 1;
    }
    let r = replay(&steps, &thresholds);
    let days: Vec<(usize, usize, usize)> = r
        .days
        .iter()
        .map(|d| (d.cards, d.to_person, d.reviewer_answered))
        .collect();
    assert_eq!(days, vec![(6, 6, 0), (6, 4, 2)]);
    assert_eq!(
        r.trust_events,
        vec![TrustEvent {
            class: ToolClass::Exec,
            day: 1,
            card: 9,
            gained: true
        }]
    );
}

/// A class is trusted once eligible, answers from then on, and loses its trust at the first
/// false approval.
#[test]
fn trust_is_earned_used_and_lost() {
    let thresholds = Thresholds {
        min_cards: 10,
        min_agreement: 0.5,
    };
    let mut steps: Vec<Step> = (0..20)
        .map(|_| step("cargo check", Answer::Approved))
        .collect();
    steps.push(step("cargo check", Answer::Denied));
    steps.extend((0..5).map(|_| step("cargo check", Answer::Approved)));
    let r = replay(&steps, &thresholds);
    // 5 escalations met by approvals, then approvals; eligible at card 10 (5 of 10 agree).
    assert_eq!(r.trusted_times, 1);
    assert_eq!(r.reviewer_answered, 11);
    assert_eq!(r.false_approvals, 1);
    assert_eq!(r.trust_lost, 1);
    assert_eq!(r.false_approval_cards, vec![(0, "cargo check".to_owned())]);
    // After the deny the subject is refused: every later card goes to the person.
    assert_eq!(r.to_person, 10 + 5);
    assert_eq!(r.standings.len(), 1);
    assert!(!r.standings[0].trusted);
}

#[test]
fn the_figure_is_printed_with_its_conditions() {
    let figure = figure();
    assert_eq!(figure.id, 12);
    assert_eq!(figure.values[0], ("reviewer off", 100.0, "%"));
    assert_eq!(figure.values[3].0, "reviewer on, last day");
    assert!(
        figure.conditions.contains("day 5 "),
        "{}",
        figure.conditions
    );
    assert!(figure.conditions.contains("history reviewer"));
}
