//! One host, relayed to the server behind — one [`Session`], or a config's servers as
//! one (`many.rs`): the core's server engine faces the host; these files carry out what
//! each side's rules decide.
//!
//! - A host request the engine lets through (the server declared its method) goes to
//!   the session (which gates it again, against what was negotiated with the server)
//!   with its params less the host's own envelope; its answer goes back under the
//!   host's id, as it came (checked, not decoded), or as the error it was.
//! - The host cancels a request: its exchange with the server is dropped, which cancels
//!   it there too. The server's progress goes to the host under the host's token.
//! - A question of the server (elicitation, sampling, roots) goes to the host as its
//!   era asks: a request of the engine's (legacy), or an `input_required` result whose
//!   retry carries the answer (2026-07-28); gated by what the host declared. A legacy
//!   host's question the server cancels is cancelled at the host too; a 2026-07-28
//!   host's is dropped from its round, and the server's answer that comes while the
//!   host holds a round is kept for its retry.
//! - The server's notifications pass the engine's table (only what the server declared,
//!   only to a host that subscribed or listens); what the host wants to hear of is kept
//!   open at the server, in the server's era.
//! - Violations, notices and what was withheld go to the audit.
//!
//! | file | concern |
//! |---|---|
//! | `mod.rs` | the relay: sends exchanges, answers, progress, the next thing to act on; the state and its decisions are the core's [`capable::internal::bridge::Relay`] |
//! | `era.rs` | across eras: what the bridge answers itself, questions to the host, results to a 2026-07-28 host |
//! | `rounds.rs` | a legacy server's questions to a 2026-07-28 host as `input_required` rounds, and the host's retries, as the core decides |
//! | `follow.rs` | the server behind: its notifications, what the host listens for, restarts |
//! | `fanout.rs` | many servers: the host's resource subscriptions, each at the server that owns its URI (planned by the core's `Fanout`, the requests waiting in its `Subscribing`) |
//! | `tasks.rs` | tasks across eras: the requests each carried host request takes |
//! | `task_input.rs` | a legacy task's questions for a 2026-07-28 host: `tasks/result` opened, `tasks/update` answered |
//! | `servers.rs` | one server or many, as the relay forwards to them |
//!
//! Everything happens on one task: the relay's state is owned, never locked; the
//! host's transport calls [`Relay::receive`] with each message and [`Relay::next`] /
//! [`Relay::on`] for everything else, and writes [`Relay::take_output`] in one write.

mod era;
mod fanout;
mod follow;
mod rounds;
mod servers;
mod task_input;
mod tasks;

pub use servers::Servers;

use std::sync::Arc;
use std::time::Instant;

use capable::internal::bridge::{forwarding, Answered, Follow};
use capable::internal::jsonrpc::FramingError;
use capable::internal::jsonrpc::{codes, Incoming, Payload, RequestId, RpcError};
use capable::internal::model::ProgressParams;
use capable::internal::server::fanout::Fanout;
use capable::internal::server::{ClientRequest, Event, ServerConfig, ServerConnection};
use capable::internal::task_bridge::{Carry, Route, TaskBridge};
use capable::internal::task_questions::TaskQuestions;
use capable::internal::task_started::Started;
use capable::internal::{Era, Extension, Outbox};
use capable::{CachePolicy, Error, ListenEvent, Listener, RequestOptions};
use futures_util::future::{Abortable, BoxFuture};
use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::audit::Audit;
use super::behind::{take_ready, Change};
use super::forward::{host_error, upstream_params};
use super::upstream::{Ask, Asked};
use crate::policy::{self, Policy};

/// The most progress updates waiting for the relay at once.
const PROGRESS_QUEUE: usize = 1024;

/// Where the host's answer to a question of the server's goes.
type Reply = oneshot::Sender<Result<Value, RpcError>>;

/// The engine facing the host; the waiter of each question put to the host is where
/// its answer goes.
type Engine = ServerConnection<Reply>;

/// The server's answer to an exchange (or why there is none).
type Answer = Result<Payload, Error>;

/// A host request on its way: its exchange, and the server's answer.
type Forward = BoxFuture<'static, (u64, Answer)>;

/// What cancels an exchange at the server.
type AbortHandle = futures_util::future::AbortHandle;

/// One host request at the server (the core's table decides whose it is); its handle
/// cancels it there.
type Exchange = capable::internal::bridge::Exchange<AbortHandle>;

/// The relay's state and decisions, the core's: exchanges, rounds, the questions put to
/// a legacy host, the log level followed.
type State = capable::internal::bridge::Relay<AbortHandle, Reply, Answer>;

