//! The OS boundary as the doors ask about it: the start-up warning, the report the Security
//! page shows, and the check of each outside agent's connection (`server/os_user/`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::{Core, Error};
use crate::server::os_user::{self, Boundary, Report};
use crate::server::principal::{Principal, Scope};

/// How long looking a peer up in `/proc/net` may take before the request goes on without it.
const PEER_LOOKUP: Duration = Duration::from_secs(1);

impl Core {
    /// What the server knows about its boundary.
    pub fn os_boundary(&self) -> &Boundary {
        &self.os_boundary
    }

    /// The boundary now (the files looked at again, on the blocking pool).
    pub async fn os_boundary_report(&self) -> Result<Report, Error> {
        let boundary = Arc::clone(&self.os_boundary);
        tokio::task::spawn_blocking(move || boundary.report())
            .await
            .map_err(|e| Error::Internal(format!("the boundary report failed: {e}")))
    }

    /// The uid of the process at the other end of `local ← peer` (this server's end first),
    /// when it is on this machine and the kernel says within a second.
    pub async fn peer_uid(&self, local: SocketAddr, peer: SocketAddr) -> Option<u32> {
        let lookup = tokio::task::spawn_blocking(move || os_user::peer::uid_of_peer(local, peer));
        tokio::time::timeout(PEER_LOOKUP, lookup).await.ok()?.ok()?
    }

    /// For a request with a `gates` credential from a process of user `uid`: whether that is
    /// the server's own user (`None` for other credentials). A same-user agent is recorded and
    /// logged once per credential.
    pub fn note_agent_uid(&self, who: &Principal, uid: u32) -> Option<bool> {
        if who.scope() != Scope::Gates {
            return None;
        }
        let credential = who.credential();
        let (same, first) = self.os_boundary.note_peer(&credential, uid);
        if first {
            tracing::warn!(
                credential = %credential,
                uid,
                "an outside agent connected as Countersign's own OS user: it can read and \
                 change Countersign's files ({})",
                os_user::SEE_README
            );
        }
        Some(same)
    }
}
