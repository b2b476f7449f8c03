//! Changing the configuration in force: check a proposed key (protected keys refused), set
//! one (file written, applied at once), apply a file that changed on disk — every change
//! audited with who made it. Used alike by the API, the UI and the agent's `config_set`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Changes, LiveConfig};
use crate::server::audit::AuditDraft;
use crate::server::config::{ConfigError, keys};
use crate::server::store::AuditRepo;
use crate::server::tools::{self, AGENT_KEYS, Refusal, ToolError};

/// Why a change was not made.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// A key the web, the API and the agent may not change.
    #[error("{0}")]
    Protected(String),
    /// Not a key, or not a value it takes.
    #[error("{0}")]
    Invalid(String),
    /// The file could not be read or written.
    #[error("{0}")]
    Unwritable(String),
}

fn change_error(err: ConfigError) -> ChangeError {
    // A parse error quotes the file's line, which may hold a secret URL.
    let message = crate::server::secret::scrub_urls(&err.to_string());
    match err {
        ConfigError::Read { .. } | ConfigError::Write { .. } => {
            tracing::error!(error = %message, "config file not writable");
            ChangeError::Unwritable(message)
        }
        _ => ChangeError::Invalid(message),
    }
}

async fn audit(audit_log: &dyn AuditRepo, changes: &Changes, actor: &str, via: &str) {
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
    if let Err(err) = audit_log.append_audit(drafts).await {
        tracing::error!(error = %err, "could not audit a config change");
    }
}

/// Checks a change the agent or a person proposes, without applying it.
pub fn check(live: &LiveConfig, key: &str, value: &Value) -> Result<(), ChangeError> {
    if let Some(reason) = keys::protected(key) {
        return Err(ChangeError::Protected(format!(
            "`{key}` is protected: {reason}"
        )));
    }
    let value = keys::from_json(value)
        .ok_or_else(|| ChangeError::Invalid(format!("`{key}` needs a value")))?;
    live.check(key, value).map(|_| ()).map_err(change_error)
}

/// Sets one key (from the web, the API or an approved `config_set`) and applies it; `actor`
/// is who (from the credential, or `agent`), `via` the door.
pub async fn set(
    live: &LiveConfig,
    audit_log: &dyn AuditRepo,
    key: &str,
    value: &Value,
    actor: &str,
    via: &str,
) -> Result<Changes, ChangeError> {
    // The key's own checks; the value is checked against the file by `LiveConfig::set`, off
    // the async workers.
    if let Some(reason) = keys::protected(key) {
        return Err(ChangeError::Protected(format!(
            "`{key}` is protected: {reason}"
        )));
    }
    let value = keys::from_json(value)
        .ok_or_else(|| ChangeError::Invalid(format!("`{key}` needs a value")))?;
    let changes = live.set(key, value).await.map_err(change_error)?;
    audit(audit_log, &changes, actor, via).await;
    Ok(changes)
}

/// Checks a change the agent proposes: one of [`AGENT_KEYS`], a value the key takes, and no
/// higher than the value in force (the agent can only tighten its own limits).
pub fn check_for_agent(live: &LiveConfig, key: &str, value: &Value) -> Result<(), ChangeError> {
    if let Some(reason) = keys::protected(key) {
        return Err(ChangeError::Protected(format!(
            "`{key}` is protected: {reason}"
        )));
    }
    if !AGENT_KEYS.contains(&key) {
        return Err(ChangeError::Protected(format!(
            "`{key}` is not the agent's to change (it may only lower {})",
            AGENT_KEYS.join(", ")
        )));
    }
    check(live, key, value)?;
    let current = keys::get(&live.get().config, key).and_then(|v| v.as_integer());
    let proposed = keys::from_json(value).and_then(|v| v.as_integer());
    match (current, proposed) {
        (Some(now), Some(wanted)) if wanted <= now => Ok(()),
        (Some(now), Some(wanted)) => Err(ChangeError::Protected(format!(
            "the agent may only lower `{key}` (now {now}); {wanted} would raise it — a person can, on the Config page or in the file"
        ))),
        _ => Err(ChangeError::Invalid(format!(
            "`{key}` takes a whole number"
        ))),
    }
}

/// The settings as the agent's `config_set` reaches them: only [`AGENT_KEYS`], only lowered,
/// checked again when the change is made, and audited as the agent's.
pub struct AgentSettings {
    live: Arc<LiveConfig>,
    audit_log: Arc<dyn AuditRepo>,
}

impl AgentSettings {
    pub fn new(live: Arc<LiveConfig>, audit_log: Arc<dyn AuditRepo>) -> Self {
        AgentSettings { live, audit_log }
    }
}

#[async_trait]
impl tools::Settings for AgentSettings {
    fn check(&self, key: &str, value: &Value) -> Result<(), Refusal> {
        check_for_agent(&self.live, key, value).map_err(|err| match err {
            ChangeError::Protected(why) => Refusal::Refused(why),
            other => Refusal::Invalid(ToolError::InvalidArgs(other.to_string())),
        })
    }

    async fn set_as_agent(&self, key: &str, value: &Value, via: &str) -> Result<String, String> {
        // Again now: a person may have lowered the limit while the card waited. (It reads
        // the file: off the async workers.)
        let (live, key_owned, value_owned) =
            (Arc::clone(&self.live), key.to_owned(), value.clone());
        tokio::task::spawn_blocking(move || check_for_agent(&live, &key_owned, &value_owned))
            .await
            .map_err(|e| format!("could not check the change: {e}"))?
            .map_err(|e| e.to_string())?;
        let changes = set(
            &self.live,
            self.audit_log.as_ref(),
            key,
            value,
            "agent",
            via,
        )
        .await
        .map_err(|e| e.to_string())?;
        Ok(match changes.first() {
            Some((_, previous, now)) => format!(
                "set {key} = {} (was {})",
                keys::display(now),
                keys::display(previous)
            ),
            None => format!("{key} already had that value"),
        })
    }
}

/// Applies the file after it changed on disk; an invalid file keeps the last good config.
pub async fn reload(live: &Arc<LiveConfig>, audit_log: &dyn AuditRepo) {
    match live.reload_off_the_workers().await {
        Ok(changes) if !changes.is_empty() => {
            tracing::info!(changed = changes.len(), "config reloaded");
            audit(audit_log, &changes, "file", "file").await;
        }
        Ok(_) => {}
        Err(_) => {} // logged and recorded by LiveConfig
    }
}
