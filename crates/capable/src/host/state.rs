//! What a host knows of each server: its state with the reason, and a snapshot of its
//! connection (era, version, handshake time, list sizes).

use std::fmt;
use std::time::Duration;

use capable_core::internal::restart::Failure;
use capable_core::internal::time::humanize;
use capable_core::model::Implementation;
use capable_core::{Era, ProtocolVersion};

use crate::config::ConfigError;
use crate::error::{Error, ErrorKind};

/// Why a server is not running (or stopped running).
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// Its config entry cannot be used (nothing was started).
    #[error(transparent)]
    Config(ConfigError),
    /// Its name breaks the host's naming rule (nothing was started).
    #[error("{name:?} cannot name a server: {why}")]
    InvalidName {
        /// The name.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Connecting failed, or the session ended: the client's error, with its cause.
    #[error(transparent)]
    Session(Error),
}

impl ServerError {
    /// What the failure means for restarting (see
    /// [`Failure::is_retryable`](capable_core::internal::restart::Failure::is_retryable)).
    pub fn failure(&self) -> Failure {
        match self {
            ServerError::Config(_) | ServerError::InvalidName { .. } => Failure::Config,
            ServerError::Session(e) => e.failure(),
        }
    }

    /// What kind of failure this is: a broken config entry or name is a usage error,
    /// a connection's failure is its client error's kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ServerError::Config(_) | ServerError::InvalidName { .. } => ErrorKind::Usage,
            ServerError::Session(e) => e.kind(),
        }
    }

    /// The client's error, when the failure came from a connection.
    pub fn session_error(&self) -> Option<&Error> {
        match self {
            ServerError::Session(e) => Some(e),
            _ => None,
        }
    }
}

/// Where a server is in its life.
///
/// A server moves through these states:
///
/// ```text
///            ┌────────────── restart after a delay ───────────────┐
///            ▼                                                    │
/// Starting ──┬──► Ready ──(crash, lost session)──► Restarting ────┤
///            │                                                    │
///            └──(fails to connect)──► Restarting ─────────────────┘
///
/// a failure a restart cannot cure ─► Refused    (version, violation, config, 401/403)
/// the bounded restarts used up      ─► Failed
/// shut down, or disconnected        ─► Stopped  (from any state)
/// reconnected by hand               ─► Starting (from any state but a broken entry)
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ServerState {
    /// Connecting for the first time.
    Starting,
    /// Connected: its lists are in the host's merged view and calls are routed to it.
    Ready,
    /// Down, and being started again: first a wait of `delay`, then the connection
    /// (restart number `attempt` in a row).
    Restarting {
        /// Which restart in a row this is (1 for the first).
        attempt: u32,
        /// The wait before it (backoff with jitter).
        delay: Duration,
        /// Why it went down.
        error: ServerError,
    },
    /// Down for a reason a restart cannot cure (a refused protocol version, a
    /// contract violation, a broken config entry, a missing authorization); not
    /// retried.
    Refused {
        /// Why.
        error: ServerError,
    },
    /// Down after the restart policy's attempts were used up (or with restarts off).
    Failed {
        /// How many restarts in a row were tried.
        attempts: u32,
        /// The last failure.
        error: ServerError,
    },
    /// Shut down by the host, or disconnected ([`Host::disconnect`]).
    ///
    /// [`Host::disconnect`]: crate::host::Host::disconnect
    Stopped,
}

impl ServerState {
    /// A short lower-case name: `starting`, `ready`, `restarting`, `refused`,
    /// `failed`, `stopped`.
    pub fn name(&self) -> &'static str {
        match self {
            ServerState::Starting => "starting",
            ServerState::Ready => "ready",
            ServerState::Restarting { .. } => "restarting",
            ServerState::Refused { .. } => "refused",
            ServerState::Failed { .. } => "failed",
            ServerState::Stopped => "stopped",
        }
    }

    /// The reason of a state that has one.
    pub fn error(&self) -> Option<&ServerError> {
        match self {
            ServerState::Restarting { error, .. }
            | ServerState::Refused { error }
            | ServerState::Failed { error, .. } => Some(error),
            _ => None,
        }
    }

    /// Whether the server is ready.
    pub fn is_ready(&self) -> bool {
        matches!(self, ServerState::Ready)
    }

    /// Whether the server has settled: ready, or given up (refused, failed,
    /// stopped) — neither starting nor waiting to restart.
    pub fn is_settled(&self) -> bool {
        !matches!(self, ServerState::Starting | ServerState::Restarting { .. })
    }
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerState::Restarting {
                attempt,
                delay,
                error,
            } => write!(
                f,
                "restarting (attempt {attempt} in {}): {error}",
                humanize(*delay)
            ),
            ServerState::Refused { error } => write!(f, "refused: {error}"),
            ServerState::Failed { attempts, error } => match attempts {
                0 => write!(f, "failed: {error}"),
                1 => write!(f, "failed after 1 restart: {error}"),
                n => write!(f, "failed after {n} restarts: {error}"),
            },
            other => f.write_str(other.name()),
        }
    }
}

/// One server as the host sees it, at one moment ([`Host::servers`]).
///
/// The connection's facts (era, version, `serverInfo`, handshake time) are those of
/// its current session, or of its last one while it is down; the list sizes count
/// what the server offers now (`None` when it does not declare that capability, or
/// is not ready).
///
/// [`Host::servers`]: crate::host::Host::servers
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerStatus {
    /// Its name in the host.
    pub name: String,
    /// Its state, with the reason.
    pub state: ServerState,
    /// The era it speaks.
    pub era: Option<Era>,
    /// The negotiated protocol version.
    pub protocol_version: Option<ProtocolVersion>,
    /// Its `serverInfo`.
    pub server_info: Option<Implementation>,
    /// How long the handshake took.
    pub handshake: Option<Duration>,
    /// How many times it was restarted since it was added.
    pub restarts: u32,
    /// How many tools it offers.
    pub tools: Option<usize>,
    /// How many resources it offers.
    pub resources: Option<usize>,
    /// How many prompts it offers.
    pub prompts: Option<usize>,
    /// Lists that could not be read in its current session (it stays ready: the
    /// other lists and calls still work).
    pub list_errors: Vec<(crate::host::ListKind, Error)>,
}

impl ServerStatus {
    pub(crate) fn new(name: &str) -> ServerStatus {
        ServerStatus {
            name: name.to_owned(),
            state: ServerState::Starting,
            era: None,
            protocol_version: None,
            server_info: None,
            handshake: None,
            restarts: 0,
            tools: None,
            resources: None,
            prompts: None,
            list_errors: Vec::new(),
        }
    }
}
