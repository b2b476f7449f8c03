//! What turns may use: the hub, the configuration in force, the workspace and the few
//! repositories a turn reads or writes besides its log (gates, rules, audit) — never the
//! request-level core, and never the store whole.

use std::path::PathBuf;
use std::sync::Arc;

use crate::server::hub::Hub;
use crate::server::live::change::AgentSettings;
use crate::server::live::{Live, LiveConfig};
use crate::server::notifier::Notifier;
use crate::server::store::{AuditRepo, Coordination, GateRepo, RuleRepo};

/// What turns may use.
pub struct Deps {
    pub hub: Hub,
    pub live: Arc<LiveConfig>,
    /// Canonical path of the folder the tools are confined to.
    pub workspace: PathBuf,
    /// Tells the person when a gate waits for them.
    pub notifier: Arc<Notifier>,
    /// The gates' rows (an answer recorded while no turn was parked on it).
    pub gates: Arc<dyn GateRepo>,
    /// The standing rules a call may be covered by.
    pub rules: Arc<dyn RuleRepo>,
    /// Where the agent's own config changes are audited.
    pub audit: Arc<dyn AuditRepo>,
    /// Leases and cancels across instances, on a shared store only.
    pub coordination: Option<Arc<dyn Coordination>>,
    /// The reviewer beside the person: a prediction for each card as it opens.
    pub reviews: Arc<crate::server::review::shadow::Reviews>,
}

impl Deps {
    /// A coherent snapshot of the configuration in force.
    pub fn config(&self) -> Arc<Live> {
        self.live.get()
    }

    /// The settings as the agent's `config_set` reaches them.
    pub fn settings(&self) -> AgentSettings {
        AgentSettings::new(Arc::clone(&self.live), Arc::clone(&self.audit))
    }
}
