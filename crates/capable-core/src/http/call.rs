//! One JSON-RPC request over HTTP, from its POST to its answer: its phases, what each
//! response head, body, event and end means in each, and the answer delivered under
//! the id it was asked with. The repairs a phase may lead to — a renewed session, a
//! resumed or re-issued stream, re-fetched tools, the HTTP+SSE fallback — are in
//! `repair.rs`.
//!
//! A step that needs another request produces it only when the current response has
//! been read to its end, so one exchange is never read by two tasks at once.
//!
//! A refusal for want of authorization (401, 403 `insufficient_scope`) holds the call
//! (`Authorizing`) once its body is read; the shell's [`HttpSession::authorized`]
//! replays it, once per kind of need.

use std::time::Duration;

use serde_json::Value;

use crate::auth::{AuthNeed, Rounds};
use crate::jsonrpc::RequestId;
use crate::method::Method;

use super::headers::is_session_id;
use super::message::{excerpt, id_value, is_answer, Message};
use super::{Action, Body, End, Exchange, ExchangeId, Failure, Head, HttpSession, Mode};

/// The longest error body read to judge a refusal.
const ERROR_BODY: usize = 64 * 1024;

pub(super) struct Call {
    /// The request's id as the client sent it (answers are delivered with it).
    pub(super) id: RequestId,
    /// The id of the attempt in flight (a re-issue has its own).
    pub(super) attempt_id: RequestId,
    pub(super) method: Method,
    pub(super) modern: bool,
    /// The attempt's message.
    pub(super) msg: Message,
    pub(super) reissues: u32,
    pub(super) renewed: bool,
    pub(super) refreshed: bool,
    /// The authorization needs met so far.
    rounds: Rounds,
    pub(super) phase: Phase,
}

pub(super) enum Phase {
    /// Its POST is out.
    Posted,
    /// The server refused the POST with `status`: the body decides what it means,
    /// unless it is an authorization need.
    Refused {
        status: u16,
        need: Option<Box<AuthNeed>>,
    },
    /// Held until the shell acted on an authorization need.
    Authorizing,
    /// A legacy session expired (404): renew it once the body is read.
    Expired,
    /// Renewing: the new `initialize` (`initialized: false`), then its notification.
    Renewing {
        initialized: bool,
        refused: Option<u16>,
    },
    /// Resuming a broken legacy stream by GET: attempt `attempt` (0-based).
    Resuming {
        attempt: u32,
        last_event_id: Option<String>,
        retry: Option<Duration>,
        refused: Option<u16>,
    },
    /// Re-fetching `tools/list` (page `page`) after a header mismatch.
    Refreshing { page: u32, refresh_id: RequestId },
    /// Waiting for an HTTP+SSE stream to name its endpoint; keeps the refusal that
    /// sent it there.
    AwaitingEndpoint { status: u16, body: Vec<u8> },
    /// Posted to an HTTP+SSE endpoint: the answer comes on the stream.
    PostedToEndpoint,
}

impl Call {
    /// Whether the call is waiting for an HTTP+SSE stream to name its endpoint.
    pub(super) fn waiting_for_stream(&self) -> bool {
        matches!(self.phase, Phase::AwaitingEndpoint { .. })
    }

    /// A call held for authorization, released for its replay (to the HTTP+SSE
    /// endpoint when `legacy_sse`): whether it was held.
    pub(super) fn release(&mut self, legacy_sse: bool) -> bool {
        if !matches!(self.phase, Phase::Authorizing) {
            return false;
        }
        self.phase = if legacy_sse {
            Phase::PostedToEndpoint
        } else {
            Phase::Posted
        };
        true
    }

    /// The attempt's message.
    pub(super) fn message(&self) -> &Message {
        &self.msg
    }

    /// The call's request, rewritten as an HTTP+SSE one.
    pub(super) fn post_to_endpoint(&mut self) -> &Message {
        self.phase = Phase::PostedToEndpoint;
        &self.msg
    }
}

impl HttpSession {
    pub(super) fn start_call(&mut self, msg: Message) -> Vec<Action> {
        let Some(request) = msg.request() else {
            return Vec::new();
        };
        let (id, method) = (request.id.clone(), request.method);
        if method == Method::Initialize {
            self.initialize = Some(msg.clone());
        }
        let request = self.post(&msg, self.message_headers(&msg));
        let phase = match self.mode {
            Mode::LegacySse { .. } => Phase::PostedToEndpoint,
            _ => Phase::Posted,
        };
        let call = Call {
            attempt_id: id.clone(),
            modern: msg.modern_version().is_some(),
            id: id.clone(),
            method,
            msg,
            reissues: 0,
            renewed: false,
            refreshed: false,
            rounds: Rounds::default(),
            phase,
        };
        let exchange = self.new_exchange(Exchange::Call(Box::new(call)));
        self.by_request.insert(id, exchange);
        vec![Action::Send {
            exchange,
            request,
            blocking: false,
        }]
    }

