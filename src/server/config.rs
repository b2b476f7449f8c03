//! The TOML configuration: a typed schema with defaults, validated on load.
//!
//! Unknown keys are errors (a typo must not silently fall back to a default), and every error
//! names the key and what was expected.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::protocol::Mode;

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub provider: ProviderConfig,
    pub approvals: ApprovalsConfig,
    pub safety: SafetyConfig,
    pub budget: BudgetConfig,
    pub storage: StorageConfig,
    pub tools: ToolsConfig,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    #[default]
    Demo,
    Openai,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    /// The name of the environment variable holding the key; the key itself never sits here.
    pub api_key_env: String,
    pub request_timeout_secs: u64,
}

impl Default for ProviderConfig {
    fn default() -> Self {
        ProviderConfig {
            kind: ProviderKind::Demo,
            base_url: "https://api.openai.com/v1".into(),
            model: "gpt-4o-mini".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            request_timeout_secs: 300,
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum DecisionTimeout {
    #[default]
    ProceedUnapproved,
    Deny,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalsConfig {
    pub timeout_secs: u64,
    pub decision_timeout: DecisionTimeout,
    pub default_mode: Mode,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig {
            timeout_secs: 1800,
            decision_timeout: DecisionTimeout::ProceedUnapproved,
            default_mode: Mode::Ask,
        }
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
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
                "| sh",
                "| bash",
                "sudo",
                "mkfs",
                "dd if=",
            ]),
        }
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
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

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    /// Empty: a SQLite file in the data directory.
    pub database_url: String,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ToolsConfig {
    pub shell_timeout_secs: u64,
    pub output_limit_bytes: usize,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            shell_timeout_secs: 120,
            output_limit_bytes: 64 * 1024,
        }
    }
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
    #[error("invalid config file {path}: `{key}` {problem}")]
    Invalid {
        path: PathBuf,
        key: &'static str,
        problem: &'static str,
    },
}

impl Config {
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
        let invalid = |key, problem| ConfigError::Invalid {
            path: path.to_owned(),
            key,
            problem,
        };
        if self.approvals.timeout_secs == 0 {
            return Err(invalid("approvals.timeout_secs", "must be at least 1"));
        }
        if self.tools.shell_timeout_secs == 0 {
            return Err(invalid("tools.shell_timeout_secs", "must be at least 1"));
        }
        if self.tools.output_limit_bytes < 1024 {
            return Err(invalid("tools.output_limit_bytes", "must be at least 1024"));
        }
        for pattern in &self.safety.paths {
            if let Err(e) = globset::Glob::new(pattern) {
                return Err(ConfigError::InvalidGlob {
                    path: path.to_owned(),
                    pattern: pattern.clone(),
                    message: e.to_string(),
                });
            }
        }
        if self.provider.kind == ProviderKind::Openai {
            if !(self.provider.base_url.starts_with("http://")
                || self.provider.base_url.starts_with("https://"))
            {
                return Err(invalid(
                    "provider.base_url",
                    "must be an http:// or https:// URL",
                ));
            }
            if self.provider.model.trim().is_empty() {
                return Err(invalid("provider.model", "must name a model"));
            }
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
        let e = parse("[approvals]\ndefault_mode = \"sometimes\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("default_mode") || e.contains("sometimes"), "{e}");
    }
}
