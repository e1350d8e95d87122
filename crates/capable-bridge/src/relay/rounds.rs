//! A legacy server's questions to a 2026-07-28 host, which takes no requests: each goes
//! to the host in an `input_required` round, the answer to a request of the host's
//! waiting on the server, and the host's retry brings the answers back and carries the
//! exchange on. The core's [`Relay`](capable::internal::bridge::Relay) decides (whose each
//! question is, what is kept, which request is whose retry, what a retry gets,
//! deadlines); this file carries it out.
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

use capable::internal::bridge::{Lapse, Retried, Then, Whose};
use capable::internal::server::{client_allows, ClientRequest};
use serde_json::Value;

use super::era::cannot_ask;
use super::{gone, Relay};
use crate::upstream::Ask;

/// Why a question of a round fails once the request it was asked in is over.
const OVER: &str = "the request it was asked in is over";

impl Relay {
    /// A legacy server's question to a 2026-07-28 host, kept for the exchange it goes
    /// with (the core's [`Whose`]); [`Relay::put_rounds`] puts it to the host.
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
        let shared = self.engine.is_shared();
        if let Some(whose) = self.state.never_asked(ask.method, shared) {
            return self.put_to(whose, ask);
        }
        // A legacy task's question, asked on the bridge's tasks/result.
        let Some(ask) = self.ask_for_task(ask, false) else {
            return;
        };
        let whose = self.state.whose_question(ask.server.as_deref(), shared);
        self.put_to(whose, ask);
    }

    /// Carries out whose question `ask` is.
    fn put_to(&mut self, whose: Whose, ask: Ask) {
        match whose {
            Whose::Exchange(exchange) => {
                let now = Instant::now();
                self.state
                    .keep_question(exchange, ask.token, ask.method, ask.params, ask.reply, now);
            }
            // Nobody's, on purpose: the server is told why, and the audit says so.
            Whose::PutToNone { level, why } => {
                self.audit
                    .host_round(level, &format!("a question of the server's: {why}"));
                let _ = ask.reply.send(Err(cannot_ask(&why)));
            }
            Whose::Nobody => {
                let Some(ask) = self.ask_for_task(ask, true) else {
                    return;
                };
                let why = "no request of the host's waits on the server: it cannot be asked now";
                let _ = ask.reply.send(Err(cannot_ask(&why)));
            }
        }
    }

    /// Every host request waiting on the server with questions kept for it is answered
    /// with a round carrying them.
    pub(super) fn put_rounds(&mut self) {
        for (id, round) in self.state.put_rounds(Instant::now()) {
            self.engine.respond(&id, &round, &mut self.out);
        }
    }

    /// A 2026-07-28 host's request that is the retry of one of the bridge's rounds
    /// (`None`: taken, refused, or its state being spent in the shared store first),
    /// or a request to pass on: the core's
    /// [`Relay::retry`](capable::internal::bridge::Relay::retry) decides.
    pub(super) fn round_answered(&mut self, request: ClientRequest) -> Option<ClientRequest> {
        let Some((store, remembered)) = self.spend.clone() else {
            return self.take_round(request);
        };
        let params: Value = request.params.decode().unwrap_or_default();
        let Some(state) = self.state.spendable_round(request.method, &params) else {
            return self.take_round(request);
        };
        let spend = store.spend_once(&crate::store::key("spent", &[state]), remembered);
        self.queue
            .push(async move { super::Event::Spent(request, spend.await) });
        None
    }

    /// The shared store's word on a retry's `requestState`: spent already elsewhere,
    /// refused; else (the first, or the store not answering: this relay still spends
    /// it once) taken here.
    pub(super) fn spent(
        &mut self,
        request: ClientRequest,
        spent: Result<bool, crate::store::StoreError>,
    ) {
        match spent {
            Ok(false) => {
                let why = super::invalid_params(
                    "this requestState was spent already (a round is answered once, whichever \
                     replica its retry reaches)",
                    None,
                );
                self.engine.respond_error(&request.id, &why, &mut self.out);
            }
            Ok(true) => self.take_then_forward(request),
            Err(e) => {
                let notice = format!("{e}: a requestState spent in this replica alone");
                self.audit.host_round("warning", &notice);
                self.take_then_forward(request);
            }
        }
    }

    /// A retry taken, or passed on when it is none of the relay's rounds'.
    fn take_then_forward(&mut self, request: ClientRequest) {
        if let Some(request) = self.take_round(request) {
            self.forward(request);
        }
    }

    /// The core's [`Relay::retry`](capable::internal::bridge::Relay::retry) on a
    /// retry: taken, refused, or passed on (`Some`).
    fn take_round(&mut self, request: ClientRequest) -> Option<ClientRequest> {
        let params: Value = request.params.decode().unwrap_or_default();
        let legacy_behind = self.servers.era() == Some(capable::internal::Era::Legacy);
        let now = Instant::now();
        let retried = self
            .state
            .retry(&request.id, request.method, &params, legacy_behind, now);
        let taken = match retried {
            Retried::Pass => return Some(request),
            Retried::Refused(why) => {
                self.engine.respond_error(&request.id, &why, &mut self.out);
                return None;
            }
            Retried::Taken(taken) => taken,
        };
        for (reply, answer) in taken.answers {
            let _ = reply.send(Ok(answer));
        }
        for reply in taken.over {
            let _ = reply.send(Err(gone(OVER)));
        }
        for notice in &taken.notices {
            self.audit.host_round("info", notice);
        }
        match taken.then {
            Then::Round(round) => {
                self.engine.respond(&request.id, &round, &mut self.out);
            }
            Then::Answer(token, answer) => self.answer(token, answer),
            // The exchange goes on, under the retry's id.
            Then::Wait => {}
            Then::Over(why) => {
                self.engine.respond_error(&request.id, &why, &mut self.out);
            }
        }
        None
    }

    /// Something of the rounds past its deadline: a question fails; a round the host
    /// never came back to ends its exchange (cancelled at the server).
    pub(super) fn lapsed(&mut self, lapse: Lapse<super::AbortHandle, super::Reply>) {
        match lapse {
            Lapse::Question(reply) => {
                let _ = reply.send(Err(gone(
                    "the host did not come back with an answer in time",
                )));
            }
            Lapse::Round { handle, notice } => {
                handle.abort();
                self.audit.host_round("warning", &notice);
            }
        }
    }
}
