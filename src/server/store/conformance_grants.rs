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
    lapsed_grants_are_listed_within_the_bound(&store).await;
    let now = Timestamp::now();
    a_two_use_grant_answers_twice_then_is_used_up(&store, &now).await;
    a_grant_keeps_the_agent_it_was_made_for(&store).await;
    revoking_takes_a_grant_off_the_list_lapsed_or_not(&store, &now).await;
}

/// Grants made, one used up and one expired long ago: the fresh and the lately expired are
/// listed, those past the bound are not.
async fn lapsed_grants_are_listed_within_the_bound(store: &Arc<dyn Store>) {
    store.create_session(&session("grants")).await.unwrap();
    let now = Timestamp::now();
    grant(store, "grants", rule("two-uses", Some(2), None)).await;
    grant(
        store,
        "grants",
        rule("expired", None, Some(now.plus_ms(-1000))),
    )
    .await;
    let long_ago = now.plus_ms(-LAPSED_LISTED_MS - 86_400_000);
    grant(
        store,
        "grants",
        rule("expired-long-ago", None, Some(long_ago.clone())),
    )
    .await;
    grant(store, "grants", rule("used-long-ago", Some(1), None)).await;
    assert!(
        store
            .claim_rule_use(&"used-long-ago".into(), &long_ago)
            .await
            .unwrap()
    );

    let fresh = listed(store, "two-uses").await.expect("listed");
    assert_eq!(
        (fresh.uses, fresh.max_uses, fresh.lapsed),
        (0, Some(2), None)
    );
    assert_eq!(
        fresh.last_used_at, None,
        "the approval that made it is not a use"
    );
    let expired = listed(store, "expired")
        .await
        .expect("an expired grant stays listed");
    assert_eq!(expired.lapsed, Some(RuleLapse::Expired));
    assert!(
        listed(store, "expired-long-ago").await.is_none(),
        "past the bound"
    );
    assert!(
        listed(store, "used-long-ago").await.is_none(),
        "past the bound"
    );
}

/// Two uses claimed, the third refused; an expired grant and an unknown one claim nothing.
async fn a_two_use_grant_answers_twice_then_is_used_up(store: &Arc<dyn Store>, now: &Timestamp) {
    let now = now.clone();
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
    let spent = listed(store, "two-uses")
        .await
        .expect("a used-up grant stays listed");
    assert_eq!((spent.uses, spent.lapsed), (2, Some(RuleLapse::UsedUp)));
    assert_eq!(spent.last_used_at, Some(now.clone()));
    assert!(!store.claim_rule_use(&"unknown".into(), &now).await.unwrap());
    assert_eq!(spent.source, None, "the built-in agent's grant");
}

/// An outside agent's grant is listed with its agent, and can be revoked.
async fn a_grant_keeps_the_agent_it_was_made_for(store: &Arc<dyn Store>) {
    let outside = crate::server::store::SessionRow {
        source: Some("codex".into()),
        owner: None,
        ..session("grants-codex")
    };
    store.create_session(&outside).await.unwrap();
    // The grant carries its agent (core::decisions reads it from the asking session).
    let codex_grant = Rule {
        source: Some("codex".into()),
        ..rule("codex-grant", None, None)
    };
    grant(store, "grants-codex", codex_grant).await;
    let theirs = listed(store, "codex-grant")
        .await
        .expect("an outside agent's grant");
    assert_eq!(theirs.source.as_deref(), Some("codex"));
    assert!(
        store
            .revoke_rule(&"codex-grant".into(), "browser")
            .await
            .unwrap()
    );
}

