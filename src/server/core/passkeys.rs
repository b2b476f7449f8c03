//! Passkeys behind the routes: registering and removing them (admin; with one registered,
//! only with an assertion from one made for that change), and the step-up a card's answer
//! needs when `[approvals] require_passkey` covers it.
//!
//! **Invariant 33** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): `decide` calls `step_up` for every person's answer, whatever its door.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Answer, Core, Error};
use crate::protocol::{ApprovalId, ApprovalRequest, SessionId, Timestamp};
use crate::server::passkey::{MAX_PASSKEYS, PasskeyError, Purpose, RelyingParty, relying_party};
use crate::server::principal::{Principal, Scope};
use crate::server::store::passkeys::{PasskeyRow, PasskeyRows};

/// An assertion, as a page or the API sends it (one type on both sides of the wire).
pub type PasskeyProof = crate::protocol::PasskeyAnswer;

/// The longest passkey name.
const MAX_NAME_CHARS: usize = 64;

/// A change to the passkeys an assertion is asked for (`POST /api/v1/passkeys/assertions`).
#[derive(Deserialize, Debug, Clone)]
#[serde(tag = "change", rename_all = "snake_case", deny_unknown_fields)]
pub enum PasskeyChange {
    /// Registering a passkey of this name.
    Add { name: String },
    /// Removing this passkey.
    Remove { id: String },
}

impl PasskeyChange {
    fn purpose(&self) -> Purpose {
        Purpose::Manage {
            change: match self {
                PasskeyChange::Add { name } => format!("add:{}", name.trim()),
                PasskeyChange::Remove { id } => format!("remove:{id}"),
            },
        }
    }
}

