//! The PostgreSQL store: the same trait, tables and meanings as SQLite's, for several
//! instances on one database (`storage.database_url = "postgres://…"`).
//!
//! What stays true across instances, and how:
//! - **seq without gaps**: an append takes the session row with `UPDATE … RETURNING last_seq`
//!   inside its transaction, which locks that row until the commit, so two instances append
//!   to one session one after the other;
//! - **a gate resolves once**: the compare-and-set in the transaction that appends
//!   `approval_resolved` reads the gate's row by its key, checks its session, locks it by the
//!   key (`SELECT … FOR NO KEY UPDATE`), refuses an answered one and only then sets the answer; a loser rolls back and reads the winner. A gate
//!   is read by its key alone (never with its session or status in the `WHERE` clause, which
//!   let the planner read it through an index of all waiting gates or all a session's gates);
//! - **one audit chain**: a commit queues its audit entries (`audit_pending`) and the sealer
//!   numbers and hashes them under an advisory lock after the commit (`seal.rs`), so entries
//!   are chained in one line whichever instance writes them, without any commit waiting for
//!   that lock; every audit read seals what is pending first;
//! - **one round trip per append**: `countersign_append`, a server-side function (migrations
//!   0005 and 0006), does the compare-and-set, the seqs, the lease step, the events and the audit
//!   queue in one call;
//! - **one gate per idempotency key**: a unique index, and a conflict is read back as
//!   `KeyUsed`.
//!
//! - **one driver per turn**: turn leases (`lease.rs`), renewed by their owner and taken over
//!   when they lapse; a turn's writes are fenced by its lease;
//! - **live everywhere**: every append notifies the other instances (`signals.rs`).
//!
//! Files by job: `migrate.rs` the schema (`migrations/postgres/`), `read.rs` the reads,
//! `write.rs` the transactions, `seal.rs` the audit chain, `lease.rs` turn ownership, `signals.rs` LISTEN/NOTIFY.

mod lease;
mod migrate;
mod passkeys;
mod people;
mod push;
mod quorum;
mod read;
mod review;
mod seal;
mod secrets;
mod signals;
mod write;

use std::time::Duration;

use async_trait::async_trait;
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

use super::{
    AuditOrder, AuditRepo, Commit, Coordination, EventLog, ExternalGate, GateRepo, GateRow,
    LeasedTurn, NewEvent, OutsideRepo, ResolvedCard, RuleRepo, SessionRow, Signal, StoreError,
    TokenRepo, TokenRow, WaitingCounts,
};
use crate::protocol::{
    ApprovalId, ApprovalRequest, AuditEntry, Event, Rule, RuleId, SessionId, Timestamp, TurnId,
};
use crate::server::audit;

/// Connections per instance: a few more than the runtime's workers.
const POOL: u32 = 8;
/// How long a request waits for a connection before it is a storage failure (503).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// PostgreSQL's code for a character its text cannot hold (a NUL).
const UNTRANSLATABLE: &str = "22021";

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        match err.as_database_error().and_then(|e| e.code()) {
            Some(code) if code == UNTRANSLATABLE => {
                StoreError::Unstorable(super::NUL_REFUSED.to_owned())
            }
            _ => StoreError::Postgres(err),
        }
    }
}

pub struct PgStore {
    pool: PgPool,
    /// This instance's name: it owns its turns' leases under it, and skips its own
    /// notifications.
    instance: String,
    announcer: signals::Announcer,
    sealer: seal::Sealer,
}

/// Whether `url` names a PostgreSQL database.
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

impl PgStore {
    /// Connects and brings the schema up to date. A database that cannot be reached is an
    /// error here, so the server refuses to start rather than serve without storage.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_as(url, &uuid::Uuid::new_v4().to_string()).await
    }

    /// As `open`, for the instance named `instance` (stable across its restarts, so a
    /// restarted instance takes its own turns back at once instead of waiting for the lapse).
    pub async fn open_as(url: &str, instance: &str) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(POOL)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect(url)
            .await
            .map_err(|e| StoreError::Database(format!("cannot connect to PostgreSQL: {e}")))?;
        migrate::run(&pool).await?;
        Ok(PgStore {
            announcer: signals::Announcer::start(pool.clone()),
            sealer: seal::Sealer::start(pool.clone()),
            pool,
            instance: instance.to_owned(),
        })
    }
}

