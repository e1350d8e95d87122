//! `exchange` credentials: each caller's token exchanged at its identity provider for
//! an ID-JAG (RFC 8693), then at the server's authorization server for the caller's own
//! access token (RFC 7523); what it got kept per caller ([`Exchanges`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::auth::{Flow, LoginMode, MemoryStore, OAuthConfig};
use capable::config::OAuthEntry;
use capable::internal::auth::resource::Caller;

use super::bearer;

/// A caller's access token, as it reached the listener. Never shown: its `Debug` says
/// nothing of it.
pub(super) struct Inbound(String);

impl Inbound {
    /// The token itself, for the exchange's request only.
    pub(super) fn secret(&self) -> &str {
        &self.0
    }
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
    pub(super) fn of(&self, caller: &Caller) -> (Option<Arc<Inbound>>, Arc<MemoryStore>) {
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

/// The client of an exchange: the entry's `oauth` client (id, secret, scopes, issuer)
/// at the server's authorization server, never asking anyone anything.
pub(super) fn exchange_config(
    store: Arc<MemoryStore>,
    flow: Flow,
    entry: Option<&OAuthEntry>,
) -> OAuthConfig {
    let mut config = OAuthConfig::new(store);
    config.flow = flow;
    config.mode = LoginMode::Never;
    config.timeout = EXCHANGE_TIMEOUT;
    super::from_entry(&mut config, entry);
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::credentials::test_caller as caller;

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
