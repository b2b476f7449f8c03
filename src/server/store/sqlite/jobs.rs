//! The jobs the writer thread takes, and their results: the shared vocabulary of the batcher
//! (`batch.rs`) and the statements (`write.rs`), kept apart so neither depends on the other.

use rusqlite::Savepoint;
use tokio::sync::oneshot;

use crate::protocol::{Event, RuleId};
use crate::server::audit;
use crate::server::store::{Commit, NewEvent, SessionRow, StoreError};

/// A change to make, and where its outcome goes.
#[allow(clippy::large_enum_variant)] // short-lived, moved once through the queue
pub enum Job {
    Append {
        session_id: String,
        events: Vec<NewEvent>,
        commit: Commit,
        reply: oneshot::Sender<Result<Vec<Event>, StoreError>>,
    },
    CreateSession {
        row: SessionRow,
        reply: oneshot::Sender<Result<(), StoreError>>,
    },
    DeleteSession {
        id: String,
        reply: oneshot::Sender<Result<bool, StoreError>>,
    },
    RevokeRule {
        rule_id: RuleId,
        actor: String,
        reply: oneshot::Sender<Result<bool, StoreError>>,
    },
    AppendAudit {
        drafts: Vec<audit::AuditDraft>,
        reply: oneshot::Sender<Result<(), StoreError>>,
    },
    /// Any other change: statements run in the job's savepoint. `Fn`, not `FnOnce`: a batch
    /// that failed as a whole is run again job by job.
    Exec {
        work: Box<Work>,
        reply: oneshot::Sender<Result<Done, StoreError>>,
    },
    /// Ends the writer thread, as a crash would (tests of what a dead writer looks like).
    #[cfg(test)]
    Stop,
}

/// The statements of an `Exec` job.
pub type Work = dyn Fn(&Savepoint<'_>) -> Result<Done, StoreError> + Send;

/// A job's result before it is sent back (one type, so a batch can hold them side by side).
pub enum Done {
    Events(Vec<Event>),
    Unit,
    Flag(bool),
    Text(String),
}
