//! What the inspector shows, and how it connects ([`UiOptions`]).

use std::time::Duration;

use capable::config::ConfigEntry;
use capable::host::{OAuthProvider, PinStore};
use capable::internal::secrets::Secrets;
use capable::ClientOptions;

/// What the inspector shows, and how it connects.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct UiOptions {
    /// The servers, in the order the page lists them. A config entry that cannot be
    /// used is shown refused, with its reason.
    pub servers: Vec<ConfigEntry>,
    /// The client options of every connection (the page adds its message-log tap and
    /// answers requests for input itself).
    pub client: ClientOptions,
    /// The most a connection attempt may take; it also bounds how long the audit
    /// waits for a listen stream's acknowledgement (at most 5 s). Default 30 s.
    pub timeout: Duration,
    /// How HTTP servers are authorized (e.g. with the tokens `capable auth login`
    /// stored).
    pub oauth: Option<OAuthProvider>,
    /// Secrets cut out of every answer and event the page gets (`***` in their place):
    /// a server that echoes a header value back shows none of it.
    pub secrets: Secrets,
    /// The port on 127.0.0.1 (0, the default: any free one).
    pub port: u16,
    /// The servers' tools and prompts judged against pinned definitions as their
    /// lists arrive: a changed one is withheld (not offered, its call refused) and
    /// shown with the difference and an accept button. None by default.
    pub pins: Option<PinStore>,
}

impl UiOptions {
    /// Options for these servers, every other setting at its default.
    pub fn new(servers: Vec<ConfigEntry>) -> UiOptions {
        UiOptions {
            servers,
            client: ClientOptions::default(),
            timeout: Duration::from_secs(30),
            oauth: None,
            secrets: Secrets::default(),
            port: 0,
            pins: None,
        }
    }
}
