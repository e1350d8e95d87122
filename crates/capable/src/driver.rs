//! The machinery under a session: one reader task, one writer task, and the sans-IO
//! [`Connection`] between them behind a short-held lock.
//!
//! A request takes the lock, lets the connection gate it and append its line to the
//! outgoing buffer, and wakes the writer only if the buffer was empty. The writer swaps
//! the whole buffer out and sends it in one write: requests issued while a write is in
//! progress go out together in the next one. A lone request (nothing else in flight,
//! nothing queued, no write under way) is written at once by its caller when the
//! transport offers a non-blocking way in, saving the hop to the writer task. The
//! reader parses each line just far enough to route it and completes the waiting
//! request's oneshot; the caller decodes the result into the one type it expects.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use capable_core::model::ProgressParams;
use capable_core::{Connection, Event, Incoming, Method, Notice, Payload, RequestId};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::time::Instant;

use crate::error::Error;
use crate::tap::Tap;
use crate::transport::{
    DirectWriter, MessageSink, MessageSource, Peer, TransportError, DIRECT_MAX,
};

/// What a request waits on.
pub(crate) struct Waiter {
    pub(crate) tx: oneshot::Sender<Result<Payload, Error>>,
    pub(crate) progress: Option<mpsc::UnboundedSender<ProgressParams>>,
    /// When the request times out; `None` for requests that never do (a listen stream).
    pub(crate) clock: Option<Clock>,
}

/// A request's timeout, checked by [`run_deadlines`]: one timer for the whole
/// session instead of one per request.
pub(crate) struct Clock {
    pub(crate) method: Method,
    pub(crate) started: Instant,
    pub(crate) deadline: Instant,
    /// Progress restarts the timeout: `deadline = now + timeout`, up to `hard_limit`.
    pub(crate) timeout: Duration,
    pub(crate) hard_limit: Instant,
}

/// A notification from the server.
#[derive(Clone, Debug)]
pub struct ServerNotification {
    /// Its method (`notifications/resources/updated`, …).
    pub method: String,
    /// Its params (`null` when absent).
    pub params: Value,
}

/// A request from the server that the host handles (legacy era), answered by the
/// host's [`InputHandlers`](crate::input::InputHandlers).
#[derive(Debug)]
pub(crate) struct ServerRequest {
    pub(crate) id: RequestId,
    pub(crate) method: String,
    pub(crate) params: Value,
}

pub(crate) struct State {
    pub(crate) conn: Connection<Waiter>,
    pub(crate) out: Vec<u8>,
    /// How many bytes at the start of `out` the tap has already been shown.
    pub(crate) out_tapped: usize,
    /// The writer task is sending a batch.
    pub(crate) writing: bool,
    /// The transport's non-blocking way in, for lone requests (dropped on close).
    pub(crate) direct: Option<DirectWriter>,
    /// Responses the reader handed out since something was last queued: more than
    /// one means their callers are likely to answer with a burst of requests, which
    /// the writer should send together.
    pub(crate) answered: u32,
    /// Set once: why the session ended. Requests fail with it from then on.
    pub(crate) closed: Option<Error>,
    /// The writer sends what is left, then drops the sink (closing stdin).
    pub(crate) stop_writing: bool,
    pub(crate) dropped_notifications: u64,
    /// Open `subscriptions/listen` streams, by the listen request's id.
    pub(crate) listeners: HashMap<i64, mpsc::Sender<ListenEvent>>,
    /// When the deadline task wakes next (`None`: idle until a request arms it).
    pub(crate) timer_at: Option<Instant>,
}

impl State {
    /// Called with each new request's deadline: whether the deadline task must be
    /// woken because this deadline comes before the one it sleeps until. With one
    /// timeout for every request that is only the first request after an idle spell.
    pub(crate) fn arm_timer(&mut self, deadline: Instant) -> bool {
        let wake = self.timer_at.is_none_or(|at| deadline < at);
        if wake {
            self.timer_at = Some(deadline);
        }
        wake
    }
}

