//! Transports: how bytes reach a server and come back.
//!
//! A transport is split into three parts so that reading, writing and process
//! management never wait on each other:
//!
//! - a [`MessageSink`] that sends a batch of messages at once (the client coalesces
//!   everything written since the last send into one [`Outbox`]: one syscall for many
//!   requests);
//! - a [`MessageSource`] that yields one received message at a time (or, for a
//!   transport that can fail one request alone, that request's failure);
//! - a [`Peer`] handle for the server's lifecycle: exit status, shutdown, stderr.
//!
//! Transports decide nothing about MCP: the HTTP transport carries out what the core's
//! [`http`](capable_core::internal::http) policy tells it.
//!
//! A transport of your own implements [`Transport`], [`MessageSink::send`],
//! [`MessageSource::recv`] and [`Peer`], and connects with [`connect`](crate::connect):
//! `send` writes [`Outbox::bytes`] (or reads [`Outbox::messages`], when it decides per
//! message), `recv` yields one message at a time. That is all a session needs
//! (`tests/own_transport.rs` is such a transport, over a server's pipes). This crate's
//! own transports also take two sealed shortcuts (see `shortcut.rs`), which save a task
//! hop per message and change nothing else.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use capable_core::{Negotiated, Notice, RequestId};

use crate::error::Error;

pub mod http;
pub(crate) mod shortcut;
pub mod stdio;
#[cfg(test)]
mod test_rng;

pub use capable_core::{Outbox, Outgoing, OutgoingRequest, RequestTarget};
use shortcut::{Bypass, Inlet, Sealed};

/// A boxed future, for the rarely-called [`Peer`] methods.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a transport stopped working.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// Reading or writing failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done (`writing to the server's stdin`, …).
        context: String,
        /// The operating system's error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// An HTTP request could not be made, or its answer not read.
    #[error("{context}: {}", chain(source))]
    Request {
        /// The request (`POST https://…`).
        context: String,
        /// The HTTP client's error (hyper's, or reqwest's for a request that goes
        /// through a proxy), never holding the URL.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// A message exceeded the configured size limit.
    #[error("the server sent a message larger than the limit of {}", capable_core::internal::text::size(*limit))]
    MessageTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// A message holds more JSON values than its size allows: decoded, it would cost
    /// many times the message limit in memory.
    #[error(
        "the server sent a message of {values} JSON values, more than the {limit} a message may hold under the size limit"
    )]
    TooManyValues {
        /// How many it held.
        values: usize,
        /// How many a message may hold.
        limit: usize,
    },
    /// The server broke the transport's own rules (an event stream that never names
    /// its endpoint, a redirect loop, a stream that ended for good).
    #[error("{0}")]
    Broken(String),
}

impl TransportError {
    /// An I/O failure while doing `context`.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        TransportError::Io {
            context: context.into(),
            source: Arc::new(source),
        }
    }

    /// A failed HTTP request made with reqwest. The client's error loses its URL (which may hold
    /// credentials in its userinfo or query); `context` names the request, redacted.
    pub fn request(context: impl Into<String>, source: reqwest::Error) -> Self {
        TransportError::Request {
            context: context.into(),
            source: Arc::new(source.without_url()),
        }
    }

    /// A failed HTTP request, or an answer that could not be read, with an error that
    /// carries no URL (hyper's; a body's).
    pub(crate) fn http(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        TransportError::Request {
            context: context.into(),
            source: Arc::from(source.into()),
        }
    }
}

/// An error and its causes, one after the other (reqwest's own message says little).
pub(crate) fn chain_of(e: &dyn std::error::Error) -> String {
    chain(e)
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        let text = inner.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        source = inner.source();
    }
    s
}

/// What a [`MessageSource`] yields.
#[derive(Debug)]
#[non_exhaustive]
pub enum Inbound {
    /// One message (a JSON-RPC line, without its terminator).
    Message(Bytes),
    /// One message that came on the stream of the client's request `related` (its
    /// id as sent): Streamable HTTP's POST streams, where what the server sends is
    /// about that request. A server's question here names it
    /// ([`crate::input::related_request`]).
    Related {
        /// The message.
        message: Bytes,
        /// The client's request on whose stream it came.
        related: RequestId,
    },
    /// The last bytes of a stream that ended before their line did: a message if they
    /// parse as one, else what is left of a message the server stopped writing halfway
    /// (it exited mid-write), skipped so that the end of the stream says why.
    Unterminated(Bytes),
    /// One request failed in the transport without a JSON-RPC answer (an HTTP status,
    /// a stream that broke beyond repair): it fails with `error`; the session goes on.
    Failed {
        /// The request's id, as sent.
        id: RequestId,
        /// Why.
        error: Error,
    },
    /// Something the host should see that is not a message (a tool the transport
    /// dropped, a stream it gave up).
    Notice(Notice),
}

