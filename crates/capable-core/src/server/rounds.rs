//! A legacy server's questions to a 2026-07-28 client, which takes no requests: what a
//! server that relays another (a bridge) does when the server behind it asks
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) while its own client
//! speaks the modern era.
//!
//! ```text
//!  client ── tools/call (id 1) ──> relay ── tools/call ──> legacy server
//!                                  relay <── elicitation/create ── server
//!                                  relay <── sampling/createMessage ── server
//!  client <── input_required {inputRequests: {elicitation-1, sampling-2},
//!                             requestState: S} ─────────── (answers id 1)
//!  client ── tools/call (id 2) + inputResponses {elicitation-1, sampling-2} + S ──> relay
//!                                  relay ── each answer to its question ──> server
//!  client <── the call's result (answers id 2) ───────────────── server's answer
//! ```
//!
//! The questions are kept by the exchange they were asked in (the client request that
//! waits on the server); the client holds at most one round of an exchange at a time,
//! under a state of the relay's own that it echoes exactly on its retry. The rules:
//!
//! | what happens | while | what the relay does |
//! |---|---|---|
//! | the server asks | the client's request waits | the question is kept; [`Rounds::round`] puts every question kept by then in one round, the answer to that request |
//! | the server asks | the client holds a round | kept for the next round: the retry is answered with it |
//! | the retry answers a key | | the answer goes to its question |
//! | the retry leaves a key out | | asked again in the next round (the specification: ask again rather than fail) |
//! | the retry answers a key the round did not ask | | ignored, with a notice |
//! | the server withdraws a question (`notifications/cancelled`) | kept | dropped |
//! | the server withdraws a question | in the round the client holds | dropped; an answer the retry brings for it is ignored, with a notice |
//! | a question reaches its deadline | | the server gets an error for it; an answer that comes later is ignored, with a notice |
//! | the server answers the exchange | the client holds a round | the answer is kept for the retry, which gets it; questions not yet put to the client get an error (the request they were asked in is over) |
//! | the round reaches its deadline | the client never came back | every question of the exchange gets an error, a kept answer is dropped, and the exchange is over ([`Lapsed::Round`]) |
//! | the retry has nothing more to answer with | | it carries the exchange on, under its own id ([`Next::Wait`]) |
//! | the retry names another tool, prompt or URI, or other arguments ([`same_request`]) | | refused before it is taken: the round stays open |
//!
//! A round's state is unguessable (a digest of a secret and a counter): a client that
//! holds one round cannot answer another client's. Its beginning names the relay (a
//! digest of the secret too), so a state of this relay's that is no open round
//! (answered, past its deadline) is refused, never passed to the server behind, while
//! another relay's state (a bridge behind a bridge) passes on as the server's.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::jsonrpc::{codes, RpcError};
use crate::time::deadline;

use super::requests::ServerMethod;

/// How every state a relay gives out begins (its own mark follows).
const STATE_PREFIX: &str = "capable-relay-";

/// One question of the server's, kept for its exchange.
struct Question<Q> {
    /// The question's id of the relay's (see [`Rounds::withdraw`]).
    id: u64,
    /// Its key in `inputRequests` and `inputResponses`.
    key: String,
    method: ServerMethod,
    params: Value,
    /// Where the answer goes; `None` once the question ended unanswered (`ended` says
    /// how), when an answer the retry brings for it is ignored.
    reply: Option<Q>,
    ended: &'static str,
    deadline: Instant,
    /// It is in the round the client holds.
    asked: bool,
}

/// What is kept of one exchange.
struct Held<Q, A> {
    questions: Vec<Question<Q>>,
    /// The round the client holds: its state and deadline.
    out: Option<(String, Instant)>,
    /// The server's answer to the exchange, kept for the retry.
    answer: Option<A>,
}

/// What a client's retry gets (see [`Retry::next`]).
#[derive(Debug)]
pub enum Next<A> {
    /// The next round, to answer the retry with: questions the server asked while the
    /// client held the last one, and those the retry did not answer.
    Round(Value),
    /// The server's answer to the exchange, kept while the client held the round.
    Answer(A),
    /// Nothing yet: the retry carries the exchange on, under its id.
    Wait,
}

