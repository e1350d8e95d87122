//! Session events: what happened on a connection that is not the answer to a request.
//!
//! Every [`Session`](crate::Session) keeps
//! - a **violation log** ([`Session::violations`](crate::Session::violations)): each
//!   contract violation (a declared capability's method answered with -32601), with
//!   both messages, the server's name and version, the negotiated version and the time;
//! - a **notice log** ([`Session::notices`](crate::Session::notices)): lower-severity
//!   records such as [`Notice::UndeclaredNotification`] (a `list_changed` the server
//!   did not declare, a `resources/updated` for a URI nobody subscribed to), skipped
//!   lines and late responses. The last [`NOTICE_LOG`] notices are kept;
//! - an **event stream** ([`Session::events`](crate::Session::events)): a broadcast of
//!   [`SessionEvent`]s, so any number of observers (a watch, a UI, an audit) can follow
//!   violations, notices, legacy resource updates and the end of the session without
//!   taking the one [`notifications`](crate::Session::notifications) stream. A slow
//!   observer loses the oldest events (tokio's `RecvError::Lagged`), never blocks the
//!   connection.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use capable_core::{Notice, Notification, Violation};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::error::Error;

/// How many notices a session keeps.
pub const NOTICE_LOG: usize = 256;

/// How many events an observer may fall behind before it loses the oldest.
const EVENT_CAPACITY: usize = 256;

/// A notification from the server, as the host receives it from
/// [`Session::notifications`](crate::Session::notifications): read into the core's
/// typed [`Notification`] (match on [`kind`](ServerNotification::kind), never on the
/// method's name), and as it was sent.
///
/// ```no_run
/// # async fn f(session: &capable::Session) {
/// use capable::internal::Notification;
/// let mut notifications = session.notifications().expect("taken once");
/// while let Some(n) = notifications.recv().await {
///     match n.kind {
///         Notification::ToolsListChanged => println!("the tools changed"),
///         Notification::Message(log) => println!("[{}] {}", log.level, log.data),
///         _ => println!("{} {}", n.method, n.params),
///     }
/// }
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ServerNotification {
    /// What it says, typed by its method.
    pub kind: Notification,
    /// Its method as sent (`notifications/resources/updated`, …).
    pub method: String,
    /// Its params as sent (`null` when absent).
    pub params: Value,
}

impl ServerNotification {
    /// A notification whose params are already JSON (one the handshake kept).
    pub(crate) fn from_value(method: String, params: Value) -> ServerNotification {
        ServerNotification {
            kind: Notification::from_value(&method, &params),
            method,
            params,
        }
    }
}

/// Something that happened on a session.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum SessionEvent {
    /// The server declared a capability and then answered its method with -32601. The
    /// method is marked broken for the session and never sent again.
    Violation(Box<Violation>),
    /// A lower-severity record (an undeclared notification, a skipped line, …).
    Notice(Box<Notice>),
    /// Legacy `notifications/resources/updated` (modern updates arrive on their
    /// [`Listener`](crate::Listener) instead).
    ResourceUpdated {
        /// The URI the server named (possibly a sub-resource of the subscribed one).
        uri: String,
    },
    /// The session ended (closed by the host, the server exited, the transport failed).
    Closed(Box<Error>),
}

/// How many notices of one kind are logged (`tracing`) per session; the rest are kept
/// in the notice log and sent to observers, not logged: a server that sends 200,000
/// bad messages costs a few log lines, not megabytes.
pub const LOGGED_PER_KIND: u32 = 5;

/// The event stream and the notice log of one session.
pub(crate) struct EventLog {
    /// Made when the first observer subscribes: its slots cost memory (a few dozen KiB)
    /// that a session nobody observes need not hold, and an event sent before any
    /// observer reaches none either way.
    tx: std::sync::OnceLock<broadcast::Sender<SessionEvent>>,
    notices: Mutex<VecDeque<Notice>>,
    logged: Mutex<HashMap<std::mem::Discriminant<Notice>, u32>>,
}

impl EventLog {
    pub(crate) fn new() -> EventLog {
        EventLog {
            tx: std::sync::OnceLock::new(),
            notices: Mutex::new(VecDeque::new()),
            logged: Mutex::new(HashMap::new()),
        }
    }

    /// Logs a notice as one line (a server's words in it escaped), at most
    /// [`LOGGED_PER_KIND`] of each kind.
    fn log(&self, n: &Notice) {
        let count = match self.logged.lock() {
            Ok(mut logged) => {
                let count = logged.entry(std::mem::discriminant(n)).or_insert(0);
                *count = count.saturating_add(1);
                *count
            }
            Err(_) => 1,
        };
        if count > LOGGED_PER_KIND + 1 {
            return;
        }
        let text = capable_core::internal::text::printable(&n.to_string(), false).into_owned();
        if count == LOGGED_PER_KIND + 1 {
            tracing::warn!("{text} (more notices like this one are kept in the session's notice log, not logged)");
        } else if n.is_informational() {
            tracing::info!("{text}");
        } else {
            tracing::warn!("{text}");
        }
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<SessionEvent> {
        self.tx
            .get_or_init(|| broadcast::channel(EVENT_CAPACITY).0)
            .subscribe()
    }

    fn send(&self, event: SessionEvent) {
        // No observer is fine: the logs keep what matters.
        if let Some(tx) = self.tx.get() {
            let _ = tx.send(event);
        }
    }

    pub(crate) fn violation(&self, v: Box<Violation>) {
        self.send(SessionEvent::Violation(v));
    }

    pub(crate) fn notice(&self, n: Notice) {
        self.log(&n);
        if let Ok(mut log) = self.notices.lock() {
            if log.len() == NOTICE_LOG {
                log.pop_front();
            }
            log.push_back(n.clone());
        }
        self.send(SessionEvent::Notice(Box::new(n)));
    }

    pub(crate) fn resource_updated(&self, uri: String) {
        self.send(SessionEvent::ResourceUpdated { uri });
    }

    pub(crate) fn closed(&self, reason: Error) {
        self.send(SessionEvent::Closed(Box::new(reason)));
    }

    pub(crate) fn notices(&self) -> Vec<Notice> {
        self.notices
            .lock()
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default()
    }
}
