//! Token requests and answers.
//!
//! A [`TokenRequest`] is a form POST to the token endpoint: the grant's parameters,
//! `resource` (RFC 8707; on every grant, the server may ignore it, and the host may
//! leave it out for a server that rejects it), and the client's authentication as its
//! method says ([`client_auth`](super::client_auth)).
//!
//! A [`Token`] remembers when it expires as wall-clock seconds, so another process
//! reading it from the store knows too. It is refreshed a minute before it expires
//! ([`Token::needs_refresh`]), and on a 401.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::client::Registration;
pub use super::client_auth::{assertion_claims, authenticated, TokenRequest, CLIENT_ASSERTION_JWT};

/// RFC 7523 JWT bearer grant.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// RFC 8693 token exchange.
pub const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// An OpenID Connect ID token (token exchange's subject).
pub const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// RFC 8693's token type of an access token.
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// An identity assertion authorization grant (enterprise-managed authorization).
pub const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// How early before its expiry a token is refreshed, in seconds (at most: a token
/// that lives less than twice as long is refreshed in the second half of its life).
pub const REFRESH_MARGIN: u64 = 60;

/// What is exchanged for a token.
#[derive(Clone, PartialEq, Eq)]
pub enum Grant {
    /// An authorization code, with the PKCE verifier and the redirect it came to.
    AuthorizationCode {
        /// The code.
        code: String,
        /// The PKCE verifier.
        verifier: String,
        /// The redirect URI of the request.
        redirect_uri: String,
    },
    /// A refresh token.
    RefreshToken {
        /// The refresh token.
        refresh_token: String,
    },
    /// The client's own credentials.
    ClientCredentials,
    /// A device code the user approved (RFC 8628 §3.4).
    DeviceCode {
        /// The device code.
        device_code: String,
    },
    /// A JWT assertion (RFC 7523): workload identity, or an ID-JAG.
    JwtBearer {
        /// The assertion.
        assertion: String,
    },
    /// RFC 8693 token exchange of an ID token for an ID-JAG, at the identity provider.
    IdJagExchange {
        /// The user's ID token (or, with `access_token`, an access token the identity
        /// provider issued to the user).
        id_token: String,
        /// The authorization server's issuer.
        audience: String,
        /// The subject token is an access token, not an ID token (a gateway exchanging
        /// its caller's token).
        access_token: bool,
    },
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Grant::AuthorizationCode { .. } => "AuthorizationCode([redacted])",
            Grant::RefreshToken { .. } => "RefreshToken([redacted])",
            Grant::ClientCredentials => "ClientCredentials",
            Grant::DeviceCode { .. } => "DeviceCode([redacted])",
            Grant::JwtBearer { .. } => "JwtBearer([redacted])",
            Grant::IdJagExchange { .. } => "IdJagExchange([redacted])",
        })
    }
}

/// The request for `grant` at `endpoint`, authenticated as `client` (`None`: the
/// grant needs no client, as a public exchange at an identity provider), asking for
/// `scope` on `resource`.
pub fn token_request(
    endpoint: &str,
    grant: &Grant,
    client: Option<&Registration>,
    resource: Option<&str>,
    scope: Option<&str>,
) -> TokenRequest {
    let mut form: Vec<(String, String)> = Vec::new();
    let mut push = |n: &str, v: &str| form.push((n.to_owned(), v.to_owned()));
    match grant {
        Grant::AuthorizationCode {
            code,
            verifier,
            redirect_uri,
        } => {
            push("grant_type", "authorization_code");
            push("code", code);
            push("code_verifier", verifier);
            push("redirect_uri", redirect_uri);
        }
        Grant::RefreshToken { refresh_token } => {
            push("grant_type", "refresh_token");
            push("refresh_token", refresh_token);
        }
        Grant::ClientCredentials => push("grant_type", "client_credentials"),
        Grant::DeviceCode { device_code } => {
            push("grant_type", super::client::DEVICE_CODE);
            push("device_code", device_code);
        }
        Grant::JwtBearer { assertion } => {
            push("grant_type", JWT_BEARER);
            push("assertion", assertion);
        }
        Grant::IdJagExchange {
            id_token,
            audience,
            access_token,
        } => {
            push("grant_type", TOKEN_EXCHANGE);
            push("requested_token_type", ID_JAG_TYPE);
            push("subject_token", id_token);
            let kind = match access_token {
                true => ACCESS_TOKEN_TYPE,
                false => ID_TOKEN_TYPE,
            };
            push("subject_token_type", kind);
            push("audience", audience);
        }
    }
    if let Some(resource) = resource {
        push("resource", resource);
    }
    if let Some(scope) = scope.filter(|s| !s.is_empty()) {
        if !matches!(grant, Grant::AuthorizationCode { .. }) {
            push("scope", scope);
        }
    }
    authenticated(endpoint, form, client)
}

