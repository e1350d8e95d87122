//! One host, relayed to the server behind: the core's server engine faces the host, a
//! [`Session`] the server; this file carries out what each side's rules decide.
//!
//! - A host request the engine lets through (the server declared its method) goes to
//!   the session (which gates it again, against what was negotiated with the server)
//!   with its params less the host's own envelope; its answer goes back under the
//!   host's id, as it came (checked, not decoded), or as the error it was.
//! - The host cancels a request: its exchange with the server is dropped, which cancels
//!   it there too. The server's progress goes to the host under the host's token.
//! - A question of the server (elicitation, sampling, roots) is the engine's request to
//!   the host, gated by what the host declared; its answer goes back to the server.
//! - The server's notifications pass the engine's table (only what the server declared,
//!   only to a host that subscribed or listens); what the host wants to hear of is kept
//!   open at the server (a 2026-07-28 listen stream).
//! - Violations, notices and what was withheld go to the audit.
//!
//! Everything happens on one task: the relay's state is owned, never locked; the
//! host's transport calls [`Relay::receive`] with each message and [`Relay::next`] /
//! [`Relay::on`] for everything else, and writes [`Relay::take_output`] in one write.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use capable::core::jsonrpc::FramingError;
use capable::core::jsonrpc::{codes, Incoming, Payload, RequestId, RpcError};
use capable::core::model::ProgressParams;
use capable::core::notification::Notification;
use capable::core::server::{
    ClientRequest, Event, Interest, ServerConfig, ServerConnection, Withheld,
};
use capable::core::{Era, Outbox, ProtocolChoice};
use capable::events::SessionEvent;
use capable::{CachePolicy, Error, ListenEvent, Listener, RequestOptions, Session};
use futures_util::future::{AbortHandle, Abortable, BoxFuture};
use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot};

use super::audit::Audit;
use super::behind::{Behind, Change, Connect};
use super::forward::{host_error, upstream_params};
use super::upstream::Ask;

/// The engine facing the host; the waiter of each question put to the host is where
/// its answer goes.
type Engine = ServerConnection<oneshot::Sender<Result<Value, RpcError>>>;

/// A host request on its way: its id, and the server's answer.
type Forward = BoxFuture<'static, (RequestId, Result<Payload, Error>)>;

/// Something the relay must act on (see [`Relay::next`]).
pub enum Wake {
    /// The server answered a forwarded request (or it failed).
    Forwarded(RequestId, Result<Payload, Error>),
    /// Progress of a forwarded request.
    Progress(RequestId, ProgressParams),
    /// The server asks the host something.
    Ask(Ask),
    /// Something of the server behind: a notification, an event, a restart.
    Behind(Change),
    /// A listen stream at the server was opened (or failed to).
    Opened(Result<Listener, Error>),
    /// Something arrived on the listen stream, or it ended.
    Listened(Result<Option<ListenEvent>, Error>),
    /// A question put to the host may have timed out.
    Timer,
    /// Nothing to do (an exchange the host cancelled ended).
    Nothing,
}

/// One host and the server behind it. See the module documentation.
pub struct Relay {
    engine: Engine,
    out: Outbox,
    behind: Behind,
    forwards: FuturesUnordered<Abortable<Forward>>,
    aborts: HashMap<RequestId, AbortHandle>,
    /// What the relay asks the server of its own (subscriptions again after a restart).
    background: FuturesUnordered<BoxFuture<'static, ()>>,
    progress_tx: mpsc::UnboundedSender<(RequestId, ProgressParams)>,
    progress_rx: mpsc::UnboundedReceiver<(RequestId, ProgressParams)>,
    asks: mpsc::UnboundedReceiver<Ask>,
    /// The listen stream open at the server (2026-07-28), and the interest it serves.
    listener: Option<Listener>,
    listening: Interest,
    opening: Option<BoxFuture<'static, Result<Listener, Error>>>,
    audit: Arc<Audit>,
}

