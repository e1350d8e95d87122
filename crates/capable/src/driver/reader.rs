//! The reader task: reads each message, lets the connection route it (at the moment
//! it arrived), and wakes whoever waits — a request's caller, the host's notification
//! stream, a listener, the input task. A failure of one request in the transport (an
//! HTTP status without a JSON-RPC answer) fails that request only; the end of the
//! server's output ends the session with how the server exited.
//!
//! A transport that receives on tasks of its own (HTTP: each exchange's) is offered
//! the same handling as an [`Inlet`] and does it from there, item by item; the reader
//! task then only reads what the transport still queues.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use capable_core::internal::jsonrpc::{value_budget, within_value_budget, FramingError};
use capable_core::{Event, Incoming, Notice, Notification, RequestId, ResponseError};
use tokio::sync::mpsc;

use crate::error::Error;
use crate::events::ServerNotification;
use crate::transport::shortcut::{Inlet, Sealed};
use crate::transport::{Inbound, MessageSource, Peer, TransportError};

use super::{listen, Answer, Driver, Input, ServerRequest};

/// How long a server whose pipe ended may take to exit before the client stops waiting
/// for its exit status.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Why the session ended when the server's output did (or writing to it failed with
/// `failure`): how the server exited and its last words, when it exited within
/// [`EXIT_GRACE`]; else the transport's failure, or "still running".
pub(crate) async fn ended(peer: &dyn Peer, failure: Option<TransportError>) -> Error {
    match (peer.exit_status(EXIT_GRACE).await, failure) {
        (None, Some(e)) => Error::Transport(e),
        (status, _) => Error::ServerExited {
            status,
            stderr: peer.stderr_tail(),
        },
    }
}

pub(crate) async fn run_reader<S: MessageSource>(
    shared: Arc<Driver>,
    mut source: S,
    notifications: mpsc::Sender<ServerNotification>,
    requests: mpsc::UnboundedSender<Input>,
) {
    let to = Senders {
        notifications,
        requests,
    };
    // A source that reads on tasks of its own hands messages over from there; what
    // still comes through `recv` is read here as usual.
    let intake = Intake {
        shared: Arc::downgrade(&shared),
        to: to.clone(),
    };
    source.attach(Arc::new(intake), Sealed(()));
    loop {
        let flow = match source.recv().await {
            Ok(Some(Inbound::Message(line))) => on_message(&shared, line, None, &to),
            Ok(Some(other)) => take(&shared, Ok(other), &to),
            Ok(None) => {
                if !shared.lock().conn.is_closed() {
                    let reason = ended(&*shared.peer, None).await;
                    shared.close(reason);
                }
                break;
            }
            Err(e) => take(&shared, Err(e), &to),
        };
        if let Flow::Stop = flow {
            break;
        }
    }
}

/// Whoever waits for what the reader takes apart: the host's notification stream and
/// the task that answers server requests.
#[derive(Clone)]
pub(crate) struct Senders {
    notifications: mpsc::Sender<ServerNotification>,
    requests: mpsc::UnboundedSender<Input>,
}

/// Whether more is wanted after an item.
enum Flow {
    Go,
    /// The session ended: nothing after this is read.
    Stop,
}

/// The reader's [`Inlet`], for a source's own tasks: what the reader task would do
/// with each item, done by the task that has it.
struct Intake {
    /// Weak: the transport holding this is itself held by the session.
    shared: std::sync::Weak<Driver>,
    to: Senders,
}

impl Inlet for Intake {
    fn deliver(&self, item: Result<Inbound, TransportError>) -> bool {
        match self.shared.upgrade() {
            Some(shared) => matches!(take(&shared, item, &self.to), Flow::Go),
            None => false,
        }
    }
}

/// One item from the transport, handled: a message routed (and its waiter woken), a
/// failure of one request or the whole transport, a notice.
fn take(shared: &Driver, item: Result<Inbound, TransportError>, to: &Senders) -> Flow {
    match item {
        Ok(Inbound::Message(line)) => on_message(shared, line, None, to),
        Ok(Inbound::Related { message, related }) => on_message(shared, message, Some(related), to),
        Ok(Inbound::Unterminated(line)) => match Incoming::parse(line.clone()) {
            Ok(_) => on_message(shared, line, None, to),
            Err(_) => {
                log_notices(shared, vec![cut_off(&line)]);
                Flow::Go
            }
        },
        Ok(Inbound::Failed { id, error }) => {
            fail_one(shared, &id, error);
            Flow::Go
        }
        Ok(Inbound::Notice(notice)) => {
            log_notices(shared, vec![notice]);
            Flow::Go
        }
        Err(e) => {
            shared.close(Error::Transport(e));
            Flow::Stop
        }
    }
}

