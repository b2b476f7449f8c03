//! The configuration in force, hot-reloaded: the file is watched, every change that parses
//! and validates takes effect at once (approvals timeout for new gates, safety floor, budgets,
//! provider, tools); an invalid file keeps the last good config and says why.
//!
//! **Invariant 43** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): readers take an `Arc` snapshot; writers replace it whole.
//!
//! The assembly above the schema (`config`): it builds the floor (`gate`), the sandbox
//! (`tools`) and the provider from a parsed config, so it sits above all three and below the
//! agent and the core, which read it.

pub mod change;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::server::config::{Config, ConfigError, ProviderKind, keys};
use crate::server::gate::floor::{OwnPlaces, SafetyFloor};
use crate::server::provider::{Provider, demo::DemoProvider, openai};
use crate::server::tools::sandbox::{Places, Sandbox};

/// One coherent configuration and what is built from it.
pub struct Live {
    pub config: Config,
    /// Shared with the tools' reader (`ToolContext::guard`) and the card builder.
    pub floor: Arc<SafetyFloor>,
    pub provider: Arc<dyn Provider>,
    /// How tool processes are confined under this config.
    pub sandbox: Arc<Sandbox>,
    /// Keys the file sets (the others are defaults).
    pub file_keys: BTreeSet<String>,
    /// Why the file on disk is not the config in force, if it is not.
    pub error: Option<String>,
}

pub struct LiveConfig {
    pub path: PathBuf,
    /// Startup settings (flags/env/defaults) shown read-only next to the file's keys.
    pub startup: Vec<(String, String, crate::protocol::ConfigSource)>,
    provider_override: Option<Arc<dyn Provider>>,
    /// What the sandbox keeps tools away from (fixed at startup).
    places: Places,
    /// The same places in every spelling an outside agent may use: built into every floor,
    /// whatever the config says.
    own: Arc<OwnPlaces>,
    current: RwLock<Arc<Live>>,
    /// Serializes writers: read the file, change one key, write, apply.
    write_lock: tokio::sync::Mutex<()>,
}

/// A change that took effect: `(key, previous, new)` for each changed key.
pub type Changes = Vec<(String, toml::Value, toml::Value)>;

fn build_provider(config: &Config) -> Result<Arc<dyn Provider>, String> {
    match config.provider.kind {
        ProviderKind::Demo => Ok(Arc::new(DemoProvider)),
        ProviderKind::Openai => {
            let key = std::env::var(&config.provider.api_key_env)
                .ok()
                .filter(|k| !k.trim().is_empty())
                .map(openai::ApiKey::new);
            if key.is_none() {
                tracing::warn!(
                    env = %config.provider.api_key_env,
                    "no API key in the environment; calling the endpoint without one"
                );
            }
            let provider = openai::OpenAiProvider::new(openai::OpenAiSettings {
                base_url: config.provider.base_url.clone(),
                model: config.provider.model.clone(),
                api_key: key,
                request_timeout: std::time::Duration::from_secs(
                    config.provider.request_timeout_secs,
                ),
                retry: openai::RetryPolicy {
                    max_retries: config.provider.max_retries,
                    ..openai::RetryPolicy::default()
                },
                context_tokens: config
                    .provider
                    .context_tokens
                    .resolve(&config.provider.model),
            })
            .map_err(|e| e.to_string())?;
            Ok(Arc::new(provider))
        }
    }
}

/// What changed, key by key, in the shown (masked) form; a secret that changed while its
/// mask stayed the same is recorded as changed without either value.
fn changes(old: &Config, new: &Config) -> Changes {
    let before = keys::entries(old);
    let mut changed: Changes = keys::entries(new)
        .into_iter()
        .filter_map(|(key, value)| {
            let previous = before
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())?;
            (previous != value).then_some((key, previous, value))
        })
        .collect();
    for ((key, was), (_, now)) in old.secrets().into_iter().zip(new.secrets()) {
        if was != now && !changed.iter().any(|(k, _, _)| k == key) {
            changed.push((
                key.to_owned(),
                toml::Value::String("(masked)".into()),
                toml::Value::String("(masked, changed)".into()),
            ));
        }
    }
    changed
}

impl LiveConfig {
    pub fn new(
        path: PathBuf,
        config: Config,
        provider_override: Option<Arc<dyn Provider>>,
        places: Places,
    ) -> Result<Self, String> {
        let file_keys = Config::read_table(&path)
            .map(|t| keys::set_in(&t).into_iter().collect())
            .unwrap_or_default();
        let own = Arc::new(OwnPlaces::of(&places));
        let live = Self::build(config, file_keys, provider_override.clone(), &places, &own)?;
        Ok(LiveConfig {
            startup: Vec::new(),
            path,
            provider_override,
            places,
            own,
            current: RwLock::new(Arc::new(live)),
            write_lock: tokio::sync::Mutex::new(()),
        })
    }

    /// Records the startup settings to show next to the file's keys.
    pub fn with_startup(
        mut self,
        startup: Vec<(String, String, crate::protocol::ConfigSource)>,
    ) -> Self {
        self.startup = startup;
        self
    }

    fn build(
        config: Config,
        file_keys: BTreeSet<String>,
        provider_override: Option<Arc<dyn Provider>>,
        places: &Places,
        own: &Arc<OwnPlaces>,
    ) -> Result<Live, String> {
        let floor = Arc::new(SafetyFloor::new(&config.safety)?.with_own(Arc::clone(own)));
        let provider = match provider_override {
            Some(p) => p,
            None => build_provider(&config)?,
        };
        let sandbox = Arc::new(Sandbox::build(&config.tools, places)?);
        Ok(Live {
            config,
            floor,
            provider,
            sandbox,
            file_keys,
            error: None,
        })
    }

