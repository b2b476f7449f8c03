//! `countersign config path|get|set|show`: the config file on this machine. A running server
//! watches the file and applies a valid change at once.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::server::config::{Config, keys};
use crate::server::settings::default_data_dir;

#[derive(Args, Debug)]
pub struct ConfigArgs {
    /// The config file (default: <data-dir>/config.toml).
    #[arg(long, env = "COUNTERSIGN_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// The data directory whose config.toml is meant.
    #[arg(long, env = "COUNTERSIGN_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Print JSON instead of text (`get`, `show`).
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: ConfigCommand,
}

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Print the config file's path.
    Path,
    /// Print one key's value (from the file, else its default).
    Get { key: String },
    /// Set one key in the file (TOML value: 30, true, "text", ["a", "b"]).
    Set { key: String, value: String },
    /// Print every key with its value and where it comes from.
    Show,
}

fn fail(message: impl std::fmt::Display) -> ExitCode {
    // A config error quotes the file's line, which may hold a secret URL.
    eprintln!(
        "error: {}",
        crate::server::secret::scrub_urls(&message.to_string())
    );
    ExitCode::from(1)
}

fn path_of(args: &ConfigArgs) -> Option<PathBuf> {
    match (&args.config, &args.data_dir) {
        (Some(path), _) => Some(path.clone()),
        (None, Some(dir)) => Some(dir.join("config.toml")),
        (None, None) => default_data_dir().map(|d| d.join("config.toml")),
    }
}

/// Runs a `config` subcommand.
pub fn run(args: ConfigArgs) -> ExitCode {
    let Some(path) = path_of(&args) else {
        eprintln!("error: no data directory: set --data-dir or HOME");
        return ExitCode::from(2);
    };
    let table = match Config::read_table(&path) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let current = match toml::to_string(&table)
        .map_err(|e| e.to_string())
        .and_then(|text| Config::parse(&text, &path).map_err(|e| e.to_string()))
    {
        Ok(config) => config,
        Err(e) => return fail(e),
    };
    match args.command {
        ConfigCommand::Path => {
            println!("{}", path.display());
            ExitCode::SUCCESS
        }
        ConfigCommand::Get { key } => get(&current, &key, args.json),
        ConfigCommand::Set { key, value } => set(&table, &current, &key, &value, &path),
        ConfigCommand::Show => show(&table, &current, args.json, &path),
    }
}

/// `config get KEY`: its value as the file reads it, or as JSON.
fn get(current: &Config, key: &str, json: bool) -> ExitCode {
    match keys::get(current, key) {
        Some(value) if json => {
            println!("{}", serde_json::to_string(&value).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Some(value) => {
            println!("{}", keys::display(&value));
            ExitCode::SUCCESS
        }
        None => fail(format!(
            "unknown config key `{key}` (see `countersign config show`)"
        )),
    }
}

/// `config set KEY VALUE`: written only if the whole file still reads as a valid config.
fn set(
    table: &toml::Table,
    current: &Config,
    key: &str,
    value: &str,
    path: &std::path::Path,
) -> ExitCode {
    let previous = keys::get(current, key);
    match keys::with_key(table, key, keys::parse_value(value), path)
        .and_then(|(table, config)| Config::write_table(path, &table).map(|_| config))
    {
        Ok(config) => {
            let now = keys::get(&config, key)
                .map(|v| keys::display(&v))
                .unwrap_or_default();
            let was = previous.map(|v| keys::display(&v)).unwrap_or_default();
            println!("set {key} = {now} (was {was}) in {}", path.display());
            if keys::needs_restart(key) {
                println!("note: `{key}` takes effect after a restart");
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

/// `config show`: every key, its value and whether the file sets it.
fn show(table: &toml::Table, current: &Config, json: bool, path: &std::path::Path) -> ExitCode {
    let in_file = keys::set_in(table);
    let rows: Vec<(String, String, &str)> = keys::entries(current)
        .into_iter()
        .map(|(key, value)| {
            let source = if in_file.contains(&key) {
                "file"
            } else {
                "default"
            };
            (key, keys::display(&value), source)
        })
        .collect();
    if json {
        let json: Vec<serde_json::Value> = rows
            .iter()
            .map(|(k, v, s)| serde_json::json!({"key": k, "value": v, "source": s}))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json).unwrap_or_default()
        );
    } else {
        let width = rows.iter().map(|(k, _, _)| k.len()).max().unwrap_or(0);
        println!("# {}", path.display());
        for (key, value, source) in rows {
            println!("{key:<width$}  {value}  ({source})");
        }
    }
    ExitCode::SUCCESS
}
