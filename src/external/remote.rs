//! The flags every adapter takes to find Countersign and prove who it is.

use clap::Args;

use crate::external::gates_client::{ClientError, GatesClient};

/// Where `countersign serve` listens by default.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";

/// `--url`/`COUNTERSIGN_URL` and `--token`/`COUNTERSIGN_TOKEN`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct CountersignRemote {
    /// Countersign's base URL.
    #[arg(long, env = "COUNTERSIGN_URL", default_value = DEFAULT_URL)]
    pub url: String,
    /// A token with the `gates` scope (or `approve`/`admin`).
    #[arg(long, env = "COUNTERSIGN_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

impl CountersignRemote {
    /// A gates client for these flags.
    pub fn client(&self) -> Result<GatesClient, ClientError> {
        GatesClient::new(&self.url, self.token.as_deref())
    }
}
