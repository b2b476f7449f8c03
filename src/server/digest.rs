//! Digests: what a card's `digest` is made of and how the audit chain hashes its entries.
//! Both hash canonical JSON, so the same value always gives the same digest.

use serde_json::Value;

use crate::protocol::canonical_json;
use sha2::{Digest, Sha256};

/// Lowercase hex sha256 of `text`.
pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Digest of a tool gate: sha256 of canonical `{tool, args}`.
pub fn call_digest(tool: &str, args: &Value) -> String {
    sha256_hex(&canonical_json(
        &serde_json::json!({ "tool": tool, "args": args }),
    ))
}

/// Digest of a tool gate that also binds what its card was made from (`CardText::bound`: the
/// content of the file a diff was made from, the folder a command runs in): sha256 of
/// canonical `{tool, args, bound}`. Without `bound` it is `call_digest`.
pub fn bound_call_digest(tool: &str, args: &Value, bound: Option<&str>) -> String {
    match bound {
        Some(bound) => sha256_hex(&canonical_json(
            &serde_json::json!({ "tool": tool, "args": args, "bound": bound }),
        )),
        None => call_digest(tool, args),
    }
}

/// Digest of a decision gate: sha256 of its proposal.
pub fn proposal_digest(proposal: &str) -> String {
    sha256_hex(proposal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let a = json!({"b": 1, "a": {"d": [1, {"z": 0, "y": 1}], "c": 2}});
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"c":2,"d":[1,{"y":1,"z":0}]},"b":1}"#
        );
        assert_eq!(
            call_digest("t", &json!({"x": 1, "y": 2})),
            call_digest("t", &json!({"y": 2, "x": 1}))
        );
        assert_ne!(
            call_digest("t", &json!({"x": 1})),
            call_digest("t", &json!({"x": 2}))
        );
    }
}