/// A client's retry of a round, taken (see [`Rounds::retry`]).
#[derive(Debug)]
pub struct Retry<Q, A> {
    /// The exchange the round belongs to.
    pub exchange: u64,
    /// Each answered question's reply, and its answer.
    pub answers: Vec<(Q, Value)>,
    /// Questions that can no longer be put to the client (the server answered the
    /// exchange): each gets an error.
    pub over: Vec<Q>,
    /// What the retry brought that was ignored, said for the audit.
    pub notices: Vec<String>,
    /// What the retry gets.
    pub next: Next<A>,
}

/// What reached its deadline (see [`Rounds::handle_timeout`]).
#[derive(Debug)]
pub enum Lapsed<Q> {
    /// A question nobody answered in time: it gets an error.
    Question(Q),
    /// The client never came back to the round of `exchange`: the exchange is over
    /// (its questions are among the [`Lapsed::Question`]s); `answer_dropped` says
    /// whether the server's answer to it was kept and is now dropped.
    Round {
        /// The exchange.
        exchange: u64,
        /// Whether a kept answer of the server's is dropped.
        answer_dropped: bool,
    },
}

/// The questions and rounds of every exchange (see the module documentation); `Q` is
/// where each answer goes, `A` the server's answer to an exchange.
pub struct Rounds<Q, A> {
    timeout: Duration,
    secret: [u8; 32],
    /// How this relay's states begin: [`STATE_PREFIX`] and its mark.
    prefix: String,
    issued: u64,
    next_key: u64,
    held: HashMap<u64, Held<Q, A>>,
    /// The exchange of each open round, by its state.
    states: HashMap<String, u64>,
}

impl<Q, A> std::fmt::Debug for Rounds<Q, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rounds")
            .field("exchanges", &self.held.len())
            .field("open", &self.states.len())
            .finish_non_exhaustive()
    }
}

impl<Q, A> Rounds<Q, A> {
    /// Rounds whose questions and rounds each last `timeout`; `secret` (random, of the
    /// caller's) makes their states unguessable.
    pub fn new(timeout: Duration, secret: [u8; 32]) -> Self {
        let mark = Sha256::new()
            .chain_update(secret)
            .chain_update(b"mark")
            .finalize();
        Rounds {
            timeout,
            secret,
            prefix: format!("{STATE_PREFIX}{}-", encode(&mark[..6])),
            issued: 0,
            next_key: 0,
            held: HashMap::new(),
            states: HashMap::new(),
        }
    }

    /// Keeps the server's question `id` (`method`, `params`), asked at `now` while
    /// `exchange` waits on it, until its deadline; `reply` is where the answer will go.
    /// It reaches the client with the next [`Rounds::round`] of the exchange, or the
    /// retry of the round the client holds.
    pub fn ask(
        &mut self,
        exchange: u64,
        id: u64,
        method: ServerMethod,
        params: Value,
        reply: Q,
        now: Instant,
    ) {
        self.next_key += 1;
        let kind = method.as_str().split('/').next().unwrap_or("question");
        let question = Question {
            id,
            key: format!("{kind}-{}", self.next_key),
            method,
            params,
            reply: Some(reply),
            ended: "",
            deadline: deadline(now, self.timeout),
            asked: false,
        };
        self.held
            .entry(exchange)
            .or_insert_with(|| Held {
                questions: Vec::new(),
                out: None,
                answer: None,
            })
            .questions
            .push(question);
    }

    /// Whether the client holds a round of `exchange` (it has the questions, and has
    /// not come back yet).
    pub fn holds(&self, exchange: u64) -> bool {
        self.held.get(&exchange).is_some_and(|h| h.out.is_some())
    }