/// What an answer says, as one fingerprint: its decision, its edits, the rule it makes and the
/// mode a plan runs in (not its reason or its tab). A step-up assertion is made for it.
pub fn answer_fingerprint(answer: &Answer) -> String {
    use sha2::Digest;
    let shape = json!({
        "decision": answer.decision.as_str(),
        "edits": answer.edits,
        "rule": answer.rule.as_ref().map(|r| json!({
            "scope": r.scope, "pattern": r.pattern, "expires_in_secs": r.expires_in_secs,
        })),
        "execution_mode": answer.execution_mode,
    });
    hex::encode(sha2::Sha256::digest(
        crate::protocol::canonical_json(&shape).as_bytes(),
    ))
}

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
        self.repos.passkeys.as_ref()
    }

    /// The relying party for a request that came with `host`.
    pub fn relying_party(&self, host: Option<&str>) -> Result<RelyingParty, Error> {
        relying_party(&self.config().config.server.public_url, host).map_err(Error::InvalidRequest)
    }

    pub async fn list_passkeys(&self) -> Result<Vec<PasskeyRow>, Error> {
        Ok(self.passkey_rows().passkeys().await?)
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

    /// An assertion for `change`, checked when any passkey is registered; whether one was.
    async fn manage_step_up(
        &self,
        change: &PasskeyChange,
        proof: Option<&PasskeyProof>,
        rows: &[PasskeyRow],
    ) -> Result<bool, Error> {
        if rows.is_empty() {
            return Ok(false);
        }
        let proof = proof.ok_or_else(|| {
            Error::PasskeyRequired(
                "a passkey is registered: confirm this change with it first".into(),
            )
        })?;
        self.verify(&change.purpose(), proof, rows).await?;
        Ok(true)
    }

    /// Starts registering a passkey named `name`: the options for the browser and the sealed
    /// ceremony. With one registered already, `proof` must be an assertion made for adding
    /// this name.
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
        if rows.len() >= MAX_PASSKEYS {
            return Err(Error::InvalidRequest(format!(
                "{MAX_PASSKEYS} passkeys are registered; remove one first"
            )));
        }
        // The first passkey is trusted on first use: only a person at a browser they logged in
        // with a login link (or the admin token) registers it, never a bearer (a token, the
        // local CLI's credential), which a program can hold.
        if rows.is_empty() && !who.is_browser() {
            return Err(Error::Forbidden(
                "the first passkey is registered in a browser logged in with a login link (`countersign login`), not with a token".into(),
            ));
        }
        let change = PasskeyChange::Add {
            name: name.to_owned(),
        };
        let with_proof = self.manage_step_up(&change, proof, &rows).await?;
        Ok(self
            .passkeys
            .start_registration(&rp, name, &rows, with_proof)
            .await?)
    }

    /// Finishes a registration: stores the new passkey. One started without an assertion
    /// (when none was registered) cannot finish once a passkey exists.
    pub async fn finish_passkey_registration(
        &self,
        ceremony: &str,
        credential: &Value,
        who: &Principal,
    ) -> Result<PasskeyRow, Error> {
        Self::admin_only(who)?;
        let done = self
            .passkeys
            .finish_registration(ceremony, credential)
            .await?;
        let rows = self.list_passkeys().await?;
        if !done.with_proof && !who.is_browser() {
            return Err(Error::Forbidden(
                "the first passkey is registered in a browser logged in with a login link (`countersign login`), not with a token".into(),
            ));
        }
        if !done.with_proof && !rows.is_empty() {
            return Err(Error::PasskeyRequired(
                "a passkey was registered meanwhile: start again and confirm with it".into(),
            ));
        }
        if rows.len() >= MAX_PASSKEYS {
            return Err(Error::InvalidRequest(format!(
                "{MAX_PASSKEYS} passkeys are registered; remove one first"
            )));
        }
        let row = PasskeyRow {
            id: uuid::Uuid::new_v4().to_string(),
            name: done.name,
            rp_id: done.rp.id.clone(),
            origin: done.rp.origin.to_string(),
            credential: serde_json::to_string(&done.key)
                .map_err(|e| Error::Internal(format!("a passkey did not serialize: {e}")))?,
            created_at: Timestamp::now(),
            last_used_at: None,
        };
        self.passkey_rows().add_passkey(&row, &who.actor()).await?;
        Ok(row)
    }

    /// Options for an assertion that allows `change`.
    pub async fn start_manage_assertion(
        &self,
        host: Option<&str>,
        change: &PasskeyChange,
        who: &Principal,
    ) -> Result<(Value, String), Error> {
        Self::admin_only(who)?;
        let rp = self.relying_party(host)?;
        let rows = self.list_passkeys().await?;
        Ok(self
            .passkeys
            .start_assertion(&rp, change.purpose(), &rows)
            .await?)
    }

    /// Removes a passkey, with an assertion made for removing it (from any registered one).
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
        let change = PasskeyChange::Remove { id: id.to_owned() };
        self.manage_step_up(&change, proof, &rows).await?;
        if self.passkey_rows().remove_passkey(id, &who.actor()).await? {
            Ok(())
        } else {
            Err(Error::UnknownPasskey(id.chars().take(64).collect()))
        }
    }

    /// Options for an assertion that gives `answer` to the card `approval_id` of `session_id`.
    pub async fn start_gate_assertion(
        &self,
        host: Option<&str>,
        session: &SessionId,
        approval_id: &ApprovalId,
        answer: &Answer,
    ) -> Result<(Value, String), Error> {
        let rp = self.relying_party(host)?;
        let Some(gate) = self.repos.gates.get_gate(session, approval_id).await? else {
            // As `decide` answers: an unknown session before an unknown approval.
            self.session_row(session).await?;
            return Err(Error::UnknownApproval(
                approval_id.as_str().chars().take(64).collect(),
            ));
        };
        if let Some(resolution) = gate.resolution {
            return Err(Error::for_resolved(resolution));
        }
        let rows = self.list_passkeys().await?;
        let purpose = Purpose::Gate {
            approval_id: gate.request.body.approval_id.clone(),
            digest: gate.request.body.digest.clone(),
            answer: answer_fingerprint(answer),
        };
        Ok(self.passkeys.start_assertion(&rp, purpose, &rows).await?)
    }

    /// Whether answering `request` needs a passkey now.
    pub fn needs_passkey(&self, request: &crate::protocol::ApprovalRequestBody) -> bool {
        self.config()
            .config
            .approvals
            .require_passkey
            .applies_to(request.reason)
    }

    /// The step-up a person's `answer` to `request` needs: `None` when the setting does not
    /// cover it, else the name of the passkey whose assertion (made for this card as shown and
    /// this answer) verified. Refused without one.
    pub(super) async fn step_up(
        &self,
        request: &ApprovalRequest,
        answer: &Answer,
    ) -> Result<Option<String>, Error> {
        if !self.needs_passkey(&request.body) {
            return Ok(None);
        }
        let proof = answer.passkey.as_ref().ok_or_else(|| {
            Error::PasskeyRequired(
                "this card needs a passkey: confirm with yours on the card (approvals.require_passkey)"
                    .into(),
            )
        })?;
        let rows = self.list_passkeys().await?;
        let purpose = Purpose::Gate {
            approval_id: request.body.approval_id.clone(),
            digest: request.body.digest.clone(),
            answer: answer_fingerprint(answer),
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
