//! ES256 keys and signatures, randomness and the wall clock, on aws-lc-rs (the
//! crypto provider rustls already uses, so no second one is linked). The JWT framing
//! is the core's ([`capable_core::internal::auth::jwt`]); only the signature is computed here.

use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use capable_core::internal::auth::jwt::{self, EcPublicKey};
use serde_json::Value;

use super::AuthError;

/// A P-256 signing key.
pub(crate) struct SigningKey {
    pair: EcdsaKeyPair,
    public: EcPublicKey,
    pkcs8: Vec<u8>,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("thumbprint", &self.public.thumbprint())
            .finish_non_exhaustive()
    }
}

fn bad_key(why: impl std::fmt::Display) -> AuthError {
    AuthError::Config(format!("the signing key is not a P-256 PKCS#8 key: {why}"))
}

impl SigningKey {
    /// A fresh key (for DPoP).
    pub(crate) fn generate() -> Result<SigningKey, AuthError> {
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING)
            .map_err(|_| AuthError::Config("cannot generate a P-256 key".into()))?;
        let pkcs8 = pair
            .to_pkcs8v1()
            .map_err(|_| AuthError::Config("cannot serialize a P-256 key".into()))?
            .as_ref()
            .to_vec();
        SigningKey::from_pkcs8(&pkcs8)
    }

    /// From PKCS#8 DER.
    pub(crate) fn from_pkcs8(der: &[u8]) -> Result<SigningKey, AuthError> {
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der).map_err(bad_key)?;
        let public = EcPublicKey::from_uncompressed(pair.public_key().as_ref())
            .ok_or_else(|| bad_key("its public key is not an uncompressed point"))?;
        Ok(SigningKey {
            pair,
            public,
            pkcs8: der.to_vec(),
        })
    }

    /// From a PEM `PRIVATE KEY` (PKCS#8).
    pub(crate) fn from_pem(pem: &str) -> Result<SigningKey, AuthError> {
        let body: String = pem
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with("-----") && !l.is_empty())
            .collect();
        let der = STANDARD.decode(body).map_err(bad_key)?;
        SigningKey::from_pkcs8(&der)
    }

    /// From the stored form ([`SigningKey::to_stored`]).
    pub(crate) fn from_stored(b64: &str) -> Result<SigningKey, AuthError> {
        let der = STANDARD.decode(b64).map_err(bad_key)?;
        SigningKey::from_pkcs8(&der)
    }

    /// The PKCS#8 DER, base64 (kept in the 0600 store with the token it binds).
    pub(crate) fn to_stored(&self) -> String {
        STANDARD.encode(&self.pkcs8)
    }

    /// The public key.
    pub(crate) fn public(&self) -> &EcPublicKey {
        &self.public
    }

    /// A signed compact JWT.
    pub(crate) fn sign(&self, header: &Value, claims: &Value) -> Result<String, AuthError> {
        let input = jwt::signing_input(header, claims);
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let signature = self
            .pair
            .sign(&rng, input.as_bytes())
            .map_err(|_| AuthError::Config("signing failed".into()))?;
        Ok(jwt::assemble(&input, signature.as_ref()))
    }
}

/// `N` random bytes from the system.
pub(crate) fn random<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    // The system's generator does not fail on a working system; if it did, a zeroed
    // nonce would still be rejected by nothing, so refuse to go on.
    aws_lc_rs::rand::fill(&mut out).expect("the system random generator failed");
    out
}

/// A random identifier (a `jti`).
pub(crate) fn random_id() -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    URL_SAFE_NO_PAD.encode(random::<16>())
}

/// Seconds since the Unix epoch (token lifetimes outlive the process).
pub(crate) fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    #[test]
    fn a_signature_verifies_and_the_key_round_trips() {
        let key = SigningKey::generate().unwrap();
        let jwt = key
            .sign(&jwt::es256_header("JWT"), &serde_json::json!({"a": 1}))
            .unwrap();
        let (input, sig) = jwt.rsplit_once('.').unwrap();
        let sig = URL_SAFE_NO_PAD.decode(sig).unwrap();
        assert_eq!(sig.len(), 64, "raw r||s, not DER");
        let mut point = vec![4u8];
        point.extend(URL_SAFE_NO_PAD.decode(&key.public().x).unwrap());
        point.extend(URL_SAFE_NO_PAD.decode(&key.public().y).unwrap());
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
            .verify(input.as_bytes(), &sig)
            .unwrap();
        let again = SigningKey::from_stored(&key.to_stored()).unwrap();
        assert_eq!(again.public(), key.public());
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            key.to_stored()
        );
        assert_eq!(SigningKey::from_pem(&pem).unwrap().public(), key.public());
        assert!(SigningKey::from_pem("nonsense").is_err());
        assert!(!format!("{key:?}").contains(&key.to_stored()));
    }
}
