//! The credentials the server accepts: the access token, and the session cookie derived from
//! it. Kept apart from the HTTP middleware (`http/auth.rs`) so settings and state can name them
//! without depending on the web layer.

use hmac::{Hmac, Mac};
use http::{HeaderMap, header};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const COOKIE_NAME: &str = "countersign_session";
/// How a named token's session cookie starts: `tk.<the token's hash>.<mac>`.
const NAMED_COOKIE_PREFIX: &str = "tk.";

/// The access token. Not `Serialize`, and `Debug` does not print it.
pub type AccessToken = crate::server::secret::Secret;

/// What the middleware checks against: the token and the cookie value derived from it (the
/// cookie never carries the token itself, so a leaked cookie jar does not leak the API key).
pub struct Credentials {
    token: AccessToken,
    cookie_value: String,
}

impl Credentials {
    pub fn new(token: AccessToken) -> Self {
        let digest = Sha256::digest(format!("countersign-cookie:{}", token.reveal()));
        Credentials {
            cookie_value: hex::encode(digest),
            token,
        }
    }

    pub fn token(&self) -> &AccessToken {
        &self.token
    }

    /// Whether `candidate` is the access token (constant time).
    pub fn token_matches(&self, candidate: &str) -> bool {
        constant_time_eq(candidate.as_bytes(), self.token.reveal().as_bytes())
    }

    /// The value the session cookie carries.
    pub fn cookie_value(&self) -> &str {
        &self.cookie_value
    }

    /// Whether the `Authorization: Bearer` header carries the access token.
    pub fn bearer_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| constant_time_eq(t.trim().as_bytes(), self.token.reveal().as_bytes()))
    }

    /// Whether the session cookie is the one derived from the access token.
    pub fn cookie_ok(&self, headers: &HeaderMap) -> bool {
        session_cookies(headers)
            .any(|value| constant_time_eq(value.as_bytes(), self.cookie_value.as_bytes()))
    }

    /// The session cookie of a browser logged in with a named token: the token's stored hash
    /// (never its secret) and a MAC keyed by the access token, so nobody can make one from
    /// the hash alone. Revoking the token ends it, since the hash no longer finds a token.
    pub fn named_cookie_value(&self, token_hash: &str) -> String {
        format!("{NAMED_COOKIE_PREFIX}{token_hash}.{}", self.mac(token_hash))
    }

    /// The token hash a named token's session cookie carries, if the request has one whose MAC
    /// holds.
    pub fn named_cookie_hash<'h>(&self, headers: &'h HeaderMap) -> Option<&'h str> {
        session_cookies(headers).find_map(|value| {
            let (hash, mac) = value.strip_prefix(NAMED_COOKIE_PREFIX)?.split_once('.')?;
            constant_time_eq(mac.as_bytes(), self.mac(hash).as_bytes()).then_some(hash)
        })
    }

    /// HMAC-SHA256 of the token hash, keyed by the access token (a keyed MAC, not a hash of
    /// key and message run together, which a length extension could forge).
    fn mac(&self, token_hash: &str) -> String {
        let key = format!("countersign-named-cookie:{}", self.token.reveal());
        // HMAC takes a key of any length.
        #[allow(clippy::expect_used)]
        let mut mac =
            Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("HMAC takes any key length");
        mac.update(token_hash.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }
}

/// The values of every `countersign_session` cookie a request carries.
fn session_cookies(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value)
}

/// Equal bytes, compared in time that does not depend on where they differ (`subtle`; a
/// different length is unequal at once: lengths are no secret).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn bearer_and_cookie_are_checked_exactly() {
        let auth = Credentials::new(AccessToken::new("secret"));
        assert!(auth.bearer_ok(&headers(&[("authorization", "Bearer secret")])));
        assert!(!auth.bearer_ok(&headers(&[("authorization", "Bearer secre")])));
        assert!(!auth.bearer_ok(&headers(&[("authorization", "secret")])));
        let cookie = format!("a=b; {COOKIE_NAME}={}", auth.cookie_value);
        assert!(auth.cookie_ok(&headers(&[("cookie", &cookie)])));
        assert!(!auth.cookie_ok(&headers(&[("cookie", "countersign_session=secret")])));
        assert!(!format!("{:?}", auth.token()).contains("secret"));
    }

    #[test]
    fn a_named_token_cookie_needs_its_mac() {
        let auth = Credentials::new(AccessToken::new("secret"));
        let value = auth.named_cookie_value("abc123");
        let cookie = format!("{COOKIE_NAME}={value}");
        assert_eq!(
            auth.named_cookie_hash(&headers(&[("cookie", &cookie)])),
            Some("abc123")
        );
        // The startup cookie is not a named one, and a named one is not the startup cookie.
        assert!(!auth.cookie_ok(&headers(&[("cookie", &cookie)])));
        let forged = format!("{COOKIE_NAME}=tk.abc123.{}", "0".repeat(64));
        assert_eq!(
            auth.named_cookie_hash(&headers(&[("cookie", &forged)])),
            None
        );
        let other = Credentials::new(AccessToken::new("other"));
        assert_eq!(
            other.named_cookie_hash(&headers(&[("cookie", &cookie)])),
            None
        );
    }

    /// The MAC is HMAC-SHA256 keyed by the access token, checked against another library's
    /// HMAC: not `sha256(key ‖ message)`, which a length extension could forge.
    #[test]
    fn a_named_cookie_mac_is_an_hmac() {
        let auth = Credentials::new(AccessToken::new("secret"));
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"countersign-named-cookie:secret");
        let expected = hex::encode(ring::hmac::sign(&key, b"abc123").as_ref());
        assert_eq!(
            auth.named_cookie_value("abc123"),
            format!("tk.abc123.{expected}")
        );
        assert!(constant_time_eq(b"same", b"same"));
        assert!(!constant_time_eq(b"same", b"sane"));
        assert!(!constant_time_eq(b"same", b"same "));
    }
}
