//! The store's test suite, backend-neutral: every backend runs it (`sqlite/` on a temp file,
//! `postgres/` on a fresh database of a throwaway cluster), so both keep the same semantics —
//! seqs without gaps, one winner of a compare-and-set, mode changes in the same transaction,
//! one linear audit chain, unique token names, idempotency keys, and one answer to a NUL
//! character (kept inside an event, refused in a column of its own, nothing written).

// A suite of tests both backends run (from their own test modules): each test reads as one
// story, so the function-length rule for production code does not apply here.
#![allow(clippy::too_many_lines)]

use std::sync::Arc;

use crate::protocol::{
    AnsweredBy, ApprovalRequest, Decision, EventBody, Mode, Resolution, Role, Scope, Stored,
    Timestamp, TurnStatus,
};
use crate::server::store::{
    Commit, ExternalGate, GateChange, NewEvent, SessionRow, Store, StoreError, TokenRow,
};

/// Every test of the suite, one after the other, on one store (ids do not collide).
pub async fn run_all(store: Arc<dyn Store>) {
    seq_starts_at_one_and_has_no_gaps_under_concurrency(store.clone()).await;
    append_to_unknown_session_fails_and_mode_follows_in_same_transaction(store.clone()).await;
    delete_removes_the_log_and_unfinished_turns_are_found(store.clone()).await;
    exactly_one_of_fifty_concurrent_resolutions_commits(store.clone()).await;
    the_audit_chain_is_one_line_under_concurrency(store.clone()).await;
    token_names_are_unique_and_revoking_is_audited(store.clone()).await;
    a_token_keeps_its_maker(store.clone()).await;
    an_agents_name_is_its_first_tokens_until_that_token_goes(store.clone()).await;
    an_idempotency_key_names_one_gate(store.clone()).await;
    a_nul_is_kept_in_events_and_refused_in_columns(store.clone()).await;
    push_subscriptions_are_one_per_endpoint_and_go_with_their_token(store.clone()).await;
    passkeys_are_named_once(store.clone()).await;
    super::conformance_people::people_are_one_per_email_and_bound_once(store.clone()).await;
    super::conformance_quorum::a_session_keeps_its_owner(store.clone()).await;
    super::conformance_quorum::approvals_count_distinct_people_on_one_digest(store.clone()).await;
    super::conformance_quorum::two_approvals_at_once_are_counted_in_turn(store.clone()).await;
    super::conformance_quorum::an_escalation_is_marked_once(store.clone()).await;
    a_hashed_secret_is_found_as_its_kind_taken_once_and_lapses(store.clone()).await;
    a_made_title_never_overwrites_a_rename(store.clone()).await;
    a_prediction_meets_one_answer_and_trust_is_audited(store.clone()).await;
    resolved_cards_come_in_their_window_in_resolution_order(store.clone()).await;
    no_flood_pushes_a_persons_refusal_out_of_the_history(store.clone()).await;
    super::conformance_grants::grants_run_out_and_say_why(store.clone()).await;
    super::conformance_grants::only_one_racing_call_spends_the_last_use(store.clone()).await;
    super::conformance_grants::a_grant_in_force_is_read_by_id(store.clone()).await;
    super::conformance_grants::a_grant_answers_only_the_agent_it_was_made_for(store.clone()).await;
    super::conformance_grants::a_freed_name_takes_its_grants_and_trust_with_it(store).await;
}

