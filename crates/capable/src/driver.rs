//! The machinery under a session: one reader task, one writer task, and the sans-IO
//! [`Connection`] between them behind a short-held lock.
//!
//! A request takes the lock, lets the connection gate it and append its line to the
//! outgoing buffer, and wakes the writer only if the buffer was empty. The writer swaps
//! the whole buffer out and sends it in one write: requests issued while a write is in
//! progress go out together in the next one. The reader parses each line just far
//! enough to route it and completes the waiting request's oneshot; the caller decodes
//! the result into the one type it expects.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use capable_core::model::ProgressParams;
use capable_core::{Connection, Event, Incoming, Notice, Payload, RequestId};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, Notify};

use crate::error::Error;
use crate::tap::Tap;
use crate::transport::{MessageSink, MessageSource, Peer, TransportError};

/// What a request waits on.
pub(crate) struct Waiter {
    pub(crate) tx: oneshot::Sender<Result<Payload, Error>>,
    pub(crate) progress: Option<mpsc::UnboundedSender<ProgressParams>>,
}

/// A notification from the server.
#[derive(Clone, Debug)]
pub struct ServerNotification {
    /// Its method (`notifications/resources/updated`, …).
    pub method: String,
    /// Its params (`null` when absent).
    pub params: Value,
}

/// A request from the server that the host handles (legacy era). Routed to the
/// host's input handlers once they are installed.
#[derive(Debug)]
#[allow(dead_code)]
pub(crate) struct ServerRequest {
    pub(crate) id: RequestId,
    pub(crate) method: String,
    pub(crate) params: Value,
}

pub(crate) struct State {
    pub(crate) conn: Connection<Waiter>,
    pub(crate) out: Vec<u8>,
    /// Set once: why the session ended. Requests fail with it from then on.
    pub(crate) closed: Option<Error>,
    /// The writer sends what is left, then drops the sink (closing stdin).
    pub(crate) stop_writing: bool,
    pub(crate) dropped_notifications: u64,
}

pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) write_ready: Notify,
    pub(crate) writer_done: Notify,
    pub(crate) peer: Box<dyn Peer>,
    pub(crate) tap: Option<Tap>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-update; the state is
        // still consistent enough to fail requests cleanly.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ends the session: every request in flight fails with `reason`.
    pub(crate) fn close(&self, reason: Error) {
        let waiters = {
            let mut st = self.lock();
            if st.closed.is_none() {
                st.closed = Some(reason.clone());
            }
            st.stop_writing = true;
            st.conn.drain()
        };
        self.write_ready.notify_one();
        for w in waiters {
            let _ = w.tx.send(Err(reason.clone()));
        }
    }
}

fn log_notices(notices: Vec<Notice>) {
    for n in notices {
        tracing::warn!("{n}");
    }
}

pub(crate) async fn run_writer<S: MessageSink>(shared: Arc<Shared>, mut sink: S) {
    let mut spare = Vec::with_capacity(64 * 1024);
    loop {
        let (batch, stop) = {
            let mut st = shared.lock();
            std::mem::swap(&mut st.out, &mut spare);
            (std::mem::take(&mut spare), st.stop_writing)
        };
        let mut batch = batch;
        if !batch.is_empty() {
            if let Some(tap) = &shared.tap {
                tap.sent(&batch);
            }
            if let Err(e) = sink.send(&batch).await {
                shared.close(Error::Transport(e));
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
                        .exit_status(std::time::Duration::from_secs(2))
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
                tracing::warn!(
                    "{}",
                    Notice::SkippedLine {
                        reason: e.to_string()
                    }
                );
                continue;
            }
        };
        let (event, wake, notices) = {
            let mut st = shared.lock();
            let st = &mut *st;
            let was_empty = st.out.is_empty();
            let event = st.conn.handle(msg, SystemTime::now(), &mut st.out);
            if let Event::Progress { id, progress } = &event {
                if let Some(tx) = st.conn.waiter_mut(*id).and_then(|w| w.progress.as_ref()) {
                    let _ = tx.send(progress.clone());
                }
            }
            (
                event,
                was_empty && !st.out.is_empty(),
                st.conn.take_notices(),
            )
        };
        if wake {
            shared.write_ready.notify_one();
        }
        if !notices.is_empty() {
            log_notices(notices);
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
                    capable_core::ResponseError::Violation(v) => Error::Violation(v),
                });
                let _ = waiter.tx.send(result);
            }
            Event::Notification { method, params } => {
                let params = params.decode_or_default::<Value>().unwrap_or(Value::Null);
                if notifications
                    .try_send(ServerNotification { method, params })
                    .is_err()
                {
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
