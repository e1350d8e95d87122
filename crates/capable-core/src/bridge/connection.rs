//! One host connection's relay, sans-IO and driven as quinn-proto drives a QUIC
//! connection: events in, commands and bytes out, deadlines asked for. [`Connection`]
//! owns the engine facing the host ([`ServerConnection`]), the host's output
//! ([`Outbox`]), the relay's state ([`Relay`]) and a legacy task's questions for a
//! 2026-07-28 host ([`TaskInput`]); the shell owns only the I/O (the sessions, the
//! policy, the audit, the traces) and runs what it is told.
//!
//! | in | out |
//! |---|---|
//! | [`handle_host`](Connection::handle_host): a message of the host's ([`handle_unreadable`](Connection::handle_unreadable): a line that is none) | the engine's answers, in [`poll_host`](Connection::poll_host); a request to pass on, the host's interest to follow, a question's answer to its waiter, an exchange the host cancelled, in [`poll_upstream`](Connection::poll_upstream) |
//! | [`handle_upstream`](Connection::handle_upstream)`(token, `[`Upstream`]`, now)`: the server's answer to exchange `token`, its progress, a question of the server's (or its withdrawal), a task's `tasks/result` ended | the answer under its host request's id ([`Command::Answer`], finished by the shell and written with [`respond_answer`](Connection::respond_answer)); progress under the host's token; the question to the host as its era asks — a request of the engine's (legacy) or an `input_required` round (2026-07-28) |
//! | [`handle_timeout`](Connection::handle_timeout)`(now)` at [`poll_timeout`](Connection::poll_timeout) | the questions nobody answered fail; a round never come back to is cancelled at the server |
//!
//! Everything of a request is routed by that request: the host's cancel cancels only
//! its own exchange, progress and answers go to the request of their exchange's token,
//! and a question of the server's goes to the request it belongs to — where the host's
//! requests may be several hosts' the relay cannot tell apart (a shared session, see
//! [`ServerConnection::set_shared`]), one that could be several requests' goes to none
//! ([`Relay::whose_question`]).
//!
//! Commands are an enum the shell matches whole (no wildcard): a new one is a compile
//! error there, never silently dropped. Scripted tests on a made-up clock:
//! `connection_tests.rs`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

pub use super::commands::{Command, Question, Related, Upstream};
use super::era::answer_form;
use super::exchanges::Exchange;
use super::relay::{Answered, Lapse, Relay, Retried, Then, Whose, Withdrawn};
use super::task_input::{self, TaskInput};
use crate::jsonrpc::{codes, FramingError, Incoming, Payload, RequestId, RpcError};
use crate::notification::Notification;
use crate::server::{client_allows, ClientRequest, Event, ServerConnection, Withheld};
use crate::{Era, Method, Outbox};

/// One host connection's relay (see the module documentation). `H` is the shell's
/// handle to an exchange, `Q` where the answer to a question of the server's goes, `A`
/// the server's answer to an exchange.
pub struct Connection<H, Q, A> {
    engine: ServerConnection<Q>,
    out: Outbox,
    state: Relay<H, Q, A>,
    task_input: TaskInput<Q>,
    commands: VecDeque<Command<H, Q, A>>,
    /// The time of the last event: rounds put as the output is taken are stamped with it.
    now: Option<Instant>,
    /// A question was kept for a round since rounds were last put (nothing to look at
    /// otherwise: the output of a relayed read costs no walk of the exchanges).
    kept: bool,
}

impl<H, Q, A> std::fmt::Debug for Connection<H, Q, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("engine", &self.engine)
            .field("state", &self.state)
            .field("commands", &self.commands.len())
            .finish()
    }
}

impl<H, Q, A> Connection<H, Q, A> {
    /// The relay of the host `engine` faces: its questions, rounds and tasks'
    /// `tasks/result`s last `ask_timeout`; `secret` makes its rounds' states
    /// unguessable.
    pub fn new(engine: ServerConnection<Q>, ask_timeout: Duration, secret: [u8; 32]) -> Self {
        Connection {
            engine,
            out: Outbox::new(),
            state: Relay::new(ask_timeout, secret),
            task_input: TaskInput::new(ask_timeout),
            commands: VecDeque::new(),
            now: None,
            kept: false,
        }
    }

