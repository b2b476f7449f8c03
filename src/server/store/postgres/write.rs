//! Every change in a transaction of its own: appends with their seqs, gate changes, rule uses,
//! audit chaining, sessions, rules, tokens and outside agents' sessions. A transaction dropped
//! on an error path rolls back, so a failure leaves nothing half-written.

use sqlx::{PgConnection, PgPool};

use super::read::from_json;
use crate::protocol::{ApprovalId, Event, SessionId, Timestamp, TurnId};
use crate::server::audit;
use crate::server::store::{
    Commit, GateChange, LeaseStep, NAME_CLAIMED, NAME_FREED, NewEvent, SessionRow, StoreError,
    TokenRow, grant_ended_draft, source_claim_draft, token_audit_draft,
};

fn to_json<T: serde::Serialize>(session_id: &str, value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt {
        session_id: session_id.to_owned(),
        seq: 0,
        reason: e.to_string(),
    })
}

async fn insert_session(conn: &mut PgConnection, row: &SessionRow) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO sessions (id, title, created_at, approval_mode, last_seq, source, owner)
         VALUES ($1, $2, $3, $4, 0, $5, $6)",
    )
    .bind(row.id.as_str())
    .bind(&row.title)
    .bind(row.created_at.as_str())
    .bind(row.approval_mode.as_str())
    .bind(&row.source)
    .bind(&row.owner)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn create_session(pool: &PgPool, row: &SessionRow) -> Result<(), StoreError> {
    let mut conn = pool.acquire().await?;
    insert_session(&mut conn, row).await
}

pub async fn delete_session(pool: &PgPool, id: &str) -> Result<bool, StoreError> {
    let done = sqlx::query("DELETE FROM sessions WHERE id = $1")
        .bind(id)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// One append in one round trip: `countersign_append` (migration 0005) does the gate change,
/// the outside gate record, the rule use, the seq allocation, the lease step, the events and
/// their audit entries in one implicit transaction, refusing with SQLSTATEs of our own that
/// `refusal` reads back. The events go without their seqs (the function writes each one in
/// front of its body), so nothing waits for a first round trip to learn them.
pub async fn append(
    pool: &PgPool,
    announcer: &super::signals::Announcer,
    sealer: &super::seal::Sealer,
    instance: &str,
    session_id: &str,
    events: &[NewEvent],
    commit: &Commit,
) -> Result<Vec<Event>, StoreError> {
    let at = Timestamp::now();
    let mut unstamped: Vec<Event> = events
        .iter()
        .map(|new| Event {
            seq: None,
            at: at.clone(),
            turn_id: new.turn_id.clone(),
            body: new.body.clone(),
        })
        .collect();
    let (first, audited) = {
        let args = AppendArgs::of(session_id, instance, &at, &unstamped, commit)?;
        let audited = !args.audit.actions.is_empty();
        (call_append(pool, &args).await, audited)
    };
    let resolve = match &commit.gate {
        Some(GateChange::Resolve { resolution, .. }) => Some(resolution),
        _ => None,
    };
    let first = match first {
        Ok(first) => first,
        Err(err) => {
            return Err(match (refusal(session_id, err), resolve) {
                (Refused::AlreadyResolved, Some(resolution)) => {
                    winner(pool, session_id, resolution.approval_id.as_str()).await?
                }
                (Refused::AlreadyResolved, None) => {
                    StoreError::Database("a refusal for a gate this commit does not resolve".into())
                }
                (Refused::Store(err), _) => err,
            });
        }
    };
    let first_seq = u64::try_from(first.0).unwrap_or(1).max(1);
    for (i, event) in unstamped.iter_mut().enumerate() {
        event.seq = Some(first_seq + i as u64);
    }
    if audited {
        sealer.kick();
    }
    if let Some(last_seq) = unstamped.last().and_then(|e| e.seq) {
        // After the commit, never before it (see `signals::Announcer`).
        announcer.appended(super::signals::appended(
            session_id, first_seq, last_seq, instance,
        ));
    }
    Ok(unstamped)
}

/// What `countersign_append` is given, read from one commit and its events.
struct AppendArgs<'a> {
    session_id: &'a str,
    instance: &'a str,
    at: &'a Timestamp,
    kinds: Vec<&'static str>,
    turns: Vec<Option<&'a str>>,
    /// Each event's JSON without its seq (the function splices `"seq":N,` in).
    bodies: Vec<String>,
    open: Option<&'a crate::protocol::ApprovalRequest>,
    request_json: Option<String>,
    resolve: Option<&'a crate::protocol::Resolution>,
    resolution_json: Option<String>,
    new_rule: Option<&'a crate::protocol::Rule>,
    external: Option<&'a crate::server::store::ExternalGate>,
    commit: &'a Commit,
    lease: Option<&'static str>,
    lease_turn: Option<&'a str>,
    audit: AuditColumns,
}

