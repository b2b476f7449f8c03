//! Idempotency keys: the same agent request maps to the same key, so a retried POST (or a
//! restarted bridge) finds the gate it already opened instead of opening a second one.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_and_separate_their_parts() {
        assert_eq!(idempotency_key(&["a", "b"]), idempotency_key(&["a", "b"]));
        assert_ne!(idempotency_key(&["ab", "c"]), idempotency_key(&["a", "bc"]));
        assert_eq!(idempotency_key(&["x"]).len(), 64);
    }
}
