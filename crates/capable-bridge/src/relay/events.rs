//! The relay's one queue of things to act on. Whatever the relay waits for comes to it
//! as one [`Event`], from one of two places, and a wake polls those two and the timer:
//!
//! - **the inbox**, one channel into which the sessions' callbacks push: a forward's
//!   progress, a task's status, a question of the server's (or its end). It is FIFO,
//!   so an answer's progress and the questions asked before it are acted on first (the
//!   relay drains the inbox before it hands out an answer).
//! - **the work**, one [`FuturesUnordered`] of everything the relay set going itself: a
//!   forward on its way to its answer, a request of the relay's own (a subscription, a
//!   log level), a `tasks/result` fetched, a restart's delay and connection, and the
//!   streams it follows (the server's notifications and events, listen streams), each
//!   put back once it gave its next item. Only what was woken is polled.
//!
//! Bounds are each source's own, as they were: at most [`PROGRESS_QUEUE`] progress
//! updates wait in the inbox (past it a server's flood of them is dropped, never held:
//! the answer still comes); a question waits for its answer, so there are no more of
//! them than the server asks at once; a listen stream is read one event at a time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use capable::host::HostEvent;
use capable::internal::model::ProgressParams;
use capable::{Error, ListenEvent};
use futures_util::future::BoxFuture;
use futures_util::stream::{BoxStream, FuturesUnordered};
use futures_util::{FutureExt, StreamExt};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};

use super::fanout::Fanned;
use super::Answer;
use crate::behind::Change;
use crate::upstream::Asked;

/// The most progress updates waiting for the relay at once.
pub const PROGRESS_QUEUE: usize = 1024;

/// Something the relay must act on (see [`Relay::next`](super::Relay::next)).
pub enum Event {
    /// The server answered an exchange (or it failed).
    Forwarded(u64, Answer),
    /// Progress of an exchange.
    Progress(u64, ProgressParams),
    /// The server asks the host something, or a question of its is over.
    Asked(Asked),
    /// Something of the one server behind: a notification, an event, a restart.
    Behind(Change),
    /// Something of the many servers behind.
    Many(Result<HostEvent, broadcast::error::RecvError>),
    /// The many servers' config was read anew: the one now in force.
    Reloaded(std::sync::Arc<crate::reload::Generation>),
    /// Something of the many servers' subscriptions: on a listen stream, or a step's
    /// outcome.
    Fanout(Fanned),
    /// The listen stream at the one server under this token (the core's `Follow`'s)
    /// was opened (or failed to).
    Opened(u64, Result<(), Error>),
    /// Something arrived on that listen stream, or it ended.
    Listened(u64, Result<Option<ListenEvent>, Error>),
    /// A subscribe or unsubscribe at the one server ran (the core's `Follow` asked it).
    Followed(
        capable::internal::bridge::FollowStep,
        Result<(), capable::Error>,
    ),
    /// A task the bridge waits on for a legacy host changed (`tasks.rs`).
    TaskStatus(Value),
    /// The bridge's `tasks/result` under this token ended (`task_input.rs`).
    Fetched(u64),
    /// A round's retry whose `requestState` the shared store was asked to spend: the
    /// first to (`Ok(true)`), spent already (`Ok(false)`), or no answer.
    Spent(
        capable::internal::server::ClientRequest,
        Result<bool, crate::store::StoreError>,
    ),
    /// A task of the bridge's was kept in the store (or failed to be): its host's
    /// answer, held until then (`kept_tasks.rs`).
    Kept(
        Box<super::kept_tasks::Held>,
        Result<(), crate::store::StoreError>,
    ),
    /// What the store holds of another replica's task of the bridge's, for a host
    /// request about it (`kept_tasks.rs`).
    KeptRead(
        Box<super::kept_tasks::Asking>,
        Result<Option<Vec<u8>>, crate::store::StoreError>,
    ),
    /// Tasks of the bridge's another replica made, read from the store for a legacy
    /// host's `tasks/list` (before its answer, in this FIFO): sealed as the bridge's
    /// own in it (`task_list.rs`).
    ListedElsewhere(Vec<String>),
    /// A notification of the bridge's own for the host, as a server's would go (the
    /// engine's table decides): `notifications/elicitation/complete` once a caller's
    /// login the host was asked for landed (`credentials/ask.rs`).
    Tell(capable::internal::notification::Notification, Value),
    /// A question put to the host may have timed out.
    Timer,
    /// Nothing to do (an exchange the host cancelled ended, a request of the relay's
    /// own was answered, a stream ended).
    Nothing,
}

/// Where the sessions' callbacks push what the relay must act on. Cheap to clone.
#[derive(Clone)]
pub struct Inbox {
    tx: mpsc::UnboundedSender<Event>,
    /// How many progress updates wait in the channel.
    progress: Arc<AtomicUsize>,
}

impl Inbox {
    /// Pushes `event`: false once the relay is gone.
    pub fn send(&self, event: Event) -> bool {
        self.tx.send(event).is_ok()
    }

