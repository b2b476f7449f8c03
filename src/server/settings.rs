//! `serve`'s flags and environment, resolved into the settings the server starts with.
//!
//! Precedence: flag, then environment variable (clap reads both), then config file, then the
//! embedded defaults: a data directory under the user's data home and a workspace inside it —
//! never the home directory itself, never the repository.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::Args;

use super::config::{Config, ConfigError};
use super::secret::{Secret, UrlPassword};

/// The file in the data dir where a started server records the URL it answers at (an address,
/// no secret): where `countersign login` points its link and the local CLI sends its
/// one-command credential, and nowhere else.
pub const ADDRESS_FILE: &str = "address";

/// The admin token (`--token`): a secret, shown only masked.
pub type AccessToken = Secret;
use crate::protocol::ConfigSource;

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, env = "COUNTERSIGN_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Where the database, the token and the default workspace live.
    #[arg(long, env = "COUNTERSIGN_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// The folder the agent's tools are confined to (default: <data-dir>/workspace).
    #[arg(long, env = "COUNTERSIGN_WORKSPACE")]
    pub workspace: Option<PathBuf>,
    /// Sets the admin token for the API and the UI (only its hash is kept; without one, log in
    /// with a login link: `countersign login`).
    #[arg(long, env = "COUNTERSIGN_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// TOML config file (default: <data-dir>/config.toml when it exists).
    #[arg(long, env = "COUNTERSIGN_CONFIG")]
    pub config: Option<PathBuf>,
    /// The database: `sqlite://FILE` or `postgres://…` (several instances share one
    /// PostgreSQL database). Beats `storage.database_url` in the config file.
    #[arg(long, env = "COUNTERSIGN_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
}

pub struct Settings {
    pub addr: SocketAddr,
    pub data_dir: PathBuf,
    pub workspace: PathBuf,
    /// The admin token given at start (`--token`, `COUNTERSIGN_TOKEN`), kept by its hash.
    pub admin_token: Option<AccessToken>,
    /// An older build's `<data-dir>/token`, if the data dir has one: taken over only at the
    /// first start after the upgrade, removed in any case.
    pub legacy_token: Option<LegacyToken>,
    pub config: Config,
    pub config_path: PathBuf,
    /// A secret: shown (in errors too) without its password.
    pub database_url: Secret<UrlPassword>,
    /// This instance's name among several on one database (kept in the data dir, so a
    /// restart is the same instance).
    pub instance: String,
    pub site_root: PathBuf,
    /// The startup settings as the config page shows them: key, value, and whether it came
    /// from a flag, the environment or the default (the token is never listed).
    pub startup: Vec<(String, String, ConfigSource)>,
}

/// An older build's `<data-dir>/token` file and the token it holds.
pub struct LegacyToken {
    pub token: AccessToken,
    pub file: PathBuf,
}

/// Where a startup setting came from: a flag beats the environment beats the default.
fn source_of(flag: &str, env: &str) -> ConfigSource {
    let flagged = std::env::args().any(|a| a == flag || a.starts_with(&format!("{flag}=")));
    if flagged {
        ConfigSource::Flag
    } else if std::env::var_os(env).is_some() {
        ConfigSource::Env
    } else {
        ConfigSource::Default
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot use {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "refusing to use {0} as the workspace: give the agent a dedicated folder with --workspace"
    )]
    UnsafeWorkspace(PathBuf),
    #[error("the access token must be at least 8 characters")]
    WeakToken,
    #[error("no data directory: set --data-dir or HOME")]
    NoDataDir,
}

fn io_err(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SettingsError {
    let path = path.to_owned();
    move |source| SettingsError::Io { what, path, source }
}

pub fn default_data_dir() -> Option<PathBuf> {
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(xdg).join("countersign"));
    }
    let home = std::env::var_os("HOME").filter(|v| !v.is_empty())?;
    Some(PathBuf::from(home).join(".local/share/countersign"))
}

/// This instance's name: read from `<data-dir>/instance`, or made once and stored there.
fn stored_or_new_instance(data_dir: &Path) -> Result<String, SettingsError> {
    let path = data_dir.join("instance");
    if let Ok(text) = std::fs::read_to_string(&path)
        && let Ok(id) = uuid::Uuid::parse_str(text.trim())
    {
        return Ok(id.to_string());
    }
    let id = uuid::Uuid::new_v4().to_string();
    std::fs::write(&path, format!("{id}\n")).map_err(io_err("instance file", &path))?;
    Ok(id)
}

/// An older build's token file, if the data dir has one: `<data-dir>/token` (a file too short
/// to be a token is still one to remove).
fn legacy_token(data_dir: &Path) -> Option<LegacyToken> {
    let file = data_dir.join("token");
    let token = std::fs::read_to_string(&file).ok()?.trim().to_owned();
    Some(LegacyToken {
        token: AccessToken::new(token),
        file,
    })
}

