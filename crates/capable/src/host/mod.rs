//! A host of many servers: start every server of a config, keep them alive, show their
//! state, merge their lists, route calls, shut everything down.
//!
//! A real MCP host (an editor, a desktop agent, a gateway) talks to many servers at
//! once. [`Host`] is that layer:
//!
//! - **Every server concurrently**, each in its own task, each with an explicit
//!   [`ServerState`] and the reason (starting, ready, restarting, refused, failed,
//!   stopped). A broken config entry is a server in state `Refused` next to the
//!   others, never an error that hides them.
//! - **Restarts** by the core's rule ([`capable_core::internal::restart`]): a crashed stdio
//!   server is started again, an HTTP server reconnected, after a doubling delay with
//!   jitter, a bounded number of times in a row (the count starts anew only after a
//!   healthy period); a server refused for its protocol version or a contract
//!   violation is not retried at all.
//! - **One merged view** of tools, resources and prompts under `server/name` (see
//!   [the naming rule](catalog)), each entry keeping its origin, refreshed on the
//!   server's declared `list_changed` and on reconnect.
//! - **Calls routed** to the owning server's [`Session`], through its gating table; a
//!   server that is not ready fails the call at once with a typed
//!   [`HostError::NotReady`] that carries its state.
//! - **One stream of events** ([`HostEvent`]).
//! - **A config read anew** ([`Host::reload`]): servers added are started, those
//!   removed stopped, those changed restarted; the others are not touched (their
//!   sessions and subscriptions go on). What changed is worked out first by a pure
//!   function ([`diff`]) and said as [`HostEvent::Reloaded`].
//! - **One server at a time, by hand**: [`Host::disconnect`] closes one server's
//!   session (`Stopped`), [`Host::reconnect`] starts it afresh — the others go on.
//! - **Clean shutdown**: every session closed concurrently, each server's process
//!   group with it, the whole bounded by [`HostOptions::shutdown_timeout`].
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use capable::config::ConfigFile;
//! use capable::host::{Host, HostEvent, HostOptions};
//!
//! let host = Host::from_config(&ConfigFile::load(None)?, HostOptions::default());
//! host.settled().await; // every server ready or given up
//! for server in host.servers() {
//!     println!("{}: {}", server.name, server.state);
//! }
//! for tool in host.tools() {
//!     println!("{} ({} from {})", tool.name, tool.tool.name, tool.server);
//! }
//! let mut events = host.events();
//! let answer = host.call_tool("docs/echo", None).await?;
//! println!("{answer:?}");
//! while let Ok(event) = events.try_recv() {
//!     if let HostEvent::State { server, state } = event {
//!         println!("{server} is {state}");
//!     }
//! }
//! host.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! | file | concern |
//! |---|---|
//! | `options.rs` | [`HostOptions`], [`OAuthProvider`] |
//! | `state.rs` | [`ServerState`], [`ServerError`], [`ServerStatus`] |
//! | `supervisor.rs` | one task per server: connect, read lists, follow, restart; stopped and started again by hand |
//! | `catalog.rs` | the naming rule and the merged view |
//! | `pins.rs` | [`PinStore`]: definitions judged against their pins as lists arrive |
//! | `events.rs` | [`HostEvent`] |
//! | `reload.rs` | [`diff`]: what a config read anew adds, removes and changes |
//! | `failure.rs` | what each client error means for restarting |

pub mod catalog;
mod events;
mod failure;
mod options;
mod pins;
mod reload;
mod state;
mod supervisor;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable_core::model::{CallToolResult, GetPromptResult, JsonObject};
use tokio::sync::{broadcast, watch};

use crate::config::{ConfigEntry, ConfigFile, ServerTarget};
use crate::error::Error;
use crate::options::ClientOptions;
use crate::read::ResourceRead;
use crate::session::Session;