/// A revoked grant, used up or expired, leaves the list and claims nothing more.
async fn revoking_takes_a_grant_off_the_list_lapsed_or_not(
    store: &Arc<dyn Store>,
    now: &Timestamp,
) {
    assert!(
        store
            .revoke_rule(&"two-uses".into(), "browser")
            .await
            .unwrap()
    );
    assert!(
        listed(store, "two-uses").await.is_none(),
        "revoked: gone from the list"
    );
    assert!(!store.claim_rule_use(&"two-uses".into(), now).await.unwrap());
    assert!(
        store
            .revoke_rule(&"expired".into(), "browser")
            .await
            .unwrap()
    );
    assert!(listed(store, "expired").await.is_none());
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

/// A grant belongs to the agent it was made for: its `source` is stored with it (and still
/// read after the session that made it is deleted), and the matcher hands a call only a grant
/// of the calling agent — the built-in agent's `cat *` never answers Codex's `shell` call of
/// the same words, nor Codex's grant another outside agent's or the built-in agent's call.
pub async fn a_grant_answers_only_the_agent_it_was_made_for(store: Arc<dyn Store>) {
    use crate::server::gate::rules::{Caller, matching_subject};
    use crate::server::tools::Subject;
    store.create_session(&session("owners")).await.unwrap();
    let cat = |id: &str, source: Option<&str>| Rule {
        pattern: "cat *".into(),
        source: source.map(str::to_owned),
        ..rule(id, None, None)
    };
    grant(&store, "owners", cat("codex-cat", Some("codex"))).await;
    grant(&store, "owners", cat("built-in-cat", None)).await;
    let repo: &dyn crate::server::store::RuleRepo = store.as_ref();
    let answer = async |source: Option<&str>, command: &str| {
        let subject = Subject::Command(command.into());
        let caller = Caller {
            session_id: "owners",
            source,
        };
        matching_subject(repo, caller, "shell", Some(&subject), &|_| true)
            .await
            .unwrap()
            .map(|r| r.id.as_str().to_owned())
    };
    for command in ["cat /home/me/private/diary.txt", "cat  notes.md", "cat"] {
        assert_eq!(
            answer(None, command).await.as_deref(),
            Some("built-in-cat"),
            "{command}"
        );
        assert_eq!(
            answer(Some("codex"), command).await.as_deref(),
            Some("codex-cat"),
            "{command}"
        );
        for stranger in ["claude-code", "codex-2", "Codex", "", "countersign"] {
            assert_eq!(answer(Some(stranger), command).await, None, "{stranger}");
        }
    }
    store.delete_session(&"owners".into()).await.unwrap();
    let kept = listed(&store, "codex-cat")
        .await
        .expect("a workspace grant");
    assert_eq!(kept.source.as_deref(), Some("codex"));
    assert_eq!(listed(&store, "built-in-cat").await.unwrap().source, None);
}

/// `rule_in_force` is one read by id: a grant in force is, a revoked, expired or unknown one
/// is not — and a used-up one still is (the call that spent its last use may start).
pub async fn a_grant_in_force_is_read_by_id(store: Arc<dyn Store>) {
    store.create_session(&session("in-force")).await.unwrap();
    let now = Timestamp::now();
    grant(&store, "in-force", rule("live", None, None)).await;
    grant(&store, "in-force", rule("to-revoke", None, None)).await;
    grant(
        &store,
        "in-force",
        rule("soon", None, Some(now.plus_ms(60_000))),
    )
    .await;
    grant(&store, "in-force", rule("last-use", Some(1), None)).await;
    assert!(
        store
            .claim_rule_use(&"last-use".into(), &now)
            .await
            .unwrap()
    );
    assert!(
        store
            .revoke_rule(&"to-revoke".into(), "test")
            .await
            .unwrap()
    );
    let in_force =
        async |id: &str, at: &Timestamp| store.rule_in_force(&id.into(), at).await.unwrap();
    assert!(in_force("live", &now).await);
    assert!(in_force("last-use", &now).await);
    assert!(in_force("soon", &now).await);
    assert!(!in_force("soon", &now.plus_ms(61_000)).await);
    assert!(!in_force("to-revoke", &now).await);
    assert!(!in_force("no-such-grant", &now).await);
}

/// Revoking the token that holds an agent's name ends what that agent was given — the
/// reviewer's trust in it and its grants in force, each audited — before the name is free
/// for the next token: another agent claiming it inherits nothing. Another agent's grant
/// and trust stay, until a token first claims that name.
pub async fn a_freed_name_takes_its_grants_and_trust_with_it(store: Arc<dyn Store>) {
    use crate::protocol::{Scope, ToolClass};
    use crate::server::store::TokenRow;
    use crate::server::store::review::TrustRow;
    for name in ["freed-holder", "freed-next"] {
        let token = TokenRow {
            name: name.into(),
            scope: Scope::Gates.into(),
            secret_hash: format!("freed-{name}"),
            created_at: Timestamp::now(),
            last_used_at: None,
            owner: None,
        };
        store.create_token(&token, "browser").await.unwrap();
    }
    store
        .claim_source("freed-agent", "token:freed-holder")
        .await
        .unwrap();
    let outside = crate::server::store::SessionRow {
        source: Some("freed-agent".into()),
        owner: None,
        ..session("freed-session")
    };
    store.create_session(&outside).await.unwrap();
    for (id, source) in [("freed-grant", "freed-agent"), ("kept-grant", "kept-agent")] {
        let made = Rule {
            source: Some(source.into()),
            ..rule(id, None, None)
        };
        grant(&store, "freed-session", made).await;
    }
    for source in ["freed-agent", "kept-agent"] {
        let trust = TrustRow {
            class: ToolClass::Exec,
            source: source.into(),
            trusted_at: Timestamp::now(),
            reviewer: "history".into(),
        };
        assert!(store.trust_class(&trust, "browser").await.unwrap());
    }
    revoking_ends_what_its_names_were_given(&store).await;
    a_first_claim_ends_what_no_token_held(&store).await;
}

/// The holder is revoked: its name's trust and grant end, audited; another agent's stay; the
/// name is free.
async fn revoking_ends_what_its_names_were_given(store: &Arc<dyn Store>) {
    assert!(store.delete_token("freed-holder", "browser").await.unwrap());
    let trusts = store.trusted_classes().await.unwrap();
    assert!(
        !trusts.iter().any(|t| t.source == "freed-agent"),
        "{trusts:?}"
    );
    assert!(trusts.iter().any(|t| t.source == "kept-agent"));
    assert!(
        listed(store, "freed-grant").await.is_none(),
        "the freed agent's grant is revoked"
    );
    assert!(listed(store, "kept-grant").await.is_some());
    let revoked = store
        .audit_after(0, 1000, Some("rule_revoked"), Some("freed-grant"))
        .await
        .unwrap();
    assert_eq!(revoked.len(), 1, "{revoked:?}");
    let untrusted = store
        .audit_after(
            0,
            1000,
            Some("review_untrusted"),
            Some("review:exec/freed-agent"),
        )
        .await
        .unwrap();
    assert_eq!(untrusted.len(), 1, "{untrusted:?}");
    assert_eq!(
        store
            .claim_source("freed-agent", "token:freed-next")
            .await
            .unwrap(),
        "token:freed-next"
    );
}

/// What was given under a name no token held (an admin's gates, a database from before names
/// were claimed) is not the first claimant's: its claim ends it.
async fn a_first_claim_ends_what_no_token_held(store: &Arc<dyn Store>) {
    store
        .claim_source("kept-agent", "token:freed-next")
        .await
        .unwrap();
    assert!(listed(store, "kept-grant").await.is_none());
    let trusts = store.trusted_classes().await.unwrap();
    assert!(
        !trusts.iter().any(|t| t.source == "kept-agent"),
        "{trusts:?}"
    );
    let ended = store
        .audit_after(0, 1000, Some("rule_revoked"), Some("kept-grant"))
        .await
        .unwrap();
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert_eq!(ended[0].actor, "token:freed-next");
}
