//! `countersign hook …`: the command Claude Code's and Codex's permission hooks run, and
//! `hook install` that registers it. Everything runs over [`run_with`], which takes stdin and the
//! environment as values and returns what to print, so tests need no process or global state.

pub mod claude_code;
pub mod codex;
pub mod install;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use crate::external::gates_client::{ClientError, DEFAULT_OPEN_BUDGET, GatesClient, OpenGate};
use crate::external::remote::CountersignRemote;
use crate::external::verdict::Verdict;
use crate::text::error_chain;

/// How long a hook waits for an answer by default (Countersign's default gate window).
pub const DEFAULT_TIMEOUT_SECS: u64 = 1800;
/// The `why` sent when the hook's own deadline cancels its gate.
const WHY_TIMEOUT: &str = "timeout";

/// `countersign hook …`
#[derive(Args, Debug, Clone)]
pub struct HookArgs {
    #[command(subcommand)]
    pub command: HookCommand,
}

#[derive(Subcommand, Debug, Clone)]
pub enum HookCommand {
    /// Answer a Claude Code `PermissionRequest` or `PreToolUse` hook (JSON on stdin).
    ClaudeCode(GateHookArgs),
    /// Answer a Codex `PermissionRequest` hook (JSON on stdin).
    Codex(GateHookArgs),
    /// Register the hook in an agent's settings.
    Install(install::InstallArgs),
}

/// Flags of the hooks that open a gate.
#[derive(Args, Debug, Clone)]
pub struct GateHookArgs {
    #[command(flatten)]
    pub remote: CountersignRemote,
    /// Seconds to wait for an answer; the hook denies before this passes. Keep it below the
    /// agent's own hook timeout.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
}

/// What a hook run needs from the outside world, passed in so tests can supply their own.
#[derive(Clone, Debug)]
pub struct HookContext {
    /// `$HOME`, for `install --user` and `install codex`.
    pub home: Option<PathBuf>,
    /// The directory the hook runs in (default for `install claude-code`; a payload without
    /// `cwd`).
    pub cwd: PathBuf,
    /// Random once per process: keys of requests without a tool-use id protect only this
    /// process's own retries (see [`claude_code`]).
    pub nonce: String,
    /// How long opening a gate retries an unreachable Countersign.
    pub open_budget: Duration,
}

impl HookContext {
    /// The real process's context.
    pub fn from_env() -> HookContext {
        HookContext {
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            nonce: uuid::Uuid::new_v4().to_string(),
            open_budget: DEFAULT_OPEN_BUDGET,
        }
    }
}

/// What the process prints and how it exits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HookOutcome {
    pub stdout: String,
    pub stderr: String,
    pub code: u8,
}

impl HookOutcome {
    fn say(&mut self, line: impl AsRef<str>) {
        self.stderr.push_str("countersign: ");
        self.stderr.push_str(line.as_ref());
        self.stderr.push('\n');
    }

    fn failed(line: impl AsRef<str>) -> HookOutcome {
        let mut outcome = HookOutcome {
            code: 1,
            ..HookOutcome::default()
        };
        outcome.say(line);
        outcome
    }
}

/// The entry point the main binary calls for `countersign hook …`.
pub async fn run(args: HookArgs) -> ExitCode {
    let mut stdin = Vec::new();
    if matches!(
        args.command,
        HookCommand::ClaudeCode(_) | HookCommand::Codex(_)
    ) && let Err(e) = tokio::io::stdin().read_to_end(&mut stdin).await
    {
        eprintln!("countersign: cannot read the hook's input: {e}");
        return ExitCode::from(1);
    }
    let outcome = run_with(args, &stdin, &HookContext::from_env()).await;
    let mut out = std::io::stdout().lock();
    // A closed stdout leaves nothing useful to do; the exit code still tells.
    let _ = out
        .write_all(outcome.stdout.as_bytes())
        .and_then(|()| out.flush());
    eprint!("{}", outcome.stderr);
    ExitCode::from(outcome.code)
}

/// `countersign hook …` with its input as values.
pub async fn run_with(args: HookArgs, stdin: &[u8], ctx: &HookContext) -> HookOutcome {
    match args.command {
        HookCommand::ClaudeCode(flags) => claude_code::answer(&flags, stdin, ctx).await,
        HookCommand::Codex(flags) => codex::answer(&flags, stdin, ctx).await,
        HookCommand::Install(install) => install::install(&install, ctx),
    }
}

/// Opens the gate and waits for its verdict. `None` means "no decision": Countersign could not
/// be asked (or stopped answering), so the agent falls back to its own prompt.
pub(crate) async fn decide(
    flags: &GateHookArgs,
    gate: &OpenGate,
    key: &str,
    ctx: &HookContext,
    out: &mut HookOutcome,
) -> Option<Verdict> {
    let deadline = Instant::now() + Duration::from_secs(flags.timeout);
    let client = match flags.remote.client() {
        Ok(client) => client.with_open_budget(ctx.open_budget),
        Err(e) => {
            out.say(format!("{e}; leaving this to the agent's own prompt"));
            return None;
        }
    };
    let opened = match client.open(gate, Some(key)).await {
        Ok(state) => state,
        Err(e) => {
            out.say(format!(
                "{}; leaving this to the agent's own prompt",
                error_chain(&e)
            ));
            return None;
        }
    };
    if opened.is_resolved() {
        return Some(Verdict::from_state(&opened));
    }
    if let Some(url) = &opened.url {
        out.say(format!("waiting for an answer: {url}"));
    }
    wait(&client, &opened.approval_id, deadline, flags.timeout, out).await
}

async fn wait(
    client: &GatesClient,
    approval_id: &str,
    deadline: Instant,
    timeout_secs: u64,
    out: &mut HookOutcome,
) -> Option<Verdict> {
    match client.wait(approval_id, deadline).await {
        Ok(state) => Some(Verdict::from_state(&state)),
        Err(ClientError::Deadline { .. }) => {
            // The agent is told no; the card should not stay open for an answer nobody reads.
            if let Err(e) = client.cancel(approval_id, WHY_TIMEOUT).await {
                out.say(format!("could not cancel gate {approval_id}: {e}"));
            }
            Some(Verdict::timed_out(timeout_secs))
        }
        Err(e) => {
            out.say(format!(
                "lost gate {approval_id}: {}; leaving this to the agent's own prompt",
                error_chain(&e)
            ));
            None
        }
    }
}

/// Parses the hook's stdin, or says why not.
pub(crate) fn parse_input<T: serde::de::DeserializeOwned>(
    stdin: &[u8],
    agent: &str,
) -> Result<T, HookOutcome> {
    serde_json::from_slice(stdin).map_err(|e| {
        HookOutcome::failed(format!(
            "the {agent} hook input on stdin is not what was expected: {e}"
        ))
    })
}
