//! One type for every secret the server holds: the access token, the provider's key, a
//! webhook URL (whose path is often the secret: a Slack hook, an ntfy topic), a database URL's
//! password, and any secret added later.
//!
//! **Invariant 37** ([ARCHITECTURE.md](../../ARCHITECTURE.md#invariants)): a `Secret` is shown only masked; only `reveal` gives the value.
//!
//! How much of a value the mask keeps is the secret's [`Mask`]: nothing, a URL's host, or a
//! URL without its password.

use std::fmt;
use std::marker::PhantomData;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How a secret is shown.
pub trait Mask {
    /// The shown form of a non-empty `value`.
    fn mask(value: &str) -> String;
}

/// Nothing of it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Whole;

impl Mask for Whole {
    fn mask(_: &str) -> String {
        "(masked)".into()
    }
}

/// Only the host of a URL is shown (`set: ntfy.sh/… (masked)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UrlHost;

impl Mask for UrlHost {
    fn mask(value: &str) -> String {
        match url::Url::parse(value.trim()) {
            Ok(url) => format!("set: {}/… (masked)", url.host_str().unwrap_or("")),
            Err(_) => "(masked)".into(),
        }
    }
}

/// A URL is shown without its password (`postgres://cs:(masked)@db/countersign`): which
/// database it names is not secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UrlPassword;

impl Mask for UrlPassword {
    fn mask(value: &str) -> String {
        match url::Url::parse(value.trim()) {
            Ok(mut url) if url.password().is_some() => {
                if url.set_password(Some("(masked)")).is_err() {
                    return "(masked)".into();
                }
                // `(` and `)` are kept readable: the mask is for people.
                url.to_string().replace("%28masked%29", "(masked)")
            }
            // A password can also hide in the query (`?password=`): say nothing then.
            Ok(url) if url.query().is_some_and(|q| q.contains("password")) => "(masked)".into(),
            Ok(_) => value.trim().to_owned(),
            Err(_) => "(masked)".into(),
        }
    }
}

/// A secret value, shown only masked.
pub struct Secret<M: Mask = Whole> {
    value: String,
    mask: PhantomData<M>,
}

impl<M: Mask> Secret<M> {
    pub fn new(value: impl Into<String>) -> Self {
        Secret {
            value: value.into(),
            mask: PhantomData,
        }
    }

    /// The value itself: for the header, connection or request that needs it, never for
    /// display, a log line or an error.
    pub fn reveal(&self) -> &str {
        &self.value
    }

    pub fn is_empty(&self) -> bool {
        self.value.trim().is_empty()
    }

    /// How it is shown: empty when unset, else its mask.
    pub fn masked(&self) -> String {
        if self.is_empty() {
            String::new()
        } else {
            M::mask(&self.value)
        }
    }

    /// `text` with every occurrence of this secret (and of a URL's password) replaced by its
    /// mask: for error messages that may quote it.
    pub fn scrub(&self, text: &str) -> String {
        if self.is_empty() {
            return text.to_owned();
        }
        let mut out = text.replace(self.value.trim(), &self.masked());
        if let Ok(url) = url::Url::parse(self.value.trim())
            && let Some(password) = url.password().filter(|p| p.len() >= 3)
        {
            out = out.replace(password, "(masked)");
        }
        out
    }
}

impl<M: Mask> Clone for Secret<M> {
    fn clone(&self) -> Self {
        Secret::new(self.value.clone())
    }
}

impl<M: Mask> Default for Secret<M> {
    fn default() -> Self {
        Secret::new(String::new())
    }
}

impl<M: Mask> PartialEq for Secret<M> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<M: Mask> Eq for Secret<M> {}

impl<M: Mask> fmt::Debug for Secret<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({})", self.masked())
    }
}

/// Serialized masked: the configuration's listings, the audit and the API are built from the
/// serialized form, so none of them can carry the value.
impl<M: Mask> Serialize for Secret<M> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.masked())
    }
}

impl<'de, M: Mask> Deserialize<'de> for Secret<M> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Secret::new)
    }
}

/// `text` with every URL in it cut to its scheme and host: for messages that quote the
/// configuration file (a parse error shows the offending line), where the secret's value is
/// not known yet.
pub fn scrub_urls(text: &str) -> String {
    // Before the `://` a quote ends the scheme's word; after it only what cannot be in a
    // quoted value does (a password may hold a `'`).
    let before = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>');
    let after = |c: char| c.is_whitespace() || matches!(c, '"' | '`' | '<' | '>');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let start = rest[..at].rfind(before).map_or(0, |i| i + 1);
        let end = rest[at..].find(after).map_or(rest.len(), |i| at + i);
        out.push_str(&rest[..start]);
        out.push_str(&UrlHost::mask(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `bytes` fresh random bytes (`rand`'s thread generator, a CSPRNG seeded by the OS), base64url: the body of
/// every secret the server hands out (a login link, a browser login, a capability, a
/// ceremony's handle), whose hash alone is kept (`store::secrets`).
pub fn random_token(bytes: usize) -> String {
    use base64::Engine;
    use rand::RngCore;
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_tokens_are_long_url_safe_and_unlike() {
        let (a, b) = (random_token(32), random_token(32));
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
    }

    #[test]
    fn every_shown_form_is_masked() {
        let hook: Secret<UrlHost> =
            Secret::new("https://hooks.slack.com/services/T0/B0/s3cr3tp4th");
        let shown = [
            format!("{hook:?}"),
            serde_json::to_string(&hook).unwrap(),
            toml::Value::try_from(&hook).unwrap().to_string(),
            hook.masked(),
        ];
        for text in shown {
            assert!(!text.contains("s3cr3t"), "{text}");
            assert!(text.contains("hooks.slack.com"), "{text}");
        }
        assert_eq!(
            hook.reveal(),
            "https://hooks.slack.com/services/T0/B0/s3cr3tp4th"
        );
        let token: Secret = Secret::new("tok-abcdef");
        assert_eq!(format!("{token:?}"), "Secret((masked))");
        assert_eq!(Secret::<Whole>::default().masked(), "");
    }

    #[test]
    fn urls_in_messages_keep_only_their_host() {
        assert_eq!(
            scrub_urls("invalid: `webhook_url = \"https://ntfy.sh/my-secret-topic\"` here"),
            "invalid: `webhook_url = \"set: ntfy.sh/… (masked)\"` here"
        );
        assert_eq!(scrub_urls("no url"), "no url");
    }

    #[test]
    fn a_database_url_keeps_everything_but_its_password() {
        let shown = |url: &str| Secret::<UrlPassword>::new(url).masked();
        assert_eq!(
            shown("postgres://cs:s3cret@db.internal:5432/countersign"),
            "postgres://cs:(masked)@db.internal:5432/countersign"
        );
        assert_eq!(
            shown("postgres://cs@db.internal/countersign"),
            "postgres://cs@db.internal/countersign"
        );
        assert_eq!(
            shown("postgres://db/x?user=a&password=hunter22"),
            "(masked)"
        );
        assert_eq!(shown(""), "");
        let url: Secret<UrlPassword> = Secret::new("postgres://cs:s3cret@db/x");
        assert_eq!(
            url.scrub("error connecting to postgres://cs:s3cret@db/x: password s3cret refused"),
            "error connecting to postgres://cs:(masked)@db/x: password (masked) refused"
        );
    }
}