    /// Pushes progress of exchange `token`, unless [`PROGRESS_QUEUE`] updates wait
    /// already: then it is dropped.
    pub fn progress(&self, token: u64, p: &ProgressParams) {
        if self.progress.fetch_add(1, Ordering::Relaxed) >= PROGRESS_QUEUE {
            self.progress.fetch_sub(1, Ordering::Relaxed);
            return;
        }
        if self.tx.send(Event::Progress(token, p.clone())).is_err() {
            self.progress.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// What a piece of work came to: an event, and the stream it came from when there is
/// more of it.
enum Done {
    Once(Event),
    Next(Event, BoxStream<'static, Event>),
    End,
}

/// The relay's side of the queue: the inbox's receiver and the work in flight.
pub struct Queue {
    rx: mpsc::UnboundedReceiver<Event>,
    progress: Arc<AtomicUsize>,
    work: FuturesUnordered<BoxFuture<'static, Done>>,
}

/// A new queue, and its inbox.
pub fn queue() -> (Inbox, Queue) {
    let (tx, rx) = mpsc::unbounded_channel();
    let progress = Arc::new(AtomicUsize::new(0));
    let inbox = Inbox {
        tx,
        progress: progress.clone(),
    };
    let queue = Queue {
        rx,
        progress,
        work: FuturesUnordered::new(),
    };
    (inbox, queue)
}

impl Queue {
    /// Sets `work` going: its outcome is the next event of it.
    pub fn push(&mut self, work: impl std::future::Future<Output = Event> + Send + 'static) {
        self.work.push(work.map(Done::Once).boxed());
    }

    /// Follows `stream`: each item is an event; its end is none.
    pub fn follow(&mut self, stream: BoxStream<'static, Event>) {
        let next = stream.into_future().map(|(item, rest)| match item {
            Some(event) => Done::Next(event, rest),
            None => Done::End,
        });
        self.work.push(next.boxed());
    }

    /// The next event: from the inbox, the work, or the timer at `timer`. Cancel-safe.
    pub async fn next(&mut self, timer: Option<Instant>) -> Event {
        tokio::select! {
            biased;
            Some(event) = self.rx.recv() => self.took(event),
            Some(done) = self.work.next(), if !self.work.is_empty() => match done {
                Done::Once(event) => event,
                Done::Next(event, rest) => {
                    self.follow(rest);
                    event
                }
                Done::End => Event::Nothing,
            },
            () = sleep_until(timer), if timer.is_some() => Event::Timer,
        }
    }

    /// The next event already in the inbox, if any.
    pub fn try_next(&mut self) -> Option<Event> {
        self.rx.try_recv().ok().map(|event| self.took(event))
    }

    fn took(&self, event: Event) -> Event {
        if matches!(event, Event::Progress(..)) {
            self.progress.fetch_sub(1, Ordering::Relaxed);
        }
        event
    }
}

/// Sleeps until `at`; pending for ever without it.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(n: f64) -> ProgressParams {
        serde_json::from_value(serde_json::json!({"progressToken": 1, "progress": n}))
            .expect("progress params")
    }

    /// A flood of progress past the bound is dropped, never held; once the relay took
    /// some, there is room again.
    #[tokio::test(start_paused = true)]
    async fn progress_past_the_bound_is_dropped() {
        let (inbox, mut queue) = queue();
        for n in 0..PROGRESS_QUEUE + 10 {
            inbox.progress(7, &progress(n as f64));
        }
        let mut taken = 0;
        while let Some(event) = queue.try_next() {
            assert!(matches!(event, Event::Progress(7, _)));
            taken += 1;
        }
        assert_eq!(taken, PROGRESS_QUEUE);
        inbox.progress(7, &progress(1.0));
        assert!(matches!(queue.try_next(), Some(Event::Progress(7, _))));
    }

    /// What was pushed into the inbox comes out in the order it was pushed, before the
    /// work that is ready too; a followed stream gives each item, then nothing.
    #[tokio::test(start_paused = true)]
    async fn inbox_in_order_then_work_then_streams() {
        let (inbox, mut queue) = queue();
        queue.push(async { Event::Fetched(9) });
        inbox.progress(1, &progress(1.0));
        assert!(inbox.send(Event::TaskStatus(Value::from(2))));
        let items = vec![
            Event::TaskStatus(Value::from(3)),
            Event::TaskStatus(Value::from(4)),
        ];
        queue.follow(futures_util::stream::iter(items).boxed());
        assert!(matches!(queue.next(None).await, Event::Progress(1, _)));
        assert!(matches!(queue.next(None).await, Event::TaskStatus(v) if v == 2));
        let mut rest = Vec::new();
        for _ in 0..4 {
            rest.push(match queue.next(None).await {
                Event::Fetched(t) => format!("fetched {t}"),
                Event::TaskStatus(v) => format!("status {v}"),
                Event::Nothing => "end".to_owned(),
                _ => "other".to_owned(),
            });
        }
        rest.sort();
        assert_eq!(rest, ["end", "fetched 9", "status 3", "status 4"]);
        // Nothing left: the timer is what comes.
        let at = Instant::now() + std::time::Duration::from_secs(5);
        assert!(matches!(queue.next(Some(at)).await, Event::Timer));
    }
}
