//! `countersign service install|uninstall|status`: run Countersign as an OS user of its own, so
//! the agents it answers for — which run as the person — can neither read nor change its files
//! and reach it only over HTTP with a `gates` token.
//!
//! `install` (as root) makes a system account without a login shell, its data dir (`0700`) and
//! config (`0600`), fixes the owner and modes of what is already there (it only ever takes
//! access away from others), installs the binary (and the web UI's files) as root's, and
//! writes a hardened systemd unit; it never needs systemd to run (`--no-systemd` writes no
//! unit) and prints the plain command line as well. Running it again changes nothing that is
//! already right. `--dry-run` prints the steps and makes none.

mod action;
mod beneath;
mod checks;
mod error;
mod install;
mod status;
mod uninstall;
mod unit;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

pub use error::ServiceError;

pub const DEFAULT_USER: &str = "countersign";
pub const DEFAULT_DATA_DIR: &str = "/var/lib/countersign";
pub const DEFAULT_UNIT_FILE: &str = "/etc/systemd/system/countersign.service";

#[derive(Args, Debug)]
pub struct ServiceArgs {
    #[command(subcommand)]
    pub command: ServiceCommand,
}

#[derive(Subcommand, Debug)]
pub enum ServiceCommand {
    /// Make Countersign's own OS user, data dir and config, install the binary and a systemd
    /// unit (run as root).
    Install(InstallArgs),
    /// Remove the unit; with --purge also the data dir, the binary and the user (run as root).
    Uninstall(UninstallArgs),
    /// Whether the boundary holds: the user, the owner and modes of the data dir, config and
    /// database. Exits 0 when it holds, 1 when it does not.
    Status(Place),
}

/// Where the service lives.
#[derive(Args, Debug, Clone)]
pub struct Place {
    /// The service's OS user (made as a system account without a login shell).
    #[arg(long, default_value = DEFAULT_USER)]
    pub user: String,
    /// The data dir: database, config, keys (owned by the user, mode 0700).
    #[arg(long, default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
    /// Where the binary (`<prefix>/bin`) and the web UI (`<prefix>/share/countersign`) go.
    #[arg(long, default_value = "/usr/local")]
    pub prefix: PathBuf,
    /// The systemd unit file.
    #[arg(long, default_value = DEFAULT_UNIT_FILE)]
    pub unit_file: PathBuf,
}

#[derive(Args, Debug, Clone)]
pub struct InstallArgs {
    #[command(flatten)]
    pub place: Place,
    /// The address the server listens on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// The folder the built-in agent's tools work in (default: <data-dir>/workspace).
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Write no systemd unit (machines without systemd): the plain command line is printed.
    #[arg(long)]
    pub no_systemd: bool,
    /// Print what would be done, and do nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args, Debug, Clone)]
pub struct UninstallArgs {
    #[command(flatten)]
    pub place: Place,
    /// Also remove the data dir (the database with everything in it), the installed binary
    /// and web UI, and the user.
    #[arg(long)]
    pub purge: bool,
    /// Print what would be done, and do nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Runs `countersign service …`.
pub fn run(args: ServiceArgs) -> ExitCode {
    let result = match args.command {
        ServiceCommand::Install(args) => install::run(&args),
        ServiceCommand::Uninstall(args) => uninstall::run(&args),
        ServiceCommand::Status(place) => return status::run(&place),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
