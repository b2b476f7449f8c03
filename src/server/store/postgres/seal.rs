//! The audit chain, sealed after the commit.
//!
//! A commit queues its audit entries in `audit_pending` (same transaction, so an entry is as
//! durable as the change it describes); this module numbers and hashes them onto `audit`,
//! under the chain's advisory lock, many at a time. No commit waits for that lock, which every
//! instance shares; only the sealer does, once per batch.
//!
//! **Read your writes:** every audit read seals what is pending first (`seal_pending`), so an
//! entry committed before a read is in the chain the read sees. A crash between a commit and
//! its seal leaves the entry pending; the next sealer, on any instance, takes it.

use sqlx::PgPool;
use tokio::sync::mpsc;

use super::read::to_i64;
use crate::protocol::AuditEntry;
use crate::server::audit;
use crate::server::store::StoreError;

/// The advisory lock the sealer takes: one chain, in one line, across all instances (any
/// constant of our own).
const AUDIT_LOCK: i64 = 0x436f_756e_7465_7202;

/// How many pending entries one sealing transaction takes, and how many bytes of detail.
const BATCH: i64 = 512;
const BATCH_BYTES: i64 = 4 * 1024 * 1024;

/// How long the background sealer gathers commits before it seals them together. A reader
/// never waits for it: it seals what is pending itself.
const GATHER: std::time::Duration = std::time::Duration::from_millis(20);

type PendingRow = (i64, String, String, String, String, String);

/// Seals in the background after commits (`kick`), so the chain keeps up without a reader.
#[derive(Clone)]
pub struct Sealer {
    kicks: mpsc::UnboundedSender<()>,
}

impl Sealer {
    /// Starts the sealing task, which first seals what a crash may have left pending; it ends
    /// when the store (the last sender) is dropped.
    pub fn start(pool: PgPool) -> Sealer {
        let (kicks, mut heard) = mpsc::unbounded_channel::<()>();
        let _ = kicks.send(());
        tokio::spawn(async move {
            let mut batch = Vec::new();
            while heard.recv_many(&mut batch, 1024).await > 0 {
                // Commits that follow within the pause are sealed with this one: one sealing
                // transaction for many commits instead of one each.
                tokio::time::sleep(GATHER).await;
                while heard.try_recv().is_ok() {}
                batch.clear();
                if let Err(err) = seal_pending(&pool).await {
                    tracing::warn!(error = %err, "could not seal the audit chain; the next commit or read retries");
                }
            }
        });
        Sealer { kicks }
    }

    /// Asks for a seal after a commit that queued audit entries.
    pub fn kick(&self) {
        let _ = self.kicks.send(());
    }
}

/// Seals every entry pending now; the number sealed. Cheap when nothing is pending (one
/// query, no lock).
pub async fn seal_pending(pool: &PgPool) -> Result<usize, StoreError> {
    let (any,): (bool,) = sqlx::query_as("SELECT EXISTS (SELECT 1 FROM audit_pending)")
        .fetch_one(pool)
        .await?;
    if !any {
        return Ok(0);
    }
    let mut sealed = 0;
    loop {
        let n = seal_batch(pool).await?;
        if n == 0 {
            return Ok(sealed);
        }
        sealed += n;
    }
}

/// One transaction: the lock, up to `BATCH` pending entries (and `BATCH_BYTES`) in their queue
/// order, the chain's last link, the sealed entries in, the pending ones out.
async fn seal_batch(pool: &PgPool) -> Result<usize, StoreError> {
    let mut tx = pool.begin().await?;
    // The seal is flushed like any commit: a seal lost in a crash could be redone in another
    // order (entries commit out of id order), and a chain someone already read must not
    // change.
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(AUDIT_LOCK)
        .execute(&mut *tx)
        .await?;
    // Whole entries up to `BATCH_BYTES` of detail (always at least one), so a run of large
    // entries cannot make one seal too large to send.
    let pending: Vec<PendingRow> = sqlx::query_as(
        "SELECT id, at, actor, action, subject, detail FROM (
             SELECT id, at, actor, action, subject, detail,
                    sum(octet_length(detail)) OVER (ORDER BY id) AS upto
             FROM audit_pending) p
         WHERE upto - octet_length(detail) < $2 ORDER BY id LIMIT $1",
    )
    .bind(BATCH)
    .bind(BATCH_BYTES)
    .fetch_all(&mut *tx)
    .await?;
    if pending.is_empty() {
        return Ok(0);
    }
    let last: Option<(i64, String)> =
        sqlx::query_as("SELECT n, hash FROM audit ORDER BY n DESC LIMIT 1")
            .fetch_optional(&mut *tx)
            .await?;
    let columns = chained(pending, last);
    let count = columns.ids.len();
    sqlx::query(
        "INSERT INTO audit (n, at, actor, action, subject, detail, prev_hash, hash)
         SELECT * FROM unnest($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[],
                              $6::TEXT[], $7::TEXT[], $8::TEXT[])",
    )
    .bind(&columns.n)
    .bind(&columns.at)
    .bind(&columns.actor)
    .bind(&columns.action)
    .bind(&columns.subject)
    .bind(&columns.detail)
    .bind(&columns.prev_hash)
    .bind(&columns.hash)
    .execute(&mut *tx)
    .await?;
    sqlx::query("DELETE FROM audit_pending WHERE id = ANY($1)")
        .bind(&columns.ids)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(count)
}

/// The pending entries linked onto the chain after its last link (`None`: the chain is
/// empty), as the columns `audit` takes.
fn chained(pending: Vec<PendingRow>, last: Option<(i64, String)>) -> SealedColumns {
    let (mut n, mut prev) = last
        .map(|(n, h)| (u64::try_from(n).unwrap_or(0), h))
        .unwrap_or((0, audit::GENESIS.to_owned()));
    let mut columns = SealedColumns::default();
    for (id, at, actor, action, subject, detail_text) in pending {
        n += 1;
        // An unparseable detail is hashed as text, as the verifier reads it.
        let detail = serde_json::from_str(&detail_text)
            .unwrap_or_else(|_| serde_json::Value::String(detail_text.clone()));
        let mut entry = AuditEntry {
            n,
            at: at.into(),
            actor,
            action,
            subject,
            detail,
            prev_hash: prev,
            hash: String::new(),
        };
        entry.hash = audit::hash_of(&entry);
        prev = entry.hash.clone();
        columns.push(id, entry, detail_text);
    }
    columns
}

/// Sealed entries as the columns `audit` takes, one array each.
#[derive(Default)]
struct SealedColumns {
    ids: Vec<i64>,
    n: Vec<i64>,
    at: Vec<String>,
    actor: Vec<String>,
    action: Vec<String>,
    subject: Vec<String>,
    detail: Vec<String>,
    prev_hash: Vec<String>,
    hash: Vec<String>,
}

impl SealedColumns {
    fn push(&mut self, id: i64, entry: AuditEntry, detail_text: String) {
        self.ids.push(id);
        self.n.push(to_i64(entry.n));
        self.at.push(entry.at.as_str().to_owned());
        self.actor.push(entry.actor);
        self.action.push(entry.action);
        self.subject.push(entry.subject);
        self.detail.push(detail_text);
        self.prev_hash.push(entry.prev_hash);
        self.hash.push(entry.hash);
    }
}
