//! The agent's tools as one registry. Each tool is one file implementing `Tool`: its name,
//! class, what the model is told (description and argument schema), how its arguments are
//! checked (typed, `deny_unknown_fields`), the subject the safety floor and standing rules look
//! at, what its approval card says, and how it runs. `registry.rs` lists them; the policy, the
//! floor, the rules, the card builder and the turn ask the registry, so adding a tool is one
//! new file and one line.
//!
//! Every path is confined to the workspace (`confine`, then opened with `beneath`), every
//! output is capped (`output`), and processes run in the sandbox (`sandbox/`).

mod beneath;
mod confine;
mod error;
mod files;
pub(crate) use confine::display_form;
pub(crate) use files::{unified_diff, with_newline};
mod output;
pub mod outside;
pub mod reader;
mod registry;
pub mod sandbox;

mod config_set;
mod edit_file;
mod exit_plan;
mod list_files;
mod read_file;
mod request_approval;
mod search;
mod shell;
mod shell_disk;
mod spec;
mod write_file;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::protocol::{Mode, ToolClass, ToolStatus};
use crate::server::conversation::ToolSpec;

pub use config_set::{AGENT_KEYS, CONFIG_TOOL, key_and_value as config_key_and_value};
pub use error::ToolError;
pub use exit_plan::{EXIT_PLAN_TOOL, plan_of};
pub use files::{FileNow, MAX_DIFF_BYTES, current_file};
pub use reader::{FloorPaths, Guard, Hidden, PersonRead, read_floor_file_for_person};
pub use registry::{all, get};
pub use request_approval::{CHECKPOINT_TOOL, Checkpoint};

/// One tool the agent may call.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls it by.
    fn name(&self) -> &'static str;

    /// What the policy table looks at.
    fn class(&self) -> ToolClass;

    /// What the model is told: a description and the JSON schema of the arguments.
    fn spec(&self) -> ToolSpec;

    /// Whether the model is offered it in `mode` (a call to it is still checked either way).
    fn offered_in(&self, _mode: Mode) -> bool {
        true
    }

    /// Added to the system prompt whenever it is offered.
    fn prompt(&self) -> &'static str {
        ""
    }

    /// Why a call to it is refused outright in `mode`, if it is.
    fn refused_in(&self, _mode: Mode) -> Option<String> {
        None
    }

    /// Checks the arguments exactly as the call will read them; a person's edited arguments
    /// go through the same check.
    fn check(&self, args: &Value, env: &CheckEnv<'_>) -> Result<(), Refusal>;

    /// What the safety floor and standing rules look at.
    fn subject(&self, _args: &Value) -> Option<Subject> {
        None
    }

    /// Which kind of subject it has (what a standing rule's pattern is written against).
    fn subject_kind(&self) -> Option<SubjectKind> {
        None
    }

    /// How its gate is put to the person.
    fn gate(&self) -> GateStyle {
        GateStyle::Action
    }

    /// What its approval card says (`Action` tools). Blocking: it may read the file a file
    /// tool would change (through the one reader, never a floor file).
    fn card(&self, args: &Value, env: &CardEnv<'_>) -> CardText;

    /// What the safety floor must also see of this call on disk: where its path really leads
    /// and whether the file has other names. Blocking.
    fn hidden(&self, _args: &Value, _workspace: &Path) -> Vec<Hidden> {
        Vec::new()
    }

    /// What the card bound besides the arguments, as `card` saw it (`CardText::bound`), read
    /// again now: an answer is taken only while it is the same. Blocking.
    fn binds(&self, _args: &Value, _env: &CardEnv<'_>) -> Option<String> {
        None
    }

    /// Runs it (`Action` tools; a decision is never run).
    async fn run(&self, args: &Value, ctx: &ToolContext) -> ToolOutput;
}

/// What a check needs: the workspace, and the settings (for `config_set`; absent where only
/// the shape can be checked).
pub struct CheckEnv<'a> {
    pub workspace: &'a Path,
    pub settings: Option<&'a dyn Settings>,
}

/// The server's settings as `config_set` reaches them. A trait, so the tools need not know the
/// configuration module (which needs the tools, for the safety floor and the sandbox);
/// `live::change::AgentSettings` implements it.
#[async_trait]
pub trait Settings: Send + Sync {
    /// Whether the agent may set `key` to `value`: a protected key is `Refused`, a value the
    /// key does not take `Invalid`.
    fn check(&self, key: &str, value: &Value) -> Result<(), Refusal>;

    /// Sets it as the agent's change, audited with `via`; says what changed, or why not.
    async fn set_as_agent(&self, key: &str, value: &Value, via: &str) -> Result<String, String>;
}

/// Why a call's arguments are not taken.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// Not what the tool takes (the result's status is `error`).
    #[error(transparent)]
    Invalid(#[from] ToolError),
    /// Something the agent may never do with it, in any mode (status `refused`).
    #[error("{0}")]
    Refused(String),
}

/// What a call touches, for the floor and for standing rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A workspace path, lexically normalized (`./a/../b` is `b`): one file, one spelling.
    Path(String),
    /// A shell command line.
    Command(String),
}

impl Subject {
    pub fn text(&self) -> &str {
        match self {
            Subject::Path(p) | Subject::Command(p) => p,
        }
    }
}

/// What a standing rule's pattern is written against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectKind {
    /// A glob over workspace paths.
    Path,
    /// A command, exactly or as a `prefix *`.
    Command,
}

/// How a tool's gate is put to the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateStyle {
    /// The exact call waits; approving runs it.
    Action,
    /// A decision the agent puts to the person (`request_approval`).
    Checkpoint,
    /// A plan; approving it leaves plan mode (`exit_plan`).
    Plan,
}