impl Relay {
    /// A relay to `session` (brought back by `connect` when it goes away) for a host
    /// whose questions come on `asks` (see [`super::upstream::options`]); the host is
    /// offered exactly what the server declared, in the server's era, under the
    /// server's name.
    pub fn new(
        name: &str,
        session: Session,
        connect: Connect,
        asks: mpsc::UnboundedReceiver<Ask>,
        ask_timeout: std::time::Duration,
        audit: Arc<Audit>,
    ) -> Relay {
        let negotiated = session.negotiated();
        let mut config = ServerConfig::new(negotiated.server_info.clone(), Value::Null);
        config.capabilities = negotiated.capabilities.clone();
        config.instructions = negotiated.instructions.clone();
        config.protocol = match session.era() {
            Era::Legacy => ProtocolChoice::Legacy,
            Era::Modern => ProtocolChoice::Modern,
        };
        config.request_timeout = ask_timeout;
        let (progress_tx, progress_rx) = mpsc::unbounded_channel();
        Relay {
            engine: ServerConnection::new(config),
            out: Outbox::new(),
            behind: Behind::new(name, session, connect, audit.clone()),
            forwards: FuturesUnordered::new(),
            aborts: HashMap::new(),
            background: FuturesUnordered::new(),
            progress_tx,
            progress_rx,
            asks,
            listener: None,
            listening: Interest::default(),
            opening: None,
            audit,
        }
    }

    /// What was written for the host since the last call (one write's worth).
    pub fn take_output(&mut self) -> Vec<u8> {
        let bytes = self.out.bytes().to_vec();
        self.out.clear();
        bytes
    }

    /// One message from the host.
    pub fn receive(&mut self, msg: Incoming) {
        let event = self.engine.handle(msg, &mut self.out);
        self.on_event(event);
    }

    /// A line from the host that is no usable message.
    pub fn unreadable(&mut self, line: &[u8], error: &FramingError) {
        let event = self.engine.handle_unreadable(line, error);
        self.on_event(event);
    }

    fn on_event(&mut self, event: Event<oneshot::Sender<Result<Value, RpcError>>>) {
        match event {
            Event::Request(request) => self.forward(request),
            Event::Cancelled { id, .. } => {
                if let Some(abort) = self.aborts.remove(&id) {
                    abort.abort();
                }
            }
            Event::Response {
                waiter, outcome, ..
            } => {
                let answer = outcome.and_then(|p| {
                    p.decode::<Value>().map_err(|e| RpcError {
                        code: codes::PARSE_ERROR,
                        message: format!("the host's answer is not JSON: {e}"),
                        data: None,
                    })
                });
                let _ = waiter.send(answer);
            }
            Event::Interest(interest) => self.listen_for(interest),
            Event::Initialized | Event::Notification { .. } | Event::Handled => {}
        }
        for notice in self.engine.take_notices() {
            self.audit.host_notice(&notice);
        }
    }

    /// Sends a host request on to the server.
    fn forward(&mut self, request: ClientRequest) {
        let ClientRequest {
            id,
            method,
            params,
            wants_progress,
            ..
        } = request;
        let params = match upstream_params(&params) {
            Ok(params) => params,
            Err(e) => {
                self.engine.respond_error(&id, &e, &mut self.out);
                return;
            }
        };
        let on_progress = wants_progress.then(|| {
            let (tx, id) = (self.progress_tx.clone(), id.clone());
            Box::new(move |p: &ProgressParams| {
                let _ = tx.send((id.clone(), p.clone()));
            }) as capable::ProgressCallback
        });
        let session = self.behind.session().clone();
        let host_id = id.clone();
        // A 2026-07-28 host answers the server's questions itself and retries.
        let pass_input_required = self.engine.phase().era() == Some(Era::Modern);
        let exchange = async move {
            let options = RequestOptions {
                on_progress,
                // The host asked: the server answers, whatever the cache holds.
                cache: CachePolicy::Bypass,
                pass_input_required,
                ..RequestOptions::default()
            };
            let answer = session.request_payload(method, &params, options).await;
            (host_id, answer)
        };
        let (exchange, abort) = futures_util::future::abortable(exchange.boxed());
        self.aborts.insert(id, abort);
        self.forwards.push(exchange);
    }