/// A prediction is stored once and meets one answer; it outlives its session; the latest
/// answered cards read back newest first; a trust given or lost is audited with its class
/// and agent, and ending every trust ends each.
async fn a_prediction_meets_one_answer_and_trust_is_audited(store: Arc<dyn Store>) {
    use crate::protocol::{Answered, Predicted, ToolClass};
    use crate::server::store::review::{PredictionRow, TrustRow};
    store.create_session(&session("rev")).await.unwrap();
    for id in ["rev-1", "rev-2"] {
        let open = Commit {
            gate: Some(GateChange::Open(Box::new(gate("rev", id)))),
            ..Commit::default()
        };
        store
            .append(&"rev".into(), vec![msg(id)], open)
            .await
            .unwrap();
        let mut answered = resolution(id, Decision::Approve);
        answered.resolved_at = Timestamp::now();
        let answer = Commit {
            gate: Some(GateChange::Resolve {
                resolution: answered,
                new_rule: None,
            }),
            ..Commit::default()
        };
        store
            .append(&"rev".into(), vec![msg(id)], answer)
            .await
            .unwrap();
    }
    // The limit bounds the person's approvals; their refusals (other tests') come besides.
    let cards = store.answered_cards(1).await.unwrap();
    let approvals: Vec<_> = cards
        .iter()
        .filter(|(_, r)| r.decision == Decision::Approve)
        .collect();
    assert_eq!(approvals.len(), 1);
    // Newest first: the two just answered lead (other tests of the suite answered theirs).
    let ids: Vec<String> = store
        .answered_cards(2)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, r)| r.approval_id.to_string())
        .collect();
    assert!(
        ids.contains(&"rev-1".into()) && ids.contains(&"rev-2".into()),
        "{ids:?}"
    );
    let row = PredictionRow {
        approval_id: "rev-1".into(),
        session_id: "rev".into(),
        class: ToolClass::Exec,
        source: "countersign".into(),
        reviewer: "history".into(),
        predicted: Predicted::Approve,
        reason: "approved 5 times".into(),
        predicted_at: Timestamp::now(),
        answered: None,
        answered_at: None,
        disagreed_at: None,
    };
    assert!(store.save_prediction(&row).await.unwrap());
    assert!(!store.save_prediction(&row).await.unwrap(), "once");
    assert!(store.answered_predictions(10).await.unwrap().is_empty());
    let at = Timestamp::now();
    assert!(
        store
            .record_answer("rev-1", Answered::Denied, &at)
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_answer("rev-1", Answered::Approved, &at)
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_answer("nope", Answered::Approved, &at)
            .await
            .unwrap()
    );
    // Only the reviewer's own answer can be disagreed with.
    assert!(!store.mark_disagreed("rev-1", &at).await.unwrap());
    assert!(store.delete_session(&"rev".into()).await.unwrap());
    let kept = store
        .prediction("rev-1")
        .await
        .unwrap()
        .expect("outlives its session");
    assert_eq!(
        (kept.answered, kept.predicted),
        (Some(Answered::Denied), Predicted::Approve)
    );
    assert_eq!(store.answered_predictions(10).await.unwrap(), vec![kept]);
    let trust = TrustRow {
        class: ToolClass::Read,
        source: "codex".into(),
        trusted_at: Timestamp::now(),
        reviewer: "model http://127.0.0.1:11434/v1 judge".into(),
    };
    assert!(store.trust_class(&trust, "browser").await.unwrap());
    assert!(!store.trust_class(&trust, "browser").await.unwrap());
    let edit = TrustRow {
        class: ToolClass::Edit,
        ..trust.clone()
    };
    assert!(store.trust_class(&edit, "browser").await.unwrap());
    let trusts = store.trusted_classes().await.unwrap();
    assert_eq!(trusts.len(), 2);
    assert!(
        trusts.iter().all(|t| t.reviewer == trust.reviewer),
        "the reviewer that earned it is kept: {trusts:?}"
    );
    assert!(
        store
            .untrust_class(ToolClass::Read, "codex", "reviewer", "a false approval")
            .await
            .unwrap()
    );
    assert!(
        !store
            .untrust_class(ToolClass::Read, "codex", "reviewer", "again")
            .await
            .unwrap()
    );
    assert_eq!(store.untrust_all("file", "mode left on").await.unwrap(), 1);
    assert!(store.trusted_classes().await.unwrap().is_empty());
    let given = store
        .audit_after(0, 100, Some("review_trusted"), None)
        .await
        .unwrap();
    let lost = store
        .audit_after(0, 100, Some("review_untrusted"), None)
        .await
        .unwrap();
    assert_eq!((given.len(), lost.len()), (2, 2));
    assert_eq!(given[0].subject, "review:read/codex");
    assert!(
        !serde_json::to_string(&lost)
            .unwrap()
            .contains("approved 5 times")
    );
}

/// A push subscription's endpoint names one row (subscribing again replaces it); removing one
/// is audited; revoking a token removes its subscriptions in the same transaction.
async fn push_subscriptions_are_one_per_endpoint_and_go_with_their_token(store: Arc<dyn Store>) {
    use crate::server::store::push::PushSubscriptionRow;
    let row = |id: &str, endpoint: &str, credential: &str| PushSubscriptionRow {
        id: id.into(),
        endpoint: endpoint.into(),
        p256dh: "k".into(),
        auth: "a".into(),
        credential: credential.into(),
        credential_check: "c".into(),
        created_at: Timestamp::now(),
    };
    store
        .save_push_subscription(&row("s1", "https://push.example/1", "token:pager"))
        .await
        .unwrap();
    store
        .save_push_subscription(&row("s2", "https://push.example/1", "token:pager"))
        .await
        .unwrap();
    store
        .save_push_subscription(&row("s3", "https://push.example/3", "browser"))
        .await
        .unwrap();
    let ids: Vec<String> = store
        .push_subscriptions()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(
        ids,
        ["s2", "s3"],
        "the same endpoint again replaces its row"
    );
    assert!(store.push_subscription("s1").await.unwrap().is_none());
    assert_eq!(
        store
            .push_subscription("s2")
            .await
            .unwrap()
            .unwrap()
            .credential_check,
        "c"
    );
    assert!(
        store
            .delete_push_subscription("s3", "browser")
            .await
            .unwrap()
    );
    assert!(
        !store
            .delete_push_subscription("s3", "browser")
            .await
            .unwrap()
    );
    let token = TokenRow {
        name: "pager".into(),
        scope: Scope::Approve.into(),
        secret_hash: "pager-hash".into(),
        created_at: Timestamp::now(),
        last_used_at: None,
        owner: None,
    };
    store.create_token(&token, "browser").await.unwrap();
    assert!(store.delete_token("pager", "browser").await.unwrap());
    assert!(store.push_subscriptions().await.unwrap().is_empty());
    let audited = store
        .audit_after(0, 1000, Some("push_subscribed"), None)
        .await
        .unwrap();
    assert_eq!(audited.len(), 3);
    assert_eq!(audited[0].subject, "push:s1");
    assert_eq!(audited[0].detail["push_service"], "push.example");
}

