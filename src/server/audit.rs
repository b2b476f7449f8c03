//! The audit log's rules: which events are audited and by whom, how an entry is hashed into
//! the chain, and how the chain is verified.
//!
//! **Invariant 10** ([ARCHITECTURE.md](../../ARCHITECTURE.md#invariants)): audit entries derive from each commit's events, in its transaction.
//!
//! Each store calls [`drafts_for`] inside its append's transaction (see `store::sqlite`).

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::protocol::canonical_json;
use crate::protocol::{
    AnsweredBy, AuditEntry, AuditVerdict, Event, EventBody, Resolution, Rule, RuleId,
};

/// The `prev_hash` of the first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// An entry before it has a place in the chain.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditDraft {
    pub actor: String,
    pub action: &'static str,
    pub subject: String,
    pub detail: Value,
}

/// Who resolved a gate, as the audit names it: the resolution's actor (from the credential or
/// the cause); for events written before actors existed, what they recorded then.
pub fn resolver(resolution: &Resolution) -> String {
    if !resolution.actor.is_empty() {
        return resolution.actor.clone();
    }
    match resolution.answered_by {
        AnsweredBy::User => format!("user:{}", resolution.client_id.as_deref().unwrap_or("api")),
        AnsweredBy::Rule => format!(
            "rule:{}",
            resolution.rule_id.as_ref().map_or("?", RuleId::as_str)
        ),
        AnsweredBy::Timeout => "timeout".to_owned(),
        AnsweredBy::System => "system".to_owned(),
        AnsweredBy::Reviewer => "reviewer".to_owned(),
    }
}

/// Who resolved a gate, in a person's words (a push's closing line, a `409`'s message): the
/// credential and, for a browser login, its device — never a bare `browser`.
pub fn resolver_words(resolution: &Resolution) -> String {
    let device = resolution.login.as_ref().map(|login| login.device.as_str());
    crate::protocol::Actor::parse(&resolver(resolution)).words(device)
}

/// The audit entries a commit's events call for. `gate_opener`: the credential that opened an
/// outside agent's gate in this commit (the built-in agent's gates are opened by `agent`).
pub fn drafts_for(
    session_id: &str,
    events: &[Event],
    new_rule: Option<&Rule>,
    gate_opener: Option<&str>,
) -> Vec<AuditDraft> {
    let mut drafts = Vec::new();
    for event in events {
        match &event.body {
            EventBody::ApprovalRequest(request) => drafts.push(AuditDraft {
                actor: gate_opener.unwrap_or("agent").into(),
                action: "gate_opened",
                subject: request.approval_id.to_string(),
                detail: json!({
                    "session_id": session_id, "turn_id": event.turn_id, "tool": request.tool,
                    "kind": request.kind, "reason": request.reason, "summary": request.summary,
                    "digest": request.digest, "expires_at": request.expires_at,
                }),
            }),
            EventBody::ApprovalResolved(resolution) => {
                drafts.extend(resolved(session_id, resolution, new_rule));
            }
            EventBody::ToolCall {
                call_id,
                tool,
                args,
                rule_id: Some(rule_id),
                ..
            } => drafts.push(AuditDraft {
                actor: format!("rule:{rule_id}"),
                action: "rule_used",
                subject: rule_id.to_string(),
                detail: json!({"session_id": session_id, "call_id": call_id, "tool": tool, "args": args}),
            }),
            EventBody::ModeChanged {
                previous,
                next,
                source,
                actor,
            } => drafts.push(AuditDraft {
                actor: match (source, actor) {
                    (crate::protocol::ModeSource::Restore, _) => "system".into(),
                    (_, Some(actor)) => actor.clone(),
                    // Events written before actors existed.
                    (_, None) => "user".into(),
                },
                action: "mode_changed",
                subject: session_id.to_owned(),
                detail: json!({"previous": previous, "next": next, "source": source}),
            }),
            _ => {}
        }
    }
    drafts
}

