//! One task per server: connect, read its lists, follow it, and when it goes down ask
//! the core's [`Restarts`] whether and when to start it again.
//!
//! The task owns the server's session while it runs; the host's calls borrow it
//! through the server's slot. When the session ends (the server crashed, the
//! transport broke, the host shuts down) the slot is emptied first, so no new call
//! reaches a dead session, then the session is closed: the server's whole process
//! group is shut down, also after a crash (a crashed wrapper's children do not
//! linger).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use capable_core::internal::restart::{Decision, GiveUpReason, Restarts};
use capable_core::{Era, Flag, ListenFilter, Method, NegotiationError};
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::catalog::{self, Fetched, ListKind, Lists};
use super::pins::judge;
use super::{HostEvent, OAuthProvider, ServerError, ServerState, ServerStatus, Shared};
use crate::config::ServerTarget;
use crate::error::Error;
use crate::events::{ServerNotification, SessionEvent};
use crate::options::ClientOptions;
use crate::session::{ListenEvent, Listener, Session};
use crate::transport::http::{HttpConfig, Url};
use capable_core::PinKind;

/// One server of a host.
pub(super) struct Server {
    pub(super) name: String,
    pub(super) slot: Mutex<Slot>,
    /// What to connect to, and with which options; `None` for a config entry that
    /// could not be used (it never runs).
    spec: Option<(ServerTarget, ClientOptions)>,
    /// The config entry's target it was made from (or why it could not be used): what a
    /// reload compares the new config with.
    pub(super) entry: Result<ServerTarget, crate::config::ConfigError>,
    /// Its task, while one runs.
    run: Mutex<Option<Run>>,
    /// Held by whoever stops or starts the task (a reconnect, a disconnect, the
    /// shutdown), so they run one at a time.
    pub(super) op: tokio::sync::Mutex<()>,
}

/// A running server task, and how to tell it to stop.
struct Run {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// What the host knows of a server right now.
pub(super) struct Slot {
    pub(super) status: ServerStatus,
    pub(super) lists: Lists,
    /// The ready session, shared with the calls in flight.
    pub(super) session: Option<Arc<Session>>,
}

impl Server {
    pub(super) fn new(
        name: &str,
        state: ServerState,
        spec: Option<(ServerTarget, ClientOptions)>,
        entry: Result<ServerTarget, crate::config::ConfigError>,
    ) -> Server {
        let mut status = ServerStatus::new(name);
        status.state = state;
        Server {
            name: name.to_owned(),
            slot: Mutex::new(Slot {
                status,
                lists: Lists::default(),
                session: None,
            }),
            spec,
            entry,
            run: Mutex::new(None),
            op: tokio::sync::Mutex::new(()),
        }
    }

    /// Whether it has a target to connect to.
    pub(super) fn has_target(&self) -> bool {
        self.spec.is_some()
    }

    /// Starts its task (the caller holds [`Server::op`] or just made the server).
    pub(super) fn start(self: &Arc<Self>, host: &Arc<Shared>) {
        let Some((target, options)) = self.spec.clone() else {
            return;
        };
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(supervise(
            host.clone(),
            self.clone(),
            target,
            options,
            stopped,
        ));
        let old = self
            .run
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(Run { stop, task });
        debug_assert!(old.is_none(), "a server runs one task at a time");
    }

    /// Tells its task to stop, without waiting (a host being dropped).
    pub(super) fn tell_stop(&self) {
        if let Some(run) = self.run.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            let _ = run.stop.send(true);
        }
    }

    /// Stops its task and waits for it: the session closed in order, or after
    /// `timeout` the task aborted and the session dropped, which kills the server.
    /// Either way it is out of the merged view afterwards.
    pub(super) async fn stop(&self, host: &Shared, timeout: Duration) {
        let run = self.run.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(Run { stop, mut task }) = run else {
            return;
        };
        let _ = stop.send(true);
        if tokio::time::timeout(timeout, &mut task).await.is_err() {
            task.abort();
            let _ = task.await;
        }
        // An aborted task left its session here.
        if self.slot().session.is_some() {
            self.went_down(host);
        }
    }

