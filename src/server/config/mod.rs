//! The TOML configuration: a typed schema with defaults, validated on load.
//!
//! Unknown keys are errors (a typo must not silently fall back to a default), and every error
//! names the key and what was expected.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::protocol::{Mode, ReviewMode, ReviewerKind};
use crate::server::secret::{Secret, UrlHost, UrlPassword};
/// How durable a commit is: the store's own setting, read from `[storage]`.
pub use crate::server::store::Synchronous;

pub mod auth;
pub mod form;
pub mod route;

pub use auth::{AuthConfig, OidcConfig};

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub provider: ProviderConfig,
    pub approvals: ApprovalsConfig,
    pub safety: SafetyConfig,
    pub budget: BudgetConfig,
    pub storage: StorageConfig,
    pub tools: ToolsConfig,
    pub server: ServerConfig,
    pub notify: NotifyConfig,
    pub review: ReviewConfig,
    pub auth: AuthConfig,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// The address people reach this server at (`https://countersign.example`), for the card
    /// links in notifications and gate answers. Empty: where it listens.
    pub public_url: String,
}

/// Telling the person when a gate needs them.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct NotifyConfig {
    /// Where to POST the message. Empty: no notifications. A secret: only its host is shown.
    pub webhook_url: Secret<UrlHost>,
    pub format: NotifyFormat,
    /// Web Push to plain `http` endpoints on loopback addresses: a push service on this
    /// machine, for tests and benchmarks. Off: endpoints are public `https` only.
    pub push_test_endpoints: bool,
}

/// The body a notification is posted in.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum NotifyFormat {
    /// `{"event", "title", "summary", "session", "url", …}`.
    #[default]
    Json,
    /// ntfy's JSON publish form (`{"topic", "title", "message", "click"}`), to the server's root.
    Ntfy,
    /// A Slack incoming webhook (`{"text"}`).
    Slack,
}

/// The fewest answered predictions a class needs before the reviewer may be trusted with it:
/// `review.min_cards` may only raise it.
pub const MIN_REVIEW_CARDS: u64 = 50;
/// The least agreement with the person a class needs: `review.min_agreement` may only raise it.
pub const MIN_REVIEW_AGREEMENT: f64 = 0.97;

/// `[review]`: a second opinion on each card (issue 40). The person's alone: protected from
/// the web, the API and the agent (`keys::protected`), so only the file sets them.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ReviewConfig {
    /// `off`, `shadow` (predict and compare, never answer) or `on` (answer trusted classes).
    pub mode: ReviewMode,
    /// `history` (past answers here, no model) or `model`.
    pub reviewer: ReviewerKind,
    /// The model reviewer's OpenAI-compatible endpoint; empty: `provider.base_url`.
    pub base_url: String,
    /// Its model; empty: `provider.model`.
    pub model: String,
    /// The variable holding its key; empty: `provider.api_key_env`.
    pub api_key_env: String,
    /// Answered predictions a class needs to be eligible (at least [`MIN_REVIEW_CARDS`]).
    pub min_cards: u64,
    /// Agreement a class needs to be eligible (from [`MIN_REVIEW_AGREEMENT`] to 1).
    pub min_agreement: f64,
}

impl Default for ReviewConfig {
    fn default() -> Self {
        ReviewConfig {
            mode: ReviewMode::Off,
            reviewer: ReviewerKind::History,
            base_url: String::new(),
            model: String::new(),
            api_key_env: String::new(),
            min_cards: MIN_REVIEW_CARDS,
            min_agreement: MIN_REVIEW_AGREEMENT,
        }
    }
}

/// The model reviewer's endpoint, model and key variable: `[review]`'s, each falling back to
/// `[provider]`'s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewEndpoint {
    pub base_url: String,
    pub model: String,
    pub api_key_env: String,
}

