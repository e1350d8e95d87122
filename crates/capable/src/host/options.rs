//! How a host runs its servers ([`HostOptions`]) and authorizes its HTTP ones
//! ([`OAuthProvider`]).

use std::sync::Arc;
use std::time::Duration;

use capable_core::internal::restart::RestartPolicy;

use crate::auth::OAuthClient;
use crate::config::OAuthEntry;
use crate::error::Error;
use crate::options::ClientOptions;
use crate::transport::http::{HttpConfig, Url};

use super::PinStore;

#[cfg(doc)]
use super::Host;

/// How a host runs its servers.
#[derive(Clone, Debug)]
pub struct HostOptions {
    /// The client options of every server (see [`Host::add_with`] for one server's
    /// own). Its request timeout also bounds each handshake.
    pub client: ClientOptions,
    /// When to restart a server that went down (default: 5 times in a row, from
    /// 500 ms doubling to 30 s, reset after a minute up). [`RestartPolicy::never`] for
    /// a one-shot check.
    pub restart: RestartPolicy,
    /// The most one connection attempt (spawn or HTTP connect, and the handshake) may
    /// take. Default: the client's probe and request timeouts together (the stages of
    /// the handshake), and a second. Keep the probe timeout well below it, or a legacy
    /// server that ignores the probe has no time left to answer `initialize`.
    pub connect_timeout: Option<Duration>,
    /// The most [`Host::shutdown`] waits for every server to be shut down, after which
    /// what is left is killed. Default 10 s.
    pub shutdown_timeout: Duration,
    /// How many events an observer may fall behind before it loses the oldest.
    /// Default 1024.
    pub event_capacity: usize,
    /// Drives the restart delays' jitter (each server's from this and its name).
    /// Default: from the time the options were made, so hosts started together do
    /// not retry together; fix it to replay a run exactly.
    pub seed: u64,
    /// How HTTP servers are authorized (default: not at all — only the headers of
    /// their entries). Not asked for a server whose headers carry an `Authorization`
    /// of their own.
    pub oauth: Option<OAuthProvider>,
    /// Pinned definitions: each server's tools and prompts judged against them when
    /// their list arrives (see [`PinStore`]). Default: none, nothing judged.
    pub pins: Option<PinStore>,
}

/// The OAuth client of each HTTP server of a host: called with the server's URL and
/// its config entry's `oauth` object at every connection (a restart included), it
/// answers the client to authorize with, or `None` for none. A host that shares one
/// credential store with `capable auth login` reaches the servers the user logged in
/// to; a host without a terminal gives its clients a mode that never prompts.
///
/// ```
/// use std::sync::Arc;
/// use capable::auth::{LoginMode, MemoryStore, OAuthClient, OAuthConfig};
/// use capable::host::{HostOptions, OAuthProvider};
///
/// let store = Arc::new(MemoryStore::new());
/// let oauth = OAuthProvider::new(move |url, _entry| {
///     let mut config = OAuthConfig::new(store.clone());
///     config.mode = LoginMode::Never; // stored and refreshed tokens only
///     Ok(Some(Arc::new(OAuthClient::new(url.clone(), config)?)))
/// });
/// let options = HostOptions { oauth: Some(oauth), ..HostOptions::default() };
/// # drop(options);
/// ```
#[derive(Clone)]
pub struct OAuthProvider(Arc<OAuthFn>);

type OAuthFn =
    dyn Fn(&Url, Option<&OAuthEntry>) -> Result<Option<Arc<OAuthClient>>, Error> + Send + Sync;

impl OAuthProvider {
    /// A provider from a function of the server's URL and its entry's `oauth` object.
    pub fn new(
        f: impl Fn(&Url, Option<&OAuthEntry>) -> Result<Option<Arc<OAuthClient>>, Error>
            + Send
            + Sync
            + 'static,
    ) -> OAuthProvider {
        OAuthProvider(Arc::new(f))
    }

    /// The client for one server.
    pub fn client(
        &self,
        url: &Url,
        entry: Option<&OAuthEntry>,
    ) -> Result<Option<Arc<OAuthClient>>, Error> {
        (self.0)(url, entry)
    }

    /// Puts the OAuth client of `config`'s server on it — unless its headers carry an
    /// `Authorization` of their own: a host that passes one manages it itself.
    pub fn authorize(
        &self,
        config: &mut HttpConfig,
        entry: Option<&OAuthEntry>,
    ) -> Result<(), Error> {
        if !config.has_own_authorization() {
            config.oauth = self.client(&config.url, entry)?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for OAuthProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OAuthProvider(..)")
    }
}

impl Default for HostOptions {
    fn default() -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        HostOptions {
            client: ClientOptions::default(),
            restart: RestartPolicy::default(),
            connect_timeout: None,
            shutdown_timeout: Duration::from_secs(10),
            event_capacity: 1024,
            seed,
            oauth: None,
            pins: None,
        }
    }
}
