//! Who the client is to an authorization server, chosen in the specification's order:
//!
//! 1. **Pre-registered** credentials the host gives (`client_id`, maybe a secret):
//!    always first;
//! 2. a **client ID metadata document**: the host's HTTPS URL is the `client_id`,
//!    when the server says it supports them;
//! 3. **dynamic registration** (RFC 7591) at the server's `registration_endpoint`,
//!    as a native application whose grants include `refresh_token`;
//! 4. otherwise nothing can be done, and the error says what the host could pass.
//!
//! A registration belongs to the issuer it was made with ([`Registration::issuer`])
//! and is never offered to another one: when a server moves to a new authorization
//! server, the client registers again.
//!
//! The token endpoint authentication method is the one the registration names when
//! the server supports it; else `client_secret_basic` with a secret (the RFC 8414
//! default), `client_secret_post` if only that is offered, `none` without a secret.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::metadata::ServerMetadata;

/// How a client authenticates at the token endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMethod {
    /// A public client: `client_id` in the body, no secret.
    None,
    /// HTTP Basic with the form-encoded id and secret (and no `client_id` in the body).
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the body.
    ClientSecretPost,
    /// A JWT signed with the client's private key (RFC 7523 §2.2).
    PrivateKeyJwt,
}

impl AuthMethod {
    /// The RFC 7591 name.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// From its RFC 7591 name.
    pub fn parse(s: &str) -> Option<AuthMethod> {
        Some(match s {
            "none" => AuthMethod::None,
            "client_secret_basic" => AuthMethod::ClientSecretBasic,
            "client_secret_post" => AuthMethod::ClientSecretPost,
            "private_key_jwt" => AuthMethod::PrivateKeyJwt,
            _ => return None,
        })
    }
}

/// How a registration came about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegistrationSource {
    /// The host's pre-registered credentials.
    Static,
    /// A client ID metadata document URL.
    MetadataDocument,
    /// Dynamic client registration.
    Dynamic,
}

/// A client identity at one authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// The issuer it belongs to.
    pub issuer: String,
    /// The client id.
    pub client_id: String,
    /// The client secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How it authenticates at the token endpoint.
    pub auth_method: AuthMethod,
    /// The redirect URIs it was registered with.
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    /// How it came about.
    pub source: RegistrationSource,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[redacted]"),
            )
            .field("auth_method", &self.auth_method)
            .field("redirect_uris", &self.redirect_uris)
            .field("source", &self.source)
            .finish()
    }
}

impl Registration {
    /// Whether it may be used for a flow redirecting to `redirect_uri`: registered
    /// with exactly that URI (many servers compare the port of a loopback redirect
    /// too), or not a dynamic registration that names redirects at all.
    pub fn accepts_redirect(&self, redirect_uri: &str) -> bool {
        if self.source != RegistrationSource::Dynamic || self.redirect_uris.is_empty() {
            return true;
        }
        self.redirect_uris.iter().any(|r| r == redirect_uri)
    }
}

/// What the host says about its client identity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientSettings {
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret.
    pub client_secret: Option<String>,
    /// A pre-registered client's auth method, when the host knows it.
    pub auth_method: Option<AuthMethod>,
    /// The HTTPS URL of the host's client ID metadata document.
    pub metadata_url: Option<String>,
    /// The name shown to the user at the authorization server.
    pub client_name: String,
}

/// The identity to use, or how to get one.
#[derive(Clone, Debug, PartialEq)]
pub enum Identity {
    /// Use this.
    Ready(Registration),
    /// POST this JSON body to `endpoint`, then hand the answer to [`registered`].
    Register {
        /// The registration endpoint.
        endpoint: String,
        /// The RFC 7591 request.
        body: Value,
    },
    /// No way to identify the client to this server.
    Unavailable(String),
}

