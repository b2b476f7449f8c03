//! Each closed set's spelling, written once. The enum derives strum's `IntoStaticStr`,
//! `EnumString`, `VariantArray`, `VariantNames` and `Display` with
//! `#[strum(serialize_all = "snake_case")]`; [`spelled!`] builds everything else on that one
//! derive: `ALL`, `as_str`, `parse`, [`Spelling`] (the database's reading),
//! and serde's `Serialize`/`Deserialize` (the wire's), so the wire, the database and the page
//! cannot spell a value two ways. (The strum derive and its `#[strum]` line come before the
//! enum's other derive, which keeps rustfmt from merging the two into one long column.)

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Visitor};

use super::stored::Spelling;

/// Every value of a closed set as an array, in declaration order (strum's `VARIANTS` is a
/// slice; callers index, `map` and size arrays by `ALL`).
pub(crate) const fn every<T: strum::VariantArray + Copy, const N: usize>() -> [T; N] {
    let variants = T::VARIANTS;
    assert!(variants.len() == N && N > 0);
    let mut all = [variants[0]; N];
    let mut i = 1;
    while i < N {
        all[i] = variants[i];
        i += 1;
    }
    all
}

/// Reads a closed set's spelling; one this build does not know is the `fallback` value when
/// the set has one (`#[serde(other)]`'s meaning), else serde's "unknown variant" error.
pub(crate) struct SpellingVisitor<T> {
    pub(crate) fallback: Option<T>,
    pub(crate) set: PhantomData<T>,
}

impl<T: Spelling + strum::VariantNames> Visitor<'_> for SpellingVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "one of {}", T::VARIANTS.join(", "))
    }

    fn visit_str<E: de::Error>(self, raw: &str) -> Result<T, E> {
        T::from_spelling(raw)
            .or(self.fallback)
            .ok_or_else(|| E::unknown_variant(raw, T::VARIANTS))
    }
}

/// Gives each listed enum (deriving the strum set named above) its `ALL`, `as_str`, `parse`,
/// `Spelling` and serde impls, all from strum's spelling. `Type or Fallback` reads an unknown
/// spelling as `Fallback` instead of refusing it.
macro_rules! spelled {
    ($($ty:ident $(or $fallback:ident)?),* $(,)?) => {$(
        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: [$ty; <$ty as ::strum::VariantArray>::VARIANTS.len()] =
                $crate::protocol::spelled::every();

            /// The one spelling: wire, database and page.
            pub fn as_str(self) -> &'static str {
                self.into()
            }

            /// The value spelled exactly so (no other case, no spaces); `None` for any other.
            pub fn parse(raw: &str) -> Option<$ty> {
                raw.parse().ok()
            }
        }

        impl $crate::protocol::stored::Spelling for $ty {
            const ALL: &'static [Self] = &<$ty>::ALL;

            fn spelling(self) -> &'static str {
                self.as_str()
            }
        }

        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let fallback: Option<$ty> = None $(.or(Some($ty::$fallback)))?;
                deserializer.deserialize_str($crate::protocol::spelled::SpellingVisitor {
                    fallback,
                    set: ::std::marker::PhantomData,
                })
            }
        }
    )*};
}
pub(crate) use spelled;

#[cfg(test)]
mod tests {
    use std::fmt::Debug;

    use serde::Serialize;
    use serde::de::DeserializeOwned;

    use super::super::*;

