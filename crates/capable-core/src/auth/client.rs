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
//! server, the client registers again. It is reused only for the grant it was made
//! for ([`Registration::grant_types`]) and, for the authorization code, the redirect
//! URI it names.
//!
//! A dynamic registration's request and answer are [`registration`](super::registration)'s.
//!
//! The token endpoint authentication method is the host's choice when it made one,
//! else the one the registration names; else `client_secret_basic` with a secret (the
//! RFC 8414 default) where the server lists it or lists nothing, `client_secret_post`
//! if only that is offered, `none` without a secret ([`auth_method`]).
//!
//! A server's list says what it accepts, not what it expects of one client: the
//! Python SDK's authorization server (FastMCP's too) lists both secret methods but
//! holds each client to the one it was registered with — `client_secret_post` unless
//! it said otherwise — and answers Basic with `invalid_client` ("Client secret is
//! required"). So a pre-registered client whose method the host did not choose,
//! refused as a client, tries the other secret method the server lists, once
//! ([`other_secret_method`]); the method that worked is the one kept for refreshes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// The grant types it was registered for (empty: not known, as for a
    /// registration kept by an older version: the authorization code's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grant_types: Vec<String>,
    /// The scopes it was registered for (RFC 7591 `scope`; `None`: not limited, or
    /// not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
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
            .field("grant_types", &self.grant_types)
            .field("scope", &self.scope)
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

    /// Whether it was registered for every one of `scopes` (some servers refuse a
    /// client a scope it did not register for).
    pub fn covers(&self, scopes: &[String]) -> bool {
        let Some(registered) = &self.scope else {
            return true;
        };
        let registered = super::scope::split(registered);
        scopes.iter().all(|s| registered.contains(s))
    }

    /// Whether it was registered for `grant` (one registered before grant types were
    /// kept is taken to be for the authorization code).
    pub fn allows_grant(&self, grant: &str) -> bool {
        if self.grant_types.is_empty() {
            return grant == AUTHORIZATION_CODE;
        }
        self.grant_types.iter().any(|g| g == grant)
    }
}

/// The authorization code grant's name.
pub const AUTHORIZATION_CODE: &str = "authorization_code";
/// The device authorization grant's name (RFC 8628 §3.4).
pub const DEVICE_CODE: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// What the host says about its client identity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientSettings {
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret.
    pub client_secret: Option<String>,
    /// The token endpoint auth method, when the host chooses it: a pre-registered
    /// client's, or the one a dynamic registration asks for.
    pub auth_method: Option<AuthMethod>,
    /// The HTTPS URL of the host's client ID metadata document.
    pub metadata_url: Option<String>,
    /// The name shown to the user at the authorization server.
    pub client_name: String,
}

/// What a client identity is for.
#[derive(Clone, Copy, Debug, Default)]
pub struct Purpose<'a> {
    /// The authorization code's redirect URI; none: the device grant.
    pub redirect_uri: Option<&'a str>,
    /// The scopes the flow asks for.
    pub scopes: &'a [String],
}

impl Purpose<'_> {
    /// The grant it is for.
    pub fn grant(&self) -> &'static str {
        match self.redirect_uri {
            Some(_) => AUTHORIZATION_CODE,
            None => DEVICE_CODE,
        }
    }
}

/// The identity to use, or how to get one.
#[derive(Clone, Debug, PartialEq)]
pub enum Identity {
    /// Use this.
    Ready(Registration),
    /// POST this JSON body to `endpoint`, then hand the answer to [`registered`](super::registration::registered).
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
/// `metadata`), for `purpose`; `stored` is a registration kept from earlier, used
/// only if it belongs to this issuer, was made for that grant and those scopes, and
/// accepts the redirect.
pub fn choose(
    settings: &ClientSettings,
    issuer: &str,
    metadata: &ServerMetadata,
    stored: Option<&Registration>,
    purpose: Purpose<'_>,
) -> Identity {
    let redirect_uri = purpose.redirect_uri;
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
            grant_types: Vec::new(),
            scope: None,
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
            grant_types: Vec::new(),
            scope: None,
            source: RegistrationSource::MetadataDocument,
        });
    }
    if let Some(stored) = stored.filter(|r| {
        r.issuer == issuer
            && r.source == RegistrationSource::Dynamic
            && r.allows_grant(purpose.grant())
            && r.covers(purpose.scopes)
            && redirect_uri.is_none_or(|uri| r.accepts_redirect(uri))
    }) {
        return Identity::Ready(stored.clone());
    }
    match &metadata.registration_endpoint {
        Some(endpoint) => Identity::Register {
            endpoint: endpoint.clone(),
            body: super::registration::registration_request(settings, metadata, purpose),
        },
        None => Identity::Unavailable(format!(
            "the authorization server {issuer} offers no dynamic client registration{}; pass a pre-registered client id (and secret){}",
            if metadata.supports_cimd() { "" } else { " nor client ID metadata documents" },
            if metadata.supports_cimd() { ", or a client metadata document URL" } else { "" },
        )),
    }
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

