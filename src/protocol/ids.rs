//! Ids as types of their own. A session's id and a gate's id are both text on the wire, and
//! both reach the same functions (a gate is answered within its session); as one `String` type
//! nothing stopped one from being passed for the other. On the wire each is still the plain
//! string (`#[serde(transparent)]`).
//!
//! The type says what an id is for, not that it exists: one deserialized from a request is
//! the caller's text until core looks it up (`existing_session_id`, `visible_gate`). On the
//! server a `SessionId` is always in the canonical spelling (see `SessionId::canonical`).
//!
//! An id is read as text only by asking for it (`as_str`), at the edges that need text (SQL
//! parameters, URLs, logs): there is no `Deref` to `str`, so an id never turns into text, or
//! into another kind of id's parameter, without a word at the call.

use std::borrow::Borrow;
use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    // An id kept exactly as written: only the text the server gave it names anything.
    ($(#[$doc:meta])* $name:ident, as written) => {
        id_type!($(#[$doc])* $name);

        impl $name {
            fn canonical(id: String) -> String {
                id
            }
        }
    };
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Serialize, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Every way of making one (`From`, deserializing) comes through here.
            pub fn new(id: impl Into<String>) -> Self {
                $name(Self::canonical(id.into()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer).map($name::new)
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                $name::new(id)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                $name::new(id)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                self == &other.0
            }
        }

        /// A page writes an id into `data-*` attributes and links as its text.
        impl leptos::prelude::IntoAttributeValue for $name {
            type Output = String;

            fn into_attribute_value(self) -> String {
                self.0
            }
        }
    };
}

id_type!(
    /// A session's id (the server makes them as UUIDs; from a request, unchecked text).
    SessionId
);
id_type!(
    /// A gate's id, the `approval_id` of its card (the built-in agent's and outside agents').
    /// Kept as written: a gate is only ever found by the id the store gave it, so a spelling
    /// of its own names no gate.
    ApprovalId, as written
);
id_type!(
    /// A turn's id: the run of the built-in agent that a message started (`turn_id` on its
    /// events, `running_turn_id` on the session, the lease a turn is run under).
    TurnId, as written
);
id_type!(
    /// A tool call's id within its turn (`call_id`): ties `tool_call`, its card,
    /// `tool_started` and `tool_result` together.
    CallId, as written
);
id_type!(
    /// A standing rule's id (`rule_id` on the call it let run and on the answer that made it).
    RuleId, as written
);

impl SessionId {
    /// On the server, any spelling of a UUID (upper case, braces, `urn:uuid:`, no hyphens)
    /// becomes the one the server writes, so the hub's map and the store never hold one
    /// session under two spellings; other text stays as it is (and names no session). The
    /// browser keeps the text (it has no UUID parser, and enters no hub).
    fn canonical(id: String) -> String {
        #[cfg(feature = "ssr")]
        if let Ok(uuid) = uuid::Uuid::parse_str(&id) {
            return uuid.hyphenated().to_string();
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_the_wire_an_id_is_its_text() {
        let id = SessionId::new("5b1c");
        assert_eq!(serde_json::to_string(&id).ok().as_deref(), Some("\"5b1c\""));
        let back: Option<ApprovalId> = serde_json::from_str("\"a-1\"").ok();
        assert_eq!(back, Some(ApprovalId::from("a-1")));
        assert!(serde_json::from_str::<SessionId>("5").is_err());
    }

    /// However a session's UUID is spelled, on the server it is one id (one hub entry, one
    /// serial lock); deserializing takes the same way.
    #[cfg(feature = "ssr")]
    #[test]
    fn every_spelling_of_a_session_uuid_is_one_id() {
        let canonical = "550e8400-e29b-41d4-a716-446655440000";
        for spelling in [
            canonical,
            "550E8400-E29B-41D4-A716-446655440000",
            "550e8400e29b41d4a716446655440000",
            "{550e8400-e29b-41d4-a716-446655440000}",
            "urn:uuid:550e8400-e29b-41d4-a716-446655440000",
        ] {
            assert_eq!(SessionId::from(spelling), canonical, "{spelling}");
            let json = format!("\"{spelling}\"");
            let read: Option<SessionId> = serde_json::from_str(&json).ok();
            assert_eq!(read.as_ref().map(SessionId::as_str), Some(canonical));
        }
        assert_eq!(
            SessionId::from(" 550e8400-e29b-41d4-a716-446655440000"),
            " 550e8400-e29b-41d4-a716-446655440000"
        );
        assert_eq!(SessionId::from("s1"), "s1");
        assert_eq!(
            ApprovalId::from("550E8400-E29B-41D4-A716-446655440000"),
            "550E8400-E29B-41D4-A716-446655440000"
        );
    }

    #[test]
    fn an_id_reads_as_text_and_keys_maps_by_text() {
        let id = ApprovalId::from("g1".to_owned());
        assert_eq!(id, "g1");
        assert_eq!(id.as_str().len(), 2);
        let mut set = std::collections::HashSet::new();
        set.insert(id.clone());
        assert!(set.contains("g1"));
        assert_eq!(String::from(id), "g1");
    }
}
