//! The two long-lived GET streams:
//!
//! - the **standalone stream** of a legacy Streamable HTTP session, opened after
//!   `notifications/initialized`, that carries server requests and notifications;
//!   405 means the server has none; a stream that ends is reopened after the server's
//!   `retry` (with `Last-Event-ID`), at most [`Reconnect::attempts`] times in a row
//!   without a message, then given up with a notice;
//!   a session several clients hold at once (gateway replicas continuing one
//!   session) opens it **on demand** instead ([`HttpSession::standalone_on_demand`]):
//!   only while asked to ([`HttpSession::want_standalone`]), so that the one client
//!   whose own host listens is the one the server sends on — a server keeps one
//!   standalone stream per session (the last, or it refuses a second with `409`);
//! - the **2024-11-05 HTTP+SSE stream**, tried when `initialize` was refused: its first
//!   event must name the endpoint to POST to, on the same origin as the URL; every
//!   answer and server message then arrives on it, and its end is the connection's.
//!
//! [`Reconnect::attempts`]: super::Reconnect::attempts

use std::time::Duration;

use crate::notice::Notice;

use super::redirect::same_origin;
use super::{
    Action, Body, End, Exchange, ExchangeId, Failure, Head, HttpSession, Mode, StreamEvent,
};

/// How long an HTTP+SSE stream may take to name its endpoint.
const ENDPOINT_WITHIN: Duration = Duration::from_secs(10);

pub(super) struct Standalone {
    /// Reconnects since the stream was last healthy.
    pub(super) attempts: u32,
    /// Whether the current stream delivered a message.
    pub(super) delivered: bool,
    /// The authorization needs met since the stream last opened.
    rounds: crate::auth::Rounds,
    /// A need met by the last attempt, acted on once its body is read.
    need: Option<super::AuthNeed>,
    pub(super) last_event_id: Option<String>,
    retry: Option<Duration>,
}

/// When the standalone stream opens (see [`HttpSession::standalone_on_demand`]).
#[derive(Debug, Default)]
pub(super) struct Wanted {
    /// It opens only while asked for.
    on_demand: bool,
    /// It is asked for.
    asked: bool,
    /// The session is where it may open.
    ready: bool,
}

pub(super) struct LegacyStream {
    /// The `initialize` waiting for the endpoint.
    call: ExchangeId,
    /// The endpoint was named: the connection lives on this stream.
    started: bool,
}

impl LegacyStream {
    pub(super) fn for_call(call: ExchangeId) -> LegacyStream {
        LegacyStream {
            call,
            started: false,
        }
    }
}

impl HttpSession {
    /// Legacy: the standalone stream opens only while asked to
    /// ([`HttpSession::want_standalone`]), not as soon as the session allows. For a
    /// session other clients hold too (gateway replicas): the server keeps one
    /// standalone stream per session, so the client that opens it is the one the
    /// server's messages reach — the one whose own host listens. Set before anything
    /// is sent.
    pub fn standalone_on_demand(&mut self) {
        self.standalone.on_demand = true;
    }

    /// On demand ([`HttpSession::standalone_on_demand`]): the standalone stream is
    /// wanted (opened, now or once the session allows) or not (closed, and not
    /// reopened). Returns the actions that do it; nothing without on demand. Asked
    /// again while one is open, nothing changes; after one was given up, it opens
    /// anew.
    pub fn want_standalone(&mut self, wanted: bool) -> Vec<Action> {
        if !self.standalone.on_demand {
            return Vec::new();
        }
        self.standalone.asked = wanted;
        if wanted {
            return match self.standalone.ready {
                true => self.open_standalone(),
                false => Vec::new(),
            };
        }
        let open: Vec<ExchangeId> = self
            .exchanges
            .iter()
            .filter(|(_, e)| matches!(e, Exchange::Standalone(_)))
            .map(|(ex, _)| *ex)
            .collect();
        open.into_iter()
            .map(|ex| {
                self.exchanges.remove(&ex);
                Action::Abort(ex)
            })
            .collect()
    }

    /// Legacy: the standalone GET stream, once `notifications/initialized` went
    /// through (on demand: once asked for too).
    pub(super) fn open_standalone(&mut self) -> Vec<Action> {
        self.standalone.ready = true;
        if self.standalone.on_demand && !self.standalone.asked {
            return Vec::new();
        }
        let open = self
            .exchanges
            .values()
            .any(|e| matches!(e, Exchange::Standalone(_)));
        if open || self.closed {
            return Vec::new();
        }
        let request = self.get_stream(None, Duration::ZERO);
        let exchange = self.new_exchange(Exchange::Standalone(Standalone {
            attempts: 0,
            delivered: false,
            rounds: Default::default(),
            need: None,
            last_event_id: None,
            retry: None,
        }));
        vec![Action::Send {
            exchange,
            request,
            blocking: false,
        }]
    }

    pub(super) fn standalone_head(
        &mut self,
        ex: ExchangeId,
        mut stream: Standalone,
        head: &Head,
    ) -> (Body, Vec<Action>) {
        if let Some(need) = head
            .need(self.authorizing, &self.url)
            .filter(|n| stream.rounds.admit(n.kind))
        {
            // A 401 on the stream (a token expired mid-session): authorize once its
            // body is read, then reopen it.
            stream.need = Some(need);
            self.exchanges.insert(ex, Exchange::Standalone(stream));
            return (Body::Discard, Vec::new());
        }
        if head.is_success() {
            stream.rounds = Default::default();
        }
        if head.status == 405 {
            // The server offers no standalone stream: nothing to reopen.
            return (Body::Discard, Vec::new());
        }
        self.exchanges.insert(ex, Exchange::Standalone(stream));
        if head.is_success() {
            (Body::Events { first_within: None }, Vec::new())
        } else {
            (Body::Discard, Vec::new())
        }
    }