    /// Seals the `requestState` of the relay's rounds from now on, so that a replica
    /// holding the same key carries their retries on ([`Relay::seal_rounds`]).
    pub fn seal_rounds(&mut self, sealing: super::Sealing) {
        self.state.seal_rounds(sealing);
    }

    /// The engine facing the host (its phase, its interest, its config).
    pub fn engine(&self) -> &ServerConnection<Q> {
        &self.engine
    }

    /// The engine, to configure it (what passes to the host).
    pub fn engine_mut(&mut self) -> &mut ServerConnection<Q> {
        &mut self.engine
    }

    /// The relay's state and its decisions (read only).
    pub fn state(&self) -> &Relay<H, Q, A> {
        &self.state
    }

    /// The era the host speaks, once known.
    pub fn host_era(&self) -> Option<Era> {
        self.engine.phase().era()
    }

    /// One message from the host at `now`.
    pub fn handle_host(&mut self, msg: Incoming, now: Instant) {
        self.now = Some(now);
        let event = self.engine.handle(msg, &mut self.out);
        self.on_engine(event);
    }

    /// A line from the host that is no usable message, at `now`.
    pub fn handle_unreadable(&mut self, line: &[u8], error: &FramingError, now: Instant) {
        self.now = Some(now);
        let event = self.engine.handle_unreadable(line, error, &mut self.out);
        self.on_engine(event);
    }

