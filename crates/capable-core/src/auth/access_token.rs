//! A bearer token's form, looked at before any key is: a JWT access token (RFC 9068)
//! of an asymmetric algorithm goes on to its signature; `alg: none`, HMAC (a public
//! key used as a shared secret) and ID tokens (`typ` other than `at+jwt`) are refused
//! here; anything that is not a JWT is opaque, for the issuer to say what it means.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::Value;

use super::resource::{invalid, Refusal};

/// The signing algorithms taken: asymmetric ones only. `none` and the HMAC family
/// are never (with HMAC, whoever knows the issuer's public key could sign).
pub const ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// What a JWT's header says that matters before its signature is checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JwtHeader {
    /// The algorithm, one of [`ALGORITHMS`].
    pub alg: String,
    /// The key's id, if given.
    pub kid: Option<String>,
}

/// What a bearer token is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Form {
    /// A JWT access token, to be verified with the issuer's key.
    Jwt(JwtHeader),
    /// Not a JWT: only the issuer can say what it means (introspection, RFC 7662).
    Opaque,
}

/// Looks at `token`'s form: a JWT (three base64url parts) must be an access token
/// (`typ` `at+jwt`, RFC 9068 §4) signed with one of [`ALGORITHMS`].
pub fn form(token: &str) -> Result<Form, Refusal> {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Ok(Form::Opaque);
    };
    let header = URL_SAFE_NO_PAD
        .decode(header)
        .ok()
        .and_then(|h| serde_json::from_slice::<Value>(&h).ok())
        .filter(Value::is_object)
        .ok_or_else(|| invalid("the token's JWT header is not base64url JSON"))?;
    let alg = header.get("alg").and_then(Value::as_str).unwrap_or("");
    if !ALGORITHMS.contains(&alg) {
        return Err(invalid(
            "the token is not signed with an asymmetric algorithm (alg none and HMAC are refused)",
        ));
    }
    let typ = header.get("typ").and_then(Value::as_str).unwrap_or("");
    if !typ.eq_ignore_ascii_case("at+jwt") && !typ.eq_ignore_ascii_case("application/at+jwt") {
        return Err(invalid(
            "the token is not a JWT access token (typ at+jwt, RFC 9068): an ID token is no access token",
        ));
    }
    let kid = header.get("kid").and_then(Value::as_str).map(str::to_owned);
    Ok(Form::Jwt(JwtHeader {
        alg: alg.to_owned(),
        kid,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn jwt(header: Value) -> String {
        format!(
            "{}.{}.sig",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(json!({"sub": "alice"}).to_string())
        )
    }

    #[test]
    fn only_asymmetric_access_token_jwts_go_on_to_their_signature() {
        let at = jwt(json!({"alg": "RS256", "typ": "at+jwt", "kid": "k1"}));
        assert_eq!(
            form(&at),
            Ok(Form::Jwt(JwtHeader {
                alg: "RS256".into(),
                kid: Some("k1".into())
            }))
        );
        let app = jwt(json!({"alg": "ES256", "typ": "application/at+jwt"}));
        assert!(matches!(form(&app), Ok(Form::Jwt(_))));
        for header in [
            json!({"alg": "none", "typ": "at+jwt"}),
            json!({"alg": "HS256", "typ": "at+jwt"}),
            json!({"typ": "at+jwt"}),
            json!({"alg": "RS256", "typ": "JWT"}),
            json!({"alg": "RS256"}),
        ] {
            assert!(
                matches!(form(&jwt(header.clone())), Err(Refusal::Invalid(_))),
                "{header}"
            );
        }
        assert!(matches!(form("!!.e30.x"), Err(Refusal::Invalid(_))));
        assert_eq!(form("an-opaque-token"), Ok(Form::Opaque));
        assert_eq!(form("a.b.c.d"), Ok(Form::Opaque));
    }
}