/// Makes the data dir when it is missing, closed to other users (`0700`) from the start; an
/// existing one is left as it is (`countersign service install` fixes modes).
fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// Where the compiled browser bundle lives: next to the binary (`target/<profile>/../site`),
/// or `target/site` under the working directory.
pub fn find_site_root() -> PathBuf {
    if let Some(root) = std::env::var_os("COUNTERSIGN_SITE_ROOT") {
        return PathBuf::from(root);
    }
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        for up in exe.ancestors().skip(1).take(3) {
            candidates.push(up.join("site"));
        }
    }
    candidates.push(PathBuf::from("target/site"));
    candidates
        .iter()
        .find(|c| c.join("pkg/countersign.js").is_file())
        .cloned()
        .unwrap_or_else(|| PathBuf::from("target/site"))
}

impl ServeArgs {
    pub fn resolve(self) -> Result<Settings, SettingsError> {
        let data_dir = private_data_dir(self.data_dir)?;
        let (config_path, config) = config_at(self.config, &data_dir)?;
        let workspace = workspace_at(self.workspace, &data_dir)?;
        let admin_token = match self.token {
            Some(t) if t.trim().len() < 8 => return Err(SettingsError::WeakToken),
            Some(t) => Some(AccessToken::new(t.trim())),
            None => None,
        };
        let legacy_token = legacy_token(&data_dir);
        let database_url = match self.database_url.as_deref().map(str::trim) {
            Some(url) if !url.is_empty() => Secret::new(url),
            _ if !config.storage.database_url.is_empty() => config.storage.database_url.clone(),
            _ => Secret::new(format!(
                "sqlite://{}",
                data_dir.join("countersign.db").display()
            )),
        };
        let instance = stored_or_new_instance(&data_dir)?;
        let startup = startup_rows(self.addr, &data_dir, &workspace, &config_path);
        Ok(Settings {
            startup,
            addr: self.addr,
            data_dir,
            workspace,
            admin_token,
            legacy_token,
            config,
            config_path,
            database_url,
            instance,
            site_root: find_site_root(),
        })
    }
}

/// The data dir (given, or the default one), made private to this user, as a canonical path.
fn private_data_dir(given: Option<PathBuf>) -> Result<PathBuf, SettingsError> {
    let data_dir = match given {
        Some(dir) => dir,
        None => default_data_dir().ok_or(SettingsError::NoDataDir)?,
    };
    make_private_dir(&data_dir).map_err(io_err("data directory", &data_dir))?;
    data_dir
        .canonicalize()
        .map_err(io_err("data directory", &data_dir))
}

/// The config file and what it says. An explicit file must exist; the default one is optional
/// (and is where `config set` and the UI write when there is none yet).
fn config_at(given: Option<PathBuf>, data_dir: &Path) -> Result<(PathBuf, Config), SettingsError> {
    match given {
        Some(path) => {
            let config = Config::load(&path)?;
            Ok((path, config))
        }
        None => {
            let path = data_dir.join("config.toml");
            let config = if path.is_file() {
                Config::load(&path)?
            } else {
                Config::default()
            };
            Ok((path, config))
        }
    }
}

/// The workspace (given, or `<data-dir>/workspace`), made and canonical; never `/` or home.
fn workspace_at(given: Option<PathBuf>, data_dir: &Path) -> Result<PathBuf, SettingsError> {
    let workspace = given.unwrap_or_else(|| data_dir.join("workspace"));
    std::fs::create_dir_all(&workspace).map_err(io_err("workspace", &workspace))?;
    let workspace = workspace
        .canonicalize()
        .map_err(io_err("workspace", &workspace))?;
    // Compared as canonical paths: a HOME reached through a symlink is still home.
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .map(|h| h.canonicalize().unwrap_or(h));
    if workspace == Path::new("/") || home.is_some_and(|h| h == workspace) {
        return Err(SettingsError::UnsafeWorkspace(workspace));
    }
    Ok(workspace)
}

/// The start-up settings as the Config page lists them, with where each came from.
fn startup_rows(
    addr: SocketAddr,
    data_dir: &Path,
    workspace: &Path,
    config_path: &Path,
) -> Vec<(String, String, ConfigSource)> {
    let row = |key: &str, value: String, flag: &str, env: &str| {
        (key.to_owned(), value, source_of(flag, env))
    };
    vec![
        row(
            "server.addr",
            addr.to_string(),
            "--addr",
            "COUNTERSIGN_ADDR",
        ),
        row(
            "server.data_dir",
            data_dir.display().to_string(),
            "--data-dir",
            "COUNTERSIGN_DATA_DIR",
        ),
        row(
            "server.workspace",
            workspace.display().to_string(),
            "--workspace",
            "COUNTERSIGN_WORKSPACE",
        ),
        row(
            "server.config",
            config_path.display().to_string(),
            "--config",
            "COUNTERSIGN_CONFIG",
        ),
        row(
            "server.token",
            "(masked)".to_owned(),
            "--token",
            "COUNTERSIGN_TOKEN",
        ),
    ]
}
