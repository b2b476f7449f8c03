//! Everything that runs only on the server (feature `ssr`): startup, HTTP, the agent, storage.

pub mod agent;
pub mod approvals;
pub mod audit;
pub mod config;
pub mod core;
pub mod error;
pub mod event_log;
pub mod gate;
pub mod http;
pub mod keyed_lock;
pub mod markdown;
pub mod settings;
pub mod state;
pub mod store;

use std::net::SocketAddr;
use std::sync::Arc;

use leptos::config::LeptosOptions;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use agent::provider::{Provider, demo::DemoProvider, openai};
use config::{Config, ProviderKind};
use settings::Settings;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {addr}: {source}{hint}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
        hint: &'static str,
    },
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("cannot open the database: {0}")]
    Store(#[from] store::StoreError),
    #[error("cannot start the model provider: {0}")]
    Provider(#[from] agent::provider::ProviderError),
}

/// A running server: where it listens, how to stop it, and the task to await.
pub struct Server {
    pub addr: SocketAddr,
    pub core: Arc<core::Core>,
    pub shutdown: CancellationToken,
    pub task: JoinHandle<std::io::Result<()>>,
}

fn provider_from_config(config: &Config) -> Result<Arc<dyn Provider>, StartError> {
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
            Ok(Arc::new(openai::OpenAiProvider::new(
                openai::OpenAiSettings {
                    base_url: config.provider.base_url.clone(),
                    model: config.provider.model.clone(),
                    api_key: key,
                    request_timeout: std::time::Duration::from_secs(
                        config.provider.request_timeout_secs,
                    ),
                },
            )?))
        }
    }
}

/// Opens the store, recovers unfinished turns, binds and starts serving.
/// `provider` overrides the configured one (tests use a scripted provider).
pub async fn start(
    settings: Settings,
    provider: Option<Arc<dyn Provider>>,
) -> Result<Server, StartError> {
    let listener = TcpListener::bind(settings.addr)
        .await
        .map_err(|source| StartError::Bind {
            addr: settings.addr,
            hint: if source.kind() == std::io::ErrorKind::AddrInUse {
                " (the port is busy: stop the other server or pass --addr 127.0.0.1:0 for a free port)"
            } else {
                ""
            },
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| StartError::Bind {
        addr: settings.addr,
        source,
        hint: "",
    })?;
    let store = store::open(&settings.database_url).await?;
    let log = event_log::EventLog::new(store);
    let provider = match provider {
        Some(p) => p,
        None => provider_from_config(&settings.config)?,
    };
    let floor =
        gate::floor::SafetyFloor::new(&settings.config.safety).map_err(StartError::Config)?;
    let shutdown = CancellationToken::new();
    let core = Arc::new(core::Core {
        log,
        config: settings.config.clone(),
        provider,
        workspace: settings.workspace.clone(),
        shutdown: shutdown.clone(),
        turns: Default::default(),
        gates: Default::default(),
        floor,
        session_locks: Default::default(),
    });
    let repaired = agent::recovery::restore_modes(&core).await?;
    let resumed = agent::recovery::resume_unfinished_turns(&core).await?;
    if repaired + resumed > 0 {
        tracing::info!(
            resumed,
            repaired,
            "recovered the last run's turns and modes"
        );
    }
    let leptos_options = LeptosOptions::builder()
        .output_name("countersign")
        .site_root(settings.site_root.display().to_string())
        .site_pkg_dir("pkg")
        .site_addr(addr)
        .build();
    let state = state::AppState {
        core: core.clone(),
        auth: Arc::new(http::auth::Auth::new(settings.token)),
        leptos_options,
    };
    let app = http::router(state);
    let stop = shutdown.clone();
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
    });
    Ok(Server {
        addr,
        core,
        shutdown,
        task,
    })
}
