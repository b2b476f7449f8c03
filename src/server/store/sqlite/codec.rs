//! Between SQLite rows and the store's types: JSON columns, integers, scopes. Anything stored
//! that cannot be read back is `Corrupt`, naming where it is.

use rusqlite::Row;
use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use crate::protocol::{
    ApprovalId, AuditEntry, Event, Rule, RuleId, RuleScope, SessionId, Spelling, Stored, Timestamp,
    TurnId,
};
use crate::server::store::{SessionRow, StoreError};

/// The session columns, in the order `session` reads them.
pub const SESSION_COLUMNS: &str = "id, title, created_at, approval_mode, last_seq, pre_plan_mode, plan_execution_mode, source, owner";

/// The rule columns, in the order `rule` reads them.
pub const RULE_COLUMNS: &str = "id, tool, pattern, scope, session_id, created_at, created_by_approval, uses, last_used_at, expires_at, max_uses, source";

/// The audit columns, in the order `audit_entry` reads them.
pub const AUDIT_COLUMNS: &str = "n, at, actor, action, subject, detail, prev_hash, hash";

/// A count or seq as SQLite stores it (it has no unsigned integers).
pub fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

pub fn session(row: &Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: row.get(0)?,
        title: row.get(1)?,
        created_at: row.get(2)?,
        approval_mode: row.get(3)?,
        last_seq: to_u64(row.get(4)?),
        pre_plan_mode: row.get(5)?,
        plan_execution_mode: row.get(6)?,
        source: row.get(7)?,
        owner: row.get(8)?,
    })
}

/// A closed-set column: read into [`Stored`] (an unknown spelling is kept, not refused, so one
/// odd row never hides the rest), written as its spelling.
impl<T: Spelling> FromSql for Stored<T> {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        value.as_str().map(Stored::read)
    }
}

impl<T: Spelling> ToSql for Stored<T> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(ValueRef::Text(
            self.as_str().as_bytes(),
        )))
    }
}

/// Ids are stored as their text.
macro_rules! id_column {
    ($($id:ty),*) => {$(
        impl FromSql for $id {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                String::column_result(value).map(<$id>::from)
            }
        }

        impl ToSql for $id {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::Borrowed(ValueRef::Text(self.as_str().as_bytes())))
            }
        }
    )*};
}
id_column!(SessionId, ApprovalId, TurnId, RuleId);

/// A rule's scope as stored; one this build cannot read is `session`, the narrower.
pub fn rule_scope(raw: &str) -> RuleScope {
    Stored::<RuleScope>::read(raw).or(RuleScope::Session)
}

pub fn rule(row: &Row<'_>) -> rusqlite::Result<Rule> {
    let scope: String = row.get(3)?;
    Ok(Rule {
        id: row.get(0)?,
        tool: row.get(1)?,
        pattern: row.get(2)?,
        scope: rule_scope(&scope),
        session_id: row.get(4)?,
        created_at: row.get(5)?,
        created_by_approval: row.get(6)?,
        uses: to_u64(row.get(7)?),
        last_used_at: row.get(8)?,
        expires_at: row.get(9)?,
        max_uses: row.get::<_, Option<i64>>(10)?.map(to_u64),
        lapsed: None,
        source: row.get(11)?,
    })
}

pub fn audit_entry(row: &Row<'_>) -> rusqlite::Result<AuditEntry> {
    let detail: String = row.get(5)?;
    Ok(AuditEntry {
        n: to_u64(row.get(0)?),
        at: row.get(1)?,
        actor: row.get(2)?,
        action: row.get(3)?,
        subject: row.get(4)?,
        // An unparseable detail is kept as text: verify must see it, not fail.
        detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::String(detail)),
        prev_hash: row.get(6)?,
        hash: row.get(7)?,
    })
}

/// A stored event's JSON, read back.
pub fn event(session_id: &str, seq: u64, body: &str) -> Result<Event, StoreError> {
    serde_json::from_str(body).map_err(|e| StoreError::Corrupt {
        session_id: session_id.to_owned(),
        seq,
        reason: e.to_string(),
    })
}

/// A JSON column (a gate's request or resolution), read back.
pub fn from_json<T: serde::de::DeserializeOwned>(
    session_id: &str,
    text: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
        session_id: session_id.to_owned(),
        seq: 0,
        reason: e.to_string(),
    })
}

/// A value as its JSON column.
pub fn to_json<T: serde::Serialize>(session_id: &str, value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt {
        session_id: session_id.to_owned(),
        seq: 0,
        reason: e.to_string(),
    })
}

/// Times are stored as their RFC 3339 text (it sorts as time does, in its canonical form).
impl ToSql for Timestamp {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for Timestamp {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        String::column_result(value).map(Timestamp::from)
    }
}
