//! The core operations on the configuration: read it with where each value came from, change
//! one key (web, API or agent; protected keys refused), and apply a reloaded file — every
//! change audited.

use serde_json::{Value, json};

use super::audit::AuditDraft;
use super::config::{ConfigError, keys};
use super::core::Core;
use super::error::ApiError;
use super::live_config::Changes;

fn config_error(err: ConfigError) -> ApiError {
    match err {
        ConfigError::Read { .. } | ConfigError::Write { .. } => {
            tracing::error!(error = %err, "config file not writable");
            ApiError::StorageUnavailable
        }
        other => ApiError::InvalidValue(other.to_string()),
    }
}

impl Core {
    async fn audit_changes(&self, changes: &Changes, actor: &str, via: &str) {
        let drafts = changes
            .iter()
            .map(|(key, previous, value)| AuditDraft {
                actor: actor.to_owned(),
                action: "config_changed",
                subject: key.clone(),
                detail: json!({
                    "previous": keys::display(previous),
                    "value": keys::display(value),
                    "via": via,
                }),
            })
            .collect();
        if let Err(err) = self.hub.store().append_audit(drafts).await {
            tracing::error!(error = %err, "could not audit a config change");
        }
    }

    /// Applies the file after it changed on disk; an invalid file keeps the last good config.
    pub async fn reload_config(&self) {
        match self.live.reload() {
            Ok(changes) if !changes.is_empty() => {
                tracing::info!(changed = changes.len(), "config reloaded");
                self.audit_changes(&changes, "file", "file").await;
            }
            Ok(_) => {}
            Err(_) => {} // logged and recorded by LiveConfig
        }
    }

    /// Checks a change the agent or a person proposes, without applying it.
    pub fn check_config_change(&self, key: &str, value: &Value) -> Result<(), ApiError> {
        if let Some(reason) = keys::protected(key) {
            return Err(ApiError::ProtectedKey(format!(
                "`{key}` is protected: {reason}"
            )));
        }
        let value = keys::from_json(value)
            .ok_or_else(|| ApiError::InvalidValue(format!("`{key}` needs a value")))?;
        self.live
            .check(key, value)
            .map(|_| ())
            .map_err(config_error)
    }

    /// Sets one key (from the web, the API or an approved `config_set`) and applies it.
    pub async fn set_config(
        &self,
        key: &str,
        value: &Value,
        actor: &str,
        via: &str,
    ) -> Result<Changes, ApiError> {
        self.check_config_change(key, value)?;
        let value = keys::from_json(value)
            .ok_or_else(|| ApiError::InvalidValue(format!("`{key}` needs a value")))?;
        let changes = self.live.set(key, value).await.map_err(config_error)?;
        self.audit_changes(&changes, actor, via).await;
        Ok(changes)
    }

    /// The resolved config: every key with its value, default, source and whether it may be
    /// changed here. Nothing secret is in the file (keys come from the environment), and the
    /// provider key is shown only as set or unset.
    pub fn config_view(&self) -> Value {
        let live = self.config();
        let defaults = keys::entries(&super::config::Config::default());
        let startup = self.live.startup.iter().map(|(key, value, source)| {
            json!({
                "key": key, "value": value, "default": null, "source": source,
                "protected": true,
                "reason": "set when the server starts (flag, environment or default)",
                "restart_required": true,
            })
        });
        let entries: Vec<Value> = keys::entries(&live.config)
            .into_iter()
            .map(|(key, value)| {
                let default = defaults
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| v.clone());
                let source = if live.file_keys.contains(&key) {
                    "file"
                } else {
                    "default"
                };
                json!({
                    "key": key,
                    "value": toml_to_json(&value),
                    "default": default.as_ref().map(toml_to_json),
                    "source": source,
                    "protected": keys::protected(&key).is_some(),
                    "reason": keys::protected(&key),
                    "restart_required": keys::needs_restart(&key),
                })
            })
            .chain(startup)
            .collect();
        let key_set = std::env::var(&live.config.provider.api_key_env)
            .map(|k| !k.trim().is_empty())
            .unwrap_or(false);
        json!({
            "path": self.live.path.display().to_string(),
            "error": live.error,
            "provider_api_key": if key_set { "set (masked)" } else { "not set" },
            "keys": entries,
        })
    }
}

fn toml_to_json(value: &toml::Value) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
