//! Everything that runs only on the server (feature `ssr`): startup, HTTP, the agent, storage.

pub mod agent;
pub mod audit;
pub mod config;
pub mod conversation;
pub mod core;
pub mod credentials;
pub mod csp;
pub mod digest;
pub mod gate;
pub mod http;
pub mod hub;
pub mod live;
pub mod logins;
pub mod markdown;
pub mod notifier;
pub mod oidc;
pub mod os_user;
pub mod passkey;
pub mod principal;
pub mod provider;
pub mod push;
pub mod retry;
pub mod review;
pub mod secret;
pub mod settings;
pub mod shell_syntax;
pub mod state;
pub mod store;
pub mod tools;

use std::net::SocketAddr;
use std::sync::Arc;

use leptos::config::LeptosOptions;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use provider::Provider;
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
    Storage(#[from] store::StoreError),
    /// Opening the database failed; the message with the URL's password masked.
    #[error("cannot open the database: {0}")]
    Database(String),
    #[error("cannot start the model provider: {0}")]
    Provider(#[from] provider::ProviderError),
    #[error("{0}")]
    Recovery(String),
    #[error("cannot start Web Push: {0}")]
    Push(String),
}

/// The file a running server holds an exclusive lock on, in its data dir.
const LOCK_FILE: &str = "serve.lock";

/// Takes the data dir for this server alone: a second `serve` on it (started by anyone, with
/// any `--token`) is refused while this one runs, so nothing replaces the admin token, the
/// address file or the writer under a running server.
fn lock_data_dir(data_dir: &std::path::Path) -> Result<std::fs::File, StartError> {
    use std::os::fd::AsRawFd;
    let path = data_dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| StartError::Config(format!("cannot open {}: {e}", path.display())))?;
    // SAFETY: flock only reads the descriptor, which `file` keeps open.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    if !locked {
        return Err(StartError::Config(format!(
            "another Countersign server already runs on the data dir {}; stop it first",
            data_dir.display()
        )));
    }
    Ok(file)
}

/// Records where this server answers (`settings::ADDRESS_FILE`); a failure only costs
/// `countersign login` its default base and the local CLI its credential.
async fn record_address(data_dir: &std::path::Path, addr: SocketAddr) {
    let host = if addr.ip().is_unspecified() {
        format!("127.0.0.1:{}", addr.port())
    } else {
        addr.to_string()
    };
    let file = data_dir.join(settings::ADDRESS_FILE);
    if let Err(e) = tokio::fs::write(&file, format!("http://{host}\n")).await {
        tracing::warn!(error = %e, "could not record where this server answers");
    }
}

/// Keeps the admin token start-up was given by its hash. An older build's token file is taken
/// over (its hash kept) only at the first start after the upgrade, and only when no token was
/// given; in every case it is removed, so its clear copy never outlives a start.
async fn settle_admin_token(
    settings: &Settings,
    kept: &dyn store::secrets::HashedSecrets,
    tokens: &dyn store::TokenRepo,
) -> Result<(), StartError> {
    use store::secrets::{LEGACY_TOKEN_WINDOW, SecretKind};
    // Taken at every start: the window is the first start after the migration alone.
    let window = kept
        .take_secret(SecretKind::LegacyTokenWindow, LEGACY_TOKEN_WINDOW)
        .await?
        .is_some();
    if let Some(token) = &settings.admin_token {
        if let Some(name) = logins::named_token_name(tokens, token.reveal()).await? {
            return Err(StartError::Config(format!(
                "the admin token given (--token or COUNTERSIGN_TOKEN) is the named token `{name}`; \
                 give the server a token of its own (an agent's COUNTERSIGN_TOKEN is its `gates` \
                 token, never the server's)"
            )));
        }
        logins::set_admin_token(kept, token.reveal()).await?;
    }
    let Some(legacy) = &settings.legacy_token else {
        return Ok(());
    };
    let adopted = window && settings.admin_token.is_none() && legacy.token.reveal().len() >= 8;
    if adopted {
        logins::set_admin_token(kept, legacy.token.reveal()).await?;
    }
    remove_legacy_token_file(&legacy.file, adopted).await;
    Ok(())
}

/// Removes an older build's token file, saying why.
async fn remove_legacy_token_file(file: &std::path::Path, adopted: bool) {
    let path = file.to_owned();
    match tokio::task::spawn_blocking(move || std::fs::remove_file(&path)).await {
        Ok(Ok(())) if adopted => tracing::info!(
            "the admin token file was removed: only its hash is kept now (the token still works)"
        ),
        Ok(Ok(())) => tracing::warn!(
            file = %file.display(),
            "a token file in the data dir was removed and not used: it is taken over only at the first start after the upgrade, and only when no --token is given"
        ),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, file = %file.display(), "could not remove a token file from the data dir; remove it by hand")
        }
        Err(e) => tracing::warn!(error = %e, "could not remove a token file from the data dir"),
    }
}

/// How long shutdown waits for turn tasks to end.
const TURN_STOP: std::time::Duration = std::time::Duration::from_secs(5);

