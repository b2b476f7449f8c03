//! The Content-Security-Policy: no inline script runs unless it carries this response's nonce.
//!
//! Pages insert server-rendered, sanitized HTML that came from the agent; the CSP is the second
//! wall should sanitizing ever miss something. Leptos's axum integration mints a nonce per
//! render and puts it on its own inline scripts (hydration, streamed resources); the page's
//! policy names that nonce, and every other response gets the static policy below, which
//! allows no inline script at all.

use leptos::prelude::use_context;

/// For everything that is not a rendered page (API answers, the login page, assets).
pub const STATIC_POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// The policy of a page rendered with `nonce`.
pub fn page_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    )
}

/// Called while a page renders on the server: sets the page's policy with its nonce. Without
/// a nonce (it is always there in a render) the static policy stands.
pub fn set_page_policy() {
    let (Some(nonce), Some(response)) = (
        leptos::nonce::use_nonce(),
        use_context::<leptos_axum::ResponseOptions>(),
    ) else {
        return;
    };
    if let Ok(value) = http::HeaderValue::from_str(&page_policy(&nonce)) {
        response.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_policy_allows_inline_scripts_without_a_nonce() {
        for policy in [STATIC_POLICY.to_owned(), page_policy("abc")] {
            let scripts = policy
                .split(';')
                .find(|d| d.trim().starts_with("script-src"))
                .unwrap();
            assert!(!scripts.contains("unsafe-inline"), "{policy}");
        }
        assert!(page_policy("abc").contains("'nonce-abc'"));
    }
}
