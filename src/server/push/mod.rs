//! Web Push: telling a person's devices that a card waits, with Approve and Deny on the
//! notification itself (RFC 8030 delivery, RFC 8291 encryption, RFC 8292 VAPID).
//!
//! Files by job: `vapid.rs` the server's key and JWT, `encrypt.rs` the message encryption,
//! `subscription.rs` the one parser of a browser's subscription, `capability.rs` the one-time
//! answer capability, `payload.rs` what a notification says, `deliver.rs` one push with its
//! retries, this file the service that sends them when a gate opens and closes.
//!
//! **Invariants:** a push never delays or fails a gate (every send runs on a task of its own);
//! a payload never carries a token or a cookie, only what the card's first lines show and, for
//! an ordinary card, a capability that can answer that card alone; a floor card's push only
//! opens the card.

pub mod capability;
mod deliver;
pub mod encrypt;
pub mod payload;
pub mod subscription;
pub mod vapid;

use std::sync::Arc;
use std::time::Duration;

use crate::protocol::{Actor, ApprovalRequestBody, EventBody, Resolution, Timestamp};
use crate::server::config::Config;
use crate::server::hub::FeedItem;
use crate::server::hub::Hub;
use crate::server::principal::{Principal, STARTUP_TOKEN_NAME};
use crate::server::store::push::{PushSubscriptionRow, PushSubscriptions};
use crate::server::store::{GateRepo, Repos, StoreError, TokenRepo};
pub use deliver::Delivery;

/// How long after a gate's deadline its closing push is still waited for (the deadline's own
/// resolution is committed a moment after it passes).
const CLOSING_GRACE: Duration = Duration::from_secs(30);
/// Pushes in flight at once (each holds a connection for up to `deliver::REQUEST_TIMEOUT`).
const MAX_IN_FLIGHT: usize = 32;

/// The push service: keys, the capability signer, where subscriptions live, and a client.
pub struct Push {
    keys: vapid::VapidKeys,
    signer: capability::Signer,
    /// Which startup token the `browser` and `token:admin` subscriptions belong to.
    startup_fingerprint: String,
    /// `notify.push_test_endpoints` as last read: loopback endpoints allowed (tests).
    loopback: Arc<std::sync::atomic::AtomicBool>,
    /// At most this many pushes in flight at once, whatever the number of subscriptions.
    in_flight: Arc<tokio::sync::Semaphore>,
    subscriptions: Arc<dyn PushSubscriptions>,
    tokens: Arc<dyn TokenRepo>,
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
/// startup token's rows (`browser`, `token:admin`) while that token is the same
/// (`startup_fingerprint`), a named token's while a token of that name with that very secret
/// exists and may answer. A re-made token of the same name, or a new startup token, is another
/// credential.
pub fn principal_of(
    row: &PushSubscriptionRow,
    tokens: &[crate::server::store::TokenRow],
    startup_fingerprint: &str,
) -> Option<Principal> {
    let startup_rows = row.credential_check == startup_fingerprint;
    let name = match Actor::parse(&row.credential) {
        Actor::Browser => return startup_rows.then_some(Principal::Browser),
        Actor::Token(name) if name == STARTUP_TOKEN_NAME => {
            return startup_rows.then(Principal::startup_token);
        }
        Actor::Token(name) => name,
        Actor::Ntfy | Actor::Other(_) => return None,
    };
    let token = tokens
        .iter()
        .find(|t| t.name == name && t.secret_hash == row.credential_check)?;
    let scope = token.scope.known()?;
    scope.decides().then(|| Principal::Token {
        name: name.to_owned(),
        scope,
    })
}

impl Push {
    pub fn new(
        keys: vapid::VapidKeys,
        access_token: &crate::server::secret::Secret,
        hub: Hub,
        repos: &Repos,
    ) -> Result<Push, reqwest::Error> {
        let signer = capability::Signer::new(&keys.seal_root());
        // Keyed by the data dir's secret: a row's fingerprint is no oracle for the token.
        let startup_fingerprint = {
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(format!(
                "countersign-push-startup:{}:{}",
                keys.seal_root().reveal(),
                access_token.reveal()
            )))
        };
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
            signer,
            startup_fingerprint,
            loopback,
            in_flight: Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT)),
            subscriptions: Arc::clone(&repos.push),
            tokens: Arc::clone(&repos.tokens),
            gates: Arc::clone(&repos.gates),
            hub,
            http,
        })
    }

    pub fn public_key(&self) -> &str {
        self.keys.public_key()
    }

    pub fn signer(&self) -> &capability::Signer {
        &self.signer
    }

    /// What a subscription made with the startup token (or its cookie) records as its check.
    pub fn startup_fingerprint(&self) -> &str {
        &self.startup_fingerprint
    }

    fn subscriptions(&self) -> &dyn PushSubscriptions {
        self.subscriptions.as_ref()
    }

    /// The subscriptions whose credential may answer a gate now, with that credential.
    async fn deciding_subscriptions(
        &self,
    ) -> Result<Vec<(PushSubscriptionRow, Principal)>, StoreError> {
        let subscriptions = self.subscriptions().push_subscriptions().await?;
        if subscriptions.is_empty() {
            return Ok(Vec::new());
        }
        let tokens = self.tokens.list_tokens().await?;
        Ok(subscriptions
            .into_iter()
            .filter_map(|row| {
                let principal = principal_of(&row, &tokens, &self.startup_fingerprint)?;
                Some((row, principal))
            })
            .collect())
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
        let push = Arc::clone(self);
        let gate = gate.clone();
        let subject = subject(config);
        let session_title = session_title.to_owned();
        let needs_passkey = config.approvals.require_passkey.applies_to(gate.reason);
        self.follow(config);
        tokio::spawn(async move {
            // Watch before anything is sent, so an answer given at once is not missed.
            let watch = push.hub.subscribe(&gate.session_id);
            let targets = match push.deciding_subscriptions().await {
                Ok(targets) if !targets.is_empty() => targets,
                Ok(_) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "no push for a gate: the subscriptions could not be read");
                    return;
                }
            };
            let sends = targets.iter().map(|(row, _)| {
                let message = payload::gate_message(
                    &gate,
                    &session_title,
                    &push.signer,
                    &row.id,
                    needs_passkey,
                );
                let push = &push;
                let subject = &subject;
                async move { (row, push.send_now(row, &message, subject).await) }
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
