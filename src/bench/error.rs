//! Why a benchmark step failed.

use crate::server;

/// Why a benchmark step failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("settings: {0}")]
    Settings(#[from] server::settings::SettingsError),
    #[error("server start: {0}")]
    Start(#[from] server::StartError),
    #[error("http: {0}")]
    Http(#[from] reqwest::Error),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("{what}: unexpected status {status}: {body}")]
    Status {
        what: String,
        status: u16,
        body: String,
    },
    #[error("{0}")]
    Protocol(String),
}

pub type Result<T> = std::result::Result<T, BenchError>;
