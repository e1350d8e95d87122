//! Many servers' resource subscriptions for one host, sans-IO ([`Subscriptions`]): what
//! the host subscribes to (a legacy `resources/subscribe`) or listens for (a 2026-07-28
//! `subscriptions/listen` with `resourceSubscriptions`) is asked of the server that
//! owns each URI, in that server's era; the host's request is answered once that
//! server answered; an update counts only from the server that holds its URI.
//!
//! What each server holds is planned by [`Fanout`]; which host request waits for which
//! outcome is [`Subscribing`]'s. This machine puts them together with what the shell
//! did by hand before: where a URI routes now ([`Routes`], the shell's servers as they
//! are), the checks before a subscribe is asked, what a failure or an acknowledgement
//! does, and how long a 2026-07-28 server's acknowledgement is waited for. The shell
//! runs each [`Command`] on the server's session and tells how it went
//! ([`handle_stepped`](Subscriptions::handle_stepped),
//! [`handle_acknowledged`](Subscriptions::handle_acknowledged),
//! [`handle_ended`](Subscriptions::handle_ended)), wakes at
//! [`poll_timeout`](Subscriptions::poll_timeout) for
//! [`handle_timeout`](Subscriptions::handle_timeout), and carries out every
//! [`Outcome`].
//!
//! | what happens | in | what comes out |
//! |---|---|---|
//! | a legacy host's `resources/subscribe` / `resources/unsubscribe` | [`handle_request`](Subscriptions::handle_request) | refused at once (`-32602`, why) without a `uri`, for a URI no server owns or whose server did not declare `resources.subscribe` ([`Outcome::Refused`] for the audit too), or whose server is down (try again later); else the [`Command`]s that ask it, the request answered when its server did (at once when nothing is to ask; with the same request waiting already, with it) |
//! | the host's interest changes, a server comes or goes, a resource list changes | [`handle_interest`](Subscriptions::handle_interest) | planned again: a [`Command`] per change at each server (a refusal: an [`Outcome::Refused`] once) |
//! | a legacy server answers a step | [`handle_stepped`](Subscriptions::handle_stepped) | the requests waiting for that step get its answer; a failure at a server still up leaves it holding what it held |
//! | a 2026-07-28 server acknowledges | [`handle_acknowledged`](Subscriptions::handle_acknowledged) | it holds what it honours; a subscribe of a URI it left out refused with why, the others answered |
//! | its stream ends, or fails | [`handle_ended`](Subscriptions::handle_ended) | those waiting at it fail; the server holds nothing (what is left of its stream dropped: [`Command::StopListening`]), asked again at the next plan |
//! | no acknowledgement within the server's request timeout | [`handle_timeout`](Subscriptions::handle_timeout) | [`Command::StopListening`], [`Outcome::ListenFailed`], and the same as an end |
//! | a server goes down | [`handle_down`](Subscriptions::handle_down) | the same as an end, with why (a [`Command::StopListening`] only for a server with a stream) |
//! | a server sends `notifications/resources/updated` | [`delivers`](Subscriptions::delivers) | to the host only for a URI that server holds for it |

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use serde_json::json;

use super::subscribing::{refusal, Outcome as Answer, Subscribing};
use crate::capabilities::ServerCapabilities;
use crate::gating::ListenFilter;
use crate::jsonrpc::{codes, RequestId, RpcError};
use crate::server::fanout::{self, Fanout, Owner, Refused, Step, Wait};
use crate::{Era, Method};

/// Where a URI routes now, as the shell's servers say.
#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    /// No server lists it, nor has a template it fits.
    Nobody,
    /// Its server is known, and down (back soon, or gone).
    Down,
    /// Its server is up.
    Up {
        /// Its name.
        server: String,
        /// The era it speaks.
        era: Era,
        /// What it declared.
        capabilities: ServerCapabilities,
        /// How long its acknowledgement of a listen stream is waited for (its request
        /// timeout).
        within: Duration,
    },
}