pub use capable_core::internal::restart::{Failure, RestartPolicy};
pub use capable_core::{Pin, PinChange, PinKind, PinPolicy, Pins, PinsError};
pub use catalog::{qualify, split, HostPrompt, HostResource, HostTool, ListKind};
pub use events::HostEvent;
pub use options::{HostOptions, OAuthProvider};
pub use pins::{Pending, PinStore, PinStoreError, MAX_PINS_FILE};
pub use reload::{diff, newly_broken, Reloaded, ServerChange};
pub use state::{ServerError, ServerState, ServerStatus};

pub use supervisor::connect;
use supervisor::Server;

/// Why a host operation failed.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// A name that names no server: host names are `server/name`.
    #[error("{name:?} names no server: write SERVER/NAME (the server's name, a slash, then the tool, resource URI or prompt)")]
    NotQualified {
        /// The name given.
        name: String,
    },
    /// The host has no server by that name.
    #[error("no server named {name:?}; the host has: {}", if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
    UnknownServer {
        /// The name given.
        name: String,
        /// The names it has.
        known: Vec<String>,
    },
    /// A server by that name was added already.
    #[error("a server named {name:?} is in the host already")]
    DuplicateServer {
        /// The name.
        name: String,
    },
    /// The name breaks the [naming rule](catalog).
    #[error("{name:?} cannot name a server: {why}")]
    InvalidName {
        /// The name.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The server is not ready (nothing was sent): its state says why.
    #[error("server {server:?} is not ready: {state}")]
    NotReady {
        /// The server.
        server: String,
        /// Its state, with the reason.
        state: Box<ServerState>,
    },
    /// The host is shut down: no server starts again.
    #[error("the host is shut down")]
    ShutDown,
    /// The tool or prompt is withheld by the host's pins (its definition changed since
    /// it was pinned, or it is new and held until accepted): nothing was sent.
    #[error("{name:?} is withheld: its definition differs from the one pinned (or is new and held until accepted)")]
    Withheld {
        /// The name given.
        name: String,
    },
    /// The pinned definitions could not be read or written (accepting a change).
    #[error("pinned definitions: {error}")]
    Pins {
        /// Why.
        #[source]
        error: Arc<PinStoreError>,
    },
    /// The server's session failed the operation (refused by its gating table,
    /// answered with an error, …).
    #[error("{server}: {error}")]
    Server {
        /// The server.
        server: String,
        /// The client's error.
        error: Box<Error>,
    },
}

/// What the supervisors share with the host.
pub(crate) struct Shared {
    events: broadcast::Sender<HostEvent>,
    /// Bumped on every event: [`Host::settled`] waits on it.
    changed: watch::Sender<u64>,
    policy: RestartPolicy,
    connect_timeout: Option<Duration>,
    seed: u64,
    oauth: Option<OAuthProvider>,
    pins: Option<PinStore>,
}

impl Shared {
    fn emit(&self, event: HostEvent) {
        // No observer is fine: the host's state holds what matters.
        let _ = self.events.send(event);
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn seed_for(&self, name: &str) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        name.hash(&mut h);
        h.finish() ^ self.seed
    }
}

/// Many servers, kept alive (see the [module](self)).
///
/// A host runs on the tokio runtime it was made in: [`Host::add`] starts the server's
/// task at once. Dropping a host stops every server (their sessions are closed as
/// their tasks end); [`Host::shutdown`] does it in order and waits for it.
pub struct Host {
    shared: Arc<Shared>,
    options: HostOptions,
    servers: Mutex<Vec<Arc<Server>>>,
    /// Set by [`Host::shutdown`]: no server starts again.
    closed: AtomicBool,
    /// Held by a reload, so two apply one after the other.
    reloading: tokio::sync::Mutex<()>,
}