/// What arrives on a `subscriptions/listen` stream.
#[derive(Clone, Debug)]
pub enum ListenEvent {
    /// `notifications/subscriptions/acknowledged`: the subset of the filter the server
    /// honours.
    Acknowledged(Value),
    /// A notification on the stream (`notifications/resources/updated`, …).
    Notification(ServerNotification),
}

pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) write_ready: Notify,
    pub(crate) writer_done: Notify,
    /// Wakes [`run_deadlines`] (an earlier deadline, or the session closed).
    pub(crate) timer_wake: Notify,
    pub(crate) peer: Box<dyn Peer>,
    pub(crate) tap: Option<Tap>,
    /// Violations, notices, legacy resource updates and the end, for observers.
    pub(crate) events: crate::events::EventLog,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-update; the state is
        // still consistent enough to fail requests cleanly.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the state under the lock, then wakes the writer if `f` queued bytes
    /// into an empty buffer (a non-empty one already has a write under way or due).
    pub(crate) fn write_with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let (result, wake) = {
            let mut st = self.lock();
            let was_empty = st.out.is_empty();
            let result = f(&mut st);
            let queued = was_empty && !st.out.is_empty();
            (result, queued && !self.send_directly(&mut st))
        };
        if wake {
            self.write_ready.notify_one();
        }
        result
    }

    /// Writes what was just queued from the caller's task, when that is safe and
    /// worth it: the writer is idle (so nothing sent earlier is still on its way), at
    /// most one request is in flight and at most one answer came since the last
    /// request (a burst is left to the writer, which sends it in one write), and the
    /// batch is small enough to go whole or not at all. Returns whether everything
    /// went out; otherwise the writer takes over, and reports any failure as usual.
    fn send_directly(&self, st: &mut State) -> bool {
        let after_burst = std::mem::take(&mut st.answered) > 1;
        if after_burst || st.writing || st.conn.in_flight() > 1 || st.out.len() > DIRECT_MAX {
            return false;
        }
        let State {
            out,
            out_tapped,
            direct,
            ..
        } = st;
        let Some(direct) = direct.as_mut() else {
            return false;
        };
        match direct.write(out) {
            Ok(n) if n > 0 => {
                // All of it, from a pipe. Should a writer take only part, the writer
                // task sends the rest; either way the tap is shown each line once.
                if let Some(tap) = &self.tap {
                    tap.sent(&out[*out_tapped..]);
                }
                out.drain(..n);
                *out_tapped = out.len();
                out.is_empty()
            }
            _ => false,
        }
    }

    /// Ends the session: every request in flight fails with `reason`.
    pub(crate) fn close(&self, reason: Error) {
        let waiters = {
            let mut st = self.lock();
            if st.closed.is_none() {
                st.closed = Some(reason.clone());
                self.events.closed(reason.clone());
            }
            st.stop_writing = true;
            st.direct = None;
            st.listeners.clear();
            st.conn.drain()
        };
        self.write_ready.notify_one();
        self.timer_wake.notify_one();
        for w in waiters {
            let _ = w.tx.send(Err(reason.clone()));
        }
    }
}

/// Times requests out: sleeps until the earliest deadline armed, then fails every
/// request past its deadline with [`Error::Timeout`] and tells the server with
/// `notifications/cancelled`. Requests that finish in time cost no timer at all.
pub(crate) async fn run_deadlines(shared: Arc<Shared>) {
    loop {
        let at = {
            let st = shared.lock();
            if st.closed.is_some() {
                return;
            }
            st.timer_at
        };
        let Some(at) = at else {
            shared.timer_wake.notified().await;
            continue;
        };
        tokio::select! {
            _ = tokio::time::sleep_until(at) => {}
            _ = shared.timer_wake.notified() => continue,
        }
        let now = Instant::now();
        let expired = shared.write_with(|st| {
            if st.closed.is_some() {
                return None;
            }
            let late: Vec<i64> = st
                .conn
                .waiters()
                .filter(|(_, w)| w.clock.as_ref().is_some_and(|c| c.deadline <= now))
                .map(|(id, _)| id)
                .collect();
            let expired: Vec<Waiter> = late
                .into_iter()
                .filter_map(|id| st.conn.cancel(id, "timed out", &mut st.out))
                .collect();
            st.timer_at = st
                .conn
                .waiters()
                .filter_map(|(_, w)| Some(w.clock.as_ref()?.deadline))
                .min();
            Some(expired)
        });
        let Some(expired) = expired else { return };
        for w in expired {
            if let Some(c) = &w.clock {
                let after = c.deadline - c.started;
                let _ = w.tx.send(Err(Error::Timeout {
                    method: c.method,
                    after,
                }));
            }
        }
    }
}

