//! Secrets the server hands out and later takes back, kept only as hashes: a narrow repository
//! beside `Store` (which every backend also implements).
//!
//! **Invariant 38** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): a row keeps only a secret's SHA-256 and what it grants.

use async_trait::async_trait;

use super::StoreError;
use crate::protocol::Spelling;

/// What a hashed secret is. Each kind is looked up only as itself, so one can never stand in
/// for another (a capability is no login, a login code no token).
#[derive(strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SecretKind {
    /// The admin ("startup") token: at most one row.
    AdminToken,
    /// A short-lived admin credential the local CLI makes for one command.
    CliToken,
    /// A single-use login link (`countersign login`).
    LoginCode,
    /// A browser's session cookie.
    BrowserLogin,
    /// A notification's one-time answer capability.
    Capability,
    /// A passkey ceremony in progress (spent once).
    Ceremony,
    /// Not a secret: the marker the migration leaves for the one start that may take over an
    /// older build's token file (`LEGACY_TOKEN_WINDOW`).
    LegacyTokenWindow,
    /// A phone's single-use login link, logging in as one `approve` token (the Tokens page):
    /// a kind of its own, so a build that knows only `LoginCode` (an older instance on a
    /// shared database, a rollback) never spends one as the admin's login link.
    PhoneLoginCode,
    /// An OpenID Connect sign-in in progress (issue 41), under its browser's flow cookie:
    /// the state, nonce and PKCE verifier its callback must meet (spent once).
    OidcSignIn,
}

/// The key of the `LegacyTokenWindow` marker row.
pub const LEGACY_TOKEN_WINDOW: &str = "legacy-token-window";

impl Spelling for SecretKind {
    const ALL: &'static [SecretKind] = <SecretKind as strum::VariantArray>::VARIANTS;

    /// The spelling in the `kind` column (strum's, the one derive that spells it).
    fn spelling(self) -> &'static str {
        self.into()
    }
}

/// One kept secret, by its hash.
#[derive(Clone, Debug, PartialEq)]
pub struct HashedSecret {
    /// Hex SHA-256 of the secret (`hash_secret`).
    pub hash: String,
    pub kind: SecretKind,
    /// What it grants, as JSON (never the secret itself).
    pub body: String,
    pub created_ms: i64,
    /// After this it grants nothing (and is pruned); `None`: until it is forgotten.
    pub expires_ms: Option<i64>,
}

/// The hash a secret is kept and looked up by.
pub fn hash_secret(secret: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(secret.as_bytes()))
}

#[async_trait]
pub trait HashedSecrets: Send + Sync {
    /// Keeps `row` (and prunes rows past their expiry). `Taken` if the hash is kept already.
    async fn keep_secret(&self, row: &HashedSecret) -> Result<(), StoreError>;
    /// Keeps `row` as the only one of its kind (the admin token), in one transaction; keeping
    /// the one already kept again changes nothing.
    async fn replace_secrets(&self, row: &HashedSecret) -> Result<(), StoreError>;
    /// The unexpired row of `kind` with `hash`.
    async fn find_secret(
        &self,
        kind: SecretKind,
        hash: &str,
    ) -> Result<Option<HashedSecret>, StoreError>;
    /// Removes and returns the unexpired row of `kind` with `hash`: whoever takes it first,
    /// on any instance, gets it; everyone after gets `None` (single use).
    async fn take_secret(
        &self,
        kind: SecretKind,
        hash: &str,
    ) -> Result<Option<HashedSecret>, StoreError>;
    /// Every unexpired row of `kind`, oldest first.
    async fn secrets_of(&self, kind: SecretKind) -> Result<Vec<HashedSecret>, StoreError>;
    /// Removes the row of `kind` with `hash`, or with `None` every row of `kind`; how many.
    async fn forget_secrets(&self, kind: SecretKind, hash: Option<&str>)
    -> Result<u64, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_read_back_and_the_hash_is_sha256() {
        for kind in SecretKind::ALL {
            assert_eq!(SecretKind::from_spelling(kind.spelling()), Some(*kind));
        }
        assert_eq!(SecretKind::from_spelling("admin"), None);
        // The `kind` column's values, as rows already hold them.
        let spelled: Vec<&str> = SecretKind::ALL.iter().map(|k| k.spelling()).collect();
        assert_eq!(
            spelled,
            [
                "admin_token",
                "cli_token",
                "login_code",
                "browser_login",
                "capability",
                "ceremony",
                "legacy_token_window",
                "phone_login_code",
                "oidc_sign_in"
            ]
        );
        assert_eq!(
            hash_secret("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
