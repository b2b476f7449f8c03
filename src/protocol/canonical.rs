//! Canonical JSON: every object's keys sorted at every level, no whitespace. The one writer
//! behind every digest (a card's, the audit chain's, a passkey challenge's) and every outside
//! agent's idempotency key, so equal values always give equal text, whatever order they were
//! written in.

use serde_json::Value;

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
    fn keys_and_strings_are_escaped_as_json() {
        let v = json!({"a\"b": "line\nnext", "é": [true, null, 1.5]});
        assert_eq!(
            canonical_json(&v),
            r#"{"a\"b":"line\nnext","é":[true,null,1.5]}"#
        );
    }
}
