//! A real server started in-process on 127.0.0.1:0, on a temp directory (`data/`, `ws/`,
//! and `config.toml` when a config is given), with the demo agent or a given provider.

use std::net::SocketAddr;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use countersign::server::core::Core;
use countersign::server::provider::scripted::{ScriptStep, ScriptedProvider};
use countersign::server::provider::{Completion, Provider};
use countersign::server::{self, settings::ServeArgs};

use super::{Api, TOKEN};

pub fn scripted(steps: impl IntoIterator<Item = ScriptStep>) -> Arc<dyn Provider> {
    Arc::new(ScriptedProvider::new(steps))
}

pub fn reply(text: &str) -> ScriptStep {
    ScriptStep::Reply(Completion {
        text: text.to_owned(),
        ..Completion::default()
    })
}

/// A running in-process server and an [`Api`] client for it (through `Deref`). Dropping it
/// cancels the server.
pub struct TestServer {
    pub dir: Option<tempfile::TempDir>,
    pub server: Option<server::Server>,
    pub addr: SocketAddr,
    pub api: Api,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(server) = &self.server {
            server.shutdown.cancel();
        }
    }
}

impl Deref for TestServer {
    type Target = Api;

    fn deref(&self) -> &Api {
        &self.api
    }
}

impl TestServer {
    /// The demo agent, default config.
    pub async fn start() -> Self {
        Self::start_with(None, None).await
    }

    /// The demo agent with this TOML as its config file.
    pub async fn configured(config: &str) -> Self {
        Self::start_with(None, Some(config)).await
    }

    /// A scripted model instead of the demo agent.
    pub async fn scripted(steps: impl IntoIterator<Item = ScriptStep>) -> Self {
        Self::start_with(Some(scripted(steps)), None).await
    }

    /// A server whose model is `steps`, with this config; the provider is returned too, so a
    /// test can count the model calls it received and what each was sent.
    pub async fn with_script(
        steps: Vec<ScriptStep>,
        config: &str,
    ) -> (Self, Arc<ScriptedProvider>) {
        let provider = Arc::new(ScriptedProvider::new(steps));
        let dynamic: Arc<dyn Provider> = provider.clone();
        let server = Self::start_with(Some(dynamic), Some(config)).await;
        (server, provider)
    }

    pub async fn start_with(provider: Option<Arc<dyn Provider>>, config: Option<&str>) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        Self::start_in(dir, provider, config).await
    }

    /// Starts on an existing directory (`data/` and `ws/` inside it): used to restart.
    pub async fn start_in(
        dir: tempfile::TempDir,
        provider: Option<Arc<dyn Provider>>,
        config: Option<&str>,
    ) -> Self {
        let config_path = config.map(|text| {
            let path = dir.path().join("config.toml");
            std::fs::write(&path, text).expect("write config");
            path
        });
        let args = ServeArgs {
            addr: "127.0.0.1:0".parse().unwrap(),
            data_dir: Some(dir.path().join("data")),
            workspace: Some(dir.path().join("ws")),
            token: Some(TOKEN.into()),
            config: config_path,
            database_url: None,
        };
        let settings = args.resolve().expect("settings resolve");
        let server = server::start(settings, provider)
            .await
            .expect("server starts");
        let addr = server.addr;
        assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
        TestServer {
            dir: Some(dir),
            server: Some(server),
            addr,
            api: Api::new(&format!("http://{addr}")),
        }
    }

    /// Graceful stop: cancel, then the serve task must end (and end cleanly) within 10 s.
    /// Returns the directory so a new server can start on the same data.
    pub async fn stop(mut self) -> tempfile::TempDir {
        let server = self.server.take().expect("running");
        server.shutdown.cancel();
        let result = tokio::time::timeout(Duration::from_secs(10), server.task)
            .await
            .expect("server task ends within 10 s of shutdown");
        result
            .expect("server task did not panic")
            .expect("server exited cleanly");
        drop(server.core);
        self.dir.take().expect("dir")
    }

    pub fn core(&self) -> &Arc<Core> {
        &self.server.as_ref().expect("running").core
    }

    /// The temp directory everything lives in.
    pub fn root(&self) -> &Path {
        self.dir.as_ref().expect("dir").path()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.root().join("data")
    }

    /// The SQLite file.
    pub fn db(&self) -> PathBuf {
        self.data_dir().join("countersign.db")
    }

    pub fn workspace(&self) -> PathBuf {
        self.root().join("ws")
    }

    /// A path inside the agent's workspace.
    pub fn ws(&self, rel: &str) -> PathBuf {
        self.workspace().join(rel)
    }
}
