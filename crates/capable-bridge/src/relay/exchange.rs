//! A host request's trip through the relay: sent on to the server as an exchange (its
//! params through the policy, carried across the eras as the core's tables say), and
//! the server's answer, once the core routed it to its host request
//! ([`Command::Answer`](capable::internal::bridge::connection::Command::Answer)),
//! finished for the host. Progress, and an answer kept for the host's retry while it
//! holds a round, are the core's alone.

use std::time::Instant;

use capable::internal::bridge::forwarding;
use capable::internal::jsonrpc::RequestId;
use capable::internal::model::ProgressParams;
use capable::internal::server::ClientRequest;
use capable::internal::task_bridge::{Carry, Route};
use capable::internal::{Era, Extension};
use capable::{CachePolicy, Error, RequestOptions};
use futures_util::FutureExt;

use super::{gone, tasks, Answer, Event, Exchange, Relay};
use crate::forward::{host_error, target_member, upstream_params};
use crate::policy;

impl Relay {
    /// Sends a host request on to the server, as a new exchange.
    pub(super) fn forward(&mut self, request: ClientRequest) {
        let ClientRequest {
            id,
            method,
            mut params,
            wants_progress,
            version,
            ..
        } = request;
        // A sealed task id opened (`task_ids.rs`); one that does not open is answered as
        // an unknown task, and nothing is sent.
        let Ok(presented) = self.open_task(&id, method, &mut params) else {
            return;
        };
        // The params kept (shared, not copied) for the retry of a round it may get, as
        // the core's table says (a server of many may be a legacy one).
        let legacy_behind = self.servers.one().is_none_or(|s| s.era() == Era::Legacy);
        let how = forwarding(self.host_era(), legacy_behind, method);
        let asked = how.keep_params.then(|| params.clone());
        // The params as the server gets them, through the policy (one server: here;
        // many: where the request's server is known).
        // Traced: the target read as they are checked.
        let read = self.audit.traces().and(target_member(method));
        let (upstream, target) = match upstream_params(&params, read) {
            Ok(upstream) => upstream,
            Err(e) => {
                self.core.respond_error(&id, &e);
                return;
            }
        };
        let one = self.servers.one().map(|_| self.servers.name());
        let one_slot = self.audit.metrics().server(one);
        // Traced (when traces are on): a span from here to the answer, its parent the
        // caller's `traceparent`.
        let mut traced = self.audit.traces().map(|traces| {
            let request = crate::traces::Request {
                method,
                id: &id,
                version: version.as_str(),
                params: &upstream,
                target,
                server: self.servers.one_name(),
            };
            traces.request(request, &mut self.spans)
        });
        let (upstream, policy) =
            match policy::before_one(self.policy.as_ref(), one, method, upstream, &self.audit) {
                Ok(passed) => passed,
                Err(e) => {
                    if let Some(traced) = traced {
                        traced.refused();
                    }
                    let caller = crate::audit::caller_class();
                    self.audit
                        .metrics()
                        .refused_request(method, one_slot, caller);
                    let error = host_error(&e, &self.audit);
                    self.core.respond_error(&id, &error);
                    return;
                }
            };
        // A verified caller's tool call: audited with what the server did.
        let called = crate::audit::calling(method, &upstream);
        let host_declared = || {
            let caps = self.core.engine().phase().capabilities();
            caps.is_some_and(|c| c.has_extension(Extension::Tasks))
        };
        let route = self
            .tasks
            .route(method, || params.mentions("\"task\""), host_declared);
        let carry = match route {
            Route::Pass => None,
            Route::Carry(carry) => Some(carry),
            Route::Refuse(e) => {
                self.core.respond_error(&id, &e);
                return;
            }
        };
        let task_ttl = match carry {
            Some(carry) => match self.own_task(&id, method, carry, &params, presented.as_ref()) {
                tasks::Before::Answered => return,
                tasks::Before::Send { ttl } => ttl,
            },
            None => None,
        };
        // The call upstream: a child span, its context in the params' `_meta`.
        let upstream = match &mut traced {
            Some(traced) => traced.upstream(upstream),
            None => upstream,
        };
        let token = self.core.reserve();
        let on_progress = wants_progress.then(|| {
            let inbox = self.inbox.clone();
            Box::new(move |p: &ProgressParams| inbox.progress(token, p))
                as capable::ProgressCallback
        });
        let options = RequestOptions {
            on_progress,
            // The host asked: the server answers, whatever the cache holds.
            cache: CachePolicy::Bypass,
            // A 2026-07-28 host answers the server's questions itself and retries.
            pass_input_required: how.pass_input_required,
            // Its token, kept with it by the client: a question the server says is
            // about it names it (nothing done per request for that).
            tag: Some(token),
            ..RequestOptions::default()
        };
        let (answer, legacy_answer, server) = match (carry, self.servers.one()) {
            (Some(carry), Some(session)) => {
                let session = session.clone();
                let legacy = session.era() == Era::Legacy;
                let how = tasks::How {
                    carry,
                    method,
                    bound: self.core.engine().config().request_timeout,
                    started: match carry {
                        Carry::ListForLegacy => self.started.listing(Instant::now()),
                        _ => Vec::new(),
                    },
                    statuses: self.inbox.clone(),
                };
                let params = upstream.into_map();
                // A legacy host's `tasks/list` with a store: every replica's (`task_list.rs`).
                let carried = match (carry, self.list_reading()) {
                    (Carry::ListForLegacy, Some(reading)) => {
                        reading.carry(session, how, params, options).boxed()
                    }
                    _ => tasks::carry(session, how, params, options).boxed(),
                };
                (carried, legacy, None)
            }
            _ => self.servers.exchange(method, upstream, options),
        };
        if let (Some(traced), Some(server)) = (&mut traced, server.as_deref()) {
            traced.server(server);
        }
        let answer = policy::after(policy, method, answer);
        // Many servers: only a call that went to one of them (not one the bridge refused).
        let at = server
            .as_deref()
            .or(self.servers.one().map(|_| self.servers.name()));
        // The tool as its server names it (a merged name is the bridge's own).
        let called = called.map(|tool| self.servers.own_tool_name(tool)).zip(at);
        let answer = crate::audit::called(called, &self.audit, answer);
        // Counted as it ends (or as the host gives up on it): atomics, no lock.
        let metrics = self.audit.metrics();
        let slot = server
            .as_deref()
            .map_or(one_slot, |s| metrics.server(Some(s)));
        let sent = metrics.sent(method, slot, crate::audit::caller_class());
        let traced = traced.map(|traced| (traced, self.audit.clone()));
        let answer = async move {
            let answer = answer.await;
            sent.answered(answer.is_ok());
            if let Some((traced, audit)) = traced {
                traced.end(&answer, &audit);
            }
            answer
        };
        let (answer, abort) = futures_util::future::abortable(answer.boxed());
        let exchange = async move {
            match answer.await {
                Ok(answer) => Event::Forwarded(token, answer),
                // Cancelled by the host: nothing to answer.
                Err(_) => Event::Nothing,
            }
        };
        let mut exchange_at = Exchange::new(id, method, abort);
        exchange_at.legacy_answer = legacy_answer;
        exchange_at.carry = carry;
        exchange_at.task_ttl = task_ttl;
        exchange_at.params = asked;
        exchange_at.server = server;
        exchange_at.task = presented;
        self.core.open(token, exchange_at);
        self.queue.push(exchange);
    }

