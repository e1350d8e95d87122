//! One host, relayed to the server behind — one [`Session`], or a config's servers as
//! one (`many.rs`): the core's relay ([`capable::internal::bridge::Connection`]) owns the
//! server engine that faces the host and the host's output and decides; these files
//! feed it what happens and run the commands it gives — the I/O on the sessions, the
//! policy, the audit, the traces.
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
//! | `mod.rs` | the relay: the host's messages and the next thing to act on fed to the core's [`capable::internal::bridge::Connection`] (events in), and its commands run (commands out: a request sent on, an exchange cancelled, a question's answer to its waiter, an answer finished, a task's `tasks/result` opened or dropped, the audit's lines) |
//! | `events.rs` | the relay's one queue: its inbox (progress, task statuses, questions) and the work it set going (exchanges, its own requests, the streams it follows), polled as one, with the timer |
//! | `exchange.rs` | a host request's trip: sent on as an exchange, and its answer finished (tasks carried, the audit) once the core routed it |
//! | `era.rs` | across eras: what the bridge answers itself (the core's `local`), the log level followed at each server |
//! | `rounds.rs` | a 2026-07-28 host's retry of a round: its `requestState` spent in the store replicas share, then taken by the core |
//! | `follow.rs` | the server behind: its notifications, its restarts, and what the host listens for — the steps of the core's `Follow` (the listen stream by token, subscribes, what a restart asks again: decided there) run on the session, its outcomes carried out |
//! | `fanout.rs` | many servers: the host's resource subscriptions, each at the server that owns its URI — the commands of the core's `Subscriptions` (every decision there) run on the sessions, its outcomes carried out |
//! | `tasks.rs` | tasks across eras: a legacy host's own tasks answered, and the driver that runs the commands of the core's `TaskCarry` (the requests each carried host request takes, decided there) on the session |
//! | `task_ids.rs` | sealed task ids (with a seal key): those the host sends opened before anything is sent, those it is handed sealed — as the core's `TaskIds` says |
//! | `kept_tasks.rs` | the bridge's own tasks kept in the store replicas share (a seal key and `gateway.store`), and another replica's answered from there — as the core's `kept_tasks` says |
//! | `task_list.rs` | a legacy host's tasks listed in the store replicas share (a seal key and `gateway.store`), so that its `tasks/list` on any replica lists them all |
//! | `task_input.rs` | a legacy task's questions for a 2026-07-28 host: the `tasks/result`s the core opens and drops, run on the session |
//! | `servers.rs` | one server or many, as the relay forwards to them |
//!
//! Everything happens on one task, driven by events: the relay's state is owned, never
//! locked; the host's transport calls [`Relay::receive`] with each message and
//! [`Relay::next`] / [`Relay::on`] for everything else — one [`Event`] from one queue
//! (`events.rs`), so a wake polls the queue and the timer (the core's `poll_timeout`),
//! nothing else — and writes [`Relay::take_output`] (the core's `poll_host`) in one
//! write.

mod era;
mod events;
mod exchange;
mod fanout;
mod follow;
mod kept_tasks;
mod rounds;
mod servers;
mod task_ids;
mod task_input;
mod task_list;
mod tasks;

pub use events::{queue, Event, Inbox, Queue};
pub use servers::Servers;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use capable::internal::bridge::connection::{Command, Question, Upstream};
use capable::internal::bridge::{Follow, Subscriptions};
use capable::internal::jsonrpc::FramingError;
use capable::internal::jsonrpc::{codes, Incoming, Payload, RpcError};
use capable::internal::server::{ServerConfig, ServerConnection};
use capable::internal::task_bridge::TaskBridge;
use capable::internal::task_started::Started;
use capable::internal::{Era, Outbox};
use capable::Error;
use futures_util::future::AbortHandle;
use serde_json::Value;
use tokio::sync::oneshot;

use super::audit::Audit;
use super::upstream::Asked;
use crate::policy::Policy;

/// Where the host's answer to a question of the server's goes.
type Reply = oneshot::Sender<Result<Value, RpcError>>;

/// The server's answer to an exchange (or why there is none).
type Answer = Result<Payload, Error>;