/// A card's answer, and the rule its Allow always made (in the same commit).
fn resolved(session_id: &str, resolution: &Resolution, new_rule: Option<&Rule>) -> Vec<AuditDraft> {
    let mut detail = json!({
        "session_id": session_id, "decision": resolution.decision,
        "reason": resolution.reason, "edits": resolution.edits,
        "rule_id": resolution.rule_id, "execution_mode": resolution.execution_mode,
        "via": resolution.via, "passkey": resolution.passkey,
    });
    // Which browser login answered, and its device: the actor says only `browser` or the
    // token (protocol.md), this says which browser. Only where there is one, so the entries
    // of other answers read as they always did.
    if let (Some(login), Some(fields)) = (&resolution.login, detail.as_object_mut()) {
        fields.insert("login".into(), json!(login));
    }
    let mut drafts = vec![AuditDraft {
        actor: resolver(resolution),
        action: "gate_resolved",
        subject: resolution.approval_id.to_string(),
        detail,
    }];
    if let Some(rule) = new_rule {
        drafts.push(AuditDraft {
            actor: resolver(resolution),
            action: "rule_created",
            subject: rule.id.to_string(),
            // How far the grant reaches, all of it: its limits (`null`: none) and the agent
            // it belongs to (`null`: the built-in agent), so the log never reads a one-use or
            // expiring grant as unlimited.
            detail: json!({
                "tool": rule.tool, "pattern": rule.pattern, "scope": rule.scope,
                "session_id": rule.session_id, "approval_id": resolution.approval_id,
                "max_uses": rule.max_uses, "expires_at": rule.expires_at, "source": rule.source,
            }),
        });
    }
    drafts
}

/// The hash of an entry: sha256 of its predecessor's hash and its canonical JSON.
pub fn hash_of(entry: &AuditEntry) -> String {
    let body = json!({
        "n": entry.n, "at": entry.at, "actor": entry.actor, "action": entry.action,
        "subject": entry.subject, "detail": entry.detail, "prev_hash": entry.prev_hash,
    });
    let mut hasher = Sha256::new();
    hasher.update(entry.prev_hash.as_bytes());
    hasher.update(canonical_json(&body).as_bytes());
    hex::encode(hasher.finalize())
}

/// Places a draft after `prev` in the chain.
pub fn seal(
    draft: AuditDraft,
    n: u64,
    at: crate::protocol::Timestamp,
    prev_hash: String,
) -> AuditEntry {
    let mut entry = AuditEntry {
        n,
        at,
        actor: draft.actor,
        action: draft.action.to_owned(),
        subject: draft.subject,
        detail: draft.detail,
        prev_hash,
        hash: String::new(),
    };
    entry.hash = hash_of(&entry);
    entry
}

/// Walks the chain; `first_bad` is the first entry whose number, link or hash is wrong (an
/// altered entry fails its own hash; a deleted one breaks the numbering and the link after it).
#[derive(Default)]
pub struct Verifier {
    expected_n: u64,
    prev_hash: String,
    first_bad: Option<u64>,
    seen: u64,
}

impl Verifier {
    pub fn new() -> Self {
        Verifier {
            expected_n: 1,
            prev_hash: GENESIS.to_owned(),
            first_bad: None,
            seen: 0,
        }
    }

    pub fn check(&mut self, entry: &AuditEntry) {
        self.seen += 1;
        if self.first_bad.is_none()
            && (entry.n != self.expected_n
                || entry.prev_hash != self.prev_hash
                || hash_of(entry) != entry.hash)
        {
            self.first_bad = Some(entry.n);
        }
        self.expected_n = entry.n + 1;
        self.prev_hash = entry.hash.clone();
    }

