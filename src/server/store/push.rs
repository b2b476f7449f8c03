//! The push subscriptions' repository: a narrow trait of its own beside `Store` (which every
//! backend also implements), so the push layer reaches these rows and nothing else.

use async_trait::async_trait;

use super::StoreError;
use crate::protocol::Timestamp;

/// One browser's Web Push subscription, as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct PushSubscriptionRow {
    pub id: String,
    /// Where pushes for this browser are sent (its push service's URL).
    pub endpoint: String,
    /// The browser's P-256 public key, base64url.
    pub p256dh: String,
    /// The browser's 16-byte auth secret, base64url.
    pub auth: String,
    /// The credential that subscribed, as actors name it: `browser` or `token:<name>`.
    pub credential: String,
    /// Which secret that credential was: the named token's secret hash, or the startup
    /// token's fingerprint (`Push::startup_fingerprint`).
    pub credential_check: String,
    pub created_at: Timestamp,
}

#[async_trait]
pub trait PushSubscriptions: Send + Sync {
    /// Stores `row`, replacing (and so ending the capabilities of) any subscription with the
    /// same endpoint; audited as `push_subscribed` by `row.credential`.
    async fn save_push_subscription(&self, row: &PushSubscriptionRow) -> Result<(), StoreError>;
    /// Every subscription, oldest first.
    async fn push_subscriptions(&self) -> Result<Vec<PushSubscriptionRow>, StoreError>;
    async fn push_subscription(&self, id: &str) -> Result<Option<PushSubscriptionRow>, StoreError>;
    /// Removes one; `actor` is audited (`push_unsubscribed`). False when there was none.
    async fn delete_push_subscription(&self, id: &str, actor: &str) -> Result<bool, StoreError>;
}

/// The audit entry of a subscription made or removed: its id and its push service's host
/// (the endpoint's path is the browser's address, kept out of the log).
pub fn audit_draft(
    actor: &str,
    action: &'static str,
    row_id: &str,
    endpoint: &str,
) -> crate::server::audit::AuditDraft {
    let host = url::Url::parse(endpoint)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    crate::server::audit::AuditDraft {
        actor: actor.to_owned(),
        action,
        subject: format!("push:{row_id}"),
        detail: serde_json::json!({ "push_service": host }),
    }
}