/// An access token and what comes with it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Token {
    /// The access token.
    pub access_token: String,
    /// `Bearer` or `DPoP`.
    pub token_type: String,
    /// The refresh token, when one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When it expires (seconds since the Unix epoch), when the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scope granted (the server's answer, else what was asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The scope asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_scope: Option<String>,
    /// When it was received (seconds since the Unix epoch).
    pub received_at: u64,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("token_type", &self.token_type)
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "[redacted]"),
            )
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl Token {
    /// Whether it is used with DPoP proofs.
    pub fn is_dpop(&self) -> bool {
        self.token_type.eq_ignore_ascii_case("dpop")
    }

    /// Whether it has expired at `now`.
    pub fn expired(&self, now: u64) -> bool {
        self.expires_at.is_some_and(|e| e <= now)
    }

    /// Whether to refresh it before use at `now`: there is a refresh token, and the
    /// token is within [`REFRESH_MARGIN`] of its expiry — or, for a token that lives
    /// less than two margins, in the second half of its life. (So a token just
    /// received is never refreshed at once, however short-lived: two processes that
    /// wait for each other to refresh take the one new token.)
    pub fn needs_refresh(&self, now: u64) -> bool {
        let Some(expires) = self.expires_at else {
            return false;
        };
        let lifetime = expires.saturating_sub(self.received_at);
        let margin = REFRESH_MARGIN.min(lifetime / 2);
        self.refresh_token.is_some() && expires <= now.saturating_add(margin)
    }

    /// The scopes asked for or granted, for a step-up's union.
    pub fn scopes(&self) -> Vec<String> {
        let mut all = super::scope::split(self.requested_scope.as_deref().unwrap_or(""));
        for s in super::scope::split(self.scope.as_deref().unwrap_or("")) {
            if !all.contains(&s) {
                all.push(s);
            }
        }
        all
    }
}

/// Why a token request failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The server refused with an OAuth error.
    #[error("the token endpoint {url} refused: {error}{}", description.as_ref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        /// The endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
        /// `error`.
        error: String,
        /// `error_description`.
        description: Option<String>,
    },
    /// The answer is not a token response.
    #[error("the token endpoint {url} answered HTTP {status} without a usable token{detail}")]
    Malformed {
        /// The endpoint.
        url: String,
        /// The status.
        status: u16,
        /// What was wrong.
        detail: String,
    },
}

impl TokenError {
    /// The OAuth `error` code, when the server gave one.
    pub fn code(&self) -> Option<&str> {
        match self {
            TokenError::Refused { error, .. } => Some(error),
            TokenError::Malformed { .. } => None,
        }
    }
}

