use super::*;

/// `n` predictions of `predicted` on exec cards of the built-in agent, each met by `outcome`,
/// numbered from `from` (their time orders them).
fn run(from: usize, n: usize, predicted: Predicted, outcome: Outcome) -> Vec<Answered> {
    (from..from + n)
        .map(|i| Answered {
            approval_id: ApprovalId::new(format!("a{i}")),
            class: ToolClass::Exec,
            source: "countersign".into(),
            predicted,
            reason: format!("reason {i}"),
            outcome,
            at: Timestamp::from_unix_ms(1_000_000 + i as i64),
        })
        .collect()
}

fn agreeing(from: usize, n: usize) -> Vec<Answered> {
    run(from, n, Predicted::Approve, Outcome::Approved)
}

fn only(answered: &[Answered]) -> ClassStanding {
    let mut all = standing(answered, &Thresholds::default(), &[]);
    assert_eq!(all.len(), 1);
    all.remove(0)
}

#[test]
fn what_agrees_and_what_is_a_false_approval() {
    use Outcome::*;
    use Predicted::*;
    for (predicted, outcome, agreed, false_approval) in [
        (Approve, Approved, true, false),
        (Approve, Denied, false, true),
        (Approve, Edited, false, true),
        (Approve, Expired, false, false),
        (Escalate, Approved, false, false),
        (Escalate, Denied, true, false),
        (Escalate, Edited, true, false),
        (Escalate, Expired, true, false), // agrees, but counted nowhere (by_a_person)
        (Approve, Reviewer, true, false),
        (Approve, Disagreed, false, true),
    ] {
        assert_eq!(
            agrees(predicted, outcome),
            agreed,
            "{predicted} {outcome:?}"
        );
        assert_eq!(
            is_false_approval(predicted, outcome),
            false_approval,
            "{predicted} {outcome:?}"
        );
    }
}

#[test]
fn forty_nine_cards_are_not_enough_fifty_are() {
    assert!(!only(&agreeing(0, 49)).eligible);
    let fifty = only(&agreeing(0, 50));
    assert!(fifty.eligible);
    assert_eq!((fifty.cards, fifty.agreed, fifty.agreement), (50, 50, 1.0));
}

#[test]
fn agreement_is_judged_over_the_last_min_cards() {
    // 48 of the last 50 agree: 0.96, below 0.97, however good the 950 before them.
    let mut below = agreeing(0, 950);
    below.extend(run(950, 2, Predicted::Escalate, Outcome::Approved));
    below.extend(agreeing(952, 48));
    let below = only(&below);
    assert_eq!(below.recent_agreement, 0.96);
    assert_eq!(below.agreement, 0.998);
    assert!(!below.eligible, "one disagreement too many in the last 50");
    // 49 of the last 50: 0.98.
    let mut at = agreeing(0, 950);
    at.extend(run(950, 1, Predicted::Escalate, Outcome::Approved));
    at.extend(agreeing(951, 49));
    let at = only(&at);
    assert_eq!(at.recent_agreement, 0.98);
    assert!(at.eligible);
}

#[test]
fn an_early_bad_run_does_not_count_once_the_last_min_cards_are_clean() {
    // The history reviewer's learning: 40 escalations the person approved, then 50 agreeing.
    let mut list = run(0, 40, Predicted::Escalate, Outcome::Approved);
    list.extend(agreeing(40, 50));
    let learnt = only(&list);
    assert_eq!((learnt.cards, learnt.agreed), (90, 50));
    assert!(learnt.agreement < 0.6);
    assert_eq!(learnt.recent_agreement, 1.0);
    assert!(learnt.eligible);
    // One card fewer since the bad run: its last one is still in the window.
    let mut list = run(0, 40, Predicted::Escalate, Outcome::Approved);
    list.extend(agreeing(40, 49));
    let learning = only(&list);
    assert_eq!(learning.recent_agreement, 0.98);
    assert!(learning.eligible, "one disagreement in 50 is within 0.97");
    let mut list = run(0, 40, Predicted::Escalate, Outcome::Approved);
    list.extend(agreeing(40, 48));
    assert!(!only(&list).eligible, "two in 50 are not");
}

#[test]
fn recent_agreement_is_over_what_there_is_and_zero_with_nothing() {
    let mut list = agreeing(0, 3);
    list.extend(run(3, 1, Predicted::Escalate, Outcome::Approved));
    let few = only(&list);
    assert_eq!(few.recent_agreement, 0.75);
    assert!(!few.eligible, "too few cards");
    let none = standing(
        &[],
        &Thresholds::default(),
        &[(ToolClass::Read, "x".into())],
    );
    assert_eq!(none[0].recent_agreement, 0.0);
}

#[test]
fn a_false_approval_blocks_until_min_cards_person_answers_come_after_it() {
    // Long ago: 1 false approval, then 50 agreeing.
    let mut old = agreeing(0, 949);
    old.extend(run(949, 1, Predicted::Approve, Outcome::Denied));
    old.extend(agreeing(950, 50));
    let old = only(&old);
    assert_eq!(old.false_approvals, 1);
    assert!(old.eligible, "50 person answers since");
    // 49 since.
    let mut recent = agreeing(0, 950);
    recent.extend(run(950, 1, Predicted::Approve, Outcome::Edited));
    recent.extend(agreeing(951, 49));
    let recent = only(&recent);
    assert_eq!(recent.false_approvals, 1);
    assert!(!recent.eligible, "49 person answers since");
}

