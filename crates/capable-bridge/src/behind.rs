//! The one server behind a bridge: its session while it is up, and the rule that
//! brings it back when it goes away — the core's ([`capable::internal::restart`]): a
//! crash, a broken connection or a timeout is retried after a doubling delay with
//! jitter, a bounded number of times in a row; a refused version, a violation or a
//! refused authorization is not. The host keeps its own session with the bridge all
//! along: while the server is down its requests fail with why; once it is back they
//! reach the new one.
//!
//! What it waits for — the session's notifications and events, a restart's delay and
//! its connection — is set going on the relay's queue (`relay/events.rs`) and comes
//! back as [`Change`]s; while it is replaced, the old session's are stopped.

use std::sync::Arc;
use std::time::Instant;

use capable::events::{ServerNotification, SessionEvent};
use capable::internal::restart::{Decision, GiveUpReason, RestartPolicy, Restarts};
use capable::Session;
use futures_util::future::{AbortHandle, BoxFuture};
use futures_util::stream::{self, StreamExt};
use futures_util::FutureExt;
use serde_json::json;
use tokio::sync::broadcast;

use super::audit::Audit;
use crate::relay::{Event, Queue};
use crate::Unavailable;

/// Connects the server behind again, as it was connected the first time.
pub type Connect = Arc<dyn Fn() -> BoxFuture<'static, Result<Session, Unavailable>> + Send + Sync>;

/// Something of the server behind to act on.
pub enum Change {
    /// A notification of the server's.
    Notification(ServerNotification),
    /// A violation, a notice, the session's end.
    Event(Result<SessionEvent, broadcast::error::RecvError>),
    /// The delay before a restart is over.
    Retry,
    /// A restart connected (or failed to).
    Connected(Box<Result<Session, Unavailable>>),
}

/// The server behind (see the module documentation).
pub struct Behind {
    name: Arc<str>,
    session: Arc<Session>,
    /// What stops following the session's notifications and events.
    following: Vec<AbortHandle>,
    connect: Connect,
    restarts: Restarts,
    audit: Arc<Audit>,
}

impl Behind {
    /// The server `name`, up as `session`; `connect` brings it back.
    pub fn new(name: &str, session: Session, connect: Connect, audit: Arc<Audit>) -> Behind {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut restarts = Restarts::new(RestartPolicy::default(), seed);
        restarts.ready(Instant::now());
        audit_ready(&audit, name, &session);
        Behind {
            name: name.into(),
            session: Arc::new(session),
            following: Vec::new(),
            connect,
            restarts,
            audit,
        }
    }

    /// Follows the session's notifications and events on `queue` (those of the session
    /// it replaced, if any, no longer).
    pub fn follow(&mut self, queue: &mut Queue) {
        for stop in self.following.drain(..) {
            stop.abort();
        }
        if let Some(mut notifications) = self.session.notifications() {
            let notified = stream::poll_fn(move |cx| notifications.poll_recv(cx))
                .map(|n| Event::Behind(Change::Notification(n)));
            let (notified, stop) = stream::abortable(notified);
            self.following.push(stop);
            queue.follow(notified.boxed());
        }
        // Its end (the session is gone) ends the stream.
        let events = stream::unfold(self.session.events(), |mut events| async move {
            match events.recv().await {
                Err(broadcast::error::RecvError::Closed) => None,
                event => Some((Event::Behind(Change::Event(event)), events)),
            }
        });
        let (events, stop) = stream::abortable(events);
        self.following.push(stop);
        queue.follow(events.boxed());
    }

    /// The server's session (a closed one while it is down).
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The session, for closing it.
    pub fn into_session(self) -> Arc<Session> {
        self.session
    }

    /// The server's name in the audit.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's name, shared (what a span keeps of it).
    pub fn shared_name(&self) -> &Arc<str> {
        &self.name
    }

    /// The session ended with `error`: restart it after a delay (on `queue`), or give
    /// up.
    pub fn ended(&mut self, error: capable::Error, queue: &mut Queue) {
        let failure = error.failure();
        self.audit.state(
            &self.name,
            "closed",
            json!({"kind": error.kind().as_str(), "error": error.to_string()}),
        );
        self.decide(failure, queue);
    }

    /// The delay is over: connect again (on `queue`).
    pub fn retry(&mut self, queue: &mut Queue) {
        let connecting = (self.connect)();
        queue.push(connecting.map(|c| Event::Behind(Change::Connected(Box::new(c)))));
    }

    /// A restart connected: the new session replaces the old one (returned, to be
    /// closed), followed on `queue`. Or it failed: decided again.
    pub fn connected(
        &mut self,
        connected: Result<Session, Unavailable>,
        queue: &mut Queue,
    ) -> Option<Arc<Session>> {
        match connected {
            Ok(session) => {
                self.restarts.ready(Instant::now());
                audit_ready(&self.audit, &self.name, &session);
                let old = std::mem::replace(&mut self.session, Arc::new(session));
                self.follow(queue);
                Some(old)
            }
            Err(e) => {
                let failure = e.failure();
                self.audit.state(
                    &self.name,
                    "failed",
                    json!({"kind": e.name(), "error": e.to_string()}),
                );
                self.decide(failure, queue);
                None
            }
        }
    }

    fn decide(&mut self, failure: capable::internal::restart::Failure, queue: &mut Queue) {
        match self.restarts.failed(Instant::now(), failure) {
            Decision::RetryAfter(delay) => {
                let at = capable::internal::time::deadline(Instant::now(), delay);
                let retry = tokio::time::sleep_until(at.into());
                queue.push(retry.map(|()| Event::Behind(Change::Retry)));
                self.audit.state(
                    &self.name,
                    "restarting",
                    json!({"attempt": self.restarts.attempts(), "delayMs": delay.as_millis() as u64}),
                );
            }
            Decision::GiveUp { attempts, why } => {
                let why = match why {
                    GiveUpReason::NotRetryable(f) => format!("{} is not retried", f.name()),
                    GiveUpReason::Exhausted { max_attempts } => {
                        format!("{max_attempts} restarts in a row failed")
                    }
                    _ => "given up".to_owned(),
                };
                self.audit.state(
                    &self.name,
                    "given_up",
                    json!({"attempts": attempts, "why": why}),
                );
            }
        }
    }
}

fn audit_ready(audit: &Audit, name: &str, session: &Session) {
    audit.state(
        name,
        "ready",
        json!({
            "era": session.era().as_str(),
            "protocolVersion": session.protocol_version(),
            "serverInfo": session.server_info(),
            "pid": session.server_process_id(),
        }),
    );
}
