//! The `code` of the error body (`{"error":{"code","message"}}`): one closed set, spelled in
//! one table, that the server writes and the page and the CLI match on. A client compares
//! variants, never text, so a renamed code fails to build instead of silently never matching.
//!
//! A code this build does not know (a newer server's) is kept as written (`Other`), so an older
//! CLI still reads the body and shows the code it was given.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! error_codes {
    ($($(#[$doc:meta])* $variant:ident => $spelling:literal,)*) => {
        /// Why a request was refused or failed, as the wire names it (docs/api.md "Errors").
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[$doc])* $variant,)*
            /// A code this build does not know, as the server wrote it.
            Other(String),
        }

        impl ErrorCode {
            /// Every code this build knows, in the table's order.
            pub const KNOWN: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The wire spelling (`snake_case`).
            pub fn as_str(&self) -> &str {
                match self {
                    $(ErrorCode::$variant => $spelling,)*
                    ErrorCode::Other(raw) => raw,
                }
            }
        }
    };
}

error_codes! {
    // The core's refusals and failures (`server::core::Error`).
    InvalidRequest => "invalid_request",
    InvalidApprovalMode => "invalid_approval_mode",
    InvalidMessage => "invalid_message",
    InvalidTitle => "invalid_title",
    UnknownSession => "unknown_session",
    TurnInProgress => "turn_in_progress",
    NoTurnRunning => "no_turn_running",
    UnknownApproval => "unknown_approval",
    UnknownRule => "unknown_rule",
    InvalidDecision => "invalid_decision",
    EditsRequired => "edits_required",
    InvalidEdits => "invalid_edits",
    NotAllowed => "not_allowed",
    StaleDigest => "stale_digest",
    AlreadyResolved => "already_resolved",
    Gone => "gone",
    ProtectedKey => "protected_key",
    InvalidValue => "invalid_value",
    ShuttingDown => "shutting_down",
    StorageUnavailable => "storage_unavailable",
    InvalidGate => "invalid_gate",
    /// An `Idempotency-Key` that names a gate of another call.
    IdempotencyKeyReused => "idempotency_key_reused",
    TooManyGates => "too_many_gates",
    /// An outside agent's `source` another credential claimed first.
    SourceClaimed => "source_claimed",
    Forbidden => "forbidden",
    Unauthorized => "unauthorized",
    InvalidName => "invalid_name",
    NameTaken => "name_taken",
    InvalidScope => "invalid_scope",
    UnknownToken => "unknown_token",
    UnknownSubscription => "unknown_subscription",
    TooManySubscriptions => "too_many_subscriptions",
    /// One credential holds as many live streams as it may.
    TooManyStreams => "too_many_streams",
    InvalidCapability => "invalid_capability",
    CapabilityEnded => "capability_ended",
    PasskeyRequired => "passkey_required",
    PasskeyRefused => "passkey_refused",
    UnknownPasskey => "unknown_passkey",
    /// No person with that id (`/api/v1/people/{id}`).
    UnknownPerson => "unknown_person",
    /// Trusting the reviewer with a class needs `review.mode = "on"`.
    ReviewNotOn => "review_not_on",
    /// The class has not earned trust: too few cards, too little agreement, a recent false
    /// approval.
    NotEligible => "not_eligible",
    /// "I would not have approved this" on a card the reviewer did not answer.
    NotAnsweredByReviewer => "not_answered_by_reviewer",
    /// A routed card answered by someone its route does not name (issue 41).
    NotAnApprover => "not_an_approver",
    Internal => "internal",
    // What only HTTP can get wrong (`server::http::error::ApiError`).
    Csrf => "csrf",
    PayloadTooLarge => "payload_too_large",
    InvalidJson => "invalid_json",
    NotFound => "not_found",
    MethodNotAllowed => "method_not_allowed",
    /// A server function that never reached the server (said by the page itself).
    Network => "network",
}

