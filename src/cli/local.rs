//! The server's own database, opened from its machine: what `login`, `passkey reset` and a
//! client with no token use. Whoever can open the database (the data dir, or the database URL
//! with its password) is the server's operator; no token is needed or made from a file.

use std::path::PathBuf;

use clap::Args;

use crate::server::config::Config;
use crate::server::settings::default_data_dir;
use crate::server::store::Repos;

pub use crate::server::settings::ADDRESS_FILE;

/// Why the server's database could not be opened from here.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// Where it is could not be told (exit 2: a usage problem).
    #[error("{0}")]
    Where(String),
    /// It is there but would not open (exit 1).
    #[error("cannot open the database: {0}")]
    Open(String),
}

impl LocalError {
    pub fn exit_code(&self) -> std::process::ExitCode {
        std::process::ExitCode::from(match self {
            LocalError::Where(_) => 2,
            LocalError::Open(_) => 1,
        })
    }
}

/// Where the server's database is: the flags every local command takes.
#[derive(Args, Debug, Clone, Default)]
pub struct LocalStore {
    /// The data directory (its countersign.db, and its config.toml's `storage.database_url`).
    #[arg(long, env = "COUNTERSIGN_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// The database, when it is not the data dir's SQLite file (`postgres://…`).
    #[arg(
        long,
        env = "COUNTERSIGN_DATABASE_URL",
        hide_env_values = true,
        global = true
    )]
    pub database_url: Option<String>,
    /// The config file (default: <data-dir>/config.toml).
    #[arg(long, env = "COUNTERSIGN_CONFIG", global = true)]
    pub config: Option<PathBuf>,
}

impl LocalStore {
    fn data_dir(&self) -> Result<PathBuf, String> {
        match &self.data_dir {
            Some(dir) => Ok(dir.clone()),
            None => default_data_dir().ok_or_else(|| "no data dir: pass --data-dir".to_owned()),
        }
    }

    /// The config the server reads, when there is one.
    pub fn config(&self) -> Result<Option<Config>, String> {
        let file = match &self.config {
            Some(file) => file.clone(),
            None => self.data_dir()?.join("config.toml"),
        };
        if !file.is_file() {
            return Ok(None);
        }
        Config::load(&file)
            .map(Some)
            .map_err(|e| crate::server::secret::scrub_urls(&e.to_string()))
    }

    /// Where the server this data dir belongs to answers: its `server.public_url`, and where it
    /// last said it listens (`<data-dir>/address`), without a trailing `/`.
    pub fn server_urls(&self) -> Vec<String> {
        let mut urls = Vec::new();
        if let Ok(Some(config)) = self.config() {
            let public = config.server.public_url.trim().trim_end_matches('/');
            if !public.is_empty() {
                urls.push(public.to_owned());
            }
        }
        let recorded = self
            .data_dir()
            .ok()
            .and_then(|dir| std::fs::read_to_string(dir.join(ADDRESS_FILE)).ok())
            .map(|text| text.trim().trim_end_matches('/').to_owned())
            .filter(|text| text.starts_with("http://") || text.starts_with("https://"));
        urls.extend(recorded);
        urls
    }

    /// The database the server uses, as `serve` would find it.
    pub fn database_url(&self) -> Result<String, String> {
        if let Some(url) = self
            .database_url
            .as_deref()
            .filter(|u| !u.trim().is_empty())
        {
            return Ok(url.trim().to_owned());
        }
        if let Some(config) = self.config()? {
            let url = config.storage.database_url.reveal().trim().to_owned();
            if !url.is_empty() {
                return Ok(url);
            }
        }
        let db = self.data_dir()?.join("countersign.db");
        if !db.is_file() {
            return Err(format!(
                "no database at {} (pass --data-dir or --database-url)",
                db.display()
            ));
        }
        Ok(format!("sqlite://{}", db.display()))
    }

    /// Opens the database (migrating it, as `serve` would) as instance `instance`.
    pub async fn open(&self, instance: &str) -> Result<Repos, LocalError> {
        let url = self.database_url().map_err(LocalError::Where)?;
        crate::server::store::open(&url, crate::server::config::Synchronous::Full, instance)
            .await
            .map(|opened| opened.repos)
            .map_err(|e| LocalError::Open(crate::server::secret::scrub_urls(&e.to_string())))
    }
}
