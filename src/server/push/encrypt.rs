//! RFC 8291 message encryption for Web Push, in the `aes128gcm` content coding of RFC 8188:
//! one record, an ephemeral ECDH key per message, the subscription's auth secret mixed in.
//!
//! Built on `ring` (already in the build for TLS): its P-256 ECDH, HKDF-SHA-256 and
//! AES-128-GCM. The framing below is the RFC's, step for step; the test suite decrypts what
//! it makes with an independent implementation (Node's OpenSSL, `end2end/push.spec.ts`).

use ring::aead::{AES_128_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::agreement::{ECDH_P256, EphemeralPrivateKey, UnparsedPublicKey, agree_ephemeral};
use ring::hkdf::{HKDF_SHA256, KeyType, Salt};
use ring::rand::{SecureRandom, SystemRandom};

/// The record size written in the header: a push message is one record, at most 4096 bytes.
const RECORD_SIZE: u32 = 4096;
/// The header: salt (16), record size (4), key id length (1), the sender's public key (65).
const HEADER_LEN: usize = 16 + 4 + 1 + 65;
const TAG_LEN: usize = 16;
/// The largest plaintext one 4096-byte message holds (header, delimiter and tag taken off).
pub const MAX_PLAINTEXT: usize = RECORD_SIZE as usize - HEADER_LEN - 1 - TAG_LEN;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EncryptError {
    #[error("the subscription's p256dh is not a P-256 public key")]
    BadPublicKey,
    #[error("the subscription's auth secret must be 16 bytes")]
    BadAuthSecret,
    #[error("the message is {0} bytes, more than a push message holds ({MAX_PLAINTEXT})")]
    TooLong(usize),
    #[error("the system's random source failed")]
    Random,
}

/// An HKDF output length, as `ring` wants it named.
struct Len(usize);

impl KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn hkdf(salt: &[u8], ikm: &[u8], info: &[&[u8]], out: &mut [u8]) {
    let prk = Salt::new(HKDF_SHA256, salt).extract(ikm);
    // Lengths here are 12, 16 and 32: far under HKDF's limit of 255 × 32, so expand cannot fail.
    if let Ok(okm) = prk.expand(info, Len(out.len())) {
        let _ = okm.fill(out);
    }
}

/// The content-encryption key and nonce of RFC 8291 section 3.4, from `mine` (this side's
/// private key) and `theirs` (the other side's public key): IKM = HKDF(auth, ECDH,
/// "WebPush: info" || 0x00 || ua_public || as_public, 32); CEK and NONCE from HKDF(salt, IKM).
fn content_keys(
    mine: EphemeralPrivateKey,
    theirs: &[u8],
    ua_public: &[u8],
    as_public: &[u8],
    auth_secret: &[u8],
    salt: &[u8],
) -> Option<([u8; 16], [u8; 12])> {
    let mut ikm = [0u8; 32];
    agree_ephemeral(mine, &UnparsedPublicKey::new(&ECDH_P256, theirs), |ecdh| {
        hkdf(
            auth_secret,
            ecdh,
            &[b"WebPush: info\0", ua_public, as_public],
            &mut ikm,
        )
    })
    .ok()?;
    let mut cek = [0u8; 16];
    let mut nonce = [0u8; 12];
    hkdf(salt, &ikm, &[b"Content-Encoding: aes128gcm\0"], &mut cek);
    hkdf(salt, &ikm, &[b"Content-Encoding: nonce\0"], &mut nonce);
    Some((cek, nonce))
}

/// Encrypts `plaintext` for the browser whose subscription keys are `ua_public` (65 bytes,
/// uncompressed) and `auth_secret` (16 bytes). Returns the request body.
pub fn encrypt(
    plaintext: &[u8],
    ua_public: &[u8],
    auth_secret: &[u8],
) -> Result<Vec<u8>, EncryptError> {
    if plaintext.len() > MAX_PLAINTEXT {
        return Err(EncryptError::TooLong(plaintext.len()));
    }
    if auth_secret.len() != 16 {
        return Err(EncryptError::BadAuthSecret);
    }
    if ua_public.len() != 65 || ua_public[0] != 0x04 {
        return Err(EncryptError::BadPublicKey);
    }
    let rng = SystemRandom::new();
    let as_private =
        EphemeralPrivateKey::generate(&ECDH_P256, &rng).map_err(|_| EncryptError::Random)?;
    let as_public = as_private
        .compute_public_key()
        .map_err(|_| EncryptError::Random)?;
    let as_public = as_public.as_ref().to_vec();
    let mut salt = [0u8; 16];
    rng.fill(&mut salt).map_err(|_| EncryptError::Random)?;

    let (cek, nonce) = content_keys(
        as_private,
        ua_public,
        ua_public,
        &as_public,
        auth_secret,
        &salt,
    )
    .ok_or(EncryptError::BadPublicKey)?;

    // The only record is the last: its padding delimiter is 0x02.
    let mut record = Vec::with_capacity(plaintext.len() + 1 + TAG_LEN);
    record.extend_from_slice(plaintext);
    record.push(0x02);
    let key = UnboundKey::new(&AES_128_GCM, &cek).map_err(|_| EncryptError::Random)?;
    LessSafeKey::new(key)
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::empty(),
            &mut record,
        )
        .map_err(|_| EncryptError::Random)?;

    let mut body = Vec::with_capacity(HEADER_LEN + record.len());
    body.extend_from_slice(&salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(65);
    body.extend_from_slice(&as_public);
    body.extend_from_slice(&record);
    Ok(body)
}

/// The receiving side, for the benchmark's push service and the tests: decrypts a body
/// `encrypt` made for the key pair whose private half is `ua_private` (spent here: `ring`
/// keeps ECDH keys single-use) and public half `ua_public`.
pub fn decrypt_once(
    body: &[u8],
    ua_private: EphemeralPrivateKey,
    ua_public: &[u8],
    auth_secret: &[u8],
) -> Option<Vec<u8>> {
    if body.len() < HEADER_LEN + TAG_LEN || body[20] != 65 {
        return None;
    }
    let (salt, as_public, record) = (&body[..16], &body[21..86], &body[86..]);
    let (cek, nonce) = content_keys(
        ua_private,
        as_public,
        ua_public,
        as_public,
        auth_secret,
        salt,
    )?;
    let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek).ok()?);
    let mut in_out = record.to_vec();
    let plain = key
        .open_in_place(
            Nonce::assume_unique_for_key(nonce),
            Aad::empty(),
            &mut in_out,
        )
        .ok()?;
    // The last record ends with its delimiter (0x02) after any padding zeros.
    let end = plain.iter().rposition(|b| *b != 0)?;
    (plain[end] == 0x02).then(|| plain[..end].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscriber() -> Vec<u8> {
        let rng = SystemRandom::new();
        let key = EphemeralPrivateKey::generate(&ECDH_P256, &rng).unwrap();
        key.compute_public_key().unwrap().as_ref().to_vec()
    }

    #[test]
    fn the_header_names_the_record_size_and_the_senders_key() {
        let body = encrypt(b"hello", &subscriber(), &[7u8; 16]).unwrap();
        assert_eq!(body.len(), HEADER_LEN + 5 + 1 + TAG_LEN);
        assert_eq!(&body[16..20], &4096u32.to_be_bytes());
        assert_eq!(body[20], 65);
        assert_eq!(body[21], 0x04, "an uncompressed point");
        // A fresh salt and key each time: two encryptions of one text differ.
        let again = encrypt(b"hello", &subscriber(), &[7u8; 16]).unwrap();
        assert_ne!(body[..16], again[..16]);
    }

    #[test]
    fn what_is_encrypted_decrypts_with_the_subscribers_key_only() {
        let rng = SystemRandom::new();
        let key = EphemeralPrivateKey::generate(&ECDH_P256, &rng).unwrap();
        let public = key.compute_public_key().unwrap().as_ref().to_vec();
        let body = encrypt(b"{\"type\":\"gate\"}", &public, &[9u8; 16]).unwrap();
        assert_eq!(
            decrypt_once(&body, key, &public, &[9u8; 16]).as_deref(),
            Some(&b"{\"type\":\"gate\"}"[..])
        );
        // Another auth secret, or another key, opens nothing.
        let key = EphemeralPrivateKey::generate(&ECDH_P256, &rng).unwrap();
        let public = key.compute_public_key().unwrap().as_ref().to_vec();
        let body = encrypt(b"x", &public, &[9u8; 16]).unwrap();
        assert!(decrypt_once(&body, key, &public, &[8u8; 16]).is_none());
        let other = EphemeralPrivateKey::generate(&ECDH_P256, &rng).unwrap();
        assert!(decrypt_once(&body, other, &public, &[9u8; 16]).is_none());
    }

    #[test]
    fn bad_keys_and_long_texts_are_refused() {
        let ua = subscriber();
        assert_eq!(
            encrypt(b"x", &ua, &[0u8; 15]),
            Err(EncryptError::BadAuthSecret)
        );
        let mut off_curve = ua.clone();
        off_curve[40] ^= 0xff;
        assert_eq!(
            encrypt(b"x", &off_curve, &[0u8; 16]),
            Err(EncryptError::BadPublicKey)
        );
        assert_eq!(
            encrypt(b"x", &ua[..33], &[0u8; 16]),
            Err(EncryptError::BadPublicKey)
        );
        let long = vec![b'a'; MAX_PLAINTEXT + 1];
        assert!(matches!(
            encrypt(&long, &ua, &[0u8; 16]),
            Err(EncryptError::TooLong(_))
        ));
        let full = encrypt(&long[1..], &ua, &[0u8; 16]).unwrap();
        assert_eq!(full.len(), 4096, "the largest message fills one record");
    }
}
