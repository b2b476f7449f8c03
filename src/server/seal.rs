//! Values the server hands out and must later recognise as its own, unchanged: an answer
//! capability, a passkey ceremony in progress. One MAC for all of them (HMAC-SHA-256 under a
//! key derived from a random root secret — `push::vapid::VapidKeys::seal_root`, kept in the
//! data dir — and the value's purpose), so no two kinds can stand in for each other, a sealed
//! value is no oracle for guessing the access token, and instances that share the data dir's
//! key file honour each other's.
//!
//! A sealed value is signed, not encrypted: nothing secret goes in one.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::Sha256;

use crate::server::secret::Secret;

/// A sealed value longer than this is not one of ours.
pub const MAX_LEN: usize = 64 * 1024;

/// Why a string is not a value this server sealed for this purpose.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("not a value this server sealed (or it was altered)")]
pub struct Broken;

/// Seals and opens values of one purpose.
pub struct Seal {
    prefix: &'static str,
    key: Secret,
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seal")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

type HmacSha256 = Hmac<Sha256>;

impl Seal {
    /// `prefix` starts every sealed value (`cs1.`), `purpose` separates the keys.
    pub fn new(access_token: &Secret, purpose: &str, prefix: &'static str) -> Seal {
        Seal {
            prefix,
            key: Secret::new(format!(
                "countersign-seal:{purpose}:{}",
                access_token.reveal()
            )),
        }
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC takes a key of any length.
        #[allow(clippy::expect_used)]
        HmacSha256::new_from_slice(self.key.reveal().as_bytes()).expect("any key length")
    }

    pub fn seal<T: Serialize>(&self, value: &T) -> String {
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(value).unwrap_or_default());
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        let tag = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        format!("{}{body}.{tag}", self.prefix)
    }

    /// The value, if this seal made `sealed` (its MAC checked in constant time).
    pub fn open<T: DeserializeOwned>(&self, sealed: &str) -> Result<T, Broken> {
        if sealed.len() > MAX_LEN {
            return Err(Broken);
        }
        let (body, tag) = sealed
            .strip_prefix(self.prefix)
            .and_then(|rest| rest.split_once('.'))
            .ok_or(Broken)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| Broken)?;
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        mac.verify_slice(&tag).map_err(|_| Broken)?;
        let json = URL_SAFE_NO_PAD.decode(body).map_err(|_| Broken)?;
        serde_json::from_slice(&json).map_err(|_| Broken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_opens_only_its_own_purpose_unchanged() {
        let token = Secret::new("token-one");
        let a = Seal::new(&token, "a", "x1.");
        let b = Seal::new(&token, "b", "x1.");
        let sealed = a.seal(&("hello", 7));
        assert_eq!(a.open::<(String, i32)>(&sealed), Ok(("hello".into(), 7)));
        assert_eq!(
            b.open::<(String, i32)>(&sealed),
            Err(Broken),
            "another purpose"
        );
        let other_token = Seal::new(&Secret::new("token-two"), "a", "x1.");
        assert_eq!(other_token.open::<(String, i32)>(&sealed), Err(Broken));
        let mut flipped = sealed.clone().into_bytes();
        flipped[5] = if flipped[5] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).unwrap();
        assert_eq!(a.open::<(String, i32)>(&flipped), Err(Broken));
        assert!(!format!("{a:?}").contains("token-one"));
        assert!(!sealed.contains("token-one"));
    }
}
