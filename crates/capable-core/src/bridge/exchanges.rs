//! The host requests a relay has at its server ("exchanges"), each under a token of
//! the relay's own: the one table that says whose each one is.
//!
//! - A host's cancel cancels only an exchange of that host's request (its id, as the
//!   host sent it): another request's never.
//! - Progress of an exchange goes to the host request it belongs to while the host
//!   waits for it; none while the host holds a round of it (it has no request open).
//! - The answer goes to the host request waiting for it; while the host holds a round
//!   of it, it is the rounds' to keep ([`crate::server::Rounds`]).
//! - A server's question ([`Exchanges::asker`]) belongs to a request that may be asked
//!   one (a call, a prompt, a read) at the server that asks — the oldest one the host
//!   waits for, else the oldest one whose round the host holds. Where the requests may
//!   be several hosts' that cannot be told apart (a shared session), a question that
//!   could be more than one request's is nobody's: it is never guessed. A question
//!   that names the request it is about ([`Exchanges::related`]: it came on that
//!   request's stream, whose token the shell's client kept with it) is that
//!   exchange's, exactly, before any of this.
//!
//! ```
//! use capable_core::internal::bridge::{Asker, Exchange, Exchanges};
//! use capable_core::{Method, RequestId};
//!
//! let mut table: Exchanges<&str> = Exchanges::default();
//! let call = table.open(|_token| Exchange::new(RequestId::Number(7), Method::CallTool, "abort-7"));
//! let read = table.open(|_token| Exchange::new(RequestId::Number(8), Method::ReadResource, "abort-8"));
//! // A question of the server's: the oldest request that may be asked one.
//! assert_eq!(table.asker(None, false, |_| false), Asker::To(call));
//! // Shared by hosts that cannot be told apart: two candidates, nobody's.
//! assert_eq!(table.asker(None, true, |_| false), Asker::Ambiguous(2));
//! // The host cancels request 8: only that exchange is cancelled.
//! let (token, cancelled) = table.cancelled_by(&RequestId::Number(8)).unwrap();
//! assert_eq!((token, cancelled.handle), (read, "abort-8"));
//! assert!(table.cancelled_by(&RequestId::Number(9)).is_none());
//! ```

use std::collections::BTreeMap;

use crate::input_rounds::may_ask_for_input;
use crate::jsonrpc::{Payload, RequestId};
use crate::task_bridge::Carry;
use crate::Method;

/// One host request at the server. `H` is the shell's handle to it (what cancels it
/// there).
#[derive(Debug)]
#[non_exhaustive]
pub struct Exchange<H> {
    /// The host request it answers: `None` while the host holds a round of it (a
    /// 2026-07-28 host's retry carries it on under the retry's id).
    pub host: Option<RequestId>,
    /// Its method.
    pub method: Method,
    /// The shell's handle to it.
    pub handle: H,
    /// Its answer comes in legacy form (a 2026-07-28 host gets what that era adds).
    pub legacy_answer: bool,
    /// The bridge carries it out across the eras.
    pub carry: Option<Carry>,
    /// The `ttl` a legacy host asked for its task, if it did.
    pub task_ttl: Option<u64>,
    /// The host's params, for a request that may get rounds: its retry must repeat them.
    pub params: Option<Payload>,
    /// The server of many it went to (a question of that server's goes to it).
    pub server: Option<String>,
    /// The sealed task id the host named, opened (its answer repeats it).
    pub task: Option<super::task_ids::Presented>,
}

impl<H> Exchange<H> {
    /// Host request `host` of `method`, cancelled at the server with `handle`; every
    /// other field at its default (set them before [`Exchanges::open`] returns).
    pub fn new(host: RequestId, method: Method, handle: H) -> Exchange<H> {
        Exchange {
            host: Some(host),
            method,
            handle,
            legacy_answer: false,
            carry: None,
            task_ttl: None,
            params: None,
            server: None,
            task: None,
        }
    }
}

