//! The authorization request and its answer: authorization code with PKCE (S256),
//! `state` against forgery, `resource` (RFC 8707), and RFC 9207's `iss` against
//! mix-up, exactly as 2026-07-28 says:
//!
//! | server advertises `iss` | `iss` in the answer | client |
//! |---|---|---|
//! | yes | absent | rejects |
//! | either | present | compares with the recorded issuer by simple string equality (no case, port, slash or percent normalisation); rejects on a mismatch |
//! | no | absent | proceeds |
//!
//! On a mismatch the answer's `error`, `error_description` and `error_uri` are never
//! shown: they come from a server that may be an attacker. The randomness (verifier,
//! state) is the shell's to give.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};
use url::Url;

/// A PKCE verifier and its S256 challenge (RFC 7636).
#[derive(Clone, PartialEq, Eq)]
pub struct Pkce {
    /// The verifier (43 characters of base64url).
    pub verifier: String,
    /// `BASE64URL(SHA256(verifier))`.
    pub challenge: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pkce([redacted])")
    }
}

impl Pkce {
    /// From 32 random bytes.
    pub fn from_random(bytes: [u8; 32]) -> Pkce {
        let verifier = URL_SAFE_NO_PAD.encode(bytes);
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Pkce {
            verifier,
            challenge,
        }
    }
}

/// A `state` value from 16 random bytes.
pub fn state_from_random(bytes: [u8; 16]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// What the client remembers between the authorization request and its answer.
#[derive(Clone, PartialEq, Eq)]
pub struct Pending {
    /// The `state` sent.
    pub state: String,
    /// The PKCE pair.
    pub pkce: Pkce,
    /// The issuer recorded from validated metadata.
    pub issuer: String,
    /// Whether the server advertised `authorization_response_iss_parameter_supported`.
    pub iss_required: bool,
    /// The redirect URI sent.
    pub redirect_uri: String,
    /// The scope requested, if any.
    pub scope: Option<String>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("issuer", &self.issuer)
            .field("redirect_uri", &self.redirect_uri)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// The parameters the flow sets itself, which extra parameters may not name.
pub const RESERVED: &[&str] = &[
    "response_type",
    "client_id",
    "redirect_uri",
    "code_challenge",
    "code_challenge_method",
    "state",
    "resource",
    "scope",
];

/// Checks the host's extra authorization request parameters (a provider's own:
/// Auth0's `audience`, Google's `access_type=offline` and `prompt=consent`): none may
/// name a parameter the flow sets itself (scopes and the resource have their own
/// settings).
pub fn check_extra_params(params: &[(String, String)]) -> Result<(), String> {
    match params.iter().find(|(n, _)| RESERVED.contains(&n.as_str())) {
        Some((name, _)) => Err(format!(
            "the authorization parameter {name:?} is set by the flow itself and cannot be given{}",
            match name.as_str() {
                "scope" => " (use the scopes setting)",
                "resource" =>
                    " (the resource comes from the server's metadata; it can only be left out)",
                _ => "",
            }
        )),
        None => Ok(()),
    }
}

/// The authorization URL for `pending`: the flow's parameters, `resource` unless the
/// host leaves it out (`None`), and the host's `extra` parameters after them.
pub fn authorization_url(
    endpoint: &str,
    client_id: &str,
    resource: Option<&str>,
    pending: &Pending,
    extra: &[(String, String)],
) -> Result<Url, String> {
    check_extra_params(extra)?;
    let mut url = Url::parse(endpoint)
        .map_err(|e| format!("the authorization endpoint {endpoint:?} is not a URL: {e}"))?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code");
        q.append_pair("client_id", client_id);
        q.append_pair("redirect_uri", &pending.redirect_uri);
        q.append_pair("code_challenge", &pending.pkce.challenge);
        q.append_pair("code_challenge_method", "S256");
        q.append_pair("state", &pending.state);
        if let Some(resource) = resource {
            q.append_pair("resource", resource);
        }
        if let Some(scope) = pending.scope.as_deref().filter(|s| !s.is_empty()) {
            q.append_pair("scope", scope);
        }
        for (name, value) in extra {
            q.append_pair(name, value);
        }
    }
    Ok(url)
}

/// Why an authorization answer is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallbackError {
    /// `state` is missing or not the one sent.
    #[error("the authorization answer's state does not match the request; it is discarded")]
    State,
    /// The server advertised `iss` but the answer has none.
    #[error("the authorization server {issuer} promised an `iss` parameter and the answer has none; it is discarded (RFC 9207)")]
    IssMissing {
        /// The recorded issuer.
        issuer: String,
    },
    /// `iss` is not the recorded issuer.
    #[error("the authorization answer comes from issuer {got:?}, not {issuer:?}; it is discarded (RFC 9207)")]
    IssMismatch {
        /// The recorded issuer.
        issuer: String,
        /// What the answer said.
        got: String,
    },
    /// The server refused (its words, shown only after `iss` checked out).
    #[error("the authorization server refused: {error}{}", description.as_ref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        /// `error`.
        error: String,
        /// `error_description`.
        description: Option<String>,
    },
    /// Neither a code nor an error.
    #[error("the authorization answer has no code")]
    NoCode,
}