    /// The `input_required` result that puts every question `exchange` keeps to the
    /// client, when its request waits (the client holds no round of it) and there is
    /// one; the round lasts until `now` plus the timeout.
    pub fn round(&mut self, exchange: u64, now: Instant) -> Option<Value> {
        let held = self.held.get_mut(&exchange)?;
        if held.out.is_some() || !held.questions.iter().any(|q| q.reply.is_some()) {
            return None;
        }
        let mut requests = Map::new();
        for q in held.questions.iter_mut().filter(|q| q.reply.is_some()) {
            q.asked = true;
            // A question without params has none in the round either: never `null`.
            let request = match &q.params {
                Value::Null => json!({"method": q.method.as_str()}),
                params => json!({"method": q.method.as_str(), "params": params}),
            };
            requests.insert(q.key.clone(), request);
        }
        self.issued += 1;
        let digest = Sha256::new()
            .chain_update(self.secret)
            .chain_update(self.issued.to_le_bytes())
            .finalize();
        let state = format!("{}{}", self.prefix, encode(&digest[..18]));
        held.out = Some((state.clone(), deadline(now, self.timeout)));
        self.states.insert(state.clone(), exchange);
        Some(json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": state,
        }))
    }

    /// The `requestState` of a client request's `params`, when it is one these rounds
    /// gave out (open or not): the request is the retry of one of them, never the
    /// server's behind to see.
    pub fn ours<'p>(&self, params: &'p Value) -> Option<&'p str> {
        let state = params.get("requestState")?.as_str()?;
        self.owns(state).then_some(state)
    }

    /// Whether `state` is one these rounds gave out (open or not).
    pub fn owns(&self, state: &str) -> bool {
        state.starts_with(&self.prefix)
    }

    /// The exchange whose open round has `state`.
    pub fn exchange(&self, state: &str) -> Option<u64> {
        self.states.get(state).copied()
    }

    /// The client's retry (`params`) of the open round `state`, taken: its answers, and
    /// what the retry gets ([`Next`]); a next round lasts until `now` plus the timeout.
    /// An error for the retry when the round is not open, or `inputResponses` is no
    /// object (the round stays open then).
    pub fn retry(
        &mut self,
        state: &str,
        params: &Value,
        now: Instant,
    ) -> Result<Retry<Q, A>, RpcError> {
        let empty = Map::new();
        let responses = match params.get("inputResponses") {
            None => &empty,
            Some(Value::Object(responses)) => responses,
            Some(_) => return Err(invalid("inputResponses is not an object")),
        };
        let Some(exchange) = self.states.remove(state) else {
            return Err(invalid(
                "no open round has this requestState: it was answered, or is past its deadline",
            ));
        };
        let Some(held) = self.held.get_mut(&exchange) else {
            return Err(invalid("the request this retry carries on is over"));
        };
        held.out = None;
        let mut answers = Vec::new();
        let mut notices = Vec::new();
        let mut asked = Vec::new();
        let mut kept = Vec::new();
        for mut q in held.questions.drain(..) {
            if !q.asked {
                kept.push(q);
                continue;
            }
            asked.push(q.key.clone());
            match (q.reply.take(), responses.get(&q.key)) {
                (Some(reply), Some(answer)) => answers.push((reply, answer.clone())),
                (Some(reply), None) => {
                    q.reply = Some(reply);
                    q.asked = false;
                    kept.push(q);
                }
                (None, Some(_)) => notices.push(format!(
                    "the answer to {} ({}) was ignored: {}",
                    q.key,
                    q.method.as_str(),
                    q.ended
                )),
                (None, None) => {}
            }
        }
        held.questions = kept;
        for key in responses.keys().filter(|k| !asked.contains(k)) {
            notices.push(format!(
                "the retry answered {key}, which its round did not ask: ignored"
            ));
        }
        let mut over = Vec::new();
        let next = if let Some(answer) = held.answer.take() {
            over.extend(held.questions.drain(..).filter_map(|q| q.reply));
            Next::Answer(answer)
        } else if let Some(round) = self.round(exchange, now) {
            Next::Round(round)
        } else {
            Next::Wait
        };
        self.forget_if_empty(exchange);
        Ok(Retry {
            exchange,
            answers,
            over,
            notices,
            next,
        })
    }

    /// The server answered `exchange` while the client holds a round of it: the answer
    /// is kept for the retry, and the replies of the questions not yet put to the
    /// client are given back (each gets an error). Without a round out, the answer back.
    pub fn keep(&mut self, exchange: u64, answer: A) -> Result<Vec<Q>, A> {
        let Some(held) = self.held.get_mut(&exchange).filter(|h| h.out.is_some()) else {
            return Err(answer);
        };
        held.answer = Some(answer);
        let (asked, unasked) = held.questions.drain(..).partition(|q| q.asked);
        held.questions = asked;
        Ok(unasked
            .into_iter()
            .filter_map(|q: Question<Q>| q.reply)
            .collect())
    }

    /// The server withdrew question `id`: kept, it is dropped; in the round the client
    /// holds, its answer will be ignored. Its key and method, when it was one of these
    /// rounds' and still open.
    pub fn withdraw(&mut self, id: u64) -> Option<(String, ServerMethod)> {
        let (&exchange, held) = self
            .held
            .iter_mut()
            .find(|(_, h)| h.questions.iter().any(|q| q.id == id && q.reply.is_some()))?;
        let mut withdrawn = None;
        held.questions.retain_mut(|q| {
            if q.id != id || q.reply.is_none() {
                return true;
            }
            q.reply = None;
            q.ended = "the server withdrew the question";
            withdrawn = Some((q.key.clone(), q.method));
            q.asked
        });
        self.forget_if_empty(exchange);
        withdrawn
    }

    /// When [`Rounds::handle_timeout`] should be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let rounds = self
            .held
            .values()
            .filter_map(|h| h.out.as_ref().map(|o| o.1));
        let questions = self
            .held
            .values()
            .flat_map(|h| &h.questions)
            .filter(|q| q.reply.is_some())
            .map(|q| q.deadline);
        rounds.chain(questions).min()
    }

    /// What is past its deadline at `now`, given up (see [`Lapsed`]).
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<Lapsed<Q>> {
        let mut lapsed = Vec::new();
        let due: Vec<u64> = self
            .held
            .iter()
            .filter(|(_, h)| h.out.as_ref().is_some_and(|o| o.1 <= now))
            .map(|(exchange, _)| *exchange)
            .collect();
        for exchange in due {
            let answer_dropped = self.held.get(&exchange).is_some_and(|h| h.answer.is_some());
            let replies = self.give_up(exchange);
            lapsed.extend(replies.into_iter().map(Lapsed::Question));
            lapsed.push(Lapsed::Round {
                exchange,
                answer_dropped,
            });
        }
        let mut looked_at = Vec::new();
        for (&exchange, held) in &mut self.held {
            held.questions.retain_mut(|q| {
                if q.deadline > now || q.reply.is_none() {
                    return true;
                }
                lapsed.extend(q.reply.take().map(Lapsed::Question));
                q.ended = "the question was past its deadline";
                q.asked
            });
            looked_at.push(exchange);
        }
        for exchange in looked_at {
            self.forget_if_empty(exchange);
        }
        lapsed
    }

    /// Everything of `exchange`, given up (its client request was cancelled, or it
    /// ended): the replies of its questions.
    pub fn give_up(&mut self, exchange: u64) -> Vec<Q> {
        let Some(held) = self.held.remove(&exchange) else {
            return Vec::new();
        };
        if let Some((state, _)) = held.out {
            self.states.remove(&state);
        }
        held.questions.into_iter().filter_map(|q| q.reply).collect()
    }

    /// Everything, given up: the replies of every question.
    pub fn drain(&mut self) -> Vec<Q> {
        self.states.clear();
        self.held
            .drain()
            .flat_map(|(_, h)| h.questions)
            .filter_map(|q| q.reply)
            .collect()
    }

    /// Forgets `exchange` when nothing of it is left.
    fn forget_if_empty(&mut self, exchange: u64) {
        if self
            .held
            .get(&exchange)
            .is_some_and(|h| h.out.is_none() && h.answer.is_none() && h.questions.is_empty())
        {
            self.held.remove(&exchange);
        }
    }
}

/// Whether a retry (its `params`) repeats the request its round was given for
/// (`original`'s params), as the specification asks: the same tool or prompt with the
/// same arguments (absent ones are `{}`), or the same URI. The members a retry adds or
/// changes (`inputResponses`, `requestState`, `_meta`) do not count.
pub fn same_request(original: &Value, retry: &Value) -> bool {
    original.get("name") == retry.get("name")
        && original.get("uri") == retry.get("uri")
        && arguments(original) == arguments(retry)
}

/// A request's `arguments`, `None` when absent, `null` or `{}`.
fn arguments(params: &Value) -> Option<&Value> {
    params
        .get("arguments")
        .filter(|a| !a.is_null() && a.as_object().is_none_or(|a| !a.is_empty()))
}

fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn invalid(message: &str) -> RpcError {
    RpcError {
        code: codes::INVALID_PARAMS,
        message: message.into(),
        data: None,
    }
}

#[cfg(test)]
#[path = "rounds_tests.rs"]
mod tests;
