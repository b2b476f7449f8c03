//! The configuration through the API and the UI: read it with where each value came from, and
//! change one key (protected keys refused), audited with the credential that asked.

use serde_json::Value;

use super::{Core, Error};
use crate::protocol::{ConfigKey, ConfigSource, ConfigView};
use crate::server::config::{Config, ContextTokens, ProviderKind, form, keys};
use crate::server::live::{Changes, Live, change};

fn toml_to_json(value: &toml::Value) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// What `provider.context_tokens = "auto"` stands for with the model in force.
fn note(config: &Config, key: &str) -> Option<String> {
    let provider = &config.provider;
    if key != "provider.context_tokens" || provider.context_tokens != ContextTokens::Auto {
        return None;
    }
    let tokens = provider.context_tokens.resolve(&provider.model);
    let known = crate::server::conversation::tokens::known_context(&provider.model).is_some();
    let why = if known {
        format!("the window of {}", provider.model)
    } else {
        format!("no window known for {}", provider.model)
    };
    let unused = if provider.kind == ProviderKind::Demo {
        "; the demo provider does not use it"
    } else {
        ""
    };
    Some(format!(
        "auto: {} tokens ({why}){unused}",
        crate::text::thousands(tokens)
    ))
}

/// A setting fixed when the server started (flag, environment or default): shown, never
/// changed here.
fn startup_key((key, value, source): &(String, String, ConfigSource)) -> ConfigKey {
    ConfigKey {
        key: key.clone(),
        value: Value::String(value.clone()),
        default: None,
        source: *source,
        protected: true,
        reason: Some("set when the server starts (flag, environment or default)".into()),
        restart_required: true,
        note: None,
        input: crate::protocol::ConfigInput::Text,
        options: Vec::new(),
        unit: None,
    }
}

/// One key of the config in force: its value, its default, whether the file sets it, and how
/// the page edits it.
fn config_key(
    live: &Live,
    defaults: &[(String, toml::Value)],
    key: String,
    value: &toml::Value,
) -> ConfigKey {
    let default = defaults
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| toml_to_json(v));
    let (input, options, unit) = form::wire(&key);
    let source = if live.file_keys.contains(&key) {
        ConfigSource::File
    } else {
        ConfigSource::Default
    };
    ConfigKey {
        // Secrets are masked by their type (`server::secret`) in this form.
        value: toml_to_json(value),
        default,
        source,
        protected: keys::protected(&key).is_some(),
        reason: keys::protected(&key).map(str::to_owned),
        restart_required: keys::needs_restart(&key),
        note: note(&live.config, &key),
        input,
        options,
        unit,
        key,
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
        Ok(change::set(
            &self.live,
            self.repos.audit.as_ref(),
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
        let startup = self.live.startup.iter().map(startup_key);
        let keys: Vec<ConfigKey> = keys::entries(&live.config)
            .into_iter()
            .map(|(key, value)| config_key(&live, &defaults, key, &value))
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
