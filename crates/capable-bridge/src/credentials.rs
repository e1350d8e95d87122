//! Whose credentials go to the HTTP servers of a config (an entry's `credentials`,
//! [`Credentials`]): the gateway's own, or each caller's by token exchange. Never the
//! caller's own token: the listener takes it for who is calling, and it goes upstream
//! only as the subject of an exchange at the caller's identity provider.
//!
//! - `service` (the default): the bridge's [`OAuthProvider`]
//!   ([`BridgeConfig::oauth`](crate::BridgeConfig::oauth)), the same credentials for
//!   every caller.
//! - `exchange`: the caller's verified access token is exchanged at its identity
//!   provider for an ID-JAG (RFC 8693), then at the server's authorization server for
//!   an access token of the caller's (RFC 7523) — the client library's
//!   enterprise-managed flow. What it gets is kept per caller ([`Exchanges`], a
//!   bounded map), for every server of the caller, until it expires; a token the server
//!   refuses is asked for again once, never in a loop.
//!
//! An exchange's subject is the latest token the caller presented: each connection to
//! a server (a restart included) takes it, and a refused token is asked for again with
//! the one the connection began with.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::auth::{Flow, LoginMode, MemoryStore, OAuthClient, OAuthConfig};
use capable::config::{ConfigFile, Credentials, OAuthEntry, ServerTarget};
use capable::host::OAuthProvider;
use capable::internal::auth::resource::Caller;
use capable::transport::http::Url;

/// A caller's access token, as it reached the listener. Never shown: its `Debug` says
/// nothing of it.
struct Inbound(String);

/// The token of an `Authorization: Bearer …` header.
fn bearer(value: Option<&str>) -> Option<&str> {
    let (scheme, token) = value?.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

impl std::fmt::Debug for Inbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Inbound([redacted])")
    }
}

/// How long a call to an identity provider or an authorization server may take, for an
/// exchange (one that hangs fails the connection with why, after this).
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// What exchanges need and got, per caller: the caller's latest access token (the
/// subject of its next exchange) and its tokens of every server in a store of its
/// own; at most `max` callers (the one seen longest ago let go first).
pub struct Exchanges {
    max: usize,
    callers: Mutex<(u64, HashMap<String, Exchanger>)>,
}

/// One caller's part of [`Exchanges`].
struct Exchanger {
    /// When it was last seen (a count of calls).
    used: u64,
    /// Its latest token.
    token: Option<Arc<Inbound>>,
    /// Its tokens of the servers.
    store: Arc<MemoryStore>,
}

impl Exchanges {
    /// At most `max` callers' tokens kept.
    pub fn new(max: usize) -> Exchanges {
        Exchanges {
            max: max.max(1),
            callers: Mutex::new((0, HashMap::new())),
        }
    }

    /// `caller` presented `authorization` (verified): its latest token (copied only
    /// when it changed).
    pub fn present(&self, caller: &Caller, authorization: Option<&str>) {
        let Some(token) = bearer(authorization) else {
            return;
        };
        self.with(caller, |e| {
            if e.token.as_ref().is_none_or(|kept| kept.0 != token) {
                e.token = Some(Arc::new(Inbound(token.to_owned())));
            }
        });
    }

    /// `caller`'s latest token and the store of its tokens.
    fn of(&self, caller: &Caller) -> (Option<Arc<Inbound>>, Arc<MemoryStore>) {
        self.with(caller, |e| (e.token.clone(), e.store.clone()))
    }

    /// `f` of `caller`'s part (made, if need be, letting go of the caller seen longest
    /// ago when full).
    fn with<T>(&self, caller: &Caller, f: impl FnOnce(&mut Exchanger) -> T) -> T {
        let mut guard = self.callers.lock().unwrap_or_else(|e| e.into_inner());
        let (clock, callers) = &mut *guard;
        *clock += 1;
        let now = *clock;
        let key = caller.key();
        if !callers.contains_key(&key) && callers.len() >= self.max {
            let oldest = callers
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                callers.remove(&oldest);
            }
        }
        let entry = callers.entry(key).or_insert_with(|| Exchanger {
            used: now,
            token: None,
            store: Arc::new(MemoryStore::new()),
        });
        entry.used = now;
        f(entry)
    }

    /// How many callers are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.callers.lock().unwrap().1.len()
    }
}

/// Whether a server of `config` is reached by exchange: then each caller's token is
/// kept with its session.
pub fn any_exchange(config: &ConfigFile) -> bool {
    config
        .policies
        .values()
        .any(|p| matches!(p.credentials, Some(Credentials::Exchange { .. })))
}