    fn on_engine(&mut self, event: Event<Q>) {
        match event {
            Event::Request(request) => self.commands.push_back(Command::Request(request)),
            Event::Cancelled { id, .. } => {
                if let Some(cancelled) = self.state.cancelled(&id) {
                    self.commands.push_back(Command::Cancel(cancelled.handle));
                    self.fail(cancelled.questions, "the host cancelled the request");
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
                self.commands.push_back(Command::Reply { waiter, answer });
            }
            // A legacy host hears of every list change the server declares.
            Event::Initialized => {
                let interest = self.engine.interest();
                self.commands.push_back(Command::Follow(interest));
            }
            Event::Interest(interest) => self.commands.push_back(Command::Follow(interest)),
            Event::Notification { .. } | Event::Handled => {}
        }
        self.take_notices();
    }

    fn take_notices(&mut self) {
        let notices = self.engine.take_notices().into_iter();
        self.commands.extend(notices.map(Command::HostNotice));
    }

    /// What was written for the host since the last call (one write's worth); the
    /// questions kept for requests the host waits on are put to it in rounds first.
    pub fn poll_host(&mut self) -> Outbox {
        self.put_rounds();
        std::mem::take(&mut self.out)
    }

    /// What was written for the host and not yet taken, to send and empty in place (its
    /// room kept from write to write), the rounds put first as in
    /// [`poll_host`](Self::poll_host).
    pub fn output(&mut self) -> &mut Outbox {
        self.put_rounds();
        &mut self.out
    }

    /// The next command to run, once each.
    pub fn poll_upstream(&mut self) -> Option<Command<H, Q, A>> {
        self.commands.pop_front()
    }

    /// A token for the next exchange (its progress and answer name it), never given
    /// twice.
    pub fn reserve(&mut self) -> u64 {
        self.state.reserve()
    }

    /// Opens `exchange` under `token` (from [`reserve`](Self::reserve)): the host
    /// request it carries went to the server.
    pub fn open(&mut self, token: u64, exchange: Exchange<H>) {
        self.state.open(token, exchange);
    }

    /// Something of the server's at `now`; `token` names the exchange (an answer, its
    /// progress), the question (asked, withdrawn) or the fetch (ended) it is of.
    pub fn handle_upstream(&mut self, token: u64, upstream: Upstream<Q, A>, now: Instant) {
        self.now = Some(now);
        match upstream {
            Upstream::Answer(answer) => {
                // Questions asked before the answer are the request's round first.
                self.put_rounds();
                self.answered(token, answer);
            }
            Upstream::Progress(p) => {
                let Some(id) = self.state.progress_to(token) else {
                    return;
                };
                let message = p.message.as_deref();
                let _ = self
                    .engine
                    .progress(id, p.progress, p.total, message, &mut self.out);
            }
            Upstream::Asked(question) => self.asked(token, question, now),
            Upstream::Withdrawn => match self.state.withdrawn(token) {
                Withdrawn::AtHost(id) => {
                    let reason = "the server withdrew its question";
                    let _ = self.engine.cancel(id, reason, &mut self.out);
                }
                Withdrawn::FromRound(notice) => self.notice("info", notice),
                Withdrawn::Unknown => {
                    if self.task_input.handle_withdrawn(token) {
                        self.run_task_input();
                    }
                }
            },
            Upstream::Fetched => {
                self.task_input.handle_upstream(token, now);
                self.run_task_input();
            }
        }
    }

    fn answered(&mut self, token: u64, answer: A) {
        match self.state.answered(token, answer) {
            Answered::To {
                id,
                exchange,
                answer,
            } => self.commands.push_back(Command::Answer {
                id,
                exchange,
                answer,
            }),
            Answered::Kept { over, notice } => {
                self.notice("info", notice);
                self.fail(over, "the request it was asked in is over");
            }
            Answered::Dropped => {}
        }
    }

    /// Question `token` of the server's, put to the host as its era asks: a request of
    /// the engine's (legacy, about the request it belongs to), or kept for a round
    /// (2026-07-28), a task's when it names one the bridge fetches.
    fn asked(&mut self, token: u64, question: Question<Q>, now: Instant) {
        if self.host_era() != Some(Era::Modern) {
            let about = self
                .state
                .about(question.server.as_deref(), question.related);
            let (method, params, waiter) = (question.method, &question.params, question.waiter);
            let out = &mut self.out;
            let sent =
                self.engine
                    .request_about(method, params, about.as_ref(), None, waiter, now, out);
            match sent {
                Ok(id) => self.state.asked_host(token, id),
                Err((why, waiter)) => self.reply(waiter, Err(cannot_ask(&why))),
            }
            return;
        }
        let url_mode = question.params.get("mode").and_then(Value::as_str) == Some("url");
        let phase = self.engine.phase();
        let allowed = match (phase.version(), phase.capabilities()) {
            (Some(version), Some(caps)) => client_allows(question.method, version, caps, url_mode),
            _ => Ok(()),
        };
        if let Err(why) = allowed {
            return self.reply(question.waiter, Err(cannot_ask(&why)));
        }
        let shared = self.engine.is_shared();
        if let Some(whose) = self.state.never_asked(question.method, shared) {
            return self.put_to(whose, token, question, now);
        }
        // A legacy task's question, asked on the bridge's tasks/result.
        let Some(question) = self.for_task(token, question, false) else {
            return;
        };
        let (from, related) = (question.server.as_deref(), question.related);
        let whose = self.state.whose_question(from, shared, related);
        self.put_to(whose, token, question, now);
    }

    /// Carries out whose question `token` is.
    fn put_to(&mut self, whose: Whose, token: u64, question: Question<Q>, now: Instant) {
        match whose {
            Whose::Exchange(exchange) => {
                let Question {
                    server,
                    method,
                    params,
                    waiter,
                    ..
                } = question;
                // A question a retry carried on here answered already.
                let carried =
                    self.state
                        .carried_answer(exchange, server.as_deref(), method, &params);
                if let Some((key, answer)) = carried {
                    self.notice(
                        "info",
                        format!(
                            "the server asked {} again in a retry carried on from another \
                             replica's round: answered with the host's answer to {key}",
                            method.as_str()
                        ),
                    );
                    return self.reply(waiter, Ok(answer));
                }
                self.state
                    .keep_question(exchange, token, method, params, waiter, now);
                self.kept = true;
            }
            // Nobody's, on purpose: the server is told why, and the audit says so.
            Whose::PutToNone { level, why } => {
                self.notice(level, format!("a question of the server's: {why}"));
                self.reply(question.waiter, Err(cannot_ask(&why)));
            }
            Whose::Nobody => {
                let Some(question) = self.for_task(token, question, true) else {
                    return;
                };
                let why = "no request of the host's waits on the server: it cannot be asked now";
                self.reply(question.waiter, Err(cannot_ask(&why)));
            }
        }
    }

    /// A question that is a task's is kept for the host's `tasks/get` (`None`), or
    /// given back; `nothing_else`: no request of the host's could take it.
    fn for_task(&mut self, token: u64, q: Question<Q>, nothing_else: bool) -> Option<Question<Q>> {
        let (server, related) = (q.server, q.related);
        let question = task_input::Question {
            token,
            method: q.method,
            params: q.params,
            waiter: q.waiter,
        };
        let back = self
            .task_input
            .handle_question(question, nothing_else)
            .err()
            .map(|q| Question::new(server, q.method, q.params, q.waiter).about(related));
        self.run_task_input();
        back
    }

    /// Every host request waiting with questions kept for it is answered with a round
    /// carrying them (questions asked together go in one round).
    fn put_rounds(&mut self) {
        let Some(now) = self.now.filter(|_| self.kept) else {
            return;
        };
        self.kept = false;
        for (id, round) in self.state.put_rounds(now) {
            self.engine.respond(&id, &round, &mut self.out);
        }
    }

    /// A 2026-07-28 host's request that may be the retry of one of the relay's rounds
    /// ([`Relay::retry`]): taken or refused here (`None`), or given back to pass on.
    /// `behind`: the era of the server it would go to (`None`: one of many).
    pub fn retry(
        &mut self,
        request: ClientRequest,
        behind: Option<Era>,
        now: Instant,
    ) -> Option<ClientRequest> {
        self.now = Some(now);
        let params: Value = request.params.decode().unwrap_or_default();
        let (id, method) = (&request.id, request.method);
        let taken = match self.state.retry(id, method, &params, behind, now) {
            Retried::Pass => return Some(request),
            Retried::Refused(why) => {
                self.engine.respond_error(id, &why, &mut self.out);
                return None;
            }
            Retried::Carried { params, notices } => {
                self.notice(
                    "info",
                    format!(
                        "the retry of a round another replica gave: {} sent to the server \
                         again, its questions answered from the retry",
                        method.as_str()
                    ),
                );
                for notice in notices {
                    self.notice("info", notice);
                }
                let params = Payload::from_json(params.to_string());
                return Some(ClientRequest { params, ..request });
            }
            Retried::Taken(taken) => taken,
        };
        for (waiter, answer) in taken.answers {
            self.reply(waiter, Ok(answer));
        }
        self.fail(taken.over, "the request it was asked in is over");
        for notice in taken.notices {
            self.notice("info", notice);
        }
        match taken.then {
            Then::Round(round) => {
                self.engine.respond(id, &round, &mut self.out);
            }
            Then::Answer(token, answer) => self.answered(token, answer),
            // The exchange goes on, under the retry's id.
            Then::Wait => {}
            Then::Over(why) => {
                self.engine.respond_error(id, &why, &mut self.out);
            }
        }
        None
    }

    /// A task as a 2026-07-28 host is to see it (`answer`, from `tasks/get` or the call
    /// that made it), with the questions it asks ([`TaskInput::handle_task`]).
    pub fn handle_task(&mut self, answer: Payload, now: Instant) -> Payload {
        self.now = Some(now);
        let task = self.task_input.handle_task(answer, now);
        self.run_task_input();
        task
    }

    /// A 2026-07-28 host's `tasks/update` (`id`, `params`): its answers go to the
    /// server's questions; answered here.
    pub fn handle_task_update(&mut self, id: &RequestId, params: &Payload) {
        match self.task_input.handle_update(params) {
            Ok(done) => self.engine.respond(id, &done, &mut self.out),
            Err(why) => self.engine.respond_error(id, &why, &mut self.out),
        };
        self.run_task_input();
    }

    fn run_task_input(&mut self) {
        while let Some(command) = self.task_input.poll_upstream() {
            self.commands.push_back(match command {
                task_input::Command::Fetch { token, task_id } => Command::Fetch { token, task_id },
                task_input::Command::Abandon { token } => Command::Abandon { token },
            });
        }
        while let Some(outcome) = self.task_input.poll_outcome() {
            match outcome {
                task_input::Outcome::Answer { waiter, answer } => self.reply(waiter, Ok(answer)),
                task_input::Outcome::Fail { waiter, error } => self.reply(waiter, Err(error)),
                task_input::Outcome::Notice(notice) => self.notice("info", notice),
            }
        }
    }

    /// The host asks for log level `level`: whether it changed ([`Relay::log_level`]).
    pub fn log_level(&mut self, level: crate::server::LogLevel) -> bool {
        self.state.log_level(level)
    }

    /// The server behind restarted: it knows no level, and is told the next one asked.
    pub fn forget_log_level(&mut self) {
        self.state.forget_log_level();
    }

    /// Answers host request `id` with `result`.
    pub fn respond<R: Serialize + ?Sized>(&mut self, id: &RequestId, result: &R) {
        self.engine.respond(id, result, &mut self.out);
    }

    /// Answers host request `id` with `error`.
    pub fn respond_error(&mut self, id: &RequestId, error: &RpcError) {
        self.engine.respond_error(id, error, &mut self.out);
    }

    /// Answers host request `id` (of `method`) with the server's result `raw`, in the
    /// form the host's era takes ([`answer_form`]: `legacy`, the result is in legacy
    /// form).
    pub fn respond_answer(&mut self, id: &RequestId, method: Method, raw: &RawValue, legacy: bool) {
        match answer_form(legacy, self.host_era()) {
            true => self
                .engine
                .respond_from_legacy(id, method, raw, &mut self.out),
            false => self.engine.respond(id, raw, &mut self.out),
        };
    }

    /// A notification for the host, if the engine's table lets it go.
    pub fn notify(&mut self, notification: &Notification, params: &Value) -> Result<(), Withheld> {
        self.engine.notify(notification, params, &mut self.out)
    }

    /// When [`handle_timeout`](Self::handle_timeout) should be called next: the
    /// engine's questions, the rounds, the tasks' fetches.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let timers = [
            self.engine.poll_timeout(),
            self.state.poll_timeout(),
            self.task_input.poll_timeout(),
        ];
        timers.into_iter().flatten().min()
    }

    /// What is past its deadline at `now`: a question nobody answered fails, a round
    /// never come back to is over and cancelled at the server, a fetch past its bound
    /// is dropped.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.now = Some(now);
        for expired in self.engine.handle_timeout(now, &mut self.out) {
            let message = format!("the host did not answer {} in time", expired.method);
            self.reply(expired.waiter, Err(gone(&message)));
        }
        for lapse in self.state.handle_timeout(now) {
            match lapse {
                Lapse::Question(waiter) => {
                    let why = "the host did not come back with an answer in time";
                    self.reply(waiter, Err(gone(why)));
                }
                Lapse::Round { handle, notice } => {
                    self.commands.push_back(Command::Cancel(handle));
                    self.notice("warning", notice);
                }
            }
        }
        self.task_input.handle_timeout(now);
        self.run_task_input();
    }

    /// Everything given up (the relay ends): every exchange's handle (cancel each at
    /// the server), and every question's waiter (each fails).
    pub fn close(&mut self) -> (Vec<H>, Vec<Q>) {
        let (handles, questions) = self.state.close();
        let mut waiters = self.engine.close();
        waiters.extend(questions);
        waiters.extend(self.task_input.close());
        (handles, waiters)
    }

    fn reply(&mut self, waiter: Q, answer: Result<Value, RpcError>) {
        self.commands.push_back(Command::Reply { waiter, answer });
    }

    fn fail(&mut self, waiters: Vec<Q>, why: &str) {
        for waiter in waiters {
            self.reply(waiter, Err(gone(why)));
        }
    }

    fn notice(&mut self, level: &'static str, notice: String) {
        self.commands
            .push_back(Command::RoundNotice { level, notice });
    }
}

/// The error a question of the server's gets when the host may not be asked it.
pub fn cannot_ask(why: &dyn std::fmt::Display) -> RpcError {
    RpcError {
        code: codes::METHOD_NOT_FOUND,
        message: format!("the host cannot be asked: {why}"),
        data: None,
    }
}

/// The error a question of the server's gets when the host does not answer it.
pub fn gone(why: &str) -> RpcError {
    RpcError {
        code: codes::INTERNAL_ERROR,
        message: why.to_owned(),
        data: None,
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
