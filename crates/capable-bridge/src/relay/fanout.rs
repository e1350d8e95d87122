//! Many servers' resource subscriptions (`capable bridge --config`): what the host
//! subscribes to (legacy `resources/subscribe`) or listens for (a 2026-07-28
//! `subscriptions/listen` with `resourceSubscriptions`) is asked of the server that owns
//! each URI, in that server's era. Every decision is the core's [`Subscriptions`] (what
//! each server is asked, the checks before, which host request waits for which
//! server's outcome and what it is answered, how long an acknowledgement is waited
//! for); this file runs its commands on the sessions, tells it how they went, and
//! carries out its outcomes. The updates reach the host through the engine's table.
//!
//! | when | the bridge |
//! |---|---|
//! | a legacy host's `resources/subscribe` | refused with why when no server owns the URI or its server did not declare `resources.subscribe` (a notice in the audit; nothing sent), else asked of the server and answered as it answered (below) |
//! | a legacy host's `resources/unsubscribe` | undone at the server and answered as it answered; refused like a subscribe for a URI the host holds no subscription of |
//! | … its legacy server answers | the host gets that answer: `{}`, or the server's error as it was (a declared `resources.subscribe` answered -32601: -32601 naming the violation, which is in the audit); a failure is in the audit too; a host refused holds no subscription (the engine's interest changes on success alone) |
//! | … its 2026-07-28 server's stream is opened anew | the host is answered at its acknowledgement: a subscribe of a URI it leaves out is refused with why; a stream that ends first, or a server that goes down, fails it |
//! | … nothing is to ask (held already, the server's last URI let go: its stream ends) | answered at once; the same request waiting already: answered with it |
//! | a 2026-07-28 host opens a listen stream | acknowledged with the URIs whose server takes subscriptions alone (the engine asks [`Many::subscribable`]; the others are a notice in the audit) |
//! | a 2026-07-28 host's listen streams change | their URIs asked of their servers |
//! | a legacy server is asked | `resources/subscribe` / `resources/unsubscribe`, one per URI (a failure is in the audit, and the server holds what it held) |
//! | a 2026-07-28 server is asked | one listen stream with all its URIs, opened again when they change; it holds what its acknowledgement honours (a URI left out: a notice); not acknowledged within the server's request timeout: ended, and failed as below |
//! | a server goes down or is removed | what it held is forgotten (and its stream ends) |
//! | a server is back, a resource list changed | planned again: a restarted server is asked again, the host is not (no host request waits: a failure is in the audit alone) |
//! | a server sends `notifications/resources/updated` | to the host only for a URI that server holds for it, then by the engine's table |

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use capable::internal::bridge::subscriptions::{Command, Outcome, Route, Routes};
use capable::internal::jsonrpc::RpcError;
use capable::internal::notification::Notification;
use capable::internal::server::fanout::Refused;
use capable::internal::server::ClientRequest;
use capable::internal::Method;
use capable::{Error, ListenEvent, ListenFilter, ServerNotification, Session};
use futures_util::future::AbortHandle;
use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};

use super::{Event, Queue, Relay, Servers};
use crate::forward::host_error;
use crate::many::Many;

/// What the relay acts on for the many servers' subscriptions.
pub enum Fanned {
    /// Something on one server's listen stream.
    Listened(String, Result<Option<ListenEvent>, Error>),
    /// A legacy server answered a subscribe or unsubscribe (or it failed).
    Stepped(Command, Result<(), Error>),
}

/// What stops the 2026-07-28 servers' listen streams, one a server (the streams and the
/// legacy servers' steps in flight are on the relay's queue).
#[derive(Default)]
pub(super) struct Streams {
    aborts: HashMap<String, AbortHandle>,
}

impl Streams {
    /// Opens `server`'s stream with `filter` on `queue`; the one it had ends.
    fn open(
        &mut self,
        queue: &mut Queue,
        server: &str,
        session: Arc<Session>,
        filter: ListenFilter,
    ) {
        self.close(server);
        let name = server.to_owned();
        let events = stream::once(async move { session.listen(&filter).await })
            .flat_map(move |opened| match opened {
                Ok(listener) => stream::unfold(Some(listener), |listener| async move {
                    let mut listener = listener?;
                    let event = listener.recv().await;
                    let more = matches!(event, Ok(Some(_)));
                    Some((event, more.then_some(listener)))
                })
                .boxed(),
                Err(e) => stream::once(async move { Err(e) }).boxed(),
            })
            .map(move |event| Event::Fanout(Fanned::Listened(name.clone(), event)));
        let (events, abort) = stream::abortable(events);
        self.aborts.insert(server.to_owned(), abort);
        queue.follow(events.boxed());
    }

    /// Ends `server`'s stream, if it has one (dropped: cancelled at the server).
    fn close(&mut self, server: &str) {
        if let Some(abort) = self.aborts.remove(server) {
            abort.abort();
        }
    }
}

/// The many servers as the core's decisions read them: where a URI routes now, who is
/// up.
impl Routes for Many {
    fn route(&self, uri: &str) -> Route {
        let Some(server) = self.owner_of(uri) else {
            return Route::Nobody;
        };
        let Some(session) = self.ready(&server) else {
            return Route::Down;
        };
        Route::Up {
            era: session.era(),
            capabilities: session.capabilities().clone(),
            within: session.options().config.timeouts.request,
            server,
        }
    }

    fn is_up(&self, server: &str) -> bool {
        self.ready(server).is_some()
    }
}