/// One message: shown to the tap, held to the value budget, routed; `related`, the
/// client's request on whose stream it came (see [`Inbound::Related`]).
fn on_message(
    shared: &Driver,
    line: bytes::Bytes,
    related: Option<RequestId>,
    to: &Senders,
) -> Flow {
    if let Some(tap) = &shared.tap {
        tap.received(&line);
    }
    if let Err(values) = within_value_budget(&line, shared.max_message_size) {
        let limit = value_budget(shared.max_message_size);
        shared.close(Error::Transport(TransportError::TooManyValues {
            values,
            limit,
        }));
        return Flow::Stop;
    }
    on_line(shared, line, related, &to.notifications, &to.requests);
    Flow::Go
}

/// The notice for the half message a server left as it stopped writing.
pub(crate) fn cut_off(line: &[u8]) -> Notice {
    Notice::SkippedLine {
        reason: format!(
            "the server's output ended in the middle of a message ({} written)",
            capable_core::internal::text::size(line.len())
        ),
    }
}

/// One received line: parsed just far enough to route it, then handed to whoever waits.
/// A batch (2025-03-26 lets a server send one) is taken apart into its messages; in a
/// version without batches, each answer in it fails the request it names.
fn on_line(
    shared: &Driver,
    line: bytes::Bytes,
    related: Option<RequestId>,
    notifications: &mpsc::Sender<ServerNotification>,
    requests: &mpsc::UnboundedSender<Input>,
) {
    // A result in the usual layout (nearly every message) goes straight to its
    // caller, the line moved into it rather than shared with what follows here.
    let line = match Incoming::result_by_shape(line) {
        Ok((id, result)) => return answer(shared, &id, result),
        Err(line) => line,
    };
    let parsed = Incoming::parse_whole(line.clone());
    if let Err(FramingError::Batch) = &parsed {
        // How each message of the batch reads is the connection's to say.
        let (messages, notices) = {
            let mut st = shared.lock();
            let messages = st.conn.unbatch(&line);
            (messages, st.conn.take_notices())
        };
        if !notices.is_empty() {
            log_notices(shared, notices);
        }
        for (message, parsed) in messages {
            let related = related.clone();
            dispatch(shared, message, parsed, related, notifications, requests);
        }
        return;
    }
    dispatch(shared, line, parsed, related, notifications, requests);
}