/// Whose a server's question is ([`Exchanges::asker`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Asker {
    /// The exchange of this token's.
    To(u64),
    /// This many requests could have asked it, of hosts that cannot be told apart:
    /// nobody's.
    Ambiguous(usize),
    /// No request that may be asked one is at the server.
    Nobody,
}

/// The exchanges of one relay, by token (see the module documentation). Tokens grow:
/// a smaller one is an older request.
#[derive(Debug)]
pub struct Exchanges<H> {
    open: BTreeMap<u64, Exchange<H>>,
    next: u64,
}

impl<H> Default for Exchanges<H> {
    fn default() -> Self {
        Exchanges {
            open: BTreeMap::new(),
            next: 0,
        }
    }
}

impl<H> Exchanges<H> {
    /// A token for the next exchange (its progress callback and its future name it
    /// before it is [inserted](Self::insert)); never given twice.
    pub fn reserve(&mut self) -> u64 {
        let token = self.next;
        self.next += 1;
        token
    }

    /// Opens `exchange` under `token` (from [`reserve`](Self::reserve)).
    pub fn insert(&mut self, token: u64, exchange: Exchange<H>) {
        self.open.insert(token, exchange);
    }

    /// Opens an exchange made by `make` with its token: [`reserve`](Self::reserve),
    /// then [`insert`](Self::insert).
    pub fn open(&mut self, make: impl FnOnce(u64) -> Exchange<H>) -> u64 {
        let token = self.reserve();
        self.insert(token, make(token));
        token
    }

    /// How many are open.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// Exchange `token`, while it is open.
    pub fn get(&self, token: u64) -> Option<&Exchange<H>> {
        self.open.get(&token)
    }

    /// The host cancelled its request `id`: the exchange that answers it, taken out (its
    /// handle cancels it at the server). Only an exchange of that very request: `None`
    /// when no open exchange answers `id`.
    pub fn cancelled_by(&mut self, id: &RequestId) -> Option<(u64, Exchange<H>)> {
        let token = self
            .open
            .iter()
            .find(|(_, e)| e.host.as_ref() == Some(id))
            .map(|(token, _)| *token)?;
        self.open.remove(&token).map(|e| (token, e))
    }

    /// Where progress of exchange `token` goes: its host request, while the host waits
    /// for it.
    pub fn progress_to(&self, token: u64) -> Option<&RequestId> {
        self.open.get(&token)?.host.as_ref()
    }

    /// Whether the host holds a round of exchange `token` (it has no request open for
    /// it): its answer is the rounds' to keep.
    pub fn in_a_round(&self, token: u64) -> bool {
        self.open.get(&token).is_some_and(|e| e.host.is_none())
    }

    /// Exchange `token` answered: taken out with the host request its answer goes to;
    /// `None` when it is not open or the host holds a round of it (then it stays).
    pub fn answered(&mut self, token: u64) -> Option<(RequestId, Exchange<H>)> {
        if self.in_a_round(token) {
            return None;
        }
        let exchange = self.open.remove(&token)?;
        let id = exchange.host.clone()?;
        Some((id, exchange))
    }

    /// Exchange `token` ended without an answer for the host (its round lapsed):
    /// taken out.
    pub fn remove(&mut self, token: u64) -> Option<Exchange<H>> {
        self.open.remove(&token)
    }

    /// The tokens of the exchanges whose host request is open (a round may answer it).
    pub fn awaited(&self) -> Vec<u64> {
        let awaited = self.open.iter().filter(|(_, e)| e.host.is_some());
        awaited.map(|(token, _)| *token).collect()
    }

    /// The host request of exchange `token` is answered with a round: it has none open
    /// any more. Its id, to answer.
    pub fn put_in_a_round(&mut self, token: u64) -> Option<RequestId> {
        self.open.get_mut(&token)?.host.take()
    }

