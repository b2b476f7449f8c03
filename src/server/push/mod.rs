//! Web Push: telling a person's devices that a card waits, with Approve and Deny on the
//! notification itself (RFC 8030 delivery, RFC 8291 encryption, RFC 8292 VAPID).
//!
//! Files by job: `vapid.rs` the server's key and JWT, `encrypt.rs` the message encryption,
//! `subscription.rs` the one parser of a browser's subscription, `capability.rs` the one-time
//! answer capability, `payload.rs` what a notification says, `deliver.rs` one push with its
//! retries, this file the service that sends them when a gate opens and closes.
//!
//! **Invariant 59** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): a push never delays a gate nor carries a credential.

pub mod capability;
mod deliver;
pub mod encrypt;
pub mod payload;
pub mod subscription;
pub mod vapid;

use std::sync::Arc;
use std::time::Duration;

use crate::protocol::{ApprovalRequestBody, EventBody, Resolution, Timestamp};
use crate::server::config::Config;
use crate::server::hub::FeedItem;
use crate::server::hub::Hub;
use crate::server::logins::{self, Presented};
use crate::server::principal::Principal;
use crate::server::store::people::PeopleRepo;
use crate::server::store::push::{PushSubscriptionRow, PushSubscriptions};
use crate::server::store::secrets::HashedSecrets;
use crate::server::store::{GateRepo, Repos, StoreError, TokenRepo};
pub use deliver::Delivery;

/// How long after a gate's deadline its closing push is still waited for (the deadline's own
/// resolution is committed a moment after it passes).
const CLOSING_GRACE: Duration = Duration::from_secs(30);
/// Pushes in flight at once (each holds a connection for up to `deliver::REQUEST_TIMEOUT`).
const MAX_IN_FLIGHT: usize = 32;

/// The push service: keys, the capabilities, where subscriptions live, and a client.
pub struct Push {
    keys: vapid::VapidKeys,
    capabilities: capability::Capabilities,
    /// Where credentials are kept by hash (which a subscription's credential is checked in).
    kept: Arc<dyn HashedSecrets>,
    /// `notify.push_test_endpoints` as last read: loopback endpoints allowed (tests).
    loopback: Arc<std::sync::atomic::AtomicBool>,
    /// At most this many pushes in flight at once, whatever the number of subscriptions.
    in_flight: Arc<tokio::sync::Semaphore>,
    subscriptions: Arc<dyn PushSubscriptions>,
    tokens: Arc<dyn TokenRepo>,
    people: Arc<dyn PeopleRepo>,
    gates: Arc<dyn GateRepo>,
    hub: Hub,
    http: reqwest::Client,
}

impl std::fmt::Debug for Push {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Push").field("keys", &self.keys).finish()
    }
}

/// The credential a subscription answers as, if it is still the one that subscribed: the
/// credential it recorded (by hash: a bearer secret or a browser login) still authenticates,
/// as the same actor, and may answer. A revoked token, a token made again under the same name,
/// a browser signed out or an admin token replaced is another credential, or none.
pub async fn principal_of(
    row: &PushSubscriptionRow,
    kept: &dyn HashedSecrets,
    tokens: &dyn TokenRepo,
    people: &dyn PeopleRepo,
) -> Result<Option<Principal>, StoreError> {
    let Some(presented) = Presented::from_record(&row.credential_check) else {
        return Ok(None);
    };
    let who = logins::who(kept, tokens, people, &presented).await?;
    Ok(who.filter(|p| p.credential() == row.credential && p.scope().decides()))
}

/// Whom a routed card's push goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Audience {
    /// Those its route names (everyone, for a card with no route).
    Approvers,
    /// Those its escalation adds: named by `escalate_to`, not by its approvers.
    Escalated,
}

