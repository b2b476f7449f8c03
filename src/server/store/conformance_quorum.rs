//! The store suite's part on routed cards (issue 41; `store/conformance.rs` runs it on every
//! backend): a session keeps its owner; approvals count distinct people on one digest, each
//! with its audit entry; an edit revises the card and starts the count again; two approvals
//! at the same moment are counted one after the other; an escalation is marked once.

#![allow(clippy::too_many_lines)]

use std::sync::Arc;

use super::conformance::{gate, resolution, session};
use crate::protocol::{ApprovalRequest, Decision, GivenApproval, Timestamp};
use crate::server::audit::AuditDraft;
use crate::server::store::quorum::{Given, Giving};
use crate::server::store::{Commit, GateChange, NewEvent, SessionRow, Store};

fn draft(action: &'static str, subject: &str) -> AuditDraft {
    AuditDraft {
        actor: "person:alice@example.test".into(),
        action,
        subject: subject.into(),
        detail: serde_json::json!({}),
    }
}

fn given(who: &str, digest: &str) -> GivenApproval {
    GivenApproval {
        who: who.into(),
        name: None,
        at: Timestamp::now(),
        digest: digest.into(),
    }
}

/// Opens gate `id` (digest `d`) in session `sid`.
async fn open(store: &Arc<dyn Store>, sid: &str, id: &str) -> ApprovalRequest {
    let request = gate(sid, id);
    let commit = Commit {
        gate: Some(GateChange::Open(Box::new(request.clone()))),
        ..Commit::default()
    };
    let msg = NewEvent::new(
        Some(&"turn".into()),
        crate::protocol::EventBody::ApprovalRequest(Box::new(request.body.clone())),
    );
    store.append(&sid.into(), vec![msg], commit).await.unwrap();
    request
}

async fn give(
    store: &Arc<dyn Store>,
    request: &ApprovalRequest,
    seen: &str,
    approval: &GivenApproval,
    revised: Option<&ApprovalRequest>,
) -> Given {
    let giving = Giving {
        session_id: &request.body.session_id,
        approval_id: &request.body.approval_id,
        seen_digest: seen,
        approval,
        revised,
    };
    let audit = draft("approval_given", request.body.approval_id.as_str());
    store.give_approval(giving, audit).await.unwrap()
}

fn who(given: &Given) -> Vec<String> {
    match given {
        Given::Counted(approvals) => approvals.iter().map(|a| a.who.clone()).collect(),
        other => panic!("not counted: {other:?}"),
    }
}

/// A session keeps the person it belongs to.
pub async fn a_session_keeps_its_owner(store: Arc<dyn Store>) {
    let row = SessionRow {
        owner: Some("alice@example.test".into()),
        ..session("own")
    };
    store.create_session(&row).await.unwrap();
    let back = store.get_session(&"own".into()).await.unwrap().unwrap();
    assert_eq!(back.owner.as_deref(), Some("alice@example.test"));
    store.create_session(&session("unowned")).await.unwrap();
    let back = store.get_session(&"unowned".into()).await.unwrap().unwrap();
    assert_eq!(back.owner, None);
}