/// A passkey's name is taken once; touching it keeps its new counter; one is removed, all are
/// reset (audited); a ceremony's nonce is spent once.
async fn passkeys_are_named_once(store: Arc<dyn Store>) {
    use crate::server::store::passkeys::PasskeyRow;
    let row = |id: &str, name: &str| PasskeyRow {
        id: id.into(),
        name: name.into(),
        rp_id: "localhost".into(),
        origin: "http://localhost:1/".into(),
        credential: "{}".into(),
        created_at: Timestamp::now(),
        last_used_at: None,
    };
    store
        .add_passkey(&row("p1", "laptop"), "browser")
        .await
        .unwrap();
    assert!(matches!(
        store.add_passkey(&row("p2", "laptop"), "browser").await,
        Err(StoreError::Taken(_))
    ));
    store
        .add_passkey(&row("p3", "phone"), "browser")
        .await
        .unwrap();
    store
        .touch_passkey("p1", "{\"n\":2}", &Timestamp::now())
        .await
        .unwrap();
    let rows = store.passkeys().await.unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].credential, "{\"n\":2}");
    assert!(rows[0].last_used_at.is_some());
    assert_eq!(rows[0].origin, "http://localhost:1/");
    assert!(store.remove_passkey("p3", "browser").await.unwrap());
    assert!(!store.remove_passkey("p3", "browser").await.unwrap());
    assert_eq!(store.reset_passkeys("cli").await.unwrap(), 1);
    assert!(store.passkeys().await.unwrap().is_empty());
    let reset = store
        .audit_after(0, 1000, Some("passkeys_reset"), None)
        .await
        .unwrap();
    assert_eq!((reset.len(), reset[0].actor.as_str()), (1, "cli"));
}

/// A kept secret is found only as its own kind and only until it lapses; a take hands it to
/// one of fifty takers at once; replacing keeps one of a kind; a hash is kept once.
async fn a_hashed_secret_is_found_as_its_kind_taken_once_and_lapses(store: Arc<dyn Store>) {
    use crate::server::store::secrets::{HashedSecret, SecretKind};
    let row = |hash: &str, kind, expires_ms| HashedSecret {
        hash: hash.into(),
        kind,
        body: format!("{{\"for\":\"{hash}\"}}"),
        created_ms: Timestamp::now_ms(),
        expires_ms,
    };
    let later = Some(Timestamp::now_ms() + 60_000);
    store
        .keep_secret(&row("h1", SecretKind::LoginCode, later))
        .await
        .unwrap();
    assert!(matches!(
        store
            .keep_secret(&row("h1", SecretKind::Capability, later))
            .await,
        Err(StoreError::Taken(_))
    ));
    let found = store
        .find_secret(SecretKind::LoginCode, "h1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (found.kind, found.body.as_str(), found.expires_ms),
        (SecretKind::LoginCode, "{\"for\":\"h1\"}", later)
    );
    for other in [
        SecretKind::BrowserLogin,
        SecretKind::Capability,
        SecretKind::AdminToken,
    ] {
        assert_eq!(store.find_secret(other, "h1").await.unwrap(), None);
        assert_eq!(store.take_secret(other, "h1").await.unwrap(), None);
    }
    // Fifty takers at once: one gets it.
    let takers = (0..50).map(|_| {
        let store = store.clone();
        tokio::spawn(async move { store.take_secret(SecretKind::LoginCode, "h1").await })
    });
    let taken = futures::future::join_all(takers)
        .await
        .into_iter()
        .filter(|t| matches!(t, Ok(Ok(Some(_)))))
        .count();
    assert_eq!(taken, 1);
    assert_eq!(
        store
            .find_secret(SecretKind::LoginCode, "h1")
            .await
            .unwrap(),
        None
    );
    // A lapsed one grants nothing, and is pruned as new ones come.
    let past = Some(Timestamp::now_ms() - 1);
    store
        .keep_secret(&row("h2", SecretKind::BrowserLogin, past))
        .await
        .unwrap();
    assert_eq!(
        store
            .find_secret(SecretKind::BrowserLogin, "h2")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .take_secret(SecretKind::BrowserLogin, "h2")
            .await
            .unwrap(),
        None
    );
    store
        .keep_secret(&row("h3", SecretKind::BrowserLogin, None))
        .await
        .unwrap();
    store
        .keep_secret(&row("h2", SecretKind::BrowserLogin, None))
        .await
        .expect("the lapsed h2 was pruned");
    assert_eq!(
        store
            .secrets_of(SecretKind::BrowserLogin)
            .await
            .unwrap()
            .len(),
        2
    );
    // One admin token: a replace leaves only the new one.
    store
        .replace_secrets(&row("a1", SecretKind::AdminToken, None))
        .await
        .unwrap();
    store
        .replace_secrets(&row("a2", SecretKind::AdminToken, None))
        .await
        .unwrap();
    // Instances started together with the same token each keep it: no conflict.
    let again = (0..8).map(|_| {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .replace_secrets(&row("a2", SecretKind::AdminToken, None))
                .await
        })
    });
    for kept in futures::future::join_all(again).await {
        kept.unwrap()
            .expect("keeping the same admin token again is no conflict");
    }
    let admins = store.secrets_of(SecretKind::AdminToken).await.unwrap();
    assert_eq!(
        admins.iter().map(|r| r.hash.as_str()).collect::<Vec<_>>(),
        ["a2"]
    );
    assert_eq!(
        store
            .forget_secrets(SecretKind::BrowserLogin, Some("h3"))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .forget_secrets(SecretKind::BrowserLogin, None)
            .await
            .unwrap(),
        1
    );
    assert!(
        store
            .secrets_of(SecretKind::BrowserLogin)
            .await
            .unwrap()
            .is_empty()
    );
}