/// The shell's servers as they are now: where each URI routes, whether a server is up.
pub trait Routes {
    /// Where updates of `uri` are asked now.
    fn route(&self, uri: &str) -> Route;
    /// Whether `server` is up.
    fn is_up(&self, server: &str) -> bool;
}

/// What the shell runs on a server's session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `resources/subscribe` of `uri` at a legacy `server`: its answer is told with
    /// [`Subscriptions::handle_stepped`].
    Subscribe {
        /// The server.
        server: String,
        /// The URI.
        uri: String,
    },
    /// `resources/unsubscribe` of `uri` at a legacy `server`, told the same way.
    Unsubscribe {
        /// The server.
        server: String,
        /// The URI.
        uri: String,
    },
    /// Opens `server`'s listen stream with `filter`; the stream it had ends. Its
    /// acknowledgement is told with [`Subscriptions::handle_acknowledged`], its end
    /// with [`Subscriptions::handle_ended`], each update passed through
    /// [`Subscriptions::delivers`].
    Listen {
        /// The 2026-07-28 server.
        server: String,
        /// The URIs it is asked for.
        filter: ListenFilter,
    },
    /// Ends `server`'s listen stream, if it has one (dropped: cancelled there).
    StopListening {
        /// The server.
        server: String,
    },
}

/// What the shell carries out for the host.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Host request `id` is answered: `{}`, or this error.
    Answer {
        /// The host's request.
        id: RequestId,
        /// `Ok`: `{}`.
        answer: Result<(), RpcError>,
    },
    /// A subscription refused, for the audit (a notice at its server, or the bridge's);
    /// `once`: what is planned again and again is said the first time only.
    Refused {
        /// Why.
        why: Refused,
        /// Said once per refusal.
        once: bool,
    },
    /// A server's listen stream failed (for the audit).
    ListenFailed {
        /// The server.
        server: String,
        /// Why.
        error: String,
    },
}

/// One host's resource subscriptions at many servers (see the module documentation).
#[derive(Debug, Default)]
pub struct Subscriptions {
    fanout: Fanout,
    awaiting: Subscribing,
    /// The listen streams not yet acknowledged: by when, and how long that was.
    unacknowledged: BTreeMap<String, (Instant, Duration)>,
    /// The servers with a listen stream open (or opening).
    listening: BTreeSet<String>,
    commands: VecDeque<Command>,
    outcomes: VecDeque<Outcome>,
}

impl Subscriptions {
    /// The next command to run, once each.
    pub fn poll_upstream(&mut self) -> Option<Command> {
        self.commands.pop_front()
    }

    /// The next outcome to carry out, once each.
    pub fn poll_outcome(&mut self) -> Option<Outcome> {
        self.outcomes.pop_front()
    }

