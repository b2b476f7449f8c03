//! The agent's tools: their specs, argument checks, and running them inside the workspace.
//!
//! Every path is confined to the workspace (`confine`), every output is capped (`output`), and
//! `shell` runs in its own process group so a timeout or cancel ends everything it started.

mod args;
mod beneath;
mod confine;
mod error;
mod fs_tools;
mod output;
pub mod sandbox;
mod search;
mod shell;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::protocol::{ToolClass, ToolStatus};
use crate::server::agent::provider::ToolSpec;
use args::Call;

pub use error::ToolError;

/// What a tool call may use: where it runs, how long and how much it may say, and when to stop.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// Already canonicalized by the caller.
    pub workspace: PathBuf,
    pub shell_timeout: Duration,
    /// Max bytes of output kept (shell output, file reads, listings, search results).
    pub output_limit: usize,
    pub cancel: CancellationToken,
    /// How processes the tools start are confined.
    pub sandbox: std::sync::Arc<sandbox::Sandbox>,
}

/// A finished call. `status` is only `Ok`, `Error`, `Timeout` or `Cancelled` here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutput {
    pub status: ToolStatus,
    pub output: String,
}

impl ToolOutput {
    pub(crate) fn ok(output: impl Into<String>) -> Self {
        ToolOutput {
            status: ToolStatus::Ok,
            output: output.into(),
        }
    }

    pub(crate) fn error(output: impl Into<String>) -> Self {
        ToolOutput {
            status: ToolStatus::Error,
            output: output.into(),
        }
    }
}

/// What the model is told: read_file, list_files, search, write_file, edit_file, shell.
pub fn specs() -> Vec<ToolSpec> {
    args::specs()
}

pub fn class_of(tool: &str) -> Option<ToolClass> {
    match tool {
        "read_file" | "list_files" | "search" => Some(ToolClass::Read),
        "write_file" | "edit_file" => Some(ToolClass::Edit),
        "shell" => Some(ToolClass::Exec),
        _ => None,
    }
}

/// Checks a call's arguments exactly as execution will (schema: required fields, types, no
/// unknown fields; for file tools the path is confined to the workspace). Used before running
/// and to validate a person's edited arguments. Does not require the file to exist yet.
pub fn validate(tool: &str, args: &Value, workspace: &Path) -> Result<(), ToolError> {
    let call = Call::parse(tool, args)?;
    if let Some(path) = call.path() {
        confine::resolve(workspace, path)?;
    }
    Ok(())
}

/// What a file the call names holds now, for the diff an approval card shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileNow {
    /// Absent, unreadable, or outside the workspace.
    Missing,
    Text(String),
    /// Larger than the card diffs (its size in bytes); not read.
    TooLarge(u64),
}

/// Reads a file through the same confinement as the tools, but not past `limit` bytes: a
/// card never loads a huge file to diff it. Blocking: call it off the async threads.
pub fn current_file(workspace: &Path, raw_path: &str, limit: u64) -> FileNow {
    use std::io::Read;
    let Ok(target) = confine::resolve(workspace, raw_path) else {
        return FileNow::Missing;
    };
    let Ok(file) = std::fs::File::open(&target.abs) else {
        return FileNow::Missing;
    };
    let mut bytes = Vec::new();
    match file.take(limit + 1).read_to_end(&mut bytes) {
        Ok(n) if n as u64 > limit => {
            FileNow::TooLarge(std::fs::metadata(&target.abs).map_or(n as u64, |m| m.len()))
        }
        Ok(_) => FileNow::Text(String::from_utf8_lossy(&bytes).into_owned()),
        Err(_) => FileNow::Missing,
    }
}

/// The path argument of a file tool (lexically normalized, `./a/../b` → `b`, so one file has
/// one spelling; `.` when a listing or search names none), or the command of `shell`. For
/// display and rule matching; `None` for unknown tools or when the field isn't a string.
pub fn subject(tool: &str, args: &Value) -> Option<String> {
    let path = match tool {
        "shell" => return args.get("command")?.as_str().map(str::to_owned),
        "read_file" | "write_file" | "edit_file" => args.get("path")?,
        "list_files" | "search" => match args.get("path") {
            None | Some(Value::Null) => return Some(".".into()),
            Some(path) => path,
        },
        _ => return None,
    };
    path.as_str().map(confine::display_form)
}

/// Runs one call. Never panics; invalid arguments come back as status `Error` with the message.
pub async fn execute(tool: &str, args: &Value, ctx: &ToolContext) -> ToolOutput {
    match run(tool, args, ctx).await {
        Ok(output) => output,
        Err(e) => ToolOutput::error(e.to_string()),
    }
}

async fn run(tool: &str, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let call = Call::parse(tool, args)?;
    // Resolving is a few stat calls; not worth a trip to the blocking pool.
    let target = match call.path() {
        Some(path) => Some(confine::resolve(&ctx.workspace, path)?),
        None => None,
    };
    match (call, target) {
        (Call::ReadFile { .. }, Some(t)) => fs_tools::read_file(&t, ctx.output_limit).await,
        (Call::ListFiles { .. }, Some(t)) => fs_tools::list_files(&t, ctx.output_limit).await,
        (Call::Search { pattern, .. }, Some(t)) => {
            search::search(t, pattern, ctx.output_limit, ctx.cancel.clone()).await
        }
        (Call::WriteFile { content, .. }, Some(t)) => fs_tools::write_file(&t, &content).await,
        (Call::EditFile { old, new, .. }, Some(t)) => fs_tools::edit_file(&t, &old, &new).await,
        (Call::Shell { command }, _) => Ok(shell::run(&command, ctx).await),
        // Every file tool has a path, so it was resolved above.
        (_, None) => Err(ToolError::InvalidArgs("`path` is missing".into())),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A data dir for the unit tests' sandboxes (one per test binary, kept to its end).
    fn data_dir() -> PathBuf {
        static DATA: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
        DATA.get_or_init(|| tempfile::tempdir().unwrap())
            .path()
            .canonicalize()
            .unwrap()
    }

    pub(crate) fn places(workspace: &Path) -> sandbox::Places {
        let data_dir = data_dir();
        sandbox::Places {
            workspace: std::fs::canonicalize(workspace).unwrap(),
            config_file: data_dir.join("config.toml"),
            database_file: Some(data_dir.join("countersign.db")),
            data_dir,
        }
    }

    /// A context whose commands run in the default sandbox.
    pub(crate) fn ctx(workspace: &Path, output_limit: usize) -> ToolContext {
        let config = crate::server::config::ToolsConfig::default();
        let sandbox = sandbox::Sandbox::build(&config, &places(workspace)).unwrap();
        ToolContext {
            workspace: std::fs::canonicalize(workspace).unwrap(),
            shell_timeout: Duration::from_secs(20),
            output_limit,
            cancel: CancellationToken::new(),
            sandbox: std::sync::Arc::new(sandbox),
        }
    }

    pub(crate) async fn run(ctx: &ToolContext, tool: &str, args: Value) -> ToolOutput {
        execute(tool, &args, ctx).await
    }
}

#[cfg(test)]
mod tests;