impl ErrorCode {
    /// Reads a spelling: a known code, or the text kept as `Other`.
    pub fn parse(raw: &str) -> ErrorCode {
        ErrorCode::KNOWN
            .iter()
            .find(|code| code.as_str() == raw)
            .cloned()
            .unwrap_or_else(|| ErrorCode::Other(raw.to_owned()))
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(ErrorCode::parse(&String::deserialize(deserializer)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code with the spelling it had when codes were strings: the wire must not change.
    const SPELLED: &[(ErrorCode, &str)] = &[
        (ErrorCode::InvalidRequest, "invalid_request"),
        (ErrorCode::InvalidApprovalMode, "invalid_approval_mode"),
        (ErrorCode::InvalidMessage, "invalid_message"),
        (ErrorCode::InvalidTitle, "invalid_title"),
        (ErrorCode::UnknownSession, "unknown_session"),
        (ErrorCode::TurnInProgress, "turn_in_progress"),
        (ErrorCode::NoTurnRunning, "no_turn_running"),
        (ErrorCode::UnknownApproval, "unknown_approval"),
        (ErrorCode::UnknownRule, "unknown_rule"),
        (ErrorCode::InvalidDecision, "invalid_decision"),
        (ErrorCode::EditsRequired, "edits_required"),
        (ErrorCode::InvalidEdits, "invalid_edits"),
        (ErrorCode::NotAllowed, "not_allowed"),
        (ErrorCode::StaleDigest, "stale_digest"),
        (ErrorCode::AlreadyResolved, "already_resolved"),
        (ErrorCode::Gone, "gone"),
        (ErrorCode::ProtectedKey, "protected_key"),
        (ErrorCode::InvalidValue, "invalid_value"),
        (ErrorCode::ShuttingDown, "shutting_down"),
        (ErrorCode::StorageUnavailable, "storage_unavailable"),
        (ErrorCode::InvalidGate, "invalid_gate"),
        (ErrorCode::IdempotencyKeyReused, "idempotency_key_reused"),
        (ErrorCode::TooManyGates, "too_many_gates"),
        (ErrorCode::TooManyStreams, "too_many_streams"),
        (ErrorCode::SourceClaimed, "source_claimed"),
        (ErrorCode::Forbidden, "forbidden"),
        (ErrorCode::Unauthorized, "unauthorized"),
        (ErrorCode::InvalidName, "invalid_name"),
        (ErrorCode::NameTaken, "name_taken"),
        (ErrorCode::InvalidScope, "invalid_scope"),
        (ErrorCode::UnknownToken, "unknown_token"),
        (ErrorCode::UnknownSubscription, "unknown_subscription"),
        (ErrorCode::TooManySubscriptions, "too_many_subscriptions"),
        (ErrorCode::InvalidCapability, "invalid_capability"),
        (ErrorCode::CapabilityEnded, "capability_ended"),
        (ErrorCode::PasskeyRequired, "passkey_required"),
        (ErrorCode::PasskeyRefused, "passkey_refused"),
        (ErrorCode::UnknownPasskey, "unknown_passkey"),
        (ErrorCode::UnknownPerson, "unknown_person"),
        (ErrorCode::ReviewNotOn, "review_not_on"),
        (ErrorCode::NotEligible, "not_eligible"),
        (ErrorCode::NotAnsweredByReviewer, "not_answered_by_reviewer"),
        (ErrorCode::NotAnApprover, "not_an_approver"),
        (ErrorCode::Internal, "internal"),
        (ErrorCode::Csrf, "csrf"),
        (ErrorCode::PayloadTooLarge, "payload_too_large"),
        (ErrorCode::InvalidJson, "invalid_json"),
        (ErrorCode::NotFound, "not_found"),
        (ErrorCode::MethodNotAllowed, "method_not_allowed"),
        (ErrorCode::Network, "network"),
    ];

    #[test]
    fn every_code_round_trips_through_serde_with_its_old_spelling() {
        for (code, spelling) in SPELLED {
            let json = serde_json::to_string(code).ok();
            assert_eq!(json, Some(format!("\"{spelling}\"")), "{code:?}");
            let back: Option<ErrorCode> = serde_json::from_str(&format!("\"{spelling}\"")).ok();
            assert_eq!(back.as_ref(), Some(code), "{spelling}");
        }
        // The table above is the whole set: a code added without its pinned spelling fails.
        assert_eq!(ErrorCode::KNOWN.len(), SPELLED.len());
        for known in ErrorCode::KNOWN {
            assert!(
                SPELLED.iter().any(|(c, _)| c == known),
                "{known:?} unpinned"
            );
        }
    }

    /// A newer server's code is read, kept as written, and written back the same.
    #[test]
    fn an_unknown_code_is_kept_as_written() {
        let read: Option<ErrorCode> = serde_json::from_str("\"brand_new_code\"").ok();
        assert_eq!(read, Some(ErrorCode::Other("brand_new_code".into())));
        let written = read.as_ref().and_then(|c| serde_json::to_string(c).ok());
        assert_eq!(written.as_deref(), Some("\"brand_new_code\""));
        assert_eq!(ErrorCode::parse("gone"), ErrorCode::Gone);
        assert!(serde_json::from_str::<ErrorCode>("3").is_err());
    }
}
