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

/// Whether pushes may be sent to `url`: `https` to a public host (a name, or a public address),
/// or — with `loopback_http` (`notify.push_test_endpoints`, for a push service on this machine
/// in tests) — `http` or `https` to a loopback address. Never credentials in the URL. A name's
/// addresses are checked again when it is resolved (`PublicOnly`).
pub fn endpoint_allowed(url: &url::Url, loopback_http: bool) -> Result<(), String> {
    if !url.username().is_empty() || url.password().is_some() {
        return Err("the endpoint may not carry a user name or password".into());
    }
    let loopback = is_loopback(url);
    match (url.scheme(), url.host()) {
        (_, _) if loopback && loopback_http && matches!(url.scheme(), "http" | "https") => Ok(()),
        (_, _) if loopback => Err(
            "the endpoint is this machine: a push service is public (notify.push_test_endpoints allows loopback for tests)"
                .into(),
        ),
        ("https", Some(url::Host::Domain(name))) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if name.is_empty() || name == "localhost" || name.ends_with(".localhost") {
                Err("the endpoint must name a public host".into())
            } else {
                Ok(())
            }
        }
        ("https", Some(url::Host::Ipv4(ip))) if is_public_ip(IpAddr::V4(ip)) => Ok(()),
        ("https", Some(url::Host::Ipv6(ip))) if is_public_ip(IpAddr::V6(ip)) => Ok(()),
        ("https", _) => Err(
            "the endpoint may not be a private, reserved or link-local address (a push service is public)"
                .into(),
        ),
        ("http", _) => Err("the endpoint must be https".into()),
        (other, _) => Err(format!("the endpoint must be an https URL, not `{other}:`")),
    }
}

/// Whether `ip` is a public unicast address: not private, loopback, link-local, shared,
/// benchmarking, documentation, reserved, multicast or unspecified — and an IPv6 address that
/// embeds an IPv4 one (mapped, compatible, NAT64, 6to4) is judged by the one it embeds.
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || a >= 240
                || (a == 100 && (b & 0xc0) == 64)
                || (a == 198 && (b & 0xfe) == 18)
                || (a == 192 && b == 0 && v4.octets()[2] == 0))
        }
        IpAddr::V6(v6) => {
            let seg = v6.segments();
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_ip(IpAddr::V4(v4));
            }
            // ::a.b.c.d (compatible), 64:ff9b::a.b.c.d (NAT64): judged by the embedded one.
            let embedded = std::net::Ipv4Addr::new(
                (seg[6] >> 8) as u8,
                seg[6] as u8,
                (seg[7] >> 8) as u8,
                seg[7] as u8,
            );
            if seg[..6] == [0, 0, 0, 0, 0, 0] || (seg[0] == 0x64 && seg[1] == 0xff9b) {
                return is_public_ip(IpAddr::V4(embedded));
            }
            if seg[0] == 0x2002 {
                let v4 = std::net::Ipv4Addr::new(
                    (seg[1] >> 8) as u8,
                    seg[1] as u8,
                    (seg[2] >> 8) as u8,
                    seg[2] as u8,
                );
                return is_public_ip(IpAddr::V4(v4));
            }
            // Global unicast only (2000::/3), less documentation (2001:db8::/32).
            (seg[0] & 0xe000) == 0x2000 && !(seg[0] == 0x2001 && seg[1] == 0x0db8)
        }
    }
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        None => false,
    }
}

/// A resolver for the push client: a name's addresses are the public ones (and loopback ones
/// while `loopback` is allowed); a name with none is refused. reqwest connects to what this
/// returns, so a name cannot be re-pointed at an inside address between check and connect.
pub struct PublicOnly {
    pub loopback: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let loopback = self.loopback.load(std::sync::atomic::Ordering::Relaxed);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let allowed: Vec<std::net::SocketAddr> = found
                .filter(|a| is_public_ip(a.ip()) || (loopback && a.ip().is_loopback()))
                .collect();
            if allowed.is_empty() {
                return Err(format!("{host} resolves to no public address").into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

impl SubscriptionJson {
    /// Checks everything a push will need; `Err` says what is wrong, in words.
    /// `loopback_http`: `notify.push_test_endpoints`.
    pub fn check(self, loopback_http: bool) -> Result<CheckedSubscription, String> {
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
        endpoint_allowed(&endpoint, loopback_http)?;
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
    fn endpoints_are_public_https_or_loopback_for_tests() {
        let key = p256dh();
        let auth = URL_SAFE_NO_PAD.encode([1u8; 16]);
        let loopback = [
            "http://127.0.0.1:9000/push/1",
            "http://127.8.0.1/x",
            "http://[::1]:8/x",
            "http://localhost:1/x",
            "https://127.0.0.1/x",
            "https://[::ffff:127.0.0.1]/x",
            "https://localhost./x",
            "https://a.localhost/x",
        ];
        for ok in [
            "https://fcm.googleapis.com/fcm/send/abc",
            "https://8.8.8.8/x",
            "https://[2a00:1450::1]/x",
        ] {
            assert!(json(ok, &key, &auth).check(false).is_ok(), "{ok}");
        }
        for url in loopback {
            assert!(
                json(url, &key, &auth).check(false).is_err(),
                "{url} without the test flag"
            );
            assert!(json(url, &key, &auth).check(true).is_ok(), "{url} with it");
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
            "https://100.64.0.1/x",
            "https://198.18.0.1/x",
            "https://0.0.0.0/x",
            "https://[fd00::1]/x",
            "https://[fe80::1]/x",
            "https://[::ffff:10.0.0.1]/x",
            "https://[::a00:1]/x",
            "https://[64:ff9b::a00:1]/x",
            "https://[2002:a00:1::]/x",
            "https://[2001:db8::1]/x",
            "not a url",
            "",
        ] {
            for flag in [false, true] {
                assert!(
                    json(bad, &key, &auth).check(flag).is_err(),
                    "{bad} ({flag})"
                );
            }
        }
    }

    #[test]
    fn keys_must_be_a_p256_point_and_a_16_byte_secret() {
        let endpoint = "https://push.example/x";
        let good_auth = URL_SAFE_NO_PAD.encode([1u8; 16]);
        assert!(
            json(endpoint, &p256dh(), &URL_SAFE_NO_PAD.encode([1u8; 15]))
                .check(false)
                .is_err()
        );
        assert!(json(endpoint, "!!!", &good_auth).check(false).is_err());
        let mut raw = URL_SAFE_NO_PAD.decode(p256dh()).unwrap();
        raw[64] ^= 1;
        assert!(
            json(endpoint, &URL_SAFE_NO_PAD.encode(raw), &good_auth)
                .check(false)
                .is_err()
        );
        // Padded base64url, as some browsers send, is taken and stored unpadded.
        let padded = format!("{}=", p256dh());
        let checked = json(endpoint, &padded, &good_auth).check(false).unwrap();
        assert!(!checked.p256dh.ends_with('='));
        let unknown: Result<SubscriptionJson, _> =
            serde_json::from_value(serde_json::json!({"endpoint": endpoint, "extra": 1}));
        assert!(unknown.is_err());
    }
}
