//! The relay's state between a host and the servers behind it, and what it decides about
//! the host's requests and the servers' questions ([`Relay`]), with no I/O: the
//! [`Connection`](super::Connection) that holds it carries out each outcome (to the
//! host, or as a command for the shell, which sends the exchanges).
//!
//! It holds, for one relay:
//!
//! - the host requests at the servers, by the relay's token ([`Exchanges`]);
//! - a legacy server's questions to a 2026-07-28 host, in `input_required` rounds
//!   ([`Rounds`]), and which host request is the retry of which round;
//! - the server's questions put to a legacy host, as the engine's requests (so that the
//!   server withdrawing one cancels it at the host);
//! - the log level the host last asked for (a legacy server is told when it changes).
//!
//! | what happens | what the relay decides |
//! |---|---|
//! | the host cancels its request | only that request's exchange is over ([`Relay::cancelled`]); questions of it the host has in a round fail |
//! | the server answers an exchange | to the host request waiting for it; kept for the retry while the host holds a round of it ([`Relay::answered`]) |
//! | a legacy server asks a 2026-07-28 host | the request it belongs to ([`Relay::whose_question`]): the one whose stream it came on when the server's transport says (Streamable HTTP), exactly (with sealed rounds, unless that one's round is out and one other request waits); else never a guess among hosts a shared session cannot tell apart (with sealed rounds, which may have moved to another replica: the one request waiting, whatever rounds are out), never `roots/list` for such a session ([`Relay::never_asked`]) |
//! | the host retries | see [`Relay::retry`]: a retry of another request (method, tool, prompt, URI or arguments) is refused and the round stays open; `inputResponses` without a round of the relay's, for a legacy server behind, are refused, never passed on |
//! | the server withdraws a question | a legacy host's is cancelled at the host; a round's is dropped from it ([`Relay::withdrawn`]) |
//! | a round's deadline passes | its questions fail, its exchange is over and cancelled at the server ([`Relay::handle_timeout`]) |
//! | the host asks for a log level | a legacy server is told only when it changes ([`Relay::log_level`]) |
//!
//! Its outcomes are enums the shell matches whole (no wildcard): a new outcome is a
//! compile error there, never silently dropped.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::exchanges::{Exchange, Exchanges};
use super::sealed_rounds::{another_request, Opened, SealedRounds, Sealing};
use crate::input_rounds::may_ask_for_input;
use crate::jsonrpc::{codes, RequestId, RpcError};
use crate::server::{same_request, Lapsed, LogLevel, Next, Rounds, ServerMethod};
use crate::{Era, Method};

/// The relay's state (see the module documentation). `H` is the shell's handle to an
/// exchange (what cancels it at the server), `Q` where the answer to a question of the
/// server's goes, `A` the server's answer to an exchange.
pub struct Relay<H, Q, A> {
    exchanges: Exchanges<H>,
    rounds: Rounds<Q, A>,
    /// The rounds' states sealed, and the retries carried on from another replica's.
    sealed: SealedRounds,
    /// The engine's id of each question put to a legacy host, by the question's token.
    questions: HashMap<u64, i64>,
    /// The log level the host last asked for.
    log_level: Option<LogLevel>,
}

impl<H, Q, A> std::fmt::Debug for Relay<H, Q, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("exchanges", &self.exchanges.len())
            .field("rounds", &self.rounds)
            .field("questions", &self.questions.len())
            .field("log_level", &self.log_level)
            .finish()
    }
}

/// An exchange the host cancelled ([`Relay::cancelled`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct Cancelled<H, Q> {
    /// Its handle: cancel it at the server.
    pub handle: H,
    /// The questions of it the host had in a round: each fails.
    pub questions: Vec<Q>,
}