fn dispatch(
    shared: &Driver,
    line: bytes::Bytes,
    parsed: Result<Incoming, FramingError>,
    related: Option<RequestId>,
    notifications: &mpsc::Sender<ServerNotification>,
    requests: &mpsc::UnboundedSender<Input>,
) {
    let parsed = match parsed {
        Ok(Incoming::Result { id, result }) => return answer(shared, &id, result),
        other => other,
    };
    let now = super::now();
    let (event, notices, waker) = shared.write_with(|st| {
        let event = match parsed {
            Ok(msg) => st.conn.handle_on(msg, related, now, &mut st.out),
            Err(e) => st.conn.handle_unreadable(&line, &e),
        };
        let (event, waker) = match event {
            Event::Response {
                waiter,
                outcome,
                method,
                ..
            } => {
                st.answered = st.answered.saturating_add(1);
                // A violation is also an event for observers, once the lock is released.
                let violation = match &outcome {
                    Err(ResponseError::Violation(v)) => Some(v.clone()),
                    _ => None,
                };
                let outcome = match outcome {
                    Ok(payload) => Ok(Answer {
                        payload,
                        arrived: now.wall,
                    }),
                    Err(ResponseError::Violation(v)) => Err(Error::Violation(v)),
                    Err(ResponseError::Rpc(error)) => Err(Error::Rpc { method, error }),
                    Err(other) => Err(Error::MalformedResult {
                        method,
                        detail: other.to_string(),
                    }),
                };
                (Dispatched::Answered(violation), st.finish(waiter, outcome))
            }
            Event::Progress { id, progress } => {
                if let Some(tx) = st.conn.waiter_mut(id).and_then(|w| w.progress.as_ref()) {
                    let _ = tx.send(progress);
                }
                (Dispatched::Answered(None), None)
            }
            Event::ListenEnded { id, waiter, reason } => {
                st.listeners.remove(&id);
                let ended = Err(Error::ListenEnded { reason });
                (Dispatched::Answered(None), st.finish(waiter, ended))
            }
            Event::Handled => (Dispatched::Answered(None), None),
            other => {
                // A question about a request of ours: that request's tag, read while it
                // is in flight (under the lock that holds its waiter).
                let tag = match &other {
                    Event::ServerRequest {
                        related: Some(RequestId::Number(about)),
                        ..
                    } => st.conn.waiter_mut(*about).and_then(|w| w.tag),
                    _ => None,
                };
                (Dispatched::Other(Box::new(other), tag), None)
            }
        };
        (event, st.conn.take_notices(), waker)
    });
    if let Some(waker) = waker {
        waker.wake();
    }
    if !notices.is_empty() {
        log_notices(shared, notices);
    }
    let event = match event {
        Dispatched::Answered(Some(violation)) => return shared.events.violation(violation),
        Dispatched::Answered(None) => return,
        Dispatched::Other(event, tag) => (*event, tag),
    };
    match event {
        (Event::Listen { id, item }, _) => listen::deliver(shared, id, item),
        (
            Event::Notification {
                notification: kind,
                method,
                params,
            },
            _,
        ) => {
            let params = listen::params_of(&params);
            let notification = ServerNotification {
                kind,
                method,
                params,
            };
            match &notification.kind {
                Notification::ResourceUpdated { uri } => {
                    shared.events.resource_updated(uri.clone())
                }
                // The server gave up a request of its own: its handler is dropped.
                Notification::Cancelled { request_id, .. } => {
                    let _ = requests.send(Input::Withdrawn(request_id.clone()));
                }
                _ => {}
            }
            if notifications.try_send(notification).is_err() {
                shared.dropped_notification();
            }
        }
        (
            Event::ServerRequest {
                id,
                kind,
                method,
                params,
                related,
            },
            tag,
        ) => {
            let params = listen::params_of(&params);
            let related = crate::input::Related { id: related, tag };
            let request = ServerRequest {
                id,
                kind,
                method,
                params,
                related,
            };
            let _ = requests.send(Input::Request(Box::new(request)));
        }
        _ => {}
    }
}

/// A result (nearly every message): handed to the caller of the request it answers.
/// Only the result and its waiter move, not a whole message and event; and the lock
/// is taken plainly, since routing a result queues nothing to write and arms no
/// deadline. The wall clock is read for every answer (when it arrived is part of a
/// read); the monotonic one only for an answer the cache keeps.
fn answer(shared: &Driver, id: &RequestId, result: capable_core::Payload) {
    let arrived = SystemTime::now();
    let (notices, waker) = {
        let mut st = shared.lock();
        let now = || super::now_at(arrived);
        let waker = match st.conn.handle_result(id, result, now) {
            Some(answered) => {
                st.answered = st.answered.saturating_add(1);
                let answer = Answer {
                    payload: answered.result,
                    arrived,
                };
                st.finish(answered.waiter, Ok(answer))
            }
            None => None,
        };
        (st.conn.take_notices(), waker)
    };
    if let Some(waker) = waker {
        waker.wake();
    }
    if !notices.is_empty() {
        log_notices(shared, notices);
    }
}

/// What is left to do for a message once the lock is released.
enum Dispatched {
    /// A response (its outcome already with its caller) or progress; a contract
    /// violation to report.
    Answered(Option<Box<capable_core::Violation>>),
    /// A notification or a server request (boxed: responses, the common case, move
    /// a small value out of the lock, not a whole event), and the tag of the request
    /// of ours a server request is about.
    Other(Box<Event<super::Waiter>>, Option<u64>),
}

/// The transport failed one request: its waiter fails with `error`; the session goes on.
fn fail_one(shared: &Driver, id: &RequestId, error: Error) {
    let RequestId::Number(n) = id else { return };
    let waker = {
        let mut st = shared.lock();
        st.listeners.remove(n);
        st.conn.forget(*n).and_then(|w| st.finish(w, Err(error)))
    };
    if let Some(w) = waker {
        w.wake();
    }
}

fn log_notices(shared: &Driver, notices: Vec<Notice>) {
    for n in notices {
        shared.events.notice(n);
    }
}
