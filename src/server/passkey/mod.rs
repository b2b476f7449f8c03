//! Passkeys (WebAuthn) for step-up: with `[approvals] require_passkey = "floor"` (or
//! `"all"`), answering such a card needs a fresh, user-verified assertion from a registered
//! passkey, made for that card.
//!
//! **Invariants** (ARCHITECTURE.md, "Step-up"):
//! - An assertion's challenge is derived from the gate it answers — its approval id, its
//!   digest and a fresh nonce (`challenge_for`) — so it answers that card as it was shown and
//!   no other; the ceremony that holds it is sealed (`server::seal`), expires after five
//!   minutes, and is used at most once (`Passkeys::spend`, in the store: across instances
//!   and restarts).
//! - User verification is required in every ceremony (the library's passkey policy).
//! - Adding a passkey when one exists, or removing one, needs an assertion from a registered
//!   one; only the local CLI (`countersign passkey reset`) removes them all.

pub mod party;

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use webauthn_rs::prelude::{
    Passkey, PasskeyAuthentication, PasskeyRegistration, PublicKeyCredential,
    RegisterPublicKeyCredential, Uuid,
};
use webauthn_rs::{Webauthn, WebauthnBuilder};

use crate::protocol::Timestamp;
use crate::server::seal::Seal;
use crate::server::secret::Secret;
use crate::server::store::passkeys::{PasskeyRow, PasskeyRows};
pub use party::{RelyingParty, relying_party};

/// How long a ceremony may take, from its options to its answer.
const CEREMONY_MS: i64 = 5 * 60 * 1000;

/// What an assertion is for.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(tag = "for", rename_all = "snake_case")]
pub enum Purpose {
    /// Answering one card, as it was shown.
    Gate { approval_id: String, digest: String },
    /// Adding or removing a passkey.
    Manage,
}

#[derive(Serialize, Deserialize, Debug)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Step {
    Register { name: String, state: Value },
    Assert { purpose: Purpose, state: Value },
}

/// A ceremony in progress, sealed and handed to the browser, which sends it back with its
/// answer (so any instance can finish what another started).
#[derive(Serialize, Deserialize, Debug)]
struct Ceremony {
    step: Step,
    rp_id: String,
    origin: String,
    nonce: String,
    expires_ms: i64,
}

/// Why a passkey ceremony did not succeed, in words a person can act on.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PasskeyError {
    #[error("{0}")]
    Party(String),
    #[error("no passkey is registered for {0}; register one on the Security page")]
    NoneRegistered(String),
    #[error(
        "this passkey ceremony is not valid (altered, for another card, or from another server)"
    )]
    BadCeremony,
    #[error("this passkey ceremony has expired; try again")]
    Expired,
    #[error("this passkey answer was already used; try again")]
    Replayed,
    #[error("the passkey did not verify: {0}")]
    Failed(String),
}

/// Passkey ceremonies: their seal, and where spent nonces are kept (the store, so a ceremony
/// is spent once across instances and restarts).
pub struct Passkeys {
    seal: Seal,
    spent: Arc<dyn PasskeyRows>,
}

impl std::fmt::Debug for Passkeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Passkeys")
    }
}

fn webauthn(rp: &RelyingParty) -> Result<Webauthn, PasskeyError> {
    WebauthnBuilder::new(&rp.id, &rp.origin)
        .and_then(|b| b.rp_name("Countersign").build())
        .map_err(|e| PasskeyError::Party(format!("cannot use {} for passkeys: {e}", rp.origin)))
}

/// The challenge of an assertion for `purpose`: derived from it and a fresh nonce.
pub fn challenge_for(purpose: &Purpose, nonce: &str) -> [u8; 32] {
    let mut hash = Sha256::new();
    // Every field length-prefixed: no two different purposes hash alike.
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_be_bytes());
        hash.update(bytes);
    };
    field(b"countersign-step-up");
    match purpose {
        Purpose::Gate {
            approval_id,
            digest,
        } => {
            field(b"gate");
            field(approval_id.as_bytes());
            field(digest.as_bytes());
        }
        Purpose::Manage => field(b"manage"),
    }
    field(nonce.as_bytes());
    hash.finalize().into()
}

fn nonce() -> String {
    Uuid::new_v4().simple().to_string()
}

/// The stored credentials among `rows` made for `rp`.
fn credentials_for(rows: &[PasskeyRow], rp: &RelyingParty) -> Vec<(String, Passkey)> {
    rows.iter()
        .filter(|r| r.rp_id == rp.id)
        .filter_map(|r| {
            let key: Passkey = serde_json::from_str(&r.credential).ok()?;
            Some((r.id.clone(), key))
        })
        .collect()
}

/// The result of a verified assertion: which passkey, and its credential to store back.
#[derive(Debug)]
pub struct Verified {
    pub passkey_id: String,
    pub credential: String,
}

