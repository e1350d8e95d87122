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

use capable::internal::bridge::{local, tell_log_level, Local, Tell};
use capable::internal::server::{ClientRequest, LogLevel};
use capable::internal::{Era, Method};
use futures_util::FutureExt;
use serde_json::Value;

use super::Relay;

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
                self.core.respond(&request.id, &serde_json::json!({}));
                self.follow(self.core.engine().interest());
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
                self.core.respond(&request.id, &serde_json::json!({}));
                None
            }
            _ => Some(request),
        }
    }

    /// The server's log level follows what the host asks for, as the core's
    /// [`tell_log_level`] says for each server.
    fn follow_log_level(&mut self, level: LogLevel) {
        let changed = self.core.log_level(level);
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
}
