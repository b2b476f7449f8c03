//! The subcommands that talk to a running server (`approvals`, `rules`, `audit`): their flags,
//! and the dispatch that turns a result into output and an exit code.
//!
//! Exit codes: 0 done; 1 the server said no, an id matched nothing, or the audit chain is
//! broken; 2 bad usage; 3 the server could not be reached or refused the token.

pub mod approvals;
pub mod audit;
pub mod client;
pub mod config;
pub mod local;
pub mod login;
pub mod passkey;
mod remote;
pub mod rules;
pub mod service;
pub mod table;
pub mod tokens;

use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};

use client::{CliError, Client};
pub use remote::{DEFAULT_URL, MIN_PREFIX, Remote};

#[derive(Args, Debug)]
pub struct ApprovalsArgs {
    #[command(flatten)]
    pub remote: Remote,
    #[command(subcommand)]
    pub command: ApprovalsCommand,
}

#[derive(Subcommand, Debug)]
pub enum ApprovalsCommand {
    /// Pending gates across all sessions, oldest first.
    List,
    /// Let the gated call run exactly as shown.
    Approve {
        /// The approval id, or a unique prefix of at least 8 characters.
        approval_id: String,
    },
    /// Refuse the gated call; the reason, if any, reaches the agent.
    Deny {
        /// The approval id, or a unique prefix of at least 8 characters.
        approval_id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Run the call with other arguments, or answer a decision with a revised proposal.
    Edit {
        /// The approval id, or a unique prefix of at least 8 characters.
        approval_id: String,
        /// A tool gate: the full replacement arguments as a JSON object. A decision: the
        /// revised proposal as text. `-` reads it from stdin.
        #[arg(long, allow_hyphen_values = true)]
        edits: String,
    },
    /// Approve, and keep allowing calls like this one (a standing rule).
    AllowAlways {
        /// The approval id, or a unique prefix of at least 8 characters.
        approval_id: String,
        #[arg(long, value_enum, default_value_t = RuleScopeArg::Session)]
        scope: RuleScopeArg,
        /// The rule's pattern (default: the one the card suggests).
        #[arg(long)]
        pattern: Option<String>,
        /// The rule answers at most this many calls (this approval is not one of them).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        max_uses: Option<u64>,
        /// The rule stops applying this many seconds from now.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        expires_in_secs: Option<u64>,
    },
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleScopeArg {
    Session,
    Workspace,
}

impl RuleScopeArg {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleScopeArg::Session => "session",
            RuleScopeArg::Workspace => "workspace",
        }
    }
}

#[derive(Args, Debug)]
pub struct RulesArgs {
    #[command(flatten)]
    pub remote: Remote,
    #[command(subcommand)]
    pub command: RulesCommand,
}

#[derive(Subcommand, Debug)]
pub enum RulesCommand {
    /// The standing rules that Allow always created.
    List,
    /// Remove a standing rule; matching calls are gated again.
    Revoke {
        /// The rule id, or a unique prefix of at least 8 characters.
        rule_id: String,
    },
}

#[derive(Args, Debug)]
pub struct TokenArgs {
    #[command(flatten)]
    pub remote: Remote,
    #[command(subcommand)]
    pub command: TokenCommand,
}

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Create a named token; its secret is printed once (alone on stdout).
    Create {
        /// Letters, digits, `-`, `_`, `.`.
        name: String,
        /// admin, approve (read and decide), view (read only) or gates (outside agents: open
        /// their own gates).
        #[arg(long)]
        scope: String,
    },
    /// Named tokens with their scope and last use (never their secrets).
    List,
    /// Revoke a token: it stops working at once.
    Revoke { name: String },
}

#[derive(Args, Debug)]
pub struct AuditArgs {
    #[command(flatten)]
    pub remote: Remote,
    #[command(subcommand)]
    pub command: AuditCommand,
}

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Every audit entry, oldest first.
    Export {
        /// One JSON entry per line.
        #[arg(long)]
        jsonl: bool,
    },
    /// Check the hash chain; exits 1 when it is broken.
    Verify,
}

/// `countersign approvals …`.
pub async fn approvals(args: ApprovalsArgs) -> ExitCode {
    let json = args.remote.json;
    let result = match Client::new(&args.remote).await {
        Ok(client) => {
            let done = approvals::run(&client, json, args.command).await;
            client.close().await;
            done
        }
        Err(e) => Err(e),
    };
    report(result, json)
}

/// `countersign rules …`.
pub async fn rules(args: RulesArgs) -> ExitCode {
    let json = args.remote.json;
    let result = match Client::new(&args.remote).await {
        Ok(client) => {
            let done = rules::run(&client, json, args.command).await;
            client.close().await;
            done
        }
        Err(e) => Err(e),
    };
    report(result, json)
}

/// `countersign audit …`.
pub async fn audit(args: AuditArgs) -> ExitCode {
    let json = args.remote.json;
    let result = match Client::new(&args.remote).await {
        Ok(client) => {
            let done = audit::run(&client, json, args.command).await;
            client.close().await;
            done
        }
        Err(e) => Err(e),
    };
    report(result, json)
}

/// `countersign token …`.
pub async fn token(args: TokenArgs) -> ExitCode {
    let json = args.remote.json;
    let result = match Client::new(&args.remote).await {
        Ok(client) => {
            let done = tokens::run(&client, json, args.command).await;
            client.close().await;
            done
        }
        Err(e) => Err(e),
    };
    report(result, json)
}

/// One line on stderr for a failure (and, with `--json`, the server's error body on stdout).
fn report(result: Result<(), CliError>, json: bool) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if json && let Some(body) = e.server_body() {
                println!("{}", table::pretty(body));
            }
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// What an id argument matched among the candidates.
pub enum IdMatch<'a, T> {
    One(&'a T),
    None,
    Many(Vec<&'a T>),
}

/// Finds `wanted` among `items` by full id, or by a unique prefix of at least `MIN_PREFIX`
/// characters (case-insensitive).
pub fn match_id<'a, T>(
    items: &'a [T],
    id_of: impl Fn(&T) -> &str,
    wanted: &str,
) -> Result<IdMatch<'a, T>, CliError> {
    let wanted = wanted.trim().to_ascii_lowercase();
    if let Some(exact) = items
        .iter()
        .find(|i| id_of(i).eq_ignore_ascii_case(&wanted))
    {
        return Ok(IdMatch::One(exact));
    }
    if wanted.chars().count() < MIN_PREFIX {
        return Err(CliError::Usage(format!(
            "`{wanted}` is too short: give the full id or at least {MIN_PREFIX} characters of it"
        )));
    }
    let found: Vec<&T> = items
        .iter()
        .filter(|i| id_of(i).to_ascii_lowercase().starts_with(&wanted))
        .collect();
    Ok(match found.len() {
        0 => IdMatch::None,
        1 => IdMatch::One(found[0]),
        _ => IdMatch::Many(found),
    })
}
