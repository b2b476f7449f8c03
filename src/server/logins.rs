//! The credentials a person holds and the server keeps only as hashes (`store::secrets`): the
//! admin token, single-use login links, browser logins (the session cookie) and the local
//! CLI's short-lived credential.
//!
//! **Invariant 38** ([ARCHITECTURE.md](../../ARCHITECTURE.md#invariants)): a file an agent can read grants nothing; only hashes kept.

use serde::{Deserialize, Serialize};

use crate::protocol::{Role, Timestamp};
use crate::server::principal::{CLI_TOKEN_NAME, LoginRef, Principal, Scope};
use crate::server::secret::random_token;
use crate::server::store::people::PeopleRepo;
use crate::server::store::secrets::{HashedSecret, HashedSecrets, SecretKind, hash_secret};
use crate::server::store::{StoreError, TokenRepo};

/// How long a login link works (once).
pub const LOGIN_CODE_MS: i64 = 15 * 60 * 1000;
/// How long the local CLI's credential works at most (one command; it is forgotten after it).
pub const CLI_TOKEN_MS: i64 = 2 * 60 * 1000;
/// How long a browser stays logged in.
pub const BROWSER_LOGIN_MS: i64 = 365 * 24 * 3600 * 1000;
/// What starts a login link's code, and the local CLI's credential (recognisable when leaked).
const CODE_PREFIX: &str = "csl_";
/// A phone's login link's code (one `approve` token), kept as its own kind.
const PHONE_CODE_PREFIX: &str = "csp_";
const CLI_PREFIX: &str = "csc_";

/// What a request presented as its credential, by the hash of its secret (the secret itself
/// is never kept).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Presented {
    /// `Authorization: Bearer <secret>`: the admin token, a named token, the CLI's credential.
    Bearer(String),
    /// The session cookie: a browser login.
    Cookie(String),
}

impl Presented {
    pub fn bearer(secret: &str) -> Presented {
        Presented::Bearer(hash_secret(secret))
    }

    pub fn cookie(value: &str) -> Presented {
        Presented::Cookie(hash_secret(value))
    }

    /// How a push subscription records the credential that made it (`bearer:<hash>`,
    /// `cookie:<hash>`): a hash, which grants nothing when read.
    pub fn record(&self) -> String {
        match self {
            Presented::Bearer(hash) => format!("bearer:{hash}"),
            Presented::Cookie(hash) => format!("cookie:{hash}"),
        }
    }

    /// A recorded credential; a bare hash is how older subscriptions recorded a named token.
    pub fn from_record(record: &str) -> Option<Presented> {
        let hex = |h: &str| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit());
        if let Some(hash) = record.strip_prefix("bearer:") {
            return hex(hash).then(|| Presented::Bearer(hash.to_owned()));
        }
        if let Some(hash) = record.strip_prefix("cookie:") {
            return hex(hash).then(|| Presented::Cookie(hash.to_owned()));
        }
        hex(record).then(|| Presented::Bearer(record.to_owned()))
    }
}

/// What a browser login is, kept under its cookie's hash.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct BrowserLogin {
    /// The named token it logged in with, by its hash; `None`: the person as admin (a login
    /// link, or the admin token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_hash: Option<String>,
    /// The admin token it logged in with, by its hash: replacing that token (another
    /// `--token`) ends the login. `None` with no `token_hash`: a login link's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_hash: Option<String>,
    /// The person it signed in as (OpenID Connect, issue 41), by id: each request finds
    /// them again, so removing the person (or every role) ends the login at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person_id: Option<String>,
    /// The browser, in a few words from its `User-Agent` ("Chrome on Android").
    #[serde(default)]
    pub device: String,
}

