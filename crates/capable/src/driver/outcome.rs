//! Where a request's outcome waits for its caller: no channel per request, and no map.
//!
//! Each request in flight has a [`Slot`] in the session's state, taken when it is
//! issued and given back by its caller once it is done with it; slots are reused, so
//! a session holds as many as it ever had requests in flight at once. A request's
//! [`Waiter`] — in the connection's pending entry — holds the slot's index. When the
//! request ends — answered, failed by the transport, timed out, ended by the server,
//! or the connection closed — whoever ends it takes the waiter out of the connection,
//! puts the outcome into the slot under the same lock and wakes the task that waits
//! once the lock is released ([`State::finish`]). The caller's [`Outcome`] future
//! looks into its slot under that lock: the outcome, else it leaves its waker there.
//! Both sides meet under one lock, so no wake-up is lost.
//!
//! This costs an index into a vector where a map costs a hash insert and two lookups,
//! and a oneshot channel an allocation and its atomics, per request.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::SystemTime;

use capable_core::model::ProgressParams;
use capable_core::Payload;
use tokio::sync::mpsc;

use crate::error::Error;
use crate::transport::shortcut::Work;

use super::{Driver, State};

/// A result as it reached the client: the raw payload and when it arrived.
pub(crate) struct Answer {
    pub(crate) payload: Payload,
    /// When the reader received it (a read's `read_at`).
    pub(crate) arrived: SystemTime,
}

/// What a request waits with, in its pending entry.
pub(crate) struct Waiter {
    /// Its slot in [`Slots`].
    slot: u32,
    pub(crate) progress: Option<mpsc::UnboundedSender<ProgressParams>>,
    /// The caller's own mark for the request ([`RequestOptions::tag`](crate::RequestOptions::tag)),
    /// handed back with a question the server asks about it.
    pub(crate) tag: Option<u64>,
}

/// Where one request's caller and whoever ends the request meet.
enum Slot {
    /// Nobody's: on the free list.
    Free,
    /// The request is in flight; the waker of the task that waits (given when the
    /// request is issued, or left by its caller's first wait).
    Waiting(Option<Waker>),
    /// The request ended with this outcome; its caller has not taken it yet.
    Done(Result<Answer, Error>),
}

/// The slots of the requests in flight, and of those whose callers have not come
/// back for their outcome yet.
#[derive(Default)]
pub(crate) struct Slots {
    entries: Vec<Slot>,
    /// Indices of the free slots, the most recently freed last.
    free: Vec<u32>,
}

impl Slots {
    /// A waiter with a slot of its own, for a request about to be issued by the task
    /// of `waker` (if known: it is woken when the request ends). Its caller gives the
    /// slot back ([`Slots::release`]) once it no longer waits.
    pub(crate) fn open(
        &mut self,
        waker: Option<Waker>,
        progress: Option<mpsc::UnboundedSender<ProgressParams>>,
    ) -> Waiter {
        let slot = match self.free.pop() {
            Some(slot) => {
                if let Some(s) = self.entries.get_mut(slot as usize) {
                    *s = Slot::Waiting(waker);
                }
                slot
            }
            None => {
                // One slot per request in flight at once: a u32 is plenty.
                let slot = u32::try_from(self.entries.len())
                    .expect("fewer than 2^32 requests in flight at once");
                self.entries.push(Slot::Waiting(waker));
                slot
            }
        };
        Waiter {
            slot,
            progress,
            tag: None,
        }
    }

    /// Gives slot `slot` back, dropping an outcome nobody took.
    pub(crate) fn release(&mut self, slot: u32) {
        if let Some(s) = self.entries.get_mut(slot as usize) {
            if !matches!(s, Slot::Free) {
                *s = Slot::Free;
                self.free.push(slot);
            }
        }
    }

    /// See [`State::finish`].
    fn finish(&mut self, waiter: Waiter, outcome: Result<Answer, Error>) -> Option<Waker> {
        let slot = self.entries.get_mut(waiter.slot as usize)?;
        // Only the waker is taken out (the slot is not moved whole to look at it).
        let Slot::Waiting(waker) = slot else {
            // Never the case (a slot is given back only by its caller, after the
            // request left the connection); nothing waits on it.
            return None;
        };
        let waker = waker.take();
        *slot = Slot::Done(outcome);
        waker
    }

    /// Whether the request of slot `slot` has ended (its outcome waits for its caller).
    pub(crate) fn is_done(&self, slot: u32) -> bool {
        matches!(self.entries.get(slot as usize), Some(Slot::Done(_)))
    }
}

impl Waiter {
    /// Its slot, for the caller that waits on it.
    pub(crate) fn slot(&self) -> u32 {
        self.slot
    }
}

