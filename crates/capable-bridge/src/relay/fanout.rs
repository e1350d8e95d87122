//! Many servers' resource subscriptions (`capable bridge --config`): what the host
//! subscribes to (legacy `resources/subscribe`) or listens for (a 2026-07-28
//! `subscriptions/listen` with `resourceSubscriptions`) is asked of the server that owns
//! each URI, in that server's era, as the core's [`Fanout`] plans it; which host request
//! waits for which server's outcome, and what it is answered, is the core's
//! [`Subscribing`]; the updates reach the host through the engine's table.
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
//! | a 2026-07-28 server is asked | one listen stream with all its URIs, opened again when they change; it holds what its acknowledgement honours (a URI left out: a notice) |
//! | a server goes down or is removed | what it held is forgotten (and its stream ends) |
//! | a server is back, a resource list changed | planned again: a restarted server is asked again, the host is not (no host request waits: a failure is in the audit alone) |
//! | a server sends `notifications/resources/updated` | to the host only for a URI that server holds for it, then by the engine's table |

use std::collections::HashMap;
use std::sync::Arc;

use capable::internal::bridge::{refusal, Outcome, Subscribing};
use capable::internal::jsonrpc::{codes, RequestId, RpcError};
use capable::internal::notification::Notification;
use capable::internal::server::fanout::{self, Owner, Refused, Step, Wait};
use capable::internal::server::{ClientRequest, Interest};
use capable::internal::Method;
use capable::{Error, ListenEvent, ListenFilter, ServerNotification, Session};
use futures_util::future::AbortHandle;
use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};

use super::{invalid_params, Event, Queue, Relay, Servers};
use crate::forward::host_error;
use crate::many::Many;

/// What the relay acts on for the many servers' subscriptions.
pub enum Fanned {
    /// Something on one server's listen stream.
    Listened(String, Result<Option<ListenEvent>, Error>),
    /// A legacy server answered a step (or it failed).
    Stepped(Step, Result<(), Error>),
}