    /// The next thing to act on. Cancel-safe: nothing is lost when another branch of
    /// the caller's `select!` wins.
    pub async fn next(&mut self) -> Wake {
        let timer = self.engine.poll_timeout();
        tokio::select! {
            Some(done) = self.forwards.next(), if !self.forwards.is_empty() => match done {
                Ok((id, answer)) => Wake::Forwarded(id, answer),
                // Cancelled by the host: nothing to answer.
                Err(_) => Wake::Nothing,
            },
            Some((id, p)) = self.progress_rx.recv() => Wake::Progress(id, p),
            Some(ask) = self.asks.recv() => Wake::Ask(ask),
            Some(()) = self.background.next(), if !self.background.is_empty() => Wake::Nothing,
            change = self.behind.next() => Wake::Behind(change),
            opened = poll_opening(&mut self.opening) => Wake::Opened(opened),
            listened = recv_listened(&mut self.listener) => Wake::Listened(listened),
            () = sleep_until(timer), if timer.is_some() => Wake::Timer,
        }
    }

    /// Acts on `wake`.
    pub fn on(&mut self, wake: Wake) {
        match wake {
            Wake::Forwarded(id, answer) => {
                // Progress the exchange reported on its way to the answer goes first.
                while let Ok((id, p)) = self.progress_rx.try_recv() {
                    self.progress(&id, &p);
                }
                self.answer(id, answer)
            }
            Wake::Progress(id, p) => self.progress(&id, &p),
            Wake::Ask(ask) => {
                let sent = self.engine.request(
                    ask.method,
                    &ask.params,
                    None,
                    ask.reply,
                    Instant::now(),
                    &mut self.out,
                );
                if let Err((why, reply)) = sent {
                    let _ = reply.send(Err(RpcError {
                        code: codes::METHOD_NOT_FOUND,
                        message: format!("the host cannot be asked: {why}"),
                        data: None,
                    }));
                }
            }
            Wake::Behind(change) => self.on_behind(change),
            Wake::Opened(Ok(listener)) => self.listener = Some(listener),
            Wake::Opened(Err(e)) => self.listen_failed(&e),
            Wake::Listened(Ok(Some(ListenEvent::Notification(n)))) => {
                self.notify(&n.kind, &n.params)
            }
            Wake::Listened(Ok(Some(ListenEvent::Acknowledged(_)))) => {}
            Wake::Listened(ended) => {
                self.listener = None;
                if let Err(e) = ended {
                    self.listen_failed(&e);
                }
                // Opened again on the next change of interest; nothing is lost
                // meanwhile that a list re-read would not show.
                self.listening = Interest::default();
            }
            Wake::Nothing => {}
            Wake::Timer => {
                for expired in self.engine.handle_timeout(Instant::now(), &mut self.out) {
                    let _ = expired.waiter.send(Err(RpcError {
                        code: codes::INTERNAL_ERROR,
                        message: format!("the host did not answer {} in time", expired.method),
                        data: None,
                    }));
                }
            }
        }
    }

    /// Progress of host request `id`: after its answer (or for a host that stopped
    /// waiting) it is dropped, as the engine's table says.
    fn progress(&mut self, id: &RequestId, p: &ProgressParams) {
        let message = p.message.as_deref();
        let _ = self
            .engine
            .progress(id, p.progress, p.total, message, &mut self.out);
    }

    /// The server's answer to host request `id`, as the host gets it.
    fn answer(&mut self, id: RequestId, answer: Result<Payload, Error>) {
        self.aborts.remove(&id);
        let failed = match answer {
            Ok(payload) => match payload.raw_value() {
                Ok(raw) => {
                    self.engine.respond(&id, raw, &mut self.out);
                    return;
                }
                Err(e) => RpcError {
                    code: codes::INTERNAL_ERROR,
                    message: format!("the server's answer is not valid JSON: {e}"),
                    data: None,
                },
            },
            Err(e) => host_error(&e),
        };
        self.engine.respond_error(&id, &failed, &mut self.out);
    }

    /// A notification of the server's, to the host if the engine's table lets it go.
    fn notify(&mut self, kind: &Notification, params: &Value) {
        match self.engine.notify(kind, params, &mut self.out) {
            Ok(()) => {}
            // The server's own cancellation of a question it asked the host: the
            // host's answer will simply not be used.
            Err(Withheld::EngineOnly { .. }) if matches!(kind, Notification::Cancelled { .. }) => {}
            // What the session noticed already (an undeclared notification, an update
            // nobody subscribed to), and ordinary filtering (a log line below the level
            // asked for, nothing listening): not worth a second line.
            Err(
                Withheld::NotDeclared { .. }
                | Withheld::NotSubscribed { .. }
                | Withheld::BelowLevel { .. }
                | Withheld::NoRequest { .. }
                | Withheld::NotListened { .. },
            ) => {}
            Err(why) => self.audit.withheld(self.behind.name(), kind.name(), &why),
        }
    }