/// A rename always lands; a title made from the first message only while the title is still
/// the one it expects; an unknown session changes nothing.
async fn a_made_title_never_overwrites_a_rename(store: Arc<dyn Store>) {
    let mut row = session("titled");
    row.title = "New session".into();
    store.create_session(&row).await.unwrap();
    let title = |store: Arc<dyn Store>| async move {
        store
            .get_session(&"titled".into())
            .await
            .unwrap()
            .unwrap()
            .title
    };
    assert!(
        store
            .set_session_title(&"titled".into(), "deploy notes", Some("New session"))
            .await
            .unwrap()
    );
    assert_eq!(title(store.clone()).await, "deploy notes");
    assert!(
        store
            .set_session_title(&"titled".into(), "mine", None)
            .await
            .unwrap()
    );
    assert!(
        !store
            .set_session_title(&"titled".into(), "from a message", Some("New session"))
            .await
            .unwrap()
    );
    assert_eq!(title(store.clone()).await, "mine");
    assert!(
        !store
            .set_session_title(&"no-such-session".into(), "x", None)
            .await
            .unwrap()
    );
    assert!(matches!(
        store
            .set_session_title(&"titled".into(), "bad\0title", None)
            .await,
        Err(StoreError::Unstorable(_))
    ));
    assert_eq!(title(store).await, "mine");
}

/// A fresh session row.
pub fn session(id: &str) -> SessionRow {
    SessionRow {
        id: id.into(),
        title: "t".into(),
        created_at: Timestamp::now(),
        approval_mode: Mode::Ask.into(),
        last_seq: 0,
        pre_plan_mode: None,
        plan_execution_mode: None,
        source: None,
        owner: None,
    }
}

fn msg(text: &str) -> NewEvent {
    NewEvent::new(
        Some(&"turn".into()),
        EventBody::UserMessage {
            text: text.into(),
            approval_mode: Mode::Ask,
        },
    )
}

/// Opens and answers one gate of `sid` as `by` with `decision`.
async fn answered_gate(
    store: &Arc<dyn Store>,
    sid: &str,
    id: &str,
    decision: Decision,
    by: AnsweredBy,
) {
    let open = Commit {
        gate: Some(GateChange::Open(Box::new(gate(sid, id)))),
        ..Commit::default()
    };
    store
        .append(&sid.into(), vec![msg(id)], open)
        .await
        .unwrap();
    let mut answer = resolution(id, decision);
    answer.answered_by = by;
    answer.resolved_at = Timestamp::now();
    let answer = Commit {
        gate: Some(GateChange::Resolve {
            resolution: answer,
            new_rule: None,
        }),
        ..Commit::default()
    };
    store
        .append(&sid.into(), vec![msg(id)], answer)
        .await
        .unwrap();
}

/// The history reviewer's evidence holds only a person's answers, and their refusals are read
/// apart from their approvals: a flood of approvals — a person's, a mode's, the clock's —
/// never pushes a deny or an edit out.
async fn no_flood_pushes_a_persons_refusal_out_of_the_history(store: Arc<dyn Store>) {
    store.create_session(&session("flood")).await.unwrap();
    answered_gate(&store, "flood", "fl-deny", Decision::Deny, AnsweredBy::User).await;
    answered_gate(&store, "flood", "fl-edit", Decision::Edit, AnsweredBy::User).await;
    for n in 0..12 {
        let id = format!("fl-mode-{n}");
        answered_gate(&store, "flood", &id, Decision::Approve, AnsweredBy::System).await;
        let id = format!("fl-rule-{n}");
        answered_gate(&store, "flood", &id, Decision::Approve, AnsweredBy::Rule).await;
        let id = format!("fl-late-{n}");
        answered_gate(&store, "flood", &id, Decision::Timeout, AnsweredBy::Timeout).await;
        let id = format!("fl-user-{n}");
        answered_gate(&store, "flood", &id, Decision::Approve, AnsweredBy::User).await;
    }
    let cards = store.answered_cards(3).await.unwrap();
    let ids: Vec<String> = cards
        .iter()
        .map(|(_, r)| r.approval_id.to_string())
        .collect();
    assert!(
        cards.iter().all(|(_, r)| r.answered_by == AnsweredBy::User),
        "{ids:?}"
    );
    for id in [
        "fl-deny",
        "fl-edit",
        "fl-user-11",
        "fl-user-10",
        "fl-user-9",
    ] {
        assert!(ids.contains(&id.to_owned()), "{id} in {ids:?}");
    }
    let approvals = cards
        .iter()
        .filter(|(_, r)| r.decision == Decision::Approve)
        .count();
    assert_eq!(approvals, 3, "{ids:?}");
    // Newest first (other tests' cards may carry later times).
    let at = |id: &str| ids.iter().position(|i| i == id).unwrap();
    assert!(
        at("fl-user-11") < at("fl-user-9") && at("fl-user-9") < at("fl-edit"),
        "{ids:?}"
    );
    assert!(at("fl-edit") < at("fl-deny"), "{ids:?}");
}

pub fn gate(session_id: &str, id: &str) -> ApprovalRequest {
    serde_json::from_value(serde_json::json!({
        "turn_id": "turn", "approval_id": id, "session_id": session_id, "call_id": "c",
        "kind": "tool", "tool": "shell", "class": "exec", "args": {"command": "ls"},
        "title": "Shell", "summary": "shell: ls", "proposal_md": "", "proposal_html": "",
        "reason": "mode", "reason_detail": "", "allowed_decisions": ["approve", "deny"],
        "digest": "d", "created_at": Timestamp::now(), "expires_at": Timestamp::now(),
        "timeout_outcome": "deny"
    }))
    .expect("a gate")
}