/// One row a person on a digest, each audited once; another digest than the card's is
/// refused; an edit revises the card and its approval is the only one on the new digest;
/// a resolved card takes no more.
pub async fn approvals_count_distinct_people_on_one_digest(store: Arc<dyn Store>) {
    store.create_session(&session("quo")).await.unwrap();
    let request = open(&store, "quo", "quo-1").await;
    let alice = given("alice@example.test", "d");
    assert_eq!(
        who(&give(&store, &request, "d", &alice, None).await),
        ["alice@example.test"]
    );
    // The same person again counts once (and is audited once).
    let again = given("alice@example.test", "d");
    assert_eq!(
        who(&give(&store, &request, "d", &again, None).await).len(),
        1
    );
    let bob = given("bob@example.test", "d");
    assert_eq!(who(&give(&store, &request, "d", &bob, None).await).len(), 2);
    // An answer that saw another card than the one stored is not counted.
    let stale = given("carol@example.test", "old");
    assert_eq!(
        give(&store, &request, "old", &stale, None).await,
        Given::Stale
    );
    // Carol edits: the card is stored as revised, and her approval is the one on it.
    let mut revised = request.clone();
    revised.body.digest = "d2".into();
    let carol = given("carol@example.test", "d2");
    let counted = give(&store, &request, "d", &carol, Some(&revised)).await;
    assert_eq!(who(&counted), ["carol@example.test"]);
    let stored = store
        .get_gate(&"quo".into(), &"quo-1".into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.request.body.digest, "d2");
    // Bob's approval of the card before the edit no longer counts toward it.
    let late = given("bob@example.test", "d");
    assert_eq!(give(&store, &request, "d", &late, None).await, Given::Stale);
    let all = store
        .given_approvals(&"quo".into(), &"quo-1".into())
        .await
        .unwrap();
    assert_eq!(all.len(), 3, "{all:?}");
    let audited = store
        .audit_after(0, 1000, Some("approval_given"), Some("quo-1"))
        .await
        .unwrap();
    assert_eq!(audited.len(), 3, "one entry per approval recorded");
    resolve(&store, "quo", "quo-1").await;
    let after = given("dave@example.test", "d2");
    assert_eq!(
        give(&store, &revised, "d2", &after, None).await,
        Given::NotWaiting
    );
}

async fn resolve(store: &Arc<dyn Store>, sid: &str, id: &str) {
    let answer = Commit {
        gate: Some(GateChange::Resolve {
            resolution: resolution(id, Decision::Approve),
            new_rule: None,
        }),
        ..Commit::default()
    };
    store.append(&sid.into(), vec![], answer).await.unwrap();
}

/// Two people approving one card at the same moment are counted one after the other:
/// exactly one of them sees the second approval (and so resolves the card).
pub async fn two_approvals_at_once_are_counted_in_turn(store: Arc<dyn Store>) {
    store.create_session(&session("quorum-race")).await.unwrap();
    for round in 0..10 {
        let request = open(&store, "quorum-race", &format!("quorum-race-{round}")).await;
        let tasks: Vec<_> = ["alice@example.test", "bob@example.test"]
            .into_iter()
            .map(|person| {
                let (store, request) = (store.clone(), request.clone());
                tokio::spawn(async move {
                    let approval = given(person, "d");
                    who(&give(&store, &request, "d", &approval, None).await).len()
                })
            })
            .collect();
        let mut seen = Vec::new();
        for task in tasks {
            seen.push(task.await.unwrap());
        }
        seen.sort_unstable();
        assert_eq!(seen, [1, 2], "round {round}");
    }
}

/// A card escalates once, with its audit entry, and only while it waits.
pub async fn an_escalation_is_marked_once(store: Arc<dyn Store>) {
    store.create_session(&session("esc")).await.unwrap();
    open(&store, "esc", "esc-1").await;
    let (sid, id) = ("esc".into(), "esc-1".into());
    assert_eq!(store.escalated_at(&sid, &id).await.unwrap(), None);
    let at = Timestamp::now();
    let mark = |_| draft("approval_escalated", "esc-1");
    assert!(
        store
            .mark_escalated(&sid, &id, &at, mark(()))
            .await
            .unwrap()
    );
    assert!(
        !store
            .mark_escalated(&sid, &id, &at, mark(()))
            .await
            .unwrap()
    );
    assert_eq!(store.escalated_at(&sid, &id).await.unwrap(), Some(at));
    let audited = store
        .audit_after(0, 1000, Some("approval_escalated"), Some("esc-1"))
        .await
        .unwrap();
    assert_eq!(audited.len(), 1);
    open(&store, "esc", "esc-2").await;
    resolve(&store, "esc", "esc-2").await;
    let later = Timestamp::now();
    assert!(
        !store
            .mark_escalated(&sid, &"esc-2".into(), &later, mark(()))
            .await
            .unwrap()
    );
}