/// Something the relay must act on (see [`Relay::next`]).
pub enum Wake {
    /// The server answered an exchange (or it failed).
    Forwarded(u64, Result<Payload, Error>),
    /// Progress of an exchange.
    Progress(u64, ProgressParams),
    /// The server asks the host something.
    Ask(Ask),
    /// A question of the server's is over there (see [`Asked::Over`]).
    AskOver(u64),
    /// Something of the one server behind: a notification, an event, a restart.
    Behind(Change),
    /// Something of the many servers behind.
    Many(Result<capable::host::HostEvent, tokio::sync::broadcast::error::RecvError>),
    /// Something of the many servers' subscriptions: on a listen stream, or a step's
    /// outcome.
    Fanout(fanout::Fanned),
    /// A listen stream at the server was opened (or failed to).
    Opened(Result<Listener, Error>),
    /// Something arrived on the listen stream, or it ended.
    Listened(Result<Option<ListenEvent>, Error>),
    /// A task the bridge waits on for a legacy host changed (`tasks.rs`).
    TaskStatus(Value),
    /// The bridge's `tasks/result` of this task ended (`task_input.rs`).
    Fetched(String),
    /// A question put to the host may have timed out.
    Timer,
    /// Nothing to do (an exchange the host cancelled ended).
    Nothing,
}

/// One host and the server behind it. See the module documentation.
pub struct Relay {
    engine: Engine,
    out: Outbox,
    servers: Servers,
    forwards: FuturesUnordered<Abortable<Forward>>,
    /// The exchanges, the rounds, the questions put to the host, the log level: the
    /// core's (see [`State`]).
    state: State,
    /// What the relay asks the server of its own (subscriptions, log levels).
    background: FuturesUnordered<BoxFuture<'static, ()>>,
    /// Progress of the exchanges, on its way from their sessions (bounded: past
    /// [`PROGRESS_QUEUE`] updates waiting, a server's flood of them is dropped, never
    /// held; the answer still comes).
    progress_tx: mpsc::Sender<(u64, ProgressParams)>,
    progress_rx: mpsc::Receiver<(u64, ProgressParams)>,
    asks: mpsc::UnboundedReceiver<Asked>,
    /// The listen stream open at the server (2026-07-28), or opening.
    listener: Option<Listener>,
    opening: Option<BoxFuture<'static, Result<Listener, Error>>>,
    /// What is open at the one server for what the host wants to hear of (the core's).
    following: Follow,
    /// What each of many servers holds for the host, and their listen streams.
    fanout: Fanout,
    streams: fanout::Streams,
    /// How tasks cross between the host's era and the server's (`tasks.rs`).
    tasks: TaskBridge,
    /// The tasks a legacy host started at a 2026-07-28 server, for its `tasks/list`,
    /// and those the bridge settled itself.
    started: Started,
    /// The statuses of tasks the bridge waits on for a legacy host, in legacy form.
    statuses_tx: mpsc::UnboundedSender<Value>,
    statuses_rx: mpsc::UnboundedReceiver<Value>,
    /// The questions of legacy tasks a 2026-07-28 host follows, and the
    /// `tasks/result` each comes on (`task_input.rs`).
    task_questions: TaskQuestions<Reply>,
    fetches: FuturesUnordered<BoxFuture<'static, String>>,
    audit: Arc<Audit>,
    /// What the one server's lists, requests and results pass (many: `Many` holds it).
    policy: Option<Arc<dyn Policy>>,
}

impl Relay {
    /// A relay to `servers` for a host whose questions come on `asks` (see
    /// [`super::upstream::options`]); the host is offered what `config` declares (see
    /// [`Servers::declaration`]), in either era, tasks carried across as `tasks` says.
    /// `shared`: the host's requests may be several hosts' that cannot be told apart
    /// (2026-07-28 over HTTP, see [`ServerConnection::set_shared`]).
    pub fn new(
        servers: Servers,
        config: ServerConfig,
        tasks: TaskBridge,
        asks: mpsc::UnboundedReceiver<Asked>,
        ask_timeout: std::time::Duration,
        audit: Arc<Audit>,
        shared: bool,
    ) -> Relay {
        let mut config = config;
        config.request_timeout = ask_timeout;
        let (progress_tx, progress_rx) = mpsc::channel(PROGRESS_QUEUE);
        let mut engine = ServerConnection::new(config);
        engine.set_shared(shared);
        if let Servers::Many(many) = &servers {
            engine.set_subscribable(many.subscribable());
        }
        let (statuses_tx, statuses_rx) = mpsc::unbounded_channel();
        Relay {
            engine,
            out: Outbox::new(),
            servers,
            forwards: FuturesUnordered::new(),
            state: State::new(ask_timeout, super::random()),
            background: FuturesUnordered::new(),
            progress_tx,
            progress_rx,
            asks,
            listener: None,
            opening: None,
            following: Follow::default(),
            fanout: Fanout::default(),
            streams: fanout::Streams::default(),
            tasks,
            started: tasks::started(),
            statuses_tx,
            statuses_rx,
            task_questions: TaskQuestions::new(),
            fetches: FuturesUnordered::new(),
            audit,
            policy: None,
        }
    }

