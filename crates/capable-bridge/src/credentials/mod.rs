//! Whose credentials go to the HTTP servers of a config (an entry's `credentials`,
//! [`Credentials`]): the gateway's own, or each caller's. Never the caller's own
//! token: the listener takes it for who is calling, and it goes upstream only as the
//! subject of an exchange at the caller's identity provider.
//!
//! - `service` (the default): the bridge's [`OAuthProvider`]
//!   ([`BridgeConfig::oauth`](crate::BridgeConfig::oauth)), the same credentials for
//!   every caller.
//! - `exchange` (`exchange.rs`): the caller's verified access token is exchanged at its
//!   identity provider for an ID-JAG (RFC 8693), then at the server's authorization
//!   server for an access token of the caller's (RFC 7523) — the client library's
//!   enterprise-managed flow. What it gets is kept per caller ([`Exchanges`], a
//!   bounded map), for every server of the caller, until it expires; a token the
//!   server refuses is asked for again once, never in a loop.
//! - `user` (`user.rs`): the server's own OAuth login (authorization code and PKCE),
//!   done by the gateway on the caller's behalf ([`Users`]): the caller is sent the
//!   authorization URL (a URL-mode elicitation, or its `-32042`: `ask.rs`), the redirect comes back to
//!   the gateway's `/oauth/callback`, and the tokens are kept per caller, refreshed
//!   when due, the caller asked again once when the server refuses them.
//!
//! An exchange's subject is the latest token the caller presented: each connection to
//! a server (a restart included) takes it, and a refused token is asked for again with
//! the one the connection began with.

use std::sync::Arc;

use capable::auth::{Flow, OAuthClient};
use capable::config::{ConfigFile, Credentials, ServerTarget};
use capable::host::OAuthProvider;
use capable::transport::http::Url;

mod ask;
mod exchange;
mod kept;
mod user;

pub use ask::UserServers;
pub use exchange::Exchanges;
pub use kept::Kept;
pub use user::{Users, AUTHORIZATION_META, LOGIN_TTL};

/// The token of an `Authorization: Bearer …` header.
fn bearer(value: Option<&str>) -> Option<&str> {
    let (scheme, token) = value?.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Whether a server of `config` is reached by exchange: then each caller's token is
/// kept with its session.
pub fn any_exchange(config: &ConfigFile) -> bool {
    config
        .policies
        .values()
        .any(|p| matches!(p.credentials, Some(Credentials::Exchange { .. })))
}

/// Each HTTP server of `config`: its URL and its name.
fn http_servers(config: &ConfigFile) -> impl Iterator<Item = (Url, &str)> {
    config.servers.iter().filter_map(|entry| {
        let Ok(ServerTarget::Http { url, .. }) = &entry.target else {
            return None;
        };
        Some((Url::parse(url).ok()?, entry.name.as_str()))
    })
}

/// The credentials of each HTTP server of `config`, by URL.
fn modes(config: &ConfigFile) -> Vec<(Url, Credentials)> {
    http_servers(config)
        .filter_map(|(url, name)| Some((url, config.policies.get(name)?.credentials.clone()?)))
        .collect()
}

/// `provider`, each client it gives counting its refreshes in `metrics` under the name
/// of the server of `config` at its URL (`None` as it is).
pub fn counted(
    provider: Option<OAuthProvider>,
    config: &ConfigFile,
    metrics: Arc<crate::metrics::Metrics>,
) -> Option<OAuthProvider> {
    let provider = provider?;
    let names: Vec<(Url, String)> = http_servers(config)
        .map(|(url, name)| (url, name.to_owned()))
        .collect();
    Some(OAuthProvider::new(move |url, entry| {
        let client = provider.client(url, entry)?;
        let name = names.iter().find(|(u, _)| u == url).map(|(_, n)| n.clone());
        if let (Some(client), Some(name)) = (&client, name) {
            // A client given again (the gateway's own, shared) has its observer already.
            let metrics = metrics.clone();
            client.observe(move |event| {
                let ok = event == capable::auth::TokenEvent::Refreshed;
                metrics.token_refresh(&name, ok);
            });
        }
        Ok(client)
    }))
}

/// The OAuth clients of the servers of `config` for the caller of the task at hand:
/// `service` ones from `service`, `exchange` and `user` ones of the caller's own.
/// `None` when every server is `service` (then `service` as it is).
pub fn provider(
    config: &ConfigFile,
    service: Option<OAuthProvider>,
    exchanges: &Arc<Exchanges>,
    users: &Arc<Users>,
) -> Option<OAuthProvider> {
    let modes = modes(config);
    if !modes
        .iter()
        .any(|(_, c)| matches!(c, Credentials::Exchange { .. } | Credentials::User))
    {
        return service;
    }
    let caller = crate::audit::caller();
    let (exchanges, users) = (exchanges.clone(), users.clone());
    Some(OAuthProvider::new(move |url, entry| {
        let mode = modes.iter().find(|(u, _)| u == url).map(|(_, c)| c);
        let per_caller = |what: &str| {
            caller.as_ref().ok_or_else(|| {
                capable::Error::InvalidOptions(format!(
                    "this server's credentials are {what} per caller: the gateway needs \
                     callers who log in (--auth-issuer)"
                ))
            })
        };
        match mode {
            Some(Credentials::Exchange { idp }) => {
                let caller = per_caller("exchanged")?;
                let (Some(inbound), store) = exchanges.of(caller) else {
                    return Err(capable::Error::InvalidOptions(
                        "this server's credentials are exchanged per caller, and the \
                         caller's token is no longer kept: send the request again"
                            .into(),
                    ));
                };
                let flow = Flow::Enterprise {
                    idp_token_endpoint: idp.token_endpoint.clone(),
                    idp_client_id: idp.client_id.clone(),
                    idp_client_secret: idp.client_secret.clone(),
                    id_token: inbound.secret().to_owned(),
                    access_token: true,
                };
                let config = exchange::exchange_config(store, flow, entry);
                let client = OAuthClient::new(url.clone(), config)
                    .map_err(|e| capable::Error::InvalidOptions(e.to_string()))?;
                Ok(Some(Arc::new(client)))
            }
            Some(Credentials::User) => {
                let caller = per_caller("the caller's own login,")?;
                let client = users
                    .client(caller, url, entry)
                    .map_err(|e| capable::Error::InvalidOptions(e.to_string()))?;
                Ok(Some(Arc::new(client)))
            }
            _ => match &service {
                Some(service) => service.client(url, entry),
                None => Ok(None),
            },
        }
    }))
}

/// What a server's `oauth` entry in the config says of the gateway's client there (its
/// id and secret, scopes, issuer, whether `resource` is sent), put into `config`.
fn from_entry(
    config: &mut capable::auth::OAuthConfig,
    entry: Option<&capable::config::OAuthEntry>,
) {
    if let Some(entry) = entry {
        config.client.client_id = entry.client_id.clone();
        config.client.client_secret = entry.client_secret.clone();
        config.scopes = entry.scopes.clone();
        config.issuer = entry.issuer.clone();
        if let Some(send) = entry.send_resource {
            config.send_resource = send;
        }
    }
}

/// A caller of the identity provider `https://idp` whose subject is `sub`, for tests.
#[cfg(test)]
pub(crate) fn test_caller(sub: &str) -> capable::internal::auth::resource::Caller {
    capable::internal::auth::resource::Caller {
        issuer: "https://idp".into(),
        subject: sub.into(),
        client_id: None,
        scopes: Vec::new(),
        groups: Vec::new(),
        expires_at: 0,
    }
}
