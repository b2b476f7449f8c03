//! The store suite's part on people (`store/conformance.rs` runs it on every backend): one
//! person per email, bound to one provider identity once, changed and removed with an audit
//! entry each, in the same transaction.

#![allow(clippy::too_many_lines)]

use std::sync::Arc;

use crate::protocol::{Person, Role, Timestamp};
use crate::server::audit::AuditDraft;
use crate::server::store::Store;
use crate::server::store::StoreError;

pub(crate) fn draft(action: &'static str, subject: &str) -> AuditDraft {
    AuditDraft {
        actor: "token:admin".into(),
        action,
        subject: subject.into(),
        detail: serde_json::json!({}),
    }
}

pub(crate) fn person(id: &str, email: &str, roles: Vec<Role>) -> Person {
    Person {
        id: id.into(),
        email: email.into(),
        name: None,
        roles,
        groups: vec!["maintainers".into()],
        issuer: None,
        subject: None,
        created_at: Timestamp::now(),
    }
}

/// An email is one person's; binding to (issuer, sub) happens once; a change replaces roles
/// and groups; a removal is gone for every lookup; each change is audited.
pub async fn people_are_one_per_email_and_bound_once(store: Arc<dyn Store>) {
    let alice = person("pe-1", "alice@example.test", vec![Role::Approver]);
    store
        .add_person(&alice, draft("person_invited", "pe-1"))
        .await
        .unwrap();
    let again = person("pe-2", "alice@example.test", vec![Role::Admin]);
    assert!(matches!(
        store
            .add_person(&again, draft("person_invited", "pe-2"))
            .await,
        Err(StoreError::Taken(_))
    ));
    let bob = person("pe-3", "bob@example.test", vec![Role::Viewer]);
    store
        .add_person(&bob, draft("person_invited", "pe-3"))
        .await
        .unwrap();
    let emails: Vec<String> = store
        .people()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.email)
        .filter(|e| e.ends_with("@example.test"))
        .collect();
    assert_eq!(emails, ["alice@example.test", "bob@example.test"]);
    assert_eq!(store.person("pe-1").await.unwrap(), Some(alice.clone()));
    assert_eq!(
        store
            .person_by_email("alice@example.test")
            .await
            .unwrap()
            .map(|p| p.id),
        Some("pe-1".into())
    );
    let issuer = "http://127.0.0.1:9/";
    bound_once(&store, issuer).await;
    changed_whole(&store).await;
    tokens_of_each(&store).await;
    removed_everywhere(&store, issuer, &again).await;
    only_their_tokens_went_with_them(&store).await;
    each_change_audited_once(&store).await;
}

/// A token made by `pe-1` and one by `pe-3` (issue 41: a token belongs to its maker).
async fn tokens_of_each(store: &Arc<dyn Store>) {
    for (name, owner) in [("pe1-phone", "pe-1"), ("pe3-wall", "pe-3")] {
        let row = crate::server::store::TokenRow {
            name: name.into(),
            scope: crate::protocol::Scope::Approve.into(),
            secret_hash: format!("hash-{name}"),
            created_at: Timestamp::now(),
            last_used_at: None,
            owner: Some(owner.into()),
        };
        store.create_token(&row, "token:admin").await.unwrap();
    }
}

/// Removing `pe-1` revoked their token in the same transaction, audited under the remover;
/// `pe-3`'s is untouched.
async fn only_their_tokens_went_with_them(store: &Arc<dyn Store>) {
    assert!(
        store
            .token_by_hash("hash-pe1-phone")
            .await
            .unwrap()
            .is_none()
    );
    let kept = store.token_by_hash("hash-pe3-wall").await.unwrap().unwrap();
    assert_eq!(kept.owner.as_deref(), Some("pe-3"));
    let revoked = store
        .audit_after(0, 10_000, Some("token_revoked"), Some("token:pe1-phone"))
        .await
        .unwrap();
    assert_eq!(revoked.len(), 1);
    assert_eq!(revoked[0].actor, "token:admin");
    assert!(store.delete_token("pe3-wall", "token:admin").await.unwrap());
}

/// Bound once: a second binding (of anyone) is refused, the first holds.
async fn bound_once(store: &Arc<dyn Store>, issuer: &str) {
    assert!(
        store
            .bind_person("pe-1", issuer, "sub-a", Some("Alice"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .bind_person("pe-1", issuer, "sub-x", Some("Mallory"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .bind_person("pe-none", issuer, "s", None)
            .await
            .unwrap()
    );
    let bound = store
        .person_by_subject(issuer, "sub-a")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(bound.id, "pe-1");
    assert_eq!(bound.name.as_deref(), Some("Alice"));
    assert_eq!(bound.subject.as_deref(), Some("sub-a"));
    assert!(
        store
            .person_by_subject(issuer, "sub-x")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .person_by_subject("http://other/", "sub-a")
            .await
            .unwrap()
            .is_none()
    );
}

/// A change replaces roles and groups whole.
async fn changed_whole(store: &Arc<dyn Store>) {
    let changed = store
        .change_person(
            "pe-1",
            &[Role::Admin, Role::Approver],
            &[],
            draft("person_changed", "pe-1"),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changed.roles, [Role::Admin, Role::Approver]);
    assert!(changed.groups.is_empty());
    assert_eq!(changed.subject.as_deref(), Some("sub-a"));
    assert!(
        store
            .change_person("pe-none", &[], &[], draft("person_changed", "pe-none"))
            .await
            .unwrap()
            .is_none()
    );
}

/// Removed: gone for every lookup, and the email is free again.
async fn removed_everywhere(store: &Arc<dyn Store>, issuer: &str, again: &Person) {
    let removed = store
        .remove_person("pe-1", draft("person_removed", "pe-1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(removed.email, "alice@example.test");
    assert!(
        store
            .remove_person("pe-1", draft("person_removed", "pe-1"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.person("pe-1").await.unwrap().is_none());
    assert!(
        store
            .person_by_subject(issuer, "sub-a")
            .await
            .unwrap()
            .is_none()
    );
    store
        .add_person(again, draft("person_invited", "pe-2"))
        .await
        .unwrap();
}

/// Each change is one audit entry, only those that changed something.
async fn each_change_audited_once(store: &Arc<dyn Store>) {
    let actions: Vec<(String, String)> = store
        .audit_after(0, 10_000, None, None)
        .await
        .unwrap()
        .into_iter()
        // This part's own people (another part invites a token's maker).
        .filter(|e| {
            e.action.starts_with("person_")
                && matches!(e.subject.as_str(), "pe-1" | "pe-2" | "pe-3")
        })
        .map(|e| (e.action, e.subject))
        .collect();
    let expected = [
        ("person_invited", "pe-1"),
        ("person_invited", "pe-3"),
        ("person_changed", "pe-1"),
        ("person_removed", "pe-1"),
        ("person_invited", "pe-2"),
    ];
    assert_eq!(actions, expected.map(|(a, s)| (a.to_owned(), s.to_owned())));
}