/// Who `presented` is, now: the one answer every door uses (the middleware, a feed's
/// recheck, a push subscription's). `None` once it no longer authenticates: expired, revoked,
/// signed out, or a browser login whose token was revoked or lost the right to answer. A
/// browser login says which it is and its device (`Principal::login`).
pub async fn who(
    kept: &dyn HashedSecrets,
    tokens: &dyn TokenRepo,
    people: &dyn PeopleRepo,
    presented: &Presented,
) -> Result<Option<Principal>, StoreError> {
    match presented {
        Presented::Bearer(hash) => bearer_holder(kept, tokens, people, hash).await,
        Presented::Cookie(hash) => {
            let Some(login) = browser_login(kept, hash).await? else {
                return Ok(None);
            };
            let seen = LoginRef {
                id: login_id(hash),
                device: login.device,
            };
            if let Some(person_id) = login.person_id {
                return person_signed_in(people, &person_id, seen).await;
            }
            match (login.token_hash, login.admin_hash) {
                (Some(token), _) => Ok(named_token(tokens, people, &token)
                    .await?
                    // A `gates` token never logs in (nor one its maker's roles cut to it).
                    .filter(|p| p.scope().reads())
                    .map(|p| p.through(seen))),
                (None, Some(admin)) => Ok(kept
                    .find_secret(SecretKind::AdminToken, &admin)
                    .await?
                    .map(|_| Principal::Browser { login: seen })),
                (None, None) => Ok(Some(Principal::Browser { login: seen })),
            }
        }
    }
}

/// The person a browser login signed in as, if they are still there with a role that signs
/// in: their scope from their roles (`people::scope_of`).
async fn person_signed_in(
    people: &dyn PeopleRepo,
    person_id: &str,
    seen: LoginRef,
) -> Result<Option<Principal>, StoreError> {
    let Some(person) = people.person(person_id).await? else {
        return Ok(None);
    };
    Ok(scope_of(&person.roles).map(|scope| Principal::Person {
        email: person.email,
        scope,
        login: seen,
    }))
}

/// The scope a person's roles give them now (their browser logins and their tokens alike):
/// `admin` → admin, `approver` → approve, `viewer` → view (read, answer nothing). `None` only
/// for no role at all, which people's checks never store.
pub fn scope_of(roles: &[Role]) -> Option<Scope> {
    if roles.contains(&Role::Admin) {
        Some(Scope::Admin)
    } else if roles.contains(&Role::Approver) {
        Some(Scope::Approve)
    } else if roles.contains(&Role::Viewer) {
        Some(Scope::View)
    } else {
        None
    }
}

/// Which browser login a cookie's hash is, in twelve hex digits that grant nothing: a digest
/// of the hash (the hash itself is what the store finds the login by, so it is never shown).
pub fn login_id(cookie_hash: &str) -> String {
    let mut id = hash_secret(&format!("login-id:{cookie_hash}"));
    id.truncate(12);
    id
}

/// A bearer secret's holder, by its hash: the admin token, the local CLI's credential, or a
/// named token.
async fn bearer_holder(
    kept: &dyn HashedSecrets,
    tokens: &dyn TokenRepo,
    people: &dyn PeopleRepo,
    hash: &str,
) -> Result<Option<Principal>, StoreError> {
    if kept
        .find_secret(SecretKind::AdminToken, hash)
        .await?
        .is_some()
    {
        return Ok(Some(Principal::startup_token()));
    }
    if kept
        .find_secret(SecretKind::CliToken, hash)
        .await?
        .is_some()
    {
        return Ok(Some(Principal::bearer(CLI_TOKEN_NAME, Scope::Admin)));
    }
    named_token(tokens, people, hash).await
}

/// The named token whose secret hashes to `hash`; one with a scope this build cannot read is
/// refused. A person's token works only while they are there, and never with more than their
/// roles give now (found again at every request, as their browser logins are).
async fn named_token(
    tokens: &dyn TokenRepo,
    people: &dyn PeopleRepo,
    hash: &str,
) -> Result<Option<Principal>, StoreError> {
    let Some(row) = tokens.token_by_hash(hash).await? else {
        return Ok(None);
    };
    let Some(scope) = row.scope.known() else {
        tracing::error!(token = %row.name, scope = %row.scope, "a stored token has an unknown scope; refusing it");
        return Ok(None);
    };
    let Some(owner_id) = row.owner else {
        return Ok(Some(Principal::bearer(row.name, scope)));
    };
    let Some(maker) = people.person(&owner_id).await? else {
        return Ok(None);
    };
    let Some(ceiling) = scope_of(&maker.roles) else {
        return Ok(None);
    };
    Ok(Some(
        Principal::bearer(row.name, scope.at_most(ceiling)).owned_by(maker.email),
    ))
}