    /// Every value of `T` is written as `expected` says (the spellings the wire and the
    /// database held before strum spelled them), and reads back through serde JSON, `parse`
    /// and `Stored`; the order of `ALL` is the declaration order.
    fn spelled_as<T>(all: &[T], as_str: fn(T) -> &'static str, expected: &[&str])
    where
        T: Spelling + Serialize + DeserializeOwned + Debug + PartialEq + std::fmt::Display,
    {
        let written: Vec<&str> = all.iter().map(|v| as_str(*v)).collect();
        assert_eq!(written, expected);
        assert_eq!(T::ALL, all);
        for value in all {
            let spelling = as_str(*value);
            assert_eq!(value.spelling(), spelling);
            assert_eq!(value.to_string(), spelling);
            let json = serde_json::to_string(value).ok();
            assert_eq!(json, Some(format!("\"{spelling}\"")), "{value:?}");
            let back: Option<T> = serde_json::from_str(&format!("\"{spelling}\"")).ok();
            assert_eq!(back.as_ref(), Some(value), "{spelling}");
            let back: Option<T> = serde_json::from_value(serde_json::json!(spelling)).ok();
            assert_eq!(back.as_ref(), Some(value), "{spelling}");
            assert_eq!(T::from_spelling(spelling).as_ref(), Some(value));
            assert_eq!(Stored::<T>::read(spelling), Stored::Known(*value));
            for near in [
                spelling.to_uppercase(),
                format!(" {spelling}"),
                spelling.replace('_', "-"),
            ] {
                if near != spelling {
                    assert_eq!(T::from_spelling(&near), None, "{near:?}");
                }
            }
        }
    }

    /// `parse` agrees with `Spelling` (callers use both).
    fn parses<T: Spelling + Debug + PartialEq>(parse: fn(&str) -> Option<T>) {
        for value in T::ALL {
            assert_eq!(parse(value.spelling()).as_ref(), Some(value));
        }
        assert_eq!(parse(""), None);
        assert_eq!(parse("no_such_value"), None);
    }

    #[test]
    fn every_closed_set_is_spelled_as_before_everywhere() {
        spelled_as(
            &Mode::ALL,
            Mode::as_str,
            &["plan", "ask", "auto_edit", "yolo"],
        );
        parses(Mode::parse);
        spelled_as(
            &ModeSource::ALL,
            ModeSource::as_str,
            &["user", "message", "restore"],
        );
        parses(ModeSource::parse);
        spelled_as(
            &ToolClass::ALL,
            ToolClass::as_str,
            &["read", "edit", "exec", "config", "decision", "network"],
        );
        parses(ToolClass::parse);
        spelled_as(&Verdict::ALL, Verdict::as_str, &["run", "ask", "refuse"]);
        parses(Verdict::parse);
        spelled_as(
            &ToolStatus::ALL,
            ToolStatus::as_str,
            &[
                "ok",
                "error",
                "denied",
                "refused",
                "timeout",
                "cancelled",
                "interrupted",
            ],
        );
        parses(ToolStatus::parse);
        spelled_as(
            &TurnStatus::ALL,
            TurnStatus::as_str,
            &["completed", "cancelled", "failed", "stopped"],
        );
        parses(TurnStatus::parse);
        spelled_as(
            &EventKind::ALL,
            EventKind::as_str,
            &[
                "user_message",
                "mode_changed",
                "assistant_delta",
                "assistant_message",
                "tool_call",
                "approval_request",
                "approval_resolved",
                "tool_started",
                "tool_result",
                "turn_finished",
                "review_concern",
                "approval_given",
                "approval_escalated",
            ],
        );
        parses(EventKind::parse);
        spelled_as(
            &GateKind::ALL,
            GateKind::as_str,
            &["tool", "decision", "budget", "external"],
        );
        parses(GateKind::parse);
        spelled_as(
            &GateReason::ALL,
            GateReason::as_str,
            &["mode", "safety_floor", "agent_checkpoint", "budget"],
        );
        parses(GateReason::parse);
    }

    #[test]
    fn every_answer_set_is_spelled_as_before_everywhere() {
        spelled_as(
            &Decision::ALL,
            Decision::as_str,
            &[
                "approve",
                "edit",
                "deny",
                "allow_always",
                "timeout",
                "cancelled",
            ],
        );
        parses(Decision::parse);
        spelled_as(
            &DecisionKind::ALL,
            DecisionKind::as_str,
            &[
                "target_column",
                "prep_plan",
                "model_shortlist",
                "expensive_run",
                "plan",
                "other",
            ],
        );
        parses(DecisionKind::parse);
        spelled_as(
            &AnsweredBy::ALL,
            AnsweredBy::as_str,
            &["user", "timeout", "rule", "system", "reviewer"],
        );
        parses(AnsweredBy::parse);
        spelled_as(
            &TimeoutOutcome::ALL,
            TimeoutOutcome::as_str,
            &["deny", "proceed_unapproved"],
        );
        parses(TimeoutOutcome::parse);
        spelled_as(
            &RuleScope::ALL,
            RuleScope::as_str,
            &["session", "workspace"],
        );
        parses(RuleScope::parse);
        spelled_as(&Via::ALL, Via::as_str, &["push"]);
        parses(Via::parse);
        spelled_as(
            &ConfigSource::ALL,
            ConfigSource::as_str,
            &["file", "default", "flag", "env"],
        );
        parses(ConfigSource::parse);
        spelled_as(
            &Scope::ALL,
            Scope::as_str,
            &["admin", "approve", "gates", "view"],
        );
        parses(Scope::parse);
        spelled_as(
            &GateStatus::ALL,
            GateStatus::as_str,
            &[
                "pending",
                "approved",
                "denied",
                "expired",
                "cancelled",
                "unknown",
            ],
        );
        parses(GateStatus::parse);
        spelled_as(
            &RouteWhen::ALL,
            RouteWhen::as_str,
            &["floor", "exec", "edit", "config", "decision", "any"],
        );
        parses(RouteWhen::parse);
    }

    /// A set without a fallback refuses a spelling it does not know, in serde's own words;
    /// one with a fallback reads it as that value (what `#[serde(other)]` did), while `parse`
    /// still says it does not know it.
    #[test]
    fn unknown_spellings_are_refused_or_fall_back() {
        let refused = serde_json::from_str::<Mode>("\"auto-edit\"")
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            refused.as_deref(),
            Some(
                "unknown variant `auto-edit`, expected one of `plan`, `ask`, `auto_edit`, `yolo` \
                 at line 1 column 11"
            )
        );
        assert!(serde_json::from_str::<Mode>("3").is_err());
        assert!(serde_json::from_str::<Mode>("null").is_err());
        assert_eq!(
            serde_json::from_str::<Option<Mode>>("null").ok(),
            Some(None)
        );
        let newer: Option<DecisionKind> = serde_json::from_str("\"budget_split\"").ok();
        assert_eq!(newer, Some(DecisionKind::Other));
        assert_eq!(DecisionKind::parse("budget_split"), None);
        let newer: Option<GateStatus> = serde_json::from_str("\"escalated\"").ok();
        assert_eq!(newer, Some(GateStatus::Unknown));
        assert_eq!(GateStatus::parse("escalated"), None);
        assert!(serde_json::from_str::<DecisionKind>("1").is_err());
    }