    /// The server's answer to host request `id` (its `exchange`, over, as the core
    /// routed it), finished for the host: tasks carried across, checked (not decoded),
    /// a server's breach in the audit; the core writes it in the host's era's form.
    pub(super) fn answer(&mut self, id: &RequestId, exchange: Exchange, answer: Answer) {
        let answer = match answer {
            Ok(payload) => match self.carried(exchange.carry, exchange.task_ttl, payload) {
                // A task the host started: kept (the bridge's own) and listed for every
                // replica before the host has it.
                (payload, Some(task)) => return self.keep(id, &task, exchange, payload),
                (payload, None) => Ok(payload),
            },
            Err(e) => Err(e),
        };
        self.finish(id, exchange, answer);
    }

    /// The answer to host request `id` (its `exchange`), carried across already,
    /// finished for the host: see [`Relay::answer`].
    pub(super) fn finish(&mut self, id: &RequestId, exchange: Exchange, answer: Answer) {
        let Exchange {
            method,
            legacy_answer,
            server,
            task,
            ..
        } = exchange;
        // A server's answer the host cannot be given as it came is the server's breach:
        // the audit keeps it, not only the host's error. Its task ids sealed
        // (`task_ids.rs`).
        let answer = answer.map(|p| self.seal_answer(method, p, task.as_ref()));
        let (mut failed, malformed) = match answer {
            Ok(Ok(payload)) => match payload.raw_value() {
                Ok(raw) => return self.core.respond_answer(id, method, raw, legacy_answer),
                Err(e) => {
                    let message = format!("the server's answer is not valid JSON: {e}");
                    (gone(&message), true)
                }
            },
            Ok(Err(unsealed)) => (unsealed, false),
            Err(e) => (
                host_error(&e, &self.audit),
                matches!(e, Error::MalformedResult { .. }),
            ),
        };
        if malformed {
            let server = server.as_deref().unwrap_or(self.servers.name());
            self.audit
                .malformed(server, method.as_str(), &failed.message);
        }
        self.seal_error(&mut failed, task.as_ref());
        self.core.respond_error(id, &failed);
    }
}
