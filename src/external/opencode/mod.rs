//! `countersign bridge opencode`: watches a running opencode server and answers its permission
//! requests through Countersign.

pub mod bridge;
pub mod client;
pub mod event;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::external::hook::DEFAULT_TIMEOUT_SECS;
use crate::external::opencode::bridge::{Bridge, BridgeOptions};
use crate::external::opencode::client::OpencodeClient;
use crate::external::remote::CountersignRemote;

/// Where `opencode serve` listens by default.
pub const DEFAULT_OPENCODE_URL: &str = "http://127.0.0.1:4096";

/// `countersign bridge …`
#[derive(Args, Debug, Clone)]
pub struct BridgeArgs {
    #[command(subcommand)]
    pub command: BridgeCommand,
}

#[derive(Subcommand, Debug, Clone)]
pub enum BridgeCommand {
    /// Answer a running opencode server's permission requests through Countersign.
    Opencode(OpencodeArgs),
}

#[derive(Args, Debug, Clone)]
pub struct OpencodeArgs {
    #[command(flatten)]
    pub remote: CountersignRemote,
    /// opencode's server (`user:password@` in the URL for Basic auth).
    #[arg(long, default_value = DEFAULT_OPENCODE_URL)]
    pub opencode_url: String,
    /// opencode's server password (Basic auth as user `opencode`).
    #[arg(long, env = "OPENCODE_SERVER_PASSWORD", hide_env_values = true)]
    pub opencode_password: Option<String>,
    /// Follow this project directory's events instead of the server's own directory.
    #[arg(long)]
    pub directory: Option<String>,
    /// Seconds each gate stays open before it is denied.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
}

/// The entry point the main binary calls for `countersign bridge …`; runs until Ctrl-C.
pub async fn run(args: BridgeArgs) -> ExitCode {
    let BridgeCommand::Opencode(args) = args.command;
    let bridge = match bridge(&args) {
        Ok(bridge) => bridge,
        Err(message) => {
            eprintln!("countersign: {message}");
            return ExitCode::from(2);
        }
    };
    eprintln!(
        "countersign: answering opencode at {} through Countersign at {} (Ctrl-C stops)",
        args.opencode_url, args.remote.url
    );
    tokio::select! {
        () = bridge.run() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    ExitCode::SUCCESS
}

/// A bridge for these flags (not yet running).
pub fn bridge(args: &OpencodeArgs) -> Result<Bridge, String> {
    let gates = args.remote.client().map_err(|e| e.to_string())?;
    let opencode = OpencodeClient::new(
        &args.opencode_url,
        args.directory.clone(),
        args.opencode_password.clone(),
    )
    .map_err(|e| e.to_string())?;
    let cwd = match &args.directory {
        Some(directory) => directory.clone(),
        None => std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
    };
    Ok(Bridge::new(
        gates,
        opencode,
        BridgeOptions {
            cwd,
            timeout_secs: args.timeout,
            first_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(10),
        },
    ))
}
