//! The machinery under a session: tasks that move bytes and time, around the sans-IO
//! [`Connection`] behind a short-held lock. Every rule — gating, routing, deadlines,
//! the closed state — is the connection's; the tasks only carry out what it decides.
//!
//! | file | what it does |
//! |---|---|
//! | `outcome.rs` | where a request's outcome waits for its caller |
//! | `writer.rs` | sends everything queued since the last write in one write |
//! | `reader.rs` | reads each message, lets the connection route it, wakes its waiter |
//! | `timer.rs` | sleeps until the connection's next deadline, then lets it time requests out |
//! | `input.rs` | answers legacy server requests with the host's handlers |
//! | `listen.rs` | hands the notifications of a `subscriptions/listen` stream to its listener |
//!
//! A request takes the lock, lets the connection gate it and append its line to the
//! outgoing [`Outbox`](capable_core::Outbox), and wakes the writer only if it was
//! empty. The writer swaps the whole outbox out and sends it in one write: requests
//! issued while a write is in progress go out together in the next one. A lone request
//! (nothing else in flight, nothing queued, no write under way) is written at once by
//! its caller when the transport offers a bypass (see `transport/shortcut.rs`), saving
//! the hop to the writer task; what that write starts (HTTP: the request's exchange)
//! the caller carries out itself while it waits, so its answer is routed from its own
//! task. The reader parses each line just far enough to route it and leaves the
//! outcome for the waiting caller (`outcome.rs`), which decodes the result into the one
//! type it expects. A transport that receives on tasks of its own (HTTP) routes from
//! there through the reader's [`Inlet`](crate::transport::shortcut::Inlet), without the
//! reader task.
//!
//! The driver depends on the transports (their traits), never the other way round.

mod input;
mod listen;
mod outcome;
mod reader;
mod timer;
mod writer;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use capable_core::{Connection, Outbox};
use tokio::sync::{mpsc, Notify};

use crate::error::Error;
use crate::session::ListenEvent;
use crate::tap::Tap;
use crate::transport::shortcut::{Bypass, Work, BYPASS_MAX};
use crate::transport::Peer;

pub(crate) use input::{run_input, Input, ServerRequest};
pub(crate) use outcome::{wake_all, Answer, Driven, Outcome, Slots, Waiter};
pub(crate) use reader::{cut_off, ended, run_reader};
pub(crate) use timer::run_timer;
pub(crate) use writer::run_writer;

pub(crate) struct State {
    pub(crate) conn: Connection<Waiter>,
    /// Where each request's caller waits for its outcome (see `outcome.rs`).
    pub(crate) slots: Slots,
    pub(crate) out: Outbox,
    /// How many bytes at the start of `out` the tap has already been shown.
    pub(crate) out_tapped: usize,
    /// The writer task is sending a batch.
    pub(crate) writing: bool,
    /// The transport's bypass, for lone requests (dropped on close).
    pub(crate) bypass: Option<Box<dyn Bypass>>,
    /// What the last bypass write started, for the caller whose write it was.
    pub(crate) work: Option<Work>,
    /// Responses the reader handed out since something was last queued: more than
    /// one means their callers are likely to answer with a burst of requests, which
    /// the writer should send together.
    pub(crate) answered: u32,
    /// Why the session ended, once the connection is closed: requests fail with it.
    pub(crate) closed: Option<Error>,
    /// Open `subscriptions/listen` streams, by the listen request's id.
    pub(crate) listeners: HashMap<i64, mpsc::Sender<ListenEvent>>,
    /// The instant the timer task sleeps until (`None`: until a request arms it).
    pub(crate) timer_armed: Option<Instant>,
}

/// What every task of a session shares: the state under its lock, the wake-ups of the
/// writer and the timer, the server, the tap and the event log.
pub(crate) struct Driver {
    pub(crate) state: Mutex<State>,
    pub(crate) write_ready: Notify,
    /// Wakes the timer task (an earlier deadline, or the session closed).
    pub(crate) timer_wake: Notify,
    pub(crate) peer: Box<dyn Peer>,
    pub(crate) tap: Option<Tap>,
    /// Violations, notices, legacy resource updates and the end, for observers.
    pub(crate) events: crate::events::EventLog,
    /// Server notifications dropped because nobody took them in time.
    pub(crate) dropped: AtomicU64,
    /// The largest message accepted; it bounds how many values one may hold too.
    pub(crate) max_message_size: usize,
}

