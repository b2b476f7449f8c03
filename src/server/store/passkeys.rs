//! The registered passkeys' repository: a narrow trait beside `Store` (which every backend
//! also implements).

use async_trait::async_trait;

use super::StoreError;
use crate::protocol::Timestamp;

/// One registered passkey.
#[derive(Clone, Debug, PartialEq)]
pub struct PasskeyRow {
    pub id: String,
    /// The person's name for it ("phone", "laptop").
    pub name: String,
    /// The relying party (domain) it was made for.
    pub rp_id: String,
    /// The origin it was registered from (`http://localhost:8080`): only a ceremony for that
    /// origin offers it.
    pub origin: String,
    /// The credential as the WebAuthn library keeps it (JSON): its id, public key, counter.
    pub credential: String,
    pub created_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
}

#[async_trait]
pub trait PasskeyRows: Send + Sync {
    /// Every passkey, oldest first.
    async fn passkeys(&self) -> Result<Vec<PasskeyRow>, StoreError>;
    /// Adds one; audited as `passkey_registered` by `actor`. `Taken` when the name is used.
    async fn add_passkey(&self, row: &PasskeyRow, actor: &str) -> Result<(), StoreError>;
    /// After a use: its credential (counter) and when.
    async fn touch_passkey(
        &self,
        id: &str,
        credential: &str,
        at: &Timestamp,
    ) -> Result<(), StoreError>;
    /// Removes one; audited as `passkey_removed`. False when there was none.
    async fn remove_passkey(&self, id: &str, actor: &str) -> Result<bool, StoreError>;
    /// Removes every one (the local CLI's reset); audited as `passkeys_reset`. How many.
    async fn reset_passkeys(&self, actor: &str) -> Result<u64, StoreError>;
}

/// The audit entry of a passkey added or removed.
pub fn audit_draft(
    actor: &str,
    action: &'static str,
    id: &str,
    name: &str,
) -> crate::server::audit::AuditDraft {
    crate::server::audit::AuditDraft {
        actor: actor.to_owned(),
        action,
        subject: format!("passkey:{id}"),
        detail: serde_json::json!({ "name": name }),
    }
}

/// The audit entry of the local CLI's reset.
pub fn reset_draft(actor: &str, removed: u64) -> crate::server::audit::AuditDraft {
    crate::server::audit::AuditDraft {
        actor: actor.to_owned(),
        action: "passkeys_reset",
        subject: "passkeys".into(),
        detail: serde_json::json!({ "removed": removed }),
    }
}