#[derive(Deserialize)]
struct Answer {
    access_token: Option<String>,
    token_type: Option<String>,
    refresh_token: Option<String>,
    expires_in: Option<Value>,
    scope: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// The `error` and `error_description` of an OAuth error body (RFC 6749 §5.2), if it
/// is one.
pub fn oauth_error(body: &[u8]) -> Option<(String, Option<String>)> {
    match serde_json::from_slice::<Answer>(body) {
        Ok(Answer {
            error: Some(e),
            error_description,
            ..
        }) => Some((e, error_description)),
        _ => None,
    }
}

/// ` (error: description)` from an OAuth error body, never the body itself (it
/// could echo a secret).
pub fn error_summary(body: &[u8]) -> String {
    match oauth_error(body) {
        Some((e, description)) => format!(
            ": {e}{}",
            description.map(|d| format!(" ({d})")).unwrap_or_default()
        ),
        None => String::new(),
    }
}

/// The token in the answer to a token request, received at `now`; `requested` is the
/// scope asked for, and `previous` the token a refresh replaces (its refresh token
/// stays when the server issues no new one).
pub fn parse_token_response(
    url: &str,
    status: u16,
    body: &[u8],
    now: u64,
    requested: Option<&str>,
    previous: Option<&Token>,
) -> Result<Token, TokenError> {
    let answer: Option<Answer> = serde_json::from_slice(body).ok();
    let ok = (200..300).contains(&status);
    match answer {
        Some(Answer {
            error: Some(error),
            error_description,
            ..
        }) => Err(TokenError::Refused {
            url: url.to_owned(),
            status,
            error,
            description: error_description,
        }),
        Some(Answer {
            access_token: Some(access_token),
            token_type,
            refresh_token,
            expires_in,
            scope,
            ..
        }) if ok && !access_token.is_empty() => {
            let expires_in = expires_in.and_then(|v| {
                v.as_u64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            });
            Ok(Token {
                access_token,
                token_type: token_type.unwrap_or_else(|| "Bearer".into()),
                refresh_token: refresh_token
                    .or_else(|| previous.and_then(|p| p.refresh_token.clone())),
                expires_at: expires_in.map(|s| now.saturating_add(s)),
                // An empty `scope` says nothing (RFC 6749 §5.1: omitted means as asked).
                scope: scope
                    .filter(|s| !s.trim().is_empty())
                    .or_else(|| requested.map(str::to_owned)),
                requested_scope: requested
                    .map(str::to_owned)
                    .or_else(|| previous.and_then(|p| p.requested_scope.clone())),
                received_at: now,
            })
        }
        _ => Err(TokenError::Malformed {
            url: url.to_owned(),
            status,
            detail: if ok {
                ": no access_token".into()
            } else {
                String::new()
            },
        }),
    }
}

/// The issued token of a token exchange (the ID-JAG), from the same answer shape.
pub fn issued_token(url: &str, status: u16, body: &[u8]) -> Result<String, TokenError> {
    parse_token_response(url, status, body, 0, None, None).map(|t| t.access_token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::client::AuthMethod;
    use crate::auth::fixtures::client;
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;

    fn names(r: &TokenRequest) -> Vec<&str> {
        r.form.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn an_exchange_names_its_subject_tokens_kind() {
        let form = |access_token| {
            let grant = Grant::IdJagExchange {
                id_token: "subject".into(),
                audience: "https://as.test".into(),
                access_token,
            };
            token_request(
                "https://idp.test/token",
                &grant,
                None,
                Some("https://mcp.test/mcp"),
                None,
            )
            .form
        };
        let kind = |form: Vec<(String, String)>| {
            form.into_iter()
                .find(|(n, _)| n == "subject_token_type")
                .map(|(_, v)| v)
        };
        assert_eq!(kind(form(false)).as_deref(), Some(ID_TOKEN_TYPE));
        assert_eq!(kind(form(true)).as_deref(), Some(ACCESS_TOKEN_TYPE));
    }

    #[test]
    fn client_authentication_by_method() {
        let code = Grant::AuthorizationCode {
            code: "c".into(),
            verifier: "v".into(),
            redirect_uri: "http://127.0.0.1:1/cb".into(),
        };
        let basic = token_request(
            "https://as.test/token",
            &code,
            Some(&client(AuthMethod::ClientSecretBasic)),
            Some("https://mcp.test/mcp"),
            Some("a"),
        );
        assert_eq!(
            basic.basic.as_deref(),
            Some(format!("Basic {}", STANDARD.encode("id%3A1:s%2F2")).as_str())
        );
        // Basic, and the client named in the body too (the Python SDK's server needs it).
        assert_eq!(
            names(&basic),
            [
                "grant_type",
                "code",
                "code_verifier",
                "redirect_uri",
                "resource",
                "client_id"
            ]
        );
        assert!(!names(&basic).contains(&"client_secret"));
        let post = token_request(
            "u",
            &code,
            Some(&client(AuthMethod::ClientSecretPost)),
            None,
            None,
        );
        assert!(names(&post).contains(&"client_secret") && post.basic.is_none());
        assert!(names(&post).contains(&"client_id") && !names(&post).contains(&"resource"));
        let refresh = token_request(
            "u",
            &Grant::RefreshToken {
                refresh_token: "r".into(),
            },
            Some(&client(AuthMethod::ClientSecretBasic)),
            Some("https://mcp.test/mcp"),
            None,
        );
        assert_eq!(
            names(&refresh),
            ["grant_type", "refresh_token", "resource", "client_id"]
        );
        let none = token_request("u", &code, Some(&client(AuthMethod::None)), None, None);
        assert!(names(&none).contains(&"client_id") && !names(&none).contains(&"client_secret"));
        let jwt = token_request(
            "u",
            &Grant::ClientCredentials,
            Some(&client(AuthMethod::PrivateKeyJwt)),
            None,
            Some("x y"),
        );
        assert!(jwt.needs_assertion);
        assert!(names(&jwt).contains(&"scope"));
        assert!(!format!("{basic:?}").contains("s/2"));
    }

    #[test]
    fn token_answers_and_errors() {
        let t = parse_token_response(
            "u",
            200,
            br#"{"access_token":"a","token_type":"Bearer","expires_in":3600}"#,
            100,
            Some("x"),
            None,
        )
        .unwrap();
        assert_eq!(t.expires_at, Some(3700));
        assert_eq!(t.scope.as_deref(), Some("x"));
        assert!(!t.needs_refresh(3000));
        let old = Token {
            refresh_token: Some("r".into()),
            ..t.clone()
        };
        assert!(old.needs_refresh(3650));
        assert!(!old.expired(3650) && old.expired(3700));
        // A token that lives 30 s is refreshed in its last 15 s, never on receipt.
        let short = Token {
            expires_at: Some(130),
            ..old.clone()
        };
        assert!(!short.needs_refresh(100) && !short.needs_refresh(114));
        assert!(short.needs_refresh(115));
        let refreshed = parse_token_response(
            "u",
            200,
            br#"{"access_token":"b","token_type":"DPoP","expires_in":"60"}"#,
            200,
            None,
            Some(&old),
        )
        .unwrap();
        assert_eq!(refreshed.refresh_token.as_deref(), Some("r"));
        assert_eq!(refreshed.requested_scope.as_deref(), Some("x"));
        assert!(refreshed.is_dpop());
        let e = parse_token_response(
            "u",
            400,
            br#"{"error":"invalid_grant","error_description":"expired"}"#,
            0,
            None,
            None,
        )
        .unwrap_err();
        assert_eq!(e.code(), Some("invalid_grant"));
        assert!(parse_token_response("u", 500, b"<html>", 0, None, None).is_err());
        assert!(!format!("{refreshed:?}").contains("\"b\""));
        assert_eq!(
            error_summary(br#"{"error":"x","refresh_token":"secret"}"#),
            ": x"
        );
        // An empty granted scope is what was asked for, not a scope named "".
        let empty = parse_token_response(
            "u",
            200,
            br#"{"access_token":"a","token_type":"Bearer","scope":""}"#,
            0,
            Some("mcp:tools"),
            None,
        )
        .unwrap();
        assert_eq!(empty.scope.as_deref(), Some("mcp:tools"));
        let nothing = parse_token_response(
            "u",
            200,
            br#"{"access_token":"a","token_type":"Bearer","scope":" "}"#,
            0,
            None,
            None,
        )
        .unwrap();
        assert_eq!(nothing.scope, None);
    }
}
