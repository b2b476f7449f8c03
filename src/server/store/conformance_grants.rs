//! The store suite's part on grants that run out (`store/conformance.rs` runs it on every
//! backend): a rule's use is claimed once each, never past `max_uses` nor its expiry, not
//! even by calls that race; lapsed grants stay listed, with why, for a bounded time.

#![allow(clippy::too_many_lines)]

use std::sync::Arc;

use crate::protocol::{Decision, Rule, RuleLapse, RuleScope, Timestamp};
use crate::server::store::conformance::{gate, resolution, session};
use crate::server::store::{Commit, GateChange, LAPSED_LISTED_MS, Store};

/// A workspace rule for `echo *`, as Allow always would make it.
fn rule(id: &str, max_uses: Option<u64>, expires_at: Option<Timestamp>) -> Rule {
    Rule {
        id: id.into(),
        tool: "shell".into(),
        pattern: "echo *".into(),
        scope: RuleScope::Workspace,
        session_id: None,
        created_at: Timestamp::now(),
        created_by_approval: None,
        uses: 0,
        last_used_at: None,
        expires_at,
        max_uses,
        lapsed: None,
        source: None,
    }
}

/// Stores `rule` the way Allow always does: with the answer to a gate of its own.
async fn grant(store: &Arc<dyn Store>, sid: &str, mut rule: Rule) {
    let gate_id = format!("g-{}", rule.id);
    rule.created_by_approval = Some(gate_id.as_str().into());
    let open = Commit {
        gate: Some(GateChange::Open(Box::new(gate(sid, &gate_id)))),
        ..Commit::default()
    };
    store.append(&sid.into(), vec![], open).await.unwrap();
    let answer = Commit {
        gate: Some(GateChange::Resolve {
            resolution: resolution(&gate_id, Decision::AllowAlways),
            new_rule: Some(rule),
        }),
        ..Commit::default()
    };
    store.append(&sid.into(), vec![], answer).await.unwrap();
}

async fn listed(store: &Arc<dyn Store>, id: &str) -> Option<Rule> {
    let rules = store.list_rules().await.unwrap();
    rules.into_iter().find(|r| r.id.as_str() == id)
}

/// A two-use grant answers twice and then lapses, used up; an expired one answers nothing;
/// both stay listed with why (and can be revoked), until they lapsed a month ago.
pub async fn grants_run_out_and_say_why(store: Arc<dyn Store>) {
    store.create_session(&session("grants")).await.unwrap();
    let now = Timestamp::now();
    grant(&store, "grants", rule("two-uses", Some(2), None)).await;
    grant(
        &store,
        "grants",
        rule("expired", None, Some(now.plus_ms(-1000))),
    )
    .await;
    let long_ago = now.plus_ms(-LAPSED_LISTED_MS - 86_400_000);
    grant(
        &store,
        "grants",
        rule("expired-long-ago", None, Some(long_ago.clone())),
    )
    .await;
    grant(&store, "grants", rule("used-long-ago", Some(1), None)).await;
    assert!(
        store
            .claim_rule_use(&"used-long-ago".into(), &long_ago)
            .await
            .unwrap()
    );

    let fresh = listed(&store, "two-uses").await.expect("listed");
    assert_eq!(
        (fresh.uses, fresh.max_uses, fresh.lapsed),
        (0, Some(2), None)
    );
    assert_eq!(
        fresh.last_used_at, None,
        "the approval that made it is not a use"
    );
    let expired = listed(&store, "expired")
        .await
        .expect("an expired grant stays listed");
    assert_eq!(expired.lapsed, Some(RuleLapse::Expired));
    assert!(
        listed(&store, "expired-long-ago").await.is_none(),
        "past the bound"
    );
    assert!(
        listed(&store, "used-long-ago").await.is_none(),
        "past the bound"
    );

    let now = Timestamp::now();
    assert!(!store.claim_rule_use(&"expired".into(), &now).await.unwrap());
    assert!(
        store
            .claim_rule_use(&"two-uses".into(), &now)
            .await
            .unwrap()
    );
    assert!(
        store
            .claim_rule_use(&"two-uses".into(), &now)
            .await
            .unwrap()
    );
    assert!(
        !store
            .claim_rule_use(&"two-uses".into(), &now)
            .await
            .unwrap(),
        "a third use of a two-use grant"
    );
    let spent = listed(&store, "two-uses")
        .await
        .expect("a used-up grant stays listed");
    assert_eq!((spent.uses, spent.lapsed), (2, Some(RuleLapse::UsedUp)));
    assert_eq!(spent.last_used_at, Some(now.clone()));
    assert!(!store.claim_rule_use(&"unknown".into(), &now).await.unwrap());

    assert_eq!(spent.source, None, "the built-in agent's session made it");
    let outside = crate::server::store::SessionRow {
        source: Some("codex".into()),
        ..session("grants-codex")
    };
    store.create_session(&outside).await.unwrap();
    grant(&store, "grants-codex", rule("codex-grant", None, None)).await;
    let theirs = listed(&store, "codex-grant")
        .await
        .expect("an outside agent's grant");
    assert_eq!(theirs.source.as_deref(), Some("codex"));
    assert!(
        store
            .revoke_rule(&"codex-grant".into(), "browser")
            .await
            .unwrap()
    );

    assert!(
        store
            .revoke_rule(&"two-uses".into(), "browser")
            .await
            .unwrap()
    );
    assert!(
        listed(&store, "two-uses").await.is_none(),
        "revoked: gone from the list"
    );
    assert!(
        !store
            .claim_rule_use(&"two-uses".into(), &now)
            .await
            .unwrap()
    );
    assert!(
        store
            .revoke_rule(&"expired".into(), "browser")
            .await
            .unwrap()
    );
    assert!(listed(&store, "expired").await.is_none());
}

/// Twenty calls race for a one-use grant's use: exactly one gets it, through the matcher the
/// gates share (`rules::matching`), which hands the others no rule (they ask).
pub async fn only_one_racing_call_spends_the_last_use(store: Arc<dyn Store>) {
    store.create_session(&session("race")).await.unwrap();
    grant(&store, "race", rule("one-use", Some(1), None)).await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let args = serde_json::json!({"command": format!("echo {i}")});
            let repo: &dyn crate::server::store::RuleRepo = store.as_ref();
            crate::server::gate::rules::matching(repo, "race", "shell", &args, &|_| true)
                .await
                .unwrap()
                .map(|r| r.id)
        }));
    }
    let mut answered = 0;
    for task in tasks {
        if task
            .await
            .unwrap()
            .is_some_and(|id| id.as_str() == "one-use")
        {
            answered += 1;
        }
    }
    assert_eq!(answered, 1, "exactly one call runs on the one use");
    let spent = listed(&store, "one-use").await.expect("listed");
    assert_eq!((spent.uses, spent.lapsed), (1, Some(RuleLapse::UsedUp)));
}