/// Where the server's answer to an exchange goes ([`Relay::answered`]).
#[derive(Debug)]
pub enum Answered<H, Q, A> {
    /// To host request `id`; the exchange is over.
    To {
        /// The host request.
        id: RequestId,
        /// The exchange, taken out.
        exchange: Exchange<H>,
        /// The answer.
        answer: A,
    },
    /// Kept for the host's retry of the round it holds; `over`: questions not yet put to
    /// the host, each fails; `notice` says so for the audit.
    Kept {
        /// Questions that can no longer be put to the host.
        over: Vec<Q>,
        /// What happened, for the audit.
        notice: String,
    },
    /// No host request waits for it any more: dropped.
    Dropped,
}

/// What a host request that may be the retry of a round comes to ([`Relay::retry`]).
#[derive(Debug)]
pub enum Retried<Q, A> {
    /// No round of the relay's: the request goes on as it is.
    Pass,
    /// Refused: the host request gets this error, and nothing else happens.
    Refused(RpcError),
    /// Taken: its answers go to their questions; see [`Taken`].
    Taken(Taken<Q, A>),
    /// The retry of a sealed round another relay gave (another replica's): the request
    /// goes to the server again with `params`, and the questions it asks again are
    /// answered from the retry ([`Relay::carried_answer`]); `notices`, for the audit.
    Carried {
        /// The params the server gets.
        params: Value,
        /// What the retry brought that was ignored.
        notices: Vec<String>,
    },
}

/// A retry taken ([`Retried::Taken`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct Taken<Q, A> {
    /// Each answered question's reply, and its answer.
    pub answers: Vec<(Q, Value)>,
    /// Questions that can no longer be put to the host (the request they were asked in
    /// is over): each fails.
    pub over: Vec<Q>,
    /// What the retry brought that was ignored, for the audit.
    pub notices: Vec<String>,
    /// What the retry itself gets.
    pub then: Then<A>,
}

/// What a retry taken gets ([`Taken::then`]).
#[derive(Debug)]
pub enum Then<A> {
    /// The next round: the retry is answered with it.
    Round(Value),
    /// The server's answer to exchange `token`, kept while the host held the round: the
    /// retry carries the exchange on and is answered with it (as any answer is).
    Answer(u64, A),
    /// Nothing yet: the retry carries the exchange on, under its id.
    Wait,
    /// The exchange is over: the retry gets this error.
    Over(RpcError),
}

/// What passed its deadline ([`Relay::handle_timeout`]).
#[derive(Debug)]
pub enum Lapse<H, Q> {
    /// A question nobody answered in time: it fails.
    Question(Q),
    /// The host never came back to a round: its exchange is over; cancel it at the
    /// server with `handle`, and the audit gets `notice`.
    Round {
        /// The exchange's handle.
        handle: H,
        /// What happened, for the audit.
        notice: String,
    },
}

/// What the server withdrawing its question comes to ([`Relay::withdrawn`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Withdrawn {
    /// A legacy host has it as the engine's request of this id: cancel it there.
    AtHost(i64),
    /// It was dropped from a round; `notice` says so for the audit.
    FromRound(String),
    /// None of the relay's (a task's, maybe).
    Unknown,
}

impl<H, Q, A> Relay<H, Q, A> {
    /// A relay whose questions to the host and rounds last `ask_timeout`; `secret` makes
    /// its rounds' states unguessable ([`Rounds::new`]).
    pub fn new(ask_timeout: Duration, secret: [u8; 32]) -> Self {
        Relay {
            exchanges: Exchanges::default(),
            rounds: Rounds::new(ask_timeout, secret),
            sealed: SealedRounds::new(ask_timeout),
            questions: HashMap::new(),
            log_level: None,
        }
    }

    /// Seals the `requestState` of every round from now on, so that another replica
    /// holding the key carries its retry on (see `sealed_rounds.rs`).
    pub fn seal_rounds(&mut self, sealing: Sealing) {
        self.sealed.set(sealing);
    }

    /// A token for the next exchange (its progress and its answer name it), never
    /// given twice.
    pub fn reserve(&mut self) -> u64 {
        self.exchanges.reserve()
    }

