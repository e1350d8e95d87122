//! The ready session: the host's handle on a negotiated connection.
//!
//! A [`Session`] exists only after a successful handshake, so a host cannot issue a
//! request before the server answered. Every method passes the gating table first: a
//! method the server did not declare fails with [`Error::Refused`] and nothing is sent.
//!
//! | file | concern |
//! |---|---|
//! | `exchange.rs` | one request and its answer: gate, send, wait, route, cancel on drop |
//! | `input_required.rs` | modern `input_required` results answered by the host's handlers |
//! | `methods.rs` | the typed methods (`read_resource`, `call_tool`, lists, …) |
//! | `listener.rs` | `subscriptions/listen` streams |
//! | `catalog.rs` | the tools the session knows: output schemas, task support |
//! | `tasks.rs` | tool calls that run as tasks: start, poll, await, cancel |
//! | `skills.rs` | the skills extension: list, load and verify skills |

mod catalog;
mod exchange;
mod input_required;
mod listener;
mod methods;
mod skills;
mod tasks;

use std::process::ExitStatus;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable_core::{Era, Method, Negotiated, ProtocolVersion, ServerCapabilities, Violation};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::driver::Driver;
use crate::error::Error;
use crate::events::ServerNotification;
use crate::options::ClientOptions;

pub use exchange::{ProgressCallback, RequestOptions};
pub use input_required::MAX_INPUT_ROUNDS;
pub use listener::{ListenEvent, Listener};
pub use skills::LoadedSkill;
pub use tasks::{TaskObserver, TaskWait, ToolCall};

/// A negotiated connection to one MCP server.
pub struct Session {
    shared: Arc<Driver>,
    negotiated: Negotiated,
    options: ClientOptions,
    notifications: Mutex<Option<mpsc::Receiver<ServerNotification>>>,
    reader: JoinHandle<()>,
    writer: Option<JoinHandle<()>>,
    catalog: Mutex<catalog::Catalog>,
}

impl Session {
    pub(crate) fn new(
        shared: Arc<Driver>,
        negotiated: Negotiated,
        options: ClientOptions,
        notifications: mpsc::Receiver<ServerNotification>,
        reader: JoinHandle<()>,
        writer: JoinHandle<()>,
    ) -> Session {
        let mut catalog = catalog::Catalog::default();
        catalog.learn(&options.known_tools);
        Session {
            shared,
            negotiated,
            options,
            notifications: Mutex::new(Some(notifications)),
            reader,
            writer: Some(writer),
            catalog: Mutex::new(catalog),
        }
    }

    /// What another client needs to take this session up ([`crate::Resumption`]): a
    /// legacy Streamable HTTP session's id and what its handshake settled; `None` for
    /// stdio, HTTP+SSE, a 2026-07-28 connection, or a server that gave no session id.
    pub fn resumption(&self) -> Option<crate::Resumption> {
        if self.era() != Era::Legacy {
            return None;
        }
        let session_id = self.shared.peer.session_id()?;
        Some(crate::Resumption {
            session_id,
            version: self.negotiated.version.as_str().to_owned(),
            server_info: serde_json::to_value(&self.negotiated.server_info).unwrap_or_default(),
            capabilities: serde_json::Value::Object(self.negotiated.capabilities.raw().clone()),
        })
    }

    /// A legacy HTTP session held by other clients too
    /// ([`ClientOptions::with_shared_session`](crate::ClientOptions::with_shared_session)): opens its standalone stream (`true`),
    /// on which the server sends what belongs to no request — updates of subscribed
    /// resources, list changes, log lines, its own questions — or closes it (`false`),
    /// leaving it to whichever client opens it next. Reopened when it breaks, as ever,
    /// while it is wanted. Nothing for any other session.
    pub fn set_standalone_stream(&self, open: bool) {
        self.shared.peer.standalone(open);
    }

    /// What the handshake settled.
    pub fn negotiated(&self) -> &Negotiated {
        &self.negotiated
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.negotiated.version
    }

    /// The era of the negotiated version. Keep it as the server's
    /// [era hint](capable_core::ClientConfig::era_hint) for the next connection.
    pub fn era(&self) -> Era {
        self.negotiated.era()
    }

    /// `serverInfo`.
    pub fn server_info(&self) -> &capable_core::model::Implementation {
        &self.negotiated.server_info
    }

