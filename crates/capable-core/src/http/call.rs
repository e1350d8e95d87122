//! One JSON-RPC request over HTTP, from its POST to its answer, through every repair
//! the policy allows: a legacy session renewed after a 404, a broken legacy stream
//! resumed with `Last-Event-ID`, a broken modern stream re-issued with a new id, the
//! tools re-fetched after a header mismatch, the URL tried as an HTTP+SSE endpoint.
//! Each repair is bounded and happens at most once (resumes and re-issues: as often as
//! [`Reconnect`](super::Reconnect) allows).
//!
//! A step that needs another request produces it only when the current response has
//! been read to its end, so one exchange is never read by two tasks at once.
//!
//! A refusal for want of authorization (401, 403 `insufficient_scope`) holds the call
//! (`Authorizing`) once its body is read; the shell's [`HttpSession::authorized`]
//! replays it, once per kind of need.

use std::time::Duration;

use serde_json::{json, Value};

use crate::auth::{AuthNeed, Rounds};
use crate::jsonrpc::codes;
use crate::notice::Notice;

use super::headers::is_session_id;
use super::message::{excerpt, is_answer, is_error_response, is_modern_error, Outgoing};
use super::streams::LegacyStream;
use super::RequestKey;
use super::{Action, Body, End, Exchange, ExchangeId, Failure, Head, HttpSession, Mode};

/// The longest error body read to judge a refusal.
const ERROR_BODY: usize = 64 * 1024;

pub(super) struct Call {
    /// The request's id as the client sent it (answers are delivered with it).
    pub(super) id: Value,
    /// The id of the attempt in flight (a re-issue has its own).
    attempt_id: Value,
    method: String,
    pub(super) modern: bool,
    /// The attempt's message.
    msg: Outgoing,
    reissues: u32,
    renewed: bool,
    refreshed: bool,
    /// The authorization needs met so far.
    rounds: Rounds,
    phase: Phase,
}

enum Phase {
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
    Refreshing { page: u32, refresh_id: Value },
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
    pub(super) fn message(&self) -> &Outgoing {
        &self.msg
    }

    /// The call's request, rewritten as an HTTP+SSE one.
    pub(super) fn post_to_endpoint(&mut self) -> &Outgoing {
        self.phase = Phase::PostedToEndpoint;
        &self.msg
    }
}

