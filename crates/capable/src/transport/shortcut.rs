//! Two shortcuts this crate's own transports take, sealed: a third-party transport
//! cannot offer them (it implements plain [`MessageSink::send`] and
//! [`MessageSource::recv`]), and loses nothing but a task hop per message.
//!
//! - A **bypass** ([`MessageSink::bypass`]): a lone request is written by its caller's
//!   task at once, instead of waking the writer task. A pipe takes a small batch whole
//!   or not at all; HTTP starts the request's exchange and hands it back as [`Work`],
//!   which the caller carries out while it waits for the answer.
//! - An **inlet** ([`MessageSource::attach`]): a source whose messages arrive on tasks
//!   of its own (HTTP: each exchange's) hands each to the session from there, as the
//!   reader task would from `recv`, saving the hop to the reader task.
//!
//! [`Inlet`] is the one trait the session's driver implements for a transport: the
//! driver depends on the transports, never the other way round.
//!
//! [`MessageSink::send`]: super::MessageSink::send
//! [`MessageSink::bypass`]: super::MessageSink::bypass
//! [`MessageSource::recv`]: super::MessageSource::recv
//! [`MessageSource::attach`]: super::MessageSource::attach

use capable_core::Outbox;

use super::{BoxFuture, Inbound, TransportError};

/// Only this crate can name it, so only this crate's transports override the sealed
/// methods that take it.
#[derive(Clone, Copy, Debug)]
pub struct Sealed(pub(crate) ());

/// Work a bypass write started (HTTP: the request's exchange), for its caller to carry
/// out.
pub type Work = BoxFuture<'static, ()>;

/// The largest batch written through a [`Bypass`]: `PIPE_BUF` on Linux, the size up
/// to which a pipe write is atomic.
pub const BYPASS_MAX: usize = 4096;

/// The non-blocking way into a sink's byte stream, for a lone request.
pub trait Bypass: Send {
    /// Writes all of `batch` (returning its length in bytes) or none of it (`Ok(0)`:
    /// the writer task then sends it).
    fn write(&mut self, batch: &Outbox) -> std::io::Result<usize>;

    /// What the last write started, for its caller to carry out in its own task while
    /// it waits for the answer. `None` (the default): the write was all there was.
    fn take_work(&mut self) -> Option<Work> {
        None
    }

    /// The last write's caller will not carry out what it started (it does not wait
    /// for the answer itself): it runs on its own.
    fn detach(&mut self) {}

    /// Whether writes coalesce: several requests in one write go out as one (a pipe),
    /// so a burst is better left to the writer task. `false` where every request is
    /// sent on its own anyway (HTTP: a POST each), which then takes every request.
    fn coalesces(&self) -> bool {
        true
    }
}

/// Any byte writer is a bypass (a pipe's duplicate descriptor): it writes the batch's
/// bytes.
impl<W: std::io::Write + Send> Bypass for W {
    fn write(&mut self, batch: &Outbox) -> std::io::Result<usize> {
        std::io::Write::write(self, batch.bytes())
    }
}

/// The way into a session for a source that reads on tasks of its own: each item is
/// handled on the spot, as the session's reader would handle it from `recv`.
pub trait Inlet: Send + Sync {
    /// Hands `item` to the session: a message is routed and its waiter woken, a
    /// request's failure fails it, an `Err` ends the session. Returns `false` once the
    /// session has ended: nothing more is wanted.
    fn deliver(&self, item: Result<Inbound, TransportError>) -> bool;
}
