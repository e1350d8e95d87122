//! The one server behind a bridge: its session while it is up, and the rule that
//! brings it back when it goes away — the core's ([`capable::internal::restart`]): a
//! crash, a broken connection or a timeout is retried after a doubling delay with
//! jitter, a bounded number of times in a row; a refused version, a violation or a
//! refused authorization is not. The host keeps its own session with the bridge all
//! along: while the server is down its requests fail with why; once it is back they
//! reach the new one.

use std::sync::Arc;
use std::time::Instant;

use capable::events::{ServerNotification, SessionEvent};
use capable::internal::restart::{Decision, GiveUpReason, RestartPolicy, Restarts};
use capable::Session;
use futures_util::future::BoxFuture;
use serde_json::json;
use tokio::sync::{broadcast, mpsc};

use super::audit::Audit;
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
    name: String,
    session: Arc<Session>,
    notifications: Option<mpsc::Receiver<ServerNotification>>,
    events: broadcast::Receiver<SessionEvent>,
    connect: Connect,
    restarts: Restarts,
    retry_at: Option<Instant>,
    connecting: Option<BoxFuture<'static, Result<Session, Unavailable>>>,
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
            name: name.to_owned(),
            notifications: session.notifications(),
            events: session.events(),
            session: Arc::new(session),
            connect,
            restarts,
            retry_at: None,
            connecting: None,
            audit,
        }
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

    /// The next thing to act on (cancel-safe).
    pub async fn next(&mut self) -> Change {
        tokio::select! {
            Some(n) = recv(&mut self.notifications) => Change::Notification(n),
            event = self.events.recv() => Change::Event(event),
            () = super::relay::sleep_until(self.retry_at) => {
                self.retry_at = None;
                Change::Retry
            }
            connected = take_ready(&mut self.connecting) => Change::Connected(Box::new(connected)),
        }
    }

    /// The session ended with `error`: restart it after a delay, or give up.
    pub fn ended(&mut self, error: capable::Error) {
        let failure = error.failure();
        self.audit.state(
            &self.name,
            "closed",
            json!({"kind": error.kind().as_str(), "error": error.to_string()}),
        );
        self.decide(failure);
    }

    /// The delay is over: connect again.
    pub fn retry(&mut self) {
        self.connecting = Some((self.connect)());
    }

    /// A restart connected: the new session replaces the old one (returned, to be
    /// closed). Or it failed: decided again.
    pub fn connected(&mut self, connected: Result<Session, Unavailable>) -> Option<Arc<Session>> {
        match connected {
            Ok(session) => {
                self.restarts.ready(Instant::now());
                audit_ready(&self.audit, &self.name, &session);
                self.notifications = session.notifications();
                self.events = session.events();
                Some(std::mem::replace(&mut self.session, Arc::new(session)))
            }
            Err(e) => {
                let failure = e.failure();
                self.audit.state(
                    &self.name,
                    "failed",
                    json!({"kind": e.name(), "error": e.to_string()}),
                );
                self.decide(failure);
                None
            }
        }
    }

    fn decide(&mut self, failure: capable::internal::restart::Failure) {
        match self.restarts.failed(Instant::now(), failure) {
            Decision::RetryAfter(delay) => {
                self.retry_at = Some(capable::internal::time::deadline(Instant::now(), delay));
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

/// The next item of an optional channel; pending for ever without one.
pub async fn recv<T>(rx: &mut Option<mpsc::Receiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// The outcome of the future in `slot`, which is then emptied; pending for ever while
/// there is none (cancel-safe: the future stays in its slot until it is done).
pub async fn take_ready<T>(slot: &mut Option<BoxFuture<'static, T>>) -> T {
    match slot {
        Some(future) => {
            let done = future.await;
            *slot = None;
            done
        }
        None => std::future::pending().await,
    }
}
