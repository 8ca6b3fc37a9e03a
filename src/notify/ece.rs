//! The encryption of a push message's payload: RFC 8291 (Message Encryption for Web Push) on top
//! of RFC 8188's `aes128gcm` content coding. Only the browser that subscribed can read a push:
//! the push service in between (Google's, Mozilla's, Apple's) sees ciphertext.
//!
//! Why by hand on ring rather than a crate: `ece` (Mozilla's) needs OpenSSL; `web-push` builds on
//! `ece` and its own HTTP clients; `web-push-native` is sound but brings RustCrypto's p256,
//! aes-gcm, a second hkdf/sha2 and (for VAPID) jwt-simple with its RSA and other curves, all new
//! code in the binary. ring is already linked for TLS and has every primitive (P-256 ECDH and
//! ECDSA, HKDF-SHA-256, AES-128-GCM, the system's random numbers); what is written here is the
//! framing, about a hundred lines, checked against both RFCs' test vectors below and against an
//! independent implementation (npm `http_ece`, in `tests/push.rs`).

use ring::aead::{AES_128_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::agreement::{ECDH_P256, EphemeralPrivateKey, UnparsedPublicKey};
use ring::hkdf::{HKDF_SHA256, KeyType, Salt};
use ring::rand::{SecureRandom, SystemRandom};

/// A browser's public key (`keys.p256dh`): an uncompressed P-256 point.
pub const P256DH_BYTES: usize = 65;
/// A browser's authentication secret (`keys.auth`).
pub const AUTH_BYTES: usize = 16;
/// The record size this server writes: one record holds any payload a push service takes.
const RECORD_SIZE: u32 = 4096;
/// salt (16) + rs (4) + idlen (1) + keyid (the sender's 65-byte public key).
const HEADER_BYTES: usize = 16 + 4 + 1 + P256DH_BYTES;
const TAG_BYTES: usize = 16;
/// The longest payload one push carries: a push service takes 4096 bytes of body (RFC 8030
/// §7.2), of which the header, the padding delimiter and the tag take 103 (RFC 8291 §4).
pub const MAX_PLAINTEXT: usize = RECORD_SIZE as usize - HEADER_BYTES - 1 - TAG_BYTES;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EceError {
    #[error("the browser's public key is not a P-256 point")]
    BadPublicKey,
    #[error("the payload is {0} bytes; a push carries at most {MAX_PLAINTEXT}")]
    TooLong(usize),
    #[error("the system's random number generator failed")]
    Random,
    #[error("the encryption failed")]
    Crypto,
}

impl From<ring::error::Unspecified> for EceError {
    fn from(_: ring::error::Unspecified) -> Self {
        Self::Crypto
    }
}

/// Encrypts `plaintext` for the browser whose keys are `p256dh` and `auth`: the body of the push
/// request, to be sent with `Content-Encoding: aes128gcm`.
pub fn encrypt(p256dh: &[u8], auth: &[u8; AUTH_BYTES], plaintext: &[u8]) -> Result<Vec<u8>, EceError> {
    let rng = SystemRandom::new();
    let ephemeral = EphemeralPrivateKey::generate(&ECDH_P256, &rng)?;
    let mut salt = [0u8; 16];
    rng.fill(&mut salt).map_err(|_| EceError::Random)?;
    encrypt_with(ephemeral, salt, p256dh, auth, plaintext)
}

/// Whether `p256dh` is a key a push can be encrypted to (a point on the curve), checked the only
/// way ring offers: an agreement with a throwaway key.
pub fn is_usable_key(p256dh: &[u8]) -> bool {
    let rng = SystemRandom::new();
    let Ok(ephemeral) = EphemeralPrivateKey::generate(&ECDH_P256, &rng) else { return false };
    p256dh.len() == P256DH_BYTES
        && ring::agreement::agree_ephemeral(ephemeral, &UnparsedPublicKey::new(&ECDH_P256, p256dh), |_| ()).is_ok()
}

/// RFC 8291 §3.3–3.4 with the sender's key and salt given (random in `encrypt`; the RFC's in the
/// tests).
fn encrypt_with(
    ephemeral: EphemeralPrivateKey,
    salt: [u8; 16],
    p256dh: &[u8],
    auth: &[u8; AUTH_BYTES],
    plaintext: &[u8],
) -> Result<Vec<u8>, EceError> {
    if plaintext.len() > MAX_PLAINTEXT {
        return Err(EceError::TooLong(plaintext.len()));
    }
    if p256dh.len() != P256DH_BYTES {
        return Err(EceError::BadPublicKey);
    }
    let sender_public = ephemeral.compute_public_key()?;
    let ecdh_secret =
        ring::agreement::agree_ephemeral(ephemeral, &UnparsedPublicKey::new(&ECDH_P256, p256dh), |secret| {
            secret.to_vec()
        })
        .map_err(|_| EceError::BadPublicKey)?;
    // "WebPush: info" || 0x00 || ua_public || as_public
    let key_info = [b"WebPush: info\0".as_slice(), p256dh, sender_public.as_ref()].concat();
    let ikm: [u8; 32] = hkdf(auth, &ecdh_secret, &key_info)?;
    let record = Record { data: plaintext, padding: 0 };
    seal(&ikm, salt, RECORD_SIZE, sender_public.as_ref(), &[record])
}

/// One record's content: its data, then its padding delimiter and `padding` zero bytes.
struct Record<'a> {
    data: &'a [u8],
    padding: usize,
}