#[async_trait]
impl EventLog for PgStore {
    async fn health(&self) -> Result<(), String> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(|e| format!("the database does not answer: {e}"))
    }

    async fn create_session(&self, row: &SessionRow) -> Result<(), StoreError> {
        super::check_storable_row(row)?;
        write::create_session(&self.pool, row).await
    }

    async fn list_sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        read::list_sessions(&self.pool).await
    }

    async fn get_session(&self, id: &SessionId) -> Result<Option<SessionRow>, StoreError> {
        read::get_session(&self.pool, id.as_str()).await
    }

    async fn delete_session(&self, id: &SessionId) -> Result<bool, StoreError> {
        write::delete_session(&self.pool, id.as_str()).await
    }

    async fn set_session_title(
        &self,
        id: &SessionId,
        title: &str,
        only_if: Option<&str>,
    ) -> Result<bool, StoreError> {
        super::storable(title)?;
        let done = sqlx::query(
            "UPDATE sessions SET title = $1 WHERE id = $2 AND ($3::TEXT IS NULL OR title = $3::TEXT)",
        )
        .bind(title)
        .bind(id.as_str())
        .bind(only_if)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn append(
        &self,
        session_id: &SessionId,
        events: Vec<NewEvent>,
        commit: Commit,
    ) -> Result<Vec<Event>, StoreError> {
        super::check_storable_commit(&commit)?;
        write::append(
            &self.pool,
            &self.announcer,
            &self.sealer,
            &self.instance,
            session_id.as_str(),
            &events,
            &commit,
        )
        .await
    }

    async fn events_after(
        &self,
        session_id: &SessionId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Event>, StoreError> {
        read::events_after(&self.pool, session_id.as_str(), after, limit).await
    }

    async fn turn_start_at_or_before(
        &self,
        session_id: &SessionId,
        seq: u64,
    ) -> Result<Option<u64>, StoreError> {
        read::turn_start_at_or_before(&self.pool, session_id.as_str(), seq).await
    }

    async fn sessions_with_unfinished_turns(&self) -> Result<Vec<SessionId>, StoreError> {
        read::sessions_with_unfinished_turns(&self.pool).await
    }
}

#[async_trait]
impl GateRepo for PgStore {
    async fn get_gate(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
    ) -> Result<Option<GateRow>, StoreError> {
        read::get_gate(&self.pool, session_id.as_str(), approval_id.as_str()).await
    }

    async fn pending_gates(
        &self,
        session_id: Option<&str>,
    ) -> Result<Vec<ApprovalRequest>, StoreError> {
        read::pending_gates(&self.pool, session_id).await
    }

    async fn waiting_counts(&self, session_id: &SessionId) -> Result<WaitingCounts, StoreError> {
        read::waiting_counts(&self.pool, session_id.as_str()).await
    }

    async fn resolved_cards(
        &self,
        since: &Timestamp,
        until: &Timestamp,
        limit: u32,
    ) -> Result<Vec<ResolvedCard>, StoreError> {
        read::resolved_cards(&self.pool, since, until, limit).await
    }
}

#[async_trait]
impl RuleRepo for PgStore {
    async fn list_rules(&self) -> Result<Vec<Rule>, StoreError> {
        read::list_rules(&self.pool, &Timestamp::now()).await
    }

    async fn revoke_rule(&self, rule_id: &RuleId, actor: &str) -> Result<bool, StoreError> {
        let done = write::revoke_rule(&self.pool, rule_id.as_str(), actor).await;
        self.sealer.kick();
        done
    }

    async fn rule_in_force(&self, rule_id: &RuleId, now: &Timestamp) -> Result<bool, StoreError> {
        read::rule_in_force(&self.pool, rule_id.as_str(), now).await
    }

    async fn claim_rule_use(&self, rule_id: &RuleId, now: &Timestamp) -> Result<bool, StoreError> {
        write::claim_rule_use(&self.pool, rule_id.as_str(), now).await
    }
}

#[async_trait]
impl TokenRepo for PgStore {
    async fn create_token(&self, row: &TokenRow, actor: &str) -> Result<(), StoreError> {
        super::storable(&row.name)?;
        let done = write::create_token(&self.pool, row, actor).await;
        self.sealer.kick();
        done
    }

    async fn list_tokens(&self) -> Result<Vec<TokenRow>, StoreError> {
        read::list_tokens(&self.pool).await
    }

    async fn token_by_hash(&self, secret_hash: &str) -> Result<Option<TokenRow>, StoreError> {
        read::token_by_hash(&self.pool, secret_hash).await
    }

    async fn delete_token(&self, name: &str, actor: &str) -> Result<bool, StoreError> {
        let done = write::delete_token(&self.pool, name, actor).await;
        self.sealer.kick();
        done
    }

    async fn touch_token(&self, name: &str, at: &Timestamp) -> Result<(), StoreError> {
        sqlx::query("UPDATE tokens SET last_used_at = $1 WHERE name = $2")
            .bind(at.as_str())
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

#[async_trait]
impl AuditRepo for PgStore {
    async fn append_audit(&self, drafts: Vec<audit::AuditDraft>) -> Result<(), StoreError> {
        let done = write::append_audit(&self.pool, drafts).await;
        self.sealer.kick();
        done
    }

    async fn audit_after(
        &self,
        after: u64,
        limit: u32,
        action: Option<&str>,
        subject: Option<&str>,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        seal::seal_pending(&self.pool).await?;
        read::audit_page(
            &self.pool,
            AuditOrder::OldestAfter(after),
            limit,
            action,
            subject,
        )
        .await
    }

    async fn audit_before(
        &self,
        before: Option<u64>,
        limit: u32,
        action: Option<&str>,
        subject: Option<&str>,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        seal::seal_pending(&self.pool).await?;
        read::audit_page(
            &self.pool,
            AuditOrder::NewestBefore(before),
            limit,
            action,
            subject,
        )
        .await
    }
}

#[async_trait]
impl OutsideRepo for PgStore {
    async fn external_session_id(
        &self,
        source: &str,
        external_session: &str,
    ) -> Result<Option<SessionId>, StoreError> {
        let found: Option<(String,)> = sqlx::query_as(
            "SELECT session_id FROM external_sessions WHERE source = $1 AND external_session = $2",
        )
        .bind(source)
        .bind(external_session)
        .fetch_optional(&self.pool)
        .await?;
        Ok(found.map(|(id,)| id.into()))
    }

    async fn external_session(
        &self,
        source: &str,
        external_session: &str,
        row: &SessionRow,
    ) -> Result<SessionId, StoreError> {
        super::storable(source)?;
        super::storable(external_session)?;
        super::check_storable_row(row)?;
        write::external_session(&self.pool, source, external_session, row).await
    }

    async fn claim_source(&self, source: &str, actor: &str) -> Result<String, StoreError> {
        super::storable(source)?;
        super::storable(actor)?;
        let claimed = write::claim_source(&self.pool, source, actor).await;
        self.sealer.kick();
        claimed
    }

    async fn claimed_sources(&self) -> Result<Vec<(String, String)>, StoreError> {
        Ok(
            sqlx::query_as("SELECT source, actor FROM source_claims ORDER BY source")
                .fetch_all(&self.pool)
                .await?,
        )
    }

    async fn external_gate(&self, approval_id: &str) -> Result<Option<ExternalGate>, StoreError> {
        read::external_gate(&self.pool, approval_id).await
    }

    async fn gate_by_idempotency_key(
        &self,
        opened_by: &str,
        key: &str,
        since: &Timestamp,
    ) -> Result<Option<(ApprovalId, SessionId)>, StoreError> {
        read::gate_by_idempotency_key(&self.pool, opened_by, key, since).await
    }
}

#[async_trait]
impl Coordination for PgStore {
    async fn listen(&self) -> Result<tokio::sync::mpsc::UnboundedReceiver<Signal>, StoreError> {
        signals::listen(&self.pool, self.instance.clone()).await
    }

    async fn last_seqs(
        &self,
        session_ids: &[SessionId],
    ) -> Result<Vec<(SessionId, u64)>, StoreError> {
        read::last_seqs(&self.pool, session_ids).await
    }

    async fn renew_leases(&self, session_ids: &[SessionId]) -> Result<Vec<LeasedTurn>, StoreError> {
        lease::renew(&self.pool, &self.instance, session_ids).await
    }

    async fn claim_lapsed_turns(
        &self,
        running: &[SessionId],
    ) -> Result<Vec<LeasedTurn>, StoreError> {
        lease::claim_lapsed(&self.pool, &self.instance, running).await
    }

    async fn request_cancel(&self, session_id: &SessionId) -> Result<Option<TurnId>, StoreError> {
        lease::request_cancel(&self.pool, signals::CHANNEL, session_id.as_str()).await
    }

    async fn seal_turn(
        &self,
        session_id: &SessionId,
        turn_id: &TurnId,
    ) -> Result<bool, StoreError> {
        lease::seal(&self.pool, &self.instance, session_id, turn_id).await
    }

    async fn leased_turns(&self) -> Result<Vec<(SessionId, TurnId)>, StoreError> {
        lease::all(&self.pool).await
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::server::store::{LEASE_TTL, LeaseStep};

    /// The cluster the tests may create databases in (`scripts/test` starts one); CI must
    /// have it, a developer's `cargo test` may not.
    pub(crate) fn test_cluster() -> Option<String> {
        match std::env::var("COUNTERSIGN_TEST_POSTGRES_URL") {
            Ok(url) if !url.is_empty() => Some(url),
            _ => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "CI runs the store suite on PostgreSQL: set COUNTERSIGN_TEST_POSTGRES_URL (scripts/test does)"
                );
                eprintln!("skipped: COUNTERSIGN_TEST_POSTGRES_URL is not set");
                None
            }
        }
    }

    /// A fresh database on the test cluster, and its URL.
    pub(crate) async fn fresh_database(cluster: &str) -> String {
        let admin = PgPoolOptions::new()
            .max_connections(1)
            .connect(cluster)
            .await
            .unwrap();
        let name = format!("cs_test_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&admin)
            .await
            .unwrap();
        let (base, _) = cluster.rsplit_once('/').unwrap();
        format!("{base}/{name}")
    }

    #[tokio::test]
    async fn the_store_suite_passes_on_postgres() {
        let Some(cluster) = test_cluster() else {
            return;
        };
        let url = fresh_database(&cluster).await;
        let store = PgStore::open(&url).await.unwrap();
        // A second instance starting on the same database finds the schema in place.
        let second = PgStore::open(&url).await.unwrap();
        assert_eq!(second.health().await, Ok(()));
        crate::server::store::conformance::run_all(Arc::new(store)).await;
    }

    fn message(turn: &str) -> NewEvent {
        NewEvent::new(
            Some(&turn.into()),
            crate::protocol::EventBody::UserMessage {
                text: "go".into(),
                approval_mode: crate::protocol::Mode::Ask,
            },
        )
    }

    /// Two stores on one fresh database: two instances. `None` without a test cluster.
    async fn two_instances() -> Option<(PgStore, PgStore)> {
        let url = fresh_database(&test_cluster()?).await;
        Some((
            PgStore::open(&url).await.unwrap(),
            PgStore::open(&url).await.unwrap(),
        ))
    }

    fn step(step: LeaseStep) -> Commit {
        Commit {
            lease: Some(step),
            ..Commit::default()
        }
    }

    /// Two stores on one database are two instances: a turn's lease admits one writer, a
    /// lapsed lease passes to the other, and the old owner is fenced out from then on.
    #[tokio::test]
    async fn a_lease_fences_a_turn_to_one_instance_and_lapses_to_another() {
        let Some((a, b)) = two_instances().await else {
            return;
        };
        a.create_session(&crate::server::store::conformance::session("L"))
            .await
            .unwrap();
        let claim = |turn: &str| step(LeaseStep::Claim(turn.into()));
        let hold = |turn: &str| step(LeaseStep::Hold(turn.into()));
        a.append(&"L".into(), vec![message("t1")], claim("t1"))
            .await
            .unwrap();
        // Another turn cannot start, and the other instance cannot write for this one.
        let err = b
            .append(&"L".into(), vec![message("t2")], claim("t2"))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::TurnHeld(_)), "{err:?}");
        let err = b
            .append(&"L".into(), vec![message("t1")], hold("t1"))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::LeaseLost(_)), "{err:?}");
        assert_eq!(
            a.events_after(&"L".into(), 0, 10).await.unwrap().len(),
            1,
            "refused writes wrote nothing"
        );
        a.append(&"L".into(), vec![message("t1")], hold("t1"))
            .await
            .unwrap();
        // Renewing: the owner keeps it, the other has nothing to renew or take yet.
        let ids = [SessionId::from("L")];
        let mine = |leases: Vec<LeasedTurn>| leases.iter().filter(|l| l.mine).count();
        assert_eq!(mine(a.renew_leases(&ids).await.unwrap()), 1);
        assert_eq!(
            mine(b.renew_leases(&ids).await.unwrap()),
            0,
            "b sees a's lease, not its own"
        );
        assert!(b.claim_lapsed_turns(&[]).await.unwrap().is_empty());
        // The owner stops renewing: after the lease's time, the other takes the turn.
        tokio::time::sleep(LEASE_TTL + Duration::from_millis(500)).await;
        let taken = b.claim_lapsed_turns(&[]).await.unwrap();
        assert_eq!(taken.len(), 1);
        assert_eq!(
            (taken[0].session_id.as_str(), taken[0].turn_id.as_str()),
            ("L", "t1")
        );
        let err = a
            .append(&"L".into(), vec![message("t1")], hold("t1"))
            .await
            .unwrap_err();
        assert!(
            matches!(err, StoreError::LeaseLost(_)),
            "the old owner is fenced out: {err:?}"
        );
        assert_eq!(
            mine(a.renew_leases(&ids).await.unwrap()),
            0,
            "a sees it lost the lease"
        );
        b.append(&"L".into(), vec![message("t1")], hold("t1"))
            .await
            .unwrap();
        // A cancel asked on any instance reaches the owner's renewal, until the turn seals.
        assert_eq!(
            a.request_cancel(&"L".into()).await.unwrap(),
            Some("t1".into())
        );
        assert!(b.renew_leases(&ids).await.unwrap()[0].cancel_requested);
        assert!(b.seal_turn(&"L".into(), &"t1".into()).await.unwrap());
        assert_eq!(
            a.request_cancel(&"L".into()).await.unwrap(),
            None,
            "sealed: too late"
        );
        // Released with the last write; then a new turn may start anywhere.
        let release = step(LeaseStep::Release("t1".into()));
        b.append(&"L".into(), vec![message("t1")], release)
            .await
            .unwrap();
        assert!(b.leased_turns().await.unwrap().is_empty());
        a.append(&"L".into(), vec![message("t3")], claim("t3"))
            .await
            .unwrap();
        assert_eq!(
            a.leased_turns().await.unwrap(),
            vec![("L".into(), "t3".into())]
        );
    }

    async fn next_signal(signals: &mut tokio::sync::mpsc::UnboundedReceiver<Signal>) -> Signal {
        tokio::time::timeout(Duration::from_secs(10), signals.recv())
            .await
            .expect("a notification")
            .expect("the channel is open")
    }

    /// Each append is announced to the other instances (not to its own), with its seqs, and a
    /// cancel request to all.
    #[tokio::test]
    async fn the_other_instances_hear_every_append() {
        let Some((a, b)) = two_instances().await else {
            return;
        };
        let mut heard_by_b = b.listen().await.unwrap();
        a.create_session(&crate::server::store::conformance::session("N"))
            .await
            .unwrap();
        b.append(&"N".into(), vec![message("t")], Commit::default())
            .await
            .unwrap();
        a.append(
            &"N".into(),
            vec![message("t"), message("t")],
            step(LeaseStep::Claim("t".into())),
        )
        .await
        .unwrap();
        let signal = next_signal(&mut heard_by_b).await;
        assert_eq!(
            signal,
            Signal::Appended {
                session_id: "N".into(),
                first: 2,
                last: 3
            },
            "b's own append is not announced back to b"
        );
        a.request_cancel(&"N".into()).await.unwrap();
        let signal = next_signal(&mut heard_by_b).await;
        assert_eq!(
            signal,
            Signal::CancelRequested {
                session_id: "N".into()
            }
        );
    }

    /// An answer finds its gate by the gate's key, however many gates wait and however old
    /// the planner's statistics: the compare-and-set once matched the predicate of the index of
    /// waiting gates, and with statistics taken while nothing waited, every answer scanned
    /// every waiting gate. The plans are `auto_explain`'s, of every statement inside the
    /// append, through `psql` (which the test cluster comes with), past the five calls after
    /// which PL/pgSQL may switch to a generic plan.
    #[tokio::test]
    async fn an_answer_reads_its_gate_by_key_however_many_wait() {
        use crate::server::store::GateChange;
        use crate::server::store::conformance::{gate, resolution, session};
        let Some(cluster) = test_cluster() else {
            return;
        };
        let url = fresh_database(&cluster).await;
        let store = PgStore::open(&url).await.unwrap();
        store.create_session(&session("many")).await.unwrap();
        let open = |id: String| Commit {
            gate: Some(GateChange::Open(Box::new(gate("many", &id)))),
            ..Commit::default()
        };
        // Statistics taken while nothing waits, then kept (as between two autovacuums).
        store
            .append(&"many".into(), vec![message("t")], open("first".into()))
            .await
            .unwrap();
        let answer = Commit {
            gate: Some(GateChange::Resolve {
                resolution: resolution("first", crate::protocol::Decision::Approve),
                new_rule: None,
            }),
            ..Commit::default()
        };
        store
            .append(&"many".into(), vec![message("t")], answer)
            .await
            .unwrap();
        let admin = PgPoolOptions::new()
            .max_connections(1)
            .connect(&url)
            .await
            .unwrap();
        for sql in [
            "ANALYZE approvals",
            "ALTER TABLE approvals SET (autovacuum_enabled = off)",
        ] {
            sqlx::query(sql).execute(&admin).await.unwrap();
        }
        for i in 0..400 {
            store
                .append(
                    &"many".into(),
                    vec![message("t")],
                    open(format!("wait-{i}")),
                )
                .await
                .unwrap();
        }
        let mut script = String::from(
            "LOAD 'auto_explain';
             SET auto_explain.log_min_duration = 0;
             SET auto_explain.log_nested_statements = on;
             SET auto_explain.log_level = notice;
             SET client_min_messages = notice;\n",
        );
        for i in 0..8 {
            script.push_str(&format!(
                "SELECT countersign_append('many', 'psql', 'at', '{{}}', '{{}}', '{{}}',
                   NULL, NULL, NULL, NULL, NULL, 'wait-{i}', '{{}}', 'at',
                   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                   NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'at', NULL, NULL, NULL, 30,
                   '{{}}', '{{}}', '{{}}', '{{}}');\n"
            ));
        }
        let out = tokio::process::Command::new("psql")
            .args([
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                &url,
                "-c",
                &script,
            ])
            .output()
            .await
            .expect("psql (the PostgreSQL client) runs");
        let plans = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "psql failed: {plans}");
        assert!(
            plans.contains("approvals_pkey"),
            "the answers' plans were logged: {plans}"
        );
        for other_way in [
            "approvals_pending",
            "approvals_by_session",
            "Seq Scan on approvals",
        ] {
            assert!(
                !plans.contains(other_way),
                "an answer read its gate other than by its key ({other_way}): {plans}"
            );
        }
        let waiting = store.pending_gates(Some("many")).await.unwrap().len();
        assert_eq!(waiting, 400 - 8, "the eight answers were recorded");
    }

    #[tokio::test]
    async fn an_unreachable_database_is_a_clear_error() {
        // Something that hangs up on every connection, on a port that stays ours.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                drop(conn);
            }
        });
        let err = PgStore::open(&format!("postgres://nobody@127.0.0.1:{port}/none"))
            .await
            .err()
            .expect("no database there");
        assert!(
            err.to_string().contains("cannot connect to PostgreSQL"),
            "{err}"
        );
    }

    fn mode_change(turn: &str, next: crate::protocol::Mode) -> NewEvent {
        NewEvent::new(
            Some(&turn.into()),
            crate::protocol::EventBody::ModeChanged {
                previous: crate::protocol::Mode::Ask,
                next,
                source: crate::protocol::ModeSource::User,
                actor: Some("browser".into()),
            },
        )
    }

    fn verdict(entries: &[AuditEntry]) -> crate::protocol::AuditVerdict {
        let mut verifier = audit::Verifier::new();
        for entry in entries {
            verifier.check(entry);
        }
        verifier.verdict()
    }

    /// Two instances committing audited changes at once, to several sessions and outside any
    /// session: every entry is in the one chain, numbered without a gap, and it verifies.
    #[tokio::test]
    async fn two_instances_committing_at_once_make_one_chain_that_verifies() {
        let Some((a, b)) = two_instances().await else {
            return;
        };
        let (a, b) = (Arc::new(a), Arc::new(b));
        for id in ["S1", "S2"] {
            a.create_session(&crate::server::store::conformance::session(id))
                .await
                .unwrap();
        }
        let mut writers = Vec::new();
        for (n, store) in [a.clone(), b.clone(), a.clone(), b.clone()]
            .into_iter()
            .enumerate()
        {
            writers.push(tokio::spawn(async move {
                let session = if n % 2 == 0 { "S1" } else { "S2" };
                for i in 0..40 {
                    let turn = format!("t{n}-{i}");
                    store
                        .append(
                            &session.into(),
                            vec![mode_change(&turn, crate::protocol::Mode::Plan)],
                            Commit::default(),
                        )
                        .await
                        .unwrap();
                    if i % 10 == 0 {
                        store
                            .append_audit(vec![audit::AuditDraft {
                                actor: format!("writer:{n}"),
                                action: "config_changed",
                                subject: format!("k{i}"),
                                detail: serde_json::json!({"i": i, "text": "\u{e9}\"quoted\""}),
                            }])
                            .await
                            .unwrap();
                    }
                }
            }));
        }
        for writer in writers {
            writer.await.unwrap();
        }
        let entries = b.audit_after(0, 10_000, None, None).await.unwrap();
        assert_eq!(
            entries.len(),
            4 * 40 + 4 * 4,
            "every commit's entries are in the chain"
        );
        let numbers: Vec<u64> = entries.iter().map(|e| e.n).collect();
        assert_eq!(numbers, (1..=176).collect::<Vec<u64>>());
        let verdict = verdict(&entries);
        assert!(verdict.ok, "the chain verifies: {verdict:?}");
        let (pending,): (i64,) = sqlx::query_as("SELECT count(*) FROM audit_pending")
            .fetch_one(&a.pool)
            .await
            .unwrap();
        assert_eq!(pending, 0, "a read seals everything committed before it");
    }

    /// A commit whose seal never ran (the instance died right after committing) leaves its
    /// entry pending; the next reader on any instance seals it onto the chain.
    #[tokio::test]
    async fn an_entry_a_crash_left_unsealed_is_sealed_by_the_next_reader() {
        let Some((a, b)) = two_instances().await else {
            return;
        };
        a.append_audit(vec![audit::AuditDraft {
            actor: "admin".into(),
            action: "config_changed",
            subject: "first".into(),
            detail: serde_json::json!({}),
        }])
        .await
        .unwrap();
        // What a commit leaves behind when its instance dies before the seal.
        sqlx::query(
            "INSERT INTO audit_pending (at, actor, action, subject, detail)
             VALUES ('2026-12-02T08:00:00.000Z', 'token:ci', 'gate_opened', 'g-crash', '{\"tool\":\"bash\"}')",
        )
        .execute(&a.pool)
        .await
        .unwrap();
        drop(a);
        let entries = b.audit_after(0, 100, None, None).await.unwrap();
        let subjects: Vec<&str> = entries.iter().map(|e| e.subject.as_str()).collect();
        assert_eq!(subjects, ["first", "g-crash"]);
        assert_eq!(entries[1].detail, serde_json::json!({"tool": "bash"}));
        assert_eq!(
            entries[1].at.as_str(),
            "2026-12-02T08:00:00.000Z",
            "the commit's time, not the seal's"
        );
        assert!(verdict(&entries).ok);
    }

    /// Entries too large to seal in one go (details of megabytes) are sealed over several
    /// transactions, all of them, in order.
    #[tokio::test]
    async fn large_pending_entries_are_sealed_over_several_seals() {
        let Some((a, _b)) = two_instances().await else {
            return;
        };
        for i in 0..5 {
            sqlx::query(
                "INSERT INTO audit_pending (at, actor, action, subject, detail)
                 VALUES ('2026-12-02T08:00:00.000Z', 'token:ci', 'config_changed', $1,
                         '\"' || repeat('x', 2 * 1024 * 1024) || '\"')",
            )
            .bind(format!("big{i}"))
            .execute(&a.pool)
            .await
            .unwrap();
        }
        let entries = a.audit_after(0, 100, None, None).await.unwrap();
        let subjects: Vec<&str> = entries.iter().map(|e| e.subject.as_str()).collect();
        assert_eq!(subjects, ["big0", "big1", "big2", "big3", "big4"]);
        assert!(verdict(&entries).ok);
    }

    /// The function writes each event's seq in front of its body: the stored text is exactly
    /// the JSON the wire has for the event the append returned.
    #[tokio::test]
    async fn a_stored_body_is_the_wire_json_with_its_seq() {
        let Some((a, _b)) = two_instances().await else {
            return;
        };
        a.create_session(&crate::server::store::conformance::session("W"))
            .await
            .unwrap();
        a.append(&"W".into(), vec![message("t0")], Commit::default())
            .await
            .unwrap();
        let stored = a
            .append(
                &"W".into(),
                vec![
                    message("t1"),
                    mode_change("t1", crate::protocol::Mode::Plan),
                ],
                Commit::default(),
            )
            .await
            .unwrap();
        assert_eq!(
            stored.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [Some(2), Some(3)]
        );
        let bodies: Vec<(i64, String)> = sqlx::query_as(
            "SELECT seq, body FROM events WHERE session_id = 'W' AND seq > 1 ORDER BY seq",
        )
        .fetch_all(&a.pool)
        .await
        .unwrap();
        for ((seq, body), event) in bodies.iter().zip(&stored) {
            assert_eq!(u64::try_from(*seq).ok(), event.seq);
            assert_eq!(body, &serde_json::to_string(event).unwrap());
        }
        assert_eq!(a.events_after(&"W".into(), 1, 10).await.unwrap(), stored);
    }
}