    /// The host's retry `id` carries exchange `token` on (`false`: it is over).
    pub fn carried_on(&mut self, token: u64, id: RequestId) -> bool {
        match self.open.get_mut(&token) {
            Some(exchange) => {
                exchange.host = Some(id);
                true
            }
            None => false,
        }
    }

    /// Whose a question of server `from` (`None`: the one server behind) is: see the
    /// module documentation. `shared`: the requests may be several hosts' that cannot
    /// be told apart. `holds(token)`: whether the host holds a round of `token`.
    pub fn asker(&self, from: Option<&str>, shared: bool, holds: impl Fn(u64) -> bool) -> Asker {
        let may_ask = |e: &Exchange<H>| {
            let same_server = match (from, &e.server) {
                (Some(asking), Some(at)) => asking == at.as_str(),
                _ => true,
            };
            may_ask_for_input(e.method) && same_server
        };
        let candidates: Vec<(u64, bool)> = self
            .open
            .iter()
            .filter(|(_, e)| may_ask(e))
            .map(|(token, e)| (*token, e.host.is_some()))
            .collect();
        if shared && candidates.len() > 1 {
            return Asker::Ambiguous(candidates.len());
        }
        // Tokens are in order: the first of each kind is the oldest.
        let waiting = candidates
            .iter()
            .find(|(token, open)| *open && !holds(*token));
        let holding = || candidates.iter().find(|(token, _)| holds(*token));
        match waiting.or_else(holding) {
            Some((token, _)) => Asker::To(*token),
            None => Asker::Nobody,
        }
    }

    /// The exchange a question of server `from` (`None`: the one server behind) is
    /// about, when it names exchange `related`: that one, if it is open, at the server
    /// that asks, and may be asked one; `None` otherwise.
    pub fn related(&self, from: Option<&str>, related: u64) -> Option<u64> {
        let e = self.open.get(&related)?;
        let same_server = match (from, &e.server) {
            (Some(asking), Some(at)) => asking == at.as_str(),
            _ => true,
        };
        (same_server && may_ask_for_input(e.method)).then_some(related)
    }

    /// The requests the host waits on (it holds no round of them) at the server that
    /// asks (`from`) that may be asked a question: how many, and the oldest.
    pub fn waiting(&self, from: Option<&str>, holds: impl Fn(u64) -> bool) -> (usize, Option<u64>) {
        let mut waiting = self.open.iter().filter(|(token, e)| {
            let same_server = match (from, &e.server) {
                (Some(asking), Some(at)) => asking == at.as_str(),
                _ => true,
            };
            may_ask_for_input(e.method) && same_server && e.host.is_some() && !holds(**token)
        });
        let oldest = waiting.next().map(|(token, _)| *token);
        (oldest.map_or(0, |_| 1 + waiting.count()), oldest)
    }

