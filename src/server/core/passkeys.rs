//! Passkeys behind the routes: registering and removing them (admin; with one registered,
//! only with an assertion from one), and the step-up a card's answer needs when
//! `[approvals] require_passkey` covers it.
//!
//! **Invariant:** `decide` calls `step_up` for every answer by a person, whatever door it came
//! through (page, API, CLI, a notification): a card the setting covers is answered only with
//! an assertion made for that card as it was shown.

use serde_json::Value;

use super::{Core, Error};
use crate::protocol::{ApprovalRequest, Timestamp};
use crate::server::passkey::{PasskeyError, Purpose, RelyingParty, relying_party};
use crate::server::principal::{Principal, Scope};
use crate::server::store::passkeys::{PasskeyRow, PasskeyRows};

/// An assertion, as a page or the API sends it (one type on both sides of the wire).
pub type PasskeyProof = crate::protocol::PasskeyAnswer;

/// The longest passkey name.
const MAX_NAME_CHARS: usize = 64;

impl From<PasskeyError> for Error {
    fn from(err: PasskeyError) -> Self {
        match err {
            PasskeyError::Party(why) => Error::InvalidRequest(why),
            PasskeyError::NoneRegistered(_) => Error::PasskeyRequired(err.to_string()),
            other => Error::PasskeyRefused(other.to_string()),
        }
    }
}

impl Core {
    fn passkey_rows(&self) -> &dyn PasskeyRows {
        self.hub.store().as_ref()
    }

    /// The relying party for a request that came with `host`.
    pub fn relying_party(&self, host: Option<&str>) -> Result<RelyingParty, Error> {
        relying_party(&self.config().config.server.public_url, host).map_err(Error::InvalidRequest)
    }

    pub async fn list_passkeys(&self) -> Result<Vec<PasskeyRow>, Error> {
        Ok(self.passkey_rows().passkeys().await?)
    }

    /// An assertion for managing passkeys, checked (when any is registered).
    async fn manage_step_up(
        &self,
        proof: Option<&PasskeyProof>,
        rows: &[PasskeyRow],
    ) -> Result<(), Error> {
        if rows.is_empty() {
            return Ok(());
        }
        let proof = proof.ok_or_else(|| {
            Error::PasskeyRequired(
                "a passkey is registered: confirm with it to add or remove one".into(),
            )
        })?;
        self.verify(&Purpose::Manage, proof, rows).await.map(|_| ())
    }

    fn admin_only(who: &Principal) -> Result<(), Error> {
        if who.scope() == Scope::Admin {
            Ok(())
        } else {
            Err(Error::Forbidden(
                "only an admin credential manages passkeys".into(),
            ))
        }
    }

    /// Starts registering a passkey named `name`: the options for the browser and the sealed
    /// ceremony. With one registered already, `proof` must be an assertion from it.
    pub async fn start_passkey_registration(
        &self,
        host: Option<&str>,
        name: &str,
        proof: Option<&PasskeyProof>,
        who: &Principal,
    ) -> Result<(Value, String), Error> {
        Self::admin_only(who)?;
        let name = name.trim();
        if name.is_empty()
            || name.chars().count() > MAX_NAME_CHARS
            || name.chars().any(char::is_control)
        {
            return Err(Error::InvalidName(format!(
                "a passkey's name is 1 to {MAX_NAME_CHARS} characters, without control characters"
            )));
        }
        let rp = self.relying_party(host)?;
        let rows = self.list_passkeys().await?;
        if rows.iter().any(|r| r.name == name) {
            return Err(Error::NameTaken(format!("a passkey named `{name}` exists")));
        }
        self.manage_step_up(proof, &rows).await?;
        Ok(self.passkeys.start_registration(&rp, name, &rows)?)
    }

    /// Finishes a registration: stores the new passkey.
    pub async fn finish_passkey_registration(
        &self,
        ceremony: &str,
        credential: &Value,
        who: &Principal,
    ) -> Result<PasskeyRow, Error> {
        Self::admin_only(who)?;
        let (rp, name, key) = self
            .passkeys
            .finish_registration(ceremony, credential)
            .await?;
        let row = PasskeyRow {
            id: uuid::Uuid::new_v4().to_string(),
            name,
            rp_id: rp.id.clone(),
            credential: serde_json::to_string(&key)
                .map_err(|e| Error::Internal(format!("a passkey did not serialize: {e}")))?,
            created_at: Timestamp::now(),
            last_used_at: None,
        };
        self.passkey_rows().add_passkey(&row, &who.actor()).await?;
        Ok(row)
    }

