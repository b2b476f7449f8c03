//! The server's VAPID identity (RFC 8292): one P-256 key pair, made at first start and kept in
//! `<data-dir>/vapid_private_key` (PKCS#8, mode 0600), that signs a short-lived JWT on every
//! push so the push service knows the sender is the one the browser subscribed to.
//!
//! Several instances behind one address must send as one sender: give each the same file (as
//! each is given the same `--token`); a browser subscribed through one then gets pushes from
//! all. The key signs pushes and nothing else: no credential, capability or ceremony is derived
//! from it, so reading the file lets nobody answer a card.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};

/// The file in the data dir.
pub const KEY_FILE: &str = "vapid_private_key";
/// How long a JWT is good for (RFC 8292 allows at most 24 hours).
const JWT_LIFETIME_SECS: u64 = 12 * 3600;

#[derive(Debug, thiserror::Error)]
pub enum VapidError {
    #[error("cannot read or write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} does not hold a P-256 private key (PKCS#8); move it away to make a new one")]
    BadKey(PathBuf),
    #[error("the system's random source failed")]
    Random,
}

/// The key pair, and the public key as browsers take it (`applicationServerKey`).
pub struct VapidKeys {
    pair: EcdsaKeyPair,
    public_b64: String,
}

impl std::fmt::Debug for VapidKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VapidKeys")
            .field("public", &self.public_b64)
            .finish_non_exhaustive()
    }
}

impl VapidKeys {
    /// Reads the key in `data_dir`, or makes one and stores it (mode 0600) on first start.
    pub fn load_or_create(data_dir: &Path) -> Result<VapidKeys, VapidError> {
        let path = data_dir.join(KEY_FILE);
        let io = |source| VapidError::Io {
            path: path.clone(),
            source,
        };
        let rng = SystemRandom::new();
        let pkcs8 = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                    .map_err(|_| VapidError::Random)?;
                let mut options = std::fs::OpenOptions::new();
                // create_new: two instances starting on one data dir never overwrite each
                // other's key; the loser reads the winner's.
                options.write(true).create_new(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                match options.open(&path) {
                    Ok(mut file) => {
                        file.write_all(doc.as_ref()).map_err(io)?;
                        file.sync_all().map_err(io)?;
                        doc.as_ref().to_vec()
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        std::fs::read(&path).map_err(io)?
                    }
                    Err(e) => return Err(io(e)),
                }
            }
            Err(err) => return Err(io(err)),
        };
        Self::from_pkcs8(&pkcs8).ok_or(VapidError::BadKey(path))
    }

    fn from_pkcs8(pkcs8: &[u8]) -> Option<VapidKeys> {
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng).ok()?;
        let public_b64 = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        Some(VapidKeys { pair, public_b64 })
    }

    /// The public key, base64url without padding: the `applicationServerKey` a page
    /// subscribes with, and the `k` of every push's `Authorization`.
    pub fn public_key(&self) -> &str {
        &self.public_b64
    }

    /// The `Authorization` header for a push to `endpoint`: `vapid t=<JWT>, k=<public key>`.
    /// The JWT's audience is the endpoint's origin; `subject` is a `mailto:` or `https:` URL.
    pub fn authorization(&self, endpoint: &url::Url, subject: &str) -> Option<String> {
        let audience = endpoint.origin().ascii_serialization();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({
            "aud": audience,
            "exp": now + JWT_LIFETIME_SECS,
            "sub": subject,
        });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signing_input = format!("{header}.{claims}");
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .ok()?;
        let signature = URL_SAFE_NO_PAD.encode(signature.as_ref());
        Some(format!(
            "vapid t={signing_input}.{signature}, k={}",
            self.public_b64
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    #[test]
    fn the_key_is_made_once_kept_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let first = VapidKeys::load_or_create(dir.path()).unwrap();
        let again = VapidKeys::load_or_create(dir.path()).unwrap();
        assert_eq!(first.public_key(), again.public_key());
        let raw = URL_SAFE_NO_PAD.decode(first.public_key()).unwrap();
        assert_eq!((raw.len(), raw[0]), (65, 0x04));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(dir.path().join(KEY_FILE), b"not a key").unwrap();
        assert!(matches!(
            VapidKeys::load_or_create(dir.path()),
            Err(VapidError::BadKey(_))
        ));
    }

    #[test]
    fn the_jwt_is_signed_for_the_endpoints_origin() {
        let dir = tempfile::tempdir().unwrap();
        let keys = VapidKeys::load_or_create(dir.path()).unwrap();
        let endpoint = url::Url::parse("https://push.example:8443/send/abc?x=1").unwrap();
        let header = keys.authorization(&endpoint, "mailto:a@b.example").unwrap();
        let (jwt, k) = header
            .strip_prefix("vapid t=")
            .unwrap()
            .split_once(", k=")
            .unwrap();
        assert_eq!(k, keys.public_key());
        let (input, signature) = jwt.rsplit_once('.').unwrap();
        let claims = input.split('.').nth(1).unwrap();
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
        assert_eq!(claims["aud"], "https://push.example:8443");
        assert_eq!(claims["sub"], "mailto:a@b.example");
        let public = URL_SAFE_NO_PAD.decode(k).unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, public)
            .verify(
                input.as_bytes(),
                &URL_SAFE_NO_PAD.decode(signature).unwrap(),
            )
            .expect("the signature verifies with k");
    }
}
