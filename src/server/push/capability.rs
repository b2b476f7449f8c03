//! The one-time answer capability a notification's Approve and Deny carry.
//!
//! **Invariant 58** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): a capability is bound, single-use, expiring, revocable and good for nothing else.

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use crate::protocol::{ApprovalId, SessionId, Timestamp};
use crate::server::store::StoreError;
use crate::server::store::secrets::{HashedSecret, HashedSecrets, SecretKind, hash_secret};

/// A capability longer than this is not one of ours.
pub const MAX_LEN: usize = 128;
/// What starts every capability (a leaked one is recognisable; the old sealed `cs1.` ones are
/// no longer taken).
const PREFIX: &str = "cs2.";
/// How long a capability's row is kept past its card's deadline, so a late tap is told the
/// card ended (`410`) rather than that the capability is unknown.
const KEPT_PAST_DEADLINE_MS: i64 = 24 * 3600 * 1000;

/// Who holds a capability, and so whose credential answers with it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(tag = "k", content = "v", rename_all = "snake_case")]
pub enum Holder {
    /// A browser's push subscription, by id.
    Subscription(String),
    /// The ntfy topic `[notify]` posts to, by a hash of its URL: changing or removing the
    /// webhook ends every capability sent there.
    Ntfy(String),
}

/// The holder of capabilities sent to `webhook_url` (an ntfy topic).
pub fn ntfy_holder(webhook_url: &str) -> Holder {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("countersign-ntfy:{}", webhook_url.trim()));
    Holder::Ntfy(hex::encode(&digest[..16]))
}

/// What a capability grants: one answer to one card, until the gate's deadline.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    #[serde(rename = "s")]
    pub session_id: SessionId,
    #[serde(rename = "a")]
    pub approval_id: ApprovalId,
    /// The card's digest when the capability was made.
    #[serde(rename = "d")]
    pub digest: String,
    #[serde(rename = "h")]
    pub holder: Holder,
    /// The gate's deadline, in Unix milliseconds.
    #[serde(rename = "e")]
    pub expires_ms: i64,
}

/// Why a string is not a capability this server made.
#[derive(Debug, thiserror::Error)]
pub enum Invalid {
    #[error("this is not a valid answer capability")]
    Unknown,
    #[error(transparent)]
    Storage(#[from] StoreError),
}

/// Makes and looks up capabilities, kept by hash.
pub struct Capabilities {
    kept: Arc<dyn HashedSecrets>,
}

impl std::fmt::Debug for Capabilities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Capabilities")
    }
}

impl Capabilities {
    pub fn new(kept: Arc<dyn HashedSecrets>) -> Capabilities {
        Capabilities { kept }
    }

    /// A new capability for `grant` (its hash and the grant kept, never the capability).
    pub async fn mint(&self, grant: &Grant) -> Result<String, StoreError> {
        let capability = format!("{PREFIX}{}", crate::server::secret::random_token(32));
        let body = serde_json::to_string(grant).map_err(|e| StoreError::Database(e.to_string()))?;
        self.kept
            .keep_secret(&HashedSecret {
                hash: hash_secret(&capability),
                kind: SecretKind::Capability,
                body,
                created_ms: Timestamp::now_ms(),
                expires_ms: Some(grant.expires_ms.saturating_add(KEPT_PAST_DEADLINE_MS)),
            })
            .await?;
        Ok(capability)
    }

    /// The grant `capability` carries, if this server made it. Expiry and revocation are the
    /// caller's to check against the clock and the rows.
    pub async fn open(&self, capability: &str) -> Result<Grant, Invalid> {
        if capability.len() > MAX_LEN || !capability.starts_with(PREFIX) {
            return Err(Invalid::Unknown);
        }
        let row = self
            .kept
            .find_secret(SecretKind::Capability, &hash_secret(capability))
            .await?
            .ok_or(Invalid::Unknown)?;
        serde_json::from_str(&row.body).map_err(|_| Invalid::Unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant() -> Grant {
        Grant {
            session_id: "s".into(),
            approval_id: "a".into(),
            digest: "d".repeat(64),
            holder: Holder::Subscription("sub-1".into()),
            expires_ms: 1_900_000_000_000,
        }
    }

    async fn capabilities() -> (tempfile::TempDir, Capabilities, Arc<dyn HashedSecrets>) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("db").display());
        let store = crate::server::store::open(&url, Default::default(), "t")
            .await
            .unwrap();
        let kept = store.repos.secrets.clone();
        (dir, Capabilities::new(kept.clone()), kept)
    }

    #[tokio::test]
    async fn a_capability_opens_only_as_minted_and_only_its_hash_is_kept() {
        let (_dir, caps, kept) = capabilities().await;
        let cap = caps.mint(&grant()).await.unwrap();
        assert!(cap.starts_with(PREFIX) && cap.len() <= MAX_LEN, "{cap}");
        assert_eq!(caps.open(&cap).await.unwrap(), grant());
        let rows = kept.secrets_of(SecretKind::Capability).await.unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].hash, hash_secret(&cap));
        assert!(!rows[0].body.contains(&cap[PREFIX.len()..]));
        // Two capabilities for one grant are two secrets.
        assert_ne!(caps.mint(&grant()).await.unwrap(), cap);
        let last = cap.chars().last().unwrap();
        let flipped = format!(
            "{}{}",
            &cap[..cap.len() - 1],
            if last == 'A' { 'B' } else { 'A' }
        );
        for junk in [
            String::new(),
            PREFIX.to_owned(),
            flipped,
            cap.replace(PREFIX, "cs1."),
            format!("{cap}x"),
            "a".repeat(2000),
            hash_secret(&cap),
        ] {
            assert!(
                matches!(caps.open(&junk).await, Err(Invalid::Unknown)),
                "{junk}"
            );
        }
    }

    #[tokio::test]
    async fn a_row_in_the_store_is_not_a_capability() {
        // The kept hash, or a ceremony's handle kept by hash, opens nothing as a capability.
        let (_dir, caps, kept) = capabilities().await;
        let handle = format!("{PREFIX}{}", crate::server::secret::random_token(32));
        kept.keep_secret(&HashedSecret {
            hash: hash_secret(&handle),
            kind: SecretKind::Ceremony,
            body: serde_json::to_string(&grant()).unwrap(),
            created_ms: 0,
            expires_ms: None,
        })
        .await
        .unwrap();
        assert!(matches!(caps.open(&handle).await, Err(Invalid::Unknown)));
    }
}
