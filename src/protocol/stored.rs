//! A value of a closed set as a stored row (or an older peer) spells it. A row is read where
//! the database is, long before anyone decides on it; a spelling this build does not know is
//! kept as written rather than guessed, so the code that decides falls back the safe way for
//! its own case (a token with an unknown scope is refused, an unknown mode is `ask`) with the
//! text at hand for the log.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A closed set with one spelling per value (the wire's, which the database also uses).
pub trait Spelling: Copy + 'static {
    const ALL: &'static [Self];

    fn spelling(self) -> &'static str;

    fn from_spelling(raw: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.spelling() == raw)
    }
}

/// A closed-set value as stored: known to this build, or kept as it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stored<T> {
    Known(T),
    Unknown(String),
}

impl<T: Spelling> Stored<T> {
    /// Reads a stored spelling.
    pub fn read(raw: impl Into<String> + AsRef<str>) -> Self {
        match T::from_spelling(raw.as_ref()) {
            Some(value) => Stored::Known(value),
            None => Stored::Unknown(raw.into()),
        }
    }

    /// The value, when this build knows it.
    pub fn known(&self) -> Option<T> {
        match self {
            Stored::Known(value) => Some(*value),
            Stored::Unknown(_) => None,
        }
    }

    /// The value, or `fallback` for a spelling this build does not know.
    pub fn or(&self, fallback: T) -> T {
        self.known().unwrap_or(fallback)
    }

    /// The text as stored.
    pub fn as_str(&self) -> &str {
        match self {
            Stored::Known(value) => value.spelling(),
            Stored::Unknown(raw) => raw,
        }
    }
}

impl<T> From<T> for Stored<T> {
    fn from(value: T) -> Self {
        Stored::Known(value)
    }
}

impl<T: Spelling> fmt::Display for Stored<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<T: Spelling> Serialize for Stored<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de, T: Spelling> Deserialize<'de> for Stored<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Stored::read(String::deserialize(deserializer)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A closed set of the test's own.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Scope {
        Admin,
        Approve,
        Gates,
        View,
    }

    impl Spelling for Scope {
        const ALL: &'static [Self] = &[Scope::Admin, Scope::Approve, Scope::Gates, Scope::View];

        fn spelling(self) -> &'static str {
            match self {
                Scope::Admin => "admin",
                Scope::Approve => "approve",
                Scope::Gates => "gates",
                Scope::View => "view",
            }
        }
    }

    #[test]
    fn every_value_reads_back_as_written() {
        for scope in Scope::ALL {
            assert_eq!(
                Stored::<Scope>::read(scope.spelling()),
                Stored::Known(*scope)
            );
            assert_eq!(Scope::from_spelling(scope.spelling()), Some(*scope));
        }
    }

    #[test]
    fn near_spellings_are_unknown_and_kept_as_written() {
        for raw in [
            "",
            "Admin",
            " admin",
            "admin ",
            "ADMIN",
            "approve\0",
            "gates,admin",
            "View",
            "view,approve",
            "admín",
        ] {
            let stored = Stored::<Scope>::read(raw);
            assert_eq!(stored, Stored::Unknown(raw.to_owned()), "{raw:?}");
            assert_eq!(stored.known(), None);
            assert_eq!(stored.as_str(), raw);
            assert_eq!(stored.or(Scope::Gates), Scope::Gates);
        }
    }

    #[test]
    fn on_the_wire_it_is_the_plain_spelling() {
        let known: Stored<Scope> = Scope::Gates.into();
        assert_eq!(
            serde_json::to_string(&known).ok().as_deref(),
            Some("\"gates\"")
        );
        let unknown: Stored<Scope> = Stored::read("root");
        assert_eq!(
            serde_json::to_string(&unknown).ok().as_deref(),
            Some("\"root\"")
        );
        let back: Option<Stored<Scope>> = serde_json::from_str("\"root\"").ok();
        assert_eq!(back, Some(unknown));
        let back: Option<Stored<Scope>> = serde_json::from_str("\"approve\"").ok();
        assert_eq!(back, Some(Stored::Known(Scope::Approve)));
    }
}
