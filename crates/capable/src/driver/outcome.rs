//! Where a request's outcome waits for its caller: no channel per request.
//!
//! A request's [`Waiter`] sits in the connection's pending entry, holding the waker of
//! the task that waits. When the request ends — answered, failed by the transport,
//! timed out, ended by the server — whoever ends it takes the waiter out of the
//! connection, puts the outcome into [`State::outcomes`] under the same lock and
//! wakes the task once the lock is released ([`State::finish`]). The caller's
//! [`Outcome`] future looks under that lock: its outcome, else its pending entry (it
//! leaves its waker there), else neither — the connection closed, and the session's
//! reason is the outcome. Both sides meet under one lock, so no wake-up is lost.
//!
//! This costs a map insert and remove where a oneshot channel costs an allocation and
//! its atomics, per request.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::SystemTime;

use capable_core::model::ProgressParams;
use capable_core::Payload;
use tokio::sync::mpsc;

use crate::error::Error;
use crate::transport::Started;

use super::{Shared, State};

/// A result as it reached the client: the raw payload and when it arrived.
pub(crate) struct Answer {
    pub(crate) payload: Payload,
    /// When the reader received it (a read's `read_at`).
    pub(crate) arrived: SystemTime,
}

/// What a request waits with, in its pending entry.
pub(crate) struct Waiter {
    /// The task to wake when the outcome is in (none until its caller first waits).
    waker: Option<Waker>,
    pub(crate) progress: Option<mpsc::UnboundedSender<ProgressParams>>,
}

impl Waiter {
    pub(crate) fn new(progress: Option<mpsc::UnboundedSender<ProgressParams>>) -> Waiter {
        Waiter {
            waker: None,
            progress,
        }
    }

    /// The waker of the task that waits, for a request that ended without an outcome
    /// of its own (the connection closed: its caller finds the session's reason).
    pub(crate) fn into_waker(self) -> Option<Waker> {
        self.waker
    }
}

impl State {
    /// Request `id` ended with `outcome`: it is kept for the caller, and the caller's
    /// task is returned, to be woken once the lock is released.
    #[must_use = "the waiting task must be woken"]
    pub(crate) fn finish(
        &mut self,
        id: i64,
        waiter: Waiter,
        outcome: Result<Answer, Error>,
    ) -> Option<Waker> {
        self.outcomes.insert(id, outcome);
        waiter.waker
    }
}

/// Resolves to the outcome of request `id`.
pub(crate) struct Outcome<'a> {
    shared: &'a Shared,
    id: i64,
}

impl<'a> Outcome<'a> {
    pub(crate) fn new(shared: &'a Shared, id: i64) -> Outcome<'a> {
        Outcome { shared, id }
    }
}

impl Future for Outcome<'_> {
    type Output = Result<Answer, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut st = self.shared.lock();
        if let Some(outcome) = st.outcomes.remove(&self.id) {
            return Poll::Ready(outcome);
        }
        match st.conn.waiter_mut(self.id) {
            Some(waiter) => {
                match &mut waiter.waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    slot => *slot = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            None => Poll::Ready(Err(st.closed.clone().unwrap_or(Error::Closed))),
        }
    }
}

/// [`Outcome`], carrying out meanwhile the work the request's direct write started
/// (HTTP: its exchange) in the caller's own task: the answer is routed from there
/// and its caller finds it in the same poll, with no task and no wake-up between.
pub(crate) struct Driven<'a> {
    outcome: Outcome<'a>,
    work: Option<Started>,
}

impl<'a> Driven<'a> {
    #[inline]
    pub(crate) fn new(outcome: Outcome<'a>, work: Option<Started>) -> Driven<'a> {
        Driven { outcome, work }
    }

    /// Once the outcome is in: work that is not done yet (rare: its exchange goes on
    /// after the answer) is spawned after an answer, and dropped (its request
    /// abandoned, as a cancelled caller's is) after a failure.
    #[inline]
    pub(crate) fn finish(self, answered: bool) {
        if let (Some(work), true) = (self.work, answered) {
            super::spawn(work);
        }
    }
}

impl Future for Driven<'_> {
    type Output = Result<Answer, Error>;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(work) = self.work.as_mut() {
            if work.as_mut().poll(cx).is_ready() {
                self.work = None;
            }
        }
        Pin::new(&mut self.outcome).poll(cx)
    }
}

/// Wakes every task in `wakers` (after the lock that found them was released).
pub(crate) fn wake_all(wakers: impl IntoIterator<Item = Option<Waker>>) {
    for w in wakers.into_iter().flatten() {
        w.wake();
    }
}