/// One host request at the server (the core's table decides whose it is); its handle
/// cancels it there.
type Exchange = capable::internal::bridge::Exchange<AbortHandle>;

/// The relay of this host connection, the core's, sans-IO: the engine facing the host
/// and its output, the exchanges, rounds, the questions put to the host, a legacy
/// task's questions, the log level followed — events in, commands out.
type Core = capable::internal::bridge::Connection<AbortHandle, Reply, Answer>;

/// One host and the server behind it. See the module documentation.
pub struct Relay {
    /// The host's side and every decision (see [`Core`]).
    core: Core,
    servers: Servers,
    /// What the relay waits for: its inbox (progress, task statuses, questions) and
    /// everything it set going (exchanges, its own requests, the streams it follows).
    queue: Queue,
    /// Where the sessions' callbacks push (progress, task statuses).
    inbox: Inbox,
    /// What stops the listen stream open at the one server (2026-07-28), or opening.
    listening: Option<AbortHandle>,
    /// What is open at the one server for what the host wants to hear of (the core's).
    following: Follow,
    /// The one server's session is held by other replicas too, and the host's
    /// standalone `GET` is open here: the server's standalone stream is to be open
    /// here too (`follow.rs`).
    host_listens: bool,
    /// The host's subscriptions and log level are the one server's record
    /// (`follow.rs`, [`Relay::share_with_replicas`]).
    state_upstream: bool,
    /// Many servers: what each is asked for the host's subscriptions (the core's
    /// decisions), and their listen streams.
    subscriptions: Subscriptions,
    streams: fanout::Streams,
    /// How tasks cross between the host's era and the server's (`tasks.rs`).
    tasks: TaskBridge,
    /// The tasks a legacy host started at a 2026-07-28 server, for its `tasks/list`,
    /// and those the bridge settled itself.
    started: Started,
    /// The `tasks/result`s open for a legacy task's questions (the core's
    /// [`Command::Fetch`]), by the core's token (`task_input.rs`).
    fetches: HashMap<u64, AbortHandle>,
    /// The attributes its requests' spans share, by method (traces on).
    spans: crate::traces::Kept,
    audit: Arc<Audit>,
    /// What the one server's lists, requests and results pass (many: `Many` holds it).
    policy: Option<Arc<dyn Policy>>,
    /// Where a round's `requestState` is spent once across replicas, and for how long
    /// it is remembered there (none: in this relay alone).
    spend: Option<(Arc<dyn crate::store::Store>, std::time::Duration)>,
    /// The task ids the host is handed, sealed (`task_ids.rs`; none: as the server
    /// gave them).
    sealed: Option<task_ids::Sealed>,
    /// Where the bridge's own tasks are kept for every replica (`kept_tasks.rs`; none:
    /// this replica's alone).
    keeping: Option<kept_tasks::Keeping>,
    /// The key of the host session's task list in the store (`task_list.rs`; none:
    /// the tasks started here are listed here alone).
    task_list: Option<String>,
    /// Tasks of the bridge's other replicas made, listed here: sealed as the bridge's
    /// own (`task_list.rs`).
    elsewhere: HashSet<String>,
}

impl Relay {
    /// A relay to `servers` for a host whose questions come to `queue`'s inbox (see
    /// [`super::upstream::options`]); the host is offered what `config` declares (see
    /// [`Servers::declaration`]), in either era, tasks carried across as `tasks` says.
    /// `shared`: the host's requests may be several hosts' that cannot be told apart
    /// (2026-07-28 over HTTP, see [`ServerConnection::set_shared`]).
    pub fn new(
        mut servers: Servers,
        config: ServerConfig,
        tasks: TaskBridge,
        (inbox, mut queue): (Inbox, Queue),
        ask_timeout: std::time::Duration,
        audit: Arc<Audit>,
        shared: bool,
    ) -> Relay {
        let mut config = config;
        config.request_timeout = ask_timeout;
        let mut engine = ServerConnection::new(config);
        engine.set_shared(shared);
        if let Servers::Many(many) = &servers {
            engine.set_subscribable(many.subscribable());
        }
        servers.follow(&mut queue);
        Relay {
            core: Core::new(engine, ask_timeout, super::random()),
            servers,
            queue,
            inbox,
            listening: None,
            following: Follow::default(),
            host_listens: false,
            state_upstream: false,
            subscriptions: Subscriptions::default(),
            streams: fanout::Streams::default(),
            tasks,
            started: tasks::started(),
            fetches: HashMap::new(),
            spans: crate::traces::Kept::default(),
            audit,
            policy: None,
            spend: None,
            sealed: None,
            keeping: None,
            task_list: None,
            elsewhere: HashSet::new(),
        }
    }