impl<'a> AppendArgs<'a> {
    fn of(
        session_id: &'a str,
        instance: &'a str,
        at: &'a Timestamp,
        unstamped: &'a [Event],
        commit: &'a Commit,
    ) -> Result<Self, StoreError> {
        let mut bodies = Vec::with_capacity(unstamped.len());
        for event in unstamped {
            let json = to_json(session_id, event)?;
            // The function splices `"seq":N,` in after the opening brace.
            if !json.starts_with("{\"") {
                return Err(StoreError::Database(format!(
                    "an event serialized as something other than an object: {json}"
                )));
            }
            bodies.push(json);
        }
        let (open, resolve, new_rule) = match &commit.gate {
            Some(GateChange::Open(request)) => (Some(&**request), None, None),
            Some(GateChange::Resolve {
                resolution,
                new_rule,
            }) => (None, Some(resolution), new_rule.as_ref()),
            None => (None, None, None),
        };
        let gate_opener = commit.external.as_ref().map(|e| e.opened_by.as_str());
        let drafts = audit::drafts_for(session_id, unstamped, new_rule, gate_opener);
        let (lease, lease_turn) = match &commit.lease {
            Some(LeaseStep::Claim(turn)) => (Some("claim"), Some(turn.as_str())),
            Some(LeaseStep::Hold(turn)) => (Some("hold"), Some(turn.as_str())),
            Some(LeaseStep::Release(turn)) => (Some("release"), Some(turn.as_str())),
            None => (None, None),
        };
        Ok(AppendArgs {
            session_id,
            instance,
            at,
            kinds: unstamped.iter().map(Event::kind).collect(),
            turns: unstamped
                .iter()
                .map(|e| e.turn_id.as_ref().map(TurnId::as_str))
                .collect(),
            bodies,
            open,
            request_json: open.map(|r| to_json(session_id, r)).transpose()?,
            resolve,
            resolution_json: resolve.map(|r| to_json(session_id, r)).transpose()?,
            new_rule,
            external: commit.external.as_ref(),
            commit,
            lease,
            lease_turn,
            audit: AuditColumns::of(&drafts),
        })
    }
}

