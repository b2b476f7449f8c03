//! What can stop `countersign service`, and the exit code each one gives.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(
        "this changes system accounts and files, so it runs as root: `sudo {0}` \
         (or add --dry-run to see what it would do)"
    )]
    NotRoot(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Account(String),
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`{line}` failed: {detail}")]
    Command { line: String, detail: String },
}

impl ServiceError {
    pub fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_owned();
        move |source| ServiceError::Io { what, path, source }
    }

    /// 2 for what the person must change before trying again, 1 for a step that failed.
    pub fn exit_code(&self) -> u8 {
        match self {
            ServiceError::NotRoot(_) | ServiceError::Invalid(_) | ServiceError::Account(_) => 2,
            ServiceError::Io { .. } | ServiceError::Command { .. } => 1,
        }
    }
}
