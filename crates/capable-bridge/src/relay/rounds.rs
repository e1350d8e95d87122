//! A legacy server's questions to a 2026-07-28 host, which takes no requests: each goes
//! to the host in an `input_required` round, the answer to a request of the host's
//! waiting on the server, and the host's retry brings the answers back and carries the
//! exchange on. The core's [`Rounds`](capable::internal::server::Rounds) decides (what is
//! kept, what a retry gets, deadlines); this file carries it out.
//!
//! | what happens | what the bridge does |
//! |---|---|
//! | the server asks | a question naming a task the bridge fetches is that task's (`task_input.rs`); else it goes to the host's oldest request waiting on that server (of many, the one that asks) that may take one (a call, a prompt, a read); failing that, it is kept for the round the host holds |
//! | questions arrive together | one round carries them all (several keys in `inputRequests`) |
//! | the host retries | each answer goes to its question; the retry gets the next round, the server's answer if it came meanwhile, or waits for it |
//! | the server withdraws a question, or answers while the host holds the round | see the core's rules; ignored answers are audit notices |
//! | the host never comes back | at the round's deadline its questions fail, the exchange is cancelled at the server, and the audit says so |
//! | a retry of a spent round, or of another request's (another method, tool, prompt, URI or arguments) | refused (-32602), never passed to the server |

use std::time::Instant;

use capable::internal::bridge::Asker;
use capable::internal::input_rounds::may_ask_for_input;
use capable::internal::server::{
    client_allows, same_request, ClientRequest, Lapsed, Next, ServerMethod,
};
use serde_json::Value;

use super::era::cannot_ask;
use super::{gone, invalid_params, Answer, Relay};
use crate::upstream::Ask;

impl Relay {
    /// A legacy server's question to a 2026-07-28 host, kept for the exchange it goes
    /// with; [`Relay::put_rounds`] puts it to the host.
    pub(super) fn ask_in_a_round(&mut self, ask: Ask) {
        let url_mode = ask.params.get("mode").and_then(Value::as_str) == Some("url");
        let allowed = match (
            self.engine.phase().version(),
            self.engine.phase().capabilities(),
        ) {
            (Some(version), Some(caps)) => client_allows(ask.method, version, caps, url_mode),
            _ => Ok(()),
        };
        if let Err(why) = allowed {
            let _ = ask.reply.send(Err(cannot_ask(&why)));
            return;
        }
        // Roots are a legacy session's, asked as it starts or when they change, never
        // about one request; a session shared by hosts the bridge cannot tell apart
        // has no one host whose roots they are.
        if self.engine.is_shared() && ask.method == ServerMethod::ListRoots {
            let why = "roots/list asks for a session's roots, and this server's session is \
                       shared by 2026-07-28 hosts the bridge cannot tell apart";
            return self.put_to_none(ask, "info", why);
        }
        // A legacy task's question, asked on the bridge's tasks/result.
        let Some(ask) = self.ask_for_task(ask, false) else {
            return;
        };
        // The request at the server that asks (of many) whose question it is: the core's
        // table decides, and never guesses among hosts it cannot tell apart.
        let from = ask.server.as_deref();
        let holds = |token| self.rounds.holds(token);
        let token = match self.exchanges.asker(from, self.engine.is_shared(), holds) {
            Asker::To(token) => token,
            Asker::Ambiguous(candidates) => {
                let why = format!(
                    "{candidates} requests in flight could have asked it, of hosts the bridge \
                     cannot tell apart, and the server did not say which: it is put to none of them"
                );
                return self.put_to_none(ask, "warning", &why);
            }
            Asker::Nobody => {
                let Some(ask) = self.ask_for_task(ask, true) else {
                    return;
                };
                let why = "no request of the host's waits on the server: it cannot be asked now";
                let _ = ask.reply.send(Err(cannot_ask(&why)));
                return;
            }
        };
        let now = Instant::now();
        self.rounds
            .ask(token, ask.token, ask.method, ask.params, ask.reply, now);
    }

    /// A question of the server's that no host of a shared session may be given: the
    /// server is told why, and the audit says so (at `level`).
    fn put_to_none(&self, ask: Ask, level: &str, why: &str) {
        self.audit
            .host_round(level, &format!("a question of the server's: {why}"));
        let _ = ask.reply.send(Err(cannot_ask(&why)));
    }

    /// Every host request waiting on the server with questions kept for it is answered
    /// with a round carrying them.
    pub(super) fn put_rounds(&mut self) {
        let now = Instant::now();
        for token in self.exchanges.awaited() {
            let Some(round) = self.rounds.round(token, now) else {
                continue;
            };
            if let Some(id) = self.exchanges.put_in_a_round(token) {
                self.engine.respond(&id, &round, &mut self.out);
            }
        }
    }