/// Sends batches of messages.
pub trait MessageSink: Send + 'static {
    /// Sends `batch` — one or more whole messages, one line each — and flushes. A
    /// transport that moves bytes sends [`Outbox::bytes`] in one write; one that
    /// decides per message reads each message's record ([`Outbox::messages`]).
    fn send(&mut self, batch: &Outbox) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// Told once, when the handshake settled and before anything negotiated is sent
    /// (legacy `notifications/initialized` included): a transport whose framing
    /// depends on the negotiated version (HTTP's `MCP-Protocol-Version`) takes it from
    /// here, never from the traffic.
    fn negotiated(&mut self, negotiated: &Negotiated) {
        let _ = negotiated;
    }

    /// Told once, before anything is sent, of the tools the host already knows
    /// ([`ClientOptions::known_tools`](crate::ClientOptions::known_tools)): a
    /// transport whose framing depends on them (HTTP's `Mcp-Param-*` headers) learns
    /// them here. Returns what it had to say about them (tools it drops).
    fn know_tools(&mut self, tools: &[capable_core::model::Tool]) -> Vec<Notice> {
        let _ = tools;
        Vec::new()
    }

    /// Sealed (see `shortcut.rs`): this crate's transports' way for a lone request to
    /// be written by its caller.
    #[doc(hidden)]
    fn bypass(&self, _: Sealed) -> Option<Box<dyn Bypass>> {
        None
    }
}

/// Yields received messages one at a time.
pub trait MessageSource: Send + 'static {
    /// The next message without its line terminator; `None` when the server closed its
    /// end.
    fn recv(&mut self) -> impl Future<Output = Result<Option<Inbound>, TransportError>> + Send;

    /// Sealed (see `shortcut.rs`): offered once, as the session starts, to a source
    /// whose messages arrive on tasks of its own, which may keep `inlet` and hand each
    /// message in from there (`recv` is still read). Dropping the source must drop
    /// the inlet too: the session's notification stream ends with both.
    #[doc(hidden)]
    fn attach(&mut self, inlet: std::sync::Arc<dyn Inlet>, _: Sealed) {
        let _ = inlet;
    }
}

/// The server as a running thing: its exit, its shutdown, its diagnostics.
pub trait Peer: Send + Sync + 'static {
    /// After the server's output ended: how it exited, if it did within `grace`
    /// (`None` for a server that is not a process of ours).
    fn exit_status(&self, grace: Duration) -> BoxFuture<'_, Option<ExitStatus>>;
    /// Stops the server after its input was closed (for stdio: wait, then SIGTERM,
    /// then SIGKILL to its whole process group, each bounded). Returns how it exited.
    fn shutdown(&self) -> BoxFuture<'_, Option<ExitStatus>>;
    /// What the server wrote to stderr, bounded: its first lines and its last, with
    /// `… N lines left out …` between (not an error signal by itself).
    fn stderr_tail(&self) -> String;
    /// Each line the server writes to stderr from now on, as it is written (secrets
    /// scrubbed as in the tail); `None` for a server with no stderr of ours (HTTP).
    fn stderr_lines(&self) -> Option<tokio::sync::broadcast::Receiver<std::sync::Arc<str>>> {
        None
    }
    /// The server's process id, which is also its process group's (`None` for a
    /// server that is not a process of ours).
    fn process_id(&self) -> Option<u32> {
        None
    }
    /// The session id the server gave (legacy Streamable HTTP), to hand the session
    /// over ([`crate::Resumption`]); `None` for any other transport.
    fn session_id(&self) -> Option<String> {
        None
    }
    /// A legacy HTTP session held by other clients too
    /// ([`ClientOptions::with_shared_session`](crate::ClientOptions::with_shared_session)): its
    /// standalone stream open (`true`) or closed (`false`); nothing for any other.
    fn standalone(&self, open: bool) {
        let _ = open;
    }
}

/// A connected transport, ready to be split.
pub trait Transport: Send + 'static {
    /// The sending half.
    type Sink: MessageSink;
    /// The receiving half.
    type Source: MessageSource;
    /// Splits into sending half, receiving half and peer handle.
    fn split(self) -> (Self::Sink, Self::Source, Box<dyn Peer>);
}