/// Chooses the client identity for the authorization server `issuer` (with
/// `metadata`), redirecting to `redirect_uri`; `stored` is a registration kept from
/// earlier, used only if it belongs to this issuer and accepts the redirect.
pub fn choose(
    settings: &ClientSettings,
    issuer: &str,
    metadata: &ServerMetadata,
    stored: Option<&Registration>,
    redirect_uri: Option<&str>,
) -> Identity {
    if let Some(id) = &settings.client_id {
        let method = settings
            .auth_method
            .unwrap_or_else(|| auth_method(metadata, None, settings.client_secret.is_some()));
        return Identity::Ready(Registration {
            issuer: issuer.to_owned(),
            client_id: id.clone(),
            client_secret: settings.client_secret.clone(),
            auth_method: method,
            redirect_uris: redirect_uri.into_iter().map(str::to_owned).collect(),
            source: RegistrationSource::Static,
        });
    }
    if let (Some(url), true) = (&settings.metadata_url, metadata.supports_cimd()) {
        return Identity::Ready(Registration {
            issuer: issuer.to_owned(),
            client_id: url.clone(),
            client_secret: None,
            auth_method: AuthMethod::None,
            redirect_uris: redirect_uri.into_iter().map(str::to_owned).collect(),
            source: RegistrationSource::MetadataDocument,
        });
    }
    if let Some(stored) = stored.filter(|r| {
        r.issuer == issuer
            && r.source == RegistrationSource::Dynamic
            && redirect_uri.is_none_or(|uri| r.accepts_redirect(uri))
    }) {
        return Identity::Ready(stored.clone());
    }
    match &metadata.registration_endpoint {
        Some(endpoint) => Identity::Register {
            endpoint: endpoint.clone(),
            body: registration_request(settings, metadata, redirect_uri),
        },
        None => Identity::Unavailable(format!(
            "the authorization server {issuer} offers no dynamic client registration{}; pass a pre-registered client id (and secret){}",
            if metadata.supports_cimd() { "" } else { " nor client ID metadata documents" },
            if metadata.supports_cimd() { ", or a client metadata document URL" } else { "" },
        )),
    }
}

/// The RFC 7591 request of a native application (SEP-837: `application_type`), asking
/// for the method the server supports that needs the least (a public client when it
/// can).
pub fn registration_request(
    settings: &ClientSettings,
    metadata: &ServerMetadata,
    redirect_uri: Option<&str>,
) -> Value {
    let method = if metadata.supports_auth_method("none") {
        AuthMethod::None
    } else if metadata.supports_auth_method("client_secret_basic") {
        AuthMethod::ClientSecretBasic
    } else if metadata.supports_auth_method("client_secret_post") {
        AuthMethod::ClientSecretPost
    } else {
        AuthMethod::None
    };
    let mut grants = vec!["authorization_code", "refresh_token"];
    if redirect_uri.is_none() {
        grants.retain(|g| *g != "authorization_code");
    }
    json!({
        "client_name": if settings.client_name.is_empty() { "capable" } else { settings.client_name.as_str() },
        "redirect_uris": redirect_uri.into_iter().collect::<Vec<_>>(),
        "grant_types": grants,
        "response_types": ["code"],
        "token_endpoint_auth_method": method.as_str(),
        "application_type": "native",
    })
}

/// Why a registration answer cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("dynamic client registration at {endpoint} failed: {detail}")]
pub struct RegistrationError {
    /// The endpoint.
    pub endpoint: String,
    /// What was wrong.
    pub detail: String,
}

#[derive(Deserialize)]
struct RegistrationAnswer {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    redirect_uris: Option<Vec<String>>,
}

/// The registration from the server's answer to the request `request` (the client
/// secret and auth method are kept: a refresh needs them).
pub fn registered(
    issuer: &str,
    endpoint: &str,
    metadata: &ServerMetadata,
    request: &Value,
    status: u16,
    body: &[u8],
) -> Result<Registration, RegistrationError> {
    let fail = |detail: String| RegistrationError {
        endpoint: endpoint.to_owned(),
        detail,
    };
    if !(200..300).contains(&status) {
        return Err(fail(format!(
            "HTTP {status}{}",
            super::token::error_summary(body)
        )));
    }
    let answer: RegistrationAnswer = serde_json::from_slice(body)
        .map_err(|e| fail(format!("the answer is not a registration: {e}")))?;
    let asked = request
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str);
    let named = answer.token_endpoint_auth_method.as_deref().or(asked);
    let method = auth_method(metadata, named, answer.client_secret.is_some());
    let redirect_uris = answer.redirect_uris.unwrap_or_else(|| {
        request
            .get("redirect_uris")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    });
    Ok(Registration {
        issuer: issuer.to_owned(),
        client_id: answer.client_id,
        client_secret: answer.client_secret,
        auth_method: method,
        redirect_uris,
        source: RegistrationSource::Dynamic,
    })
}