    /// What the one server's lists, requests and results pass.
    pub fn set_policy(&mut self, policy: Arc<dyn Policy>) {
        self.policy = Some(policy);
    }

    /// Lets the server's notifications of no protocol method pass to the host where
    /// `allow` says so of their method (by default none does).
    pub fn pass_notifications(&mut self, allow: capable::internal::server::Custom) {
        self.engine.set_custom_notifications(allow);
    }

    /// What was written for the host since the last call (one write's worth).
    pub fn take_output(&mut self) -> Outbox {
        std::mem::take(&mut self.out)
    }

    /// What was written for the host and not yet taken, to send and empty.
    pub fn output(&mut self) -> &mut Outbox {
        &mut self.out
    }

    /// One message from the host.
    pub fn receive(&mut self, msg: Incoming) {
        let event = self.engine.handle(msg, &mut self.out);
        self.on_event(event);
    }

    /// A line from the host that is no usable message.
    pub fn unreadable(&mut self, line: &[u8], error: &FramingError) {
        let event = self.engine.handle_unreadable(line, error, &mut self.out);
        self.on_event(event);
    }

    /// Whether the host may send batches (a 2025-03-26 session).
    pub fn accepts_batches(&self) -> bool {
        self.engine.accepts_batches()
    }

    /// The version the host speaks, once known.
    pub fn host_version(&self) -> Option<capable::internal::ProtocolVersion> {
        self.engine.phase().version()
    }

    /// The era the host speaks, once known.
    fn host_era(&self) -> Option<Era> {
        self.engine.phase().era()
    }

    fn on_event(&mut self, event: Event<Reply>) {
        match event {
            Event::Request(request) => {
                if let Some(request) = self.local(request) {
                    self.forward(request);
                }
            }
            Event::Cancelled { id, .. } => self.cancelled(&id),
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
            // A legacy host hears of every list change the server declares.
            Event::Initialized => self.follow(self.engine.interest()),
            Event::Interest(interest) => self.follow(interest),
            Event::Notification { .. } | Event::Handled => {}
        }
        for notice in self.engine.take_notices() {
            self.audit.host_notice(&notice);
        }
    }

    /// The host cancelled request `id`: its exchange is dropped (cancelled at the
    /// server), and any question of it the host had is given up.
    fn cancelled(&mut self, id: &RequestId) {
        if let Some(cancelled) = self.state.cancelled(id) {
            cancelled.handle.abort();
            for reply in cancelled.questions {
                let _ = reply.send(Err(gone("the host cancelled the request")));
            }
        }
    }