impl Relay {
    /// A legacy host's `resources/subscribe` or `resources/unsubscribe` (see the module
    /// documentation).
    pub(super) fn subscribe_request(&mut self, request: ClientRequest) {
        let Servers::Many(many) = &self.servers else {
            return;
        };
        let params: Value = request.params.decode().unwrap_or_default();
        let uri = params.get("uri").and_then(Value::as_str);
        let held = &self.core.engine().interest().resource_subscriptions;
        let (id, method, now) = (request.id, request.method, Instant::now());
        self.subscriptions
            .handle_request(id, method, uri, held, &**many, now);
        self.run_subscriptions();
    }

    /// Brings the servers to what the host wants now (see the module documentation):
    /// `held`, and what its requests waiting ask.
    pub(super) fn fan_out(&mut self, held: &[String]) {
        let Servers::Many(many) = &self.servers else {
            return;
        };
        self.subscriptions
            .handle_interest(held, &**many, Instant::now());
        self.run_subscriptions();
    }

    /// Runs what the core's [`Subscriptions`] asks for, and carries out its outcomes.
    pub(super) fn run_subscriptions(&mut self) {
        let Servers::Many(many) = &self.servers else {
            return;
        };
        while let Some(command) = self.subscriptions.poll_upstream() {
            match command {
                Command::Subscribe { ref server, .. } | Command::Unsubscribe { ref server, .. } => {
                    if let Some(session) = many.ready(server) {
                        self.queue.push(async move {
                            let done = match &command {
                                Command::Subscribe { uri, .. } => session.subscribe(uri).await,
                                Command::Unsubscribe { uri, .. } => session.unsubscribe(uri).await,
                                _ => Ok(()),
                            };
                            Event::Fanout(Fanned::Stepped(command, done))
                        });
                    }
                }
                Command::Listen { server, filter } => {
                    if let Some(session) = many.ready(&server) {
                        self.streams.open(&mut self.queue, &server, session, filter);
                    }
                }
                Command::StopListening { server } => self.streams.close(&server),
            }
        }
        while let Some(outcome) = self.subscriptions.poll_outcome() {
            match outcome {
                Outcome::Answer { id, answer: Ok(()) } => {
                    self.core.respond(&id, &json!({}));
                }
                Outcome::Answer { id, answer: Err(e) } => {
                    self.core.respond_error(&id, &e);
                }
                Outcome::Refused { why, once } => refused(many, &why, once),
                Outcome::ListenFailed { server, error } => {
                    self.audit
                        .record("listen_failed", json!({"server": server, "error": error}));
                }
            }
        }
    }

    /// Something of the many servers' subscriptions.
    pub(super) fn fanned(&mut self, fanned: Fanned) {
        let Servers::Many(many) = &self.servers else {
            return;
        };
        match fanned {
            Fanned::Listened(server, Ok(Some(ListenEvent::Notification(n)))) => {
                return self.many_notify(&server, &n);
            }
            Fanned::Listened(server, Ok(Some(ListenEvent::Acknowledged(honoured)))) => {
                self.subscriptions.handle_acknowledged(&server, &honoured);
            }
            Fanned::Listened(server, ended) => {
                let why = ended.err().map(|e| {
                    let error = e.to_string();
                    self.audit
                        .record("listen_failed", json!({"server": server, "error": error}));
                    host_error(&e, &self.audit)
                });
                self.subscriptions.handle_ended(&server, why);
            }
            Fanned::Stepped(step, done) => {
                let answer = done.map_err(|e| self.step_failed(&step, &e));
                self.subscriptions.handle_stepped(step, answer, &**many);
            }
        }
        self.run_subscriptions();
    }

    /// A legacy server's step failed with `e`: in the audit; what the host gets.
    fn step_failed(&self, step: &Command, e: &Error) -> RpcError {
        let (method, server, uri) = match step {
            Command::Subscribe { server, uri } => (Method::Subscribe, server, uri),
            Command::Unsubscribe { server, uri } => (Method::Unsubscribe, server, uri),
            Command::Listen { server, .. } | Command::StopListening { server } => {
                (Method::Listen, server, server)
            }
        };
        let method = method.as_str();
        let error = e.to_string();
        self.audit.record(
            "subscribe_failed",
            json!({"server": server, "method": method, "uri": uri, "error": error}),
        );
        host_error(e, &self.audit)
    }

    /// `server` went down or is gone: what it held is forgotten, its stream ended; a
    /// host's request waiting for its acknowledgement fails.
    pub(super) fn server_down(&mut self, server: &str) {
        self.subscriptions.handle_down(server);
        self.run_subscriptions();
    }

    /// A notification of one of the many servers: an update only from the server that
    /// holds its URI for the host; then the engine's table.
    pub(super) fn many_notify(&mut self, server: &str, n: &ServerNotification) {
        if let Notification::ResourceUpdated { uri } = &n.kind {
            if !self.subscriptions.delivers(server, uri) {
                return;
            }
        }
        self.notify(&n.kind, &n.params);
    }
}

/// A refusal, in the audit (`once`: the first time only, for what is planned again and
/// again).
fn refused(many: &Many, why: &Refused, once: bool) {
    let server = why.server().unwrap_or("bridge");
    let notice = format!("resource subscription refused: {why}");
    match once {
        true => many.notice_once(format!("subscribe {why}"), server, &notice),
        false => many.notice(server, &notice),
    }
}