impl Host {
    /// An empty host.
    pub fn new(options: HostOptions) -> Host {
        let shared = Shared {
            events: broadcast::channel(options.event_capacity.max(1)).0,
            changed: watch::channel(0).0,
            policy: options.restart,
            connect_timeout: options.connect_timeout,
            seed: options.seed,
            oauth: options.oauth.clone(),
            pins: options.pins.clone(),
        };
        Host {
            shared: Arc::new(shared),
            options,
            servers: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            reloading: tokio::sync::Mutex::new(()),
        }
    }

    /// A host of every server of a config file, all started at once. An entry that
    /// cannot be used (or whose name breaks the [naming rule](catalog)) is a server in
    /// state [`ServerState::Refused`] with the reason.
    pub fn from_config(file: &ConfigFile, options: HostOptions) -> Host {
        let host = Host::new(options);
        for entry in &file.servers {
            // A name twice in one list (a hand-made file): the first one stands.
            let _ = host.add_entry(entry);
        }
        host
    }

    /// Adds one config entry: started when usable, else kept as refused with its
    /// error. Fails only for a name the host has already.
    pub fn add_entry(&self, entry: &ConfigEntry) -> Result<(), HostError> {
        match &entry.target {
            Ok(target) => match self.add(&entry.name, target.clone()) {
                Err(HostError::InvalidName { name, why }) => {
                    let error = ServerError::InvalidName { name, why };
                    let state = ServerState::Refused { error };
                    self.insert(&entry.name, state, None, entry.target.clone())
                        .map(drop)
                }
                other => other,
            },
            Err(e) => {
                let error = ServerError::Config(e.clone());
                let state = ServerState::Refused { error };
                self.insert(&entry.name, state, None, entry.target.clone())
                    .map(drop)
            }
        }
    }

    /// Adds a server and starts connecting to it, with the host's client options.
    pub fn add(&self, name: &str, target: ServerTarget) -> Result<(), HostError> {
        self.add_with(name, target, self.options.client.clone())
    }

    /// Adds a server with its own client options (a tap, handlers, a timeout).
    pub fn add_with(
        &self,
        name: &str,
        target: ServerTarget,
        options: ClientOptions,
    ) -> Result<(), HostError> {
        catalog::check_name(name).map_err(|why| HostError::InvalidName {
            name: name.to_owned(),
            why,
        })?;
        let entry = Ok(target.clone());
        let server = self.insert(name, ServerState::Starting, Some((target, options)), entry)?;
        self.start(&server);
        Ok(())
    }

    fn insert(
        &self,
        name: &str,
        state: ServerState,
        spec: Option<(ServerTarget, ClientOptions)>,
        entry: Result<ServerTarget, crate::config::ConfigError>,
    ) -> Result<Arc<Server>, HostError> {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        if servers.iter().any(|s| s.name == name) {
            return Err(HostError::DuplicateServer {
                name: name.to_owned(),
            });
        }
        let server = Arc::new(Server::new(name, state, spec, entry));
        servers.push(server.clone());
        Ok(server)
    }

    /// Starts the task that connects `server` and keeps it up: `Starting`, or
    /// `Stopped` at once when the host is shut down.
    fn start(&self, server: &Arc<Server>) {
        if self.closed.load(Ordering::Acquire) {
            server.set_state(&self.shared, ServerState::Stopped);
            return;
        }
        server.set_state(&self.shared, ServerState::Starting);
        server.start(&self.shared);
    }

    fn find(&self, name: &str) -> Result<Arc<Server>, HostError> {
        let servers = self.all();
        match servers.iter().find(|s| s.name == name) {
            Some(server) => Ok(server.clone()),
            None => Err(HostError::UnknownServer {
                name: name.to_owned(),
                known: servers.iter().map(|s| s.name.clone()).collect(),
            }),
        }
    }

