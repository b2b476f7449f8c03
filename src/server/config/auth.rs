//! `[auth]`: how people sign in besides the admin's tokens and login links. `[auth.oidc]`
//! names an OpenID Connect provider (issue 41). Protected from the web, the API and the agent
//! (`keys::protected`): who may sign in is set in the file alone.

use serde::{Deserialize, Serialize};

/// `[auth]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// `[auth.oidc]`; absent: nobody signs in with a provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oidc: Option<OidcConfig>,
}

/// The provider name `/login` shows when `[auth.oidc] name` is not set.
pub const DEFAULT_PROVIDER_NAME: &str = "OpenID Connect";

/// `[auth.oidc]`: sign-in with an OpenID Connect provider (authorization code + PKCE).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    /// The provider's issuer URL; its discovery document is read from
    /// `<issuer>/.well-known/openid-configuration`. `https://`, or `http://` on loopback.
    pub issuer: String,
    pub client_id: String,
    /// The environment variable holding the client's secret (the secret itself is never in
    /// the file).
    pub client_secret_env: String,
    /// The provider's name on `/login` ("Sign in with <name>").
    #[serde(default = "default_name")]
    pub name: String,
    /// Email domains whose verified addresses may sign in without an invitation (as viewers).
    #[serde(default)]
    pub allowed_domains: Vec<String>,
}

fn default_name() -> String {
    DEFAULT_PROVIDER_NAME.to_owned()
}

impl AuthConfig {
    /// The key and the problem when `[auth]` is not usable.
    pub fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        let Some(oidc) = &self.oidc else {
            return Ok(());
        };
        if !issuer_allowed(&oidc.issuer) {
            return Err((
                "auth.oidc.issuer",
                "must be an https:// URL (http:// only on a loopback address: 127.0.0.1, [::1], localhost)",
            ));
        }
        if oidc.client_id.trim().is_empty() {
            return Err(("auth.oidc.client_id", "must name the client"));
        }
        let env = &oidc.client_secret_env;
        let is_name = !env.is_empty()
            && !env.starts_with(|c: char| c.is_ascii_digit())
            && env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_name {
            return Err((
                "auth.oidc.client_secret_env",
                "must name an environment variable (letters, digits, `_`)",
            ));
        }
        if oidc.name.trim().is_empty() {
            return Err(("auth.oidc.name", "must not be empty"));
        }
        if !oidc.allowed_domains.iter().all(|d| is_domain(d)) {
            return Err((
                "auth.oidc.allowed_domains",
                "must list lowercase domain names (`example.com`), without `@`",
            ));
        }
        Ok(())
    }
}

/// An issuer a sign-in may trust: `https`, or plain `http` to this machine (a provider for
/// tests, or one behind a local proxy), never `http` over a network.
pub fn issuer_allowed(issuer: &str) -> bool {
    let Ok(url) = url::Url::parse(issuer) else {
        return false;
    };
    match url.scheme() {
        "https" => url.host().is_some(),
        "http" => match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            None => false,
        },
        _ => false,
    }
}

fn is_domain(domain: &str) -> bool {
    !domain.is_empty()
        && domain.contains('.')
        && !domain.starts_with(['.', '-'])
        && !domain.ends_with(['.', '-'])
        && domain
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oidc(issuer: &str) -> AuthConfig {
        AuthConfig {
            oidc: Some(OidcConfig {
                issuer: issuer.into(),
                client_id: "countersign".into(),
                client_secret_env: "OIDC_SECRET".into(),
                name: DEFAULT_PROVIDER_NAME.into(),
                allowed_domains: vec!["example.test".into()],
            }),
        }
    }

    #[test]
    fn an_issuer_is_https_or_loopback_http() {
        for good in [
            "https://accounts.example.com",
            "https://id.example.com/realms/x",
            "http://127.0.0.1:9000",
            "http://[::1]:9000/",
            "http://localhost:9000",
        ] {
            assert_eq!(oidc(good).validate(), Ok(()), "{good}");
        }
        for bad in [
            "http://accounts.example.com",
            "http://10.0.0.1",
            "http://127.0.0.1.example.com",
            "ftp://127.0.0.1",
            "accounts.example.com",
            "",
        ] {
            assert_eq!(
                oidc(bad).validate().map_err(|(key, _)| key),
                Err("auth.oidc.issuer"),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_other_keys_are_checked() {
        let mut auth = oidc("https://id.example.com");
        if let Some(o) = auth.oidc.as_mut() {
            o.client_secret_env = "NOT A NAME".into();
        }
        assert_eq!(
            auth.validate().map_err(|(k, _)| k),
            Err("auth.oidc.client_secret_env")
        );
        let mut auth = oidc("https://id.example.com");
        if let Some(o) = auth.oidc.as_mut() {
            o.allowed_domains = vec!["@example.com".into()];
        }
        assert_eq!(
            auth.validate().map_err(|(k, _)| k),
            Err("auth.oidc.allowed_domains")
        );
        assert_eq!(AuthConfig::default().validate(), Ok(()));
    }
}
