//! Passkeys (WebAuthn) for step-up: with `[approvals] require_passkey = "floor"` (or
//! `"all"`), answering such a card needs a fresh, user-verified assertion from a registered
//! passkey, made for that card and that answer.
//!
//! **Invariant 33** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): a step-up assertion allows one answer or change, nothing else.

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

use crate::protocol::{ApprovalId, Timestamp};
use crate::server::store::passkeys::PasskeyRow;
use crate::server::store::secrets::{HashedSecret, HashedSecrets, SecretKind, hash_secret};
pub use party::{RelyingParty, relying_party};

/// How long a ceremony may take, from its options to its answer.
const CEREMONY_MS: i64 = 5 * 60 * 1000;
/// The most passkeys one server keeps (each is offered in every ceremony).
pub const MAX_PASSKEYS: usize = 16;

/// What an assertion allows.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(tag = "for", rename_all = "snake_case")]
pub enum Purpose {
    /// One answer to one card, as the card was shown: `answer` is the answer's fingerprint
    /// (`core::passkeys::answer_fingerprint`).
    Gate {
        approval_id: ApprovalId,
        digest: String,
        answer: String,
    },
    /// One change to the passkeys: `add:<name>` or `remove:<id>`.
    Manage { change: String },
}

#[derive(Serialize, Deserialize, Debug)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Step {
    /// `state` holds the registration's challenge and policy (kept by the server, never seen
    /// by the browser); `with_proof`: it was started with an assertion from a passkey.
    Register {
        name: String,
        state: Value,
        with_proof: bool,
    },
    Assert {
        purpose: Purpose,
    },
}

/// A ceremony in progress, kept in the store under its handle's hash; the browser holds the
/// handle and sends it back with its answer (so any instance can finish what another started).
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
    #[error("this passkey ceremony is not valid for this card, answer or change")]
    BadCeremony,
    #[error("this passkey ceremony is not valid: unknown, already used or expired; try again")]
    Gone,
    #[error("the passkey did not verify: {0}")]
    Failed(String),
}

/// Passkey ceremonies, kept in the store (so a ceremony is finished on any instance, and spent
/// once across instances and restarts).
pub struct Passkeys {
    kept: Arc<dyn HashedSecrets>,
}

/// What starts every ceremony handle (a leaked one is recognisable).
const HANDLE_PREFIX: &str = "pk2.";

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
            answer,
        } => {
            field(b"gate");
            field(approval_id.as_str().as_bytes());
            field(digest.as_bytes());
            field(answer.as_bytes());
        }
        Purpose::Manage { change } => {
            field(b"manage");
            field(change.as_bytes());
        }
    }
    field(nonce.as_bytes());
    hash.finalize().into()
}

fn nonce() -> String {
    Uuid::new_v4().simple().to_string()
}