impl Push {
    pub fn new(keys: vapid::VapidKeys, hub: Hub, repos: &Repos) -> Result<Push, reqwest::Error> {
        let loopback = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let http = reqwest::Client::builder()
            .timeout(deliver::REQUEST_TIMEOUT)
            .connect_timeout(deliver::CONNECT_TIMEOUT)
            // A push service answers; it never sends us elsewhere, and no proxy resolves a
            // name for us past `PublicOnly`.
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            // A name is connected to only at the public addresses it resolves to.
            .dns_resolver(Arc::new(subscription::PublicOnly {
                loopback: Arc::clone(&loopback),
            }))
            .build()?;
        Ok(Push {
            keys,
            capabilities: capability::Capabilities::new(Arc::clone(&repos.secrets)),
            kept: Arc::clone(&repos.secrets),
            loopback,
            in_flight: Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT)),
            subscriptions: Arc::clone(&repos.push),
            tokens: Arc::clone(&repos.tokens),
            people: Arc::clone(&repos.people),
            gates: Arc::clone(&repos.gates),
            hub,
            http,
        })
    }

    pub fn public_key(&self) -> &str {
        self.keys.public_key()
    }

    pub fn capabilities(&self) -> &capability::Capabilities {
        &self.capabilities
    }

    /// A capability for `gate` sent to subscription `subscription_id`; `None` (the push only
    /// opens the card) when it cannot be kept.
    async fn capability_for(
        &self,
        gate: &ApprovalRequestBody,
        subscription_id: &str,
    ) -> Option<String> {
        let grant = payload::subscription_grant(gate, subscription_id);
        match self.capabilities.mint(&grant).await {
            Ok(capability) => Some(capability),
            Err(e) => {
                tracing::warn!(error = %e, "a push goes without Approve and Deny: its capability could not be kept");
                None
            }
        }
    }

    fn subscriptions(&self) -> &dyn PushSubscriptions {
        self.subscriptions.as_ref()
    }

    /// The subscriptions whose credential may answer a gate now, with that credential.
    async fn deciding_subscriptions(
        &self,
    ) -> Result<Vec<(PushSubscriptionRow, Principal)>, StoreError> {
        let subscriptions = self.subscriptions().push_subscriptions().await?;
        let mut deciding = Vec::with_capacity(subscriptions.len());
        for row in subscriptions {
            if let Some(principal) = principal_of(
                &row,
                self.kept.as_ref(),
                self.tokens.as_ref(),
                self.people.as_ref(),
            )
            .await?
            {
                deciding.push((row, principal));
            }
        }
        Ok(deciding)
    }

    /// The subscriptions a card's push goes to; `None` when there are none (or they could not
    /// be read: said in the log).
    async fn targets_for(
        &self,
        gate: &ApprovalRequestBody,
        audience: Audience,
    ) -> Option<Vec<(PushSubscriptionRow, Principal)>> {
        let targets = match self.deciding_subscriptions().await {
            Ok(targets) => self.routed_to(gate, targets, audience).await,
            Err(e) => Err(e),
        };
        match targets {
            Ok(targets) if !targets.is_empty() => Some(targets),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, "no push for a gate: the subscriptions could not be read");
                None
            }
        }
    }

    /// The subscriptions `audience` holds (issue 41): all of them for a card with no route;
    /// for a routed card, those its route names, people read from the people store now.
    async fn routed_to(
        &self,
        gate: &ApprovalRequestBody,
        targets: Vec<(PushSubscriptionRow, Principal)>,
        audience: Audience,
    ) -> Result<Vec<(PushSubscriptionRow, Principal)>, StoreError> {
        let Some(route) = &gate.route else {
            return Ok(targets);
        };
        let mut kept = Vec::with_capacity(targets.len());
        for (row, who) in targets {
            let (roles, groups) = match who.person_email() {
                Some(email) => {
                    crate::server::store::people::roles_and_groups(self.people.as_ref(), email)
                        .await?
                }
                None => (Vec::new(), Vec::new()),
            };
            let answerer = match who.person_email() {
                Some(email) => crate::protocol::Answerer::Person {
                    email,
                    roles: &roles,
                    groups: &groups,
                },
                None => crate::protocol::Answerer::Admin,
            };
            let before = route.may_answer(&answerer, false);
            let told = match audience {
                Audience::Approvers => before,
                Audience::Escalated => !before && route.may_answer(&answerer, true),
            };
            if told && !matches!(who, Principal::Ntfy) {
                kept.push((row, who));
            }
        }
        Ok(kept)
    }

    /// Takes in the config's push settings (whether loopback endpoints are allowed).
    pub fn follow(&self, config: &Config) {
        self.loopback.store(
            config.notify.push_test_endpoints,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// One push to one subscription now (waiting for a slot among those in flight); a gone
    /// subscription is dropped.
    pub async fn send_now(
        &self,
        row: &PushSubscriptionRow,
        message: &payload::Message,
        subject: &str,
    ) -> Delivery {
        let Ok(_slot) = self.in_flight.acquire().await else {
            return Delivery::Failed;
        };
        let loopback = self.loopback.load(std::sync::atomic::Ordering::Relaxed);
        let delivery = deliver::send(&self.http, &self.keys, row, message, subject, loopback).await;
        if delivery == Delivery::Gone {
            self.drop_gone(row).await;
        }
        delivery
    }

    async fn drop_gone(&self, row: &PushSubscriptionRow) {
        match self
            .subscriptions()
            .delete_push_subscription(&row.id, "push_service")
            .await
        {
            Ok(_) => {
                tracing::info!(subscription = %row.id, "push subscription gone (404/410): dropped")
            }
            Err(e) => {
                tracing::warn!(subscription = %row.id, error = %e, "could not drop a gone push subscription")
            }
        }
    }

    /// Tells every device that may answer `gate` that it waits, then, when the gate is
    /// resolved anywhere (or its deadline passes), replaces the notification with the outcome.
    /// Returns at once: all of it runs on a task of its own.
    pub fn gate_opened(
        self: &Arc<Self>,
        config: &Config,
        gate: &ApprovalRequestBody,
        session_title: &str,
    ) {
        self.gate_to(config, gate, session_title, Audience::Approvers);
    }

    /// Pushes a routed card that escalated to those it now goes to also (its `escalate_to`,
    /// not those who were told already).
    pub fn gate_escalated(
        self: &Arc<Self>,
        config: &Config,
        gate: &ApprovalRequestBody,
        session_title: &str,
    ) {
        self.gate_to(config, gate, session_title, Audience::Escalated);
    }

    /// Pushes a card to `audience`, then its closing message once it is answered.
    fn gate_to(
        self: &Arc<Self>,
        config: &Config,
        gate: &ApprovalRequestBody,
        session_title: &str,
        audience: Audience,
    ) {
        let push = Arc::clone(self);
        let gate = gate.clone();
        let subject = subject(config);
        let session_title = session_title.to_owned();
        let needs_passkey = config.approvals.require_passkey.applies_to(gate.reason);
        self.follow(config);
        tokio::spawn(async move {
            // Watch before anything is sent, so an answer given at once is not missed.
            let watch = push.hub.subscribe(&gate.session_id);
            let Some(targets) = push.targets_for(&gate, audience).await else {
                return;
            };
            let answerable = payload::answerable_from_notification(&gate, needs_passkey);
            let sends = targets.iter().map(|(row, _)| {
                let (push, subject, gate) = (&push, &subject, &gate);
                let session_title = &session_title;
                async move {
                    let capability = match answerable {
                        true => push.capability_for(gate, &row.id).await,
                        false => None,
                    };
                    let message =
                        payload::gate_message(gate, session_title, capability, needs_passkey);
                    (row, push.send_now(row, &message, subject).await)
                }
            });
            let delivered: Vec<PushSubscriptionRow> = futures::future::join_all(sends)
                .await
                .into_iter()
                .filter(|(_, d)| *d == Delivery::Delivered)
                .map(|(row, _)| row.clone())
                .collect();
            crate::timeline::mark("push: gate sent");
            if delivered.is_empty() {
                return;
            }
            let Some(resolution) = push.wait_resolved(&gate, watch).await else {
                return;
            };
            let closing = payload::closing_message(&gate, &resolution);
            let sends = delivered
                .iter()
                .map(|row| push.send_now(row, &closing, &subject));
            futures::future::join_all(sends).await;
        });
    }

    /// The gate's resolution, from the feed (or the store, if the feed fell behind), until a
    /// little after its deadline.
    async fn wait_resolved(
        &self,
        gate: &ApprovalRequestBody,
        mut watch: crate::server::hub::Subscription,
    ) -> Option<Resolution> {
        let wait =
            Duration::from_millis(gate.expires_at.ms_left(Timestamp::now_ms())) + CLOSING_GRACE;
        let stored = || async {
            self.gates
                .get_gate(&gate.session_id, &gate.approval_id)
                .await
                .ok()
                .flatten()
                .and_then(|row| row.resolution)
        };
        if let Some(done) = stored().await {
            return Some(done);
        }
        let watching = async {
            loop {
                match watch.receiver.recv().await {
                    Ok(item) => {
                        if let FeedItem::Durable { event, .. } = item.as_ref()
                            && let EventBody::ApprovalResolved(resolution) = &event.body
                            && resolution.approval_id == gate.approval_id
                        {
                            return Some(resolution.clone());
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        if let Some(done) = stored().await {
                            return Some(done);
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return stored().await,
                }
            }
        };
        match tokio::time::timeout(wait, watching).await {
            Ok(found) => found,
            Err(_) => stored().await,
        }
    }
}

/// The VAPID `sub`: the server's public address when it is https, else a mailto.
pub fn subject(config: &Config) -> String {
    let public = config.server.public_url.trim();
    if public.starts_with("https://") {
        public.trim_end_matches('/').to_owned()
    } else {
        "mailto:countersign@localhost".to_owned()
    }
}