    pub(super) fn standalone_end(
        &mut self,
        ex: ExchangeId,
        mut stream: Standalone,
        end: End,
    ) -> Vec<Action> {
        if self.closed {
            return Vec::new();
        }
        if let Some(need) = stream.need.take() {
            self.exchanges.insert(ex, Exchange::Standalone(stream));
            return vec![Action::Authorize {
                exchange: ex,
                id: None,
                need,
            }];
        }
        stream.last_event_id = end.last_event_id.or(stream.last_event_id);
        stream.retry = end.retry.or(stream.retry);
        if stream.delivered && end.lasted >= self.reconnect.healthy {
            stream.attempts = 0;
        }
        stream.delivered = false;
        stream.attempts += 1;
        if stream.attempts > self.reconnect.attempts {
            return vec![Action::Notice(Notice::StreamGivenUp {
                url: self.shown.clone(),
                attempts: self.reconnect.attempts,
            })];
        }
        let delay = self.reconnect.delay(stream.attempts - 1, stream.retry);
        let request = self.get_stream(stream.last_event_id.as_deref(), delay);
        self.exchanges.insert(ex, Exchange::Standalone(stream));
        vec![Action::Send {
            exchange: ex,
            request,
            blocking: false,
        }]
    }

    pub(super) fn legacy_stream_head(
        &mut self,
        ex: ExchangeId,
        stream: LegacyStream,
        head: &Head,
    ) -> (Body, Vec<Action>) {
        if !head.is_success() {
            return (Body::Discard, self.legacy_stream_end(stream));
        }
        self.exchanges.insert(ex, Exchange::LegacyStream(stream));
        let first_within = Some(ENDPOINT_WITHIN);
        (Body::Events { first_within }, Vec::new())
    }

    pub(super) fn legacy_stream_event(
        &mut self,
        ex: ExchangeId,
        event: StreamEvent,
    ) -> Vec<Action> {
        let Some(Exchange::LegacyStream(stream)) = self.exchanges.get_mut(&ex) else {
            return Vec::new();
        };
        match (stream.started, event) {
            (true, StreamEvent::Message(m)) => vec![Action::Deliver(m)],
            (true, StreamEvent::Endpoint(_)) => Vec::new(),
            (false, StreamEvent::Endpoint(path)) => {
                let call = stream.call;
                let endpoint = self.url.join(path.trim()).ok();
                match endpoint {
                    Some(endpoint) if same_origin(&endpoint, &self.url) => {
                        stream.started = true;
                        self.switch_to_endpoint(call, endpoint)
                    }
                    other => {
                        // An endpoint on another origin would receive the host's own
                        // headers with every message: refused, as the reference SDKs do.
                        self.exchanges.remove(&ex);
                        let why = match other {
                            Some(e) => format!(
                                "the HTTP+SSE server at {} named an endpoint on another origin ({}); capable does not send messages there",
                                self.shown,
                                super::redact::redact(&e)
                            ),
                            None => format!("the HTTP+SSE server named a bad endpoint {path:?}"),
                        };
                        let mut actions = Vec::new();
                        if let Some(Exchange::Call(call)) = self.exchanges.remove(&call) {
                            self.by_request.remove(&call.id);
                            actions.push(Action::Fail {
                                id: call.id.clone(),
                                failure: Failure::Broken(why),
                            });
                        }
                        actions
                    }
                }
            }
            (false, StreamEvent::Message(_)) => {
                // Not an HTTP+SSE stream after all.
                let stream = match self.exchanges.remove(&ex) {
                    Some(Exchange::LegacyStream(s)) => s,
                    _ => return Vec::new(),
                };
                self.legacy_stream_end(stream)
            }
        }
    }

    /// The stream named its endpoint: from now on messages are POSTed there, and the
    /// waiting `initialize` goes first.
    fn switch_to_endpoint(&mut self, call: ExchangeId, endpoint: url::Url) -> Vec<Action> {
        let mut actions = vec![Action::Notice(Notice::LegacySseTransport {
            url: self.shown.clone(),
            endpoint: super::redact::redact(&endpoint),
        })];
        self.mode = Mode::LegacySse { endpoint };
        let request = match self.exchanges.get_mut(&call) {
            Some(Exchange::Call(c)) => {
                let msg = c.post_to_endpoint().clone();
                Some(self.post(&msg, Vec::new()))
            }
            _ => None,
        };
        if let Some(request) = request {
            actions.push(Action::Send {
                exchange: call,
                request,
                blocking: false,
            });
        }
        actions
    }

    /// The stream ended (or never started): before its endpoint, the refusal of the
    /// waiting `initialize` is the answer; after, the connection is over.
    pub(super) fn legacy_stream_end(&mut self, stream: LegacyStream) -> Vec<Action> {
        if stream.started {
            return vec![Action::End(Some(Failure::Broken(format!(
                "the server closed its event stream at {}",
                self.shown
            ))))];
        }
        match self.exchanges.remove(&stream.call) {
            Some(Exchange::Call(call)) => self.call_refused(*call),
            _ => Vec::new(),
        }
    }
}