    pub fn get(&self) -> Arc<Live> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn replace(&self, live: Live) -> Changes {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        let changed = changes(&current.config, &live.config);
        *current = Arc::new(live);
        changed
    }

    fn record_error(&self, message: String) {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        let old = current.clone();
        *current = Arc::new(Live {
            config: old.config.clone(),
            floor: Arc::clone(&old.floor),
            provider: old.provider.clone(),
            sandbox: old.sandbox.clone(),
            file_keys: old.file_keys.clone(),
            error: Some(message),
        });
    }

    /// Re-reads the file: applies it if valid (returning what changed), else keeps the last
    /// good config and records why.
    pub fn reload(&self) -> Result<Changes, String> {
        let attempt = Config::read_table(&self.path).and_then(|table| {
            let text = toml::to_string(&table).unwrap_or_default();
            Config::parse(&text, &self.path).map(|c| (c, table))
        });
        match attempt
            .map_err(|e| e.to_string())
            .and_then(|(config, table)| {
                Self::build(
                    config,
                    keys::set_in(&table).into_iter().collect(),
                    self.provider_override.clone(),
                    &self.places,
                    &self.own,
                )
            }) {
            Ok(live) => Ok(self.replace(live)),
            Err(message) => {
                // A parse error quotes the file's line, which may hold a secret URL.
                let message = crate::server::secret::scrub_urls(&message);
                tracing::warn!(path = %self.path.display(), %message, "config file invalid; keeping the last good config");
                self.record_error(message.clone());
                Err(message)
            }
        }
    }

    /// Checks that `key = value` would be a valid config, without writing anything.
    pub fn check(&self, key: &str, value: toml::Value) -> Result<Config, ConfigError> {
        let table = Config::read_table(&self.path)?;
        keys::with_key(&table, key, value, &self.path).map(|(_, c)| c)
    }

    /// Sets one key in the file and applies it at once. The file's read and write and the
    /// rebuild (the sandbox walks `/etc`) run on the blocking pool, bounded.
    pub async fn set(&self, key: &str, value: toml::Value) -> Result<Changes, ConfigError> {
        let _one_writer = self.write_lock.lock().await;
        let (path, key) = (self.path.clone(), key.to_owned());
        let (provider_override, places) = (self.provider_override.clone(), self.places.clone());
        let own = Arc::clone(&self.own);
        let live = off_the_workers(&self.path, move || {
            let table = Config::read_table(&path)?;
            let (table, config) = keys::with_key(&table, &key, value, &path)?;
            let live = Self::build(
                config,
                keys::set_in(&table).into_iter().collect(),
                provider_override,
                &places,
                &own,
            )
            .map_err(|message| ConfigError::Parse {
                path: path.clone(),
                message,
            })?;
            Config::write_table(&path, &table)?;
            Ok(live)
        })
        .await?;
        Ok(self.replace(live))
    }

    /// Re-reads the file as [`reload`](Self::reload) does, on the blocking pool, bounded.
    ///
    /// Never while a [`set`](Self::set) is between writing the file and applying it: the
    /// watcher's reload would apply the change first and audit it as the file's, and the
    /// change's own author (the agent, a person) would find nothing left to record.
    pub async fn reload_off_the_workers(self: &Arc<Self>) -> Result<Changes, String> {
        let _one_writer = self.write_lock.lock().await;
        let this = Arc::clone(self);
        let path = self.path.clone();
        off_the_workers(&path, move || Ok(this.reload()))
            .await
            .map_err(|e| e.to_string())?
    }
}

/// How long a config file operation may take before the caller gives up on it.
const FILE_LIMIT: std::time::Duration = std::time::Duration::from_secs(20);

/// Runs config file work on the blocking pool within [`FILE_LIMIT`].
async fn off_the_workers<T: Send + 'static>(
    path: &Path,
    work: impl FnOnce() -> Result<T, ConfigError> + Send + 'static,
) -> Result<T, ConfigError> {
    let failed = |message: String| ConfigError::Read {
        path: path.to_owned(),
        source: std::io::Error::other(message),
    };
    match tokio::time::timeout(FILE_LIMIT, tokio::task::spawn_blocking(work)).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => Err(failed(format!("the file task failed: {e}"))),
        Err(_) => Err(failed(format!(
            "the file system did not answer within {} s",
            FILE_LIMIT.as_secs()
        ))),
    }
}

/// Watches the config file's folder and calls `on_change` after the file changed.
pub fn watch(
    path: &Path,
    on_change: impl Fn() + Send + 'static,
) -> Option<notify::RecommendedWatcher> {
    use notify::{RecursiveMode, Watcher};
    let dir = path.parent()?.to_owned();
    let name = path.file_name()?.to_owned();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event
            && event
                .paths
                .iter()
                .any(|p| p.file_name() == Some(name.as_os_str()))
            && !matches!(event.kind, notify::EventKind::Access(_))
        {
            on_change();
        }
    })
    .map_err(|e| tracing::warn!(error = %e, "cannot watch the config file; edits need a restart"))
    .ok()?;
    watcher
        .watch(&dir, RecursiveMode::NonRecursive)
        .map_err(|e| tracing::warn!(error = %e, "cannot watch the config folder"))
        .ok()?;
    Some(watcher)
}
