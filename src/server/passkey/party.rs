//! The relying party a passkey is made for and checked against: `server.public_url` when it is
//! set, else the address the browser used (its `Host`). WebAuthn needs a domain, never an IP
//! address (`http://localhost:8080` works; `http://127.0.0.1:8080` cannot hold a passkey).

use url::Url;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelyingParty {
    /// The domain passkeys are bound to (`localhost`, `countersign.example`).
    pub id: String,
    /// The origin assertions must come from (`http://localhost:8080`).
    pub origin: Url,
}

/// The relying party for a request that arrived with `host` (its `Host` header).
pub fn relying_party(public_url: &str, host: Option<&str>) -> Result<RelyingParty, String> {
    let public_url = public_url.trim();
    let origin = if public_url.is_empty() {
        let host = host
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .ok_or("the request named no host; set server.public_url")?;
        Url::parse(&format!("http://{host}"))
            .map_err(|_| format!("`{host}` is not a host a passkey can be bound to"))?
    } else {
        Url::parse(public_url).map_err(|e| format!("server.public_url is not a URL: {e}"))?
    };
    let Some(domain) = origin.domain() else {
        return Err(format!(
            "a passkey needs a domain name, not an IP address: open Countersign at http://localhost:{} (or set server.public_url to an address with a name)",
            origin.port_or_known_default().unwrap_or(80)
        ));
    };
    if !matches!(origin.scheme(), "https" | "http") {
        return Err("server.public_url must be an http or https URL".into());
    }
    let id = domain.to_ascii_lowercase();
    let mut origin = origin;
    origin.set_path("");
    origin.set_query(None);
    origin.set_fragment(None);
    Ok(RelyingParty { id, origin })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_url_wins_and_ip_addresses_are_refused() {
        let rp = relying_party("", Some("localhost:8080")).unwrap();
        assert_eq!(rp.id, "localhost");
        assert_eq!(rp.origin.as_str(), "http://localhost:8080/");
        let rp = relying_party("https://cs.example/app/", Some("evil.example")).unwrap();
        assert_eq!(rp.id, "cs.example");
        assert_eq!(
            rp.origin.origin().ascii_serialization(),
            "https://cs.example"
        );
        assert!(relying_party("", Some("127.0.0.1:8080")).is_err());
        assert!(relying_party("", Some("[::1]:8080")).is_err());
        assert!(relying_party("", None).is_err());
        assert!(relying_party("ftp://cs.example", None).is_err());
        assert!(relying_party("", Some("a b")).is_err());
    }
}