    /// Sends a host request on to the server, as a new exchange.
    fn forward(&mut self, request: ClientRequest) {
        let ClientRequest {
            id,
            method,
            params,
            wants_progress,
            ..
        } = request;
        // The params kept (shared, not copied) for the retry of a round it may get, as
        // the core's table says (a server of many may be a legacy one).
        let legacy_behind = self.servers.one().is_none_or(|s| s.era() == Era::Legacy);
        let how = forwarding(self.host_era(), legacy_behind, method);
        let asked = how.keep_params.then(|| params.clone());
        // The params as the server gets them, through the policy (one server: here;
        // many: where the request's server is known).
        let upstream = match upstream_params(&params) {
            Ok(upstream) => upstream,
            Err(e) => {
                self.engine.respond_error(&id, &e, &mut self.out);
                return;
            }
        };
        let one = self.servers.one().map(|_| self.servers.name());
        let one_slot = self.audit.metrics().server(one);
        let (upstream, policy) =
            match policy::before_one(self.policy.as_ref(), one, method, upstream) {
                Ok(passed) => passed,
                Err(e) => {
                    self.audit.metrics().refused_request(method, one_slot);
                    let error = host_error(&e, &self.audit);
                    self.engine.respond_error(&id, &error, &mut self.out);
                    return;
                }
            };
        let host_declared = || {
            let caps = self.engine.phase().capabilities();
            caps.is_some_and(|c| c.has_extension(Extension::Tasks))
        };
        let route = self
            .tasks
            .route(method, || params.mentions("\"task\""), host_declared);
        let carry = match route {
            Route::Pass => None,
            Route::Carry(carry) => Some(carry),
            Route::Refuse(e) => {
                self.engine.respond_error(&id, &e, &mut self.out);
                return;
            }
        };
        let task_ttl = match carry {
            Some(carry) => match self.own_task(&id, method, carry, &params) {
                tasks::Before::Answered => return,
                tasks::Before::Send { ttl } => ttl,
            },
            None => None,
        };
        let token = self.state.reserve();
        let on_progress = wants_progress.then(|| {
            let tx = self.progress_tx.clone();
            Box::new(move |p: &ProgressParams| {
                let _ = tx.try_send((token, p.clone()));
            }) as capable::ProgressCallback
        });
        let options = RequestOptions {
            on_progress,
            // The host asked: the server answers, whatever the cache holds.
            cache: CachePolicy::Bypass,
            // A 2026-07-28 host answers the server's questions itself and retries.
            pass_input_required: how.pass_input_required,
            ..RequestOptions::default()
        };
        let (answer, legacy_answer, server) = match (carry, self.servers.one()) {
            (Some(carry), Some(session)) => {
                let session = session.clone();
                let legacy = session.era() == Era::Legacy;
                let how = tasks::How {
                    carry,
                    method,
                    bound: self.engine.config().request_timeout,
                    started: match carry {
                        Carry::ListForLegacy => self.started.listing(Instant::now()),
                        _ => Vec::new(),
                    },
                    statuses: self.statuses_tx.clone(),
                };
                let carried = tasks::carry(session, how, upstream.into_map(), options);
                (carried.boxed(), legacy, None)
            }
            _ => self.servers.exchange(method, upstream, options),
        };
        let answer = policy::after(policy, method, answer);
        // Counted as it ends (or as the host gives up on it): atomics, no lock.
        let metrics = self.audit.metrics();
        let slot = server
            .as_deref()
            .map_or(one_slot, |s| metrics.server(Some(s)));
        let sent = metrics.sent(method, slot);
        let exchange = async move {
            let answer = answer.await;
            sent.answered(answer.is_ok());
            (token, answer)
        };
        let (exchange, abort) = futures_util::future::abortable(exchange.boxed());
        let mut exchange_at = Exchange::new(id, method, abort);
        exchange_at.legacy_answer = legacy_answer;
        exchange_at.carry = carry;
        exchange_at.task_ttl = task_ttl;
        exchange_at.params = asked;
        exchange_at.server = server;
        self.state.open(token, exchange_at);
        self.forwards.push(exchange);
    }

