//! A client registration the authorization server no longer knows.
//!
//! A dynamic registration lives only as long as the authorization server keeps it:
//! one that restarts with an in-memory client store (the SDKs' example servers,
//! FastMCP's in-memory provider, oidc-provider's default adapter), or expires its
//! clients, forgets it, and every later use of the kept client id fails. The signs:
//!
//! | where | answer | forgotten? |
//! |---|---|---|
//! | token endpoint (a code, a refresh) | `invalid_client` or `unauthorized_client` | yes |
//! | authorization endpoint, answering itself | HTTP 400 (the Python and TypeScript SDKs: JSON `invalid_request` "Client ID … not found", `invalid_client`; oidc-provider: an HTML page) | yes |
//! | authorization endpoint, answering itself | 401 with `invalid_client` | yes |
//! | the redirect back | `error=invalid_client` or `unauthorized_client` | yes |
//! | the redirect back | any other error (`access_denied`, `invalid_scope`, …) | no: the user's or the server's decision |
//!
//! [`renew`] says whether to drop the registration and register again: only a
//! dynamic registration kept from earlier (a pre-registered client or a metadata
//! document cannot be made again, and a registration just made is not the kept one
//! that was forgotten), so a client registers again at most once per flow, and a
//! server that refuses a fresh registration too is shown with its own words.

use super::client::{Registration, RegistrationSource};

/// How the authorization server refused a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientRefusal<'a> {
    /// The token endpoint's OAuth `error`.
    Token(&'a str),
    /// The authorization endpoint answered the request itself instead of going on
    /// (no redirect): its status, and the OAuth `error` of its body if it has one.
    Authorize {
        /// The HTTP status.
        status: u16,
        /// The body's `error`.
        error: Option<&'a str>,
    },
    /// The redirect back carried this `error`.
    Callback(&'a str),
}

impl ClientRefusal<'_> {
    /// Whether the refusal says the server does not know (or no longer accepts) the
    /// client (see the module documentation).
    pub fn names_the_client(&self) -> bool {
        let client_error = |e: &str| matches!(e, "invalid_client" | "unauthorized_client");
        match *self {
            ClientRefusal::Token(e) | ClientRefusal::Callback(e) => client_error(e),
            ClientRefusal::Authorize { status: 400, .. } => true,
            ClientRefusal::Authorize { error, .. } => error.is_some_and(client_error),
        }
    }
}

/// Whether to forget `registration` and register again after `refusal`: a dynamic
/// registration kept from earlier (`fresh`: made in this very flow) that the server
/// refuses as a client.
pub fn renew(registration: &Registration, fresh: bool, refusal: ClientRefusal<'_>) -> bool {
    registration.source == RegistrationSource::Dynamic && !fresh && refusal.names_the_client()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::AuthMethod;

    fn registration(source: RegistrationSource) -> Registration {
        Registration {
            issuer: "https://as.test".into(),
            client_id: "c".into(),
            client_secret: None,
            auth_method: AuthMethod::None,
            redirect_uris: vec![],
            grant_types: vec![],
            scope: None,
            source,
        }
    }

    #[test]
    fn a_kept_dynamic_registration_the_server_refuses_is_made_again() {
        let kept = registration(RegistrationSource::Dynamic);
        for refusal in [
            ClientRefusal::Token("invalid_client"),
            ClientRefusal::Token("unauthorized_client"),
            ClientRefusal::Authorize {
                status: 400,
                error: Some("invalid_request"),
            },
            ClientRefusal::Authorize {
                status: 400,
                error: None,
            },
            ClientRefusal::Authorize {
                status: 401,
                error: Some("invalid_client"),
            },
            ClientRefusal::Callback("unauthorized_client"),
        ] {
            assert!(renew(&kept, false, refusal), "{refusal:?}");
            // Once: a registration just made is not made again.
            assert!(!renew(&kept, true, refusal), "{refusal:?}");
        }
    }

    #[test]
    fn other_refusals_and_other_clients_stand() {
        let kept = registration(RegistrationSource::Dynamic);
        for refusal in [
            ClientRefusal::Token("invalid_grant"),
            ClientRefusal::Token("invalid_scope"),
            ClientRefusal::Callback("access_denied"),
            ClientRefusal::Callback("invalid_scope"),
            ClientRefusal::Authorize {
                status: 401,
                error: None,
            },
            ClientRefusal::Authorize {
                status: 500,
                error: Some("server_error"),
            },
        ] {
            assert!(!renew(&kept, false, refusal), "{refusal:?}");
        }
        for source in [
            RegistrationSource::Static,
            RegistrationSource::MetadataDocument,
        ] {
            assert!(!renew(
                &registration(source),
                false,
                ClientRefusal::Token("invalid_client")
            ));
        }
    }
}