impl Config {
    pub fn review_endpoint(&self) -> ReviewEndpoint {
        let or = |own: &str, provider: &str| {
            if own.trim().is_empty() {
                provider.to_owned()
            } else {
                own.to_owned()
            }
        };
        ReviewEndpoint {
            base_url: or(&self.review.base_url, &self.provider.base_url),
            model: or(&self.review.model, &self.provider.model),
            api_key_env: or(&self.review.api_key_env, &self.provider.api_key_env),
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    #[default]
    Demo,
    Openai,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    /// The name of the environment variable holding the key; the key itself never sits here.
    pub api_key_env: String,
    pub request_timeout_secs: u64,
    /// How often a failed model call (refused or reset connection, 429, 5xx) is tried again.
    pub max_retries: u32,
    /// The model's context window: what is sent to it is cut to fit (the log keeps all).
    pub context_tokens: ContextTokens,
}

/// The fewest tokens `provider.context_tokens` may name: the system prompt and the tools'
/// descriptions alone take about 1,000 (`agent::context`'s tests measure them).
pub const MIN_CONTEXT_TOKENS: u64 = 4096;

/// `provider.context_tokens`: a number of tokens, or `"auto"`: the window of the model named
/// by `provider.model` where it is known, 32,768 where it is not
/// (`conversation::tokens::context_for`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ContextTokens {
    #[default]
    Auto,
    Tokens(u64),
}

impl ContextTokens {
    /// The window in force for `model`.
    pub fn resolve(self, model: &str) -> u64 {
        match self {
            ContextTokens::Auto => crate::server::conversation::tokens::context_for(model),
            ContextTokens::Tokens(n) => n,
        }
    }
}

impl Serialize for ContextTokens {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ContextTokens::Auto => serializer.serialize_str("auto"),
            ContextTokens::Tokens(n) => serializer.serialize_u64(*n),
        }
    }
}