    /// Opens `exchange` under `token` (from [`reserve`](Self::reserve)).
    pub fn open(&mut self, token: u64, exchange: Exchange<H>) {
        self.sealed.opened(token, exchange.host.as_ref());
        self.exchanges.insert(token, exchange);
    }

    /// Exchange `token`, while it is open.
    pub fn exchange(&self, token: u64) -> Option<&Exchange<H>> {
        self.exchanges.get(token)
    }

    /// Where progress of exchange `token` goes: its host request, while the host waits
    /// for it (none while it holds a round).
    pub fn progress_to(&self, token: u64) -> Option<&RequestId> {
        self.exchanges.progress_to(token)
    }

    /// The host cancelled its request `id`: that request's exchange, over, with the
    /// questions of it the host had — `None` when no exchange answers `id` (another
    /// request's is never touched).
    pub fn cancelled(&mut self, id: &RequestId) -> Option<Cancelled<H, Q>> {
        let (token, exchange) = self.exchanges.cancelled_by(id)?;
        self.sealed.forget(token);
        Some(Cancelled {
            handle: exchange.handle,
            questions: self.rounds.give_up(token),
        })
    }

    /// The server answered exchange `token` with `answer` (see [`Answered`]).
    pub fn answered(&mut self, token: u64, answer: A) -> Answered<H, Q, A> {
        let answer = match self.exchanges.get(token) {
            Some(e) if self.exchanges.in_a_round(token) => {
                let method = e.method;
                match self.rounds.keep(token, answer) {
                    Ok(over) => {
                        let notice = format!(
                            "the server answered {} while the host holds a round of it: kept \
                             for the host's retry",
                            method.as_str()
                        );
                        return Answered::Kept { over, notice };
                    }
                    Err(answer) => answer,
                }
            }
            _ => answer,
        };
        self.sealed.forget(token);
        match self.exchanges.answered(token) {
            Some((id, exchange)) => Answered::To {
                id,
                exchange,
                answer,
            },
            None => Answered::Dropped,
        }
    }

    /// The server's question `token` was put to a legacy host as the engine's request
    /// `id`.
    pub fn asked_host(&mut self, token: u64, id: i64) {
        self.questions.insert(token, id);
    }

    /// Keeps question `token` of the server's (`method`, `params`, answered through
    /// `reply`) for a round of `exchange` (from [`Whose::Exchange`]).
    pub fn keep_question(
        &mut self,
        exchange: u64,
        token: u64,
        method: ServerMethod,
        params: Value,
        reply: Q,
        now: Instant,
    ) {
        self.rounds.ask(exchange, token, method, params, reply, now);
    }

    /// Every host request waiting with questions kept for it, answered with a round
    /// carrying them: the host request's id and the round.
    pub fn put_rounds(&mut self, now: Instant) -> Vec<(RequestId, Value)> {
        let mut put = Vec::new();
        for token in self.exchanges.awaited() {
            let Some(round) = self.rounds.round(token, now) else {
                continue;
            };
            let round = self.sealed_round(token, round, now);
            if let Some(id) = self.exchanges.put_in_a_round(token) {
                put.push((id, round));
            }
        }
        put
    }