    /// Connects server `name` again, as when it was added: its session (if any) is
    /// closed in order, its process group with it, then it starts afresh — `Starting`,
    /// with its restart count begun anew (a reconnect by hand is not a restart of the
    /// policy's). Also brings back a server that was disconnected, failed or refused
    /// after connecting. A config entry that could not be used stays refused
    /// ([`HostError::NotReady`] with its reason); after [`Host::shutdown`] nothing
    /// starts ([`HostError::ShutDown`]).
    pub async fn reconnect(&self, name: &str) -> Result<(), HostError> {
        let server = self.find(name)?;
        let _one_at_a_time = server.op.lock().await;
        if !server.has_target() {
            return Err(HostError::NotReady {
                server: name.to_owned(),
                state: Box::new(server.slot().status.state.clone()),
            });
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(HostError::ShutDown);
        }
        server
            .stop(&self.shared, self.options.shutdown_timeout)
            .await;
        self.start(&server);
        Ok(())
    }

    /// Disconnects server `name`: its session closed in order (its process group with
    /// it, bounded by [`HostOptions::shutdown_timeout`]), its lists out of the merged
    /// view, its state `Stopped` until [`Host::reconnect`]. A config entry that could
    /// not be used has nothing to disconnect and stays refused.
    pub async fn disconnect(&self, name: &str) -> Result<(), HostError> {
        let server = self.find(name)?;
        let _one_at_a_time = server.op.lock().await;
        if !server.has_target() {
            return Ok(());
        }
        server
            .stop(&self.shared, self.options.shutdown_timeout)
            .await;
        if !matches!(server.slot().status.state, ServerState::Stopped) {
            server.set_state(&self.shared, ServerState::Stopped);
        }
        Ok(())
    }

    fn all(&self) -> Vec<Arc<Server>> {
        self.servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A new observer of the host's [events](HostEvent). Events from before the call
    /// are not replayed ([`Host::servers`] has the state they led to).
    pub fn events(&self) -> broadcast::Receiver<HostEvent> {
        self.shared.events.subscribe()
    }

    /// Every server as it is now, in the order they were added.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.all().iter().map(|s| s.slot().status.clone()).collect()
    }

    /// One server as it is now.
    pub fn server(&self, name: &str) -> Option<ServerStatus> {
        let servers = self.all();
        let server = servers.iter().find(|s| s.name == name)?;
        let status = server.slot().status.clone();
        Some(status)
    }

    /// Waits until every server has come out of its first start: ready, or down —
    /// being restarted, refused, failed, stopped. Unlike [`Host::settled`], a server
    /// that keeps crashing does not hold the wait through its restarts: what is served
    /// at once is what is ready, and the rest join later ([`HostEvent::State`]).
    pub async fn started(&self) {
        let mut changed = self.shared.changed.subscribe();
        loop {
            let starting = |s: &ServerStatus| matches!(s.state, ServerState::Starting);
            if !self.servers().iter().any(starting) {
                return;
            }
            if changed.changed().await.is_err() {
                return;
            }
        }
    }

    /// Waits until every server has settled: ready, or given up (refused, failed,
    /// stopped) — none starting or waiting to restart. With restarts on, a server that
    /// keeps crashing settles once its attempts are used up.
    pub async fn settled(&self) {
        let mut changed = self.shared.changed.subscribe();
        loop {
            if self.servers().iter().all(|s| s.state.is_settled()) {
                return;
            }
            if changed.changed().await.is_err() {
                return;
            }
        }
    }

    /// The ready session of server `name`, for anything beyond the host's own calls
    /// (reads with options, subscriptions, tasks). It passes the same gating table.
    pub fn session(&self, name: &str) -> Result<Arc<Session>, HostError> {
        let server = self.find(name)?;
        let slot = server.slot();
        match &slot.session {
            Some(session) if slot.status.state.is_ready() => Ok(session.clone()),
            _ => Err(HostError::NotReady {
                server: name.to_owned(),
                state: Box::new(slot.status.state.clone()),
            }),
        }
    }