pub fn resolution(id: &str, decision: Decision) -> Resolution {
    Resolution::plain(
        &id.into(),
        decision,
        AnsweredBy::User,
        "browser",
        Timestamp::default(),
    )
}

async fn seq_starts_at_one_and_has_no_gaps_under_concurrency(store: Arc<dyn Store>) {
    store.create_session(&session("seq")).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..20 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .append(
                    &"seq".into(),
                    vec![msg(&format!("a{i}")), msg(&format!("b{i}"))],
                    Commit::default(),
                )
                .await
                .unwrap()
        }));
    }
    for t in tasks {
        let evs = t.await.unwrap();
        assert_eq!(evs[1].seq.unwrap(), evs[0].seq.unwrap() + 1);
    }
    let all = store.events_after(&"seq".into(), 0, 1000).await.unwrap();
    let seqs: Vec<u64> = all.iter().map(|e| e.seq.unwrap()).collect();
    assert_eq!(seqs, (1..=40).collect::<Vec<_>>());
    assert_eq!(
        store
            .events_after(&"seq".into(), 38, 10)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        store
            .turn_start_at_or_before(&"seq".into(), 40)
            .await
            .unwrap(),
        Some(40)
    );
}

async fn append_to_unknown_session_fails_and_mode_follows_in_same_transaction(
    store: Arc<dyn Store>,
) {
    assert!(matches!(
        store
            .append(&"nope".into(), vec![msg("x")], Commit::default())
            .await,
        Err(StoreError::UnknownSession(_))
    ));
    store.create_session(&session("mode")).await.unwrap();
    store
        .append(
            &"mode".into(),
            vec![msg("x")],
            Commit::mode(Some(Mode::Plan)),
        )
        .await
        .unwrap();
    store
        .append(
            &"mode".into(),
            vec![msg("y")],
            Commit::mode(Some(Mode::Yolo)),
        )
        .await
        .unwrap();
    let row = store.get_session(&"mode".into()).await.unwrap().unwrap();
    assert_eq!(row.approval_mode, Stored::Known(Mode::Yolo));
    assert_eq!(row.pre_plan_mode, Some(Stored::Known(Mode::Ask)));
    assert_eq!(row.plan_execution_mode, Some(Stored::Known(Mode::Yolo)));
    assert_eq!(row.last_seq, 2);
}

async fn delete_removes_the_log_and_unfinished_turns_are_found(store: Arc<dyn Store>) {
    store.create_session(&session("del-a")).await.unwrap();
    store.create_session(&session("del-b")).await.unwrap();
    store
        .append(&"del-a".into(), vec![msg("x")], Commit::default())
        .await
        .unwrap();
    store
        .append(&"del-b".into(), vec![msg("y")], Commit::default())
        .await
        .unwrap();
    let finished = NewEvent::new(
        Some(&"turn".into()),
        EventBody::TurnFinished {
            status: TurnStatus::Completed,
            error: None,
        },
    );
    store
        .append(&"del-b".into(), vec![finished], Commit::default())
        .await
        .unwrap();
    let unfinished = store.sessions_with_unfinished_turns().await.unwrap();
    assert!(unfinished.contains(&"del-a".into()), "{unfinished:?}");
    assert!(!unfinished.contains(&"del-b".into()), "{unfinished:?}");
    assert!(store.delete_session(&"del-a".into()).await.unwrap());
    assert!(!store.delete_session(&"del-a".into()).await.unwrap());
    assert!(
        store
            .events_after(&"del-a".into(), 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let ids: Vec<String> = store
        .list_sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id.into_string())
        .collect();
    assert!(!ids.contains(&"del-a".to_owned()) && ids.contains(&"del-b".to_owned()));
}

async fn exactly_one_of_fifty_concurrent_resolutions_commits(store: Arc<dyn Store>) {
    store.create_session(&session("cas")).await.unwrap();
    let open = Commit {
        gate: Some(GateChange::Open(Box::new(gate("cas", "g-cas")))),
        ..Commit::default()
    };
    store
        .append(&"cas".into(), vec![msg("ask")], open)
        .await
        .unwrap();
    assert_eq!(store.pending_gates(Some("cas")).await.unwrap().len(), 1);
    let outside = store.waiting_counts(&"cas".into()).await.unwrap().outside;
    assert_eq!(
        store.waiting_counts(&"cas".into()).await.unwrap(),
        crate::server::store::WaitingCounts {
            in_session: 1,
            outside
        },
        "a tool gate counts in its session, not as an outside agent's"
    );
    // Another session cannot answer it, and trying leaves it waiting.
    store.create_session(&session("cas-other")).await.unwrap();
    let from_elsewhere = Commit {
        gate: Some(GateChange::Resolve {
            resolution: resolution("g-cas", Decision::Approve),
            new_rule: None,
        }),
        ..Commit::default()
    };
    assert!(matches!(
        store
            .append(&"cas-other".into(), vec![msg("x")], from_elsewhere)
            .await,
        Err(StoreError::UnknownApproval(_))
    ));
    assert_eq!(store.pending_gates(Some("cas")).await.unwrap().len(), 1);
    assert!(
        store
            .events_after(&"cas-other".into(), 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let mut tasks = Vec::new();
    for i in 0..50 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let decision = if i % 2 == 0 {
                Decision::Approve
            } else {
                Decision::Deny
            };
            let commit = Commit {
                gate: Some(GateChange::Resolve {
                    resolution: resolution("g-cas", decision),
                    new_rule: None,
                }),
                ..Commit::default()
            };
            store
                .append(&"cas".into(), vec![msg("resolved")], commit)
                .await
        }));
    }
    let mut won = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => won += 1,
            Err(StoreError::AlreadyResolved(_)) => {}
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(won, 1);
    // The losers appended nothing: one "ask" and one "resolved" event.
    assert_eq!(
        store
            .events_after(&"cas".into(), 0, 100)
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(store.pending_gates(Some("cas")).await.unwrap().is_empty());
    assert_eq!(
        store
            .waiting_counts(&"cas".into())
            .await
            .unwrap()
            .in_session,
        0
    );
    let row = store
        .get_gate(&"cas".into(), &"g-cas".into())
        .await
        .unwrap()
        .unwrap();
    assert!(row.resolution.is_some());
    assert!(
        store
            .get_gate(&"other".into(), &"g-cas".into())
            .await
            .unwrap()
            .is_none()
    );
    let unknown = Commit {
        gate: Some(GateChange::Resolve {
            resolution: resolution("nope", Decision::Approve),
            new_rule: None,
        }),
        ..Commit::default()
    };
    assert!(matches!(
        store.append(&"cas".into(), vec![msg("x")], unknown).await,
        Err(StoreError::UnknownApproval(_))
    ));
}

