//! Whose credentials a gateway (`capable bridge --listen --auth-issuer --config`) sends
//! to an HTTP server of its config: an entry's `credentials`.
//!
//! ```json
//! {"mcpServers": {
//!   "jira": {"url": "https://jira.example/mcp",
//!            "oauth": {"grant": "client_credentials", "clientId": "gw", "clientSecret": "${JIRA_SECRET}"},
//!            "credentials": {"mode": "service"}},
//!   "wiki": {"url": "https://wiki.example/mcp",
//!            "oauth": {"clientId": "gw-wiki", "clientSecret": "${WIKI_SECRET}"},
//!            "credentials": {"mode": "exchange",
//!                            "idp": {"tokenEndpoint": "https://idp.example/token",
//!                                    "clientId": "gateway", "clientSecret": "${IDP_SECRET}"}}},
//!   "drive": {"url": "https://drive.example/mcp",
//!             "oauth": {"clientId": "gw-drive", "clientSecret": "${DRIVE_SECRET}"},
//!             "credentials": {"mode": "user"}}}}
//! ```
//!
//! - `service` (the default for an HTTP server): the gateway's own credentials — its
//!   token store, or the entry's `oauth` grant (client credentials) — the same for
//!   every caller.
//! - `exchange`: per caller. The caller's verified access token is exchanged at the
//!   caller's identity provider (`idp`, RFC 8693) for an identity assertion grant
//!   (ID-JAG), which the server's authorization server exchanges for the caller's own
//!   access token (RFC 7523, as the entry's `oauth` client).
//! - `user`: per caller. The server's own OAuth login (authorization code and PKCE, as
//!   the entry's `oauth` client, or one registered dynamically), done by the gateway on
//!   the caller's behalf: the caller is sent the authorization URL, the redirect
//!   returns to the gateway (`/oauth/callback`), and the tokens are kept per caller.
//!
//! Either way, the caller's own token never leaves the gateway for a server.

use serde::Deserialize;

/// Whose credentials go to one server (an entry's `credentials`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(tag = "mode", rename_all = "lowercase", deny_unknown_fields)]
#[non_exhaustive]
pub enum Credentials {
    /// The gateway's own (its store, the entry's `oauth` grant), for every caller.
    #[default]
    Service,
    /// Each caller's, by exchanging the caller's token at its identity provider.
    Exchange {
        /// The caller's identity provider, where the gateway exchanges the token.
        idp: ExchangeIdp,
    },
    /// Each caller's, by the server's own OAuth login (authorization code and PKCE,
    /// as the entry's `oauth` client), done by the gateway on the caller's behalf: the
    /// caller is sent the authorization URL, the redirect comes back to the gateway.
    User,
}

/// The identity provider a caller's token is exchanged at, and the gateway's client
/// there. Its secret never shows in a `Debug` output.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExchangeIdp {
    /// Its token endpoint.
    pub token_endpoint: String,
    /// The gateway's client id there.
    pub client_id: String,
    /// Its secret (`${VAR}` expanded).
    pub client_secret: Option<String>,
}

impl std::fmt::Debug for ExchangeIdp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExchangeIdp")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "***"))
            .finish()
    }
}

impl Credentials {
    /// The same, `${VAR}` expanded by `expand` in every string.
    pub(super) fn expand<E>(
        self,
        expand: &dyn Fn(&str) -> Result<String, E>,
    ) -> Result<Credentials, E> {
        Ok(match self {
            Credentials::Service => Credentials::Service,
            Credentials::User => Credentials::User,
            Credentials::Exchange { idp } => Credentials::Exchange {
                idp: ExchangeIdp {
                    token_endpoint: expand(&idp.token_endpoint)?,
                    client_id: expand(&idp.client_id)?,
                    client_secret: idp.client_secret.as_deref().map(expand).transpose()?,
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ConfigFile, ServerTarget};
    use super::*;

    #[test]
    fn an_entrys_credentials_are_read_expanded_and_refused_where_they_cannot_apply() {
        let text = r#"{"mcpServers": {
            "svc": {"url": "http://127.0.0.1:1/mcp", "credentials": {"mode": "service"}},
            "plain": {"url": "http://127.0.0.1:2/mcp"},
            "usr": {"url": "http://127.0.0.1:6/mcp", "credentials": {"mode": "user"}},
            "ex": {"url": "http://127.0.0.1:3/mcp", "credentials": {"mode": "exchange",
                   "idp": {"tokenEndpoint": "http://idp/token", "clientId": "gw", "clientSecret": "${S}"}}},
            "typo": {"url": "http://127.0.0.1:4/mcp", "credentials": {"mode": "sevice"}},
            "noidp": {"url": "http://127.0.0.1:5/mcp", "credentials": {"mode": "exchange"}},
            "stdio": {"command": "s", "credentials": {"mode": "service"}}}}"#;
        let lookup = |v: &str| (v == "S").then(|| "idp-secret".to_owned());
        let file = ConfigFile::from_text(text, "f.json", &lookup).unwrap();
        let of = |name: &str| file.policies.get(name).and_then(|p| p.credentials.clone());
        assert_eq!(of("svc"), Some(Credentials::Service));
        assert_eq!(of("plain"), None);
        assert_eq!(of("usr"), Some(Credentials::User));
        let Some(Credentials::Exchange { idp }) = of("ex") else {
            panic!("{:?}", of("ex"));
        };
        assert_eq!(idp.client_secret.as_deref(), Some("idp-secret"));
        assert!(!format!("{idp:?}").contains("idp-secret"));
        for broken in ["typo", "noidp", "stdio"] {
            let entry = file.servers.iter().find(|e| e.name == broken).unwrap();
            assert!(entry.target.is_err(), "{broken}: {:?}", entry.target);
        }
        let ex = file.servers.iter().find(|e| e.name == "ex").unwrap();
        assert!(matches!(ex.target, Ok(ServerTarget::Http { .. })));
    }
}