    /// A 2026-07-28 host's request `id` (`method`, `params`) that may be the retry of a
    /// round of the relay's: `behind`, the era of the server it would go to (`None`: one
    /// of many) — a legacy one knows no rounds, a 2026-07-28 one's are its own. See
    /// [`Retried`].
    pub fn retry(
        &mut self,
        id: &RequestId,
        method: Method,
        params: &Value,
        behind: Option<Era>,
        now: Instant,
    ) -> Retried<Q, A> {
        let legacy_behind = behind == Some(Era::Legacy);
        // Behind a 2026-07-28 server the relay gives no rounds: every state is the
        // server's (another gateway's, sealed under its own key or this one).
        let opened = match behind {
            Some(Era::Modern) => Opened::NotSealed,
            _ => self.sealed.open(params, now),
        };
        let sealed = match opened {
            Opened::Refused(why) => return Retried::Refused(why),
            Opened::Round(round) => Some(round),
            Opened::NotSealed => None,
        };
        // Another relay's round (another replica's): carried on here.
        let sealed = match sealed {
            Some(round) if !self.rounds.owns(&round.state) => {
                return match self.sealed.carry_on(id, method, params, round, now) {
                    Ok(carry) => Retried::Carried {
                        params: carry.params,
                        notices: carry.notices,
                    },
                    Err(why) => Retried::Refused(why),
                };
            }
            sealed => sealed,
        };
        let state = match &sealed {
            Some(round) => Some(&*round.state),
            None => self.rounds.ours(params),
        };
        let Some(state) = state else {
            // Answers to no round of the relay's, for a legacy server (which knows no
            // rounds): nothing they could answer, so refused, not passed on. (A
            // 2026-07-28 server's own rounds pass; a task's questions are answered by
            // `tasks/update`, not in a round.)
            if legacy_behind && may_ask_for_input(method) && params.get("inputResponses").is_some()
            {
                return Retried::Refused(invalid(
                    "inputResponses answer the inputRequests of a round, and no round of this \
                     request is open: send its requestState with them, or leave them out",
                ));
            }
            return Retried::Pass;
        };
        if self.another_request(state, method, params) {
            return Retried::Refused(another_request());
        }
        let retry = match self.rounds.retry(state, params, now) {
            Ok(retry) => retry,
            Err(why) => return Retried::Refused(why),
        };
        let token = retry.exchange;
        self.sealed.took(token, params);
        let mut over = retry.over;
        let then = match (retry.next, self.exchanges.get(token).is_some()) {
            (Next::Round(round), true) => Then::Round(self.sealed_round(token, round, now)),
            (Next::Answer(answer), true) => {
                self.exchanges.carried_on(token, id.clone());
                Then::Answer(token, answer)
            }
            (Next::Wait, true) => {
                self.exchanges.carried_on(token, id.clone());
                Then::Wait
            }
            (_, false) => {
                over.extend(self.rounds.give_up(token));
                Then::Over(invalid("the request this retry carries on is over"))
            }
        };
        Retried::Taken(Taken {
            answers: retry.answers,
            over,
            notices: retry.notices,
            then,
        })
    }

