//! The agent's tools: their specs, argument checks, and running them inside the workspace.
//!
//! Every path is confined to the workspace (`confine`), every output is capped (`output`), and
//! `shell` runs in its own process group so a timeout or cancel ends everything it started.

mod args;
mod confine;
mod error;
mod fs_tools;
mod output;
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

/// The current text of a file the call names, read through the same confinement as the tools
/// (for the diff an approval card shows). `None` when it does not exist or is not readable.
pub fn current_text(workspace: &Path, raw_path: &str) -> Option<String> {
    let target = confine::resolve(workspace, raw_path).ok()?;
    let bytes = std::fs::read(&target.abs).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
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

    pub(crate) fn ctx(workspace: &Path, output_limit: usize) -> ToolContext {
        ToolContext {
            workspace: std::fs::canonicalize(workspace).unwrap(),
            shell_timeout: Duration::from_secs(20),
            output_limit,
            cancel: CancellationToken::new(),
        }
    }

    pub(crate) async fn run(ctx: &ToolContext, tool: &str, args: Value) -> ToolOutput {
        execute(tool, &args, ctx).await
    }
}

#[cfg(test)]
mod tests;
