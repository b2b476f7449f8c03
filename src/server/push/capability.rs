//! The one-time answer capability a notification's Approve and Deny carry.
//!
//! **Invariants** (ARCHITECTURE.md, "Answer capabilities"):
//! - *Bound*: it names one gate (session, approval id) and the digest of the card it was made
//!   for, and one holder (a push subscription, or the ntfy topic); the MAC covers all of it,
//!   so no field can be swapped.
//! - *Useless for anything else*: the only door that takes it is
//!   `POST /api/v1/push/answers/{capability}`, and the only answers it gives are approve and
//!   deny, as its holder's credential; never an edit, a rule, a read.
//! - *Single use*: the gate it names resolves exactly once; a second tap finds it answered
//!   (`409 already_resolved`), a changed card finds a new digest (`409 stale_digest`).
//! - *Expiry*: it dies with the gate's deadline (`410 capability_expired`).
//! - *Revocation*: deleting its subscription, or revoking the subscription's token, ends it
//!   (`410 capability_ended`); so does a new startup token for the subscriptions it made.
//!
//! The server keeps nothing per capability: all of the above is checked against the MAC and
//! the live rows, so several instances honour each other's capabilities without sharing a
//! table.

use serde::{Deserialize, Serialize};

use crate::protocol::{ApprovalId, SessionId};
use crate::server::seal::Seal;
use crate::server::secret::Secret;

/// A capability longer than this is not one of ours (ids are UUIDs, a digest 64 hex digits).
pub const MAX_LEN: usize = 1024;

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
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("this is not a valid answer capability")]
pub struct Invalid;

/// Makes and checks capabilities (`server::seal`, purpose `answer-capability`).
#[derive(Debug)]
pub struct Signer {
    seal: Seal,
}

impl Signer {
    /// A signer under the root secret (`VapidKeys::seal_root`).
    pub fn new(root: &Secret) -> Signer {
        Signer {
            seal: Seal::new(root, "answer-capability", "cs1."),
        }
    }

    /// The capability for `grant`.
    pub fn mint(&self, grant: &Grant) -> String {
        self.seal.seal(grant)
    }

    /// The grant `capability` carries, if this server made it. Expiry and revocation are the
    /// caller's to check against the clock and the rows.
    pub fn open(&self, capability: &str) -> Result<Grant, Invalid> {
        if capability.len() > MAX_LEN {
            return Err(Invalid);
        }
        self.seal.open(capability).map_err(|_| Invalid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFIX: &str = "cs1.";

    fn grant() -> Grant {
        Grant {
            session_id: "s".into(),
            approval_id: "a".into(),
            digest: "d".repeat(64),
            holder: Holder::Subscription("sub-1".into()),
            expires_ms: 1_900_000_000_000,
        }
    }

    #[test]
    fn a_capability_opens_only_with_its_key_and_unchanged() {
        let signer = Signer::new(&Secret::new("token-one"));
        let cap = signer.mint(&grant());
        assert_eq!(signer.open(&cap), Ok(grant()));
        // Another access token: another key.
        assert_eq!(
            Signer::new(&Secret::new("token-two")).open(&cap),
            Err(Invalid)
        );
        // Any field swapped (here: the approval id) breaks the MAC.
        let mut other = grant();
        other.approval_id = "b".into();
        let forged_body = signer.mint(&other);
        let (_, body_b) = forged_body.split_at(PREFIX.len());
        let body_b = body_b.split_once('.').unwrap().0;
        let tag_a = cap.rsplit_once('.').unwrap().1;
        assert_eq!(
            signer.open(&format!("{PREFIX}{body_b}.{tag_a}")),
            Err(Invalid)
        );
        for junk in ["", "cs1.", "cs1.x.y", "cs2.abc.def", &"a".repeat(2000)] {
            assert_eq!(signer.open(junk), Err(Invalid), "{junk}");
        }
        let truncated = &cap[..cap.len() - 2];
        assert_eq!(signer.open(truncated), Err(Invalid));
    }

    #[test]
    fn the_key_is_not_the_token() {
        let signer = Signer::new(&Secret::new("token-one"));
        assert!(!format!("{signer:?}").contains("token-one"));
        assert!(!signer.mint(&grant()).contains("token-one"));
    }
}