/// What stops the 2026-07-28 servers' listen streams (one a server; the streams and the
/// legacy servers' steps in flight are on the relay's queue), and the host's requests
/// waiting for either (the core's table).
#[derive(Default)]
pub(super) struct Streams {
    aborts: HashMap<String, AbortHandle>,
    awaiting: Subscribing,
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
        let bound = session.options().config.timeouts.request;
        let events = stream::once(async move { session.listen(&filter).await })
            .flat_map(move |opened| match opened {
                // Its acknowledgement comes first, in the time a request has: a stream
                // that does not acknowledge ends (dropped: cancelled at the server).
                Ok(listener) => stream::unfold(
                    (Some(listener), true),
                    move |(listener, first)| async move {
                        let mut listener = listener?;
                        let event = match first {
                            true => tokio::time::timeout(bound, listener.recv())
                                .await
                                .unwrap_or(Err(Error::Timeout {
                                    method: Method::Listen,
                                    after: bound,
                                })),
                            false => listener.recv().await,
                        };
                        let more = matches!(event, Ok(Some(_)));
                        Some((event, (more.then_some(listener), false)))
                    },
                )
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

/// Where a URI goes: its owner's name and session (`None` when no server owns it or
/// its owner is down: then there is no one to ask).
struct Route {
    uri: String,
    owner: Option<(String, Arc<Session>)>,
    /// Its owner is known, and down (back soon, or gone): not worth a notice.
    down: bool,
}

impl Route {
    fn of(many: &Many, uri: String) -> Route {
        let server = many.owner_of(&uri);
        let owner = server
            .as_ref()
            .and_then(|s| Some((s.clone(), many.ready(s)?)));
        let down = server.is_some() && owner.is_none();
        Route { uri, owner, down }
    }

    /// The owner as the core's plan reads it.
    fn owner(&self) -> Option<Owner<'_>> {
        self.owner.as_ref().map(|(server, session)| Owner {
            server,
            era: session.era(),
            capabilities: session.capabilities(),
        })
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
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            let error = invalid_params(format!("{} needs a uri", request.method), None);
            self.engine
                .respond_error(&request.id, &error, &mut self.out);
            return;
        };
        let holds = self
            .engine
            .interest()
            .resource_subscriptions
            .iter()
            .any(|s| s == uri);
        let route = Route::of(many, uri.to_owned());
        let uri = &route.uri;
        let checked = match (request.method, holds) {
            (Method::Unsubscribe, true) => Ok(()),
            _ if route.down => {
                let why = format!("the server that offers {uri} is not up: try again later");
                Err(invalid_params(why, Some(json!({"uri": uri}))))
            }
            _ => fanout::check(uri, route.owner().as_ref()).map_err(|why| {
                self.refused(many, &why, false);
                refusal(&why)
            }),
        };
        match checked {
            Ok(()) => {
                let server = route.owner.map(|(server, _)| server);
                self.carry_request(request.id, request.method, route.uri, server);
            }
            Err(error) => {
                self.engine
                    .respond_error(&request.id, &error, &mut self.out);
            }
        }
    }

    /// Asks the host's (un)subscribe of `uri` of its `server`; the host is answered
    /// once the server did (at once when nothing is to ask), and holds the
    /// subscription (the engine's interest) only if it succeeded.
    fn carry_request(
        &mut self,
        id: RequestId,
        method: Method,
        uri: String,
        server: Option<String>,
    ) {
        // The same request waiting already: this one waits with it.
        let wait = match self.streams.awaiting.same(method, &uri) {
            Some(wait) => wait,
            None => {
                // Planned as if it were answered: what it asks is wanted meanwhile.
                let steps = self.fan_out_with(&self.engine.interest(), Some((method, &uri)));
                server.map_or(Wait::Nothing, |s| fanout::wait_for(&steps, &s, &uri))
            }
        };
        if let Some(id) = self.streams.awaiting.wait(id, method, uri, wait) {
            self.engine.respond(&id, &json!({}), &mut self.out);
        }
    }

    /// Answers the host's requests, each with its outcome.
    fn answer_awaiting(&mut self, answered: Vec<(RequestId, Outcome)>) {
        for (id, outcome) in answered {
            match outcome {
                Ok(()) => _ = self.engine.respond(&id, &json!({}), &mut self.out),
                Err(e) => _ = self.engine.respond_error(&id, &e, &mut self.out),
            }
        }
    }

    /// Brings the servers to what the host wants now (see the module documentation):
    /// `interest`, and what its requests waiting ask. Returns the steps taken.
    pub(super) fn fan_out(&mut self, interest: &Interest) -> Vec<Step> {
        self.fan_out_with(interest, None)
    }

    /// [`Relay::fan_out`], with what `also` asks wanted too (a request about to wait).
    fn fan_out_with(&mut self, interest: &Interest, also: Option<(Method, &str)>) -> Vec<Step> {
        let Servers::Many(many) = &self.servers else {
            return Vec::new();
        };
        let held = &interest.resource_subscriptions;
        let wanted = self.streams.awaiting.wanted(held, also);
        let routes: Vec<Route> = wanted.into_iter().map(|uri| Route::of(many, uri)).collect();
        let plan = self
            .fanout
            .plan(routes.iter().map(|r| (r.uri.as_str(), r.owner())));
        for why in &plan.refused {
            if !routes.iter().any(|r| r.down && r.uri == why.uri()) {
                self.refused(many, why, true);
            }
        }
        for step in &plan.steps {
            self.carry_out(step.clone());
        }
        plan.steps
    }

    /// A refusal, in the audit (`once`: the first time only, for what is planned again
    /// and again).
    fn refused(&self, many: &Many, why: &Refused, once: bool) {
        let server = why.server().unwrap_or("bridge");
        let notice = format!("resource subscription refused: {why}");
        match once {
            true => many.notice_once(format!("subscribe {why}"), server, &notice),
            false => many.notice(server, &notice),
        }
    }

    fn carry_out(&mut self, step: Step) {
        let Servers::Many(many) = &self.servers else {
            return;
        };
        match step {
            Step::Subscribe { server, uri } => self.subscribe_at(server, uri, Method::Subscribe),
            Step::Unsubscribe { server, uri } => {
                self.subscribe_at(server, uri, Method::Unsubscribe)
            }
            Step::Listen { server, filter } => {
                if let Some(session) = many.ready(&server) {
                    self.streams.open(&mut self.queue, &server, session, filter);
                }
            }
            Step::StopListening { server } => self.streams.close(&server),
            _ => {}
        }
    }

    /// `resources/subscribe` or `resources/unsubscribe` of `uri` at a legacy `server`;
    /// its outcome comes back as [`Fanned::Stepped`].
    fn subscribe_at(&mut self, server: String, uri: String, method: Method) {
        let Some(session) = self.servers.many().and_then(|m| m.ready(&server)) else {
            return;
        };
        self.queue.push(async move {
            let done = match method {
                Method::Subscribe => session.subscribe(&uri).await,
                _ => session.unsubscribe(&uri).await,
            };
            let step = match method {
                Method::Subscribe => Step::Subscribe { server, uri },
                _ => Step::Unsubscribe { server, uri },
            };
            Event::Fanout(Fanned::Stepped(step, done))
        });
    }

    /// Something of the many servers' subscriptions.
    pub(super) fn fanned(&mut self, fanned: Fanned) {
        match fanned {
            Fanned::Listened(server, listened) => self.many_listened(server, listened),
            Fanned::Stepped(step, done) => self.stepped(step, done),
        }
    }

    /// A legacy server answered `step`: the host's request waiting for it gets that
    /// answer; a failure is in the audit, and the server holds what it held.
    fn stepped(&mut self, step: Step, done: Result<(), Error>) {
        let (Step::Subscribe { server, uri } | Step::Unsubscribe { server, uri }) = &step else {
            return;
        };
        if let Err(e) = &done {
            let method = match step {
                Step::Subscribe { .. } => Method::Subscribe,
                _ => Method::Unsubscribe,
            };
            let error = e.to_string();
            self.audit.record(
                "subscribe_failed",
                json!({"server": server, "method": method.as_str(), "uri": uri, "error": error}),
            );
            // A server down since holds nothing: it is asked again once it is back.
            if self
                .servers
                .many()
                .is_some_and(|m| m.ready(server).is_some())
            {
                self.fanout.failed(&step);
            }
        }
        let answer = done.map_err(|e| host_error(&e, &self.audit));
        let answered = self.streams.awaiting.stepped(&step, &answer);
        self.answer_awaiting(answered);
    }

    /// `server` went down or is gone: what it held is forgotten, its stream ended; a
    /// host's request waiting for its acknowledgement fails.
    pub(super) fn server_down(&mut self, server: &str) {
        self.fanout.forget(server);
        self.streams.close(server);
        let why = invalid_params(
            format!("server {server:?} went down before it acknowledged the subscription"),
            Some(json!({"server": server})),
        );
        let answered = self.streams.awaiting.ended(server, &why);
        self.answer_awaiting(answered);
    }

    /// A notification of one of the many servers: an update only from the server that
    /// holds its URI for the host; then the engine's table.
    pub(super) fn many_notify(&mut self, server: &str, n: &ServerNotification) {
        if let Notification::ResourceUpdated { uri } = &n.kind {
            if !self.fanout.holds(server, uri) {
                return;
            }
        }
        self.notify(&n.kind, &n.params);
    }

    /// Something on a server's listen stream: its acknowledgement answers the host's
    /// requests waiting for it (a subscribe of a URI it leaves out is refused, with
    /// why); its end fails them.
    fn many_listened(&mut self, server: String, listened: Result<Option<ListenEvent>, Error>) {
        match listened {
            Ok(Some(ListenEvent::Notification(n))) => self.many_notify(&server, &n),
            Ok(Some(ListenEvent::Acknowledged(honoured))) => {
                let refused = self.fanout.acknowledged(&server, &honoured);
                if let Servers::Many(many) = &self.servers {
                    for why in &refused {
                        self.refused(many, why, true);
                    }
                }
                let answered = self.streams.awaiting.acknowledged(&server, &refused);
                self.answer_awaiting(answered);
            }
            ended => {
                let why = match &ended {
                    Err(e) => {
                        let error = e.to_string();
                        self.audit
                            .record("listen_failed", json!({"server": server, "error": error}));
                        host_error(e, &self.audit)
                    }
                    Ok(_) => RpcError {
                        code: codes::INTERNAL_ERROR,
                        message: format!(
                            "server {server:?} ended its listen stream before it acknowledged it"
                        ),
                        data: Some(json!({"server": server})),
                    },
                };
                let answered = self.streams.awaiting.ended(&server, &why);
                self.answer_awaiting(answered);
                // Opened again at the next plan.
                self.server_down(&server);
            }
        }
    }
}
