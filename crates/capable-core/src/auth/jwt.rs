//! JSON Web Tokens as the client signs them: the compact serialisation around a
//! signature the shell computes (ES256: the raw `r‖s`, 64 bytes, not DER), DPoP proofs
//! (RFC 9449 §4.2), and JWK thumbprints (RFC 7638). No key material passes through
//! here, only public coordinates and claims.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use url::Url;

/// A P-256 public key as a JWK.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EcPublicKey {
    /// The x coordinate, base64url.
    pub x: String,
    /// The y coordinate, base64url.
    pub y: String,
}

impl EcPublicKey {
    /// From an uncompressed SEC1 point (`0x04 ‖ x ‖ y`, 65 bytes).
    pub fn from_uncompressed(point: &[u8]) -> Option<EcPublicKey> {
        if point.len() != 65 || point[0] != 4 {
            return None;
        }
        Some(EcPublicKey {
            x: URL_SAFE_NO_PAD.encode(&point[1..33]),
            y: URL_SAFE_NO_PAD.encode(&point[33..]),
        })
    }

    /// The JWK (members in the order RFC 7638 sorts them).
    pub fn jwk(&self) -> Value {
        json!({"crv": "P-256", "kty": "EC", "x": self.x, "y": self.y})
    }

    /// The RFC 7638 thumbprint: base64url(SHA-256) of the canonical JWK.
    pub fn thumbprint(&self) -> String {
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            self.x, self.y
        );
        URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
    }
}

/// `base64url(header).base64url(claims)`: what is signed.
pub fn signing_input(header: &Value, claims: &Value) -> String {
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

/// The compact JWT: the signing input and the signature.
pub fn assemble(signing_input: &str, signature: &[u8]) -> String {
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// The header of an ES256 JWT of type `typ`.
pub fn es256_header(typ: &str) -> Value {
    json!({"alg": "ES256", "typ": typ})
}

/// The `htu` of a DPoP proof: the request URL without query and fragment.
pub fn htu(url: &Url) -> String {
    let mut u = url.clone();
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

/// The header and claims of a DPoP proof for `method url` at `now`, bound to
/// `access_token` (`ath`) when one is presented, with the server's `nonce` when it
/// gave one. A proof is fresh per request: `jti` is the shell's randomness.
pub fn dpop_proof(
    key: &EcPublicKey,
    method: &str,
    url: &Url,
    now: u64,
    jti: &str,
    access_token: Option<&str>,
    nonce: Option<&str>,
) -> (Value, Value) {
    let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": key.jwk()});
    let mut claims = json!({
        "jti": jti,
        "htm": method,
        "htu": htu(url),
        "iat": now,
    });
    if let Some(token) = access_token {
        claims["ath"] = json!(URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())));
    }
    if let Some(nonce) = nonce {
        claims["nonce"] = json!(nonce);
    }
    (header, claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thumbprint_of_the_rfc_7638_shape() {
        let mut point = vec![4u8];
        point.extend([1u8; 32]);
        point.extend([2u8; 32]);
        let key = EcPublicKey::from_uncompressed(&point).unwrap();
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            key.x, key.y
        );
        assert_eq!(
            key.thumbprint(),
            URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
        );
        assert!(EcPublicKey::from_uncompressed(&point[1..]).is_none());
    }

    #[test]
    fn a_proof_names_the_request_without_its_query() {
        let key = EcPublicKey {
            x: "x".into(),
            y: "y".into(),
        };
        let url = Url::parse("https://mcp.test/mcp?a=1#f").unwrap();
        let (h, c) = dpop_proof(&key, "POST", &url, 5, "j", Some("tok"), Some("n"));
        assert_eq!(h["typ"], "dpop+jwt");
        assert_eq!(h["jwk"]["kty"], "EC");
        assert_eq!(c["htu"], "https://mcp.test/mcp");
        assert_eq!(c["nonce"], "n");
        assert_eq!(c["ath"], URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok")));
        let (_, bare) = dpop_proof(&key, "POST", &url, 5, "j", None, None);
        assert!(bare.get("ath").is_none() && bare.get("nonce").is_none());
        let jwt = assemble(&signing_input(&h, &c), &[1, 2]);
        assert_eq!(jwt.split('.').count(), 3);
    }
}
