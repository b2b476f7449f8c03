//! The schema, from `migrations/postgres/` (compiled in), applied in order once each. Several
//! instances may start at once: a transaction-scoped advisory lock lets one migrate while the
//! others wait, then find nothing left to do.

use sqlx::PgPool;

use crate::server::store::StoreError;

/// The migrations, in order: (version, SQL).
const MIGRATIONS: [(i64, &str); 14] = [
    (
        1,
        include_str!("../../../../migrations/postgres/0001_schema.sql"),
    ),
    (
        2,
        include_str!("../../../../migrations/postgres/0002_turn_leases.sql"),
    ),
    (
        3,
        include_str!("../../../../migrations/postgres/0003_push_subscriptions.sql"),
    ),
    (
        4,
        include_str!("../../../../migrations/postgres/0004_passkeys.sql"),
    ),
    (
        5,
        include_str!("../../../../migrations/postgres/0005_append_in_one_round_trip.sql"),
    ),
    (
        6,
        include_str!("../../../../migrations/postgres/0006_answer_by_key.sql"),
    ),
    (
        7,
        include_str!("../../../../migrations/postgres/0007_hashed_secrets.sql"),
    ),
    (
        8,
        include_str!("../../../../migrations/postgres/0008_resolved_gates_by_time.sql"),
    ),
    (
        9,
        include_str!("../../../../migrations/postgres/0009_rule_max_uses.sql"),
    ),
    (
        10,
        include_str!("../../../../migrations/postgres/0010_review.sql"),
    ),
    (
        11,
        include_str!("../../../../migrations/postgres/0011_source_claims.sql"),
    ),
    (
        12,
        include_str!("../../../../migrations/postgres/0012_people.sql"),
    ),
    (
        13,
        include_str!("../../../../migrations/postgres/0013_token_owners.sql"),
    ),
    (
        14,
        include_str!("../../../../migrations/postgres/0014_routes.sql"),
    ),
];

/// The advisory lock key migrations take (any constant of our own).
const MIGRATION_LOCK: i64 = 0x436f_756e_7465_7201;

pub async fn run(pool: &PgPool) -> Result<(), StoreError> {
    let failed = |e: sqlx::Error| StoreError::Migration(e.to_string());
    let mut tx = pool.begin().await.map_err(failed)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
    sqlx::query("CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, applied_at TEXT NOT NULL)")
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
    let applied: Vec<(i64,)> = sqlx::query_as("SELECT version FROM schema_migrations")
        .fetch_all(&mut *tx)
        .await
        .map_err(failed)?;
    for (version, sql) in MIGRATIONS {
        if applied.iter().any(|(v,)| *v == version) {
            continue;
        }
        sqlx::raw_sql(sql)
            .execute(&mut *tx)
            .await
            .map_err(|e| StoreError::Migration(format!("migration {version}: {e}")))?;
        sqlx::query("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)")
            .bind(version)
            .bind(crate::protocol::Timestamp::now().as_str())
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
    }
    tx.commit().await.map_err(failed)
}
