//! The `countersign` binary: parses the command line and runs the chosen command.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use countersign::cli;
use countersign::server::{self, settings::ServeArgs};

#[derive(Parser)]
#[command(
    name = "countersign",
    version,
    about = "A chat with a tool-using agent that waits for your countersignature.",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// With no command, the binary serves (what `cargo leptos watch` runs it as).
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server (HTTP API, live feed and web UI).
    Serve(ServeArgs),
    /// Pending approval gates: list them and answer them from the terminal.
    Approvals(cli::ApprovalsArgs),
    /// Standing rules created by Allow always: list and revoke.
    Rules(cli::RulesArgs),
    /// The hash-chained audit log: export it, verify it.
    Audit(cli::AuditArgs),
    /// Named tokens with scopes: create, list, revoke.
    Token(cli::TokenArgs),
    /// The config file: its path, one key, set one key, or all of them.
    Config(cli::config::ConfigArgs),
    /// Passkeys (step-up): `reset` removes them all, on the server's machine.
    Passkey(cli::passkey::PasskeyArgs),
    /// Print a fresh single-use login link (on the server's machine, as its user).
    Login(cli::login::LoginArgs),
    /// Run Countersign as its own OS user: install (a system user, its data dir and a
    /// systemd unit), uninstall, status.
    Service(cli::service::ServiceArgs),
    /// Answer an outside agent's permission hook (Claude Code, Codex), or install one.
    Hook(countersign::external::hook::HookArgs),
    /// Answer another agent's permission requests through Countersign (opencode).
    Bridge(countersign::external::opencode::BridgeArgs),
    /// Serve approval tools over MCP on stdio (approval_prompt, request_approval).
    Mcp(countersign::external::mcp::McpArgs),
    /// Performance figures: starts its own servers in a temp dir and measures them.
    Bench(countersign::bench::BenchArgs),
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "countersign=info,tower_http=warn".into());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

async fn serve(args: ServeArgs) -> ExitCode {
    let settings = match args.resolve() {
        Ok(s) => s,
        Err(e) => {
            // A config error quotes the file's line, which may hold a secret URL.
            eprintln!("error: {}", server::secret::scrub_urls(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let workspace = settings.workspace.clone();
    let data_dir = settings.data_dir.clone();
    let config_path = settings.config_path.clone();
    let running = match server::start(settings, None).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {}", server::secret::scrub_urls(&e.to_string()));
            return ExitCode::from(1);
        }
    };
    say_where(&running, &workspace, &data_dir, &config_path).await;
    let mut task = running.task;
    tokio::select! {
        _ = shutdown_signal() => {}
        result = &mut task => return exit_code(result),
    }
    tracing::info!("shutting down");
    running.shutdown.cancel();
    match tokio::time::timeout(Duration::from_secs(5), task).await {
        Ok(ended) => exit_code(ended),
        Err(_) => {
            eprintln!("warning: connections still open after 5 s; exiting anyway");
            ExitCode::SUCCESS
        }
    }
}

/// How the server task ended, as the process's exit code.
fn exit_code(ended: Result<std::io::Result<()>, tokio::task::JoinError>) -> ExitCode {
    match ended {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("error: server stopped: {e}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: server task failed: {e}");
            ExitCode::from(1)
        }
    }
}

/// Where the server answers and keeps its files, a login link, and what the person should
/// know (a token on the command line, an OS boundary that does not hold).
async fn say_where(
    running: &server::Server,
    workspace: &std::path::Path,
    data_dir: &std::path::Path,
    config_path: &std::path::Path,
) {
    let addr = running.addr;
    let login_host = if addr.ip().is_unspecified() {
        format!("127.0.0.1:{}", addr.port())
    } else {
        addr.to_string()
    };
    println!("listening on http://{addr}");
    println!("workspace: {}", workspace.display());
    println!("data dir: {}", data_dir.display());
    println!("config: {}", config_path.display());
    print_login_link(&running.core, &login_host).await;
    if token_on_argv() {
        println!(
            "warning: --token on the command line can be read by every user of this machine (ps); give it in COUNTERSIGN_TOKEN instead, or log in with `countersign login`"
        );
    }
    if let Some(warning) = running.core.os_boundary().startup_warning() {
        println!("{warning}");
    }
}

/// A fresh single-use login link (only its hash is kept; `countersign login` prints another) —
/// but not into a system log (systemd's journal, which others may read): there it says how
/// to get one.
async fn print_login_link(core: &server::core::Core, host: &str) {
    let journal =
        std::env::var_os("JOURNAL_STREAM").is_some() || std::env::var_os("INVOCATION_ID").is_some();
    if journal {
        println!("login: run `countersign login` as this service's user for a link");
        return;
    }
    match core.mint_login_code().await {
        Ok(code) => println!("login: http://{host}/login?code={code}"),
        Err(e) => eprintln!("warning: no login link could be made ({e}); run `countersign login`"),
    }
}

/// Whether the admin token was given as a command-line flag (visible in `ps` to every user).
fn token_on_argv() -> bool {
    std::env::args().any(|a| a == "--token" || a.starts_with("--token="))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(run(cli));
    // A file operation may still be stuck in the kernel on a blocking thread (a dead network
    // mount): nothing waits for it, so neither does the exit.
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

async fn run(cli: Cli) -> ExitCode {
    match cli.command {
        None => serve(cli.serve).await,
        Some(Command::Serve(args)) => serve(args).await,
        Some(Command::Approvals(args)) => cli::approvals(args).await,
        Some(Command::Rules(args)) => cli::rules(args).await,
        Some(Command::Audit(args)) => cli::audit(args).await,
        Some(Command::Token(args)) => cli::token(args).await,
        Some(Command::Config(args)) => cli::config::run(args),
        Some(Command::Passkey(args)) => cli::passkey::run(args).await,
        Some(Command::Login(args)) => cli::login::run(args).await,
        Some(Command::Service(args)) => cli::service::run(args),
        Some(Command::Hook(args)) => countersign::external::hook::run(args).await,
        Some(Command::Bridge(args)) => countersign::external::opencode::run(args).await,
        Some(Command::Mcp(args)) => countersign::external::mcp::run(args).await,
        Some(Command::Bench(args)) => countersign::bench::run(args).await,
    }
}