    pub(super) fn slot(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn set_state(&self, host: &Shared, state: ServerState) {
        self.slot().status.state = state.clone();
        host.emit(HostEvent::State {
            server: self.name.clone(),
            state,
        });
    }

    /// The session is ready and its lists read: into the merged view, then `Ready`.
    fn came_up(
        &self,
        host: &Shared,
        session: &Arc<Session>,
        handshake: Duration,
        fetched: Vec<(ListKind, Option<Result<Fetched, Error>>)>,
    ) {
        let mut events = Vec::new();
        {
            let mut slot = self.slot();
            slot.session = Some(session.clone());
            let status = &mut slot.status;
            status.era = Some(session.era());
            status.protocol_version = Some(session.protocol_version());
            status.server_info = Some(session.server_info().clone());
            status.handshake = Some(handshake);
            status.list_errors.clear();
            slot.lists = Lists::default();
            for (list, outcome) in fetched {
                match outcome {
                    None => {}
                    Some(Ok(items)) => {
                        let version = slot.status.server_info.as_ref().map(|i| i.version.clone());
                        let (items, withheld) = self.pinned(host, items, version, &mut events);
                        slot.lists.set(items);
                        slot.lists.withhold(list, withheld);
                        events.push(self.list_changed(list));
                    }
                    Some(Err(error)) => {
                        slot.status.list_errors.push((list, error.clone()));
                        events.push(self.list_failed(list, error));
                    }
                }
            }
            slot.count();
        }
        for event in events {
            host.emit(event);
        }
        self.set_state(host, ServerState::Ready);
    }

    /// One list read again after its `list_changed`.
    fn refreshed(&self, host: &Shared, list: ListKind, outcome: Result<Fetched, Error>) {
        let mut events = Vec::new();
        {
            let mut slot = self.slot();
            slot.status.list_errors.retain(|(l, _)| *l != list);
            match outcome {
                Ok(items) => {
                    let version = slot.status.server_info.as_ref().map(|i| i.version.clone());
                    let (items, withheld) = self.pinned(host, items, version, &mut events);
                    slot.lists.set(items);
                    slot.lists.withhold(list, withheld);
                    events.push(self.list_changed(list));
                }
                Err(error) => {
                    slot.status.list_errors.push((list, error.clone()));
                    events.push(self.list_failed(list, error));
                }
            }
            slot.count();
        }
        for event in events {
            host.emit(event);
        }
    }

    /// Reads `list` again now, as after its `list_changed` (its pins were accepted);
    /// nothing when the server is not ready.
    pub(super) async fn reread(&self, host: &Shared, list: ListKind) {
        let session = self.slot().session.clone();
        let Some(session) = session else {
            return;
        };
        if let Some(outcome) = catalog::fetch(&session, list).await {
            self.refreshed(host, list, outcome);
        }
    }

    /// `fetched` as the host's pins let it into the merged view (all of it without
    /// pins; resources are not pinned), and the names they keep out; what they
    /// withheld, held or could not save goes into `events`.
    fn pinned(
        &self,
        host: &Shared,
        fetched: Fetched,
        server_version: Option<String>,
        events: &mut Vec<HostEvent>,
    ) -> (Fetched, Vec<String>) {
        let Some(pins) = &host.pins else {
            return (fetched, Vec::new());
        };
        match fetched {
            Fetched::Tools(tools) => {
                let (tools, out) = judge(
                    &self.name,
                    pins,
                    PinKind::Tool,
                    tools,
                    server_version,
                    events,
                );
                (Fetched::Tools(tools), out)
            }
            Fetched::Prompts(prompts) => {
                let (prompts, out) = judge(
                    &self.name,
                    pins,
                    PinKind::Prompt,
                    prompts,
                    server_version,
                    events,
                );
                (Fetched::Prompts(prompts), out)
            }
            resources @ Fetched::Resources(_) => (resources, Vec::new()),
        }
    }

    /// The session ended: out of the slot (no new call reaches it) and out of the
    /// merged view.
    fn went_down(&self, host: &Shared) {
        let dropped = {
            let mut slot = self.slot();
            slot.session = None;
            let kinds = slot.lists.kinds();
            slot.lists = Lists::default();
            slot.status.list_errors.clear();
            slot.count();
            kinds
        };
        for list in dropped {
            host.emit(self.list_changed(list));
        }
    }

    fn list_changed(&self, list: ListKind) -> HostEvent {
        HostEvent::ListChanged {
            server: self.name.clone(),
            list,
        }
    }

    fn list_failed(&self, list: ListKind, error: Error) -> HostEvent {
        HostEvent::ListFailed {
            server: self.name.clone(),
            list,
            error,
        }
    }
}

impl Slot {
    fn count(&mut self) {
        self.status.tools = self.lists.count(ListKind::Tools);
        self.status.resources = self.lists.count(ListKind::Resources);
        self.status.prompts = self.lists.count(ListKind::Prompts);
    }
}

/// How a followed session ended.
enum End {
    /// The host is shutting down.
    Stopped,
    /// The session ended by itself.
    Failed(Error),
}

/// The server's life: connect, follow, restart as the policy says, until the host
/// stops or the policy gives up.
pub(super) async fn supervise(
    host: Arc<Shared>,
    server: Arc<Server>,
    target: ServerTarget,
    mut options: ClientOptions,
    mut stop: watch::Receiver<bool>,
) {
    let mut restarts = Restarts::new(host.policy, host.seed_for(&server.name));
    loop {
        let started = Instant::now();
        // Boxed: connecting (the handshake, an authorization) takes far more room than
        // following a ready server, which is what this task does most of its life.
        let connecting = Box::pin(connect(
            &target,
            options.clone(),
            host.connect_timeout,
            host.oauth.as_ref(),
        ));
        let connected = tokio::select! {
            biased;
            () = stopped(&mut stop) => return,
            connected = connecting => connected,
        };
        let error = match connected {
            Err(error) => error,
            Ok(session) => {
                let handshake = started.elapsed();
                // Next time, start with what worked (a hint never locks the other era out).
                options.config.era_hint = Some(session.era());
                restarts.ready(Instant::now().into_std());
                let session = Arc::new(session);
                let end = follow(&host, &server, &session, handshake, &mut stop).await;
                server.went_down(&host);
                Box::pin(close(session)).await;
                match end {
                    End::Stopped => return,
                    End::Failed(error) => error,
                }
            }
        };
        let error = ServerError::Session(error);
        match restarts.failed(Instant::now().into_std(), error.failure()) {
            Decision::RetryAfter(delay) => {
                let attempt = restarts.attempts();
                server.set_state(
                    &host,
                    ServerState::Restarting {
                        attempt,
                        delay,
                        error,
                    },
                );
                tokio::select! {
                    biased;
                    () = stopped(&mut stop) => return,
                    () = tokio::time::sleep(delay) => {}
                }
                server.slot().status.restarts += 1;
            }
            Decision::GiveUp { attempts, why } => {
                let state = match why {
                    GiveUpReason::NotRetryable(_) => ServerState::Refused { error },
                    _ => ServerState::Failed { attempts, error },
                };
                server.set_state(&host, state);
                return;
            }
        }
    }
}

/// Connects to `target`, bounded: the core times the handshake, and this bound (by
/// default the probe and request timeouts and a second) also covers a transport that
/// hangs before the first answer can arrive (an HTTP connection that never opens).
/// An HTTP server is authorized by `oauth` unless its headers carry their own
/// `Authorization`. This is the host's own connection step, for a session kept beside
/// the host's (such as an audit's).
pub async fn connect(
    target: &ServerTarget,
    options: ClientOptions,
    bound: Option<Duration>,
    oauth: Option<&OAuthProvider>,
) -> Result<Session, Error> {
    let timeouts = options.config.timeouts;
    let bound = bound.unwrap_or_else(|| {
        timeouts
            .request
            .saturating_add(timeouts.probe)
            .saturating_add(Duration::from_secs(1))
    });
    let connecting = async {
        match target {
            ServerTarget::Stdio(command) => crate::connect_stdio(command, options).await,
            ServerTarget::Http {
                url,
                headers,
                oauth: entry,
            } => {
                let mut config = HttpConfig::new(http_url(url)?);
                config.headers = headers.clone();
                if let Some(provider) = oauth {
                    provider.authorize(&mut config, entry.as_deref())?;
                }
                crate::connect_http(config, options).await
            }
        }
    };
    match tokio::time::timeout(bound, connecting).await {
        Ok(connected) => connected,
        Err(_) => Err(Error::Negotiation(NegotiationError::Timeout {
            method: Method::Initialize,
            after: bound,
        })),
    }
}

/// A config entry's URL, checked as the CLI checks `--url`.
fn http_url(url: &str) -> Result<Url, Error> {
    let parsed = Url::parse(url)
        .map_err(|e| Error::InvalidOptions(format!("the server's url is not a URL ({e})")))?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed),
        other => Err(Error::InvalidOptions(format!(
            "the server's url must be http or https, not {other}"
        ))),
    }
}