/// The one round trip: `countersign_append` (migration 0009) with its 38 arguments; the first
/// seq it gave.
async fn call_append(pool: &PgPool, a: &AppendArgs<'_>) -> Result<(i64,), sqlx::Error> {
    let (open, resolve, new_rule, external) = (a.open, a.resolve, a.new_rule, a.external);
    sqlx::query_as(
        "SELECT countersign_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
             $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30,
             $31, $32, $33, $34, $35, $36, $37, $38)",
    )
    .bind(a.session_id)
    .bind(a.instance)
    .bind(a.at.as_str())
    .bind(&a.kinds)
    .bind(&a.turns)
    .bind(&a.bodies)
    .bind(open.map(|r| r.body.approval_id.as_str()))
    .bind(open.map(|r| r.turn_id.as_str()))
    .bind(a.request_json.as_deref())
    .bind(open.map(|r| r.body.created_at.as_str()))
    .bind(open.map(|r| r.body.expires_at.as_str()))
    .bind(resolve.map(|r| r.approval_id.as_str()))
    .bind(a.resolution_json.as_deref())
    .bind(resolve.map(|r| r.resolved_at.as_str()))
    .bind(new_rule.map(|r| r.id.as_str()))
    .bind(new_rule.map(|r| r.tool.as_str()))
    .bind(new_rule.map(|r| r.pattern.as_str()))
    .bind(new_rule.map(|r| r.scope.as_str()))
    .bind(new_rule.and_then(|r| r.session_id.as_ref().map(SessionId::as_str)))
    .bind(new_rule.map(|r| r.created_at.as_str()))
    .bind(new_rule.and_then(|r| r.created_by_approval.as_ref().map(ApprovalId::as_str)))
    .bind(new_rule.and_then(|r| r.expires_at.as_ref().map(|t| t.as_str())))
    .bind(external.map(|e| e.approval_id.as_str()))
    .bind(external.map(|e| e.opened_by.as_str()))
    .bind(external.and_then(|e| e.idempotency_key.as_deref()))
    .bind(external.map(|e| e.created_at.as_str()))
    .bind(external.map(|e| {
        e.created_at
            .plus_ms(-crate::server::store::IDEMPOTENCY_WINDOW_MS)
            .as_str()
            .to_owned()
    }))
    .bind(new_rule.and_then(|r| r.max_uses).map(super::read::to_i64))
    .bind(new_rule.and_then(|r| r.source.as_deref()))
    .bind(a.at.as_str())
    .bind(a.commit.set_mode.map(|m| m.as_str()))
    .bind(a.lease)
    .bind(a.lease_turn)
    .bind(super::lease::ttl_secs())
    .bind(&a.audit.actors)
    .bind(&a.audit.actions)
    .bind(&a.audit.subjects)
    .bind(&a.audit.details)
    .fetch_one(pool)
    .await
}

/// What `countersign_append` refused, read from its SQLSTATEs (listed in migration 0005);
/// anything else is the database's own error.
enum Refused {
    /// The gate already has its answer: the caller reads the winner (`winner`).
    AlreadyResolved,
    Store(StoreError),
}

fn refusal(session_id: &str, err: sqlx::Error) -> Refused {
    let Some(db) = err.as_database_error() else {
        return Refused::Store(err.into());
    };
    let message = db.message().to_owned();
    Refused::Store(match db.code().as_deref() {
        Some("CS001") => return Refused::AlreadyResolved,
        Some("CS002") => StoreError::UnknownApproval(message),
        Some("CS003") => StoreError::UnknownSession(message),
        Some("CS004") => StoreError::KeyUsed(message),
        Some("CS005") => StoreError::TurnHeld(session_id.to_owned()),
        Some("CS006") => StoreError::LeaseLost(session_id.to_owned()),
        Some("CS007") => {
            StoreError::Database("an idempotency key conflicted and then vanished".into())
        }
        _ => err.into(),
    })
}

/// The answer that won the race for a gate, as `AlreadyResolved`.
async fn winner(
    pool: &PgPool,
    session_id: &str,
    approval_id: &str,
) -> Result<StoreError, StoreError> {
    // By the key alone, as `read::get_gate`.
    let existing: Option<(String, Option<String>)> =
        sqlx::query_as("SELECT session_id, resolution FROM approvals WHERE approval_id = $1")
            .bind(approval_id)
            .fetch_optional(pool)
            .await?;
    let existing = existing.filter(|(owner, _)| owner == session_id);
    Ok(match existing.and_then(|(_, r)| r) {
        Some(json) => StoreError::AlreadyResolved(Box::new(from_json(session_id, 0, &json)?)),
        None => StoreError::UnknownApproval(approval_id.to_owned()),
    })
}

/// Audit drafts as the columns `audit_pending` takes, one array each.
struct AuditColumns {
    actors: Vec<String>,
    actions: Vec<&'static str>,
    subjects: Vec<String>,
    details: Vec<String>,
}