impl Passkeys {
    /// Ceremonies sealed under the root secret (`VapidKeys::seal_root`).
    pub fn new(root: &Secret, spent: Arc<dyn PasskeyRows>) -> Passkeys {
        Passkeys {
            seal: Seal::new(root, "passkey-ceremony", "pk1."),
            spent,
        }
    }

    fn seal(&self, rp: &RelyingParty, step: Step, nonce: String) -> String {
        self.seal.seal(&Ceremony {
            step,
            rp_id: rp.id.clone(),
            origin: rp.origin.to_string(),
            nonce,
            expires_ms: Timestamp::now_ms() + CEREMONY_MS,
        })
    }

    /// Opens a ceremony this server sealed, unexpired, with the relying party it was made for
    /// (the party is part of what is sealed: an assertion is checked against it alone).
    fn open(&self, sealed: &str) -> Result<(Ceremony, RelyingParty), PasskeyError> {
        let ceremony: Ceremony = self
            .seal
            .open(sealed)
            .map_err(|_| PasskeyError::BadCeremony)?;
        if ceremony.expires_ms <= Timestamp::now_ms() {
            return Err(PasskeyError::Expired);
        }
        let origin = url::Url::parse(&ceremony.origin).map_err(|_| PasskeyError::BadCeremony)?;
        let rp = RelyingParty {
            id: ceremony.rp_id.clone(),
            origin,
        };
        Ok((ceremony, rp))
    }

