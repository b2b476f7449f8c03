//! The core operations behind every route and server function: sessions, modes, messages,
//! cancel. Handlers and server functions are thin wrappers over these, so the checks are the
//! same whichever door a request comes through.

mod config;
mod decisions;
mod error;
mod escalation;
mod external;
mod feed;
mod floor_view;
pub mod ids;
mod logins;
mod os_boundary;
mod passkeys;
mod people;
mod phone_login;
mod push;
mod review;
mod routes;
mod sessions;
mod sign_in;
pub mod stats;
mod tokens;
mod watch;

pub use decisions::{Answer, RuleChoice};
pub use error::Error;
pub use external::MAX_WAIT_SECS;
pub use floor_view::{FLOOR_FILE_VIEWED, MAX_FLOOR_VIEW_BYTES};
pub use logins::{LoggedIn, LoginWith};
pub use passkeys::{PasskeyChange, PasskeyProof, answer_fingerprint};
pub use people::email_key;
pub use push::CapabilityAnswer;
pub use routes::{APPROVAL_ESCALATED, APPROVAL_GIVEN, Answered, route_states_in};
pub use sign_in::{SIGN_IN_SECS, SignInStarted, SignedIn};
pub use tokens::{TokenUse, secret_hash};
pub use watch::{MAX_WATCH, MIN_WATCH};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::agent::Agent;
use super::hub::Hub;
use super::live::{Live, LiveConfig};
use super::notifier::Notifier;
use super::store::Repos;
use crate::protocol::{EventBody, Mode, TurnId};

/// The longest message a person may send, in characters (protocol.md).
pub const MAX_MESSAGE_CHARS: usize = 32_768;

/// Every operation a person can ask for. Its parts are private: the doors call operations,
/// never the hub, the repositories or the agent directly.
pub struct Core {
    /// Every session's live state, and the log through it.
    hub: Hub,
    /// The narrow repositories (gates, rules, tokens, audit, outside gates, push, passkeys)
    /// and, on a shared store, the instances' coordination.
    repos: Repos,
    /// The configuration in force (hot-reloaded), with the floor and provider built from it.
    live: Arc<LiveConfig>,
    /// Runs the turns (each gets only its `Deps`).
    agent: Agent,
    /// Canonical path of the folder the tools are confined to.
    workspace: PathBuf,
    /// Fired once on graceful shutdown; SSE streams and background tasks watch it.
    shutdown: CancellationToken,
    /// When each named token's use was last recorded.
    token_use: TokenUse,
    /// Tells the person (a webhook) when a gate needs them; knows the card links' base.
    notifier: Arc<Notifier>,
    /// The outside cards a hook's long-poll is waiting on, which close when it stops coming.
    watches: watch::GateWatches,
    /// Passkey ceremonies (step-up): their seal and spent nonces.
    passkeys: super::passkey::Passkeys,
    /// Whether the server shares its OS user with the agents it answers for.
    os_boundary: Arc<super::os_user::Boundary>,
    /// The reviewer: its predictions, its standing with the person, the classes it is trusted
    /// with.
    reviews: Arc<super::review::shadow::Reviews>,
}

/// What `Core::new` is built from (the server's start assembles it).
pub struct CoreParts {
    pub hub: Hub,
    pub repos: Repos,
    pub live: Arc<LiveConfig>,
    pub agent: Agent,
    pub workspace: PathBuf,
    pub shutdown: CancellationToken,
    pub notifier: Arc<Notifier>,
    pub passkeys: super::passkey::Passkeys,
    pub os_boundary: Arc<super::os_user::Boundary>,
    pub reviews: Arc<super::review::shadow::Reviews>,
}

/// About how many events the session page starts with (whole turns, so it can be more).
pub const RECENT_EVENTS: u64 = 300;

/// The gates a list of events leaves open, oldest first, each with the reviewer's concern
/// when a `review_concern` event raised one while it waited.
pub fn pending_in(events: &[crate::protocol::Event]) -> Vec<crate::protocol::ApprovalRequest> {
    let resolved: std::collections::HashSet<&str> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ApprovalResolved(r) => Some(r.approval_id.as_str()),
            _ => None,
        })
        .collect();
    let concerns = concerns_in(events);
    let states = route_states_in(events);
    let edits = routes::edits_in(events);
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ApprovalRequest(g) if !resolved.contains(g.approval_id.as_str()) => {
                Some(crate::protocol::ApprovalRequest {
                    // Every gate is opened within a turn; one written without its turn is listed
                    // with an empty turn id rather than hidden.
                    turn_id: e.turn_id.clone().unwrap_or_else(|| TurnId::new("")),
                    reviewer_concern: concerns
                        .get(g.approval_id.as_str())
                        .map(|c| (*c).to_owned()),
                    route_state: g.route.as_ref().map(|_| {
                        states
                            .get(g.approval_id.as_str())
                            .cloned()
                            .unwrap_or_default()
                    }),
                    body: {
                        let mut body = (**g).clone();
                        if let Some(edit) = edits.get(g.approval_id.as_str()) {
                            edit.apply(&mut body);
                        }
                        body
                    },
                })
            }
            _ => None,
        })
        .collect()
}

/// The reviewer's concerns the events raise, by card (the latest one for a card wins).
pub fn concerns_in(events: &[crate::protocol::Event]) -> HashMap<&str, &str> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ReviewConcern {
                approval_id,
                reason,
            } => Some((approval_id.as_str(), reason.as_str())),
            _ => None,
        })
        .collect()
}

/// Parses a mode from the wire, with the protocol's error (the doors read a request's mode
/// with it, and an answer's `execution_mode` is read with it).
pub fn parse_mode(raw: &str) -> Result<Mode, Error> {
    Mode::parse(raw).ok_or(Error::InvalidApprovalMode)
}

impl Core {
    pub fn new(parts: CoreParts) -> Core {
        Core {
            hub: parts.hub,
            repos: parts.repos,
            live: parts.live,
            agent: parts.agent,
            workspace: parts.workspace,
            shutdown: parts.shutdown,
            token_use: TokenUse::default(),
            notifier: parts.notifier,
            watches: watch::GateWatches::default(),
            passkeys: parts.passkeys,
            os_boundary: parts.os_boundary,
            reviews: parts.reviews,
        }
    }

    /// A coherent snapshot of the configuration in force.
    pub fn config(&self) -> Arc<Live> {
        self.live.get()
    }

    /// Applies the config file after it changed on disk (invalid: the last good one stays).
    pub async fn reload_config(&self) {
        super::live::change::reload(&self.live, self.repos.audit.as_ref()).await;
        self.review_trust_follows_mode("file").await;
    }
}
