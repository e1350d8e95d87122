//! What every handler shares: the servers, the event bus, and the things in flight
//! (tool calls, watches, MCP Apps views, requests for input).
//!
//! One [`AppState`] per run, behind an `Arc`; a handler takes it with axum's extractor,
//! `State(app): State<Arc<AppState>>`. A new area of the page adds its part here and a
//! file under `handlers/`.

use std::sync::Arc;
use std::time::Duration;

use capable::internal::secrets::Secrets;

use crate::asks::Asks;
use crate::bus::{Bus, Scrubber};
use crate::calls::Calls;
use crate::history::History;
use crate::logins::Logins;
use crate::options::UiOptions;
use crate::servers::Servers;
use crate::views::Views;
use crate::watches::Watches;

/// How many events the bus keeps for a page that reconnects or reloads.
const RING: usize = 4096;
/// The most bytes of event data it keeps (the oldest go first).
const RING_BYTES: usize = 32 << 20;

/// The state of one run of the inspector.
pub struct AppState {
    /// The servers given at start, in one host.
    pub(crate) servers: Arc<Servers>,
    /// The event stream of the page.
    pub(crate) bus: Bus,
    /// Open watches.
    pub(crate) watches: Arc<Watches>,
    /// Tool calls in flight.
    pub(crate) calls: Calls,
    /// MCP Apps views, ready to be framed.
    pub(crate) views: Views,
    /// What servers ask of the person (forms, sampling), waiting for the page.
    pub(crate) asks: Asks,
    /// What is cut out of every answer and event (a reload may add to it).
    pub(crate) secrets: Scrubber,
    /// The run's connection bound.
    pub(crate) timeout: Duration,
    /// The port the inspector listens on (its OAuth redirect names it).
    pub(crate) port: u16,
    /// OAuth logins started from the page, waiting for their redirect.
    pub(crate) logins: Logins,
    /// The commands that reached a server, with their timing.
    pub(crate) history: History,
    /// The last audit of each server (for the session's report).
    pub(crate) audits: std::sync::Mutex<std::collections::HashMap<String, serde_json::Value>>,
}

impl AppState {
    /// The state of a run, its servers connecting.
    pub(crate) fn start(options: UiOptions, secrets: Secrets, port: u16) -> Arc<AppState> {
        let secrets = Scrubber::new(secrets);
        let bus = Bus::new(RING, RING_BYTES, secrets.clone());
        let asks = Asks::new(bus.clone());
        let servers = Servers::start(&options, bus.clone(), asks.clone());
        Arc::new(AppState {
            servers,
            watches: Arc::new(Watches::new(bus.clone())),
            history: History::new(bus.clone()),
            calls: Calls::new(bus.clone()),
            views: Views::default(),
            asks,
            bus,
            secrets,
            timeout: options.timeout,
            port,
            logins: Logins::default(),
            audits: Default::default(),
        })
    }

    /// Disconnects every server.
    pub(crate) async fn shutdown(&self) {
        self.servers.shutdown().await;
    }
}
