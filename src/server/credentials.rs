//! The credentials the server accepts: the access token, and the session cookie derived from
//! it. Kept apart from the HTTP middleware (`http/auth.rs`) so settings and state can name them
//! without depending on the web layer.

use http::{HeaderMap, header};
use sha2::{Digest, Sha256};

pub const COOKIE_NAME: &str = "countersign_session";

/// The access token. Not `Serialize`, and `Debug` does not print it.
pub struct AccessToken(String);

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessToken(***)")
    }
}

impl AccessToken {
    pub fn new(token: String) -> Self {
        AccessToken(token)
    }

    pub fn reveal(&self) -> &str {
        &self.0
    }
}

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
        constant_time_eq(candidate.as_bytes(), self.token.0.as_bytes())
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
            .is_some_and(|t| constant_time_eq(t.trim().as_bytes(), self.token.0.as_bytes()))
    }

    /// Whether the session cookie is the one derived from the access token.
    pub fn cookie_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| {
                name == COOKIE_NAME
                    && constant_time_eq(value.as_bytes(), self.cookie_value.as_bytes())
            })
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
        let auth = Credentials::new(AccessToken::new("secret".into()));
        assert!(auth.bearer_ok(&headers(&[("authorization", "Bearer secret")])));
        assert!(!auth.bearer_ok(&headers(&[("authorization", "Bearer secre")])));
        assert!(!auth.bearer_ok(&headers(&[("authorization", "secret")])));
        let cookie = format!("a=b; {COOKIE_NAME}={}", auth.cookie_value);
        assert!(auth.cookie_ok(&headers(&[("cookie", &cookie)])));
        assert!(!auth.cookie_ok(&headers(&[("cookie", "countersign_session=secret")])));
        assert!(!format!("{:?}", auth.token()).contains("secret"));
    }
}