    /// Spends each round's `requestState` in `store` too, before the retry is taken:
    /// a state spent already there (on any replica sharing it) is refused.
    pub fn set_store(
        &mut self,
        store: Arc<dyn crate::store::Store>,
        remembered: std::time::Duration,
    ) {
        self.spend = Some((store, remembered));
    }

    /// Seals each round's `requestState` with `ring`, for the caller this relay serves
    /// (read once, here): a replica holding the same key carries the host's retry on
    /// (the core's `sealed_rounds`).
    pub fn seal_rounds(&mut self, ring: capable::internal::seal::KeyRing) {
        let caller = crate::audit::caller();
        let caller = crate::listen::sealed_caller(caller.as_ref()).into_owned();
        let unix_now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let sealing =
            capable::internal::bridge::Sealing::new(ring, caller, Instant::now(), unix_now);
        self.core.seal_rounds(sealing);
    }

    /// What the one server's lists, requests and results pass.
    pub fn set_policy(&mut self, policy: Arc<dyn Policy>) {
        self.policy = Some(policy);
    }

    /// Lets the server's notifications of no protocol method pass to the host where
    /// `allow` says so of their method (by default none does).
    pub fn pass_notifications(&mut self, allow: capable::internal::server::Custom) {
        self.core.engine_mut().set_custom_notifications(allow);
    }

    /// What was written for the host since the last call (one write's worth).
    pub fn take_output(&mut self) -> Outbox {
        self.core.poll_host()
    }

    /// What was written for the host and not yet taken, to send and empty.
    pub fn output(&mut self) -> &mut Outbox {
        self.core.output()
    }

    /// One message from the host.
    pub fn receive(&mut self, msg: Incoming) {
        self.core.handle_host(msg, Instant::now());
        self.run();
    }

    /// A line from the host that is no usable message.
    pub fn unreadable(&mut self, line: &[u8], error: &FramingError) {
        self.core.handle_unreadable(line, error, Instant::now());
        self.run();
    }

    /// What another replica needs to re-attach to the one server's HTTP session
    /// (`None`: many servers, stdio, 2026-07-28, or no session id given).
    pub fn resumption(&self) -> Option<capable::Resumption> {
        self.servers.one()?.resumption()
    }

    /// Whether the host's subscriptions are kept by the one server behind, in a
    /// session every replica shares ([`Relay::share_with_replicas`], an HTTP server
    /// that gave a session id): then nothing of them needs keeping elsewhere.
    pub fn keeps_state_upstream(&self) -> bool {
        self.state_upstream
    }

    /// Whether the host may send batches (a 2025-03-26 session).
    pub fn accepts_batches(&self) -> bool {
        self.core.engine().accepts_batches()
    }

    /// The version the host speaks, once known.
    pub fn host_version(&self) -> Option<capable::internal::ProtocolVersion> {
        self.core.engine().phase().version()
    }

    /// The era the host speaks, once known.
    fn host_era(&self) -> Option<Era> {
        self.core.host_era()
    }

