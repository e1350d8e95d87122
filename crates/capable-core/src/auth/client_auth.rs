//! How a client authenticates the forms it POSTs to an authorization server — the
//! token request, the device authorization request, the revocation request: a
//! [`TokenRequest`] with the client's authentication added as its method says — Basic
//! with the form-encoded id and secret; `client_secret` in the body; nothing more; or
//! a signed assertion (`private_key_jwt`, which the shell signs from
//! [`assertion_claims`]).
//!
//! `client_id` is in the body whatever the method, Basic included: RFC 6749 §3.2.1
//! lets a client name itself there, the official SDKs' clients do, and the Python
//! SDK's authorization server (FastMCP's too) reads the client from the form and
//! refuses a request without it (`invalid_client`, "Missing client_id").
//!
//! A request may be authenticated again with another method
//! ([`TokenRequest::authenticated_as`]), for the one second try
//! [`other_secret_method`](super::client::other_secret_method) allows.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Value};

use super::client::{AuthMethod, Registration};

/// The assertion type of `private_key_jwt`.
pub const CLIENT_ASSERTION_JWT: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A token request, ready to POST as `application/x-www-form-urlencoded`.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenRequest {
    /// The token endpoint.
    pub url: String,
    /// The form, in order.
    pub form: Vec<(String, String)>,
    /// The `Authorization: Basic …` value, for `client_secret_basic`.
    pub basic: Option<String>,
    /// `private_key_jwt`: sign [`assertion_claims`] and add `client_assertion_type`
    /// and `client_assertion` to the form.
    pub needs_assertion: bool,
}

impl std::fmt::Debug for TokenRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.form.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("TokenRequest")
            .field("url", &self.url)
            .field("form", &names)
            .field("basic", &self.basic.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

impl TokenRequest {
    /// The same request authenticated as `client` instead: the former client
    /// authentication (its form fields, its Basic header) taken out, `client`'s put in
    /// — for a second try with another method ([`other_secret_method`](super::client::other_secret_method)).
    pub fn authenticated_as(&self, client: &Registration) -> TokenRequest {
        let form = self
            .form
            .iter()
            .filter(|(n, _)| {
                !matches!(
                    n.as_str(),
                    "client_id" | "client_secret" | "client_assertion" | "client_assertion_type"
                )
            })
            .cloned()
            .collect();
        authenticated(&self.url, form, Some(client))
    }
}

fn form_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A form to POST to `endpoint` with `client`'s authentication added as its method
/// says (see the module documentation): the token request's, the device
/// authorization request's, the revocation request's.
pub fn authenticated(
    endpoint: &str,
    mut form: Vec<(String, String)>,
    client: Option<&Registration>,
) -> TokenRequest {
    let mut basic = None;
    let mut needs_assertion = false;
    if let Some(client) = client {
        form.push(("client_id".into(), client.client_id.clone()));
        match client.auth_method {
            AuthMethod::ClientSecretBasic => {
                let secret = client.client_secret.as_deref().unwrap_or("");
                let pair = format!("{}:{}", form_encode(&client.client_id), form_encode(secret));
                basic = Some(format!("Basic {}", STANDARD.encode(pair)));
            }
            AuthMethod::ClientSecretPost => form.push((
                "client_secret".into(),
                client.client_secret.clone().unwrap_or_default(),
            )),
            AuthMethod::None => {}
            AuthMethod::PrivateKeyJwt => needs_assertion = true,
        }
    }
    TokenRequest {
        url: endpoint.to_owned(),
        form,
        basic,
        needs_assertion,
    }
}

/// The claims of a `private_key_jwt` client assertion (RFC 7523 §3): issued and
/// subject to the client, for the authorization server's issuer, valid five minutes.
pub fn assertion_claims(client_id: &str, audience: &str, now: u64, jti: &str) -> Value {
    json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": jti,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::fixtures::client;
    use crate::auth::token::{token_request, Grant};

    fn names(r: &TokenRequest) -> Vec<&str> {
        r.form.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn a_request_authenticated_again_with_another_method() {
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
            None,
        );
        let post = basic.authenticated_as(&client(AuthMethod::ClientSecretPost));
        assert_eq!(post.basic, None);
        assert_eq!(post.url, basic.url);
        assert_eq!(
            names(&post),
            [
                "grant_type",
                "code",
                "code_verifier",
                "redirect_uri",
                "resource",
                "client_id",
                "client_secret"
            ]
        );
        assert_eq!(post.form[..5], basic.form[..5]);
        // And back: the secret leaves the body for the header.
        let again = post.authenticated_as(&client(AuthMethod::ClientSecretBasic));
        assert_eq!(again, basic);
    }
}
