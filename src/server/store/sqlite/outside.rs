//! Named tokens and outside agents' sessions and gates: their reads (on the reader pool) and
//! their writes (statements run by the writer thread, `Writer::exec`).

use rusqlite::{OptionalExtension, Row, params};

use super::SqliteStore;
use super::batch::Done;
use super::write::insert_session;
use crate::protocol::{ApprovalId, SessionId, Timestamp};
use crate::server::store::{
    ExternalGate, NAME_CLAIMED, NAME_FREED, SessionRow, StoreError, TokenRow, grant_ended_draft,
    source_claim_draft, token_audit_draft,
};

const TOKEN_COLUMNS: &str = "name, scope, secret_hash, created_at, last_used_at, owner";

fn token(row: &Row<'_>) -> rusqlite::Result<TokenRow> {
    Ok(TokenRow {
        name: row.get(0)?,
        scope: row.get(1)?,
        secret_hash: row.get(2)?,
        created_at: row.get(3)?,
        last_used_at: row.get(4)?,
        owner: row.get(5)?,
    })
}

/// Before a token's names are freed: the reviewer's trust in each, and each one's grants in
/// force, end (audited), so the next token to claim a name inherits nothing.
fn end_what_its_names_were_given(
    sp: &rusqlite::Savepoint<'_>,
    credential: &str,
    actor: &str,
) -> Result<(), StoreError> {
    let names: Vec<String> = sp
        .prepare_cached("SELECT source FROM source_claims WHERE actor = ?1")?
        .query_map(params![credential], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for name in names {
        end_what_a_name_was_given(sp, &name, actor, NAME_FREED)?;
    }
    Ok(())
}

/// The reviewer's trust in `name` and its grants in force end, each audited with `why`.
fn end_what_a_name_was_given(
    sp: &rusqlite::Savepoint<'_>,
    name: &str,
    actor: &str,
    why: &str,
) -> Result<(), StoreError> {
    let classes: Vec<String> = sp
        .prepare_cached("SELECT class FROM review_trust WHERE source = ?1")?
        .query_map(params![name], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for class in classes {
        super::review::untrust_in(sp, &class, name, actor, why)?;
    }
    let grants: Vec<String> = sp
        .prepare_cached(
            "UPDATE rules SET revoked_at = ?1 WHERE source = ?2 AND revoked_at IS NULL RETURNING id",
        )?
        .query_map(params![Timestamp::now(), name], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let drafts = grants
        .iter()
        .map(|id| grant_ended_draft(actor, id, name, why))
        .collect();
    super::write::chain_audit(sp, drafts)?;
    Ok(())
}

/// Revokes the token `name` inside the caller's transaction (revoking it, or removing the
/// person who made it): its phones' push subscriptions go with it (and their answer
/// capabilities), and the outside agents' names it claimed, after what they were given ends;
/// audited `token_revoked` under `actor`. Whether there was one.
pub(super) fn revoke_token_in(
    sp: &rusqlite::Savepoint<'_>,
    name: &str,
    actor: &str,
) -> Result<bool, StoreError> {
    let scope: Option<String> = sp
        .prepare_cached("DELETE FROM tokens WHERE name = ?1 RETURNING scope")?
        .query_row(params![name], |r| r.get(0))
        .optional()?;
    let Some(scope) = scope else {
        return Ok(false);
    };
    let credential = crate::protocol::Actor::Token(name).to_string();
    sp.prepare_cached("DELETE FROM push_subscriptions WHERE credential = ?1")?
        .execute(params![credential])?;
    end_what_its_names_were_given(sp, &credential, actor)?;
    sp.prepare_cached("DELETE FROM source_claims WHERE actor = ?1")?
        .execute(params![credential])?;
    super::write::chain_audit(
        sp,
        vec![token_audit_draft(actor, "token_revoked", name, &scope)],
    )?;
    Ok(true)
}

/// Revokes every token the person `owner` made, inside the caller's transaction (their
/// removal), each as [`revoke_token_in`] does.
pub(super) fn revoke_tokens_of_in(
    sp: &rusqlite::Savepoint<'_>,
    owner: &str,
    actor: &str,
) -> Result<(), StoreError> {
    let names: Vec<String> = sp
        .prepare_cached("SELECT name FROM tokens WHERE owner = ?1 ORDER BY name")?
        .query_map(params![owner], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for name in names {
        revoke_token_in(sp, &name, actor)?;
    }
    Ok(())
}

impl SqliteStore {
    pub(super) async fn insert_token(&self, row: &TokenRow, actor: &str) -> Result<(), StoreError> {
        let row = row.clone();
        let actor = actor.to_owned();
        self.writer
            .exec(move |sp| {
                let taken: Option<String> = sp
                    .prepare_cached("SELECT name FROM tokens WHERE name = ?1")?
                    .query_row(params![row.name], |r| r.get(0))
                    .optional()?;
                if taken.is_some() {
                    return Err(StoreError::Taken(row.name.clone()));
                }
                // Its maker still here, on the writer: a removal that went first left no token.
                if let Some(owner) = &row.owner {
                    let present = sp
                        .prepare_cached("SELECT 1 FROM people WHERE id = ?1")?
                        .query_row(params![owner], |_| Ok(()))
                        .optional()?;
                    if present.is_none() {
                        return Err(StoreError::Gone(super::super::MAKER_GONE.into()));
                    }
                }
                sp.prepare_cached(&format!(
                    "INSERT INTO tokens ({TOKEN_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
                ))?
                .execute(params![
                    row.name,
                    row.scope,
                    row.secret_hash,
                    row.created_at,
                    row.last_used_at,
                    row.owner
                ])?;
                super::write::chain_audit(
                    sp,
                    vec![token_audit_draft(
                        &actor,
                        "token_created",
                        &row.name,
                        row.scope.as_str(),
                    )],
                )?;
                Ok(Done::Unit)
            })
            .await
            .map(|_| ())
    }

    pub(super) async fn read_tokens(&self) -> Result<Vec<TokenRow>, StoreError> {
        self.read(|c| {
            let mut stmt =
                c.prepare_cached(&format!("SELECT {TOKEN_COLUMNS} FROM tokens ORDER BY name"))?;
            let rows = stmt.query_map([], token)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    pub(super) async fn read_token_by_hash(
        &self,
        secret_hash: &str,
    ) -> Result<Option<TokenRow>, StoreError> {
        let secret_hash = secret_hash.to_owned();
        self.lookup(move |c| {
            Ok(c.prepare_cached(&format!(
                "SELECT {TOKEN_COLUMNS} FROM tokens WHERE secret_hash = ?1"
            ))?
            .query_row(params![secret_hash], token)
            .optional()?)
        })
        .await
    }

    pub(super) async fn remove_token(&self, name: &str, actor: &str) -> Result<bool, StoreError> {
        let name = name.to_owned();
        let actor = actor.to_owned();
        let done = self
            .writer
            .exec(move |sp| Ok(Done::Flag(revoke_token_in(sp, &name, &actor)?)))
            .await?;
        Ok(matches!(done, Done::Flag(true)))
    }

    pub(super) async fn mark_token_used(
        &self,
        name: &str,
        at: &Timestamp,
    ) -> Result<(), StoreError> {
        let name = name.to_owned();
        let at = at.clone();
        self.writer
            .exec(move |sp| {
                sp.prepare_cached("UPDATE tokens SET last_used_at = ?1 WHERE name = ?2")?
                    .execute(params![at, name])?;
                Ok(Done::Unit)
            })
            .await
            .map(|_| ())
    }

    /// Who `source` belongs to, claiming it for `actor` when nobody has (read first on the
    /// reader pool: a name is claimed once and read at every gate).
    pub(super) async fn claim_source_for(
        &self,
        source: &str,
        actor: &str,
    ) -> Result<String, StoreError> {
        let owner_of = "SELECT actor FROM source_claims WHERE source = ?1";
        let wanted = source.to_owned();
        let owner: Option<String> = self
            .lookup(move |c| {
                Ok(c.prepare_cached(owner_of)?
                    .query_row(params![wanted], |r| r.get(0))
                    .optional()?)
            })
            .await?;
        if let Some(owner) = owner {
            return Ok(owner);
        }
        let (source, actor) = (source.to_owned(), actor.to_owned());
        let done = self
            .writer
            .exec(move |sp| {
                // Read again on the writer: whoever got here first claimed it.
                let owner: Option<String> = sp
                    .prepare_cached(owner_of)?
                    .query_row(params![source], |r| r.get(0))
                    .optional()?;
                if let Some(owner) = owner {
                    return Ok(Done::Text(owner));
                }
                if !claimant_present(sp, &actor)? {
                    return Err(StoreError::Gone(super::super::CLAIMANT_GONE.into()));
                }
                sp.prepare_cached(
                    "INSERT INTO source_claims (source, actor, claimed_at) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![source, actor, Timestamp::now()])?;
                super::write::chain_audit(sp, vec![source_claim_draft(&source, &actor)])?;
                end_what_a_name_was_given(sp, &source, &actor, NAME_CLAIMED)?;
                Ok(Done::Text(actor.clone()))
            })
            .await?;
        match done {
            Done::Text(owner) => Ok(owner),
            _ => Err(StoreError::Database("no claim from the writer".into())),
        }
    }

    /// The session of `(source, external_session)`, if one was made.
    pub(super) async fn external_session_lookup(
        &self,
        source: &str,
        external_session: &str,
    ) -> Result<Option<SessionId>, StoreError> {
        let (source, external_session) = (source.to_owned(), external_session.to_owned());
        self.lookup(move |c| {
            Ok(c.prepare_cached(
                "SELECT session_id FROM external_sessions WHERE source = ?1 AND external_session = ?2",
            )?
            .query_row(params![source, external_session], |r| r.get(0))
            .optional()?)
        })
        .await
    }

    pub(super) async fn external_session_for(
        &self,
        source: &str,
        external_session: &str,
        row: &SessionRow,
    ) -> Result<SessionId, StoreError> {
        if let Some(existing) = self
            .external_session_lookup(source, external_session)
            .await?
        {
            return Ok(existing);
        }
        let (source, external_session, row) =
            (source.to_owned(), external_session.to_owned(), row.clone());
        let done = self
            .writer
            .exec(move |sp| {
                // Read again on the writer: whoever got here first created it.
                let existing: Option<String> = sp
                    .prepare_cached(
                        "SELECT session_id FROM external_sessions WHERE source = ?1 AND external_session = ?2",
                    )?
                    .query_row(params![source, external_session], |r| r.get(0))
                    .optional()?;
                if let Some(existing) = existing {
                    return Ok(Done::Text(existing));
                }
                insert_session(sp, &row)?;
                sp.prepare_cached(
                    "INSERT INTO external_sessions (source, external_session, session_id) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![source, external_session, row.id])?;
                Ok(Done::Text(row.id.to_string()))
            })
            .await?;
        match done {
            Done::Text(id) => Ok(id.into()),
            _ => Err(StoreError::Database("no session id from the writer".into())),
        }
    }

    pub(super) async fn read_external_gate(
        &self,
        approval_id: &str,
    ) -> Result<Option<ExternalGate>, StoreError> {
        let approval_id = approval_id.to_owned();
        self.lookup(move |c| {
            Ok(c.prepare_cached(
                "SELECT g.approval_id, a.session_id, g.opened_by, g.idempotency_key, g.created_at
                 FROM external_gates g JOIN approvals a ON a.approval_id = g.approval_id
                 WHERE g.approval_id = ?1",
            )?
            .query_row(params![approval_id], |r| {
                Ok(ExternalGate {
                    approval_id: r.get(0)?,
                    session_id: r.get(1)?,
                    opened_by: r.get(2)?,
                    idempotency_key: r.get(3)?,
                    created_at: r.get(4)?,
                })
            })
            .optional()?)
        })
        .await
    }

    pub(super) async fn read_gate_by_key(
        &self,
        opened_by: &str,
        key: &str,
        since: &Timestamp,
    ) -> Result<Option<(ApprovalId, SessionId)>, StoreError> {
        let (opened_by, key, since) = (opened_by.to_owned(), key.to_owned(), since.clone());
        self.lookup(move |c| {
            Ok(c.prepare_cached(
                "SELECT g.approval_id, a.session_id FROM external_gates g
                 JOIN approvals a ON a.approval_id = g.approval_id
                 WHERE g.opened_by = ?1 AND g.idempotency_key = ?2 AND g.created_at >= ?3",
            )?
            .query_row(params![opened_by, key, since], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?)
        })
        .await
    }
}

/// Whether the credential claiming a name still exists: a named token must still be in the
/// table (a revocation that went first also freed its names); other credentials hold no row.
fn claimant_present(sp: &rusqlite::Connection, actor: &str) -> Result<bool, StoreError> {
    let crate::protocol::Actor::Token(name) = crate::protocol::Actor::parse(actor) else {
        return Ok(true);
    };
    Ok(sp
        .prepare_cached("SELECT 1 FROM tokens WHERE name = ?1")?
        .query_row(params![name], |_| Ok(()))
        .optional()?
        .is_some())
}