    fn on_behind(&mut self, change: Change) {
        let name = self.behind.name().to_owned();
        match change {
            Change::Notification(n) => self.notify(&n.kind, &n.params),
            Change::Event(Ok(SessionEvent::Violation(v))) => self.audit.violation(&name, &v),
            Change::Event(Ok(SessionEvent::Notice(n))) => self.audit.server_notice(&name, &n),
            Change::Event(Ok(SessionEvent::Closed(e))) => self.behind.ended(*e),
            Change::Event(Ok(_)) | Change::Event(Err(broadcast::error::RecvError::Closed)) => {}
            Change::Event(Err(broadcast::error::RecvError::Lagged(missed))) => {
                let missed = serde_json::json!({"server": name, "missed": missed});
                self.audit.record("lagged", missed);
            }
            Change::Retry => self.behind.retry(),
            Change::Connected(connected) => {
                if self.behind.connected(*connected).is_some() {
                    self.restarted();
                }
            }
        }
    }

    /// The server behind came back: what the host listens for is asked again, and the
    /// host hears that the lists it declared may have changed.
    fn restarted(&mut self) {
        let session = self.behind.session().clone();
        let interest = self.engine.interest();
        if session.era() == Era::Legacy {
            for uri in interest.resource_subscriptions {
                let session = session.clone();
                self.background.push(
                    async move {
                        let _ = session.subscribe(&uri).await;
                    }
                    .boxed(),
                );
            }
        } else {
            self.listening = Interest::default();
            self.listen_for(interest);
        }
        if session.capabilities() != &self.engine.config().capabilities {
            self.audit.record(
                "capabilities_changed",
                serde_json::json!({"server": self.behind.name(), "now": session.capabilities(),
                    "host_has": self.engine.config().capabilities}),
            );
        }
        for list in [
            Notification::ToolsListChanged,
            Notification::ResourcesListChanged,
            Notification::PromptsListChanged,
        ] {
            let _ = self
                .engine
                .notify(&list, &Value::Object(Default::default()), &mut self.out);
        }
    }

    fn listen_failed(&self, e: &Error) {
        let error = crate::secrets::scrub(&e.to_string()).into_owned();
        self.audit.record(
            "listen_failed",
            serde_json::json!({"server": self.behind.name(), "error": error}),
        );
    }

    /// Keeps a listen stream open at the server for what the host wants now
    /// (2026-07-28; a legacy server's notifications come without one).
    fn listen_for(&mut self, interest: Interest) {
        if self.behind.session().era() != Era::Modern || interest == self.listening {
            return;
        }
        self.listening = interest.clone();
        // The new stream replaces the old one once it is open.
        self.listener = None;
        if interest == Interest::default() {
            self.opening = None;
            return;
        }
        let session = self.behind.session().clone();
        self.opening = Some(async move { session.listen(&interest).await }.boxed());
    }

    /// Ends the relay: every exchange in flight is dropped (and cancelled at the
    /// server), every question to the host fails, and the server is shut down in order.
    pub async fn close(mut self) {
        for (_, abort) in self.aborts.drain() {
            abort.abort();
        }
        for waiter in self.engine.close() {
            let _ = waiter.send(Err(RpcError {
                code: codes::INTERNAL_ERROR,
                message: "the host is gone".into(),
                data: None,
            }));
        }
        drop(self.forwards);
        drop(self.background);
        drop(self.listener);
        drop(self.opening);
        if let Ok(session) = Arc::try_unwrap(self.behind.into_session()) {
            session.close().await;
        }
    }
}

async fn poll_opening(
    opening: &mut Option<BoxFuture<'static, Result<Listener, Error>>>,
) -> Result<Listener, Error> {
    match opening {
        Some(open) => {
            let opened = open.await;
            *opening = None;
            opened
        }
        None => std::future::pending().await,
    }
}

async fn recv_listened(listener: &mut Option<Listener>) -> Result<Option<ListenEvent>, Error> {
    match listener {
        Some(l) => l.recv().await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `at`; pending for ever without it.
pub(super) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