    pub fn verdict(self) -> AuditVerdict {
        AuditVerdict {
            ok: self.first_bad.is_none(),
            entries: self.seen,
            first_bad: self.first_bad,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: u64) -> Vec<AuditEntry> {
        let mut prev = GENESIS.to_owned();
        (1..=n)
            .map(|i| {
                let draft = AuditDraft {
                    actor: "user:api".into(),
                    action: "gate_resolved",
                    subject: format!("g{i}"),
                    detail: json!({"decision": "approve", "i": i}),
                };
                let entry = seal(draft, i, "2026-01-01T00:00:00.000Z".into(), prev.clone());
                prev = entry.hash.clone();
                entry
            })
            .collect()
    }

    fn verify(entries: &[AuditEntry]) -> AuditVerdict {
        let mut v = Verifier::new();
        entries.iter().for_each(|e| v.check(e));
        v.verdict()
    }

    /// `rule_created` says how far the grant reaches: its use limit, expiry and agent, each
    /// `null` when it has none (never left out, so an absent limit is not read as unknown).
    #[test]
    fn a_grants_entry_names_its_limits_and_agent() {
        use crate::protocol::{AnsweredBy, ApprovalId, Decision, RuleScope, Timestamp};
        let grant = |max_uses, expires_at: Option<&str>, source: Option<&str>| Rule {
            id: "r1".into(),
            tool: "shell".into(),
            pattern: "cat *".into(),
            scope: RuleScope::Workspace,
            session_id: None,
            created_at: Timestamp::from("2026-12-06T10:00:00.000Z"),
            created_by_approval: Some("a1".into()),
            uses: 0,
            last_used_at: None,
            expires_at: expires_at.map(Timestamp::from),
            max_uses,
            lapsed: None,
            source: source.map(str::to_owned),
        };
        let resolution = Resolution::plain(
            &ApprovalId::from("a1"),
            Decision::AllowAlways,
            AnsweredBy::User,
            "browser",
            Timestamp::from("2026-12-06T10:00:00.000Z"),
        );
        let detail = |rule: &Rule| {
            let drafts = resolved("s1", &resolution, Some(rule));
            let created = drafts.iter().find(|d| d.action == "rule_created").unwrap();
            created.detail.clone()
        };
        let limited = detail(&grant(
            Some(3),
            Some("2026-12-06T11:00:00.000Z"),
            Some("codex"),
        ));
        assert_eq!(limited["max_uses"], 3, "{limited}");
        assert_eq!(
            limited["expires_at"], "2026-12-06T11:00:00.000Z",
            "{limited}"
        );
        assert_eq!(limited["source"], "codex", "{limited}");
        let open_ended = detail(&grant(None, None, None));
        for field in ["max_uses", "expires_at", "source"] {
            assert_eq!(
                open_ended.get(field),
                Some(&Value::Null),
                "{field}: {open_ended}"
            );
        }
    }

    #[test]
    fn an_intact_chain_verifies() {
        let v = verify(&chain(5));
        assert!(v.ok);
        assert_eq!(v.entries, 5);
        assert_eq!(v.first_bad, None);
        assert!(verify(&[]).ok);
    }

    #[test]
    fn altering_one_entry_fails_exactly_there() {
        let mut entries = chain(5);
        entries[2].detail = json!({"decision": "deny", "i": 3});
        assert_eq!(verify(&entries).first_bad, Some(3));
        let mut entries = chain(5);
        entries[3].actor = "user:someone-else".into();
        assert_eq!(verify(&entries).first_bad, Some(4));
    }

    #[test]
    fn deleting_an_entry_is_detected() {
        let mut entries = chain(5);
        entries.remove(1);
        let v = verify(&entries);
        assert!(!v.ok);
        assert_eq!(v.first_bad, Some(3));
        // Deleting the last entry cannot be seen from the chain alone; the count says it.
        let mut entries = chain(5);
        entries.pop();
        assert_eq!(verify(&entries).entries, 4);
    }

    #[test]
    fn recomputing_a_hash_does_not_hide_an_edit() {
        let mut entries = chain(4);
        entries[1].detail = json!({"forged": true});
        entries[1].hash = hash_of(&entries[1]);
        assert_eq!(
            verify(&entries).first_bad,
            Some(3),
            "the next link no longer matches"
        );
    }
}