    /// Whether an exchange still wants its stream read (an answered call does not).
    pub fn wants(&self, ex: ExchangeId) -> bool {
        self.exchanges.contains_key(&ex)
    }

    pub(super) fn keep(&mut self, ex: ExchangeId, call: Box<Call>) {
        self.exchanges.insert(ex, Exchange::Call(call));
    }

    pub(super) fn finish(&mut self, call: &Call) {
        self.by_request.remove(&call.id);
    }

    pub(super) fn send_again(
        &mut self,
        ex: ExchangeId,
        call: Box<Call>,
        request: super::Request,
    ) -> Vec<Action> {
        self.keep(ex, call);
        vec![Action::Send {
            exchange: ex,
            request,
            blocking: false,
        }]
    }

    pub(super) fn call_head(
        &mut self,
        ex: ExchangeId,
        mut call: Box<Call>,
        head: &Head,
    ) -> (Body, Vec<Action>) {
        let whole = Body::Whole { limit: self.limit };
        let error_body = Body::Whole {
            limit: ERROR_BODY.min(self.limit),
        };
        let ok = head.is_success();
        let body = match &mut call.phase {
            Phase::Posted | Phase::PostedToEndpoint if !ok => {
                let sent_session = self.mode == Mode::Streamable && self.session_id.is_some();
                let need = head
                    .need(self.authorizing, &self.url)
                    .filter(|n| call.rounds.admit(n.kind));
                if need.is_some() {
                    call.phase = Phase::Refused {
                        status: head.status,
                        need: need.map(Box::new),
                    };
                    error_body
                } else if head.status == 404
                    && sent_session
                    && !call.modern
                    && !call.renewed
                    && call.method != Method::Initialize
                {
                    call.phase = Phase::Expired;
                    Body::Discard
                } else {
                    call.phase = Phase::Refused {
                        status: head.status,
                        need: None,
                    };
                    error_body
                }
            }
            Phase::PostedToEndpoint => Body::Discard,
            Phase::Posted => {
                if call.method == Method::Initialize {
                    if self.mode == Mode::Unknown {
                        self.mode = Mode::Streamable;
                    }
                    if let Some(session) = head.session_id.as_deref().filter(|s| is_session_id(s)) {
                        self.session_id = Some(session.to_owned());
                    }
                }
                if head.is_event_stream() {
                    Body::Events { first_within: None }
                } else {
                    whole
                }
            }
            Phase::Renewing {
                initialized,
                refused,
            } => {
                if !ok && !*initialized {
                    *refused = Some(head.status);
                } else if !*initialized {
                    self.session_id = head.session_id.clone().filter(|s| is_session_id(s));
                }
                Body::Discard
            }
            Phase::Resuming { refused, .. } => {
                if ok {
                    Body::Events { first_within: None }
                } else {
                    *refused = Some(head.status);
                    error_body
                }
            }
            Phase::Refreshing { .. } if ok && head.is_event_stream() => {
                Body::Events { first_within: None }
            }
            Phase::Refreshing { .. } if ok => whole,
            _ => Body::Discard,
        };
        self.keep(ex, call);
        (body, Vec::new())
    }

    pub(super) fn call_body(
        &mut self,
        ex: ExchangeId,
        call: Box<Call>,
        body: Vec<u8>,
    ) -> Vec<Action> {
        let mut call = call;
        if let Phase::Refused {
            need: need @ Some(_),
            ..
        } = &mut call.phase
        {
            let need = need.take().map(|n| *n);
            call.phase = Phase::Authorizing;
            let id = Some(call.id.clone());
            self.keep(ex, call);
            return need
                .map(|need| Action::Authorize {
                    exchange: ex,
                    id,
                    need,
                })
                .into_iter()
                .collect();
        }
        match call.phase {
            Phase::Posted => {
                self.finish(&call);
                if body.iter().all(u8::is_ascii_whitespace) {
                    return vec![
                        self.fail(&call, "the server accepted the request but sent no answer")
                    ];
                }
                // A success response in the usual shape is checked by the decode that
                // reads it, as on stdio (malformed, it fails its request then, at once);
                // any other body is checked for being JSON here.
                let by_shape = crate::jsonrpc::result_by_shape(&body).is_some();
                let checked = match by_shape {
                    true => Ok(serde::de::IgnoredAny),
                    false => serde_json::from_slice::<serde::de::IgnoredAny>(&body),
                };
                if let Err(e) = checked {
                    // Not JSON at all (an HTML page, a truncated body): nothing the client
                    // could route, so the request fails now, not by timeout.
                    return vec![Action::Fail {
                        id: call.id.clone(),
                        failure: Failure::Malformed {
                            method: call.method,
                            detail: format!("the answer is not JSON ({e}): {}", excerpt(&body)),
                        },
                    }];
                }
                self.answer(&call, body)
            }
            Phase::Refused { status, .. } => self.refused(ex, call, status, body),
            Phase::Resuming {
                refused: Some(status),
                ..
            } => {
                self.finish(&call);
                let why = format!(
                    "the response stream broke and resuming it by GET {} failed: HTTP {status} {}",
                    self.shown,
                    excerpt(&body)
                );
                vec![self.fail(&call, &why)]
            }
            Phase::Refreshing { .. } => {
                let answer = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
                self.refreshed_page(ex, call, answer)
            }
            _ => {
                self.keep(ex, call);
                Vec::new()
            }
        }
    }