fn row(hash: String, kind: SecretKind, body: String, ttl_ms: Option<i64>) -> HashedSecret {
    let now = Timestamp::now_ms();
    HashedSecret {
        hash,
        kind,
        body,
        created_ms: now,
        expires_ms: ttl_ms.map(|ttl| now.saturating_add(ttl)),
    }
}

/// What a login link's code logs a browser in as, kept with its hash. A field this build
/// does not know makes the row grant nothing (a later build's restriction is never dropped).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LoginCodeGrant {
    /// The named token it logs in as, by its hash (a phone's link from the Tokens page);
    /// `None`: the person as admin (`countersign login`'s link).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_hash: Option<String>,
}

/// A new single-use login link's code (good for `LOGIN_CODE_MS`), granting `grant`.
pub async fn mint_login_code(
    kept: &dyn HashedSecrets,
    grant: &LoginCodeGrant,
) -> Result<String, StoreError> {
    let (kind, prefix) = code_kind(grant);
    let code = format!("{prefix}{}", random_token(24));
    let body = serde_json::to_string(grant).map_err(|e| StoreError::Database(e.to_string()))?;
    kept.keep_secret(&row(hash_secret(&code), kind, body, Some(LOGIN_CODE_MS)))
        .await?;
    Ok(code)
}

/// Spends a login link's code: what it grants the first time, while it is good. A body this
/// build cannot read grants nothing.
pub async fn spend_login_code(
    kept: &dyn HashedSecrets,
    code: &str,
) -> Result<Option<LoginCodeGrant>, StoreError> {
    let code = code.trim();
    let kind = if code.starts_with(CODE_PREFIX) {
        SecretKind::LoginCode
    } else if code.starts_with(PHONE_CODE_PREFIX) {
        SecretKind::PhoneLoginCode
    } else {
        return Ok(None);
    };
    Ok(kept
        .take_secret(kind, &hash_secret(code))
        .await?
        .and_then(|row| serde_json::from_str::<LoginCodeGrant>(&row.body).ok())
        // The kind and what it grants must agree: an admin's link names no token, a
        // phone's always one.
        .filter(|grant| code_kind(grant).0 == kind))
}

/// The kind a code is kept as, and its prefix: a phone's (one token) is never an admin's.
fn code_kind(grant: &LoginCodeGrant) -> (SecretKind, &'static str) {
    match grant.token_hash {
        Some(_) => (SecretKind::PhoneLoginCode, PHONE_CODE_PREFIX),
        None => (SecretKind::LoginCode, CODE_PREFIX),
    }
}

/// A new browser login: the cookie's value, whose hash is kept with what it is.
pub async fn mint_browser_login(
    kept: &dyn HashedSecrets,
    login: &BrowserLogin,
) -> Result<String, StoreError> {
    let cookie = random_token(32);
    let body = serde_json::to_string(login).map_err(|e| StoreError::Database(e.to_string()))?;
    kept.keep_secret(&row(
        hash_secret(&cookie),
        SecretKind::BrowserLogin,
        body,
        Some(BROWSER_LOGIN_MS),
    ))
    .await?;
    Ok(cookie)
}

/// The browser login a cookie's hash names, if it is still good.
pub async fn browser_login(
    kept: &dyn HashedSecrets,
    cookie_hash: &str,
) -> Result<Option<BrowserLogin>, StoreError> {
    let Some(row) = kept
        .find_secret(SecretKind::BrowserLogin, cookie_hash)
        .await?
    else {
        return Ok(None);
    };
    // A body this build cannot read logs nobody in.
    Ok(serde_json::from_str(&row.body).ok())
}

/// Makes `secret` the admin token (its hash replaces any other; the secret is not kept).
pub async fn set_admin_token(kept: &dyn HashedSecrets, secret: &str) -> Result<(), StoreError> {
    kept.replace_secrets(&row(
        hash_secret(secret),
        SecretKind::AdminToken,
        "{}".into(),
        None,
    ))
    .await
}

/// The name of the named token whose secret is `secret`, if one is: the admin token may never
/// be one of them.
pub async fn named_token_name(
    tokens: &dyn TokenRepo,
    secret: &str,
) -> Result<Option<String>, StoreError> {
    Ok(tokens
        .token_by_hash(&hash_secret(secret))
        .await?
        .map(|row| row.name))
}

