//! The two metadata documents discovery reads, and the checks on them:
//!
//! - **protected resource metadata** (RFC 9728), served by the MCP server: which
//!   authorization servers issue its tokens, which scopes it knows; its `resource` must
//!   name the MCP server ([`resource_allowed`]);
//! - **authorization server metadata** (RFC 8414, or OpenID Connect Discovery): the
//!   endpoints and what the server supports.
//!
//! Identifiers (`resource`, `issuer`) are kept as the exact strings the server sent:
//! they are compared by simple string equality, never after URL normalisation
//! (`http://h:1` and `http://h:1/` are different issuers).

use serde::{Deserialize, Serialize};
use url::Url;

/// RFC 9728 protected resource metadata (the fields a client uses).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceMetadata {
    /// The protected resource's identifier.
    pub resource: String,
    /// The issuers of the authorization servers it trusts.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes it knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// DPoP algorithms it accepts (RFC 9449 §5.1 via RFC 9728).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Whether it accepts DPoP-bound tokens only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_bound_access_tokens_required: Option<bool>,
}

/// RFC 8414 / OpenID Connect authorization server metadata (the fields a client uses).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerMetadata {
    /// The issuer identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// Where the user authorizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// Where codes and grants become tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// Dynamic client registration (RFC 7591).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// Token revocation (RFC 7009).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// Token introspection (RFC 7662): where a protected resource asks what an opaque
    /// token means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introspection_endpoint: Option<String>,
    /// The device authorization grant (RFC 8628).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_authorization_endpoint: Option<String>,
    /// The scopes it issues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// The response types it supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_types_supported: Option<Vec<String>>,
    /// The grant types it supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    /// PKCE methods; absent means PKCE is not known to be supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// How clients authenticate at the token endpoint (absent: `client_secret_basic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Signing algorithms for `private_key_jwt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_signing_alg_values_supported: Option<Vec<String>>,
    /// Client ID metadata documents (a URL as `client_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_metadata_document_supported: Option<bool>,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// DPoP proof algorithms (RFC 9449 §5.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Where the keys that sign its tokens are published (a JWK Set): what a
    /// protected resource verifies JWT access tokens with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
}

fn lists(list: &Option<Vec<String>>, item: &str) -> bool {
    list.as_ref().is_some_and(|l| l.iter().any(|i| i == item))
}

impl ServerMetadata {
    /// Whether PKCE with S256 is advertised (MCP: a client must refuse otherwise).
    pub fn supports_s256(&self) -> bool {
        lists(&self.code_challenge_methods_supported, "S256")
    }

    /// Whether `scope` is in `scopes_supported`.
    pub fn lists_scope(&self, scope: &str) -> bool {
        lists(&self.scopes_supported, scope)
    }

    /// Whether the grant type is advertised (absent list: `authorization_code` and
    /// `implicit`, RFC 8414 §2).
    pub fn supports_grant(&self, grant: &str) -> bool {
        match &self.grant_types_supported {
            Some(list) => list.iter().any(|g| g == grant),
            None => grant == "authorization_code",
        }
    }

    /// Whether the token endpoint auth method is advertised (absent list:
    /// `client_secret_basic`, RFC 8414 §2).
    pub fn supports_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(list) => list.iter().any(|m| m == method),
            None => method == "client_secret_basic",
        }
    }

    /// Whether the server issues DPoP-bound tokens with ES256 proofs.
    pub fn supports_dpop_es256(&self) -> bool {
        lists(&self.dpop_signing_alg_values_supported, "ES256")
    }

    /// Whether client ID metadata documents are supported.
    pub fn supports_cimd(&self) -> bool {
        self.client_id_metadata_document_supported == Some(true)
    }

    /// Whether the authorization response must carry `iss` (RFC 9207).
    pub fn iss_required(&self) -> bool {
        self.authorization_response_iss_parameter_supported == Some(true)
    }
}

/// Whether a PRM `resource` may stand for the MCP server at `server`: the same origin,
/// and a path that is a prefix of the server's path at a segment boundary (what the
/// reference SDK allows; a `resource` of `https://evil.example/mcp` for a server at
/// `https://mcp.example/mcp` is refused).
pub fn resource_allowed(server: &Url, resource: &str) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.fragment().is_some()
        || resource.scheme() != server.scheme()
        || resource.host_str() != server.host_str()
        || resource.port_or_known_default() != server.port_or_known_default()
    {
        return false;
    }
    let prefix = resource.path().trim_end_matches('/');
    let path = server.path();
    path == prefix || path.starts_with(&format!("{prefix}/")) || prefix.is_empty()
}

/// The canonical URI of the MCP server at `server` (RFC 8707 `resource` when no PRM
/// names one): no fragment, no query, and no trailing slash on an empty path.
pub fn canonical_resource(server: &Url) -> String {
    let mut u = server.clone();
    u.set_fragment(None);
    u.set_query(None);
    let s = u.to_string();
    if u.path() == "/" {
        s.trim_end_matches('/').to_owned()
    } else {
        s
    }
}

/// Whether an authorization server endpoint may be used: HTTPS, or plain HTTP to a
/// loopback host (local development and tests; OAuth 2.1 §1.5).
pub fn secure_enough(url: &Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

/// The origin of a URL as text (`https://host[:port]`).
pub fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_must_be_the_server_or_a_path_prefix_of_it() {
        let server = Url::parse("http://localhost:3000/tenant/mcp").unwrap();
        for ok in [
            "http://localhost:3000/tenant/mcp",
            "http://localhost:3000/tenant",
            "http://localhost:3000/",
            "http://localhost:3000",
        ] {
            assert!(resource_allowed(&server, ok), "{ok}");
        }
        for bad in [
            "https://evil.example.com/mcp",
            "http://localhost:3001/tenant/mcp",
            "https://localhost:3000/tenant/mcp",
            "http://localhost:3000/ten",
            "http://localhost:3000/other",
            "http://localhost:3000/tenant/mcp/deeper",
            "not a url",
        ] {
            assert!(!resource_allowed(&server, bad), "{bad}");
        }
    }

    #[test]
    fn canonical_resources_have_no_trailing_slash_at_the_root() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert_eq!(canonical_resource(&u("https://a.test/")), "https://a.test");
        assert_eq!(
            canonical_resource(&u("https://a.test/mcp#x")),
            "https://a.test/mcp"
        );
        assert_eq!(
            canonical_resource(&u("https://a.test/mcp/")),
            "https://a.test/mcp/"
        );
    }

    #[test]
    fn plain_http_only_to_loopback() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(secure_enough(&u("https://as.example/token")));
        assert!(secure_enough(&u("http://localhost:3000/token")));
        assert!(secure_enough(&u("http://127.0.0.1:1/token")));
        assert!(secure_enough(&u("http://[::1]:1/token")));
        assert!(!secure_enough(&u("http://as.example/token")));
        assert!(!secure_enough(&u("ftp://localhost/token")));
    }

    #[test]
    fn absent_lists_mean_the_rfc_defaults() {
        let m = ServerMetadata::default();
        assert!(m.supports_auth_method("client_secret_basic"));
        assert!(!m.supports_auth_method("none"));
        assert!(m.supports_grant("authorization_code"));
        assert!(!m.supports_grant("refresh_token"));
        assert!(!m.supports_s256());
    }
}