/// RFC 8188 §2: the header (salt, record size, key id), then each record sealed with the content
/// encryption key and its own nonce (the base nonce XOR its sequence number). Every record but
/// the last ends with the delimiter 0x01, the last with 0x02.
fn seal(ikm: &[u8], salt: [u8; 16], rs: u32, keyid: &[u8], records: &[Record]) -> Result<Vec<u8>, EceError> {
    let cek: [u8; 16] = hkdf(&salt, ikm, b"Content-Encoding: aes128gcm\0")?;
    let base_nonce: [u8; 12] = hkdf(&salt, ikm, b"Content-Encoding: nonce\0")?;
    let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek)?);
    let keyid_len = u8::try_from(keyid.len()).map_err(|_| EceError::Crypto)?;
    let mut body = Vec::with_capacity(HEADER_BYTES + records.len() * rs as usize);
    body.extend_from_slice(&salt);
    body.extend_from_slice(&rs.to_be_bytes());
    body.push(keyid_len);
    body.extend_from_slice(keyid);
    for (seq, record) in records.iter().enumerate() {
        let last = seq + 1 == records.len();
        let mut content = Vec::with_capacity(record.data.len() + 1 + record.padding + TAG_BYTES);
        content.extend_from_slice(record.data);
        content.push(if last { 2 } else { 1 });
        content.resize(content.len() + record.padding, 0);
        if content.len() + TAG_BYTES > rs as usize {
            return Err(EceError::TooLong(record.data.len()));
        }
        let mut nonce = base_nonce;
        for (byte, seq_byte) in nonce[4..].iter_mut().zip((seq as u64).to_be_bytes()) {
            *byte ^= seq_byte;
        }
        key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut content)?;
        body.extend_from_slice(&content);
    }
    Ok(body)
}