/// A running server: where it listens, how to stop it, and the task to await.
pub struct Server {
    pub addr: SocketAddr,
    pub core: Arc<core::Core>,
    pub shutdown: CancellationToken,
    pub task: JoinHandle<std::io::Result<()>>,
    /// Every route it serves with what each needs (the tests send each every credential).
    pub routes: Vec<http::scopes::Declared>,
    /// Held while it runs: no second server starts on the same data dir.
    _data_dir_lock: std::fs::File,
    /// Keeps the config file watched while the server runs.
    _watcher: Option<notify::RecommendedWatcher>,
}

/// Hot reload: file events are debounced briefly, then the file is re-read and applied.
fn watch_config(
    core: &Arc<core::Core>,
    path: &std::path::Path,
) -> Option<notify::RecommendedWatcher> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let watcher = live::watch(path, move || {
        let _ = tx.send(());
    })?;
    let core = core.clone();
    tokio::spawn(async move {
        while rx.recv().await.is_some() {
            // Editors write in several steps; let them finish.
            tokio::time::sleep(std::time::Duration::from_millis(150)).await;
            while rx.try_recv().is_ok() {}
            core.reload_config().await;
        }
    });
    Some(watcher)
}

/// Whether the server runs as a user of its own, assessed before any agent connects (and
/// said in the log when it does not).
async fn os_boundary_at_start(settings: &Settings) -> Result<Arc<os_user::Boundary>, StartError> {
    let places = os_user::Places {
        data_dir: settings.data_dir.clone(),
        config_file: settings.config_path.clone(),
        database_file: store::sqlite::file_of(settings.database_url.reveal()),
    };
    let boundary = tokio::task::spawn_blocking(move || os_user::Boundary::new(places))
        .await
        .map_err(|e| StartError::Config(format!("the OS user could not be assessed: {e}")))?;
    if let Some(warning) = boundary.startup_warning() {
        tracing::warn!("{}", warning.trim_start_matches("warning: "));
    }
    Ok(Arc::new(boundary))
}

/// Opens the store, recovers unfinished turns, binds and starts serving: the phases below, in
/// the order they log. `provider` overrides the configured one (tests use a scripted provider).
pub async fn start(
    settings: Settings,
    provider: Option<Arc<dyn Provider>>,
) -> Result<Server, StartError> {
    let data_dir_lock = lock_data_dir(&settings.data_dir)?;
    let (listener, addr) = bind(&settings).await?;
    let store::Opened { log, repos } = store::open(
        settings.database_url.reveal(),
        settings.config.storage.synchronous,
        &settings.instance,
    )
    .await
    // A driver's message may quote the URL, password and all.
    .map_err(|e| StartError::Database(settings.database_url.scrub(&e.to_string())))?;
    let signals = match &repos.coordination {
        Some(coordination) => Some(coordination.listen().await?),
        None => None,
    };
    let hub = hub::Hub::new(log, repos.coordination.clone());
    let live = live_config(&settings, provider).await?;
    let notifier = notifier_at(&settings, addr, &hub, &repos).await?;
    settle_admin_token(&settings, repos.secrets.as_ref(), repos.tokens.as_ref()).await?;
    let shutdown = CancellationToken::new();
    let core = core_of(&settings, hub, repos, live, notifier, shutdown.clone()).await?;
    core.answer_for_the_reviewer();
    core.escalate_when_due();
    let watcher = watch_config(&core, &settings.config_path);
    // Several instances on one database: follow the others' commits, keep this one's turn
    // leases and take over the turns of instances that stopped.
    if let Some(signals) = signals {
        core.share_with_others(signals);
        tracing::info!(instance = %settings.instance, "sharing the database with other instances");
    }
    recover(&core).await?;
    let (task, routes) = serve(&settings, listener, addr, &core, shutdown.clone());
    Ok(Server {
        addr,
        core,
        shutdown,
        task,
        routes,
        _watcher: watcher,
        _data_dir_lock: data_dir_lock,
    })
}

/// Binds the listening socket (port 0: a free one) and says where it is.
async fn bind(settings: &Settings) -> Result<(TcpListener, SocketAddr), StartError> {
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
    Ok((listener, addr))
}

/// The configuration in force, built whole (floor, provider, sandbox). Reading the config file,
/// building the sandbox (it walks `/etc`) and probing what the machine isolates (it starts a
/// process) block: off the async workers, like every file read after start.
async fn live_config(
    settings: &Settings,
    provider: Option<Arc<dyn Provider>>,
) -> Result<Arc<live::LiveConfig>, StartError> {
    let places = tools::sandbox::Places {
        workspace: settings.workspace.clone(),
        data_dir: settings.data_dir.clone(),
        config_file: settings.config_path.clone(),
        database_file: store::sqlite::file_of(settings.database_url.reveal()),
        database_url: Some(settings.database_url.clone()),
    };
    let (config_path, config) = (settings.config_path.clone(), settings.config.clone());
    let live = tokio::task::spawn_blocking(move || {
        tools::sandbox::isolation();
        live::LiveConfig::new(config_path, config, provider, places)
    })
    .await
    .map_err(|e| StartError::Config(format!("the config could not be built: {e}")))?
    .map_err(StartError::Config)?;
    let sandbox = live.get().sandbox.clone();
    if sandbox.is_off() {
        tracing::warn!("{}", tools::sandbox::OFF_WARNING);
    } else {
        tracing::info!("{}", sandbox.describe());
    }
    Ok(Arc::new(live.with_startup(settings.startup.clone())))
}

