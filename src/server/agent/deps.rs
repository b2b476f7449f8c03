//! What turns may use: the hub, the configuration in force and the workspace — never the
//! request-level core.

use std::path::PathBuf;
use std::sync::Arc;

use crate::server::config::live::{Live, LiveConfig};
use crate::server::config::ops::AgentSettings;
use crate::server::hub::Hub;
use crate::server::notifier::Notifier;

/// What turns may use.
pub struct Deps {
    pub hub: Hub,
    pub live: Arc<LiveConfig>,
    /// Canonical path of the folder the tools are confined to.
    pub workspace: PathBuf,
    /// Tells the person when a gate waits for them.
    pub notifier: Arc<Notifier>,
}

impl Deps {
    /// A coherent snapshot of the configuration in force.
    pub fn config(&self) -> Arc<Live> {
        self.live.get()
    }

    /// The settings as the agent's `config_set` reaches them.
    pub fn settings(&self) -> AgentSettings {
        AgentSettings::new(Arc::clone(&self.live), Arc::clone(self.hub.store()))
    }
}
