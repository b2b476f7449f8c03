//! The sandbox every process a tool starts runs in: Linux Landlock (`rules.rs`) and a minimal
//! environment (`env.rs`).
//!
//! The agent is not trusted. A command it runs may write only in the workspace and a private
//! folder (its `HOME` and `TMPDIR`), may read only those and the system's read-only folders,
//! and sees none of the server's variables — so nothing that can decide a gate (the token
//! file, the database, the config file) and no server secret is within its reach, by path,
//! through `/proc`, or from the environment.
//!
//! **Invariant 41** ([ARCHITECTURE.md](../../../../ARCHITECTURE.md#invariants)): every tool process is spawned through `Sandbox::apply`, never unconfined.
//!
//! Anything granted is checked against the server's secrets when the sandbox is built: a
//! folder that holds one is granted child by child, around it.

mod env;
mod isolation;
mod rules;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::server::config::{NetworkAccess, SandboxMode, ToolsConfig};
use crate::server::secret::{Secret, UrlPassword};

pub use isolation::Isolation;
pub use rules::Support;

/// What this machine allows for keeping commands from outliving their call, probed once.
pub fn isolation() -> &'static Isolation {
    static PROBED: std::sync::OnceLock<Isolation> = std::sync::OnceLock::new();
    PROBED.get_or_init(Isolation::probe)
}

/// Where the server keeps what tools must never reach, and the private folder they get.
#[derive(Clone, Debug)]
pub struct Places {
    /// Canonical.
    pub workspace: PathBuf,
    /// Canonical.
    pub data_dir: PathBuf,
    /// The config file (it may not exist yet).
    pub config_file: PathBuf,
    /// The database file, when the store is a file.
    pub database_file: Option<PathBuf>,
    /// The database's URL (a PostgreSQL one names the database the floor keeps outside
    /// agents away from; masked wherever it is shown).
    pub database_url: Option<Secret<UrlPassword>>,
}

impl Places {
    /// The folder that holds the tools' `HOME` and `TMPDIR` (inside the data dir, granted on
    /// its own: the rest of the data dir stays out of reach).
    pub fn private_dir(&self) -> PathBuf {
        self.data_dir.join("sandbox")
    }

    /// Every path no tool may read or write. Folders count with everything inside them.
    pub fn secrets(&self) -> Vec<PathBuf> {
        let mut secrets = vec![self.data_dir.clone(), absolute(&self.config_file)];
        secrets.extend(self.database_file.iter().map(|p| absolute(p)));
        secrets
    }

    /// Refuses a workspace that holds the data dir, the config file or the database: the file
    /// tools and the sandbox both grant the whole workspace.
    pub fn check_workspace(&self) -> Result<(), String> {
        let workspace = &self.workspace;
        let inside = |what: &str, path: &Path| {
            path.starts_with(workspace).then(|| {
                format!(
                    "refusing the workspace {}: it contains the {what} {}, which the agent must never reach; give the agent a folder of its own with --workspace",
                    workspace.display(),
                    path.display()
                )
            })
        };
        let problem = inside("data directory", &self.data_dir)
            .or_else(|| inside("config file", &absolute(&self.config_file)))
            .or_else(|| {
                self.database_file
                    .as_deref()
                    .and_then(|db| inside("database", &absolute(db)))
            });
        problem.map_or(Ok(()), Err)
    }
}

/// The canonical form of a path when it exists (or its parent does), else the path itself.
fn absolute(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .map(|p| p.join(name))
            .unwrap_or_else(|_| path.to_owned()),
        _ => path.to_owned(),
    }
}

/// How tool processes are confined under one configuration.
pub struct Sandbox {
    state: State,
    env: Vec<(String, OsString)>,
    workspace: PathBuf,
}

enum State {
    /// The Landlock ruleset, shared by every spawn (restricting does not consume it).
    Confined(Arc<rules::Rules>),
    /// `mode = "off"`, chosen in the config file.
    Off,
    /// Why shell calls are refused (no Landlock where it is required).
    Refused(String),
}

/// Shown at startup and on every exec card while the sandbox is off.
pub const OFF_WARNING: &str = "The sandbox is off ([tools.sandbox] mode = \"off\"): commands run with the server's own access to files, including its token and database.";

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Sandbox {
    /// The sandbox `config` asks for, on this kernel.
    pub fn build(config: &ToolsConfig, places: &Places) -> Result<Sandbox, String> {
        Self::build_with(config, places, rules::support())
    }

    /// As `build`, on a kernel with the given Landlock support (tests pass `Missing`).
    pub fn build_with(
        config: &ToolsConfig,
        places: &Places,
        support: Support,
    ) -> Result<Sandbox, String> {
        places.check_workspace()?;
        let private = places.private_dir();
        let home = private.join("home");
        let tmp = private.join("tmp");
        for dir in [&home, &tmp] {
            std::fs::create_dir_all(dir).map_err(|e| {
                format!(
                    "cannot create the tools' private folder {}: {e}",
                    dir.display()
                )
            })?;
        }
        let env = env::minimal(&config.env_passthrough, &home, &tmp);
        let state = match config.sandbox.mode {
            SandboxMode::Off => State::Off,
            SandboxMode::Landlock => {
                let network = config.sandbox.network == NetworkAccess::On;
                match support.refusal(network) {
                    Some(why) => State::Refused(why),
                    None => {
                        let grants = rules::Grants::new(places, &config.sandbox, &home, &tmp)?;
                        State::Confined(Arc::new(rules::Rules::build(&grants, network)?))
                    }
                }
            }
        };
        Ok(Sandbox {
            state,
            env,
            workspace: places.workspace.clone(),
        })
    }

    /// Whether commands run unconfined (by explicit choice).
    pub fn is_off(&self) -> bool {
        matches!(self.state, State::Off)
    }

    /// One line for the startup log.
    pub fn describe(&self) -> String {
        let files = match &self.state {
            State::Confined(ruleset) => ruleset.describe(),
            State::Off => OFF_WARNING.to_owned(),
            State::Refused(why) => why.clone(),
        };
        format!("{files}; {}", isolation().describe())
    }

    /// Prepares `command` to run confined, in the workspace, with the minimal environment.
    /// `Err` is the sentence a refused call reports (the command must not be spawned).
    pub fn apply(&self, command: &mut tokio::process::Command) -> Result<(), String> {
        command.env_clear();
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        command.current_dir(&self.workspace);
        match &self.state {
            State::Confined(ruleset) => {
                // The namespace first: it needs the capabilities the ruleset step drops.
                isolation().apply(command);
                ruleset.confine(command);
                Ok(())
            }
            State::Off => {
                isolation().apply(command);
                Ok(())
            }
            State::Refused(why) => Err(why.clone()),
        }
    }
}

#[cfg(test)]
mod tests;