async fn the_audit_chain_is_one_line_under_concurrency(store: Arc<dyn Store>) {
    store.create_session(&session("audit")).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..10 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let id = format!("g-audit-{i}");
            let request = gate("audit", &id);
            let event = NewEvent::new(
                Some(&"turn".into()),
                EventBody::ApprovalRequest(Box::new(request.body.clone())),
            );
            let open = Commit {
                gate: Some(GateChange::Open(Box::new(request))),
                ..Commit::default()
            };
            store
                .append(&"audit".into(), vec![event], open)
                .await
                .unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let entries = store.audit_after(0, 500, None, None).await.unwrap();
    // Newest first, for the Audit page: the same entries, the other way round, paged by `n`.
    let newest = store.audit_before(None, 500, None, None).await.unwrap();
    let mut reversed = entries.clone();
    reversed.reverse();
    assert_eq!(newest, reversed);
    if let Some(second) = newest.get(1) {
        let older = store
            .audit_before(Some(second.n), 500, None, None)
            .await
            .unwrap();
        assert!(older.iter().all(|e| e.n < second.n));
        assert_eq!(older.len(), newest.len() - 2);
    }
    assert!(entries.len() >= 10);
    for (i, pair) in entries.windows(2).enumerate() {
        assert_eq!(pair[1].n, pair[0].n + 1, "entry {i}");
        assert_eq!(pair[1].prev_hash, pair[0].hash, "entry {i}");
    }
    let opened = store
        .audit_after(0, 500, Some("gate_opened"), None)
        .await
        .unwrap();
    assert!(
        opened
            .iter()
            .filter(|e| e.subject.starts_with("g-audit-"))
            .count()
            == 10
    );
}

async fn token_names_are_unique_and_revoking_is_audited(store: Arc<dyn Store>) {
    let row = TokenRow {
        name: "phone".into(),
        scope: Scope::Approve.into(),
        secret_hash: "h1".into(),
        created_at: Timestamp::now(),
        last_used_at: None,
        owner: None,
    };
    store.create_token(&row, "token:admin").await.unwrap();
    let again = TokenRow {
        secret_hash: "h2".into(),
        ..row.clone()
    };
    assert!(matches!(
        store.create_token(&again, "token:admin").await,
        Err(StoreError::Taken(_))
    ));
    assert_eq!(
        store.token_by_hash("h1").await.unwrap().unwrap().name,
        "phone"
    );
    assert!(store.token_by_hash("h2").await.unwrap().is_none());
    store.touch_token("phone", &Timestamp::now()).await.unwrap();
    assert!(store.list_tokens().await.unwrap()[0].last_used_at.is_some());
    assert!(store.delete_token("phone", "browser").await.unwrap());
    assert!(!store.delete_token("phone", "browser").await.unwrap());
    let revoked = store
        .audit_after(0, 500, Some("token_revoked"), Some("token:phone"))
        .await
        .unwrap();
    assert_eq!(revoked.len(), 1);
    assert_eq!(revoked[0].actor, "browser");
}

/// A token's maker (a person's id, or none: the admin) is kept and read back by both reads.
async fn a_token_keeps_its_maker(store: Arc<dyn Store>) {
    let made = |name: &str, owner: Option<&str>| TokenRow {
        name: name.into(),
        scope: Scope::View.into(),
        secret_hash: format!("owner-{name}"),
        created_at: Timestamp::now(),
        last_used_at: None,
        owner: owner.map(str::to_owned),
    };
    use super::conformance_people::{draft, person};
    let alice = person("pe-alice", "token-maker@makers.test", vec![Role::Admin]);
    store
        .add_person(&alice, draft("person_invited", "pe-alice"))
        .await
        .unwrap();
    store
        .create_token(&made("wall", Some("pe-alice")), "person:alice@example.test")
        .await
        .unwrap();
    // A maker nobody can find (removed in the same moment) makes no token.
    let orphan = store
        .create_token(&made("orphan", Some("pe-gone")), "person:gone@example.test")
        .await;
    assert!(matches!(orphan, Err(StoreError::Gone(_))), "{orphan:?}");
    assert!(store.token_by_hash("owner-orphan").await.unwrap().is_none());
    store
        .create_token(&made("ci", None), "browser")
        .await
        .unwrap();
    let wall = store.token_by_hash("owner-wall").await.unwrap().unwrap();
    assert_eq!(wall.owner.as_deref(), Some("pe-alice"));
    assert_eq!(wall.scope.known(), Some(Scope::View));
    let listed = store.list_tokens().await.unwrap();
    let owner_of = |name: &str| {
        listed
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.owner.clone())
    };
    assert_eq!(owner_of("wall"), Some(Some("pe-alice".into())));
    assert_eq!(owner_of("ci"), Some(None));
    for name in ["wall", "ci"] {
        assert!(store.delete_token(name, "browser").await.unwrap());
    }
}