    /// The `requestState` of `params` (of `method`, at `now`) if it is a round's of
    /// this relay's, or (sealed) of another's, and the retry would not be refused — as
    /// another request's, for `inputResponses` that are no object (which leave the
    /// round open), or a seal that does not open: what a store shared by replicas
    /// spends once before [`retry`](Self::retry) takes it.
    pub fn spendable_round<'p>(
        &self,
        method: Method,
        params: &'p Value,
        now: Instant,
    ) -> Option<&'p str> {
        let presented = params.get("requestState").and_then(Value::as_str);
        let answers_ok = params.get("inputResponses").is_none_or(Value::is_object);
        let fits = match self.sealed.open(params, now) {
            Opened::Refused(_) => false,
            Opened::Round(round) if self.rounds.owns(&round.state) => {
                !self.another_request(&round.state, method, params)
            }
            Opened::Round(round) => SealedRounds::repeats(&round, method, params),
            Opened::NotSealed => {
                let state = self.rounds.ours(params)?;
                !self.another_request(state, method, params)
            }
        };
        (answers_ok && fits).then_some(presented?)
    }

    /// The host's answer to a question (`method`, `params`) server `server` asks in
    /// exchange `token`, when that exchange carries on a retry that answered it (a
    /// sealed round's, [`Retried::Carried`]): the question's key in the round, and the
    /// answer, given once.
    pub fn carried_answer(
        &mut self,
        token: u64,
        server: Option<&str>,
        method: ServerMethod,
        params: &Value,
    ) -> Option<(String, Value)> {
        self.sealed.answer(token, server, method.as_str(), params)
    }

    /// `round` of exchange `token` with its `requestState` sealed, when the relay seals
    /// them.
    fn sealed_round(&mut self, token: u64, round: Value, now: Instant) -> Value {
        let Some(exchange) = self.exchanges.get(token) else {
            return round;
        };
        let params = exchange
            .params
            .as_ref()
            .and_then(|p| p.decode::<Value>().ok());
        let params = params.unwrap_or_default();
        let server = exchange.server.as_deref();
        let (method, server) = (exchange.method, server.map(str::to_owned));
        self.sealed
            .seal(token, round, method, &params, server.as_deref(), now)
    }

    /// Whether a retry of round `state` is another request's (another method, or
    /// other params than the request the round was given for).
    fn another_request(&self, state: &str, method: Method, params: &Value) -> bool {
        let token = self.rounds.exchange(state);
        let exchange = token.and_then(|t| self.exchanges.get(t));
        exchange.is_some_and(|e| {
            let original = e.params.as_ref().and_then(|p| p.decode::<Value>().ok());
            e.method != method || original.is_some_and(|o| !same_request(&o, params))
        })
    }

    /// The server's question `token` is over there: see [`Withdrawn`].
    pub fn withdrawn(&mut self, token: u64) -> Withdrawn {
        if let Some(id) = self.questions.remove(&token) {
            return Withdrawn::AtHost(id);
        }
        match self.rounds.withdraw(token) {
            Some((key, method)) => Withdrawn::FromRound(format!(
                "the server withdrew its question {key} ({}) of a 2026-07-28 host's round",
                method.as_str()
            )),
            None => Withdrawn::Unknown,
        }
    }

    /// The host asks for log level `level`: whether it changed (a legacy server is told
    /// then; a 2026-07-28 one gets it in every request anyway).
    pub fn log_level(&mut self, level: LogLevel) -> bool {
        self.log_level.replace(level) != Some(level)
    }

    /// The server behind restarted: it knows no level, and is told the next one asked.
    pub fn forget_log_level(&mut self) {
        self.log_level = None;
    }

    /// When [`handle_timeout`](Self::handle_timeout) should be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.rounds.poll_timeout()
    }

    /// What is past its deadline at `now` (see [`Lapse`]).
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<Lapse<H, Q>> {
        let mut lapses = Vec::new();
        for lapsed in self.rounds.handle_timeout(now) {
            match lapsed {
                Lapsed::Question(reply) => lapses.push(Lapse::Question(reply)),
                Lapsed::Round {
                    exchange,
                    answer_dropped,
                } => {
                    self.sealed.forget(exchange);
                    let Some(gone) = self.exchanges.remove(exchange) else {
                        continue;
                    };
                    let dropped = match answer_dropped {
                        true => "; the server's answer to it was dropped",
                        false => "; it is cancelled at the server",
                    };
                    let notice = format!(
                        "the host did not come back to a round of its {} in time{dropped}",
                        gone.method.as_str()
                    );
                    lapses.push(Lapse::Round {
                        handle: gone.handle,
                        notice,
                    });
                }
            }
        }
        lapses
    }

    /// Everything, given up (the relay ends): every exchange's handle (cancel each at
    /// the server), and every question kept for a round (each fails).
    pub fn close(&mut self) -> (Vec<H>, Vec<Q>) {
        let handles = self.exchanges.drain().map(|(_, e)| e.handle).collect();
        self.questions.clear();
        self.sealed.clear();
        (handles, self.rounds.drain())
    }
}

fn invalid(message: &str) -> RpcError {
    RpcError {
        code: codes::INVALID_PARAMS,
        message: message.to_owned(),
        data: None,
    }
}

#[path = "whose.rs"]
mod whose;
pub use whose::Whose;

#[cfg(test)]
#[path = "relay_tests.rs"]
mod tests;