/// The token endpoint auth method: the registration's when the server supports it,
/// else the best the server supports for a client with (or without) a secret.
pub fn auth_method(metadata: &ServerMetadata, named: Option<&str>, has_secret: bool) -> AuthMethod {
    if let Some(method) = named.and_then(AuthMethod::parse) {
        let usable = match method {
            AuthMethod::ClientSecretBasic | AuthMethod::ClientSecretPost => has_secret,
            _ => true,
        };
        if usable && (metadata.supports_auth_method(method.as_str()) || named.is_some()) {
            return method;
        }
    }
    if !has_secret {
        return AuthMethod::None;
    }
    if metadata.supports_auth_method("client_secret_basic") {
        AuthMethod::ClientSecretBasic
    } else if metadata.supports_auth_method("client_secret_post") {
        AuthMethod::ClientSecretPost
    } else {
        AuthMethod::ClientSecretBasic
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(methods: &[&str]) -> ServerMetadata {
        ServerMetadata {
            token_endpoint_auth_methods_supported: Some(
                methods.iter().map(|m| m.to_string()).collect(),
            ),
            registration_endpoint: Some("https://as.test/register".into()),
            ..ServerMetadata::default()
        }
    }

    #[test]
    fn static_then_metadata_document_then_registration() {
        let mut settings = ClientSettings {
            metadata_url: Some("https://app.test/client.json".into()),
            ..ClientSettings::default()
        };
        let mut m = meta(&["none"]);
        // No CIMD support: register.
        assert!(matches!(
            choose(
                &settings,
                "https://as.test",
                &m,
                None,
                Some("http://127.0.0.1:1/cb")
            ),
            Identity::Register { .. }
        ));
        m.client_id_metadata_document_supported = Some(true);
        let Identity::Ready(r) = choose(&settings, "https://as.test", &m, None, None) else {
            panic!()
        };
        assert_eq!(r.client_id, "https://app.test/client.json");
        settings.client_id = Some("pre".into());
        settings.client_secret = Some("s".into());
        let Identity::Ready(r) = choose(
            &settings,
            "https://as.test",
            &meta(&["client_secret_basic"]),
            None,
            None,
        ) else {
            panic!()
        };
        assert_eq!(
            (r.client_id.as_str(), r.auth_method),
            ("pre", AuthMethod::ClientSecretBasic)
        );
    }

    #[test]
    fn a_registration_is_never_offered_to_another_issuer() {
        let stored = Registration {
            issuer: "https://as1.test".into(),
            client_id: "c1".into(),
            client_secret: None,
            auth_method: AuthMethod::None,
            redirect_uris: vec!["http://127.0.0.1:5/cb".into()],
            source: RegistrationSource::Dynamic,
        };
        let m = meta(&["none"]);
        let same = choose(
            &ClientSettings::default(),
            "https://as1.test",
            &m,
            Some(&stored),
            Some("http://127.0.0.1:5/cb"),
        );
        assert_eq!(same, Identity::Ready(stored.clone()));
        let other = choose(
            &ClientSettings::default(),
            "https://as2.test",
            &m,
            Some(&stored),
            Some("http://127.0.0.1:5/cb"),
        );
        assert!(matches!(other, Identity::Register { .. }));
        let moved = choose(
            &ClientSettings::default(),
            "https://as1.test",
            &m,
            Some(&stored),
            Some("http://127.0.0.1:6/cb"),
        );
        assert!(matches!(moved, Identity::Register { .. }));
    }

    #[test]
    fn the_registration_request_is_a_native_app_with_refresh_tokens() {
        let body = registration_request(
            &ClientSettings::default(),
            &meta(&["client_secret_post"]),
            Some("http://127.0.0.1:1/cb"),
        );
        assert_eq!(body["application_type"], "native");
        assert_eq!(
            body["grant_types"],
            json!(["authorization_code", "refresh_token"])
        );
        assert_eq!(body["token_endpoint_auth_method"], "client_secret_post");
        let r = registered(
            "https://as.test",
            "https://as.test/register",
            &meta(&["client_secret_post"]),
            &body,
            201,
            br#"{"client_id":"x","client_secret":"y"}"#,
        )
        .unwrap();
        assert_eq!(r.auth_method, AuthMethod::ClientSecretPost);
        assert_eq!(r.redirect_uris, ["http://127.0.0.1:1/cb"]);
        assert!(!format!("{r:?}").contains("\"y\""));
        assert!(registered(
            "i",
            "e",
            &meta(&[]),
            &body,
            400,
            br#"{"error":"invalid_client_metadata"}"#
        )
        .is_err());
    }

    #[test]
    fn the_auth_method_follows_the_registration_and_the_server() {
        let basic = meta(&["client_secret_basic"]);
        assert_eq!(
            auth_method(&basic, Some("client_secret_basic"), true),
            AuthMethod::ClientSecretBasic
        );
        assert_eq!(auth_method(&meta(&["none"]), None, false), AuthMethod::None);
        // A secret from a registration that asked for `none` is not sent.
        assert_eq!(
            auth_method(&meta(&["none"]), Some("none"), true),
            AuthMethod::None
        );
        assert_eq!(
            auth_method(&meta(&["client_secret_post"]), None, true),
            AuthMethod::ClientSecretPost
        );
        assert_eq!(
            auth_method(&ServerMetadata::default(), None, true),
            AuthMethod::ClientSecretBasic
        );
    }
}
