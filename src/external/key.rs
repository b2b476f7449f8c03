//! Idempotency keys: the same agent request maps to the same key, so a retried POST (or a
//! restarted bridge) finds the gate it already opened instead of opening a second one.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// A hex SHA-256 over the parts, each length-prefixed so `("ab","c")` and `("a","bc")` differ.
pub fn idempotency_key(parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    hex::encode(hash.finalize())
}

/// JSON with every object's keys sorted and no whitespace: equal values give equal text,
/// whatever order the agent wrote them in.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*key).clone()).to_string());
                out.push(':');
                if let Some(item) = map.get(*key) {
                    write_canonical(item, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_canonical_text() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":[1,{"q":2,"p":1}],"x":"s"}}"#).unwrap();
        let b = json!({"a": {"x": "s", "y": [1, {"p": 1, "q": 2}]}, "b": 1});
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(
            canonical_json(&b),
            r#"{"a":{"x":"s","y":[1,{"p":1,"q":2}]},"b":1}"#
        );
    }

    #[test]
    fn keys_are_stable_and_separate_their_parts() {
        assert_eq!(idempotency_key(&["a", "b"]), idempotency_key(&["a", "b"]));
        assert_ne!(idempotency_key(&["ab", "c"]), idempotency_key(&["a", "bc"]));
        assert_eq!(idempotency_key(&["x"]).len(), 64);
    }
}
