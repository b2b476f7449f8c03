//! How a request presents its credential over HTTP: `Authorization: Bearer <secret>`, or the
//! session cookie a browser got when it logged in. Only reading the headers lives here; who
//! the credential is, is `logins::who` (through `Core::who_presented`).

use http::{HeaderMap, header};

use crate::server::logins::Presented;

pub const COOKIE_NAME: &str = "countersign_session";

/// The credential a request presents, by its hash: its bearer secret if it has one (a request
/// that sends a bearer is judged by it alone), else its session cookie.
pub fn presented(headers: &HeaderMap) -> Option<Presented> {
    match bearer(headers) {
        Some(secret) => Some(Presented::bearer(secret)),
        None => session_cookie(headers).map(Presented::cookie),
    }
}

/// The bearer secret a request presents, if any.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// The session cookie's value: the first `countersign_session` cookie that could be one of
/// ours (base64url); an older build's cookie (a hex digest, a `tk.` value) is passed over.
fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    our_cookie(headers, COOKIE_NAME)
}

/// The first cookie named `name` whose value could be one this server made: 43 base64url
/// characters (32 random bytes), the shape of every cookie value it sets.
pub fn our_cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(found, _)| *found == name)
        .map(|(_, value)| value)
        .find(|value| {
            value.len() == 43
                && value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// The `Set-Cookie` value that logs a browser in with `cookie` (HttpOnly, same-site only).
pub fn login_cookie(cookie: &str) -> String {
    format!("{COOKIE_NAME}={cookie}; HttpOnly; SameSite=Strict; Path=/; Max-Age=31536000")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn a_bearer_wins_over_a_cookie_and_old_cookies_are_passed_over() {
        let cookie = "a".repeat(43);
        let both = headers(&[
            ("authorization", "Bearer secret"),
            ("cookie", &format!("{COOKIE_NAME}={cookie}")),
        ]);
        assert_eq!(presented(&both), Some(Presented::bearer("secret")));
        let only_cookie = headers(&[(
            "cookie",
            &format!("x=1; {COOKIE_NAME}=tk.abc.def; {COOKIE_NAME}={cookie}"),
        )]);
        assert_eq!(presented(&only_cookie), Some(Presented::cookie(&cookie)));
        let old = headers(&[("cookie", &format!("{COOKIE_NAME}={}", "ab".repeat(32)))]);
        assert_eq!(presented(&old), None);
        assert_eq!(presented(&headers(&[("authorization", "Bearer  ")])), None);
        assert_eq!(presented(&headers(&[("authorization", "secret")])), None);
    }
}
