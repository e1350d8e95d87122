//! capable's MCP bridge as a library: capable between hosts and servers. A host (a
//! desktop app, an editor, an agent) talks to the bridge over stdio
//! ([`serve_stdio`]) or Streamable HTTP ([`serve_listen`], many hosts at once, both
//! protocol eras; or [`HttpBridge`]'s axum router in an application's own server);
//! behind it is one server ([`Upstream::One`], any [`Connector`]: a command, a URL
//! with its credentials) or the servers of a config as one ([`Upstream::Many`]).
//! `capable bridge` is this crate behind its flags.
//!
//! ```no_run
//! # async fn run() -> Result<(), capable_bridge::BridgeError> {
//! use capable_bridge::{serve_stdio, BridgeConfig, Connector, Stop, Upstream};
//!
//! let command = capable::ServerCommand::new("my-server", ["--stdio"]);
//! let connect = Connector::new(move |options| {
//!     let command = command.clone();
//!     Box::pin(async move { Ok(capable::connect_stdio(&command, options).await?) })
//! });
//! let config = BridgeConfig::new(Upstream::One { name: "my-server".into(), connect });
//! serve_stdio(config, Stop::never()).await
//! # }
//! ```
//!
//! What the host sees is exactly what the server declared; every request passes the
//! gating table on both sides (the engine facing the host refuses what the server did
//! not declare, the session facing the server what was not negotiated); only declared
//! notifications reach the host; violations, notices and what was withheld go to
//! stderr as JSON lines (and `--audit-log FILE`).
//!
//! | file | concern |
//! |---|---|
//! | `stdio.rs` | the host on stdin/stdout: read, relay, write in one write |
//! | `pipes.rs` | stdin and stdout on the reactor (a pipe, a socket), not the blocking pool |
//! | `host.rs` | one host's side: the greeter until it says who it is, then the relay |
//! | `relay/` | one host ⇄ the server behind: forwarding, cancellation, progress, questions, notifications, listen streams |
//! | `upstream.rs` | the server behind, connected declaring what the host declared |
//! | `behind.rs` | the server behind while it is up, and its restarts |
//! | `forward.rs` | a request's params on the way there, its failure on the way back |
//! | `listen/` | the host over Streamable HTTP (`--listen`): sessions, streams, the gate, who is calling (`--auth-issuer`) |
//! | `audit.rs` | the JSON lines of what the host did not see |
//! | `metrics/` | the counts an operator scrapes (`/metrics`), and what `/readyz` answers |
//! | `traces/` | every request and its upstream call as OpenTelemetry spans, over OTLP ([`Traces`]) |
//! | `many/` | the servers of a config as one |
//! | `credentials/` | whose credentials go to a config's HTTP servers: the gateway's, each caller's by token exchange, or each caller's own login done by the gateway |
//! | `replicas.rs` | which servers each of many replicas may run (`perReplica`, [`hold_to_replicas`]) |
//! | `reload/` | the config read anew while the bridge runs ([`Reload`]): its file watched, the policy in force swapped, every host's servers following |
//! | `policy/` | the one policy seam ([`Policy`]): lists, requests and results, for one server and many alike, knowing the [`Caller`]; the config's policies ([`ConfigPolicy`]: tools, who may use what, rate limits) |
//! | `config.rs`, `error.rs`, `stop.rs` | the public face: what to serve, what ends it, what stops it |

#![deny(missing_docs)]

mod audit;
mod audit_limit;
mod behind;
mod config;
mod credentials;
mod error;
mod forward;
mod host;
mod listen;
mod many;
mod metrics;
mod pipes;
mod policy;
mod relay;
mod reload;
mod replicas;
mod run_task;
mod stdio;
mod stop;
pub mod store;
mod traces;
mod upstream;

pub use capable::internal::auth::resource::Caller;
pub use config::{
    BridgeConfig, Connector, Hints, IntrospectionClient, ListenAuth, ListenConfig, Upstream,
};
pub use error::{BridgeError, Unavailable};
pub use policy::{ConfigPolicy, Policy, Shared, Verdict};
pub use reload::{Follow, Load, Loaded, Reload};
pub use replicas::hold_to_replicas;
pub use stop::{Stop, StopHandle};
pub use traces::Traces;

/// Serves `config`'s server or servers to one host on this process's stdin and stdout,
/// until the host closes its end (`Ok`), breaks the transport
/// ([`BridgeError::Host`]) or `stop` is signalled ([`BridgeError::Stopped`]); the
/// servers behind are shut down in order either way.
pub async fn serve_stdio(config: BridgeConfig, stop: Stop) -> Result<(), BridgeError> {
    callers_known(&config, false)?;
    let target = host::Target::open(config, stop, None, false)?;
    stdio::serve(target).await
}