    /// The next thing to act on. Cancel-safe: nothing is lost when another branch of
    /// the caller's `select!` wins.
    pub async fn next(&mut self) -> Wake {
        let timer = match (self.engine.poll_timeout(), self.state.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        tokio::select! {
            Some(done) = self.forwards.next(), if !self.forwards.is_empty() => match done {
                Ok((token, answer)) => Wake::Forwarded(token, answer),
                // Cancelled by the host: nothing to answer.
                Err(_) => Wake::Nothing,
            },
            Some((token, p)) = self.progress_rx.recv() => Wake::Progress(token, p),
            Some(status) = self.statuses_rx.recv() => Wake::TaskStatus(status),
            Some(asked) = self.asks.recv() => match asked {
                Asked::Ask(ask) => Wake::Ask(ask),
                Asked::Over(token) => Wake::AskOver(token),
            },
            Some(()) = self.background.next(), if !self.background.is_empty() => Wake::Nothing,
            Some(task_id) = self.fetches.next(), if !self.fetches.is_empty() => Wake::Fetched(task_id),
            wake = self.servers.next() => wake,
            opened = take_ready(&mut self.opening) => Wake::Opened(opened),
            listened = recv_listened(&mut self.listener) => Wake::Listened(listened),
            fanned = self.streams.next() => Wake::Fanout(fanned),
            () = sleep_until(timer), if timer.is_some() => Wake::Timer,
        }
    }

    /// Acts on `wake`.
    pub fn on(&mut self, wake: Wake) {
        match wake {
            Wake::Forwarded(token, answer) => {
                // Progress (and task statuses) the exchange reported on its way to
                // the answer go first.
                while let Ok((token, p)) = self.progress_rx.try_recv() {
                    self.progress(token, &p);
                }
                while let Ok(status) = self.statuses_rx.try_recv() {
                    self.task_status(&status);
                }
                self.answer(token, answer)
            }
            Wake::Progress(token, p) => self.progress(token, &p),
            Wake::Ask(ask) => {
                self.ask(ask);
                // Questions asked at the same time go to the host together.
                while let Ok(asked) = self.asks.try_recv() {
                    match asked {
                        Asked::Ask(ask) => self.ask(ask),
                        Asked::Over(token) => self.ask_over(token),
                    }
                }
                self.put_rounds();
            }
            Wake::AskOver(token) => self.ask_over(token),
            Wake::Behind(change) => self.on_behind(change),
            Wake::Many(event) => self.on_many(event),
            Wake::Opened(opened) => self.opened(opened),
            Wake::Listened(listened) => self.listened(listened),
            Wake::Fanout(fanned) => self.fanned(fanned),
            Wake::TaskStatus(status) => self.task_status(&status),
            Wake::Fetched(task_id) => self.fetched(&task_id),
            Wake::Nothing => {}
            Wake::Timer => {
                let now = Instant::now();
                for expired in self.engine.handle_timeout(now, &mut self.out) {
                    let message = format!("the host did not answer {} in time", expired.method);
                    let _ = expired.waiter.send(Err(gone(&message)));
                }
                for lapse in self.state.handle_timeout(now) {
                    self.lapsed(lapse);
                }
            }
        }
    }

    /// Progress of exchange `token`, under its host request's token: after the answer
    /// (or while the host has a question of it) it is dropped.
    fn progress(&mut self, token: u64, p: &ProgressParams) {
        let Some(id) = self.state.progress_to(token).cloned() else {
            return;
        };
        let message = p.message.as_deref();
        let _ = self
            .engine
            .progress(&id, p.progress, p.total, message, &mut self.out);
    }

    /// The server's answer to exchange `token`, as its host request gets it; while the
    /// host holds a round of it, kept for the host's retry.
    fn answer(&mut self, token: u64, answer: Answer) {
        let (id, exchange, answer) = match self.state.answered(token, answer) {
            Answered::To {
                id,
                exchange,
                answer,
            } => (id, exchange, answer),
            Answered::Kept { over, notice } => {
                self.audit.host_round("info", &notice);
                for reply in over {
                    let _ = reply.send(Err(gone("the request it was asked in is over")));
                }
                return;
            }
            Answered::Dropped => return,
        };
        let Exchange {
            method,
            legacy_answer,
            carry,
            task_ttl,
            server,
            ..
        } = exchange;
        // A server's answer the host cannot be given as it came is the server's breach:
        // the audit keeps it, not only the host's error.
        let (failed, malformed) = match answer.map(|p| self.carried(carry, task_ttl, p)) {
            Ok(payload) => match payload.raw_value() {
                Ok(raw) => return self.respond(&id, method, raw, legacy_answer),
                Err(e) => {
                    let message = format!("the server's answer is not valid JSON: {e}");
                    (gone(&message), true)
                }
            },
            Err(e) => (
                host_error(&e, &self.audit),
                matches!(e, Error::MalformedResult { .. }),
            ),
        };
        if malformed {
            let server = server.as_deref().unwrap_or(self.servers.name());
            self.audit
                .malformed(server, method.as_str(), &failed.message);
        }
        self.engine.respond_error(&id, &failed, &mut self.out);
    }

    /// Ends the relay: every exchange in flight is dropped (and cancelled at the
    /// server), every question to the host fails, and the server is shut down in order.
    pub async fn close(mut self) {
        let (handles, questions) = self.state.close();
        for handle in handles {
            handle.abort();
        }
        let open = questions.into_iter();
        let open = open.chain(self.task_questions.drain());
        for waiter in self.engine.close().into_iter().chain(open) {
            let _ = waiter.send(Err(gone("the host is gone")));
        }
        drop(self.forwards);
        drop(self.background);
        drop(self.fetches);
        drop(self.listener);
        drop(self.opening);
        self.servers.close().await;
    }
}

/// The error a host request gets for params the bridge cannot take (with `data` that
/// names what it is about).
fn invalid_params(message: impl Into<String>, data: Option<Value>) -> RpcError {
    RpcError {
        code: codes::INVALID_PARAMS,
        message: message.into(),
        data,
    }
}

/// The error a question of the server's gets when the host does not answer it.
fn gone(why: &str) -> RpcError {
    RpcError {
        code: codes::INTERNAL_ERROR,
        message: why.to_owned(),
        data: None,
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
