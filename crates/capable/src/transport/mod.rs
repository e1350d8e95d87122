//! Transports: how bytes reach a server and come back.
//!
//! A transport is split into three parts so that reading, writing and process
//! management never wait on each other:
//!
//! - a [`MessageSink`] that sends a batch of newline-terminated messages at once (the
//!   client coalesces everything written since the last send into one batch: one
//!   syscall for many requests);
//! - a [`MessageSource`] that yields one received message at a time;
//! - a [`Peer`] handle for the server's lifecycle: exit status, shutdown, stderr.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

pub mod http;
mod legacy_sse;
pub mod sse;
pub mod stdio;
#[cfg(test)]
mod test_rng;

/// A boxed future, for the rarely-called [`Peer`] methods.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a transport stopped working.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TransportError {
    /// Reading or writing failed.
    #[error("{0}")]
    Io(String),
    /// A message exceeded the configured size limit.
    #[error("the server sent a message larger than the limit of {limit} bytes")]
    MessageTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

/// Sends batches of newline-terminated messages.
pub trait MessageSink: Send + 'static {
    /// Sends `batch` (one or more whole lines) and flushes.
    fn send(&mut self, batch: &[u8]) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// A second, non-blocking way into the same byte stream, for a lone request: the
    /// caller's task writes it at once instead of waking the writer task. It must
    /// write a batch of at most [`DIRECT_MAX`] bytes whole or not at all (a pipe does,
    /// up to `PIPE_BUF`). `None` (the default): every batch goes through
    /// [`MessageSink::send`].
    fn direct(&self) -> Option<DirectWriter> {
        None
    }
}

/// See [`MessageSink::direct`].
pub type DirectWriter = Box<dyn std::io::Write + Send>;

/// The largest batch written through a [`DirectWriter`]: `PIPE_BUF` on Linux, the size
/// up to which a pipe write is atomic.
pub const DIRECT_MAX: usize = 4096;

/// Yields received messages one at a time.
pub trait MessageSource: Send + 'static {
    /// The next message without its line terminator; `None` when the server closed its
    /// end.
    fn recv(&mut self)
        -> impl Future<Output = Result<Option<bytes::Bytes>, TransportError>> + Send;
}

/// The server as a running thing: its exit, its shutdown, its diagnostics.
pub trait Peer: Send + Sync + 'static {
    /// After the server's output ended: how it exited, if it did within `grace`.
    fn exit_status(&self, grace: Duration) -> BoxFuture<'_, Option<String>>;
    /// Stops the server after its input was closed (for stdio: wait, then SIGTERM,
    /// then SIGKILL, each bounded). Returns how it exited.
    fn shutdown(&self) -> BoxFuture<'_, Option<String>>;
    /// The last lines the server wrote to stderr (not an error signal by itself).
    fn stderr_tail(&self) -> String;
    /// A short description for messages (`node server.js`, a URL, …).
    fn describe(&self) -> String;
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