/// After the token endpoint refused `client` with `error`: the other secret method
/// to try, once (see the module documentation) — only for a pre-registered client
/// with a secret whose method the host did not choose (`chosen`), refused as a client
/// (`invalid_client`), when `metadata` lists the other method.
pub fn other_secret_method(
    client: &Registration,
    metadata: &ServerMetadata,
    chosen: bool,
    error: &str,
) -> Option<AuthMethod> {
    if chosen
        || error != "invalid_client"
        || client.source != RegistrationSource::Static
        || client.client_secret.is_none()
    {
        return None;
    }
    let other = match client.auth_method {
        AuthMethod::ClientSecretBasic => AuthMethod::ClientSecretPost,
        AuthMethod::ClientSecretPost => AuthMethod::ClientSecretBasic,
        AuthMethod::None | AuthMethod::PrivateKeyJwt => return None,
    };
    metadata
        .supports_auth_method(other.as_str())
        .then_some(other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::fixtures::{meta, purpose};

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
                purpose(Some("http://127.0.0.1:1/cb"))
            ),
            Identity::Register { .. }
        ));
        m.client_id_metadata_document_supported = Some(true);
        let Identity::Ready(r) = choose(&settings, "https://as.test", &m, None, purpose(None))
        else {
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
            purpose(None),
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
            grant_types: vec![],
            scope: None,
            source: RegistrationSource::Dynamic,
        };
        let m = meta(&["none"]);
        let same = choose(
            &ClientSettings::default(),
            "https://as1.test",
            &m,
            Some(&stored),
            purpose(Some("http://127.0.0.1:5/cb")),
        );
        assert_eq!(same, Identity::Ready(stored.clone()));
        let other = choose(
            &ClientSettings::default(),
            "https://as2.test",
            &m,
            Some(&stored),
            purpose(Some("http://127.0.0.1:5/cb")),
        );
        assert!(matches!(other, Identity::Register { .. }));
        let moved = choose(
            &ClientSettings::default(),
            "https://as1.test",
            &m,
            Some(&stored),
            purpose(Some("http://127.0.0.1:6/cb")),
        );
        assert!(matches!(moved, Identity::Register { .. }));
    }

    #[test]
    fn a_registration_is_reused_only_for_its_grant() {
        let device = Registration {
            issuer: "https://as.test".into(),
            client_id: "d".into(),
            client_secret: None,
            auth_method: AuthMethod::None,
            redirect_uris: vec![],
            grant_types: vec![DEVICE_CODE.into(), "refresh_token".into()],
            scope: None,
            source: RegistrationSource::Dynamic,
        };
        let m = meta(&["none"]);
        let settings = ClientSettings::default();
        assert_eq!(
            choose(
                &settings,
                "https://as.test",
                &m,
                Some(&device),
                purpose(None)
            ),
            Identity::Ready(device.clone())
        );
        assert!(matches!(
            choose(
                &settings,
                "https://as.test",
                &m,
                Some(&device),
                purpose(Some("http://127.0.0.1:5/cb"))
            ),
            Identity::Register { .. }
        ));
        // One kept before grant types were: the authorization code's.
        let older = Registration {
            grant_types: vec![],
            scope: None,
            redirect_uris: vec!["http://127.0.0.1:5/cb".into()],
            ..device
        };
        assert!(matches!(
            choose(
                &settings,
                "https://as.test",
                &m,
                Some(&older),
                purpose(Some("http://127.0.0.1:5/cb"))
            ),
            Identity::Ready(_)
        ));
        assert!(matches!(
            choose(
                &settings,
                "https://as.test",
                &m,
                Some(&older),
                purpose(None)
            ),
            Identity::Register { .. }
        ));
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

    #[test]
    fn a_pre_registered_client_refused_as_a_client_tries_the_other_listed_method_once() {
        let settings = ClientSettings {
            client_id: Some("pre".into()),
            client_secret: Some("s".into()),
            ..ClientSettings::default()
        };
        // FastMCP's and the Python SDK's servers list both; Basic comes first.
        let both = meta(&["client_secret_post", "client_secret_basic"]);
        let Identity::Ready(first) =
            choose(&settings, "https://as.test", &both, None, purpose(None))
        else {
            panic!()
        };
        assert_eq!(first.auth_method, AuthMethod::ClientSecretBasic);
        assert_eq!(
            other_secret_method(&first, &both, false, "invalid_client"),
            Some(AuthMethod::ClientSecretPost)
        );
        // Symmetric where both are listed (the shell asks once per token request).
        let post = Registration {
            auth_method: AuthMethod::ClientSecretPost,
            ..first.clone()
        };
        assert_eq!(
            other_secret_method(&post, &both, false, "invalid_client"),
            Some(AuthMethod::ClientSecretBasic)
        );
        // Not when the host chose the method, for another refusal, for a method the
        // server does not list, nor for a dynamic registration or a public client.
        assert_eq!(
            other_secret_method(&first, &both, true, "invalid_client"),
            None
        );
        assert_eq!(
            other_secret_method(&first, &both, false, "invalid_grant"),
            None
        );
        assert_eq!(
            other_secret_method(
                &first,
                &meta(&["client_secret_basic"]),
                false,
                "invalid_client"
            ),
            None
        );
        assert_eq!(
            other_secret_method(&first, &ServerMetadata::default(), false, "invalid_client"),
            None
        );
        let dynamic = Registration {
            source: RegistrationSource::Dynamic,
            ..first.clone()
        };
        assert_eq!(
            other_secret_method(&dynamic, &both, false, "invalid_client"),
            None
        );
        let public = Registration {
            client_secret: None,
            ..first
        };
        assert_eq!(
            other_secret_method(&public, &both, false, "invalid_client"),
            None
        );
    }
}