    /// Marks a ceremony's nonce used; `Replayed` if it already was (anywhere, ever).
    async fn spend(&self, ceremony: &Ceremony) -> Result<(), PasskeyError> {
        match self
            .spent
            .spend_ceremony(&ceremony.nonce, ceremony.expires_ms)
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(PasskeyError::Replayed),
            Err(e) => Err(PasskeyError::Failed(format!(
                "the ceremony could not be recorded: {e}"
            ))),
        }
    }

    /// The options for `navigator.credentials.create`, and the sealed ceremony.
    pub fn start_registration(
        &self,
        rp: &RelyingParty,
        name: &str,
        existing: &[PasskeyRow],
    ) -> Result<(Value, String), PasskeyError> {
        let exclude = credentials_for(existing, rp)
            .into_iter()
            .map(|(_, key)| key.cred_id().clone())
            .collect::<Vec<_>>();
        let (options, state) = webauthn(rp)?
            .start_passkey_registration(Uuid::new_v4(), "countersign", name, Some(exclude))
            .map_err(|e| PasskeyError::Failed(e.to_string()))?;
        let state =
            serde_json::to_value(&state).map_err(|e| PasskeyError::Failed(e.to_string()))?;
        let options =
            serde_json::to_value(&options).map_err(|e| PasskeyError::Failed(e.to_string()))?;
        let sealed = self.seal(
            rp,
            Step::Register {
                name: name.to_owned(),
                state,
            },
            nonce(),
        );
        Ok((options, sealed))
    }

    /// Checks the browser's new credential against its ceremony: the passkey to store, with
    /// the name it was started with.
    pub async fn finish_registration(
        &self,
        sealed: &str,
        credential: &Value,
    ) -> Result<(RelyingParty, String, Passkey), PasskeyError> {
        let (ceremony, rp) = self.open(sealed)?;
        let Step::Register { name, state } = &ceremony.step else {
            return Err(PasskeyError::BadCeremony);
        };
        let state: PasskeyRegistration =
            serde_json::from_value(state.clone()).map_err(|_| PasskeyError::BadCeremony)?;
        let credential: RegisterPublicKeyCredential = serde_json::from_value(credential.clone())
            .map_err(|e| PasskeyError::Failed(format!("not a WebAuthn credential: {e}")))?;
        self.spend(&ceremony).await?;
        let key = webauthn(&rp)?
            .finish_passkey_registration(&credential, &state)
            .map_err(|e| PasskeyError::Failed(e.to_string()))?;
        Ok((rp, name.clone(), key))
    }

    /// The options for `navigator.credentials.get` for `purpose`, with its challenge derived
    /// from it, and the sealed ceremony.
    pub fn start_assertion(
        &self,
        rp: &RelyingParty,
        purpose: Purpose,
        rows: &[PasskeyRow],
    ) -> Result<(Value, String), PasskeyError> {
        let keys: Vec<Passkey> = credentials_for(rows, rp)
            .into_iter()
            .map(|(_, k)| k)
            .collect();
        if keys.is_empty() {
            return Err(PasskeyError::NoneRegistered(rp.id.clone()));
        }
        let (options, state) = webauthn(rp)?
            .start_passkey_authentication(&keys)
            .map_err(|e| PasskeyError::Failed(e.to_string()))?;
        let nonce = nonce();
        let challenge = URL_SAFE_NO_PAD.encode(challenge_for(&purpose, &nonce));
        // The library's random challenge is replaced, in its state and in the options, by the
        // one derived from what the assertion is for.
        let mut state =
            serde_json::to_value(&state).map_err(|e| PasskeyError::Failed(e.to_string()))?;
        let mut options =
            serde_json::to_value(&options).map_err(|e| PasskeyError::Failed(e.to_string()))?;
        match (
            state.pointer_mut("/ast/challenge"),
            options.pointer_mut("/publicKey/challenge"),
        ) {
            (Some(in_state), Some(in_options)) => {
                *in_state = Value::String(challenge.clone());
                *in_options = Value::String(challenge);
            }
            _ => return Err(PasskeyError::Failed("unexpected ceremony state".into())),
        }
        let sealed = self.seal(rp, Step::Assert { purpose, state }, nonce);
        Ok((options, sealed))
    }

    /// Verifies an assertion for `purpose`: its ceremony is this server's, unexpired, unspent
    /// and for exactly this purpose; its challenge the one derived from it; the passkey one of
    /// `rows`; the person verified.
    pub async fn finish_assertion(
        &self,
        purpose: &Purpose,
        sealed: &str,
        credential: &Value,
        rows: &[PasskeyRow],
    ) -> Result<Verified, PasskeyError> {
        let (ceremony, rp) = self.open(sealed)?;
        let Step::Assert {
            purpose: made_for,
            state,
        } = &ceremony.step
        else {
            return Err(PasskeyError::BadCeremony);
        };
        if made_for != purpose {
            return Err(PasskeyError::BadCeremony);
        }
        let expected = URL_SAFE_NO_PAD.encode(challenge_for(purpose, &ceremony.nonce));
        if state.pointer("/ast/challenge").and_then(Value::as_str) != Some(expected.as_str()) {
            return Err(PasskeyError::BadCeremony);
        }
        let state: PasskeyAuthentication =
            serde_json::from_value(state.clone()).map_err(|_| PasskeyError::BadCeremony)?;
        let credential: PublicKeyCredential = serde_json::from_value(credential.clone())
            .map_err(|e| PasskeyError::Failed(format!("not a WebAuthn assertion: {e}")))?;
        self.spend(&ceremony).await?;
        let result = webauthn(&rp)?
            .finish_passkey_authentication(&credential, &state)
            .map_err(|e| PasskeyError::Failed(e.to_string()))?;
        if !result.user_verified() {
            return Err(PasskeyError::Failed("the person was not verified".into()));
        }
        let (passkey_id, mut key) = credentials_for(rows, &rp)
            .into_iter()
            .find(|(_, key)| key.cred_id() == result.cred_id())
            .ok_or_else(|| PasskeyError::Failed("that passkey is no longer registered".into()))?;
        key.update_credential(&result);
        let credential =
            serde_json::to_string(&key).map_err(|e| PasskeyError::Failed(e.to_string()))?;
        Ok(Verified {
            passkey_id,
            credential,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenge_is_bound_to_its_card_and_its_nonce() {
        let gate = |a: &str, d: &str| Purpose::Gate {
            approval_id: a.into(),
            digest: d.into(),
        };
        let base = challenge_for(&gate("a", "d"), "n");
        assert_eq!(base, challenge_for(&gate("a", "d"), "n"));
        assert_ne!(base, challenge_for(&gate("b", "d"), "n"), "another card");
        assert_ne!(base, challenge_for(&gate("a", "e"), "n"), "a changed card");
        assert_ne!(
            base,
            challenge_for(&gate("a", "d"), "m"),
            "another ceremony"
        );
        assert_ne!(base, challenge_for(&Purpose::Manage, "n"));
        // No splice of the fields makes another card's challenge.
        assert_ne!(
            challenge_for(&gate("a\0", "d"), "n"),
            challenge_for(&gate("a", "\0d"), "n")
        );
    }

    #[tokio::test]
    async fn an_assertion_ceremony_needs_a_passkey_for_this_party() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("db").display());
        let store = crate::server::store::open(&url, Default::default(), "t")
            .await
            .unwrap();
        let passkeys = Passkeys::new(&Secret::new("token"), store);
        let rp = relying_party("", Some("localhost:1")).unwrap();
        assert_eq!(
            passkeys.start_assertion(&rp, Purpose::Manage, &[]).err(),
            Some(PasskeyError::NoneRegistered("localhost".into()))
        );
        // A registration ceremony carries its party, opens only unaltered, and is spent once.
        let (options, sealed) = passkeys.start_registration(&rp, "phone", &[]).unwrap();
        assert!(options.pointer("/publicKey/challenge").is_some());
        let altered = format!("{sealed}x");
        assert_eq!(
            passkeys
                .finish_registration(&altered, &Value::Null)
                .await
                .err(),
            Some(PasskeyError::BadCeremony)
        );
        let (ceremony, party) = passkeys.open(&sealed).unwrap();
        assert_eq!(party, rp);
        passkeys.spend(&ceremony).await.unwrap();
        assert_eq!(passkeys.spend(&ceremony).await, Err(PasskeyError::Replayed));
    }
}