    /// When the first listen stream not yet acknowledged outlives its bound.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.unacknowledged.values().map(|(by, _)| *by).min()
    }

    /// A legacy host's `method` (`resources/subscribe` or `resources/unsubscribe`) of
    /// `uri` under `id`, the host holding `held` now (the engine's interest).
    pub fn handle_request(
        &mut self,
        id: RequestId,
        method: Method,
        uri: Option<&str>,
        held: &[String],
        routes: &impl Routes,
        now: Instant,
    ) {
        let Some(uri) = uri else {
            let why = format!("{method} needs a uri");
            return self.answer(id, Err(invalid_params(why, None)));
        };
        let route = routes.route(uri);
        let holds = held.iter().any(|s| s == uri);
        let checked = match (method, holds, &route) {
            (Method::Unsubscribe, true, _) => Ok(()),
            (_, _, Route::Down) => {
                let why = format!("the server that offers {uri} is not up: try again later");
                Err(invalid_params(why, Some(json!({"uri": uri}))))
            }
            _ => fanout::check(uri, owner(&route).as_ref()).map_err(|why| {
                let error = refusal(&why);
                self.outcomes
                    .push_back(Outcome::Refused { why, once: false });
                error
            }),
        };
        if let Err(error) = checked {
            return self.answer(id, Err(error));
        }
        // The same request waiting already: this one waits with it.
        let wait = match self.awaiting.same(method, uri) {
            Some(wait) => wait,
            None => {
                // Planned as if it were answered: what it asks is wanted meanwhile.
                let steps = self.plan(held, Some((method, uri)), routes, now);
                match &route {
                    Route::Up { server, .. } => fanout::wait_for(&steps, server, uri),
                    _ => Wait::Nothing,
                }
            }
        };
        if let Some(id) = self.awaiting.wait(id, method, uri.to_owned(), wait) {
            self.answer(id, Ok(()));
        }
    }

    /// The servers brought to what the host wants now: `held` (the engine's interest),
    /// and what its requests waiting ask.
    pub fn handle_interest(&mut self, held: &[String], routes: &impl Routes, now: Instant) {
        self.plan(held, None, routes, now);
    }

    /// A legacy server answered `step` (a [`Command::Subscribe`] or
    /// [`Command::Unsubscribe`]) with `answer` (as the host is to get it): the requests
    /// waiting for it get that answer. A failure at a server still up leaves it holding
    /// what it held (one down since holds nothing, and is asked again once it is back).
    pub fn handle_stepped(
        &mut self,
        step: Command,
        answer: Result<(), RpcError>,
        routes: &impl Routes,
    ) {
        let step = match step {
            Command::Subscribe { server, uri } => Step::Subscribe { server, uri },
            Command::Unsubscribe { server, uri } => Step::Unsubscribe { server, uri },
            Command::Listen { .. } | Command::StopListening { .. } => return,
        };
        if answer.is_err() {
            let (Step::Subscribe { server, .. } | Step::Unsubscribe { server, .. }) = &step else {
                return;
            };
            if routes.is_up(server) {
                self.fanout.failed(&step);
            }
        }
        for (id, answer) in self.awaiting.stepped(&step, &answer) {
            self.answer(id, answer);
        }
    }

    /// `server` acknowledged its listen stream with `honoured` (the notifications it
    /// honours): it holds those of its URIs alone, the others refused; the requests
    /// waiting at it are answered.
    pub fn handle_acknowledged(&mut self, server: &str, honoured: &serde_json::Value) {
        self.unacknowledged.remove(server);
        let refused = self.fanout.acknowledged(server, honoured);
        for why in &refused {
            let (why, once) = (why.clone(), true);
            self.outcomes.push_back(Outcome::Refused { why, once });
        }
        for (id, answer) in self.awaiting.acknowledged(server, &refused) {
            self.answer(id, answer);
        }
    }

    /// `server`'s listen stream ended: with `Some(why)` it failed (as the host is to
    /// get it), with `None` the server closed it. Requests waiting at it fail; it holds
    /// nothing, and is asked again at the next plan.
    pub fn handle_ended(&mut self, server: &str, why: Option<RpcError>) {
        let why = why.unwrap_or_else(|| RpcError {
            code: codes::INTERNAL_ERROR,
            message: format!("server {server:?} ended its listen stream before it acknowledged it"),
            data: Some(json!({"server": server})),
        });
        self.fail_at(server, &why);
        self.handle_down(server);
    }

    /// `server` went down or is gone: what it held is forgotten, its stream ended; a
    /// host's request waiting for its acknowledgement fails.
    pub fn handle_down(&mut self, server: &str) {
        self.fanout.forget(server);
        self.unacknowledged.remove(server);
        if self.listening.remove(server) {
            let server = server.to_owned();
            self.commands.push_back(Command::StopListening { server });
        }
        let why = invalid_params(
            format!("server {server:?} went down before it acknowledged the subscription"),
            Some(json!({"server": server})),
        );
        self.fail_at(server, &why);
    }

    /// `now` is past [`poll_timeout`](Self::poll_timeout): each listen stream not
    /// acknowledged in its bound is ended, and counts as failed.
    pub fn handle_timeout(&mut self, now: Instant) {
        let expired: Vec<(String, Duration)> = self
            .unacknowledged
            .iter()
            .filter(|(_, (by, _))| *by <= now)
            .map(|(server, (_, within))| (server.clone(), *within))
            .collect();
        for (server, within) in expired {
            let message = format!(
                "server {server:?} did not acknowledge its listen stream within {within:?}"
            );
            self.outcomes.push_back(Outcome::ListenFailed {
                server: server.clone(),
                error: message.clone(),
            });
            let why = RpcError {
                code: codes::INTERNAL_ERROR,
                message,
                data: Some(json!({"server": server})),
            };
            self.handle_ended(&server, Some(why));
        }
    }

    /// Whether an update of `uri` from `server` is the host's: that server holds the
    /// URI (or one it is under) for it.
    pub fn delivers(&self, server: &str, uri: &str) -> bool {
        self.fanout.holds(server, uri)
    }

    /// How many host requests wait for their servers.
    pub fn waiting(&self) -> usize {
        self.awaiting.len()
    }

    /// Plans what the host wants (`held`, the requests waiting, and `also`) and queues
    /// the commands: the steps taken.
    fn plan(
        &mut self,
        held: &[String],
        also: Option<(Method, &str)>,
        routes: &impl Routes,
        now: Instant,
    ) -> Vec<Step> {
        let wanted = self.awaiting.wanted(held, also);
        let routed: Vec<(String, Route)> = wanted
            .into_iter()
            .map(|uri| {
                let route = routes.route(&uri);
                (uri, route)
            })
            .collect();
        let plan = self.fanout.plan(
            routed
                .iter()
                .map(|(uri, route)| (uri.as_str(), owner(route))),
        );
        for why in plan.refused {
            let down = routed
                .iter()
                .any(|(uri, route)| *route == Route::Down && uri == why.uri());
            if !down {
                self.outcomes
                    .push_back(Outcome::Refused { why, once: true });
            }
        }
        for step in &plan.steps {
            let command = match step.clone() {
                Step::Subscribe { server, uri } => Command::Subscribe { server, uri },
                Step::Unsubscribe { server, uri } => Command::Unsubscribe { server, uri },
                Step::Listen { server, filter } => {
                    let within = routed.iter().find_map(|(_, route)| match route {
                        Route::Up {
                            server: s, within, ..
                        } if *s == server => Some(*within),
                        _ => None,
                    });
                    let within = within.unwrap_or(Duration::ZERO);
                    self.unacknowledged
                        .insert(server.clone(), (now + within, within));
                    self.listening.insert(server.clone());
                    Command::Listen { server, filter }
                }
                Step::StopListening { server } => {
                    self.unacknowledged.remove(&server);
                    self.listening.remove(&server);
                    Command::StopListening { server }
                }
            };
            self.commands.push_back(command);
        }
        plan.steps
    }

    /// The requests waiting at `server` fail with `why`.
    fn fail_at(&mut self, server: &str, why: &RpcError) {
        for (id, answer) in self.awaiting.ended(server, why) {
            self.answer(id, answer);
        }
    }

    fn answer(&mut self, id: RequestId, answer: Answer) {
        self.outcomes.push_back(Outcome::Answer { id, answer });
    }
}

/// The owner a route names, as the core's plan reads it.
fn owner(route: &Route) -> Option<Owner<'_>> {
    match route {
        Route::Up {
            server,
            era,
            capabilities,
            ..
        } => Some(Owner {
            server,
            era: *era,
            capabilities,
        }),
        Route::Nobody | Route::Down => None,
    }
}

/// A host request's params the bridge cannot take (with `data` naming what about).
fn invalid_params(message: String, data: Option<serde_json::Value>) -> RpcError {
    RpcError {
        code: codes::INVALID_PARAMS,
        message,
        data,
    }
}

#[cfg(test)]
#[path = "subscriptions_tests.rs"]
mod tests;
