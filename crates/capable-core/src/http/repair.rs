//! The repairs a call may need, each bounded and made at most once (resumes and
//! re-issues: as often as [`Reconnect`](super::Reconnect) allows): a legacy session
//! renewed after a 404, a broken legacy stream resumed with `Last-Event-ID`, a broken
//! modern stream re-issued with a new id, the tools re-fetched after a header
//! mismatch, the URL tried as an HTTP+SSE endpoint when `initialize` is refused.

use std::time::Duration;

use serde_json::Value;

use crate::jsonrpc::{codes, RequestId};
use crate::method::Method;
use crate::notice::Notice;

use super::call::{Call, Phase};
use super::message::{excerpt, id_value, is_error_response, is_modern_error, Message};
use super::streams::LegacyStream;
use super::{Action, End, Exchange, ExchangeId, Failure, HttpSession, Mode};

impl HttpSession {
    /// A legacy session expired (404 to a request that carried it): a new one is
    /// started by replaying `initialize`, then the request goes again, once.
    pub(super) fn renew(&mut self, ex: ExchangeId, mut call: Box<Call>) -> Vec<Action> {
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
        // A new session: no session id, and no version before it is negotiated.
        let request = self.post(&init, Vec::new());
        let mut actions = vec![Action::Notice(Notice::SessionRenewed {
            url: self.shown.clone(),
        })];
        actions.extend(self.send_again(ex, call, request));
        actions
    }

    /// The new session's `initialize` went through: its `notifications/initialized`.
    pub(super) fn renewed(&mut self, ex: ExchangeId, mut call: Box<Call>) -> Vec<Action> {
        call.phase = Phase::Renewing {
            initialized: true,
            refused: None,
        };
        let request = self.post(&Message::initialized(), self.base_headers());
        self.send_again(ex, call, request)
    }

    /// A response stream ended before its answer.
    pub(super) fn broken(&mut self, ex: ExchangeId, mut call: Box<Call>, end: End) -> Vec<Action> {
        if call.modern && call.method == Method::Listen {
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
            call.attempt_id = RequestId::String(format!("{}~reissue{}", call.id, call.reissues));
            call.msg.set_id(call.attempt_id.clone());
            let request = self.post(&call.msg, self.message_headers(&call.msg));
            return self.send_again(ex, call, request);
        }
        self.resume(ex, call, 0, end.last_event_id, end.retry)
    }

    /// Legacy: resumes a broken response stream by GET with `Last-Event-ID`.
    pub(super) fn resume(
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
    pub(super) fn refused(
        &mut self,
        ex: ExchangeId,
        mut call: Box<Call>,
        status: u16,
        body: Vec<u8>,
    ) -> Vec<Action> {
        let value = serde_json::from_slice::<Value>(&body).ok();
        let modern_error = value.as_ref().is_some_and(is_modern_error);
        if call.method == Method::Initialize
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
            == Some(&Value::from(codes::HEADER_MISMATCH));
        if mismatch && call.method == Method::CallTool && call.modern && !call.refreshed {
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
                error["id"] = id_value(&call.id);
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
        let refresh_id = RequestId::String(format!("capable-tools-refresh-{page}"));
        let list = Message::tools_list(refresh_id.clone(), cursor, &call.msg);
        let request = self.post(&list, self.message_headers(&list));
        call.phase = Phase::Refreshing { page, refresh_id };
        self.send_again(ex, call, request)
    }

    /// One refreshed page arrived: learn from it, then the next page or the request.
    pub(super) fn refreshed_page(
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
}
