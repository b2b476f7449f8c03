//! What every command that talks to a running server is told: where it is and how to prove
//! who we are, and how ids are shortened.

use clap::Args;

/// Where `serve` listens by default.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";
/// The shortest id prefix accepted in place of a full id.
pub const MIN_PREFIX: usize = crate::text::SHORT_ID;

/// Flags every remote command takes (before or after its subcommand).
#[derive(Args, Debug, Clone)]
pub struct Remote {
    /// The server's base URL.
    #[arg(long, env = "COUNTERSIGN_URL", default_value = DEFAULT_URL, global = true)]
    pub url: String,
    /// Access token (default: on the server's own machine, a credential for this one command
    /// made in the server's database, when it can be opened).
    #[arg(long, env = "COUNTERSIGN_TOKEN", hide_env_values = true, global = true)]
    pub token: Option<String>,
    /// Where the server's database is, for the default above.
    #[command(flatten)]
    pub local: super::local::LocalStore,
    /// Print the server's JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}