    pub(super) fn call_event(&mut self, ex: ExchangeId, event: super::StreamEvent) -> Vec<Action> {
        let super::StreamEvent::Message(message) = event else {
            return Vec::new();
        };
        let Some(Exchange::Call(call)) = self.exchanges.remove(&ex) else {
            return Vec::new();
        };
        if let Phase::Refreshing { refresh_id, .. } = &call.phase {
            // The transport's own `tools/list`: learnt from, never delivered.
            let value = serde_json::from_slice::<Value>(&message).unwrap_or(Value::Null);
            if value.get("id") == Some(&id_value(refresh_id)) {
                return self.refreshed_page(ex, call, value);
            }
            self.keep(ex, call);
            return Vec::new();
        }
        // A success response in the usual shape names its id at its start; anything
        // else is parsed to be sure.
        let answers = match crate::jsonrpc::result_by_shape(&message) {
            Some((id, _)) => call.attempt_id == RequestId::Number(id),
            None => serde_json::from_slice::<Value>(&message)
                .ok()
                .is_some_and(|v| is_answer(&v, &call.attempt_id)),
        };
        match answers {
            true => {
                // The answer: the exchange is over (its stream is not read further).
                self.finish(&call);
                self.answer(&call, message)
            }
            _ => {
                // Anything else on the request's stream is about that request.
                let related = call.id.clone();
                self.keep(ex, call);
                vec![Action::DeliverOn { message, related }]
            }
        }
    }

    pub(super) fn call_end(
        &mut self,
        ex: ExchangeId,
        mut call: Box<Call>,
        end: End,
    ) -> Vec<Action> {
        match std::mem::replace(&mut call.phase, Phase::Posted) {
            Phase::Posted => self.broken(ex, call, end),
            Phase::Expired => self.renew(ex, call),
            Phase::Renewing {
                initialized: false,
                refused: None,
            } => self.renewed(ex, call),
            Phase::Renewing {
                refused: Some(status),
                ..
            } => {
                self.finish(&call);
                let why = format!(
                    "the session expired and a new initialize was refused with HTTP {status}"
                );
                vec![self.fail(&call, &why)]
            }
            Phase::Renewing { .. } | Phase::Refreshing { .. } => {
                // Renewed, or the refresh is over: the request again, once.
                call.phase = Phase::Posted;
                let request = self.post(&call.msg, self.message_headers(&call.msg));
                self.send_again(ex, call, request)
            }
            Phase::Resuming {
                attempt,
                last_event_id,
                retry,
                refused: None,
            } => self.resume(
                ex,
                call,
                attempt + 1,
                end.last_event_id.or(last_event_id),
                end.retry.or(retry),
            ),
            Phase::PostedToEndpoint => {
                // Accepted: the answer comes on the HTTP+SSE stream.
                self.finish(&call);
                Vec::new()
            }
            phase => {
                call.phase = phase;
                self.keep(ex, call);
                Vec::new()
            }
        }
    }

    /// The answer as the client reads it: under the id it was asked with, and a
    /// modern `tools/list` without the tools the policy drops (each with a notice,
    /// before the answer).
    pub(super) fn answer(&mut self, call: &Call, message: Vec<u8>) -> Vec<Action> {
        let rewrite_id = call.attempt_id != call.id;
        let learn = call.modern && call.method == Method::ListTools;
        if !rewrite_id && !learn {
            return vec![Action::Deliver(message)];
        }
        // Only a message (an object) has an id to rewrite; any other JSON goes out as
        // received, for the client to refuse.
        let Ok(mut value @ Value::Object(_)) = serde_json::from_slice::<Value>(&message) else {
            return vec![Action::Deliver(message)];
        };
        let mut changed = false;
        let mut notices = Vec::new();
        if rewrite_id {
            value["id"] = id_value(&call.id);
            changed = true;
        }
        if learn {
            if let Some(result) = value.get_mut("result") {
                changed |= self.tool_headers.learn(result, &mut notices);
            }
        }
        // Re-serialise only what was changed; everything else goes out as received.
        let message = if changed {
            serde_json::to_vec(&value).unwrap_or(message)
        } else {
            message
        };
        let mut actions: Vec<Action> = notices.into_iter().map(Action::Notice).collect();
        actions.push(Action::Deliver(message));
        actions
    }

    pub(super) fn fail(&self, call: &Call, why: &str) -> Action {
        Action::Fail {
            id: call.id.clone(),
            failure: Failure::Broken(why.to_owned()),
        }
    }
}