/// The credentials of each HTTP server of `config`, by URL.
fn modes(config: &ConfigFile) -> Vec<(Url, Credentials)> {
    config
        .servers
        .iter()
        .filter_map(|entry| {
            let Ok(ServerTarget::Http { url, .. }) = &entry.target else {
                return None;
            };
            let credentials = config.policies.get(&entry.name)?.credentials.clone()?;
            Some((Url::parse(url).ok()?, credentials))
        })
        .collect()
}

/// The OAuth clients of the servers of `config` for the caller of the task at hand:
/// `service` ones from `service`, `exchange` ones of the caller's own. `None` when
/// every server is `service` (then `service` as it is).
pub fn provider(
    config: &ConfigFile,
    service: Option<OAuthProvider>,
    exchanges: &Arc<Exchanges>,
) -> Option<OAuthProvider> {
    let modes = modes(config);
    if !modes
        .iter()
        .any(|(_, c)| matches!(c, Credentials::Exchange { .. }))
    {
        return service;
    }
    let caller = crate::audit::caller();
    let exchanges = exchanges.clone();
    Some(OAuthProvider::new(move |url, entry| {
        let mode = modes.iter().find(|(u, _)| u == url).map(|(_, c)| c);
        match mode {
            Some(Credentials::Exchange { idp }) => {
                let Some(caller) = &caller else {
                    return Err(capable::Error::InvalidOptions(
                        "this server's credentials are exchanged per caller: the gateway \
                         needs callers who log in (--auth-issuer)"
                            .into(),
                    ));
                };
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
                    id_token: inbound.0.clone(),
                    access_token: true,
                };
                let client = OAuthClient::new(url.clone(), exchange_config(store, flow, entry))
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

/// The client of an exchange: the entry's `oauth` client (id, secret, scopes, issuer)
/// at the server's authorization server, never asking anyone anything.
fn exchange_config(store: Arc<MemoryStore>, flow: Flow, entry: Option<&OAuthEntry>) -> OAuthConfig {
    let mut config = OAuthConfig::new(store);
    config.flow = flow;
    config.mode = LoginMode::Never;
    config.timeout = EXCHANGE_TIMEOUT;
    if let Some(entry) = entry {
        config.client.client_id = entry.client_id.clone();
        config.client.client_secret = entry.client_secret.clone();
        config.scopes = entry.scopes.clone();
        config.issuer = entry.issuer.clone();
        if let Some(send) = entry.send_resource {
            config.send_resource = send;
        }
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(sub: &str) -> Caller {
        Caller {
            issuer: "https://idp".into(),
            subject: sub.into(),
            client_id: None,
            scopes: Vec::new(),
            groups: Vec::new(),
            expires_at: 0,
        }
    }

    #[test]
    fn each_caller_has_its_latest_token_and_a_store_and_the_one_seen_longest_ago_goes_first() {
        let exchanges = Exchanges::new(2);
        exchanges.present(&caller("alice"), Some("Bearer a1"));
        exchanges.present(&caller("alice"), Some("Bearer a2"));
        let (token, alice) = exchanges.of(&caller("alice"));
        assert_eq!(token.unwrap().0, "a2");
        exchanges.present(&caller("bob"), Some("Bearer b1"));
        let (_, bob) = exchanges.of(&caller("bob"));
        assert!(!Arc::ptr_eq(&alice, &bob));
        // alice was seen after bob: bob goes when carol comes.
        exchanges.present(&caller("alice"), Some("Bearer a2"));
        exchanges.present(&caller("alice"), None);
        exchanges.present(&caller("carol"), Some("Bearer c1"));
        assert_eq!(exchanges.len(), 2);
        let (token, again) = exchanges.of(&caller("alice"));
        assert!(Arc::ptr_eq(&alice, &again));
        assert_eq!(
            token.unwrap().0,
            "a2",
            "a request without a token keeps the last"
        );
        let (token, _) = exchanges.of(&caller("bob"));
        assert!(token.is_none(), "bob was let go");
    }

    #[test]
    fn a_callers_token_is_read_from_a_bearer_header_and_never_shown() {
        assert_eq!(bearer(Some("Bearer tok-123")), Some("tok-123"));
        assert_eq!(bearer(Some("bearer  tok-123 ")), Some("tok-123"));
        assert!(!format!("{:?}", Inbound("tok-123".into())).contains("tok-123"));
        assert_eq!(bearer(Some("Basic abc")), None);
        assert_eq!(bearer(Some("Bearer ")), None);
        assert_eq!(bearer(None), None);
    }
}