fn log_notices(shared: &Shared, notices: Vec<Notice>) {
    for n in notices {
        tracing::warn!("{n}");
        shared.events.notice(n);
    }
}

/// Delivers a notification that belongs to a `subscriptions/listen` stream to its
/// listener; returns it when it belongs to none.
fn route_to_listener(shared: &Shared, n: ServerNotification) -> Option<ServerNotification> {
    const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    if n.method == "notifications/cancelled" {
        // On stdio a server may end a listen stream by cancelling the listen request.
        let id = n.params.get("requestId").and_then(Value::as_i64)?;
        let mut st = shared.lock();
        if st.listeners.remove(&id).is_some() {
            if let Some(w) = st.conn.forget(id) {
                let _ = w.tx.send(Err(Error::ListenEnded {
                    reason: n
                        .params
                        .get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                }));
            }
            return None;
        }
        drop(st);
        return Some(n);
    }
    let id = n
        .params
        .get("_meta")
        .and_then(|m| m.get(SUBSCRIPTION_ID))
        .and_then(Value::as_i64);
    let Some(id) = id else { return Some(n) };
    let tx = shared.lock().listeners.get(&id).cloned();
    match tx {
        Some(tx) => {
            let event = if n.method == "notifications/subscriptions/acknowledged" {
                ListenEvent::Acknowledged(
                    n.params
                        .get("notifications")
                        .cloned()
                        .unwrap_or(Value::Null),
                )
            } else {
                ListenEvent::Notification(n)
            };
            if tx.try_send(event).is_err() {
                shared.lock().dropped_notifications += 1;
            }
            None
        }
        None => Some(n),
    }
}

/// Answers legacy server requests with the host's handlers, one task per request so a
/// slow answer (a person typing) never blocks reading.
pub(crate) async fn run_input(
    shared: Arc<Shared>,
    mut requests: mpsc::UnboundedReceiver<ServerRequest>,
    handlers: crate::input::InputHandlers,
) {
    while let Some(req) = requests.recv().await {
        let shared = shared.clone();
        let handlers = handlers.clone();
        tokio::spawn(async move {
            let answer = handlers.answer(&req.method, req.params).await;
            shared.write_with(|st| {
                if st.closed.is_some() {
                    return;
                }
                match &answer {
                    Ok(result) => st.conn.respond(&req.id, result, &mut st.out),
                    Err(error) => st.conn.respond_error(&req.id, error, &mut st.out),
                }
            });
        });
    }
}

/// How long a server whose pipe ended may take to exit before the client stops waiting
/// for its exit status.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

pub(crate) async fn run_writer<S: MessageSink>(shared: Arc<Shared>, mut sink: S) {
    let mut spare = Vec::with_capacity(64 * 1024);
    loop {
        let (batch, tapped, stop) = {
            let mut st = shared.lock();
            std::mem::swap(&mut st.out, &mut spare);
            st.writing = !spare.is_empty();
            let tapped = std::mem::take(&mut st.out_tapped);
            if st.stop_writing {
                st.direct = None;
            }
            (std::mem::take(&mut spare), tapped, st.stop_writing)
        };
        let mut batch = batch;
        if !batch.is_empty() {
            if let Some(tap) = &shared.tap {
                tap.sent(&batch[tapped.min(batch.len())..]);
            }
            if let Err(e) = sink.send(&batch).await {
                // A write fails when the server is gone (EPIPE): report how it exited,
                // as the reader does on end of output, not the broken pipe.
                let reason = match shared.peer.exit_status(EXIT_GRACE).await {
                    Some(status) => Error::ServerExited {
                        status,
                        stderr: shared.peer.stderr_tail(),
                    },
                    None => Error::Transport(e),
                };
                shared.close(reason);
                break;
            }
            batch.clear();
            spare = batch;
            continue;
        }
        spare = batch;
        if stop {
            break;
        }
        shared.write_ready.notified().await;
    }
    drop(sink);
    shared.writer_done.notify_one();
}

