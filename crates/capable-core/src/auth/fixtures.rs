//! What the auth modules' unit tests build alike: a registered client, an
//! authorization server's metadata, a purpose.

use super::client::{AuthMethod, Purpose, Registration, RegistrationSource};
use super::metadata::ServerMetadata;

/// A statically registered client with a secret, authenticating by `method`.
pub fn client(method: AuthMethod) -> Registration {
    Registration {
        issuer: "https://as.test".into(),
        client_id: "id:1".into(),
        client_secret: Some("s/2".into()),
        auth_method: method,
        redirect_uris: vec![],
        grant_types: vec![],
        scope: None,
        source: RegistrationSource::Static,
    }
}

/// An authorization server that registers clients and lists these token endpoint
/// auth methods.
pub fn meta(methods: &[&str]) -> ServerMetadata {
    ServerMetadata {
        token_endpoint_auth_methods_supported: Some(
            methods.iter().map(|m| m.to_string()).collect(),
        ),
        registration_endpoint: Some("https://as.test/register".into()),
        ..ServerMetadata::default()
    }
}

/// A client wanted for this redirect (none: the device grant), asking no scope.
pub fn purpose(redirect_uri: Option<&str>) -> Purpose<'_> {
    Purpose {
        redirect_uri,
        scopes: &[],
    }
}