/// HKDF-SHA-256 (RFC 5869): extract with `salt`, expand with `info` to N bytes.
fn hkdf<const N: usize>(salt: &[u8], ikm: &[u8], info: &[u8]) -> Result<[u8; N], EceError> {
    struct Len(usize);
    impl KeyType for Len {
        fn len(&self) -> usize {
            self.0
        }
    }
    let prk = Salt::new(HKDF_SHA256, salt).extract(ikm);
    let mut out = [0u8; N];
    prk.expand(&[info], Len(N))?.fill(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn b64(text: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(text).unwrap()
    }

    /// The sender's ECDH key of a test vector. ring makes private keys only from its random
    /// source; its fixed source (kept for known-answer tests like this one) hands it the
    /// vector's scalar.
    #[allow(deprecated)]
    fn ephemeral_from(private: &[u8]) -> EphemeralPrivateKey {
        let fixed = ring::test::rand::FixedSliceRandom { bytes: private };
        EphemeralPrivateKey::generate(&ECDH_P256, &fixed).unwrap()
    }

    #[test]
    fn rfc_8291_appendix_a_is_reproduced_byte_for_byte() {
        let ephemeral = ephemeral_from(&b64("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"));
        assert_eq!(
            ephemeral.compute_public_key().unwrap().as_ref(),
            b64("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"),
        );
        let ua_public = b64("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4");
        let auth: [u8; 16] = b64("BTBZMqHH6r4Tts7J_aSIgg").try_into().unwrap();
        let salt: [u8; 16] = b64("DGv6ra1nlYgDCS1FRnbzlw").try_into().unwrap();
        let body =
            encrypt_with(ephemeral, salt, &ua_public, &auth, b"When I grow up, I want to be a watermelon").unwrap();
        let expected = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6T\
                        lzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN";
        assert_eq!(URL_SAFE_NO_PAD.encode(&body), expected);
    }

    #[test]
    fn rfc_8188_example_3_1_one_record_is_reproduced() {
        let body = seal(
            &b64("yqdlZ-tYemfogSmv7Ws5PQ"),
            b64("I1BsxtFttlv3u_Oo94xnmw").try_into().unwrap(),
            4096,
            b"",
            &[Record { data: b"I am the walrus", padding: 0 }],
        )
        .unwrap();
        assert_eq!(
            URL_SAFE_NO_PAD.encode(&body),
            "I1BsxtFttlv3u_Oo94xnmwAAEAAA-NAVub2qFgBEuQKRapoZu-IxkIva3MEB1PD-ly8Thjg"
        );
    }

    #[test]
    fn rfc_8188_example_3_2_two_records_with_padding_are_reproduced() {
        let expected =
            "uNCkWiNYzKTnBN9ji3-qWAAAABkCYTHOG8chz_gnvgOqdGYovxyjuqRyJFjEDyoF1Fvkj6hQPdPHI51OEUKEpgz3SsLWIqS_uA";
        let salt: [u8; 16] = b64(expected)[..16].try_into().unwrap();
        // rs = 25: nine bytes of content a record; the first carries one byte of padding.
        let records = [Record { data: b"I am th", padding: 1 }, Record { data: b"e walrus", padding: 0 }];
        let body = seal(&b64("BO3ZVPxUlnLORbVGMpbT1Q"), salt, 25, b"a1", &records).unwrap();
        assert_eq!(URL_SAFE_NO_PAD.encode(&body), expected);
    }

    #[test]
    fn the_longest_payload_fills_one_4096_byte_record_and_one_more_byte_is_refused() {
        let rng = SystemRandom::new();
        let browser = ring::agreement::EphemeralPrivateKey::generate(&ECDH_P256, &rng).unwrap();
        let p256dh = browser.compute_public_key().unwrap();
        let body = encrypt(p256dh.as_ref(), &[7; 16], &[b'x'; MAX_PLAINTEXT]).unwrap();
        assert_eq!(body.len(), 4096);
        assert_eq!(encrypt(p256dh.as_ref(), &[7; 16], &[b'x'; MAX_PLAINTEXT + 1]), Err(EceError::TooLong(3994)));
    }

    #[test]
    fn a_key_off_the_curve_is_refused() {
        let mut not_a_point = [0u8; 65];
        not_a_point[0] = 4;
        not_a_point[1] = 1;
        assert!(!is_usable_key(&not_a_point));
        assert!(!is_usable_key(&[4; 10]));
        assert_eq!(encrypt(&not_a_point, &[0; 16], b"hi"), Err(EceError::BadPublicKey));
        let rng = SystemRandom::new();
        let browser = EphemeralPrivateKey::generate(&ECDH_P256, &rng).unwrap();
        assert!(is_usable_key(browser.compute_public_key().unwrap().as_ref()));
    }
}