impl Driver {
    pub(crate) fn new(
        state: State,
        peer: Box<dyn Peer>,
        tap: Option<Tap>,
        events: crate::events::EventLog,
        max_message_size: usize,
    ) -> Driver {
        Driver {
            max_message_size,
            state: Mutex::new(state),
            write_ready: Notify::new(),
            timer_wake: Notify::new(),
            peer,
            tap,
            events,
            dropped: AtomicU64::new(0),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-update; the state is
        // still consistent enough to fail requests cleanly.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the state under the lock, then wakes the writer if `f` queued bytes
    /// into an empty buffer (a non-empty one already has a write under way or due),
    /// and the timer if `f` armed a deadline earlier than the one it sleeps until.
    ///
    /// What a bypass write starts (HTTP: the request's exchange) runs on its own: see
    /// [`Driver::write_starting`] for a caller that carries it out itself.
    #[inline]
    pub(crate) fn write_with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        self.write_carrying::<false, R>(f).0
    }

    /// [`Driver::write_with`], handing back what a bypass write of what `f` queued
    /// started, for the caller to carry out while it waits for its answer.
    #[inline]
    pub(crate) fn write_starting<R>(&self, f: impl FnOnce(&mut State) -> R) -> (R, Option<Work>) {
        self.write_carrying::<true, R>(f)
    }

    fn write_carrying<const CARRY: bool, R>(
        &self,
        f: impl FnOnce(&mut State) -> R,
    ) -> (R, Option<Work>) {
        let (result, wake_writer, wake_timer, work) = {
            let mut st = self.lock();
            let was_empty = st.out.is_empty();
            let result = f(&mut st);
            let queued = was_empty && !st.out.is_empty();
            let wake_timer = match st.conn.poll_timeout() {
                Some(at) if st.timer_armed.is_none_or(|armed| at < armed) => {
                    st.timer_armed = Some(at);
                    true
                }
                _ => false,
            };
            let wake_writer = queued && !self.send_bypassing(&mut st, CARRY);
            let work = if CARRY { st.work.take() } else { None };
            (result, wake_writer, wake_timer, work)
        };
        if wake_writer {
            self.write_ready.notify_one();
        }
        if wake_timer {
            self.timer_wake.notify_one();
        }
        (result, work)
    }

    /// Writes what was just queued from the caller's task, when that is safe and
    /// worth it: the writer is idle (so nothing sent earlier is still on its way), at
    /// most one request is in flight and at most one answer came since the last
    /// request (a burst is left to the writer, which sends it in one write, unless
    /// the transport's writes do not coalesce), and the batch is small enough to go
    /// whole or not at all. Returns whether everything
    /// went out; otherwise the writer takes over, and reports any failure as usual.
    fn send_bypassing(&self, st: &mut State, carry: bool) -> bool {
        let after_burst = std::mem::take(&mut st.answered) > 1;
        if st.writing || st.out.len() > BYPASS_MAX {
            return false;
        }
        let busy = after_burst || st.conn.in_flight() > 1;
        let State {
            out,
            out_tapped,
            bypass,
            work,
            ..
        } = st;
        let Some(bypass) = bypass.as_mut() else {
            return false;
        };
        // A burst is the writer's to send in one write, where writes coalesce (a pipe);
        // over HTTP every request is a POST of its own, and goes at once.
        if busy && bypass.coalesces() {
            return false;
        }
        match bypass.write(out) {
            Ok(n) if n > 0 => {
                // All of it, from a pipe. Should a writer take only part, the writer
                // task sends the rest; either way the tap is shown each line once.
                if let Some(tap) = &self.tap {
                    tap.sent(&out[*out_tapped..]);
                }
                out.consume(n);
                *out_tapped = out.len();
                match carry {
                    true => *work = bypass.take_work(),
                    false => bypass.detach(),
                }
                out.is_empty()
            }
            _ => false,
        }
    }

    /// Ends the session: the connection closes, every request in flight fails with
    /// `reason`, the writer sends what is queued and closes the transport's input.
    pub(crate) fn close(&self, reason: Error) {
        let wakers = {
            let mut st = self.lock();
            if st.closed.is_none() {
                st.closed = Some(reason.clone());
                self.events.closed(reason.clone());
            }
            st.bypass = None;
            st.listeners.clear();
            // Every request in flight fails with the session's reason (the first one
            // given, should the session be closed twice).
            let reason = st.closed.clone().unwrap_or(reason);
            let waiters = st.conn.close();
            waiters
                .into_iter()
                .map(|w| st.finish(w, Err(reason.clone())))
                .collect::<Vec<_>>()
        };
        self.write_ready.notify_one();
        self.timer_wake.notify_one();
        wake_all(wakers);
    }

    /// Counts a server notification nobody took in time.
    pub(crate) fn dropped_notification(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }
}

/// Spawns work nobody carries out in its own task (on the current runtime: a request
/// is only ever made from one).
pub(crate) fn spawn(work: Work) {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn(work);
        }
        Err(_) => tracing::warn!("work started outside a runtime was dropped"),
    }
}

/// The moment a message arrived, on both clocks (tokio's clock for deadlines, so that
/// paused time in tests moves them).
pub(crate) fn now() -> capable_core::Now {
    now_at(SystemTime::now())
}

/// [`now`], for a message whose arrival on the wall clock was already read.
pub(crate) fn now_at(wall: SystemTime) -> capable_core::Now {
    capable_core::Now::new(tokio::time::Instant::now().into_std(), wall)
}
