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

use crate::protocol::{ApprovalRequestBody, EventBody, Resolution, Timestamp};
use crate::server::config::Config;
use crate::server::hub::FeedItem;
use crate::server::hub::Hub;
use crate::server::principal::{Principal, Scope};
use crate::server::store::push::{PushSubscriptionRow, PushSubscriptions};
use crate::server::store::{Store, StoreError};
pub use deliver::Delivery;

/// How long after a gate's deadline its closing push is still waited for (the deadline's own
/// resolution is committed a moment after it passes).
const CLOSING_GRACE: Duration = Duration::from_secs(30);

/// The push service: keys, the capability signer, where subscriptions live, and a client.
pub struct Push {
    keys: vapid::VapidKeys,
    signer: capability::Signer,
    store: Arc<dyn Store>,
    hub: Hub,
    http: reqwest::Client,
}

impl std::fmt::Debug for Push {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Push").field("keys", &self.keys).finish()
    }
}

/// Which credential a subscription answers as, read back from its row.
pub fn principal_of(
    credential: &str,
    tokens: &[crate::server::store::TokenRow],
) -> Option<Principal> {
    if credential == "browser" {
        return Some(Principal::Browser);
    }
    let startup = Principal::startup_token();
    if credential == startup.actor() {
        return Some(startup);
    }
    let name = credential.strip_prefix("token:")?;
    let row = tokens.iter().find(|t| t.name == name)?;
    let scope = Scope::parse(&row.scope)?;
    scope.decides().then(|| Principal::Token {
        name: name.to_owned(),
        scope,
    })
}

impl Push {
    pub fn new(
        keys: vapid::VapidKeys,
        signer: capability::Signer,
        hub: Hub,
    ) -> Result<Push, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(deliver::REQUEST_TIMEOUT)
            // A push service answers; it never sends us elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Push {
            keys,
            signer,
            store: Arc::clone(hub.store()),
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

    fn subscriptions(&self) -> &dyn PushSubscriptions {
        self.store.as_ref()
    }

    /// The subscriptions whose credential may answer a gate now, with that credential.
    async fn deciding_subscriptions(
        &self,
    ) -> Result<Vec<(PushSubscriptionRow, Principal)>, StoreError> {
        let subscriptions = self.subscriptions().push_subscriptions().await?;
        if subscriptions.is_empty() {
            return Ok(Vec::new());
        }
        let tokens = self.store.list_tokens().await?;
        Ok(subscriptions
            .into_iter()
            .filter_map(|row| {
                let principal = principal_of(&row.credential, &tokens)?;
                Some((row, principal))
            })
            .collect())
    }

    /// One push to one subscription now; a gone subscription is dropped.
    pub async fn send_now(
        &self,
        row: &PushSubscriptionRow,
        message: &payload::Message,
        subject: &str,
    ) -> Delivery {
        let delivery = deliver::send(&self.http, &self.keys, row, message, subject).await;
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
            self.store
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