#[test]
fn a_disagreement_on_a_card_the_reviewer_answered_is_a_false_approval() {
    let mut list = agreeing(0, 60);
    list.extend(run(60, 5, Predicted::Approve, Outcome::Reviewer));
    list.extend(run(65, 1, Predicted::Approve, Outcome::Disagreed));
    let standing = only(&list);
    assert_eq!((standing.cards, standing.agreed), (60, 60));
    assert_eq!(standing.false_approvals, 1);
    assert!(!standing.eligible);
    // Reviewer answers after it wash nothing out; 49 person answers are not enough, 50 are.
    list.extend(run(66, 500, Predicted::Approve, Outcome::Reviewer));
    list.extend(agreeing(566, 49));
    assert!(
        !only(&list).eligible,
        "49 person answers since the disagreement"
    );
    list.extend(agreeing(615, 1));
    assert!(only(&list).eligible);
}

/// The red-team's attack: an agent opens gates with a one-second deadline; the reviewer
/// escalates, the gates expire. Nobody answered: nothing counted.
#[test]
fn fifty_two_expired_gates_make_nothing_eligible() {
    let expired = only(&run(0, 52, Predicted::Escalate, Outcome::Expired));
    assert_eq!((expired.cards, expired.agreed), (0, 0));
    assert_eq!(expired.recent_agreement, 0.0);
    assert!(!expired.eligible);
    // Nor do they top up a class one card short, nor wash out a false approval.
    let mut short = agreeing(0, 49);
    short.extend(run(49, 52, Predicted::Escalate, Outcome::Expired));
    let short = only(&short);
    assert_eq!(short.cards, 49);
    assert!(!short.eligible);
    let mut washed = agreeing(0, 100);
    washed.extend(run(100, 1, Predicted::Approve, Outcome::Denied));
    washed.extend(run(101, 52, Predicted::Escalate, Outcome::Expired));
    washed.extend(run(153, 52, Predicted::Approve, Outcome::Expired));
    washed.extend(agreeing(205, 49));
    assert!(
        !only(&washed).eligible,
        "only 49 person answers since the deny"
    );
}

#[test]
fn the_reviewers_own_answers_count_for_nothing() {
    let own = only(&run(0, 60, Predicted::Approve, Outcome::Reviewer));
    assert_eq!((own.cards, own.agreed), (0, 0));
    assert!(!own.eligible);
    // Nor do they dilute disagreement: 2 in the last 50 person answers stay 0.96.
    let mut list = agreeing(0, 48);
    list.extend(run(48, 2, Predicted::Escalate, Outcome::Approved));
    list.extend(run(50, 100, Predicted::Approve, Outcome::Reviewer));
    let diluted = only(&list);
    assert_eq!(diluted.recent_agreement, 0.96);
    assert!(!diluted.eligible);
}

#[test]
fn classes_and_agents_stand_apart_and_trust_is_reported() {
    let mut list = agreeing(0, 50);
    let mut claude = agreeing(50, 3);
    for a in &mut claude {
        a.source = "claude-code".into();
    }
    let mut edits = agreeing(60, 2);
    for a in &mut edits {
        a.class = ToolClass::Edit;
    }
    list.extend(claude);
    list.extend(edits);
    let trusted = vec![
        (ToolClass::Exec, "countersign".to_owned()),
        (ToolClass::Read, "codex".to_owned()),
    ];
    let all = standing(&list, &Thresholds::default(), &trusted);
    let keys: Vec<(ToolClass, &str, u64, bool, bool)> = all
        .iter()
        .map(|s| (s.class, s.source.as_str(), s.cards, s.trusted, s.eligible))
        .collect();
    assert_eq!(
        keys,
        vec![
            (ToolClass::Edit, "countersign", 2, false, false),
            (ToolClass::Exec, "claude-code", 3, false, false),
            (ToolClass::Exec, "countersign", 50, true, true),
            (ToolClass::Read, "codex", 0, true, false),
        ]
    );
    assert_eq!(all[3].agreement, 0.0);
}

#[test]
fn raised_thresholds_are_honoured() {
    let raised = Thresholds {
        min_cards: 100,
        min_agreement: 0.99,
    };
    let list = agreeing(0, 99);
    assert!(!standing(&list, &raised, &[])[0].eligible);
    assert!(standing(&agreeing(0, 100), &raised, &[])[0].eligible);
    // One disagreement in the last 100 is 0.99; two are not.
    let mut one = agreeing(0, 99);
    one.extend(run(99, 1, Predicted::Escalate, Outcome::Approved));
    assert!(standing(&one, &raised, &[])[0].eligible);
    let mut two = agreeing(0, 98);
    two.extend(run(98, 2, Predicted::Escalate, Outcome::Approved));
    assert!(!standing(&two, &raised, &[])[0].eligible);
}

#[test]
fn recent_is_newest_first_whatever_the_order_given() {
    let mut list = agreeing(0, 3);
    list.extend(run(3, 1, Predicted::Approve, Outcome::Disagreed));
    list.extend(run(4, 1, Predicted::Escalate, Outcome::Expired));
    list.reverse();
    list.swap(1, 3);
    let recent = recent(&list, 3);
    let seen: Vec<(&str, &str, bool)> = recent
        .iter()
        .map(|r| (r.approval_id.as_str(), r.answered.as_str(), r.agreed))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("a4", "expired", true),
            ("a3", "reviewer", false),
            ("a2", "approved", true)
        ]
    );
    assert_eq!(recent[0].reason, "reason 4");
}
