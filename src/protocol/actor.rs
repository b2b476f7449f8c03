//! Who did something, as `approval_resolved.actor`, the audit and a push subscription name it.
//! On the wire and in rows it stays text — `browser`, `token:<name>`, `person:<email>`,
//! `person:<email> via token:<name>` (a person's token, issue 41), `ntfy`, and actors that
//! no credential makes (`mode`, `timeout`, `system`, `agent`, `rule:<id>`, `user:<client>`
//! from before actors existed). Code that needs to know which it is parses it here, once, and
//! code that writes one formats it here.

use std::fmt;

/// An actor, read from its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor<'a> {
    /// The browser's login (the session cookie).
    Browser,
    /// A named token (`token:<name>`; the name is never empty).
    Token(&'a str),
    /// A person (`person:<email>`, signed in with OpenID Connect), or a token they made
    /// (`person:<email> via token:<name>`): the email and the token's name are never empty,
    /// and an email has no spaces (`people::normalized_email`).
    Person {
        email: &'a str,
        via: Option<&'a str>,
    },
    /// An answer from an ntfy action button.
    Ntfy,
    /// Anything else, kept as it was written.
    Other(&'a str),
}

impl<'a> Actor<'a> {
    pub fn parse(text: &'a str) -> Actor<'a> {
        match text {
            "browser" => Actor::Browser,
            "ntfy" => Actor::Ntfy,
            _ => match text.strip_prefix("token:") {
                Some(name) if !name.is_empty() => Actor::Token(name),
                _ => Actor::parse_person(text).unwrap_or(Actor::Other(text)),
            },
        }
    }

    /// `person:<email>` or `person:<email> via token:<name>`, exactly.
    fn parse_person(text: &'a str) -> Option<Actor<'a>> {
        let rest = text.strip_prefix("person:")?;
        let (email, via) = match rest.split_once(" via token:") {
            Some((email, name)) => (email, Some(name)),
            None => (rest, None),
        };
        let plain = |s: &str| !s.is_empty() && !s.chars().any(char::is_whitespace);
        (plain(email) && email.contains('@') && via.is_none_or(plain))
            .then_some(Actor::Person { email, via })
    }

    /// The person this actor names (a person, or a person's token), if any.
    pub fn person(&self) -> Option<&'a str> {
        match self {
            Actor::Person { email, .. } => Some(email),
            _ => None,
        }
    }
}

impl Actor<'_> {
    /// The actor in a person's words: the credential, and for a browser login (a browser's
    /// own, or a phone's made with its token) the device it was on. An actor no credential
    /// makes (`rule:<id>`, `agent`, `timeout` …) reads as written. Never a bare `browser`.
    pub fn words(&self, device: Option<&str>) -> String {
        let device = device.filter(|device| !device.is_empty());
        match (self, device) {
            (Actor::Browser, Some(device)) => format!("browser login · {device}"),
            (Actor::Browser, None) => "browser login".to_owned(),
            (Actor::Token(name), Some(device)) => format!("token {name} · {device}"),
            (Actor::Token(name), None) => format!("token {name}"),
            (Actor::Person { email, via }, device) => {
                let via = via.map(|name| format!(" via token {name}"));
                let device = device.map(|d| format!(" · {d}"));
                format!(
                    "{email}{}{}",
                    via.unwrap_or_default(),
                    device.unwrap_or_default()
                )
            }
            (Actor::Ntfy, _) => "an ntfy button".to_owned(),
            (Actor::Other("reviewer"), _) => "the reviewer".to_owned(),
            (Actor::Other(text), _) => (*text).to_owned(),
        }
    }
}

impl fmt::Display for Actor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::Browser => f.write_str("browser"),
            Actor::Token(name) => write!(f, "token:{name}"),
            Actor::Person { email, via: None } => write!(f, "person:{email}"),
            Actor::Person {
                email,
                via: Some(name),
            } => write!(f, "person:{email} via token:{name}"),
            Actor::Ntfy => f.write_str("ntfy"),
            Actor::Other(text) => f.write_str(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_actor_reads_back_as_written() {
        for text in [
            "browser",
            "token:phone",
            "token:a:b",
            "person:alice@example.test",
            "person:alice@example.test via token:wall",
            "ntfy",
            "mode",
            "rule:r1",
            "user:api",
        ] {
            assert_eq!(Actor::parse(text).to_string(), text);
        }
    }

    #[test]
    fn words_name_the_credential_and_its_device_never_a_bare_browser() {
        assert_eq!(Actor::parse("reviewer").words(None), "the reviewer");
        let browser = Actor::parse("browser");
        assert_eq!(browser.words(None), "browser login");
        assert_eq!(browser.words(Some("")), "browser login");
        assert_eq!(
            browser.words(Some("Chrome on Pixel 8")),
            "browser login · Chrome on Pixel 8"
        );
        assert_eq!(
            Actor::parse("token:phone").words(Some("Safari on iPhone")),
            "token phone · Safari on iPhone"
        );
        assert_eq!(Actor::parse("token:ci").words(None), "token ci");
        assert_eq!(Actor::parse("rule:r1").words(Some("x")), "rule:r1");
        assert_eq!(
            Actor::parse("person:a@x.test via token:phone").words(Some("Chrome on Pixel 8")),
            "a@x.test via token phone · Chrome on Pixel 8"
        );
        assert_eq!(Actor::parse("person:a@x.test").words(None), "a@x.test");
    }

    #[test]
    fn a_person_and_their_token_read_as_the_person() {
        assert_eq!(
            Actor::parse("person:a@x.test via token:wall"),
            Actor::Person {
                email: "a@x.test",
                via: Some("wall")
            }
        );
        assert_eq!(Actor::parse("person:a@x.test").person(), Some("a@x.test"));
        assert_eq!(Actor::parse("token:wall").person(), None);
        // Anything near is another actor, naming no person.
        for text in [
            "person:",
            "person: a@x.test",
            "person:a@x.test via token:",
            "person:a@x.test via token:a b",
            "person:nobody",
            "Person:a@x.test",
            "person:a@x.test via browser",
        ] {
            assert_eq!(Actor::parse(text), Actor::Other(text), "{text:?}");
        }
    }

    #[test]
    fn only_exact_spellings_name_a_credential() {
        assert_eq!(Actor::parse("token:phone"), Actor::Token("phone"));
        assert_eq!(Actor::parse("token:a:b"), Actor::Token("a:b"));
        // A token needs a name; case and padding are other actors, never a credential.
        for text in [
            "token:",
            "Token:phone",
            "Browser",
            " browser",
            "browser ",
            "tokens:x",
            "",
        ] {
            assert_eq!(Actor::parse(text), Actor::Other(text), "{text:?}");
        }
    }
}