/// An action card's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardText {
    /// The kind badge: `Write file`, `Shell`, `Config`.
    pub title: String,
    /// What will happen, in one line.
    pub summary: String,
    /// A unified diff, for file changes.
    pub diff: Option<String>,
    /// What the card was made from besides the arguments (the file a diff was made from, the
    /// folder a command runs in), folded into its digest.
    pub bound: Option<String>,
}

/// What building a card may read: the workspace, through the one reader, under the floor.
pub struct CardEnv<'a> {
    pub workspace: &'a Path,
    pub floor: Arc<dyn FloorPaths>,
}

impl CardEnv<'_> {
    /// A card never reads a floor file's content (it would be copied into the log).
    pub fn card_guard(&self) -> Guard {
        Guard::Floor(Arc::clone(&self.floor))
    }
}

/// What a tool call may use: where it runs, how long and how much it may say, and when to stop.
#[derive(Clone)]
pub struct ToolContext {
    /// Already canonicalized by the caller.
    pub workspace: PathBuf,
    pub shell_timeout: Duration,
    /// Max bytes of output kept (shell output, file reads, listings, search results).
    pub output_limit: usize,
    pub cancel: CancellationToken,
    /// How processes the tools start are confined.
    pub sandbox: Arc<sandbox::Sandbox>,
    /// For `config_set`: the configuration to change, where to audit it, and the session
    /// asking (absent where no configuration may be changed).
    pub settings: Option<SettingsAccess>,
    /// Whether files on the safety floor may be opened: only when a person approved this call
    /// on a floor card.
    pub guard: Guard,
}

/// What `config_set` changes the configuration through, and the session asking.
#[derive(Clone)]
pub struct SettingsAccess {
    pub settings: Arc<dyn Settings>,
    pub session_id: String,
}

/// A finished call. `status` is `Ok`, `Error`, `Timeout`, `Cancelled` or `Refused` here.
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

    fn from_result(result: Result<ToolOutput, ToolError>) -> Self {
        result.unwrap_or_else(ToolOutput::from_error)
    }

    /// A tool error as the call's result: a time limit is `timeout`, a Stop `cancelled`, a
    /// floor file `refused`, the rest `error`.
    pub fn from_error(e: ToolError) -> Self {
        let status = match e {
            ToolError::TimedOut { .. } => ToolStatus::Timeout,
            ToolError::Cancelled => ToolStatus::Cancelled,
            ToolError::OnFloor { .. } => ToolStatus::Refused,
            _ => ToolStatus::Error,
        };
        ToolOutput {
            status,
            output: e.to_string(),
        }
    }
}

/// Parses a call's arguments into the tool's typed shape (a JSON object, no unknown fields).
fn parse<T: DeserializeOwned>(args: &Value) -> Result<T, ToolError> {
    if !args.is_object() {
        return Err(ToolError::InvalidArgs(
            "the arguments must be a JSON object".into(),
        ));
    }
    T::deserialize(args).map_err(|e| ToolError::InvalidArgs(e.to_string()))
}

fn non_empty(field: &str, value: &str) -> Result<(), ToolError> {
    if value.is_empty() {
        return Err(ToolError::InvalidArgs(format!("`{field}` is empty")));
    }
    Ok(())
}

/// The class of a tool the agent names; `None` for a name no tool has.
pub fn class_of(tool: &str) -> Option<ToolClass> {
    get(tool).map(|t| t.class())
}

/// Checks a call's arguments exactly as execution will (schema: required fields, types, no
/// unknown fields; for file tools the path is confined to the workspace). Does not require the
/// file to exist yet. Only the shape of `config_set` is checked here.
pub fn validate(tool: &str, args: &Value, workspace: &Path) -> Result<(), ToolError> {
    let found = get(tool).ok_or_else(|| ToolError::UnknownTool {
        name: tool.to_owned(),
    })?;
    let env = CheckEnv {
        workspace,
        settings: None,
    };
    found.check(args, &env).map_err(|refusal| match refusal {
        Refusal::Invalid(err) => err,
        Refusal::Refused(why) => ToolError::InvalidArgs(why),
    })
}

/// The subject's text (a path or a command) of a call, for display and rule matching.
pub fn subject(tool: &str, args: &Value) -> Option<String> {
    get(tool)?.subject(args).map(|s| s.text().to_owned())
}

/// Runs one call. Never panics; invalid arguments come back as status `Error` with the message.
pub async fn execute(tool: &str, args: &Value, ctx: &ToolContext) -> ToolOutput {
    match get(tool) {
        Some(tool) => tool.run(args, ctx).await,
        None => ToolOutput::error(
            ToolError::UnknownTool {
                name: tool.to_owned(),
            }
            .to_string(),
        ),
    }
}

/// The specs of the workspace tools (files and commands), without the decisions and config.
pub fn specs() -> Vec<ToolSpec> {
    all()
        .iter()
        .filter(|t| t.gate() == GateStyle::Action && t.class() != ToolClass::Config)
        .map(|t| t.spec())
        .collect()
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
            database_url: None,
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
            sandbox: Arc::new(sandbox),
            settings: None,
            guard: Guard::Floor(Arc::new(
                crate::server::gate::floor::SafetyFloor::new(&Default::default()).unwrap(),
            )),
        }
    }

    pub(crate) async fn run(ctx: &ToolContext, tool: &str, args: Value) -> ToolOutput {
        execute(tool, &args, ctx).await
    }
}

#[cfg(test)]
mod tests;