impl<'de> Deserialize<'de> for ContextTokens {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ContextTokens;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number of tokens or \"auto\"")
            }

            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<ContextTokens, E> {
                Ok(ContextTokens::Tokens(n))
            }

            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<ContextTokens, E> {
                u64::try_from(n)
                    .map(ContextTokens::Tokens)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(n), &self))
            }

            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<ContextTokens, E> {
                match s {
                    "auto" => Ok(ContextTokens::Auto),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl Default for ProviderConfig {
    fn default() -> Self {
        ProviderConfig {
            kind: ProviderKind::Demo,
            base_url: "https://api.openai.com/v1".into(),
            model: "gpt-4o-mini".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            request_timeout_secs: 300,
            max_retries: 3,
            context_tokens: ContextTokens::Auto,
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum DecisionTimeout {
    #[default]
    ProceedUnapproved,
    Deny,
}

/// Which cards need a passkey to be answered (step-up).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum RequirePasskey {
    #[default]
    Off,
    /// Cards on the safety floor.
    Floor,
    /// Every card a person answers.
    All,
}

impl RequirePasskey {
    /// Whether answering a card of this `reason` needs a passkey.
    pub fn applies_to(self, reason: crate::protocol::GateReason) -> bool {
        match self {
            RequirePasskey::Off => false,
            RequirePasskey::Floor => reason == crate::protocol::GateReason::SafetyFloor,
            RequirePasskey::All => true,
        }
    }

    /// The mode a session stored in `stored` acts in while this setting holds: under `all`
    /// every card needs a passkey, so a mode that opens fewer cards than `ask` (`auto_edit`,
    /// `yolo`) acts as `ask`; `floor` cards are asked in every mode already. The one place the
    /// step-up meets the mode: the built-in turn, outside gates and a plan's execution mode.
    pub fn effective_mode(self, stored: Mode) -> Mode {
        match (self, stored) {
            (RequirePasskey::All, Mode::AutoEdit | Mode::Yolo) => Mode::Ask,
            (_, mode) => mode,
        }
    }

    /// Whether a standing rule may answer in place of a card: not under `all` (a rule spares a
    /// card, and every card needs a passkey there; rules made before the setting included).
    pub fn allows_rules(self) -> bool {
        self != RequirePasskey::All
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalsConfig {
    pub timeout_secs: u64,
    pub decision_timeout: DecisionTimeout,
    pub default_mode: Mode,
    /// `off`, `floor` or `all`: answering such a card needs a fresh passkey assertion.
    pub require_passkey: RequirePasskey,
    /// `[[approvals.route]]`: who may answer which card (first match wins); none, any approver.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub route: Vec<route::RouteConfig>,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig {
            timeout_secs: 1800,
            decision_timeout: DecisionTimeout::ProceedUnapproved,
            default_mode: Mode::Ask,
            require_passkey: RequirePasskey::Off,
            route: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SafetyConfig {
    pub paths: Vec<String>,
    pub commands: Vec<String>,
}

impl Default for SafetyConfig {
    fn default() -> Self {
        let strings = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect();
        SafetyConfig {
            paths: strings(&[
                "**/.env*",
                "**/*.pem",
                "**/*.key",
                "**/id_rsa*",
                "**/.git/**",
                "**/.ssh/**",
                "**/deploy*",
            ]),
            commands: strings(&[
                "rm -rf",
                "git push --force",
                "git push -f",
                "git push --delete",
                "git push --mirror",
                "| sh",
                "| bash",
                "| zsh",
                "| dash",
                "| ksh",
                "| python",
                "| perl",
                "| ruby",
                "| node",
                "sudo",
                "mkfs",
                "dd if=",
            ]),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetConfig {
    pub max_tool_calls: u64,
    pub max_turn_secs: u64,
    pub max_tokens: u64,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            max_tool_calls: 50,
            max_turn_secs: 600,
            max_tokens: 200_000,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    /// Empty: a SQLite file in the data directory. A secret: shown without its password.
    pub database_url: Secret<UrlPassword>,
    /// When a commit counts as done (SQLite, WAL): see `Synchronous`.
    pub synchronous: Synchronous,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ToolsConfig {
    pub shell_timeout_secs: u64,
    pub output_limit_bytes: usize,
    /// How many calls of one parallel batch run at once.
    pub max_parallel: usize,
    /// Environment variables tools may see besides `PATH`, `HOME`, `LANG`, `TERM` and
    /// `TMPDIR` (never the server's own: `COUNTERSIGN_*` and the provider's key).
    pub env_passthrough: Vec<String>,
    pub sandbox: SandboxConfig,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            shell_timeout_secs: 120,
            output_limit_bytes: 64 * 1024,
            max_parallel: 4,
            env_passthrough: Vec::new(),
            sandbox: SandboxConfig::default(),
        }
    }
}

/// Whether the processes tools start are confined, and to what.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Linux Landlock: write only the workspace and a private temp dir, read the workspace
    /// and the system's read-only folders.
    #[default]
    Landlock,
    /// No confinement: tools have the server's own file access. Only by explicit choice.
    Off,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum NetworkAccess {
    #[default]
    On,
    /// No TCP connect or bind (Landlock ABI 4, Linux 6.7+).
    Off,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    pub mode: SandboxMode,
    pub network: NetworkAccess,
    /// More folders tools may read (absolute paths).
    pub extra_read: Vec<String>,
    /// More folders tools may read and write (absolute paths).
    pub extra_write: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error(
        "invalid config file {path}: `safety.paths` entry `{pattern}` is not a valid glob: {message}"
    )]
    InvalidGlob {
        path: PathBuf,
        pattern: String,
        message: String,
    },
    #[error("unknown config key `{key}` (see `countersign config show` for every key)")]
    UnknownKey { key: String },
    #[error("`{key}` expects {expected}, not {got}")]
    WrongType {
        key: String,
        expected: &'static str,
        got: &'static str,
    },
    #[error("cannot write config file {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: `{key}` {problem}")]
    Invalid {
        path: PathBuf,
        key: &'static str,
        problem: &'static str,
    },
}

impl Config {
    /// No combination of settings makes a card unnecessary that the step-up requires: sessions
    /// may not start in a mode `approvals.require_passkey` forbids.
    fn validate_step_up(&self, path: &Path) -> Result<(), ConfigError> {
        let approvals = &self.approvals;
        if approvals
            .require_passkey
            .effective_mode(approvals.default_mode)
            != approvals.default_mode
        {
            return Err(ConfigError::Invalid {
                path: path.to_owned(),
                key: "approvals.default_mode",
                problem: "may not be `auto_edit` or `yolo` while `approvals.require_passkey = \"all\"` (every card needs a passkey, and those modes open fewer cards); use `ask` or `plan`, or change approvals.require_passkey",
            });
        }
        Ok(())
    }

    /// The secret keys and their values, for telling that one changed (their serialized form,
    /// from which listings and the audit are made, is masked).
    pub fn secrets(&self) -> [(&'static str, &str); 2] {
        [
            ("notify.webhook_url", self.notify.webhook_url.reveal()),
            ("storage.database_url", self.storage.database_url.reveal()),
        ]
    }

    /// Reads the file's table (empty when the file does not exist yet).
    pub fn read_table(path: &Path) -> Result<toml::Table, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => toml::from_str(&text).map_err(|e| ConfigError::Parse {
                path: path.to_owned(),
                message: e.to_string().trim().replace('\n', " "),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(toml::Table::new()),
            Err(source) => Err(ConfigError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// Writes the table atomically (temp file + rename), so a reader never sees half a file.
    pub fn write_table(path: &Path, table: &toml::Table) -> Result<(), ConfigError> {
        let write_err = |source| ConfigError::Write {
            path: path.to_owned(),
            source,
        };
        let text = toml::to_string_pretty(table).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let tmp = path.with_extension("toml.tmp");
        std::fs::write(&tmp, text).map_err(write_err)?;
        std::fs::rename(&tmp, path).map_err(write_err)
    }

    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Config::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string().trim().replace('\n', " "),
        })?;
        config.validate(path)?;
        Ok(config)
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        self.validate_step_up(path)?;
        let invalid = |key, problem| ConfigError::Invalid {
            path: path.to_owned(),
            key,
            problem,
        };
        if self.approvals.timeout_secs == 0 {
            return Err(invalid("approvals.timeout_secs", "must be at least 1"));
        }
        self.validate_tools()
            .map_err(|(key, problem)| invalid(key, problem))?;
        self.validate_urls()
            .map_err(|(key, problem)| invalid(key, problem))?;
        for pattern in &self.safety.paths {
            if let Err(e) = globset::Glob::new(pattern) {
                return Err(ConfigError::InvalidGlob {
                    path: path.to_owned(),
                    pattern: pattern.clone(),
                    message: e.to_string(),
                });
            }
        }
        self.validate_provider()
            .map_err(|(key, problem)| invalid(key, problem))?;
        self.validate_review()
            .map_err(|(key, problem)| invalid(key, problem))?;
        route::validate(&self.approvals.route).map_err(|(key, problem)| invalid(key, problem))?;
        self.auth
            .validate()
            .map_err(|(key, problem)| invalid(key, problem))
    }

    /// `[review]`: the thresholds may only be raised; a model reviewer's URL is a URL.
    fn validate_review(&self) -> Result<(), (&'static str, &'static str)> {
        let review = &self.review;
        if review.min_cards < MIN_REVIEW_CARDS {
            return Err((
                "review.min_cards",
                "may only be raised: it must be at least 50",
            ));
        }
        if review.min_agreement.is_nan() || review.min_agreement < MIN_REVIEW_AGREEMENT {
            return Err((
                "review.min_agreement",
                "may only be raised: it must be at least 0.97",
            ));
        }
        if review.min_agreement > 1.0 {
            return Err(("review.min_agreement", "must be at most 1"));
        }
        let url = &review.base_url;
        if !url.is_empty() && !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(("review.base_url", "must be an http:// or https:// URL"));
        }
        Ok(())
    }

    /// `[tools]`: limits of at least their least, variable names that are names and not the
    /// server's own, sandbox paths that are absolute. The key and the problem when not.
    fn validate_tools(&self) -> Result<(), (&'static str, &'static str)> {
        let tools = &self.tools;
        if tools.shell_timeout_secs == 0 {
            return Err(("tools.shell_timeout_secs", "must be at least 1"));
        }
        for name in &tools.env_passthrough {
            let valid = !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err((
                    "tools.env_passthrough",
                    "must list variable names (letters, digits, `_`)",
                ));
            }
            let oidc_secret = self
                .auth
                .oidc
                .as_ref()
                .is_some_and(|o| *name == o.client_secret_env);
            if name.starts_with("COUNTERSIGN_") || *name == self.provider.api_key_env || oidc_secret
            {
                return Err((
                    "tools.env_passthrough",
                    "may not pass the server's own variables (COUNTERSIGN_*, the provider key, the sign-in provider's client secret) to tools",
                ));
            }
        }
        let sandbox = &tools.sandbox;
        if sandbox
            .extra_read
            .iter()
            .chain(&sandbox.extra_write)
            .any(|p| !Path::new(p).is_absolute())
        {
            return Err((
                "tools.sandbox.extra_read",
                "and `tools.sandbox.extra_write` must hold absolute paths",
            ));
        }
        if tools.max_parallel == 0 {
            return Err(("tools.max_parallel", "must be at least 1"));
        }
        if tools.output_limit_bytes < 1024 {
            return Err(("tools.output_limit_bytes", "must be at least 1024"));
        }
        Ok(())
    }

    /// The URLs the server gives out or posts to: `http://` or `https://`.
    fn validate_urls(&self) -> Result<(), (&'static str, &'static str)> {
        let http_url = |url: &str| url.starts_with("http://") || url.starts_with("https://");
        if !self.server.public_url.is_empty() && !http_url(&self.server.public_url) {
            return Err(("server.public_url", "must be an http:// or https:// URL"));
        }
        if !self.notify.webhook_url.is_empty() && !http_url(self.notify.webhook_url.reveal()) {
            return Err(("notify.webhook_url", "must be an http:// or https:// URL"));
        }
        Ok(())
    }

    /// `[provider]`: an OpenAI-compatible one needs a URL and a model; a context of a size a
    /// turn fits in.
    fn validate_provider(&self) -> Result<(), (&'static str, &'static str)> {
        let provider = &self.provider;
        if provider.kind == ProviderKind::Openai {
            if !(provider.base_url.starts_with("http://")
                || provider.base_url.starts_with("https://"))
            {
                return Err(("provider.base_url", "must be an http:// or https:// URL"));
            }
            if provider.model.trim().is_empty() {
                return Err(("provider.model", "must name a model"));
            }
        }
        if let ContextTokens::Tokens(n) = provider.context_tokens
            && n < MIN_CONTEXT_TOKENS
        {
            return Err((
                "provider.context_tokens",
                "must be at least 4096 tokens (the prompt and the tools' descriptions take about 1,000), or \"auto\"",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("c.toml"))
    }

    /// Under `all` no mode opens fewer cards than `ask`; `floor` and `off` leave the mode
    /// alone (floor cards are asked in every mode already), and plan stays plan.
    #[test]
    fn the_step_up_holds_every_mode_to_what_it_allows() {
        use Mode::*;
        for mode in [Plan, Ask, AutoEdit, Yolo] {
            assert_eq!(RequirePasskey::Off.effective_mode(mode), mode);
            assert_eq!(RequirePasskey::Floor.effective_mode(mode), mode);
        }
        let all: Vec<Mode> = [Plan, Ask, AutoEdit, Yolo]
            .into_iter()
            .map(|m| RequirePasskey::All.effective_mode(m))
            .collect();
        assert_eq!(all, [Plan, Ask, Ask, Ask]);
        assert!(parse("[approvals]\nrequire_passkey = \"all\"\ndefault_mode = \"plan\"\n").is_ok());
        assert!(
            parse("[approvals]\nrequire_passkey = \"floor\"\ndefault_mode = \"yolo\"\n").is_ok()
        );
    }

    /// The sign-in provider's client secret is the server's own, like the model's key: no
    /// tool gets it.
    #[test]
    fn the_client_secret_is_never_passed_to_tools() {
        let oidc = "[auth.oidc]\nissuer = \"https://id.example.com\"\nclient_id = \"c\"\nclient_secret_env = \"OIDC_SECRET\"\n";
        assert!(parse(&format!("[tools]\nenv_passthrough = [\"OTHER\"]\n{oidc}")).is_ok());
        match parse(&format!(
            "[tools]\nenv_passthrough = [\"OIDC_SECRET\"]\n{oidc}"
        )) {
            Err(ConfigError::Invalid { key, .. }) => assert_eq!(key, "tools.env_passthrough"),
            other => panic!("{other:?}"),
        }
    }

    /// The reviewer's thresholds may only be raised, its mode only be set in the file.
    #[test]
    fn review_thresholds_may_only_be_raised() {
        let c = parse("").unwrap().review;
        assert_eq!(
            (c.mode, c.reviewer),
            (ReviewMode::Off, ReviewerKind::History)
        );
        assert_eq!((c.min_cards, c.min_agreement), (50, 0.97));
        let raised = parse("[review]\nmode = \"on\"\nmin_cards = 80\nmin_agreement = 1\n")
            .unwrap()
            .review;
        assert_eq!((raised.mode, raised.min_cards), (ReviewMode::On, 80));
        for (bad, says) in [
            ("min_cards = 49", "`review.min_cards` may only be raised"),
            (
                "min_agreement = 0.9",
                "`review.min_agreement` may only be raised",
            ),
            (
                "min_agreement = 1.01",
                "`review.min_agreement` must be at most 1",
            ),
            (
                "base_url = \"ftp://x\"",
                "`review.base_url` must be an http",
            ),
        ] {
            let e = parse(&format!("[review]\n{bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert!(parse("[review]\nmode = \"sometimes\"\n").is_err());
        for key in [
            "review.mode",
            "review.reviewer",
            "review.min_cards",
            "review.api_key_env",
        ] {
            assert!(keys::protected(key).is_some(), "{key}");
        }
    }

    /// `[auth.oidc]` loads from the file, a non-loopback `http` issuer is refused naming the
    /// key, and every `auth.*` key is protected from the web, the API and the agent.
    #[test]
    fn the_sign_in_provider_loads_is_checked_and_is_protected() {
        let good = "[auth.oidc]\nissuer = \"https://id.example.com\"\nclient_id = \"cs\"\nclient_secret_env = \"OIDC_SECRET\"\n";
        let config = parse(good).unwrap();
        let oidc = config.auth.oidc.unwrap();
        assert_eq!(oidc.name, auth::DEFAULT_PROVIDER_NAME);
        assert!(oidc.allowed_domains.is_empty());
        let e = parse(&good.replace("https://id.example.com", "http://id.example.com"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`auth.oidc.issuer` must be an https:// URL"),
            "{e}"
        );
        assert!(parse("[auth.oidc]\nissuer = \"https://x.example\"\n").is_err());
        for key in [
            "auth.oidc.issuer",
            "auth.oidc.client_id",
            "auth.oidc.client_secret_env",
            "auth.oidc.allowed_domains",
        ] {
            assert!(keys::protected(key).is_some(), "{key}");
        }
    }

    /// The model reviewer falls back to the provider's endpoint, model and key variable.
    #[test]
    fn the_review_endpoint_falls_back_to_the_providers() {
        let c =
            parse("[provider]\nmodel = \"m\"\n[review]\nbase_url = \"http://127.0.0.1:9/v1\"\n")
                .unwrap();
        let endpoint = c.review_endpoint();
        assert_eq!(endpoint.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(endpoint.model, "m");
        assert_eq!(endpoint.api_key_env, "OPENAI_API_KEY");
    }

    #[test]
    fn empty_file_gives_defaults() {
        let c = parse("").unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.approvals.timeout_secs, 1800);
        assert_eq!(c.provider.kind, ProviderKind::Demo);
    }

    #[test]
    fn protocol_keys_parse() {
        let c = parse(
            r#"
            [provider]
            kind = "openai"
            base_url = "http://127.0.0.1:9/v1"
            model = "m"
            api_key_env = "K"
            [approvals]
            timeout_secs = 2
            decision_timeout = "deny"
            default_mode = "auto_edit"
            [safety]
            paths = []
            commands = ["rm -rf"]
            [budget]
            max_tool_calls = 3
            "#,
        )
        .unwrap();
        assert_eq!(c.provider.kind, ProviderKind::Openai);
        assert_eq!(c.approvals.default_mode, Mode::AutoEdit);
        assert_eq!(c.approvals.decision_timeout, DecisionTimeout::Deny);
        assert!(c.safety.paths.is_empty());
        assert_eq!(c.budget.max_tool_calls, 3);
        assert_eq!(c.budget.max_turn_secs, 600);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let e = parse("[approvals]\ntimeout_sec = 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("timeout_sec"), "{e}");
        let e = parse("[approvals]\ntimeout_secs = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("timeout_secs"), "{e}");
        let e = parse("[approvals]\ntimeout_secs = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("approvals.timeout_secs"), "{e}");
        let e = parse("[storage]\nsynchronous = \"sometimes\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("synchronous") || e.contains("sometimes"), "{e}");
        let normal = parse("[storage]\nsynchronous = \"normal\"\n").unwrap();
        assert_eq!(normal.storage.synchronous, Synchronous::Normal);
        assert_eq!(Config::default().storage.synchronous, Synchronous::Full);
        let e = parse("[approvals]\ndefault_mode = \"sometimes\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("default_mode") || e.contains("sometimes"), "{e}");
    }

    #[test]
    fn context_tokens_is_auto_or_a_real_window() {
        let auto = parse("").unwrap().provider;
        assert_eq!(auto.context_tokens, ContextTokens::Auto);
        assert_eq!(auto.context_tokens.resolve("gpt-4o-mini"), 128_000);
        assert_eq!(auto.context_tokens.resolve("gpt-4.1"), 1_047_576);
        assert_eq!(auto.context_tokens.resolve("o3-mini"), 200_000);
        assert_eq!(auto.context_tokens.resolve("llama3.1:8b"), 32_768);
        let set = parse("[provider]\ncontext_tokens = 8192\n")
            .unwrap()
            .provider;
        assert_eq!(set.context_tokens, ContextTokens::Tokens(8192));
        assert_eq!(set.context_tokens.resolve("gpt-4o"), 8192);
        let again = parse("[provider]\ncontext_tokens = \"auto\"\n").unwrap();
        assert_eq!(again.provider.context_tokens, ContextTokens::Auto);
        for bad in ["0", "100", "4095"] {
            let e = parse(&format!("[provider]\ncontext_tokens = {bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("`provider.context_tokens` must be at least 4096 tokens"),
                "{bad}: {e}"
            );
        }
        for bad in ["-1", "\"big\"", "1.5", "true"] {
            let e = parse(&format!("[provider]\ncontext_tokens = {bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("context_tokens") && e.contains("a number of tokens or \"auto\""),
                "{bad}: {e}"
            );
        }
        // Listed as the file writes it, and settable as a number or back to "auto".
        assert_eq!(
            keys::get(&Config::default(), "provider.context_tokens"),
            Some(toml::Value::String("auto".into()))
        );
        let path = Path::new("c.toml");
        let table = toml::Table::new();
        let (_, c) = keys::with_key(
            &table,
            "provider.context_tokens",
            toml::Value::Integer(65_536),
            path,
        )
        .unwrap();
        assert_eq!(c.provider.context_tokens, ContextTokens::Tokens(65_536));
        let e = keys::with_key(
            &table,
            "provider.context_tokens",
            toml::Value::Integer(0),
            path,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("at least 4096"), "{e}");
        let e = keys::with_key(
            &table,
            "provider.context_tokens",
            toml::Value::Boolean(true),
            path,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("expects a number or \"auto\""), "{e}");
        let big = toml::Value::String("big".into());
        let e = keys::with_key(&table, "provider.context_tokens", big, path)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "`provider.context_tokens` expects a number or \"auto\", not another string"
            ),
            "{e}"
        );
    }
}

/// Dotted keys (`approvals.timeout_secs`) over the TOML form of the config: listing, reading,
/// writing one, and which ones the web and the agent may not change.
pub mod keys {
    use super::{Config, ConfigError};
    use std::path::Path;

    /// Why the web UI, the API and the agent may not change a key (the file and the local CLI
    /// still can). `None`: the key may be changed.
    pub fn protected(key: &str) -> Option<&'static str> {
        let section = key.split('.').next().unwrap_or("");
        match (section, key) {
            ("approvals", _) => Some("approval settings decide what needs your countersignature"),
            ("safety", _) => Some("the safety floor can only be changed in the config file"),
            ("budget", _) => Some("the budget kill-switch can only be changed in the config file"),
            ("storage", _) => {
                Some("storage can only be changed in the config file (restart needed)")
            }
            (_, "provider.api_key_env") => {
                Some("provider secrets can only be changed in the config file")
            }
            (_, "provider.base_url") => {
                Some("where the model is called can only be changed in the config file")
            }
            ("notify", _) | (_, "server.public_url") => {
                Some("where notifications and card links go can only be changed in the config file")
            }
            ("review", _) => Some(
                "whether a reviewer may answer for you is yours alone: change it in the config file",
            ),
            ("auth", _) => Some("who may sign in can only be changed in the config file"),
            ("tools", _) if key.starts_with("tools.sandbox.") || key == "tools.env_passthrough" => {
                Some("what tools can reach can only be changed in the config file")
            }
            _ => None,
        }
    }

    /// Keys that take effect only after a restart.
    pub fn needs_restart(key: &str) -> bool {
        key.starts_with("storage.")
    }

    fn flatten(prefix: &str, value: &toml::Value, out: &mut Vec<(String, toml::Value)>) {
        match value {
            toml::Value::Table(table) => {
                for (k, v) in table {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    flatten(&key, v, out);
                }
            }
            other => out.push((prefix.to_owned(), other.clone())),
        }
    }

    /// Every key of `config` with its value, in file order.
    pub fn entries(config: &Config) -> Vec<(String, toml::Value)> {
        let mut out = Vec::new();
        if let Ok(value) = toml::Value::try_from(config) {
            flatten("", &value, &mut out);
        }
        out
    }

    /// The keys a file sets explicitly.
    pub fn set_in(table: &toml::Table) -> Vec<String> {
        let mut out = Vec::new();
        flatten("", &toml::Value::Table(table.clone()), &mut out);
        out.into_iter().map(|(k, _)| k).collect()
    }

    pub fn get(config: &Config, key: &str) -> Option<toml::Value> {
        entries(config)
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// A value typed on a command line: TOML if it parses (`30`, `true`, `["a"]`, `"x"`), else
    /// the text itself as a string.
    pub fn parse_value(raw: &str) -> toml::Value {
        toml::from_str::<toml::Table>(&format!("v = {raw}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(raw.to_owned()))
    }

    /// A JSON value from the API as TOML (null is not a TOML value).
    pub fn from_json(value: &serde_json::Value) -> Option<toml::Value> {
        match value {
            serde_json::Value::Null => None,
            serde_json::Value::Bool(b) => Some(toml::Value::Boolean(*b)),
            serde_json::Value::Number(n) => n
                .as_i64()
                .map(toml::Value::Integer)
                .or_else(|| n.as_f64().map(toml::Value::Float)),
            serde_json::Value::String(s) => Some(toml::Value::String(s.clone())),
            serde_json::Value::Array(items) => items
                .iter()
                .map(from_json)
                .collect::<Option<Vec<_>>>()
                .map(toml::Value::Array),
            serde_json::Value::Object(map) => map
                .iter()
                .map(|(k, v)| from_json(v).map(|v| (k.clone(), v)))
                .collect::<Option<toml::Table>>()
                .map(toml::Value::Table),
        }
    }

    /// The file's table with `key` set to `value`, checked against the schema. The error
    /// names the key and what it expects.
    pub fn with_key(
        table: &toml::Table,
        key: &str,
        value: toml::Value,
        path: &Path,
    ) -> Result<(toml::Table, Config), ConfigError> {
        let defaults = Config::default();
        let Some(current) = get(&defaults, key) else {
            return Err(ConfigError::UnknownKey {
                key: key.to_owned(),
            });
        };
        same_type(key, &current, &value)?;
        let mut table = table.clone();
        let mut parts: Vec<&str> = key.split('.').collect();
        let leaf = parts.pop().unwrap_or(key);
        let mut node = &mut table;
        for part in parts {
            let entry = node
                .entry(part.to_owned())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            let toml::Value::Table(inner) = entry else {
                return Err(ConfigError::UnknownKey {
                    key: key.to_owned(),
                });
            };
            node = inner;
        }
        node.insert(leaf.to_owned(), value);
        let text = toml::to_string(&table).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let config = Config::parse(&text, path)?;
        Ok((table, config))
    }
    /// Refuses a value not of the key's type (a float key takes an integer; a key whose default
    /// is "auto", `provider.context_tokens`, also takes a number).
    fn same_type(key: &str, current: &toml::Value, value: &toml::Value) -> Result<(), ConfigError> {
        let auto_key = matches!(current, toml::Value::String(auto) if auto == "auto");
        let auto_or_number = auto_key && matches!(value, toml::Value::Integer(_));
        if auto_key && matches!(value, toml::Value::String(s) if s != "auto") {
            return Err(ConfigError::WrongType {
                key: key.to_owned(),
                expected: "a number or \"auto\"",
                got: "another string",
            });
        }
        if std::mem::discriminant(current) != std::mem::discriminant(value)
            && !auto_or_number
            && !matches!(
                (current, value),
                (toml::Value::Float(_), toml::Value::Integer(_))
            )
        {
            return Err(ConfigError::WrongType {
                key: key.to_owned(),
                expected: if auto_key {
                    "a number or \"auto\""
                } else {
                    type_name(current)
                },
                got: type_name(value),
            });
        }
        Ok(())
    }

    pub fn type_name(value: &toml::Value) -> &'static str {
        match value {
            toml::Value::String(_) => "a string",
            toml::Value::Integer(_) => "an integer",
            toml::Value::Float(_) => "a number",
            toml::Value::Boolean(_) => "true or false",
            toml::Value::Datetime(_) => "a date",
            toml::Value::Array(_) => "a list",
            toml::Value::Table(_) => "a table",
        }
    }

    /// The value as a person would type it in the file.
    pub fn display(value: &toml::Value) -> String {
        match value {
            toml::Value::String(s) => format!("{s:?}"),
            other => other.to_string(),
        }
    }
}