    /// Options for an assertion that manages passkeys.
    pub async fn start_manage_assertion(
        &self,
        host: Option<&str>,
    ) -> Result<(Value, String), Error> {
        let rp = self.relying_party(host)?;
        let rows = self.list_passkeys().await?;
        Ok(self.passkeys.start_assertion(&rp, Purpose::Manage, &rows)?)
    }

    /// Removes a passkey, with an assertion from a registered one (it may be the same).
    pub async fn remove_passkey(
        &self,
        id: &str,
        proof: Option<&PasskeyProof>,
        who: &Principal,
    ) -> Result<(), Error> {
        Self::admin_only(who)?;
        let rows = self.list_passkeys().await?;
        if !rows.iter().any(|r| r.id == id) {
            return Err(Error::UnknownPasskey(id.chars().take(64).collect()));
        }
        self.manage_step_up(proof, &rows).await?;
        if self.passkey_rows().remove_passkey(id, &who.actor()).await? {
            Ok(())
        } else {
            Err(Error::UnknownPasskey(id.chars().take(64).collect()))
        }
    }

    /// Options for an assertion that answers the card `approval_id` of `session_id`.
    pub async fn start_gate_assertion(
        &self,
        host: Option<&str>,
        session_id: &str,
        approval_id: &str,
    ) -> Result<(Value, String), Error> {
        let rp = self.relying_party(host)?;
        let Some(gate) = self.hub.store().get_gate(session_id, approval_id).await? else {
            return Err(Error::UnknownApproval(
                approval_id.chars().take(64).collect(),
            ));
        };
        if let Some(resolution) = gate.resolution {
            return Err(Error::for_resolved(resolution));
        }
        let rows = self.list_passkeys().await?;
        let purpose = Purpose::Gate {
            approval_id: gate.request.body.approval_id.clone(),
            digest: gate.request.body.digest.clone(),
        };
        Ok(self.passkeys.start_assertion(&rp, purpose, &rows)?)
    }

    /// Whether answering `request` needs a passkey now.
    pub fn needs_passkey(&self, request: &crate::protocol::ApprovalRequestBody) -> bool {
        self.config()
            .config
            .approvals
            .require_passkey
            .applies_to(request.reason)
    }

    /// The step-up a person's answer to `request` needs: `None` when the setting does not
    /// cover it, else the name of the passkey whose assertion (made for this card as shown)
    /// verified. Refused without one.
    pub(super) async fn step_up(
        &self,
        request: &ApprovalRequest,
        proof: Option<&PasskeyProof>,
    ) -> Result<Option<String>, Error> {
        if !self.needs_passkey(&request.body) {
            return Ok(None);
        }
        let proof = proof.ok_or_else(|| {
            Error::PasskeyRequired(
                "this card needs a passkey: confirm with yours on the card (approvals.require_passkey)"
                    .into(),
            )
        })?;
        let rows = self.list_passkeys().await?;
        let purpose = Purpose::Gate {
            approval_id: request.body.approval_id.clone(),
            digest: request.body.digest.clone(),
        };
        let name = self.verify(&purpose, proof, &rows).await?;
        Ok(Some(name))
    }

    /// Verifies `proof` for `purpose` and records the passkey's use; its name.
    async fn verify(
        &self,
        purpose: &Purpose,
        proof: &PasskeyProof,
        rows: &[PasskeyRow],
    ) -> Result<String, Error> {
        let (Some(ceremony), Some(credential)) = (&proof.ceremony, &proof.credential) else {
            return Err(Error::PasskeyRefused(
                "a passkey answer needs its `ceremony` and `credential`".into(),
            ));
        };
        let verified = self
            .passkeys
            .finish_assertion(purpose, ceremony, credential, rows)
            .await?;
        self.passkey_rows()
            .touch_passkey(
                &verified.passkey_id,
                &verified.credential,
                &Timestamp::now(),
            )
            .await?;
        Ok(rows
            .iter()
            .find(|r| r.id == verified.passkey_id)
            .map(|r| r.name.clone())
            .unwrap_or(verified.passkey_id))
    }
}
