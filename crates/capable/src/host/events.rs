//! The host's one stream of events: every server's state changes, list changes,
//! violations, notices, notifications and stderr lines, each with the server's name.
//!
//! [`Host::events`](crate::host::Host::events) hands out a receiver of a broadcast: any
//! number of observers (a UI, a log, a test) follow it; one that falls behind loses
//! the oldest events (`RecvError::Lagged`) and never slows a server down. What was
//! lost can be read back at any time from [`Host::servers`](crate::host::Host::servers)
//! and the merged lists.

use std::sync::Arc;

use capable_core::{Notice, PinChange, PinKind, Violation};

use crate::error::Error;
use crate::events::ServerNotification;
use crate::host::{ListKind, ServerChange, ServerState};

/// Something that happened to one of the host's servers.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum HostEvent {
    /// The server entered a new state.
    State {
        /// The server.
        server: String,
        /// Its new state, with the reason.
        state: ServerState,
    },
    /// One of the server's lists changed in the merged view: read after it became
    /// ready or after its `list_changed`, or dropped because it went down.
    ListChanged {
        /// The server.
        server: String,
        /// Which list.
        list: ListKind,
    },
    /// A list could not be read (the server stays ready; its other lists and calls
    /// still work).
    ListFailed {
        /// The server.
        server: String,
        /// Which list.
        list: ListKind,
        /// Why.
        error: Error,
    },
    /// The server declared a capability and then refused its method.
    Violation {
        /// The server.
        server: String,
        /// The evidence.
        violation: Box<Violation>,
    },
    /// A lower-severity record of the server's session (an undeclared notification, a
    /// skipped line, …).
    Notice {
        /// The server.
        server: String,
        /// The record.
        notice: Notice,
    },
    /// A notification from the server (`list_changed` ones included, after the host
    /// acted on them).
    Notification {
        /// The server.
        server: String,
        /// The notification.
        notification: ServerNotification,
    },
    /// A definition differs from its pin (a changed description or schema: the
    /// definition the team reviewed is no longer the one the model would read). With
    /// both definitions, as evidence; withheld from the merged view unless the pin
    /// policy passes changes.
    DefinitionChanged {
        /// The server.
        server: String,
        /// Its version, as it said in its handshake.
        server_version: Option<String>,
        /// The pinned and the current definition.
        change: Box<PinChange>,
        /// Whether it was withheld.
        withheld: bool,
    },
    /// A definition never seen before, held until accepted (the pin policy holds new
    /// ones).
    DefinitionHeld {
        /// The server.
        server: String,
        /// Its kind.
        kind: PinKind,
        /// Its name.
        name: String,
    },
    /// The lock file could not be written: the definitions were judged, the new pins
    /// are kept for this run only.
    PinsUnsaved {
        /// The server whose list brought new pins.
        server: String,
        /// Why, in words.
        error: String,
    },
    /// A reload ([`Host::reload`](crate::host::Host::reload)) added, removed or
    /// changed the server (its states follow as [`HostEvent::State`]).
    Reloaded {
        /// The server.
        server: String,
        /// What the reload did to it.
        change: ServerChange,
    },
    /// A line the server wrote to stderr (a stdio server, while it is up; secrets
    /// scrubbed). The lines written before it was ready are in its session's
    /// [`stderr_tail`](crate::Session::stderr_tail).
    Stderr {
        /// The server.
        server: String,
        /// The line, without its newline.
        line: Arc<str>,
    },
}

impl HostEvent {
    /// The server the event is about.
    pub fn server(&self) -> &str {
        match self {
            HostEvent::State { server, .. }
            | HostEvent::ListChanged { server, .. }
            | HostEvent::ListFailed { server, .. }
            | HostEvent::Violation { server, .. }
            | HostEvent::Notice { server, .. }
            | HostEvent::Notification { server, .. }
            | HostEvent::DefinitionChanged { server, .. }
            | HostEvent::DefinitionHeld { server, .. }
            | HostEvent::PinsUnsaved { server, .. }
            | HostEvent::Reloaded { server, .. }
            | HostEvent::Stderr { server, .. } => server,
        }
    }
}