impl AuditColumns {
    fn of(drafts: &[audit::AuditDraft]) -> Self {
        AuditColumns {
            actors: drafts.iter().map(|d| d.actor.clone()).collect(),
            actions: drafts.iter().map(|d| d.action).collect(),
            subjects: drafts.iter().map(|d| d.subject.clone()).collect(),
            details: drafts.iter().map(|d| d.detail.to_string()).collect(),
        }
    }
}

/// Queues `drafts` for the audit chain inside the caller's transaction: they commit with the
/// change they describe, and the sealer (`seal.rs`) numbers and hashes them after the commit.
/// The caller kicks the sealer once it has committed.
pub(super) async fn queue_audit(
    conn: &mut PgConnection,
    drafts: Vec<audit::AuditDraft>,
) -> Result<(), StoreError> {
    if drafts.is_empty() {
        return Ok(());
    }
    let columns = AuditColumns::of(&drafts);
    sqlx::query(
        "INSERT INTO audit_pending (at, actor, action, subject, detail)
         SELECT $1, a.actor, a.action, a.subject, a.detail
         FROM unnest($2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[])
              WITH ORDINALITY AS a(actor, action, subject, detail, i)
         ORDER BY a.i",
    )
    .bind(Timestamp::now().as_str())
    .bind(&columns.actors)
    .bind(&columns.actions)
    .bind(&columns.subjects)
    .bind(&columns.details)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

pub async fn revoke_rule(pool: &PgPool, rule_id: &str, actor: &str) -> Result<bool, StoreError> {
    let mut tx = pool.begin().await?;
    let n = sqlx::query("UPDATE rules SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
        .bind(Timestamp::now().as_str())
        .bind(rule_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if n == 0 {
        return Ok(false);
    }
    let draft = audit::AuditDraft {
        actor: actor.to_owned(),
        action: "rule_revoked",
        subject: rule_id.to_owned(),
        detail: serde_json::json!({}),
    };
    queue_audit(&mut tx, vec![draft]).await?;
    tx.commit().await?;
    Ok(true)
}

pub async fn append_audit(pool: &PgPool, drafts: Vec<audit::AuditDraft>) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    queue_audit(&mut tx, drafts).await?;
    tx.commit().await?;
    Ok(())
}

pub async fn create_token(pool: &PgPool, row: &TokenRow, actor: &str) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    // Its maker held still until this commits: a removal waits, then revokes this token too
    // (it deletes the person before their tokens); one that went first leaves no maker.
    if let Some(owner) = &row.owner {
        let present: Option<(i32,)> =
            sqlx::query_as("SELECT 1 FROM people WHERE id = $1 FOR SHARE")
                .bind(owner)
                .fetch_optional(&mut *tx)
                .await?;
        if present.is_none() {
            return Err(StoreError::Gone(crate::server::store::MAKER_GONE.into()));
        }
    }
    let inserted = sqlx::query(
        "INSERT INTO tokens (name, scope, secret_hash, created_at, last_used_at, owner)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO NOTHING",
    )
    .bind(&row.name)
    .bind(row.scope.as_str())
    .bind(&row.secret_hash)
    .bind(row.created_at.as_str())
    .bind(row.last_used_at.as_ref().map(|t| t.as_str().to_owned()))
    .bind(row.owner.as_deref())
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if inserted == 0 {
        return Err(StoreError::Taken(row.name.clone()));
    }
    queue_audit(
        &mut tx,
        vec![token_audit_draft(
            actor,
            "token_created",
            &row.name,
            row.scope.as_str(),
        )],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

pub async fn delete_token(pool: &PgPool, name: &str, actor: &str) -> Result<bool, StoreError> {
    let mut tx = pool.begin().await?;
    let revoked = revoke_token_in(&mut tx, name, actor).await?;
    tx.commit().await?;
    Ok(revoked)
}

/// Revokes the token `name` inside the caller's transaction (revoking it, or removing the
/// person who made it): its phones' push subscriptions go with it (and their answer
/// capabilities), and the outside agents' names it claimed, after what they were given ends;
/// audited `token_revoked` under `actor`. Whether there was one.
pub(super) async fn revoke_token_in(
    tx: &mut PgConnection,
    name: &str,
    actor: &str,
) -> Result<bool, StoreError> {
    let scope: Option<(String,)> =
        sqlx::query_as("DELETE FROM tokens WHERE name = $1 RETURNING scope")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
    let Some((scope,)) = scope else {
        return Ok(false);
    };
    let credential = crate::protocol::Actor::Token(name).to_string();
    sqlx::query("DELETE FROM push_subscriptions WHERE credential = $1")
        .bind(&credential)
        .execute(&mut *tx)
        .await?;
    end_what_its_names_were_given(&mut *tx, &credential, actor).await?;
    sqlx::query("DELETE FROM source_claims WHERE actor = $1")
        .bind(&credential)
        .execute(&mut *tx)
        .await?;
    queue_audit(
        &mut *tx,
        vec![token_audit_draft(actor, "token_revoked", name, &scope)],
    )
    .await?;
    Ok(true)
}

/// Revokes every token the person `owner` made, inside the caller's transaction (their
/// removal), each as [`revoke_token_in`] does.
pub(super) async fn revoke_tokens_of_in(
    tx: &mut PgConnection,
    owner: &str,
    actor: &str,
) -> Result<(), StoreError> {
    let names: Vec<(String,)> =
        sqlx::query_as("SELECT name FROM tokens WHERE owner = $1 ORDER BY name")
            .bind(owner)
            .fetch_all(&mut *tx)
            .await?;
    for (name,) in names {
        revoke_token_in(&mut *tx, &name, actor).await?;
    }
    Ok(())
}

/// Before a token's names are freed: the reviewer's trust in each, and each one's grants in
/// force, end (audited), so the next token to claim a name inherits nothing.
async fn end_what_its_names_were_given(
    tx: &mut PgConnection,
    credential: &str,
    actor: &str,
) -> Result<(), StoreError> {
    let names: Vec<(String,)> = sqlx::query_as("SELECT source FROM source_claims WHERE actor = $1")
        .bind(credential)
        .fetch_all(&mut *tx)
        .await?;
    for (name,) in names {
        end_what_a_name_was_given(&mut *tx, &name, actor, NAME_FREED).await?;
    }
    Ok(())
}

/// The reviewer's trust in `name` and its grants in force end, each audited with `why`.
async fn end_what_a_name_was_given(
    tx: &mut PgConnection,
    name: &str,
    actor: &str,
    why: &str,
) -> Result<(), StoreError> {
    let classes: Vec<(String,)> =
        sqlx::query_as("SELECT class FROM review_trust WHERE source = $1 FOR UPDATE")
            .bind(name)
            .fetch_all(&mut *tx)
            .await?;
    for (class,) in classes {
        if let Some(class) = crate::protocol::ToolClass::parse(&class) {
            untrust_in(&mut *tx, class, name, actor, why).await?;
        }
    }
    let grants: Vec<(String,)> = sqlx::query_as(
        "UPDATE rules SET revoked_at = $1 WHERE source = $2 AND revoked_at IS NULL RETURNING id",
    )
    .bind(Timestamp::now().as_str())
    .bind(name)
    .fetch_all(&mut *tx)
    .await?;
    let drafts = grants
        .iter()
        .map(|(id,)| grant_ended_draft(actor, id, name, why))
        .collect();
    queue_audit(&mut *tx, drafts).await
}

/// Who `source` belongs to, claimed for `actor` when nobody has: the insert that does not
/// conflict is the claim (and its audit entry); a conflicting one reads the first claimant.
pub async fn claim_source(pool: &PgPool, source: &str, actor: &str) -> Result<String, StoreError> {
    let owner: Option<(String,)> =
        sqlx::query_as("SELECT actor FROM source_claims WHERE source = $1")
            .bind(source)
            .fetch_optional(pool)
            .await?;
    if let Some((owner,)) = owner {
        return Ok(owner);
    }
    let mut tx = pool.begin().await?;
    // The claiming token held still until this commits: a revocation waits, then frees this
    // claim too (it deletes the token before its claims); one that went first leaves none.
    if let crate::protocol::Actor::Token(name) = crate::protocol::Actor::parse(actor) {
        let present: Option<(i32,)> =
            sqlx::query_as("SELECT 1 FROM tokens WHERE name = $1 FOR SHARE")
                .bind(name)
                .fetch_optional(&mut *tx)
                .await?;
        if present.is_none() {
            return Err(StoreError::Gone(crate::server::store::CLAIMANT_GONE.into()));
        }
    }
    let claimed = sqlx::query(
        "INSERT INTO source_claims (source, actor, claimed_at) VALUES ($1, $2, $3) \
         ON CONFLICT (source) DO NOTHING",
    )
    .bind(source)
    .bind(actor)
    .bind(Timestamp::now().as_str())
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1;
    if !claimed {
        let (owner,): (String,) =
            sqlx::query_as("SELECT actor FROM source_claims WHERE source = $1")
                .bind(source)
                .fetch_one(&mut *tx)
                .await?;
        return Ok(owner);
    }
    queue_audit(&mut tx, vec![source_claim_draft(source, actor)]).await?;
    end_what_a_name_was_given(&mut tx, source, actor, NAME_CLAIMED).await?;
    tx.commit().await?;
    Ok(actor.to_owned())
}

/// The session of `(source, external_session)`, made from `row` by whichever caller comes
/// first: an advisory lock on the pair keeps two instances from making two.
pub async fn external_session(
    pool: &PgPool,
    source: &str,
    external_session: &str,
    row: &SessionRow,
) -> Result<SessionId, StoreError> {
    let find =
        "SELECT session_id FROM external_sessions WHERE source = $1 AND external_session = $2";
    let existing: Option<(String,)> = sqlx::query_as(find)
        .bind(source)
        .bind(external_session)
        .fetch_optional(pool)
        .await?;
    if let Some((id,)) = existing {
        return Ok(id.into());
    }
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(format!("{source}\u{1f}{external_session}"))
        .execute(&mut *tx)
        .await?;
    let existing: Option<(String,)> = sqlx::query_as(find)
        .bind(source)
        .bind(external_session)
        .fetch_optional(&mut *tx)
        .await?;
    if let Some((id,)) = existing {
        return Ok(id.into());
    }
    insert_session(&mut tx, row).await?;
    sqlx::query(
        "INSERT INTO external_sessions (source, external_session, session_id) VALUES ($1, $2, $3)",
    )
    .bind(source)
    .bind(external_session)
    .bind(row.id.as_str())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(row.id.clone())
}

/// Spends one use of a rule if it is still in force. Under READ COMMITTED a second UPDATE of
/// the same row waits for the first to commit and then checks its WHERE again against the
/// new row, so two instances never both spend the last use.
pub async fn claim_rule_use(
    pool: &PgPool,
    rule_id: &str,
    now: &Timestamp,
) -> Result<bool, StoreError> {
    let n = sqlx::query(
        "UPDATE rules SET uses = uses + 1, last_used_at = $1
         WHERE id = $2 AND revoked_at IS NULL
           AND (max_uses IS NULL OR uses < max_uses)
           AND (expires_at IS NULL OR expires_at > $1)",
    )
    .bind(now.as_str())
    .bind(rule_id)
    .execute(pool)
    .await?
    .rows_affected();
    Ok(n > 0)
}

/// Deletes one trust row and queues its audit entry; whether there was one.
pub(super) async fn untrust_in(
    tx: &mut PgConnection,
    class: crate::protocol::ToolClass,
    source: &str,
    actor: &str,
    why: &str,
) -> Result<bool, StoreError> {
    let gone = sqlx::query("DELETE FROM review_trust WHERE class = $1 AND source = $2")
        .bind(class.as_str())
        .bind(source)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if gone == 0 {
        return Ok(false);
    }
    let draft = crate::server::store::review::trust_audit_draft(
        actor,
        "review_untrusted",
        class,
        source,
        Some(why),
    );
    queue_audit(tx, vec![draft]).await?;
    Ok(true)
}
