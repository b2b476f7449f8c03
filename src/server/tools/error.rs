//! Why a tool call could not run, in words a person and a model can both act on.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("unknown tool `{name}`; the tools are {}", super::registry::names().join(", "))]
    UnknownTool { name: String },
    #[error("invalid arguments: {0}")]
    InvalidArgs(String),
    #[error("path `{0}` is outside the workspace")]
    OutsideWorkspace(String),
    #[error("path `{0}` is absolute; use a path relative to the workspace")]
    AbsolutePath(String),
    #[error("path `{0}` goes through a broken symlink, so where it leads can't be checked")]
    BrokenSymlink(String),
    #[error("`{0}` does not exist")]
    NotFound(String),
    #[error("`{0}` is a directory, not a file")]
    IsADirectory(String),
    #[error("`{0}` is not a directory")]
    NotADirectory(String),
    #[error("`{0}` is not UTF-8 text, so it can't be edited as text")]
    NotText(String),
    /// `edit_file`'s `old` text was absent or not unique; the message says which.
    #[error("{0}")]
    EditMismatch(String),
    #[error("could not {action} `{path}`: {source}")]
    Io {
        action: &'static str,
        path: String,
        #[source]
        source: io::Error,
    },
    /// The file is on the safety floor (by its real path, or as one of several names of one
    /// file) and this call was not approved on a floor card.
    #[error(
        "`{path}` {why}; it is not opened without your approval on a safety-floor card (ask for it with a call naming it)"
    )]
    OnFloor { path: String, why: String },
    #[error("`{path}` is {kind}; only regular files are read or written")]
    NotRegular { path: String, kind: &'static str },
    #[error(
        "gave up on `{path}` after {secs} s (the file system, or the work on it, took too long)"
    )]
    TimedOut { path: String, secs: u64 },
    #[error("cancelled")]
    Cancelled,
    #[error("could not start the shell: {0}")]
    Spawn(#[source] io::Error),
}

impl ToolError {
    /// Wraps an I/O error, naming the two cases a model can fix by itself more plainly.
    pub(crate) fn io(action: &'static str, path: &str, source: io::Error) -> Self {
        match source.kind() {
            io::ErrorKind::NotFound => ToolError::NotFound(path.to_owned()),
            io::ErrorKind::IsADirectory => ToolError::IsADirectory(path.to_owned()),
            _ => ToolError::Io {
                action,
                path: path.to_owned(),
                source,
            },
        }
    }
}