/// What tells the person a card waits: the webhook and Web Push (the VAPID key, made once in
/// the data dir). Records where this server answers, for the links and the local CLI.
async fn notifier_at(
    settings: &Settings,
    addr: SocketAddr,
    hub: &hub::Hub,
    repos: &store::Repos,
) -> Result<Arc<notifier::Notifier>, StartError> {
    let notifier = Arc::new(notifier::Notifier::new());
    notifier.set_listen_url(format!("http://{addr}"));
    record_address(&settings.data_dir, addr).await;
    let data_dir = settings.data_dir.clone();
    let vapid =
        tokio::task::spawn_blocking(move || push::vapid::VapidKeys::load_or_create(&data_dir))
            .await
            .map_err(|e| StartError::Push(e.to_string()))?
            .map_err(|e| StartError::Push(e.to_string()))?;
    let push = push::Push::new(vapid, hub.clone(), repos)
        .map_err(|e| StartError::Push(format!("no HTTP client: {e}")))?;
    notifier.set_push(Arc::new(push));
    Ok(notifier)
}

/// The core and the agent it runs turns with.
async fn core_of(
    settings: &Settings,
    hub: hub::Hub,
    repos: store::Repos,
    live: Arc<live::LiveConfig>,
    notifier: Arc<notifier::Notifier>,
    shutdown: CancellationToken,
) -> Result<Arc<core::Core>, StartError> {
    hub.set_reviews(Arc::clone(&repos.review));
    let reviews = review::shadow::Reviews::new(Arc::clone(&repos.review), Arc::clone(&repos.gates));
    let agent = agent::Agent::new(agent::Deps {
        hub: hub.clone(),
        live: Arc::clone(&live),
        workspace: settings.workspace.clone(),
        notifier: Arc::clone(&notifier),
        gates: Arc::clone(&repos.gates),
        rules: Arc::clone(&repos.rules),
        audit: Arc::clone(&repos.audit),
        coordination: repos.coordination.clone(),
        reviews: Arc::clone(&reviews),
    });
    let passkeys = passkey::Passkeys::new(Arc::clone(&repos.secrets));
    let os_boundary = os_boundary_at_start(settings).await?;
    Ok(Arc::new(core::Core::new(core::CoreParts {
        hub,
        repos,
        live,
        agent,
        workspace: settings.workspace.clone(),
        shutdown,
        notifier,
        passkeys,
        os_boundary,
        reviews,
    })))
}

/// Resumes the turns the last run left unfinished and re-arms outside gates' deadlines.
async fn recover(core: &core::Core) -> Result<(), StartError> {
    core.review_trust_follows_mode("system").await;
    let (repaired, resumed) = core.recover_turns().await?;
    let armed = core.arm_gate_deadlines().await.map_err(|e| {
        StartError::Recovery(format!(
            "could not re-arm the outside gates' deadlines: {e}"
        ))
    })?;
    if armed > 0 {
        tracing::info!(armed, "outside agents' gates still wait for an answer");
    }
    if repaired + resumed > 0 {
        tracing::info!(
            resumed,
            repaired,
            "recovered the last run's turns and modes"
        );
    }
    Ok(())
}

/// Serves the router on `listener` until `shutdown`; then stops the turns, bounded.
fn serve(
    settings: &Settings,
    listener: TcpListener,
    addr: SocketAddr,
    core: &Arc<core::Core>,
    shutdown: CancellationToken,
) -> (JoinHandle<std::io::Result<()>>, Vec<http::scopes::Declared>) {
    let leptos_options = LeptosOptions::builder()
        .output_name("countersign")
        .site_root(settings.site_root.display().to_string())
        .site_pkg_dir("pkg")
        .site_addr(addr)
        .build();
    let state = state::AppState {
        core: core.clone(),
        leptos_options,
    };
    let (app, routes) = http::router(state);
    let turns = Arc::clone(core);
    let caps = http::listen::Caps::for_nofile(http::listen::raise_nofile_limit());
    tracing::debug!(?caps, "unauthenticated connections capped");
    let task = tokio::spawn(async move {
        let served = http::listen::serve(listener, app, caps, shutdown).await;
        // Turns end as a crash would end them (the log keeps their truth; the next start
        // resumes them), and the server waits for their tasks, bounded.
        if !turns.stop_turns(TURN_STOP).await {
            tracing::warn!("some turns were still stopping after {TURN_STOP:?}");
        }
        served
    });
    (task, routes)
}
