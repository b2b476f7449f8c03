//! `countersign passkey reset`: removes every registered passkey, on the server's own machine.
//!
//! Not an API call on purpose: a passkey guards answers against a stolen token, so no token
//! can remove them; whoever can open the database (the data dir, or the database URL with its
//! password) can. The reset is audited (`passkeys_reset`, actor `cli`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::server::config::Config;
use crate::server::settings::default_data_dir;

#[derive(Args, Debug)]
pub struct PasskeyArgs {
    /// The data directory (its countersign.db, and its config.toml's `storage.database_url`).
    #[arg(long, env = "COUNTERSIGN_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// The database, when it is not the data dir's SQLite file (`postgres://…`).
    #[arg(long, env = "COUNTERSIGN_DATABASE_URL", global = true)]
    pub database_url: Option<String>,
    /// The config file (default: <data-dir>/config.toml).
    #[arg(long, env = "COUNTERSIGN_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: PasskeyCommand,
}

#[derive(Subcommand, Debug)]
pub enum PasskeyCommand {
    /// Remove every registered passkey (when all are lost). Stop the server's use of them
    /// immediately: an answer that needs one is then refused until one is registered again.
    Reset,
}

/// The database the server uses, as `serve` would find it.
fn database_url(args: &PasskeyArgs) -> Result<String, String> {
    if let Some(url) = args
        .database_url
        .as_deref()
        .filter(|u| !u.trim().is_empty())
    {
        return Ok(url.trim().to_owned());
    }
    let data_dir = match &args.data_dir {
        Some(dir) => dir.clone(),
        None => default_data_dir().ok_or("no data dir: pass --data-dir")?,
    };
    let config_file = args
        .config
        .clone()
        .unwrap_or_else(|| data_dir.join("config.toml"));
    if config_file.is_file() {
        let config = Config::load(&config_file).map_err(|e| e.to_string())?;
        let url = config.storage.database_url.reveal().trim().to_owned();
        if !url.is_empty() {
            return Ok(url);
        }
    }
    let db = data_dir.join("countersign.db");
    if !db.is_file() {
        return Err(format!(
            "no database at {} (pass --data-dir or --database-url)",
            db.display()
        ));
    }
    Ok(format!("sqlite://{}", db.display()))
}

pub async fn run(args: PasskeyArgs) -> ExitCode {
    let url = match database_url(&args) {
        Ok(url) => url,
        Err(why) => {
            eprintln!("error: {why}");
            return ExitCode::from(2);
        }
    };
    let store = match crate::server::store::open(
        &url,
        crate::server::config::Synchronous::Full,
        "cli-passkey-reset",
    )
    .await
    {
        Ok(opened) => opened.repos.passkeys,
        Err(e) => {
            eprintln!(
                "error: cannot open the database: {}",
                crate::server::secret::scrub_urls(&e.to_string())
            );
            return ExitCode::from(1);
        }
    };
    match args.command {
        PasskeyCommand::Reset => match store.reset_passkeys("cli").await {
            Ok(removed) => {
                println!("removed {removed} passkey(s); register a new one on the Security page");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(1)
            }
        },
    }
}