/// Validates the answer's parameters (the redirect's query) and returns the code.
pub fn validate_callback(
    pending: &Pending,
    params: &[(String, String)],
) -> Result<String, CallbackError> {
    let get = |name: &str| {
        params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    match get("iss") {
        Some(iss) if iss != pending.issuer => {
            return Err(CallbackError::IssMismatch {
                issuer: pending.issuer.clone(),
                got: iss.to_owned(),
            })
        }
        None if pending.iss_required => {
            return Err(CallbackError::IssMissing {
                issuer: pending.issuer.clone(),
            })
        }
        _ => {}
    }
    if get("state") != Some(pending.state.as_str()) {
        return Err(CallbackError::State);
    }
    if let Some(error) = get("error") {
        return Err(CallbackError::Denied {
            error: error.to_owned(),
            description: get("error_description").map(str::to_owned),
        });
    }
    get("code")
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .ok_or(CallbackError::NoCode)
}

/// The query parameters of what a user pasted: the whole redirect URL, or just its
/// query (`code=…&state=…`, with or without the `?`).
pub fn callback_params(input: &str) -> Vec<(String, String)> {
    let input = input.trim();
    let query = match Url::parse(input) {
        Ok(url) => url.query().unwrap_or("").to_owned(),
        Err(_) => input.trim_start_matches('?').to_owned(),
    };
    url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// Whether `location` is a redirect to `redirect_uri` (same scheme, host, port and
/// path; the query is the answer).
pub fn is_redirect_to(location: &Url, redirect_uri: &str) -> bool {
    let Ok(expected) = Url::parse(redirect_uri) else {
        return false;
    };
    location.scheme() == expected.scheme()
        && location.host_str() == expected.host_str()
        && location.port_or_known_default() == expected.port_or_known_default()
        && location.path() == expected.path()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(iss_required: bool) -> Pending {
        Pending {
            state: "st".into(),
            pkce: Pkce::from_random([7; 32]),
            issuer: "http://localhost:3001".into(),
            iss_required,
            redirect_uri: "http://127.0.0.1:9/callback".into(),
            scope: Some("a b".into()),
        }
    }

    fn params(s: &str) -> Vec<(String, String)> {
        callback_params(s)
    }

    #[test]
    fn pkce_is_s256_of_the_verifier() {
        // RFC 7636 appendix B.
        let bytes: [u8; 32] = [
            116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186, 22, 212,
            37, 77, 105, 214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121,
        ];
        let p = Pkce::from_random(bytes);
        assert_eq!(p.verifier, "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
        assert_eq!(p.challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        assert_eq!(format!("{p:?}"), "Pkce([redacted])");
    }

    #[test]
    fn the_url_carries_pkce_state_resource_and_scope() {
        let extra = vec![
            ("audience".to_owned(), "https://api.test".to_owned()),
            ("prompt".to_owned(), "consent".to_owned()),
        ];
        let url = authorization_url(
            "https://as.test/authorize?x=1",
            "cid",
            Some("https://mcp.test/mcp"),
            &pending(false),
            &extra,
        )
        .unwrap();
        let q: Vec<(String, String)> = url
            .query_pairs()
            .map(|(a, b)| (a.into(), b.into()))
            .collect();
        let get = |n: &str| q.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("x"), Some("1"));
        assert_eq!(get("code_challenge_method"), Some("S256"));
        assert_eq!(get("resource"), Some("https://mcp.test/mcp"));
        assert_eq!(get("scope"), Some("a b"));
        assert_eq!(get("state"), Some("st"));
        assert_eq!(get("audience"), Some("https://api.test"));
        assert_eq!(get("prompt"), Some("consent"));
        let mut none = pending(false);
        none.scope = None;
        let url = authorization_url("https://as.test/authorize", "cid", None, &none, &[]).unwrap();
        assert!(!url.as_str().contains("scope=") && !url.as_str().contains("resource="));
        // The flow's own parameters cannot be given again.
        for name in ["state", "redirect_uri", "scope", "resource"] {
            let bad = vec![(name.to_owned(), "x".to_owned())];
            let e = authorization_url("https://as.test/authorize", "cid", None, &none, &bad)
                .unwrap_err();
            assert!(e.contains(name), "{e}");
        }
    }

    #[test]
    fn iss_is_checked_exactly_as_2026_07_28_says() {
        let ok = "http://127.0.0.1:9/callback?code=c&state=st&iss=http%3A%2F%2Flocalhost%3A3001";
        assert_eq!(validate_callback(&pending(true), &params(ok)).unwrap(), "c");
        assert_eq!(
            validate_callback(&pending(false), &params(ok)).unwrap(),
            "c"
        );
        let missing = "code=c&state=st";
        assert!(matches!(
            validate_callback(&pending(true), &params(missing)),
            Err(CallbackError::IssMissing { .. })
        ));
        assert_eq!(
            validate_callback(&pending(false), &params(missing)).unwrap(),
            "c"
        );
        let slash = "?code=c&state=st&iss=http%3A%2F%2Flocalhost%3A3001%2F";
        assert!(matches!(
            validate_callback(&pending(true), &params(slash)),
            Err(CallbackError::IssMismatch { .. })
        ));
        // A mismatched iss hides the error the (maybe hostile) server sent.
        let evil =
            "error=access_denied&error_description=click+here&state=st&iss=https%3A%2F%2Fevil";
        let e = validate_callback(&pending(false), &params(evil)).unwrap_err();
        assert!(!e.to_string().contains("click"), "{e}");
        assert!(matches!(
            validate_callback(&pending(false), &params("code=c&state=other")),
            Err(CallbackError::State)
        ));
        assert!(matches!(
            validate_callback(&pending(false), &params("code=c")),
            Err(CallbackError::State)
        ));
        let denied = validate_callback(&pending(false), &params("error=access_denied&state=st"))
            .unwrap_err();
        assert!(denied.to_string().contains("access_denied"));
    }

    #[test]
    fn redirects_are_recognised_by_their_endpoint() {
        let l = Url::parse("http://127.0.0.1:9/callback?code=1").unwrap();
        assert!(is_redirect_to(&l, "http://127.0.0.1:9/callback"));
        assert!(!is_redirect_to(&l, "http://127.0.0.1:8/callback"));
        assert!(!is_redirect_to(&l, "http://localhost:9/callback"));
    }
}
