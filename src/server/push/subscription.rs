//! A browser's `PushSubscription` as the page posts it (`subscription.toJSON()`), read and
//! checked once, here: the one parser of that outside input.

use std::net::IpAddr;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;

/// The longest endpoint taken (real ones are a few hundred bytes).
const MAX_ENDPOINT_LEN: usize = 2048;

/// What the page posts.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionJson {
    pub endpoint: Option<String>,
    #[serde(rename = "expirationTime")]
    pub expiration_time: Option<serde_json::Value>,
    pub keys: Option<KeysJson>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct KeysJson {
    pub p256dh: Option<String>,
    pub auth: Option<String>,
}

/// A subscription that passed every check.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedSubscription {
    pub endpoint: url::Url,
    /// base64url, 65 bytes decoded, an uncompressed P-256 point.
    pub p256dh: String,
    /// base64url, 16 bytes decoded.
    pub auth: String,
}

/// The key bytes of a stored subscription's base64url text.
pub fn decode_key(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok()
}

/// Whether pushes may be sent to `url`: `https`, or `http` to a loopback address only (a push
/// service on this machine, as the tests run). Never credentials in the URL.
pub fn endpoint_allowed(url: &url::Url) -> Result<(), String> {
    if !url.username().is_empty() || url.password().is_some() {
        return Err("the endpoint may not carry a user name or password".into());
    }
    match url.scheme() {
        "https" if is_private_literal(url) => Err(
            "the endpoint may not be a private or link-local address (a push service is public)"
                .into(),
        ),
        "https" if url.host_str().is_some() => Ok(()),
        "http" if is_loopback(url) => Ok(()),
        "http" => Err("the endpoint must be https (http only to a loopback address)".into()),
        other => Err(format!("the endpoint must be an https URL, not `{other}:`")),
    }
}

/// An IP literal in a private, link-local, unspecified or multicast range: never a push
/// service, and a way to make the server post to the inside of a network.
fn is_private_literal(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => {
            ip.is_private()
                || ip.is_link_local()
                || ip.is_unspecified()
                || ip.is_broadcast()
                || ip.is_multicast()
                || ip.octets()[0] == 100 && (ip.octets()[1] & 0xc0) == 64
        }
        Some(url::Host::Ipv6(ip)) => {
            let first = ip.segments()[0];
            ip.is_unspecified()
                || ip.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.is_private() || v4.is_link_local())
        }
        _ => false,
    }
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

impl SubscriptionJson {
    /// Checks everything a push will need; `Err` says what is wrong, in words.
    pub fn check(self) -> Result<CheckedSubscription, String> {
        let endpoint = self
            .endpoint
            .filter(|e| !e.trim().is_empty())
            .ok_or("`endpoint` is required")?;
        if endpoint.len() > MAX_ENDPOINT_LEN {
            return Err(format!(
                "`endpoint` is longer than {MAX_ENDPOINT_LEN} bytes"
            ));
        }
        let endpoint = url::Url::parse(endpoint.trim())
            .map_err(|e| format!("`endpoint` is not a URL: {e}"))?;
        endpoint_allowed(&endpoint)?;
        let keys = self.keys.ok_or("`keys` (p256dh and auth) is required")?;
        let p256dh = keys.p256dh.ok_or("`keys.p256dh` is required")?;
        let auth = keys.auth.ok_or("`keys.auth` is required")?;
        let p256dh_raw = decode_key(&p256dh).ok_or("`keys.p256dh` is not base64url")?;
        if p256dh_raw.len() != 65 || p256dh_raw[0] != 0x04 {
            return Err("`keys.p256dh` must be an uncompressed P-256 public key (65 bytes)".into());
        }
        let auth_raw = decode_key(&auth).ok_or("`keys.auth` is not base64url")?;
        if auth_raw.len() != 16 {
            return Err("`keys.auth` must be 16 bytes".into());
        }
        // A point off the curve is found by trying: encryption refuses it.
        super::encrypt::encrypt(b"", &p256dh_raw, &auth_raw)
            .map_err(|_| "`keys.p256dh` is not a point on P-256".to_owned())?;
        Ok(CheckedSubscription {
            endpoint,
            p256dh: URL_SAFE_NO_PAD.encode(&p256dh_raw),
            auth: URL_SAFE_NO_PAD.encode(&auth_raw),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::agreement::{ECDH_P256, EphemeralPrivateKey};
    use ring::rand::SystemRandom;

    fn p256dh() -> String {
        let key = EphemeralPrivateKey::generate(&ECDH_P256, &SystemRandom::new()).unwrap();
        URL_SAFE_NO_PAD.encode(key.compute_public_key().unwrap().as_ref())
    }

    fn json(endpoint: &str, p256dh: &str, auth: &str) -> SubscriptionJson {
        serde_json::from_value(serde_json::json!({
            "endpoint": endpoint, "expirationTime": null,
            "keys": {"p256dh": p256dh, "auth": auth},
        }))
        .unwrap()
    }

    #[test]
    fn endpoints_are_https_or_loopback_http() {
        let key = p256dh();
        let auth = URL_SAFE_NO_PAD.encode([1u8; 16]);
        for ok in [
            "https://fcm.googleapis.com/fcm/send/abc",
            "http://127.0.0.1:9000/push/1",
            "http://127.8.0.1/x",
            "http://[::1]:8/x",
            "http://localhost:1/x",
        ] {
            assert!(json(ok, &key, &auth).check().is_ok(), "{ok}");
        }
        for bad in [
            "http://push.example/x",
            "http://10.0.0.1/x",
            "http://localhost.evil.example/x",
            "ftp://127.0.0.1/x",
            "file:///etc/passwd",
            "https://user:pw@push.example/x",
            "https://10.1.2.3/x",
            "https://192.168.0.9/x",
            "https://169.254.169.254/latest",
            "https://[fd00::1]/x",
            "https://[::ffff:10.0.0.1]/x",
            "not a url",
            "",
        ] {
            assert!(json(bad, &key, &auth).check().is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_must_be_a_p256_point_and_a_16_byte_secret() {
        let endpoint = "https://push.example/x";
        let good_auth = URL_SAFE_NO_PAD.encode([1u8; 16]);
        assert!(
            json(endpoint, &p256dh(), &URL_SAFE_NO_PAD.encode([1u8; 15]))
                .check()
                .is_err()
        );
        assert!(json(endpoint, "!!!", &good_auth).check().is_err());
        let mut raw = URL_SAFE_NO_PAD.decode(p256dh()).unwrap();
        raw[64] ^= 1;
        assert!(
            json(endpoint, &URL_SAFE_NO_PAD.encode(raw), &good_auth)
                .check()
                .is_err()
        );
        // Padded base64url, as some browsers send, is taken and stored unpadded.
        let padded = format!("{}=", p256dh());
        let checked = json(endpoint, &padded, &good_auth).check().unwrap();
        assert!(!checked.p256dh.ends_with('='));
        let unknown: Result<SubscriptionJson, _> =
            serde_json::from_value(serde_json::json!({"endpoint": endpoint, "extra": 1}));
        assert!(unknown.is_err());
    }
}
