//! The schema's migrations (`migrations/sqlite/`, compiled in), applied in order and recorded
//! in `PRAGMA user_version`, each in its own transaction.
//!
//! Databases created before this migrator recorded their migrations in sqlx's
//! `_sqlx_migrations` table; their version is taken from there once.

use rusqlite::{Connection, OptionalExtension};

/// Every migration, in order; the version of the n-th is n.
const MIGRATIONS: [&str; 18] = [
    include_str!("../../../../migrations/sqlite/0001_sessions_and_events.sql"),
    include_str!("../../../../migrations/sqlite/0002_approvals_and_rules.sql"),
    include_str!("../../../../migrations/sqlite/0003_plan_mode_record.sql"),
    include_str!("../../../../migrations/sqlite/0004_audit.sql"),
    include_str!("../../../../migrations/sqlite/0005_rule_expiry.sql"),
    include_str!("../../../../migrations/sqlite/0006_turn_starts.sql"),
    include_str!("../../../../migrations/sqlite/0007_tokens_and_external_gates.sql"),
    include_str!("../../../../migrations/sqlite/0008_push_subscriptions.sql"),
    include_str!("../../../../migrations/sqlite/0009_passkeys.sql"),
    include_str!("../../../../migrations/sqlite/0010_waiting_gates_by_session.sql"),
    include_str!("../../../../migrations/sqlite/0011_hashed_secrets.sql"),
    include_str!("../../../../migrations/sqlite/0012_resolved_gates_by_time.sql"),
    include_str!("../../../../migrations/sqlite/0013_rule_max_uses.sql"),
    include_str!("../../../../migrations/sqlite/0014_review.sql"),
    include_str!("../../../../migrations/sqlite/0015_source_claims.sql"),
    include_str!("../../../../migrations/sqlite/0016_people.sql"),
    include_str!("../../../../migrations/sqlite/0017_token_owners.sql"),
    include_str!("../../../../migrations/sqlite/0018_routes.sql"),
];

fn user_version(conn: &Connection) -> rusqlite::Result<usize> {
    conn.query_row("PRAGMA user_version", [], |row| row.get::<_, i64>(0))
        .map(|v| usize::try_from(v).unwrap_or(0))
}

/// The version an older, sqlx-migrated database had reached (0 when there is none).
fn sqlx_version(conn: &Connection) -> rusqlite::Result<usize> {
    let has_table: Option<String> = conn
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
            [],
            |row| row.get(0),
        )
        .optional()?;
    if has_table.is_none() {
        return Ok(0);
    }
    conn.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success",
        [],
        |row| row.get::<_, i64>(0),
    )
    .map(|v| usize::try_from(v).unwrap_or(0))
}

/// Brings the schema up to date. `Err` names the migration that failed.
pub fn run(conn: &mut Connection) -> Result<(), String> {
    let fail = |what: &str, e: rusqlite::Error| format!("{what}: {e}");
    let mut version = user_version(conn).map_err(|e| fail("reading the schema version", e))?;
    if version == 0 {
        version = sqlx_version(conn).map_err(|e| fail("reading the old migrations table", e))?;
    }
    if version > MIGRATIONS.len() {
        return Err(format!(
            "the database has schema version {version}, newer than this build knows ({}); use a newer countersign",
            MIGRATIONS.len()
        ));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(version) {
        let number = index + 1;
        let tx = conn
            .transaction()
            .map_err(|e| fail(&format!("migration {number}"), e))?;
        tx.execute_batch(sql)
            .and_then(|()| tx.pragma_update(None, "user_version", number as i64))
            .and_then(|()| tx.commit())
            .map_err(|e| fail(&format!("migration {number}"), e))?;
    }
    if version == MIGRATIONS.len() {
        // Already current (an old database: record its version here from now on).
        conn.pragma_update(None, "user_version", version as i64)
            .map_err(|e| fail("recording the schema version", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_database_gets_every_migration_once() {
        let mut conn = Connection::open_in_memory().unwrap();
        run(&mut conn).unwrap();
        assert_eq!(user_version(&conn).unwrap(), MIGRATIONS.len());
        run(&mut conn).unwrap();
        let tables: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('sessions','events','approvals','rules','audit')",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(tables, 5);
    }

    #[test]
    fn a_database_migrated_by_sqlx_continues_where_it_was() {
        let mut conn = Connection::open_in_memory().unwrap();
        for sql in &MIGRATIONS[..4] {
            conn.execute_batch(sql).unwrap();
        }
        conn.execute_batch(
            "CREATE TABLE _sqlx_migrations (version BIGINT PRIMARY KEY, success BOOLEAN NOT NULL);
             INSERT INTO _sqlx_migrations VALUES (1, 1), (2, 1), (3, 1), (4, 1);",
        )
        .unwrap();
        run(&mut conn).unwrap();
        assert_eq!(user_version(&conn).unwrap(), MIGRATIONS.len());
        conn.execute_batch("SELECT expires_at FROM rules").unwrap();
    }

    #[test]
    fn a_newer_database_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        assert!(run(&mut conn).unwrap_err().contains("newer"));
    }
}
