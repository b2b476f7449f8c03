//! The agent as a service: it owns every turn task. Turns get only what they need (`Deps`:
//! the hub, the configuration in force, the workspace) — never the request-level core.
//!
//! **Shutdown:** `stop` drops every running turn at its next await, as a crash would, and
//! waits (bounded) for the tasks to end. Nothing is recorded for it: the log already holds
//! each turn's truth, and the next start resumes them from it (a parked gate keeps its id and
//! deadline; a tool that had started is reported `interrupted`).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::deps::Deps;
use super::recovery;
use super::turn;
use crate::protocol::Mode;
use crate::server::hub::TurnLease;
use crate::server::store::StoreError;

pub struct Agent {
    deps: Arc<Deps>,
    tasks: TaskTracker,
    /// Fired by `stop`: every turn task ends at its next await.
    halt: CancellationToken,
}

impl Agent {
    pub fn new(deps: Deps) -> Agent {
        Agent {
            deps: Arc::new(deps),
            tasks: TaskTracker::new(),
            halt: CancellationToken::new(),
        }
    }

    pub fn deps(&self) -> &Arc<Deps> {
        &self.deps
    }

    /// Runs the turn `lease` claimed, in `mode`, as a tracked task.
    pub fn start(&self, lease: TurnLease, mode: Mode) {
        let deps = Arc::clone(&self.deps);
        let halt = self.halt.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                biased;
                () = halt.cancelled() => {}
                () = turn::run(deps, lease, mode) => {}
            }
        });
    }

    /// Repairs unreadable mode records (fail closed to `ask`); returns how many.
    pub async fn restore_modes(&self) -> Result<usize, StoreError> {
        recovery::restore_modes(&self.deps.hub).await
    }

    /// Resumes every turn the last process left unfinished; returns how many. On a shared
    /// store these are the turns whose lease lapsed or was this instance's (the others are
    /// running elsewhere).
    pub async fn resume_unfinished(&self) -> Result<usize, StoreError> {
        if self.deps.coordination.is_some() {
            return self.take_over_lapsed().await;
        }
        let turns = recovery::unfinished_turns(&self.deps.hub).await?;
        let count = turns.len();
        for (lease, mode) in turns {
            self.start(lease, mode);
        }
        Ok(count)
    }

    /// Ends every turn task as a crash would and waits up to `limit` for them; `false` when
    /// some were still running then.
    pub async fn stop(&self, limit: Duration) -> bool {
        self.halt.cancel();
        self.tasks.close();
        tokio::time::timeout(limit, self.tasks.wait()).await.is_ok()
    }

    /// How many turn tasks are running.
    pub fn running(&self) -> usize {
        self.tasks.len()
    }
}