    /// Runs what the core asks for, in order, until nothing is left: a host request
    /// answered by the bridge or sent on, an exchange cancelled, a question's answer to
    /// its waiter, an answer finished for the host, a task's `tasks/result` opened or
    /// dropped, the audit's lines.
    fn run(&mut self) {
        while let Some(command) = self.core.poll_upstream() {
            match command {
                Command::Request(request) => {
                    if let Some(request) = self.local(request) {
                        self.forward(request);
                    }
                }
                Command::Follow(interest) => self.follow(interest),
                Command::Cancel(handle) => handle.abort(),
                Command::Reply { waiter, mut answer } => {
                    self.open_reply(&mut answer);
                    let _ = waiter.send(answer);
                }
                Command::Answer {
                    id,
                    exchange,
                    answer,
                } => self.answer(&id, exchange, answer),
                Command::Fetch { token, task_id } => self.fetch_questions(token, task_id),
                Command::Abandon { token } => {
                    if let Some(fetch) = self.fetches.remove(&token) {
                        fetch.abort();
                    }
                }
                Command::HostNotice(notice) => self.audit.host_notice(&notice),
                Command::RoundNotice { level, notice } => self.audit.host_round(level, &notice),
            }
        }
    }

    /// The next thing to act on: from the relay's one queue (`events.rs`), or its
    /// timer. Cancel-safe: nothing is lost when another branch of the caller's
    /// `select!` wins.
    pub async fn next(&mut self) -> Event {
        let timers = [self.core.poll_timeout(), self.subscriptions.poll_timeout()];
        let timer = timers.into_iter().flatten().min();
        self.queue.next(timer).await
    }

    /// Acts on `event`.
    pub fn on(&mut self, event: Event) {
        match event {
            // What the server said on its way to the answer (progress, task statuses,
            // questions) goes first.
            Event::Forwarded(..) => {
                self.drain();
                self.act(event);
            }
            // Questions asked at the same time go to the host together (in one round,
            // as the output is taken).
            Event::Asked(..) => {
                self.act(event);
                self.drain();
            }
            event => self.act(event),
        }
    }

    /// Acts on what waits in the inbox already, in the order it came.
    fn drain(&mut self) {
        while let Some(event) = self.queue.try_next() {
            self.act(event);
        }
    }

    /// Acts on `event` alone (a question is kept, not yet put in a round).
    fn act(&mut self, event: Event) {
        let now = Instant::now();
        match event {
            Event::Forwarded(token, answer) => {
                self.core
                    .handle_upstream(token, Upstream::Answer(answer), now);
            }
            Event::Progress(token, p) => {
                self.core.handle_upstream(token, Upstream::Progress(p), now);
            }
            Event::Asked(Asked::Ask(mut ask)) => {
                self.seal_question(&mut ask.params);
                let question =
                    Question::new(ask.server, ask.method, ask.params, ask.reply).about(ask.related);
                self.core
                    .handle_upstream(ask.token, Upstream::Asked(question), now);
            }
            Event::Asked(Asked::Over(token)) => {
                self.core.handle_upstream(token, Upstream::Withdrawn, now);
            }
            Event::Behind(change) => self.on_behind(change),
            Event::Many(event) => self.on_many(event),
            Event::Reloaded(generation) => self.on_reloaded(&generation),
            Event::Opened(token, opened) => self.opened(token, opened),
            Event::Listened(token, listened) => self.listened(token, listened),
            Event::Followed(step, done) => self.followed(step, done),
            Event::Fanout(fanned) => self.fanned(fanned),
            Event::TaskStatus(status) => self.task_status(&status),
            Event::Fetched(token) => self.fetched(token),
            Event::Spent(request, spent) => self.spent(request, spent),
            Event::Kept(held, kept) => self.kept(*held, kept),
            Event::KeptRead(asking, read) => self.kept_read(*asking, read),
            Event::ListedElsewhere(ids) => self.listed_elsewhere(ids),
            Event::Tell(kind, params) => self.notify(&kind, &params),
            Event::Nothing => {}
            Event::Timer => {
                self.core.handle_timeout(now);
                self.subscriptions.handle_timeout(now);
                self.run_subscriptions();
            }
        }
        self.run();
    }

    /// Ends the relay: every exchange in flight is dropped (and cancelled at the
    /// server), every question to the host fails, and the server is shut down in order.
    pub async fn close(mut self) {
        let (handles, waiters) = self.core.close();
        for handle in handles {
            handle.abort();
        }
        for waiter in waiters {
            let _ = waiter.send(Err(gone("the host is gone")));
        }
        // Everything in flight (exchanges, listen streams, the relay's own requests) is
        // dropped: cancelled at the server.
        drop(self.queue);
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

use capable::internal::bridge::connection::gone;
