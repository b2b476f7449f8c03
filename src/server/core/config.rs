//! The configuration through the API and the UI: read it with where each value came from, and
//! change one key (protected keys refused), audited with the credential that asked.

use serde_json::Value;

use super::{Core, Error};
use crate::protocol::{ConfigKey, ConfigSource, ConfigView};
use crate::server::config::live::Changes;
use crate::server::config::{Config, keys, ops};

fn toml_to_json(value: &toml::Value) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A webhook URL often is the secret (Slack's, an ntfy topic): only its host is shown.
const MASKED_KEYS: [&str; 1] = ["notify.webhook_url"];

/// A database URL may carry its password (`postgres://user:secret@host/db`): that part is
/// masked, the rest (which database) is shown.
const DATABASE_URL_KEY: &str = "storage.database_url";

/// The URL with the password of its user info (if any) masked.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:(masked)@{host}{path}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

fn shown(key: &str, value: &toml::Value) -> Value {
    match value.as_str() {
        Some(url) if key == DATABASE_URL_KEY => Value::String(without_password(url)),
        Some(url) if MASKED_KEYS.contains(&key) && !url.is_empty() => {
            let host = url
                .split("://")
                .nth(1)
                .and_then(|rest| rest.split('/').next())
                .unwrap_or("");
            Value::String(format!("set: {host}/… (masked)"))
        }
        _ => toml_to_json(value),
    }
}

impl Core {
    /// Sets one key from the web or the API (`actor` from the credential, `via` the door).
    pub async fn set_config(
        &self,
        key: &str,
        value: &Value,
        actor: &str,
        via: &str,
    ) -> Result<Changes, Error> {
        Ok(ops::set(
            &self.live,
            self.hub.store().as_ref(),
            key,
            value,
            actor,
            via,
        )
        .await?)
    }

    /// The resolved config: every key with its value, default, source and whether it may be
    /// changed here. Nothing secret is in the file (keys come from the environment), and the
    /// provider key is shown only as set or unset.
    pub fn config_view(&self) -> ConfigView {
        let live = self.config();
        let defaults = keys::entries(&Config::default());
        let startup = self
            .live
            .startup
            .iter()
            .map(|(key, value, source)| ConfigKey {
                key: key.clone(),
                value: Value::String(value.clone()),
                default: None,
                source: *source,
                protected: true,
                reason: Some("set when the server starts (flag, environment or default)".into()),
                restart_required: true,
            });
        let keys: Vec<ConfigKey> = keys::entries(&live.config)
            .into_iter()
            .map(|(key, value)| {
                let default = defaults
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| toml_to_json(v));
                let source = if live.file_keys.contains(&key) {
                    ConfigSource::File
                } else {
                    ConfigSource::Default
                };
                ConfigKey {
                    value: shown(&key, &value),
                    default,
                    source,
                    protected: keys::protected(&key).is_some(),
                    reason: keys::protected(&key).map(str::to_owned),
                    restart_required: keys::needs_restart(&key),
                    key,
                }
            })
            .chain(startup)
            .collect();
        let key_set = std::env::var(&live.config.provider.api_key_env)
            .map(|k| !k.trim().is_empty())
            .unwrap_or(false);
        ConfigView {
            path: self.live.path.display().to_string(),
            error: live.error.clone(),
            provider_api_key: if key_set { "set (masked)" } else { "not set" }.to_owned(),
            keys,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_password_is_never_shown() {
        let shown_url = |url: &str| shown(DATABASE_URL_KEY, &toml::Value::String(url.into()));
        assert_eq!(
            shown_url("postgres://cs:s3cret@db.internal:5432/countersign"),
            "postgres://cs:(masked)@db.internal:5432/countersign"
        );
        assert_eq!(
            shown_url("postgres://cs@db.internal/countersign"),
            "postgres://cs@db.internal/countersign"
        );
        assert_eq!(
            shown_url("sqlite:///data/countersign.db"),
            "sqlite:///data/countersign.db"
        );
        assert_eq!(shown_url(""), "");
    }
}