/// The stored credentials among `rows` made for `rp` (its domain and its origin).
fn credentials_for(rows: &[PasskeyRow], rp: &RelyingParty) -> Vec<(String, Passkey)> {
    rows.iter()
        .filter(|r| r.rp_id == rp.id && r.origin == rp.origin.as_str())
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

/// A finished registration: the passkey to store, and what it was made under.
#[derive(Debug)]
pub struct Registered {
    pub rp: RelyingParty,
    pub name: String,
    pub key: Passkey,
    /// It was started with an assertion from a registered passkey.
    pub with_proof: bool,
}

impl Passkeys {
    pub fn new(kept: Arc<dyn HashedSecrets>) -> Passkeys {
        Passkeys { kept }
    }

    /// Keeps a new ceremony; the handle the browser gets for it.
    async fn keep(
        &self,
        rp: &RelyingParty,
        step: Step,
        nonce: String,
    ) -> Result<String, PasskeyError> {
        let handle = format!("{HANDLE_PREFIX}{}", crate::server::secret::random_token(32));
        let now = Timestamp::now_ms();
        let ceremony = Ceremony {
            step,
            rp_id: rp.id.clone(),
            origin: rp.origin.to_string(),
            nonce,
            expires_ms: now + CEREMONY_MS,
        };
        let body =
            serde_json::to_string(&ceremony).map_err(|e| PasskeyError::Failed(e.to_string()))?;
        self.kept
            .keep_secret(&HashedSecret {
                hash: hash_secret(&handle),
                kind: SecretKind::Ceremony,
                body,
                created_ms: now,
                expires_ms: Some(ceremony.expires_ms),
            })
            .await
            .map_err(|e| PasskeyError::Failed(format!("the ceremony could not be kept: {e}")))?;
        Ok(handle)
    }

    /// The unexpired, unspent ceremony `handle` names, with the relying party it was made for.
    async fn open(&self, handle: &str) -> Result<(Ceremony, RelyingParty), PasskeyError> {
        let row = self
            .kept
            .find_secret(SecretKind::Ceremony, &hash_secret(handle.trim()))
            .await
            .map_err(|e| PasskeyError::Failed(format!("the ceremony could not be read: {e}")))?
            .ok_or(PasskeyError::Gone)?;
        let ceremony: Ceremony =
            serde_json::from_str(&row.body).map_err(|_| PasskeyError::BadCeremony)?;
        if ceremony.expires_ms <= Timestamp::now_ms() {
            return Err(PasskeyError::Gone);
        }
        let origin = url::Url::parse(&ceremony.origin).map_err(|_| PasskeyError::BadCeremony)?;
        let rp = RelyingParty {
            id: ceremony.rp_id.clone(),
            origin,
        };
        Ok((ceremony, rp))
    }

    /// Spends the ceremony `handle` names; `Gone` if it already was (anywhere, ever).
    async fn spend(&self, handle: &str) -> Result<(), PasskeyError> {
        match self
            .kept
            .take_secret(SecretKind::Ceremony, &hash_secret(handle.trim()))
            .await
        {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(PasskeyError::Gone),
            Err(e) => Err(PasskeyError::Failed(format!(
                "the ceremony could not be recorded: {e}"
            ))),
        }
    }

    /// The options for `navigator.credentials.create`, and the ceremony's handle.
    pub async fn start_registration(
        &self,
        rp: &RelyingParty,
        name: &str,
        existing: &[PasskeyRow],
        with_proof: bool,
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
        let handle = self
            .keep(
                rp,
                Step::Register {
                    name: name.to_owned(),
                    state,
                    with_proof,
                },
                nonce(),
            )
            .await?;
        Ok((options, handle))
    }

    /// Checks the browser's new credential against its ceremony: the passkey to store.
    pub async fn finish_registration(
        &self,
        handle: &str,
        credential: &Value,
    ) -> Result<Registered, PasskeyError> {
        let (ceremony, rp) = self.open(handle).await?;
        let Step::Register {
            name,
            state,
            with_proof,
        } = &ceremony.step
        else {
            return Err(PasskeyError::BadCeremony);
        };
        let state: PasskeyRegistration =
            serde_json::from_value(state.clone()).map_err(|_| PasskeyError::BadCeremony)?;
        let credential: RegisterPublicKeyCredential = serde_json::from_value(credential.clone())
            .map_err(|e| PasskeyError::Failed(format!("not a WebAuthn credential: {e}")))?;
        self.spend(handle).await?;
        let key = webauthn(&rp)?
            .finish_passkey_registration(&credential, &state)
            .map_err(|e| PasskeyError::Failed(e.to_string()))?;
        Ok(Registered {
            rp,
            name: name.clone(),
            key,
            with_proof: *with_proof,
        })
    }

    /// The library's state for an assertion by any of `keys`, with its challenge the one
    /// derived from `purpose` and `nonce`; and the options for the browser.
    fn assertion_state(
        rp: &RelyingParty,
        keys: &[Passkey],
        purpose: &Purpose,
        nonce: &str,
    ) -> Result<(Value, PasskeyAuthentication), PasskeyError> {
        let (options, state) = webauthn(rp)?
            .start_passkey_authentication(keys)
            .map_err(|e| PasskeyError::Failed(e.to_string()))?;
        let challenge = URL_SAFE_NO_PAD.encode(challenge_for(purpose, nonce));
        // The library's random challenge is replaced, in its state and in the options, by the
        // one derived from what the assertion allows.
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
        let state: PasskeyAuthentication =
            serde_json::from_value(state).map_err(|e| PasskeyError::Failed(e.to_string()))?;
        Ok((options, state))
    }

    /// The options for `navigator.credentials.get` for `purpose`, and the ceremony's handle.
    pub async fn start_assertion(
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
            return Err(PasskeyError::NoneRegistered(rp.origin.to_string()));
        }
        let nonce = nonce();
        let (options, _) = Self::assertion_state(rp, &keys, &purpose, &nonce)?;
        let handle = self.keep(rp, Step::Assert { purpose }, nonce).await?;
        Ok((options, handle))
    }

    /// Verifies an assertion for `purpose`: its ceremony is kept here, unexpired, unspent
    /// and for exactly this purpose; it is checked against the stored passkeys of the
    /// ceremony's party (the state is rebuilt here, never taken from the browser) with the
    /// challenge derived from the purpose; the person verified.
    pub async fn finish_assertion(
        &self,
        purpose: &Purpose,
        handle: &str,
        credential: &Value,
        rows: &[PasskeyRow],
    ) -> Result<Verified, PasskeyError> {
        let (ceremony, rp) = self.open(handle).await?;
        let Step::Assert { purpose: made_for } = &ceremony.step else {
            return Err(PasskeyError::BadCeremony);
        };
        if made_for != purpose {
            return Err(PasskeyError::BadCeremony);
        }
        let stored = credentials_for(rows, &rp);
        let keys: Vec<Passkey> = stored.iter().map(|(_, k)| k.clone()).collect();
        if keys.is_empty() {
            return Err(PasskeyError::NoneRegistered(rp.origin.to_string()));
        }
        let credential: PublicKeyCredential = serde_json::from_value(credential.clone())
            .map_err(|e| PasskeyError::Failed(format!("not a WebAuthn assertion: {e}")))?;
        self.spend(handle).await?;
        let (_, state) = Self::assertion_state(&rp, &keys, purpose, &ceremony.nonce)?;
        let result = webauthn(&rp)?
            .finish_passkey_authentication(&credential, &state)
            .map_err(|e| PasskeyError::Failed(e.to_string()))?;
        if !result.user_verified() {
            return Err(PasskeyError::Failed("the person was not verified".into()));
        }
        let (passkey_id, mut key) = stored
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

    fn gate(a: &str, d: &str, answer: &str) -> Purpose {
        Purpose::Gate {
            approval_id: a.into(),
            digest: d.into(),
            answer: answer.into(),
        }
    }

    #[test]
    fn a_challenge_is_bound_to_its_card_its_answer_and_its_nonce() {
        let base = challenge_for(&gate("a", "d", "approve"), "n");
        assert_eq!(base, challenge_for(&gate("a", "d", "approve"), "n"));
        assert_ne!(
            base,
            challenge_for(&gate("b", "d", "approve"), "n"),
            "another card"
        );
        assert_ne!(
            base,
            challenge_for(&gate("a", "e", "approve"), "n"),
            "a changed card"
        );
        assert_ne!(
            base,
            challenge_for(&gate("a", "d", "edit"), "n"),
            "another answer"
        );
        assert_ne!(
            base,
            challenge_for(&gate("a", "d", "approve"), "m"),
            "another ceremony"
        );
        let manage = |c: &str| Purpose::Manage { change: c.into() };
        assert_ne!(
            challenge_for(&manage("add:x"), "n"),
            challenge_for(&manage("remove:x"), "n")
        );
        // No splice of the fields makes another card's challenge.
        assert_ne!(
            challenge_for(&gate("a\0", "d", ""), "n"),
            challenge_for(&gate("a", "\0d", ""), "n")
        );
    }

    #[tokio::test]
    async fn ceremonies_are_kept_by_hash_carry_their_party_and_are_spent_once() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("db").display());
        let store = crate::server::store::open(&url, Default::default(), "t")
            .await
            .unwrap();
        let passkeys = Passkeys::new(store.repos.secrets.clone());
        let rp = relying_party("", Some("localhost:1")).unwrap();
        assert_eq!(
            passkeys
                .start_assertion(
                    &rp,
                    Purpose::Manage {
                        change: "add:x".into()
                    },
                    &[]
                )
                .await
                .err(),
            Some(PasskeyError::NoneRegistered("http://localhost:1/".into()))
        );
        let (options, handle) = passkeys
            .start_registration(&rp, "phone", &[], false)
            .await
            .unwrap();
        assert!(
            handle.starts_with(HANDLE_PREFIX) && handle.len() > 40,
            "{handle}"
        );
        assert!(options.pointer("/publicKey/challenge").is_some());
        // What the store keeps is the handle's hash and the ceremony: never the handle.
        let kept = store
            .repos
            .secrets
            .secrets_of(SecretKind::Ceremony)
            .await
            .unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].hash, hash_secret(&handle));
        assert!(!kept[0].body.contains(&handle));
        for altered in [
            format!("{handle}x"),
            handle.replace("pk2.", "pk1."),
            String::new(),
        ] {
            assert_eq!(
                passkeys
                    .finish_registration(&altered, &Value::Null)
                    .await
                    .err(),
                Some(PasskeyError::Gone),
                "{altered}"
            );
        }
        let (_, party) = passkeys.open(&handle).await.unwrap();
        assert_eq!(party, rp);
        passkeys.spend(&handle).await.unwrap();
        assert_eq!(passkeys.spend(&handle).await, Err(PasskeyError::Gone));
        assert_eq!(passkeys.open(&handle).await.err(), Some(PasskeyError::Gone));
    }
}