/// A new credential for the local CLI's one command (good for `CLI_TOKEN_MS`).
pub async fn mint_cli_token(kept: &dyn HashedSecrets) -> Result<String, StoreError> {
    let secret = format!("{CLI_PREFIX}{}", random_token(24));
    kept.keep_secret(&row(
        hash_secret(&secret),
        SecretKind::CliToken,
        "{}".into(),
        Some(CLI_TOKEN_MS),
    ))
    .await?;
    Ok(secret)
}

/// A browser's `User-Agent` in a few words ("Firefox on Linux", "Chrome on Pixel 8"): how a
/// login is told apart, and how a card names the phone that answered it, never more of the
/// header than that.
pub fn device_of(user_agent: &str) -> String {
    let ua = user_agent.to_ascii_lowercase();
    let browser = [
        ("edg/", "Edge"),
        ("firefox/", "Firefox"),
        ("chrome/", "Chrome"),
        ("chromium/", "Chromium"),
        ("safari/", "Safari"),
        ("curl/", "curl"),
    ]
    .into_iter()
    .find(|(key, _)| ua.contains(key))
    .map_or("A browser", |(_, name)| name);
    let system = [
        ("android", "Android"),
        ("iphone", "iPhone"),
        ("ipad", "iPad"),
        ("mac os", "macOS"),
        ("windows", "Windows"),
        ("linux", "Linux"),
    ]
    .into_iter()
    .find(|(key, _)| ua.contains(key))
    .map(|(_, name)| name);
    match (android_model(user_agent), system) {
        (Some(model), _) => format!("{browser} on {model}"),
        (None, Some(system)) => format!("{browser} on {system}"),
        (None, None) => browser.to_owned(),
    }
}