    /// The server's capabilities, exactly as declared.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.negotiated.capabilities
    }

    /// The server's `instructions`.
    pub fn instructions(&self) -> Option<&str> {
        self.negotiated.instructions.as_deref()
    }

    /// What the server declared and what a host may therefore call, as one JSON object
    /// (`capable inspect --json` prints it): `era`, `protocolVersion`, `serverInfo`,
    /// `capabilities` exactly as declared, their `extensions`, the `actions` of the
    /// gating table and the `instructions`.
    pub fn description(&self) -> serde_json::Value {
        let capabilities = self.capabilities();
        serde_json::json!({
            "era": self.era().as_str(),
            "protocolVersion": self.protocol_version(),
            "serverInfo": self.server_info(),
            "capabilities": capabilities,
            "extensions": capabilities.extensions().cloned().unwrap_or_default(),
            "actions": self.actions(),
            "instructions": self.instructions(),
        })
    }

    /// The methods the host may call (derived from the gating table; methods the
    /// server refused despite declaring them are left out).
    pub fn actions(&self) -> Vec<Method> {
        self.shared.lock().conn.actions()
    }

    /// Whether `method` may be called now. The same check every request passes.
    pub fn check(&self, method: Method) -> Result<(), Error> {
        self.gate(method).map_err(Error::Refused)
    }

    /// [`Session::check`], as the core words a refusal.
    pub(crate) fn gate(&self, method: Method) -> Result<(), capable_core::Refusal> {
        self.shared.lock().conn.check(method)
    }

    /// Contract violations recorded in this session.
    pub fn violations(&self) -> Vec<Violation> {
        self.shared.lock().conn.violations().to_vec()
    }

    /// Lower-severity records of this session, oldest first (the last
    /// [`NOTICE_LOG`](crate::events::NOTICE_LOG)): notifications the server sent
    /// without declaring them, skipped lines, late responses, tools dropped for
    /// invalid `x-mcp-header` annotations, …
    pub fn notices(&self) -> Vec<capable_core::Notice> {
        self.shared.events.notices()
    }

    /// A new observer of this session's [events](crate::events): violations, notices,
    /// legacy resource updates, and the end of the session. Events from before the call
    /// are not replayed (the logs keep them).
    ///
    /// ```no_run
    /// # async fn f(session: &capable::Session) {
    /// use capable::SessionEvent;
    /// let mut events = session.events();
    /// while let Ok(event) = events.recv().await {
    ///     match event {
    ///         SessionEvent::Violation(v) => eprintln!("{v}: {}", v.response),
    ///         SessionEvent::Closed(why) => { eprintln!("session ended: {why}"); break }
    ///         _ => {}
    ///     }
    /// }
    /// # }
    /// ```
    pub fn events(&self) -> tokio::sync::broadcast::Receiver<crate::events::SessionEvent> {
        self.shared.events.subscribe()
    }

    /// Records a notice the shell found (a watch that capped a server's TTL, …).
    pub(crate) fn record_notice(&self, notice: capable_core::Notice) {
        self.shared.events.notice(notice);
    }

    /// Drops every cached result (lists, reads, discover), so that the next request
    /// of each asks the server.
    pub fn clear_cache(&self) {
        self.shared.lock().conn.cache_mut().clear();
    }

    /// Drops the cached results of one method (every page of a list, every read).
    pub fn invalidate_cache(&self, method: Method) {
        self.shared.lock().conn.cache_mut().invalidate(method);
    }

    /// What the server wrote to stderr, bounded: its first lines and its last, with
    /// `… N lines left out …` where some fell between, and the line that names its
    /// error kept in its place ([`capable_core::internal::stderr::StderrLog`]); secrets scrubbed.
    pub fn stderr_tail(&self) -> String {
        self.shared.peer.stderr_tail()
    }

    /// Each line the server writes to stderr from now on, live (secrets scrubbed, as in
    /// [`Session::stderr_tail`], which keeps the lines written before). A follower
    /// that falls more than 32 lines behind misses the oldest of them
    /// (`RecvError::Lagged`). `None` for a server that is no process of ours (HTTP).
    ///
    /// The channel closes when the server's stderr reaches its end (it exited, and
    /// nothing of its group holds the pipe any more).
    ///
    /// ```no_run
    /// use tokio::sync::broadcast::error::RecvError;
    /// # async fn run(session: capable::Session) {
    /// if let Some(mut lines) = session.stderr_lines() {
    ///     loop {
    ///         match lines.recv().await {
    ///             Ok(line) => eprintln!("server: {line}"),
    ///             Err(RecvError::Lagged(missed)) => eprintln!("({missed} lines missed)"),
    ///             Err(RecvError::Closed) => break,
    ///         }
    ///     }
    /// }
    /// # }
    /// ```
    pub fn stderr_lines(&self) -> Option<tokio::sync::broadcast::Receiver<std::sync::Arc<str>>> {
        self.shared.peer.stderr_lines()
    }

    /// The server's process id, which is also the id of its process group (every
    /// process it starts stays in it unless it moves itself out; [`Session::close`]
    /// ends the whole group). `None` for a server that is no process of ours (HTTP).
    pub fn server_process_id(&self) -> Option<u32> {
        self.shared.peer.process_id()
    }

    /// The server's notifications, as a stream. Can be taken once; while nobody takes
    /// it, notifications beyond the buffer are dropped (memory stays bounded) and
    /// counted ([`Session::dropped_notifications`]).
    pub fn notifications(&self) -> Option<mpsc::Receiver<ServerNotification>> {
        self.notifications.lock().ok()?.take()
    }

    /// How many server notifications were dropped because nobody took them in time
    /// (the notification stream or a listener was full).
    pub fn dropped_notifications(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// The options this session was opened with.
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// Closes the session: fails anything in flight, closes the server's input, waits
    /// for it to exit (then SIGTERM, then SIGKILL, to its whole process group).
    /// Returns how the server exited (`None` for a server that is no process of ours,
    /// or one that could not be reaped).
    pub async fn close(mut self) -> Option<ExitStatus> {
        self.shared.close(Error::Closed);
        if let Some(writer) = self.writer.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
        }
        let status = self.shared.peer.shutdown().await;
        self.reader.abort();
        status
    }
}

impl Session {
    /// Why the session ended, once it did (`None` while it is open).
    pub(crate) fn ended(&self) -> Option<Error> {
        self.shared.lock().closed.clone()
    }

    /// [`Session::close`] for a session others may still hold (a
    /// [`Host`](crate::host::Host) shares its sessions): what is in flight fails, the
    /// server is shut down the same way, its whole process group included.
    pub(crate) async fn close_shared(&self) -> Option<ExitStatus> {
        self.shared.close(Error::Closed);
        let status = self.shared.peer.shutdown().await;
        self.reader.abort();
        status
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.shared.close(Error::Closed);
        self.reader.abort();
    }
}