/// Reads the lists, marks the server ready, then follows the session: its events, its
/// notifications, a modern listen stream, until it ends or the host stops.
async fn follow(
    host: &Shared,
    server: &Server,
    session: &Arc<Session>,
    handshake: Duration,
    stop: &mut watch::Receiver<bool>,
) -> End {
    let mut events = session.events();
    // Subscribed first, then looked: an end before the subscription is seen here,
    // one after it arrives as an event.
    if let Some(error) = session.ended() {
        return End::Failed(error);
    }
    let mut notifications = session.notifications();
    let mut stderr = session.stderr_lines();
    let fetching = futures_util::future::join_all(
        ListKind::ALL.map(|list| async move { (list, catalog::fetch(session, list).await) }),
    );
    let fetched = tokio::select! {
        biased;
        () = stopped(stop) => return End::Stopped,
        fetched = fetching => fetched,
    };
    if let Some(error) = session.ended() {
        return End::Failed(error);
    }
    server.came_up(host, session, handshake, fetched);
    let mut listener = listen(session).await;
    loop {
        let notification = tokio::select! {
            biased;
            () = stopped(stop) => return End::Stopped,
            event = events.recv() => {
                match event {
                    Ok(SessionEvent::Closed(error)) => return End::Failed(*error),
                    Ok(SessionEvent::Violation(violation)) => host.emit(HostEvent::Violation {
                        server: server.name.clone(),
                        violation,
                    }),
                    Ok(SessionEvent::Notice(notice)) => host.emit(HostEvent::Notice {
                        server: server.name.clone(),
                        notice: *notice,
                    }),
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        if let Some(error) = session.ended() {
                            return End::Failed(error);
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => {
                        return End::Failed(session.ended().unwrap_or(Error::Closed));
                    }
                }
                continue;
            }
            n = next_notification(&mut notifications) => n,
            n = next_listened(&mut listener) => n,
            // Last: a server that floods its stderr never holds up its notifications
            // (the lines it loses that way stay in its tail).
            line = next_stderr_line(&mut stderr) => {
                host.emit(HostEvent::Stderr {
                    server: server.name.clone(),
                    line,
                });
                continue;
            }
        };
        if let Some(list) = ListKind::of_notification(&notification.kind) {
            // Only a declared `listChanged` is acted on; an undeclared one is the
            // session's notice already.
            if session
                .capabilities()
                .has_flag(list.capability(), Flag::ListChanged)
            {
                session.invalidate_cache(list.method());
                let refreshed = tokio::select! {
                    biased;
                    () = stopped(stop) => return End::Stopped,
                    refreshed = catalog::fetch(session, list) => refreshed,
                };
                if let Some(outcome) = refreshed {
                    server.refreshed(host, list, outcome);
                }
            }
        }
        host.emit(HostEvent::Notification {
            server: server.name.clone(),
            notification,
        });
    }
}

/// Modern servers send `list_changed` only on a `subscriptions/listen` stream: one is
/// opened for the lists whose `listChanged` the server declared (none: no stream).
async fn listen(session: &Session) -> Option<Listener> {
    if session.era() != Era::Modern {
        return None;
    }
    let filter = ListenFilter::list_changes(session.capabilities());
    if filter == ListenFilter::default() {
        return None;
    }
    session.listen(&filter).await.ok()
}

async fn next_notification(
    rx: &mut Option<mpsc::Receiver<ServerNotification>>,
) -> ServerNotification {
    if let Some(r) = rx.as_mut() {
        if let Some(n) = r.recv().await {
            return n;
        }
        *rx = None;
    }
    std::future::pending().await
}

/// The server's next stderr line; pending for ever without one to come (an HTTP
/// server, or a stderr that ended). Lines missed by falling behind are skipped: the
/// session's tail still has them.
async fn next_stderr_line(lines: &mut Option<broadcast::Receiver<Arc<str>>>) -> Arc<str> {
    loop {
        let Some(rx) = lines.as_mut() else {
            return std::future::pending().await;
        };
        match rx.recv().await {
            Ok(line) => return line,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => *lines = None,
        }
    }
}

async fn next_listened(listener: &mut Option<Listener>) -> ServerNotification {
    while let Some(l) = listener.as_mut() {
        match l.recv().await {
            Ok(Some(ListenEvent::Notification(n))) => return n,
            Ok(Some(ListenEvent::Acknowledged(_))) => {}
            // The stream ended; the session's own end, if it is one, comes as an event.
            Ok(None) | Err(_) => *listener = None,
        }
    }
    std::future::pending().await
}

/// Resolves once the host says stop (or is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Closes a session the host may still share with calls in flight.
async fn close(session: Arc<Session>) {
    match Arc::try_unwrap(session) {
        Ok(session) => {
            session.close().await;
        }
        Err(shared) => {
            shared.close_shared().await;
        }
    }
}
