use super::*;
use crate::server::review::test_cards::shell;

fn step(command: &str, answer: Answer) -> Step {
    Step {
        card: shell(command),
        answer,
    }
}

#[test]
fn the_corpus_is_the_same_every_time_and_of_a_day() {
    let day = corpus::day();
    assert_eq!(day.len(), corpus::day().len());
    assert!((300..=2000).contains(&day.len()), "{}", day.len());
    let summaries: Vec<&str> = day.iter().map(|s| s.card.summary.as_str()).collect();
    let again = corpus::day();
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
    assert!(figure.conditions.contains("history reviewer"));
}
