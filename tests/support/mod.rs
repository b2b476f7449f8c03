//! Shared plumbing for the integration tests: servers (in-process or the real binary), a
//! bearer-authenticated JSON client with polling helpers, an SSE frame reader, and helpers over
//! the protocol's JSON. Not a test binary: each binary includes it with
//! `#[path = "support/mod.rs"] mod support;` (or `"../support/mod.rs"` from `tests/<name>/`).

// Every test binary compiles its own copy of this module and uses a different subset of it.
#![allow(dead_code)]

use std::fmt::Display;
use std::time::{Duration, Instant};

mod events;
pub mod fixtures;
mod http;
pub mod idp;
pub mod os_users;
mod process;
mod server;
mod session;
mod sse;
pub mod team;
pub mod unseen;
pub mod walk;

// Re-exported flat (`use support::*`); a binary that needs none of a part's items would
// otherwise warn about its re-export.
#[allow(unused_imports)]
pub use events::*;
#[allow(unused_imports)]
pub use http::*;
#[allow(unused_imports)]
pub use process::*;
#[allow(unused_imports)]
pub use server::*;
#[allow(unused_imports)]
pub use sse::*;

/// The access token every test server is started with.
pub const TOKEN: &str = "test-token-123";
/// Upper bound for anything that should happen "soon" (generous: the machine is shared).
pub const SOON: Duration = Duration::from_secs(30);
/// How often the polling helpers look again.
pub const POLL: Duration = Duration::from_millis(20);

/// Runs `probe` every [`POLL`] until it returns `Ok`; after `limit`, panics naming `what` and
/// showing the last `Err` it returned (the state that did not yet satisfy the wait).
pub async fn poll_until<T, E: Display>(
    what: &str,
    limit: Duration,
    mut probe: impl AsyncFnMut() -> Result<T, E>,
) -> T {
    let deadline = Instant::now() + limit;
    loop {
        match probe().await {
            Ok(found) => return found,
            Err(last) if Instant::now() >= deadline => {
                panic!("timed out after {limit:?} waiting for {what}; last seen:\n{last:#}")
            }
            Err(_) => tokio::time::sleep(POLL).await,
        }
    }
}

/// Waits until the file at `path` holds exactly `content`.
pub async fn wait_file(path: &std::path::Path, content: &str) {
    poll_until(
        &format!("{} to hold {content:?}", path.display()),
        SOON,
        async || match std::fs::read_to_string(path) {
            Ok(text) if text == content => Ok(()),
            other => Err(format!("{other:?}")),
        },
    )
    .await
}
