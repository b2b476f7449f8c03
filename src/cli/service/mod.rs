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
mod install;
mod status;
mod uninstall;
mod unit;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::server::os_user::account;
use action::Action;

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
    fn io(what: &'static str, path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_owned();
        move |source| ServiceError::Io { what, path, source }
    }

    /// 2 for what the person must change before trying again, 1 for a step that failed.
    fn exit_code(&self) -> u8 {
        match self {
            ServiceError::NotRoot(_) | ServiceError::Invalid(_) | ServiceError::Account(_) => 2,
            ServiceError::Io { .. } | ServiceError::Command { .. } => 1,
        }
    }
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

/// Refuses unless this process is root (a dry run may be anyone's).
fn require_root(dry_run: bool) -> Result<(), ServiceError> {
    if dry_run || account::current_uid() == 0 {
        return Ok(());
    }
    let words: Vec<String> = std::env::args()
        .map(|w| {
            if w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "/.-_=:,+".contains(c))
            {
                w
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect();
    Err(ServiceError::NotRoot(words.join(" ")))
}

/// Prints the steps (a dry run) or makes them, each said as it is made.
fn carry_out(actions: &[Action], user: &str, dry_run: bool) -> Result<(), ServiceError> {
    if actions.is_empty() {
        println!("nothing to change");
        return Ok(());
    }
    if dry_run {
        println!("dry run: would do");
    }
    for action in actions {
        println!("  {}", action.describe(user));
        if !dry_run {
            action.apply(user)?;
        }
    }
    Ok(())
}

/// A user name `useradd` takes and a unit can hold.
fn check_user_name(name: &str) -> Result<(), ServiceError> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-".contains(c));
    if first_ok && rest_ok && name.len() <= 32 {
        Ok(())
    } else {
        Err(ServiceError::Invalid(format!(
            "`{name}` is not a user name: lowercase letters, digits, `_` and `-`, starting with \
             a letter or `_`, at most 32"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_are_plain() {
        for ok in ["countersign", "cs-svc_1", "_cs"] {
            assert!(check_user_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Root",
            "1cs",
            "a b",
            "cs;rm",
            "x".repeat(33).as_str(),
            "-cs",
        ] {
            assert!(check_user_name(bad).is_err(), "{bad:?}");
        }
    }
}
