//! A request held for authorization ([`Action::Authorize`]), released: replayed when
//! the shell acted on its need, dropped when it could not. The holding itself is where
//! each request's refusal is read (`call.rs`, the one-way messages in `mod.rs`, the
//! standalone stream in `streams.rs`); the rule of one replay per kind of need is
//! [`Rounds`](crate::auth::Rounds).

use std::time::Duration;

use crate::notice::Notice;

use super::call::Call;
use super::streams::Standalone;
use super::{Action, Exchange, ExchangeId, HttpSession};

impl HttpSession {
    /// The shell acted on the need of a held exchange ([`Action::Authorize`]): its
    /// request is sent again.
    pub fn authorized(&mut self, ex: ExchangeId) -> Vec<Action> {
        if self.closed {
            return Vec::new();
        }
        match self.exchanges.remove(&ex) {
            Some(Exchange::Call(call)) => self.replay_call(ex, call),
            Some(Exchange::OneWay(one)) => {
                let request = self.post(&one.msg, self.message_headers(&one.msg));
                self.exchanges.insert(ex, Exchange::OneWay(one));
                vec![Action::Send {
                    exchange: ex,
                    request,
                    blocking: true,
                }]
            }
            Some(Exchange::Standalone(stream)) => self.reopen_standalone(ex, stream),
            Some(other) => {
                self.exchanges.insert(ex, other);
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    /// The shell could not act on the need of a held exchange: it is dropped (the
    /// shell fails its request with its own reason).
    pub fn abandon(&mut self, ex: ExchangeId) -> Vec<Action> {
        match self.exchanges.remove(&ex) {
            Some(Exchange::Call(call)) => {
                self.by_request.remove(&call.id);
                Vec::new()
            }
            Some(Exchange::Standalone(_)) => vec![Action::Notice(Notice::StreamGivenUp {
                url: self.url.to_string(),
                attempts: 0,
            })],
            _ => Vec::new(),
        }
    }

    /// The shell answered the held call's need: the request again.
    fn replay_call(&mut self, ex: ExchangeId, mut call: Box<Call>) -> Vec<Action> {
        if !call.release(self.is_legacy_sse()) {
            self.keep(ex, call);
            return Vec::new();
        }
        let request = self.post(call.message(), self.message_headers(call.message()));
        self.send_again(ex, call, request)
    }

    /// The stream's need was answered: open it again at once.
    fn reopen_standalone(&mut self, ex: ExchangeId, stream: Standalone) -> Vec<Action> {
        let request = self.get_stream(stream.last_event_id.as_deref(), Duration::ZERO);
        self.exchanges.insert(ex, Exchange::Standalone(stream));
        vec![Action::Send {
            exchange: ex,
            request,
            blocking: false,
        }]
    }
}