    /// A 2026-07-28 host's request that is the retry of one of the bridge's rounds
    /// (`None`: taken), or a request to pass on.
    pub(super) fn round_answered(&mut self, request: ClientRequest) -> Option<ClientRequest> {
        let params: Value = request.params.decode().unwrap_or_default();
        let Some(state) = self.rounds.ours(&params) else {
            // Answers to no round of the bridge's, for the one legacy server behind (which
            // knows no rounds): nothing they could answer, so they are refused, not
            // passed on. (Of many servers, a 2026-07-28 one's own rounds pass.)
            // (A task's questions are answered by `tasks/update`, not in a round.)
            let legacy_behind = self.servers.era() == Some(capable::internal::Era::Legacy);
            let in_a_round = may_ask_for_input(request.method);
            if legacy_behind && in_a_round && params.get("inputResponses").is_some() {
                let why = invalid_params(
                    "inputResponses answer the inputRequests of a round, and no round of \
                     this request is open: send its requestState with them, or leave them out",
                    None,
                );
                self.engine.respond_error(&request.id, &why, &mut self.out);
                return None;
            }
            return Some(request);
        };
        let token = self.rounds.exchange(state);
        let exchange = token.and_then(|t| self.exchanges.get(t));
        let another = exchange.is_some_and(|e| {
            let original = e.params.as_ref().and_then(|p| p.decode::<Value>().ok());
            e.method != request.method || original.is_some_and(|o| !same_request(&o, &params))
        });
        if another {
            let why = invalid_params(
                "this requestState was given for another request: a retry repeats its method \
                 and params, adding inputResponses",
                None,
            );
            self.engine.respond_error(&request.id, &why, &mut self.out);
            return None;
        }
        let retry = match self.rounds.retry(state, &params, Instant::now()) {
            Ok(retry) => retry,
            Err(why) => {
                self.engine.respond_error(&request.id, &why, &mut self.out);
                return None;
            }
        };
        for (reply, answer) in retry.answers {
            let _ = reply.send(Ok(answer));
        }
        for reply in retry.over {
            let _ = reply.send(Err(gone("the request it was asked in is over")));
        }
        for notice in &retry.notices {
            self.audit.host_round("info", notice);
        }
        let token = retry.exchange;
        let open = self.exchanges.get(token).is_some();
        match (retry.next, open) {
            (Next::Round(round), true) => {
                self.engine.respond(&request.id, &round, &mut self.out);
            }
            (Next::Answer(answer), true) => {
                self.exchanges.carried_on(token, request.id);
                self.answer(token, answer);
            }
            // The exchange goes on, under the retry's id.
            (Next::Wait, true) => {
                self.exchanges.carried_on(token, request.id);
            }
            (_, false) => {
                let over = invalid_params("the request this retry carries on is over", None);
                self.engine.respond_error(&request.id, &over, &mut self.out);
                for reply in self.rounds.give_up(token) {
                    let _ = reply.send(Err(gone("the request it was asked in is over")));
                }
            }
        }
        None
    }

    /// The server's answer to exchange `token`: kept for the host's retry when the host
    /// holds a round of it (`None`), else back, for the host's waiting request.
    pub(super) fn keep_for_retry(&mut self, token: u64, answer: Answer) -> Option<Answer> {
        let method = match self.exchanges.get(token) {
            Some(e) if self.exchanges.in_a_round(token) => e.method,
            _ => return Some(answer),
        };
        // No round out after all: the exchange ends with the answer.
        let over = match self.rounds.keep(token, answer) {
            Ok(over) => over,
            Err(answer) => return Some(answer),
        };
        let notice = format!(
            "the server answered {} while the host holds a round of it: kept for the host's retry",
            method.as_str()
        );
        self.audit.host_round("info", &notice);
        for reply in over {
            let _ = reply.send(Err(gone("the request it was asked in is over")));
        }
        None
    }

    /// Something of the rounds past its deadline: a question fails; a round the host
    /// never came back to ends its exchange (cancelled at the server).
    pub(super) fn lapsed(&mut self, lapsed: Lapsed<super::Reply>) {
        match lapsed {
            Lapsed::Question(reply) => {
                let _ = reply.send(Err(gone(
                    "the host did not come back with an answer in time",
                )));
            }
            Lapsed::Round {
                exchange,
                answer_dropped,
            } => {
                let Some(gone) = self.exchanges.remove(exchange) else {
                    return;
                };
                gone.handle.abort();
                let dropped = match answer_dropped {
                    true => "; the server's answer to it was dropped",
                    false => "; it is cancelled at the server",
                };
                let notice = format!(
                    "the host did not come back to a round of its {} in time{dropped}",
                    gone.method.as_str()
                );
                self.audit.host_round("warning", &notice);
            }
        }
    }
}