/// Serves `config`'s server or servers over Streamable HTTP at `listen.addr` (`/mcp`),
/// to every host that passes the gate, until `stop` is signalled
/// ([`BridgeError::Stopped`]); every session's server is shut down in order.
pub async fn serve_listen(
    config: BridgeConfig,
    listen: ListenConfig,
    stop: Stop,
) -> Result<(), BridgeError> {
    callers_known(&config, listen.auth.is_some())?;
    let known = listen.auth.is_some();
    let target = host::Target::open(config, stop, listen.token.as_deref(), known)?;
    listen::serve(target, &listen).await
}

/// The bridge's Streamable HTTP side as an axum [`Router`](axum::Router), for an
/// application that serves HTTP itself ([`serve_listen`] is this, bound and served
/// with its connection bounds). The router serves `/mcp` (and, with
/// [`ListenConfig::auth`], the protected resource metadata) with everything of the
/// listener but the connections: the gate (`Host`, `Origin`, the token or the
/// caller's access token), the bounds of bodies, batches, sessions and streams, both
/// eras. Bounding connections (how many, how long their headers may take) is the
/// serving application's part. [`run`](HttpBridge::run) must be polled beside the
/// server: it lets idle sessions go, and ends every session's server when `stop` is
/// signalled.
///
/// ```no_run
/// # async fn run(config: capable_bridge::BridgeConfig) -> Result<(), capable_bridge::BridgeError> {
/// use capable_bridge::{HttpBridge, ListenConfig, Stop};
///
/// let socket = tokio::net::TcpListener::bind("127.0.0.1:8080").await.unwrap();
/// // The address as the application listens on it: the `Host` gate expects its port.
/// let listen = ListenConfig::new(socket.local_addr().unwrap());
/// let bridge = HttpBridge::new(config, listen, Stop::never()).await?;
/// let app = axum::Router::new().nest("/bridge", bridge.router());
/// let serving = async move {
///     let _ = axum::serve(socket, app).await;
/// };
/// bridge.run(serving).await
/// # }
/// ```
pub struct HttpBridge {
    prepared: listen::Prepared,
}

impl HttpBridge {
    /// The listener for `config`'s server or servers, at `listen.addr` (loopback
    /// unless [`ListenConfig::allow_remote`]); with [`ListenConfig::auth`], the issuer
    /// is reached first ([`BridgeError::Issuer`] if it cannot be).
    pub async fn new(
        config: BridgeConfig,
        listen: ListenConfig,
        stop: Stop,
    ) -> Result<HttpBridge, BridgeError> {
        callers_known(&config, listen.auth.is_some())?;
        let known = listen.auth.is_some();
        let target = host::Target::open(config, stop, listen.token.as_deref(), known)?;
        let prepared = listen::Prepared::new(target, &listen).await?;
        Ok(HttpBridge { prepared })
    }

    /// The routes, to serve (or nest) in the application's router; every clone
    /// serves the same sessions.
    pub fn router(&self) -> axum::Router {
        self.prepared.router()
    }

    /// Runs beside `serving` (the application's server) until it ends or `stop` is
    /// signalled ([`BridgeError::Stopped`]); then every session's server is shut down
    /// in order.
    pub async fn run(
        self,
        serving: impl std::future::Future<Output = ()>,
    ) -> Result<(), BridgeError> {
        self.prepared.run(serving).await
    }
}

/// Refuses a policy with rules naming who may call ([`Policy::wants_callers`]) where
/// nobody logs in (`known`: the hosts are verified callers): such a rule would be
/// judged for nobody, never silently open.
fn callers_known(config: &BridgeConfig, known: bool) -> Result<(), BridgeError> {
    let rule = config.policy.as_ref().and_then(|p| p.wants_callers());
    match (rule, known) {
        (Some(rule), false) => Err(BridgeError::Config(format!(
            "the rule {rule} names who may call, but this bridge's hosts do not log in: \
             serve it with --listen and --auth-issuer (a gateway that knows its callers)"
        ))),
        _ => Ok(()),
    }
}

/// `N` random bytes as hex (visible ASCII: a session id, the prefix of the bridge's own
/// task ids).
fn random_hex<const N: usize>() -> String {
    random::<N>().iter().map(|b| format!("{b:02x}")).collect()
}

/// `N` random bytes (a session id, the secret of a relay's rounds); without randomness,
/// the time, which still tells them apart.
fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            .to_le_bytes();
        let n = N.min(nanos.len());
        bytes[..n].copy_from_slice(&nanos[..n]);
    }
    bytes
}