    /// Near spellings of every known value (the Rust name, other case, padding, dashes, a
    /// trailing NUL): `parse` (strum, what the API's mode and decision routes read) and serde
    /// (the wire, an agent's arguments, a stored row) never read one as a known value, so no
    /// spelling an old build refused turns into `yolo`, `approve` or `admin`; a set with a
    /// fallback reads it as the fallback, which is the cautious value.
    fn never_near<T>(parse: fn(&str) -> Option<T>, fallback: Option<T>)
    where
        T: Spelling + DeserializeOwned + Debug + PartialEq,
    {
        for value in T::ALL {
            let spelling = value.spelling();
            let rust_name = format!("{value:?}");
            let title = spelling
                .split('_')
                .map(|w| {
                    let mut chars = w.chars();
                    chars
                        .next()
                        .map(|c| c.to_uppercase().chain(chars).collect::<String>())
                        .unwrap_or_default()
                })
                .collect::<Vec<_>>()
                .join("_");
            let nears = [
                rust_name,
                title,
                spelling.to_uppercase(),
                format!("{spelling} "),
                format!("\t{spelling}"),
                format!("{spelling}\n"),
                format!("{spelling}\u{0}"),
                spelling.replace('_', "-"),
                spelling.replace('_', " "),
                spelling.replace('_', ""),
            ];
            for near in nears.iter().filter(|n| n.as_str() != spelling) {
                assert_eq!(parse(near), None, "{near:?}");
                let read: Result<T, _> = serde_json::from_value(serde_json::json!(near));
                match fallback {
                    Some(fallback) => assert_eq!(read.ok(), Some(fallback), "{near:?}"),
                    None => assert!(read.is_err(), "{near:?} read as {read:?}"),
                }
                assert!(
                    !matches!(Stored::<T>::read(near.as_str()), Stored::Known(_)),
                    "{near:?}"
                );
            }
        }
    }

    #[test]
    fn no_near_spelling_reads_as_a_value_of_any_set() {
        never_near(Mode::parse, None);
        never_near(Decision::parse, None);
        never_near(Scope::parse, None);
        never_near(RuleScope::parse, None);
        never_near(GateKind::parse, None);
        never_near(ToolClass::parse, None);
        never_near(Verdict::parse, None);
        never_near(TimeoutOutcome::parse, None);
        never_near(AnsweredBy::parse, None);
        never_near(ModeSource::parse, None);
        never_near(GateReason::parse, None);
        never_near(DecisionKind::parse, Some(DecisionKind::Other));
        never_near(GateStatus::parse, Some(GateStatus::Unknown));
        never_near(ChangeKind::parse, Some(ChangeKind::Unknown));
        // Only the four answers a person gives are read from an answer, in their one spelling.
        for raw in [
            "Approve",
            "APPROVE",
            " approve",
            "timeout",
            "cancelled",
            "allow-always",
        ] {
            assert_eq!(Decision::parse_answer(raw), None, "{raw:?}");
        }
    }

    /// A closed set as a map key is its spelling too (serde_json writes keys as strings).
    #[test]
    fn map_keys_are_spellings() {
        let map = std::collections::BTreeMap::from([(Mode::AutoEdit.as_str(), 1)]);
        let json = serde_json::to_string(&std::collections::HashMap::from([(Mode::AutoEdit, 1)]));
        assert_eq!(json.ok(), serde_json::to_string(&map).ok());
        let back: Option<std::collections::HashMap<Mode, u8>> =
            serde_json::from_str("{\"auto_edit\":1}").ok();
        assert_eq!(back.and_then(|m| m.get(&Mode::AutoEdit).copied()), Some(1));
    }
}