impl State {
    /// The request `waiter` waited for ended with `outcome`: it is kept for the
    /// caller, and the caller's task is returned, to be woken once the lock is
    /// released.
    #[must_use = "the waiting task must be woken"]
    pub(crate) fn finish(
        &mut self,
        waiter: Waiter,
        outcome: Result<Answer, Error>,
    ) -> Option<Waker> {
        self.slots.finish(waiter, outcome)
    }

    /// The caller of request `id` (slot `slot`) stops waiting: an outcome that came
    /// in the meantime is dropped with the slot; a request still pending is
    /// cancelled (`notifications/cancelled`, saying `why`).
    pub(crate) fn abandon(&mut self, id: i64, slot: u32, why: &str) {
        if !self.slots.is_done(slot) {
            self.conn.cancel(id, why, &mut self.out);
        }
        self.slots.release(slot);
    }
}

/// Resolves to the outcome of the request whose waiter has slot `slot`, and gives the
/// slot back.
pub(crate) struct Outcome<'a> {
    shared: &'a Driver,
    slot: u32,
    /// The slot already holds the waker of the task polling this, from the same poll
    /// that opened it: the first poll need not look (an outcome that came since woke
    /// the task, which polls again).
    registered: bool,
}

impl<'a> Outcome<'a> {
    pub(crate) fn new(shared: &'a Driver, slot: u32) -> Outcome<'a> {
        Outcome {
            shared,
            slot,
            registered: false,
        }
    }

    /// The outcome of a request whose slot was opened with the waker of the task
    /// that polls this, in the very poll that first polls it.
    pub(crate) fn registered(shared: &'a Driver, slot: u32) -> Outcome<'a> {
        Outcome {
            shared,
            slot,
            registered: true,
        }
    }
}

impl Future for Outcome<'_> {
    type Output = Result<Answer, Error>;

    /// Inlined, so that the first poll of a registered outcome (every request's
    /// first wait) costs its caller one test, not a call.
    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if std::mem::take(&mut self.registered) {
            return Poll::Pending;
        }
        self.look(cx)
    }
}

impl Outcome<'_> {
    /// The outcome, if it came; else the waker of `cx` is left in the slot.
    fn look(&self, cx: &mut Context<'_>) -> Poll<Result<Answer, Error>> {
        let mut st = self.shared.lock();
        let State { slots, closed, .. } = &mut *st;
        let Some(slot) = slots.entries.get_mut(self.slot as usize) else {
            return Poll::Ready(Err(closed.clone().unwrap_or(Error::Closed)));
        };
        if let Slot::Waiting(waker) = slot {
            match waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                waker => *waker = Some(cx.waker().clone()),
            }
            return Poll::Pending;
        }
        match std::mem::replace(slot, Slot::Free) {
            Slot::Done(outcome) => {
                slots.free.push(self.slot);
                Poll::Ready(outcome)
            }
            // Never the case: the slot is this caller's until it took the outcome.
            _ => Poll::Ready(Err(closed.clone().unwrap_or(Error::Closed))),
        }
    }
}

/// [`Outcome`], carrying out meanwhile the work the request's bypass write started
/// (HTTP: its exchange) in the caller's own task: the answer is routed from there
/// and its caller finds it in the same poll, with no task and no wake-up between.
pub(crate) struct Driven<'a> {
    outcome: Outcome<'a>,
    work: Option<Work>,
}

impl<'a> Driven<'a> {
    #[inline]
    pub(crate) fn new(outcome: Outcome<'a>, work: Option<Work>) -> Driven<'a> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn waker() -> Waker {
        Waker::noop().clone()
    }

    #[test]
    fn a_slot_given_back_is_reused_and_never_hands_a_stale_outcome_to_its_next_request() {
        let mut slots = Slots::default();
        let first = slots.open(Some(waker()), None);
        let at = first.slot();
        // Its caller stopped waiting after the answer came: the outcome is dropped.
        assert!(slots.finish(first, Err(Error::Closed)).is_some());
        assert!(slots.is_done(at));
        slots.release(at);
        let next = slots.open(None, None);
        assert_eq!(next.slot(), at, "a free slot is reused");
        assert!(!slots.is_done(at), "the next request starts waiting");
    }

    #[test]
    fn a_slot_given_back_twice_is_still_handed_out_once() {
        let mut slots = Slots::default();
        let a = slots.open(None, None).slot();
        slots.release(a);
        slots.release(a);
        let b = slots.open(None, None).slot();
        let c = slots.open(None, None).slot();
        assert_ne!(b, c, "two requests in flight never share a slot");
    }
}