impl HttpSession {
    pub(super) fn start_call(&mut self, msg: Outgoing) -> Vec<Action> {
        let method = msg.method().unwrap_or("").to_owned();
        if method == "initialize" {
            self.initialize = Some(msg.to_bytes());
        }
        let id = msg.id().cloned().unwrap_or(Value::Null);
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
        self.by_request.insert(RequestKey::of(&id), exchange);
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

    fn finish(&mut self, call: &Call) {
        self.by_request.remove(&RequestKey::of(&call.id));
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
                    && call.method != "initialize"
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
                if call.method == "initialize" {
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
                            method: call.method.clone(),
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
            if value.get("id") == Some(refresh_id) {
                return self.refreshed_page(ex, call, value);
            }
            self.keep(ex, call);
            return Vec::new();
        }
        // A success response in the usual shape names its id at its start; anything
        // else is parsed to be sure.
        let answers = match crate::jsonrpc::result_by_shape(&message) {
            Some((id, _)) => call.attempt_id.as_i64() == Some(id),
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
                self.keep(ex, call);
                vec![Action::Deliver(message)]
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
            Phase::Expired => {
                let Some(init) = self.initialize.clone() else {
                    self.finish(&call);
                    return vec![self.fail(
                        &call,
                        "the session expired and there is no initialize to start a new one",
                    )];
                };
                call.renewed = true;
                call.phase = Phase::Renewing {
                    initialized: false,
                    refused: None,
                };
                self.session_id = None;
                let msg = Outgoing::parse(&init).unwrap_or_else(|| call.msg.clone());
                // A new session: no session id, and no version before it is negotiated.
                let request = self.post(&msg, Vec::new());
                let mut actions = vec![Action::Notice(Notice::SessionRenewed {
                    url: self.shown.clone(),
                })];
                actions.extend(self.send_again(ex, call, request));
                actions
            }
            Phase::Renewing {
                initialized: false,
                refused: None,
            } => {
                call.phase = Phase::Renewing {
                    initialized: true,
                    refused: None,
                };
                let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
                let Some(msg) = Outgoing::from_value(&note) else {
                    return Vec::new();
                };
                let request = self.post(&msg, self.base_headers());
                self.send_again(ex, call, request)
            }
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

    /// A response stream ended before its answer.
    fn broken(&mut self, ex: ExchangeId, mut call: Box<Call>, end: End) -> Vec<Action> {
        if call.modern && call.method == "subscriptions/listen" {
            // A listen stream that closes without its final result ended unexpectedly;
            // the host decides whether to listen again (a new id would change the
            // stream's subscriptionId).
            self.finish(&call);
            let why = format!(
                "the subscription stream from {} closed without its final result",
                self.shown
            );
            return vec![self.fail(&call, &why)];
        }
        if call.modern {
            // 2026-07-28: a broken stream loses the request; re-issue it with a new id
            // (bounded).
            if call.reissues >= self.reconnect.reissues {
                self.finish(&call);
                let why = format!(
                    "the response stream from {} broke {} times before the answer",
                    self.shown,
                    call.reissues + 1
                );
                return vec![self.fail(&call, &why)];
            }
            call.reissues += 1;
            call.attempt_id = json!(format!("{}~reissue{}", call.id, call.reissues));
            call.msg.set_id(call.attempt_id.clone());
            let request = self.post(&call.msg, self.message_headers(&call.msg));
            return self.send_again(ex, call, request);
        }
        self.resume(ex, call, 0, end.last_event_id, end.retry)
    }

    /// Legacy: resumes a broken response stream by GET with `Last-Event-ID`.
    fn resume(
        &mut self,
        ex: ExchangeId,
        mut call: Box<Call>,
        attempt: u32,
        last_event_id: Option<String>,
        retry: Option<Duration>,
    ) -> Vec<Action> {
        if attempt >= self.reconnect.attempts {
            self.finish(&call);
            let why = format!(
                "the response stream from {} broke and {} attempts to resume it failed",
                self.shown, self.reconnect.attempts
            );
            return vec![self.fail(&call, &why)];
        }
        let delay = self.reconnect.delay(attempt, retry);
        let request = self.get_stream(last_event_id.as_deref(), delay);
        call.phase = Phase::Resuming {
            attempt,
            last_event_id,
            retry,
            refused: None,
        };
        self.send_again(ex, call, request)
    }

    /// The server refused the POST with `status`; `body` says how.
    fn refused(
        &mut self,
        ex: ExchangeId,
        mut call: Box<Call>,
        status: u16,
        body: Vec<u8>,
    ) -> Vec<Action> {
        let value = serde_json::from_slice::<Value>(&body).ok();
        let modern_error = value.as_ref().is_some_and(is_modern_error);
        if call.method == "initialize"
            && !modern_error
            && matches!(status, 400 | 404 | 405)
            && self.mode == Mode::Unknown
        {
            // Maybe a 2024-11-05 HTTP+SSE server: try the URL as its event stream.
            call.phase = Phase::AwaitingEndpoint { status, body };
            self.keep(ex, call);
            let stream = self.new_exchange(Exchange::LegacyStream(LegacyStream::for_call(ex)));
            return vec![Action::Send {
                exchange: stream,
                request: self.get_legacy_stream(),
                blocking: false,
            }];
        }
        let mismatch = value.as_ref().and_then(|b| b.pointer("/error/code"))
            == Some(&json!(codes::HEADER_MISMATCH));
        if mismatch && call.method == "tools/call" && call.modern && !call.refreshed {
            // The tool's `x-mcp-header` annotations changed: re-fetch tools/list, then
            // retry once with the headers it now asks for.
            call.refreshed = true;
            return self.refresh_page(ex, call, 0, None);
        }
        self.finish(&call);
        vec![self.refusal(&call, status, value, &body)]
    }

    /// The call's refusal as the client sees it: the server's JSON-RPC error when the
    /// body is one, else an HTTP failure.
    fn refusal(&self, call: &Call, status: u16, value: Option<Value>, body: &[u8]) -> Action {
        match value {
            Some(mut error) if is_error_response(&error) => {
                // The server's own answer; HTTP correlates it with our request even
                // when it could not read the id.
                error["id"] = call.id.clone();
                Action::Deliver(serde_json::to_vec(&error).unwrap_or_default())
            }
            _ => Action::Fail {
                id: call.id.clone(),
                failure: Failure::Http {
                    url: self.shown.clone(),
                    status,
                    body: excerpt(body),
                },
            },
        }
    }

    /// The HTTP+SSE attempt failed: the refusal that led to it is the answer.
    pub(super) fn call_refused(&mut self, call: Call) -> Vec<Action> {
        self.finish(&call);
        match &call.phase {
            Phase::AwaitingEndpoint { status, body } => {
                let value = serde_json::from_slice::<Value>(body).ok();
                vec![self.refusal(&call, *status, value, body)]
            }
            _ => vec![self.fail(&call, "the server closed the connection")],
        }
    }

    /// Requests page `page` of `tools/list` for the transport alone.
    fn refresh_page(
        &mut self,
        ex: ExchangeId,
        mut call: Box<Call>,
        page: u32,
        cursor: Option<&str>,
    ) -> Vec<Action> {
        let refresh_id = json!(format!("capable-tools-refresh-{page}"));
        let meta = call.msg.meta().unwrap_or(json!({}));
        let mut params = json!({ "_meta": meta });
        if let Some(c) = cursor {
            params["cursor"] = json!(c);
        }
        let list =
            json!({"jsonrpc": "2.0", "id": refresh_id, "method": "tools/list", "params": params});
        let Some(list) = Outgoing::from_value(&list) else {
            return Vec::new();
        };
        let request = self.post(&list, self.message_headers(&list));
        call.phase = Phase::Refreshing { page, refresh_id };
        self.send_again(ex, call, request)
    }

    /// One refreshed page arrived: learn from it, then the next page or the request.
    fn refreshed_page(
        &mut self,
        ex: ExchangeId,
        mut call: Box<Call>,
        mut answer: Value,
    ) -> Vec<Action> {
        let Phase::Refreshing { page, .. } = call.phase else {
            return Vec::new();
        };
        let mut actions = Vec::new();
        let mut notices = Vec::new();
        if let Some(result) = answer.get_mut("result") {
            self.tool_headers.learn(result, &mut notices);
            actions.extend(notices.into_iter().map(Action::Notice));
            let next = result
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if let (Some(next), true) = (next, page < 100) {
                actions.extend(self.refresh_page(ex, call, page + 1, Some(&next)));
                return actions;
            }
        }
        call.phase = Phase::Posted;
        let request = self.post(&call.msg, self.message_headers(&call.msg));
        actions.extend(self.send_again(ex, call, request));
        actions
    }

    /// The answer as the client reads it: under the id it was asked with, and a
    /// modern `tools/list` without the tools the policy drops (each with a notice,
    /// before the answer).
    fn answer(&mut self, call: &Call, message: Vec<u8>) -> Vec<Action> {
        let rewrite_id = call.attempt_id != call.id;
        let learn = call.modern && call.method == "tools/list";
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
            value["id"] = call.id.clone();
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

    fn fail(&self, call: &Call, why: &str) -> Action {
        Action::Fail {
            id: call.id.clone(),
            failure: Failure::Broken(why.to_owned()),
        }
    }
}
