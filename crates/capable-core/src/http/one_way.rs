//! Notifications and responses POSTed to the server: each waits for its answer's head
//! before the next message goes (they keep their order), expects no JSON-RPC answer,
//! and is reported with a notice when refused. A successful
//! `notifications/initialized` opens the legacy standalone stream; a refusal for want
//! of authorization holds it for [`Action::Authorize`].

use crate::auth::{AuthNeed, Rounds};
use crate::notice::Notice;

use super::message::{excerpt, Message};
use super::{Action, Body, Exchange, ExchangeId, Head, HttpSession, Mode};

/// A notification or response POSTed to the server.
pub(super) struct OneWay {
    pub(super) msg: Message,
    /// Before the head: whether it is `notifications/initialized`; after: whether it
    /// was accepted.
    initialized: bool,
    rounds: Rounds,
    need: Option<AuthNeed>,
}

impl OneWay {
    /// What it is, for a notice.
    pub(super) fn describe(&self) -> String {
        self.msg.describe()
    }
}

impl HttpSession {
    /// POSTs `msg`, blocking the next outgoing message until it is answered.
    pub(super) fn start_one_way(&mut self, msg: Message) -> Vec<Action> {
        let request = self.post(&msg, self.message_headers(&msg));
        let exchange = self.new_exchange(Exchange::OneWay(OneWay {
            initialized: msg.is_initialized(),
            msg,
            rounds: Default::default(),
            need: None,
        }));
        vec![Action::Send {
            exchange,
            request,
            blocking: true,
        }]
    }

    /// Its answer's head: accepted (the body is dropped), or refused (the body says
    /// why).
    pub(super) fn one_way_head(
        &mut self,
        ex: ExchangeId,
        mut one: OneWay,
        head: &Head,
    ) -> (Body, Vec<Action>) {
        let mut actions = Vec::new();
        let ok = head.is_success();
        if ok && one.initialized && self.mode == Mode::Streamable {
            actions.extend(self.open_standalone());
        }
        one.initialized = ok;
        one.need = head
            .need(self.authorizing, &self.url)
            .filter(|n| one.rounds.admit(n.kind));
        self.exchanges.insert(ex, Exchange::OneWay(one));
        let body = match ok {
            true => Body::Discard,
            false => Body::Whole { limit: self.limit },
        };
        (body, actions)
    }

    /// A refusal's body: held for authorization, or reported.
    pub(super) fn one_way_body(
        &mut self,
        ex: ExchangeId,
        mut one: OneWay,
        body: Vec<u8>,
    ) -> Vec<Action> {
        if one.initialized {
            return Vec::new();
        }
        match one.need.take() {
            Some(need) => {
                self.exchanges.insert(ex, Exchange::OneWay(one));
                vec![Action::Authorize {
                    exchange: ex,
                    id: None,
                    need,
                }]
            }
            None => vec![Action::Notice(Notice::HttpRejected {
                what: one.describe(),
                url: self.shown.clone(),
                detail: excerpt(&body),
            })],
        }
    }
}