pub(crate) async fn run_reader<S: MessageSource>(
    shared: Arc<Shared>,
    mut source: S,
    notifications: mpsc::Sender<ServerNotification>,
    requests: mpsc::UnboundedSender<ServerRequest>,
) {
    loop {
        let line = match source.recv().await {
            Ok(Some(line)) => line,
            Ok(None) => {
                let ended_by_host = shared.lock().stop_writing;
                if !ended_by_host {
                    let status = shared
                        .peer
                        .exit_status(EXIT_GRACE)
                        .await
                        .unwrap_or_else(|| "closed its output but is still running".into());
                    shared.close(Error::ServerExited {
                        status,
                        stderr: shared.peer.stderr_tail(),
                    });
                }
                break;
            }
            Err(e @ TransportError::MessageTooLarge { .. }) => {
                shared.close(Error::Transport(e));
                break;
            }
            Err(e) => {
                shared.close(Error::Transport(e));
                break;
            }
        };
        if let Some(tap) = &shared.tap {
            tap.received(&line);
        }
        let msg = match Incoming::parse(line) {
            Ok(msg) => msg,
            Err(e) => {
                let reason = e.to_string();
                log_notices(&shared, vec![Notice::SkippedLine { reason }]);
                continue;
            }
        };
        let (event, notices) = shared.write_with(|st| {
            let event = st.conn.handle(msg, SystemTime::now(), &mut st.out);
            if let Event::Response { .. } = &event {
                st.answered = st.answered.saturating_add(1);
            }
            if let Event::Progress { id, progress } = &event {
                if let Some(w) = st.conn.waiter_mut(*id) {
                    if let Some(tx) = &w.progress {
                        let _ = tx.send(progress.clone());
                        // Progress restarts the timeout, up to the hard limit.
                        if let Some(c) = &mut w.clock {
                            c.deadline = (Instant::now() + c.timeout).min(c.hard_limit);
                        }
                    }
                }
            }
            (event, st.conn.take_notices())
        });
        if !notices.is_empty() {
            log_notices(&shared, notices);
        }
        match event {
            Event::Response {
                waiter,
                outcome,
                method,
                ..
            } => {
                let result = outcome.map_err(|e| match e {
                    capable_core::ResponseError::Rpc(error) => Error::Rpc { method, error },
                    capable_core::ResponseError::Violation(v) => {
                        shared.events.violation(v.clone());
                        Error::Violation(v)
                    }
                });
                let _ = waiter.tx.send(result);
            }
            Event::Notification { method, params } => {
                let params = params.decode_or_default::<Value>().unwrap_or(Value::Null);
                let notification = ServerNotification { method, params };
                let Some(notification) = route_to_listener(&shared, notification) else {
                    continue;
                };
                if notification.method == "notifications/resources/updated" {
                    if let Some(uri) = notification.params.get("uri").and_then(Value::as_str) {
                        shared.events.resource_updated(uri.to_owned());
                    }
                }
                if notifications.try_send(notification).is_err() {
                    shared.lock().dropped_notifications += 1;
                }
            }
            Event::ServerRequest { id, method, params } => {
                let params = params.decode_or_default::<Value>().unwrap_or(Value::Null);
                let _ = requests.send(ServerRequest { id, method, params });
            }
            Event::Progress { .. } | Event::Handled => {}
        }
    }
}