/// The first token to open gates as a `source` keeps it: ten racing claims agree on one
/// owner, a later token reads that owner, the claim is audited once, and revoking the owner
/// frees the name for the next token.
async fn an_agents_name_is_its_first_tokens_until_that_token_goes(store: Arc<dyn Store>) {
    let token = |name: &str| TokenRow {
        name: name.into(),
        scope: Scope::Gates.into(),
        secret_hash: format!("claim-{name}"),
        created_at: Timestamp::now(),
        last_used_at: None,
        owner: None,
    };
    for name in ["claim-a", "claim-b"] {
        store
            .create_token(&token(name), "token:admin")
            .await
            .unwrap();
    }
    let racing = (0..10).map(|i| {
        let store = store.clone();
        let actor = if i % 2 == 0 {
            "token:claim-a"
        } else {
            "token:claim-b"
        };
        async move { store.claim_source("claimed-agent", actor).await.unwrap() }
    });
    let owners = futures::future::join_all(racing).await;
    let owner = owners[0].clone();
    assert!(owners.iter().all(|o| o == &owner), "{owners:?}");
    let other = if owner == "token:claim-a" {
        "claim-b"
    } else {
        "claim-a"
    };
    assert_eq!(
        store
            .claim_source("claimed-agent", &format!("token:{other}"))
            .await
            .unwrap(),
        owner
    );
    let audited = store
        .audit_after(0, 500, Some("source_claimed"), Some("source:claimed-agent"))
        .await
        .unwrap();
    assert_eq!(audited.len(), 1);
    assert_eq!(audited[0].actor, owner);
    let owner_name = owner.trim_start_matches("token:");
    assert!(store.delete_token(owner_name, "browser").await.unwrap());
    assert_eq!(
        store
            .claim_source("claimed-agent", &format!("token:{other}"))
            .await
            .unwrap(),
        format!("token:{other}"),
        "a revoked token's names are free"
    );
    // A token revoked in the same moment claims nothing: the name stays free.
    let claimed = store
        .claim_source("orphaned-agent", &format!("token:{owner_name}"))
        .await;
    assert!(matches!(claimed, Err(StoreError::Gone(_))), "{claimed:?}");
    assert!(
        !store
            .claimed_sources()
            .await
            .unwrap()
            .iter()
            .any(|(source, _)| source == "orphaned-agent")
    );
}

async fn an_idempotency_key_names_one_gate(store: Arc<dyn Store>) {
    let mut row = session("ext");
    row.source = Some("claude-code".into());
    let sid = store
        .external_session("claude-code", "cc-1", &row)
        .await
        .unwrap();
    let mut other = session("ext-2");
    other.source = Some("claude-code".into());
    assert_eq!(
        store
            .external_session("claude-code", "cc-1", &other)
            .await
            .unwrap(),
        sid,
        "the first session made stays the one"
    );
    let open = |id: &str| Commit {
        gate: Some(GateChange::Open(Box::new(gate(sid.as_str(), id)))),
        external: Some(ExternalGate {
            approval_id: id.into(),
            session_id: sid.as_str().into(),
            opened_by: "token:hook".into(),
            idempotency_key: Some("k1".into()),
            created_at: Timestamp::now(),
        }),
        ..Commit::default()
    };
    let outside_before = store.waiting_counts(&sid).await.unwrap().outside;
    store
        .append(&sid.as_str().into(), vec![msg("ask")], open("g-ext-1"))
        .await
        .unwrap();
    let counts = store.waiting_counts(&sid).await.unwrap();
    assert_eq!(counts.in_session, 1);
    assert_eq!(
        counts.outside,
        outside_before + 1,
        "an outside gate counts as one"
    );
    match store
        .append(&sid.as_str().into(), vec![msg("ask")], open("g-ext-2"))
        .await
    {
        Err(StoreError::KeyUsed(existing)) => assert_eq!(existing, "g-ext-1"),
        other => panic!("expected KeyUsed, got {other:?}"),
    }
    // Nothing of the refused open was kept.
    assert!(
        store
            .get_gate(&sid.as_str().into(), &"g-ext-2".into())
            .await
            .unwrap()
            .is_none()
    );
    let since = Timestamp::now().plus_ms(-60_000);
    assert_eq!(
        store
            .gate_by_idempotency_key("token:hook", "k1", &since)
            .await
            .unwrap(),
        Some(("g-ext-1".into(), sid.clone()))
    );
    assert_eq!(
        store
            .external_gate("g-ext-1")
            .await
            .unwrap()
            .unwrap()
            .opened_by,
        "token:hook"
    );
}