    /// Every exchange, taken out (the relay ends).
    pub fn drain(&mut self) -> impl Iterator<Item = (u64, Exchange<H>)> + '_ {
        std::mem::take(&mut self.open).into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: i64) -> RequestId {
        RequestId::Number(n)
    }

    fn at(server: &str, host: i64, method: Method) -> impl FnOnce(u64) -> Exchange<u64> + '_ {
        move |token| {
            let mut e = Exchange::new(id(host), method, token);
            e.server = Some(server.to_owned());
            e
        }
    }

    #[test]
    fn a_cancel_takes_only_the_cancellers_own_request() {
        let mut t: Exchanges<u64> = Exchanges::default();
        let a = t.open(|tk| Exchange::new(id(1), Method::CallTool, tk));
        let b = t.open(|tk| Exchange::new(id(2), Method::CallTool, tk));
        assert!(t.cancelled_by(&id(3)).is_none());
        assert!(
            t.cancelled_by(&RequestId::String("1".into())).is_none(),
            "ids are typed"
        );
        let (token, cancelled) = t.cancelled_by(&id(2)).unwrap();
        assert_eq!((token, cancelled.handle), (b, b));
        assert!(t.get(a).is_some());
        // Twice: nothing left to cancel.
        assert!(t.cancelled_by(&id(2)).is_none());
    }

    #[test]
    fn progress_and_the_answer_go_to_the_request_waiting_not_to_a_round() {
        let mut t: Exchanges<u64> = Exchanges::default();
        let a = t.open(|tk| Exchange::new(id(1), Method::CallTool, tk));
        assert_eq!(t.progress_to(a), Some(&id(1)));
        // The host is answered with a round: no request of its waits any more.
        assert_eq!(t.put_in_a_round(a), Some(id(1)));
        assert!(t.in_a_round(a));
        assert_eq!(t.progress_to(a), None);
        assert!(t.answered(a).is_none(), "kept for the retry");
        assert!(t.awaited().is_empty());
        // Its retry carries it on under the retry's id: that request gets the answer.
        assert!(t.carried_on(a, id(5)));
        let (to, exchange) = t.answered(a).unwrap();
        assert_eq!((to, exchange.method), (id(5), Method::CallTool));
        assert!(!t.carried_on(a, id(6)), "over");
        assert!(t.is_empty());
    }

    #[test]
    fn a_question_goes_to_the_oldest_request_that_may_be_asked_at_the_server_that_asks() {
        let mut t: Exchanges<u64> = Exchanges::default();
        let _list = t.open(at("a", 1, Method::ListTools));
        let b_call = t.open(at("b", 2, Method::CallTool));
        let a_read = t.open(at("a", 3, Method::ReadResource));
        let a_call = t.open(at("a", 4, Method::CallTool));
        let none = |_| false;
        // A list may not be asked anything; b's call is b's.
        assert_eq!(t.asker(Some("a"), false, none), Asker::To(a_read));
        assert_eq!(t.asker(Some("b"), false, none), Asker::To(b_call));
        assert_eq!(t.asker(Some("c"), false, none), Asker::Nobody);
        // A request whose round the host holds comes after one the host waits for…
        assert_eq!(
            t.asker(Some("a"), false, |tk| tk == a_read),
            Asker::To(a_call)
        );
        // …and is still asked when none waits.
        let both = |tk| tk == a_read || tk == a_call;
        assert_eq!(t.asker(Some("a"), false, both), Asker::To(a_read));
    }

    #[test]
    fn a_question_that_names_its_request_is_that_exchanges_at_its_server_only() {
        let mut t: Exchanges<u64> = Exchanges::default();
        let a1 = t.open(at("a", 1, Method::CallTool));
        let b1 = t.open(at("b", 2, Method::CallTool));
        let list = t.open(at("a", 3, Method::ListTools));
        assert_eq!(t.related(Some("a"), a1), Some(a1));
        assert_eq!(t.related(Some("b"), b1), Some(b1));
        // Only the server it went to asks about it.
        assert_eq!(t.related(Some("b"), a1), None);
        assert_eq!(t.related(Some("c"), a1), None);
        // A list may not be asked anything, whatever the server says.
        assert_eq!(t.related(Some("a"), list), None);
        t.remove(a1);
        assert_eq!(t.related(Some("a"), a1), None, "over");
    }

    #[test]
    fn in_a_shared_session_a_question_two_requests_could_have_asked_is_nobodys() {
        let mut t: Exchanges<u64> = Exchanges::default();
        let one = t.open(|tk| Exchange::new(id(1), Method::CallTool, tk));
        assert_eq!(t.asker(None, true, |_| false), Asker::To(one));
        t.open(|tk| Exchange::new(id(1), Method::GetPrompt, tk));
        assert_eq!(t.asker(None, true, |_| false), Asker::Ambiguous(2));
        // Unshared, the oldest.
        assert_eq!(t.asker(None, false, |_| false), Asker::To(one));
        assert_eq!(t.drain().count(), 2);
        assert_eq!(t.asker(None, true, |_| false), Asker::Nobody);
    }
}
