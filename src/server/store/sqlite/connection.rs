//! How every SQLite connection is opened: the one place the PRAGMAs are set.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::server::store::Synchronous;

/// What a connection is for.
#[derive(Clone, Copy, Debug)]
pub enum Role {
    /// The one write connection (on the writer thread), with the configured durability.
    Writer(Synchronous),
    /// A read-only connection of the readers' pool.
    Reader,
}

/// Opens `path` for `role`: WAL (readers never wait for the writer), foreign keys on, a busy
/// timeout so a checkpoint or another process makes a statement wait rather than fail.
pub fn open(path: &Path, role: Role) -> rusqlite::Result<Connection> {
    let flags = match role {
        Role::Writer(_) => {
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
        }
        Role::Reader => OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    };
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    if let Role::Writer(synchronous) = role {
        conn.pragma_update(None, "journal_mode", "wal")?;
        conn.pragma_update(
            None,
            "synchronous",
            match synchronous {
                Synchronous::Full => "FULL",
                Synchronous::Normal => "NORMAL",
            },
        )?;
    }
    Ok(conn)
}