/// PostgreSQL's text cannot hold a NUL; SQLite's can. Both answer alike: inside an event (JSON,
/// where it is an escape) it is kept exactly; a title, a name or a key holding one is refused
/// with `Unstorable`, and nothing is written.
async fn a_nul_is_kept_in_events_and_refused_in_columns(store: Arc<dyn Store>) {
    store.create_session(&session("nul")).await.unwrap();
    let stored = store
        .append(&"nul".into(), vec![msg("a\0b")], Commit::default())
        .await
        .unwrap();
    let back = store.events_after(&"nul".into(), 0, 10).await.unwrap();
    assert_eq!(back, stored);
    assert!(matches!(&back[0].body, EventBody::UserMessage { text, .. } if text == "a\0b"));

    let mut titled = session("nul-title");
    titled.title = "bad\0title".into();
    let err = store.create_session(&titled).await.unwrap_err();
    assert!(matches!(err, StoreError::Unstorable(_)), "{err:?}");
    assert_eq!(store.get_session(&"nul-title".into()).await.unwrap(), None);

    let token = TokenRow {
        name: "bad\0name".into(),
        scope: Scope::Admin.into(),
        secret_hash: "nul-hash".into(),
        created_at: Timestamp::now(),
        last_used_at: None,
        owner: None,
    };
    let err = store.create_token(&token, "browser").await.unwrap_err();
    assert!(matches!(err, StoreError::Unstorable(_)), "{err:?}");
    assert_eq!(store.token_by_hash("nul-hash").await.unwrap(), None);

    let err = store
        .external_session("codex", "x\0y", &session("nul-ext"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Unstorable(_)), "{err:?}");
    assert_eq!(store.get_session(&"nul-ext".into()).await.unwrap(), None);

    let commit = Commit {
        gate: Some(GateChange::Open(Box::new(gate("nul", "nul-gate")))),
        external: Some(ExternalGate {
            approval_id: "nul-gate".into(),
            session_id: "nul".into(),
            opened_by: "token:ci".into(),
            idempotency_key: Some("k\0".into()),
            created_at: Timestamp::now(),
        }),
        ..Commit::default()
    };
    let err = store
        .append(&"nul".into(), vec![msg("x")], commit)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Unstorable(_)), "{err:?}");
    assert_eq!(
        store.events_after(&"nul".into(), 0, 10).await.unwrap(),
        stored
    );
    assert_eq!(
        store
            .get_gate(&"nul".into(), &"nul-gate".into())
            .await
            .unwrap(),
        None
    );
}

/// `resolved_cards`: only resolved gates, only those resolved in `[since, until)`, in the order
/// they were resolved (not opened), at most `limit`, each with its session's source.
async fn resolved_cards_come_in_their_window_in_resolution_order(store: Arc<dyn Store>) {
    let outside = SessionRow {
        source: Some("claude-code".into()),
        owner: None,
        ..session("stats-outside")
    };
    store.create_session(&session("stats-own")).await.unwrap();
    store.create_session(&outside).await.unwrap();
    let at = |ms: i64| Timestamp::from_unix_ms(4_000_000_000_000 + ms);
    // (session, gate, resolved at): opened in this order, resolved out of it; one stays open.
    let answers = [
        ("stats-own", "st-a", Some(3_000)),
        ("stats-outside", "st-b", Some(1_000)),
        ("stats-own", "st-c", Some(2_000)),
        ("stats-own", "st-d", Some(9_000)),
        ("stats-own", "st-e", None),
    ];
    for (sid, id, resolved) in answers {
        let open = Commit {
            gate: Some(GateChange::Open(Box::new(gate(sid, id)))),
            ..Commit::default()
        };
        store
            .append(&sid.into(), vec![msg("ask")], open)
            .await
            .unwrap();
        if let Some(ms) = resolved {
            let mut answer = resolution(id, Decision::Deny);
            answer.resolved_at = at(ms);
            let resolve = Commit {
                gate: Some(GateChange::Resolve {
                    resolution: answer,
                    new_rule: None,
                }),
                ..Commit::default()
            };
            store
                .append(&sid.into(), vec![msg("answer")], resolve)
                .await
                .unwrap();
        }
    }
    let ids = |cards: &[crate::server::store::ResolvedCard]| {
        cards
            .iter()
            .map(|c| c.card.approval_id.as_str().to_owned())
            .collect::<Vec<_>>()
    };
    let window = store.resolved_cards(&at(0), &at(9_000), 100).await.unwrap();
    assert_eq!(
        ids(&window),
        ["st-b", "st-c", "st-a"],
        "by resolution time; `until` is not in the window, an open gate never is"
    );
    assert_eq!(window[0].source.as_deref(), Some("claude-code"));
    assert_eq!(window[1].source, None);
    assert_eq!(window[0].card.session_id.as_str(), "stats-outside");
    assert_eq!(window[0].resolution.decision, Decision::Deny);
    assert_eq!(window[0].resolution.resolved_at, at(1_000));
    assert_eq!(window[0].card.tool, "shell");
    let from_two = store
        .resolved_cards(&at(2_000), &at(10_000), 100)
        .await
        .unwrap();
    assert_eq!(
        ids(&from_two),
        ["st-c", "st-a", "st-d"],
        "`since` is in the window"
    );
    let bounded = store.resolved_cards(&at(0), &at(10_000), 2).await.unwrap();
    assert_eq!(
        ids(&bounded),
        ["st-b", "st-c"],
        "at most `limit`, the oldest first"
    );
}
