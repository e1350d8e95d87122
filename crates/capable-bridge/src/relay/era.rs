//! Across eras: a legacy host in front of a 2026-07-28 server, and the other way round.
//! What maps is mapped, by the core's rules; what does not was never declared to the
//! host (the engine tells each version only what it defines), so it is refused there —
//! or, for tasks, refused by the bridge with why ([`capable::internal::task_bridge`]).
//!
//! | the host | the server | the bridge |
//! |---|---|---|
//! | legacy `resources/subscribe`, `unsubscribe` | 2026-07-28 | answers them, and keeps a `subscriptions/listen` open for the URIs (`follow.rs`) |
//! | legacy `logging/setLevel` | 2026-07-28 | answers it; the level goes in every later request's `_meta` |
//! | 2026-07-28 `subscriptions/listen` | legacy | subscribes and unsubscribes the URIs the streams ask for (`follow.rs`) |
//! | 2026-07-28 `_meta` log level | legacy | `logging/setLevel` when it changes |
//! | legacy, asked a question | 2026-07-28 `input_required` | the session asks the host (a request of the engine's) and retries |
//! | 2026-07-28, asked a question | legacy `elicitation/create`, … | an `input_required` round for the host's waiting request, every question asked by then in it; its retry answers (`rounds.rs`) |
//! | 2026-07-28, answered | legacy | `resultType`, and a list's or read's caching hints, added ([`capable::internal::server::modern_result`]) |
//! | 2025-11-25 `tasks`: `tools/call` with `params.task`, `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` | 2026-07-28 with the tasks extension | declared as `tasks` (the extension to the server); `resultType: "task"` ⇄ `{task}`, a call run at once a task of the bridge's (completed, or failed for `isError`) that it answers for itself, `tasks/result` by polling `tasks/get` within the bound, `tasks/list` from the tasks the host started (`tasks.rs`) |
//! | 2026-07-28 with the tasks extension: `tools/call`, `tasks/get`, `tasks/cancel` | 2025-11-25 with `tasks.requests.tools.call` | declared as the extension; `params.task` asked when the tool allows it, the outcome of an ended task fetched with `tasks/result`; a task's questions, asked on a `tasks/result` of the bridge's, in `tasks/get`, answered by `tasks/update` (`tasks.rs`, `task_input.rs`) |
//! | 2026-07-28 without the tasks extension: `tools/call` of a tool that requires a task | 2025-11-25 with `tasks.requests.tools.call` | the task run and waited for within the bound: the tool's result; statuses as progress; the host's cancel a `tasks/cancel` (`tasks.rs`) |

use std::time::Instant;

use capable::internal::bridge::{answer_form, local, tell_log_level, Local, Tell, Withdrawn};
use capable::internal::jsonrpc::{codes, RequestId, RpcError};
use capable::internal::server::{ClientRequest, LogLevel};
use capable::internal::{Era, Method};
use futures_util::FutureExt;
use serde_json::value::RawValue;
use serde_json::Value;

use super::Relay;
use crate::upstream::Ask;

impl Relay {
    /// What the bridge answers itself instead of passing on (`None`: answered), and the
    /// log level a host request asks for, carried to the server.
    pub(super) fn local(&mut self, request: ClientRequest) -> Option<ClientRequest> {
        if let Some(level) = request.log_level {
            self.follow_log_level(level);
        }
        let names_a_round =
            || request.params.mentions("requestState") || request.params.mentions("inputResponses");
        let host = self.host_era();
        // A round is only a 2026-07-28 host's: its params are not looked at otherwise.
        let names_a_round = host == Some(Era::Modern) && names_a_round();
        match local(host, self.servers.era(), request.method, names_a_round) {
            Local::Fanout => {
                self.subscribe_request(request);
                None
            }
            Local::Round => self.round_answered(request),
            Local::Subscription => {
                // Taken into account as it is answered; the listen stream follows.
                self.engine
                    .respond(&request.id, &serde_json::json!({}), &mut self.out);
                self.follow(self.engine.interest());
                None
            }
            Local::LogLevel => {
                let level = request
                    .params
                    .decode::<Value>()
                    .ok()
                    .and_then(|p| p.get("level")?.as_str()?.parse::<LogLevel>().ok());
                if let Some(level) = level {
                    self.follow_log_level(level);
                }
                self.engine
                    .respond(&request.id, &serde_json::json!({}), &mut self.out);
                None
            }
            _ => Some(request),
        }
    }

    /// The server's log level follows what the host asks for, as the core's
    /// [`tell_log_level`] says for each server.
    fn follow_log_level(&mut self, level: LogLevel) {
        let changed = self.state.log_level(level);
        for session in self.servers.sessions() {
            let declared = session.check(Method::SetLoggingLevel).is_ok();
            match tell_log_level(changed, session.era(), declared) {
                // Set on the session at once (no request: it goes in every later one's
                // `_meta`), so the future is ready when first polled.
                Tell::InEveryRequest => {
                    let _ = session.set_logging_level(level.as_str()).now_or_never();
                }
                Tell::SetLevel => {
                    self.queue.push(async move {
                        let _ = session.set_logging_level(level.as_str()).await;
                        super::Event::Nothing
                    });
                }
                Tell::Nothing => {}
            }
        }
    }

    /// A question of the server's, put to the host as its era asks.
    pub(super) fn ask(&mut self, ask: Ask) {
        if self.host_era() == Some(Era::Modern) {
            return self.ask_in_a_round(ask);
        }
        // The host request it is about, as the core's table reads it: over HTTP the
        // question goes on that request's stream (a host without a standalone stream
        // hears it there). A legacy session is one host's: no other host's stream.
        let about = self.state.about(ask.server.as_deref());
        let now = Instant::now();
        let (method, params, reply) = (ask.method, &ask.params, ask.reply);
        let out = &mut self.out;
        let sent = self
            .engine
            .request_about(method, params, about.as_ref(), None, reply, now, out);
        match sent {
            Ok(id) => {
                self.state.asked_host(ask.token, id);
            }
            Err((why, reply)) => {
                let _ = reply.send(Err(cannot_ask(&why)));
            }
        }
    }

    /// Question `token` is over at the server: if the host still has it (the server
    /// cancelled it), the host is told to give it up; a 2026-07-28 host's round drops
    /// it (see `rounds.rs`), and so does a task's `inputRequests` (`task_input.rs`).
    pub(super) fn ask_over(&mut self, token: u64) {
        match self.state.withdrawn(token) {
            Withdrawn::AtHost(id) => {
                let reason = "the server withdrew its question";
                let _ = self.engine.cancel(id, reason, &mut self.out);
            }
            Withdrawn::FromRound(notice) => self.audit.host_round("info", &notice),
            Withdrawn::Unknown => {
                if self.task_input.handle_withdrawn(token) {
                    self.run_task_input();
                }
            }
        }
    }

    /// The server's result for host request `id` (in legacy form when `legacy`), as the
    /// host's era must get it.
    pub(super) fn respond(&mut self, id: &RequestId, method: Method, raw: &RawValue, legacy: bool) {
        match answer_form(legacy, self.host_era()) {
            true => self
                .engine
                .respond_from_legacy(id, method, raw, &mut self.out),
            false => self.engine.respond(id, raw, &mut self.out),
        };
    }
}

/// The error a question of the server's gets when the host may not be asked it.
pub(super) fn cannot_ask(why: &dyn std::fmt::Display) -> RpcError {
    RpcError {
        code: codes::METHOD_NOT_FOUND,
        message: format!("the host cannot be asked: {why}"),
        data: None,
    }
}