    /// The session of the server a host name (`server/name`) names, and the name.
    fn route<'a>(&self, qualified: &'a str) -> Result<(&'a str, Arc<Session>, &'a str), HostError> {
        let (server, name) = split(qualified).ok_or_else(|| HostError::NotQualified {
            name: qualified.to_owned(),
        })?;
        Ok((server, self.session(server)?, name))
    }

    /// Every ready server's tools, under `server/tool`, in the order the servers were
    /// added and each server listed them.
    pub fn tools(&self) -> Vec<HostTool> {
        let mut tools = Vec::new();
        for s in self.all() {
            s.slot().lists.tools_of(&s.name, &mut tools);
        }
        tools
    }

    /// Every ready server's resources, under `server/uri`.
    pub fn resources(&self) -> Vec<HostResource> {
        let mut resources = Vec::new();
        for s in self.all() {
            s.slot().lists.resources_of(&s.name, &mut resources);
        }
        resources
    }

    /// Every ready server's prompts, under `server/prompt`.
    pub fn prompts(&self) -> Vec<HostPrompt> {
        let mut prompts = Vec::new();
        for s in self.all() {
            s.slot().lists.prompts_of(&s.name, &mut prompts);
        }
        prompts
    }

    /// Calls tool `server/tool` on its server (`tools/call`, through that server's
    /// gating table).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
    ) -> Result<CallToolResult, HostError> {
        if self.withheld(ListKind::Tools, name) {
            return Err(HostError::Withheld { name: name.into() });
        }
        let (server, session, tool) = self.route(name)?;
        session
            .call_tool(tool, arguments)
            .await
            .map_err(|error| HostError::Server {
                server: server.to_owned(),
                error: Box::new(error),
            })
    }

    /// Reads resource `server/uri` from its server.
    pub async fn read_resource(&self, name: &str) -> Result<ResourceRead, HostError> {
        let (server, session, uri) = self.route(name)?;
        session
            .read_resource(uri)
            .await
            .map_err(|error| HostError::Server {
                server: server.to_owned(),
                error: Box::new(error),
            })
    }

    /// Gets prompt `server/prompt` from its server.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
    ) -> Result<GetPromptResult, HostError> {
        if self.withheld(ListKind::Prompts, name) {
            return Err(HostError::Withheld { name: name.into() });
        }
        let (server, session, prompt) = self.route(name)?;
        session
            .get_prompt(prompt, arguments)
            .await
            .map_err(|error| HostError::Server {
                server: server.to_owned(),
                error: Box::new(error),
            })
    }

    /// Stops every server: each task closes its session (the server's process group
    /// with it) concurrently with the others; after
    /// [`HostOptions::shutdown_timeout`] what is left is aborted, which kills it.
    /// Every server ends `Stopped`.
    pub async fn shutdown(&self) {
        self.closed.store(true, Ordering::Release);
        let servers = self.all();
        let timeout = self.options.shutdown_timeout;
        let stops = servers.iter().map(|server| async move {
            let _one_at_a_time = server.op.lock().await;
            server.stop(&self.shared, timeout).await;
            if !matches!(server.slot().status.state, ServerState::Stopped) {
                server.set_state(&self.shared, ServerState::Stopped);
            }
        });
        futures_util::future::join_all(stops).await;
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        for server in self.all() {
            server.tell_stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_and_its_calls_cross_threads() {
        fn shared<T: Send + Sync>(_: &T) {}
        fn sent<T: Send>(_: T) {}
        let host = Host::new(HostOptions::default());
        shared(&host);
        sent(host.call_tool("a/b", None));
        sent(host.settled());
        sent(host.shutdown());
    }

    #[test]
    fn a_name_the_naming_rule_refuses_is_refused_before_anything_starts() {
        let host = Host::new(HostOptions::default());
        let target = ServerTarget::Stdio(crate::ServerCommand::new("server", ["--stdio"]));
        assert!(matches!(
            host.add("a/b", target),
            Err(HostError::InvalidName { .. })
        ));
        assert!(host.servers().is_empty());
    }
}