/// The phone an Android `User-Agent` names (`(Linux; Android 14; Pixel 8)` → `Pixel 8`), when
/// it names one: a reduced one says only `K`, and a name that is not plainly one is left out.
fn android_model(user_agent: &str) -> Option<&str> {
    let inside = user_agent.split_once('(')?.1.split_once(')')?.0;
    let mut parts = inside.split(';').map(str::trim);
    parts.find(|part| part.starts_with("Android"))?;
    let model = parts.next()?;
    let model = model
        .split_once(" Build/")
        .map_or(model, |(name, _)| name)
        .trim();
    let plain = model
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.' | '+'));
    (plain && (2..=32).contains(&model.len())).then_some(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn kept() -> (tempfile::TempDir, std::sync::Arc<dyn HashedSecrets>) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("db").display());
        let store = crate::server::store::open(&url, Default::default(), "t")
            .await
            .unwrap();
        (dir, store.repos.secrets.clone())
    }

    #[tokio::test]
    async fn a_login_code_logs_in_once_and_only_its_hash_is_kept() {
        let (_dir, kept) = kept().await;
        let code = mint_login_code(kept.as_ref(), &LoginCodeGrant::default())
            .await
            .unwrap();
        let rows = kept.secrets_of(SecretKind::LoginCode).await.unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].hash, hash_secret(&code));
        assert!(!rows[0].body.contains(&code));
        assert!(
            spend_login_code(kept.as_ref(), &rows[0].hash)
                .await
                .unwrap()
                .is_none(),
            "the hash is no code"
        );
        assert!(
            spend_login_code(kept.as_ref(), &format!("{code}x"))
                .await
                .unwrap()
                .is_none()
        );
        assert_eq!(
            spend_login_code(kept.as_ref(), &code).await.unwrap(),
            Some(LoginCodeGrant::default())
        );
        assert!(
            spend_login_code(kept.as_ref(), &code)
                .await
                .unwrap()
                .is_none(),
            "single use"
        );
    }

    #[tokio::test]
    async fn a_phones_login_code_grants_its_token_once_and_keeps_only_hashes() {
        let (_dir, kept) = kept().await;
        let grant = LoginCodeGrant {
            token_hash: Some(hash_secret("cst_the-phones-secret")),
        };
        let code = mint_login_code(kept.as_ref(), &grant).await.unwrap();
        // A kind and a prefix of its own: a build that knows only the admin's login codes
        // never finds it.
        assert!(code.starts_with("csp_"), "{code}");
        assert!(
            kept.secrets_of(SecretKind::LoginCode)
                .await
                .unwrap()
                .is_empty()
        );
        let rows = kept.secrets_of(SecretKind::PhoneLoginCode).await.unwrap();
        assert!(!rows[0].body.contains("cst_the-phones-secret"));
        assert!(!rows[0].body.contains(&code));
        assert_eq!(
            spend_login_code(kept.as_ref(), &code).await.unwrap(),
            Some(grant)
        );
        assert_eq!(spend_login_code(kept.as_ref(), &code).await.unwrap(), None);
        // Spelled as the admin's kind, the same code is no code at all.
        let admin_spelling = code.replacen("csp_", "csl_", 1);
        assert_eq!(
            spend_login_code(kept.as_ref(), &admin_spelling)
                .await
                .unwrap(),
            None
        );
    }

    #[tokio::test]
    async fn a_code_whose_row_disagrees_with_its_kind_grants_nothing() {
        let (_dir, kept) = kept().await;
        // An admin-kind row naming a token (or with a field this build does not know) is
        // refused, never read as the admin's login.
        for body in [
            r#"{"token_hash":"ab"}"#.to_owned(),
            r#"{"scope":"approve"}"#.to_owned(),
        ] {
            let code = format!("{CODE_PREFIX}{}", random_token(24));
            kept.keep_secret(&row(
                hash_secret(&code),
                SecretKind::LoginCode,
                body,
                Some(60_000),
            ))
            .await
            .unwrap();
            assert_eq!(spend_login_code(kept.as_ref(), &code).await.unwrap(), None);
        }
    }

    #[tokio::test]
    async fn a_browser_login_is_found_by_its_cookies_hash_only() {
        let (_dir, kept) = kept().await;
        let login = BrowserLogin {
            token_hash: Some("ab".repeat(32)),
            admin_hash: None,
            person_id: None,
            device: "Chrome on Linux".into(),
        };
        let cookie = mint_browser_login(kept.as_ref(), &login).await.unwrap();
        let found = browser_login(kept.as_ref(), &hash_secret(&cookie))
            .await
            .unwrap();
        assert_eq!(found, Some(login));
        assert_eq!(browser_login(kept.as_ref(), &cookie).await.unwrap(), None);
        // A login code's hash is no browser login.
        let code = mint_login_code(kept.as_ref(), &LoginCodeGrant::default())
            .await
            .unwrap();
        assert_eq!(
            browser_login(kept.as_ref(), &hash_secret(&code))
                .await
                .unwrap(),
            None
        );
    }

    #[test]
    fn a_recorded_credential_reads_back_and_nothing_else_does() {
        let p = Presented::bearer("s");
        assert_eq!(Presented::from_record(&p.record()), Some(p));
        let c = Presented::cookie("s");
        assert_eq!(Presented::from_record(&c.record()), Some(c));
        let legacy = hash_secret("cst_x");
        assert_eq!(
            Presented::from_record(&legacy),
            Some(Presented::Bearer(legacy.clone()))
        );
        for junk in [
            "",
            "bearer:",
            "cookie:xyz",
            "startup",
            &format!("other:{legacy}"),
        ] {
            assert_eq!(Presented::from_record(junk), None, "{junk}");
        }
    }

    #[test]
    fn a_device_is_a_few_words() {
        let pixel = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36";
        assert_eq!(device_of(pixel), "Chrome on Pixel 8");
        // A reduced `User-Agent` names no phone; a webview's build is left out.
        let reduced = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36";
        assert_eq!(device_of(reduced), "Chrome on Android");
        let webview = "Mozilla/5.0 (Linux; Android 9; SM-G960F Build/PPR1.180610.011; wv) AppleWebKit/537.36 Chrome/74.0 Mobile Safari/537.36";
        assert_eq!(device_of(webview), "Chrome on SM-G960F");
        let odd = "Mozilla/5.0 (Linux; Android 14; <b>x</b>) Chrome/126.0";
        assert_eq!(device_of(odd), "Chrome on Android");
        assert_eq!(device_of("curl/8.0"), "curl");
        assert_eq!(device_of(""), "A browser");
    }
}
