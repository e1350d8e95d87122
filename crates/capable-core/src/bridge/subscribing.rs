//! A legacy host's `resources/subscribe` and `resources/unsubscribe` before many
//! servers, while their servers are asked ([`Subscribing`]): the host is answered once
//! the server that owns the URI did — a legacy server's answer to its step, a
//! 2026-07-28 server's acknowledgement of the listen stream opened anew — and never by
//! another server's outcome. What each server is asked is planned by
//! [`Fanout`](crate::server::fanout::Fanout); this table says which host request waits
//! for which outcome, and what it is answered.
//!
//! | what happens | the requests waiting |
//! |---|---|
//! | the host asks, and nothing is to ask of the server ([`Wait::Nothing`]) | answered at once, not kept |
//! | the host asks what a request waiting asks already (same method, same URI) | waits with it, for the same outcome ([`Subscribing::same`]) |
//! | a plan is made meanwhile | what they ask is wanted as if answered ([`Subscribing::wanted`]): a subscribe's URI in, an unsubscribe's out |
//! | a legacy server answers a step | those waiting for that very step get its answer, success or error ([`Subscribing::stepped`]) |
//! | a 2026-07-28 server acknowledges | those waiting at that server: a subscribe of a URI it left out is refused with why ([`refusal`]), the others succeed ([`Subscribing::acknowledged`]) |
//! | a server's stream ends first, or it goes down | those waiting at that server fail with why ([`Subscribing::ended`]) |

use serde_json::json;

use crate::jsonrpc::{codes, RequestId, RpcError};
use crate::server::fanout::{Refused, Step, Wait};
use crate::Method;

/// What a host request waiting is answered: `{}` (`Ok`) or this error.
pub type Outcome = Result<(), RpcError>;

/// One host request waiting for its server.
#[derive(Debug)]
struct Waiting {
    id: RequestId,
    method: Method,
    uri: String,
    wait: Wait,
}

/// The host's (un)subscribe requests waiting for their servers (see the module
/// documentation).
#[derive(Debug, Default)]
pub struct Subscribing {
    waiting: Vec<Waiting>,
}

impl Subscribing {
    /// The URIs to plan for: those the host holds (`held`, the engine's interest), as
    /// the requests waiting change them, and as `also` (a request about to wait) does.
    pub fn wanted(&self, held: &[String], also: Option<(Method, &str)>) -> Vec<String> {
        let mut wanted = held.to_vec();
        let waiting = self.waiting.iter().map(|w| (w.method, w.uri.as_str()));
        for (method, uri) in waiting.chain(also) {
            wanted.retain(|u| u != uri);
            if method == Method::Subscribe {
                wanted.push(uri.to_owned());
            }
        }
        wanted
    }

    /// What a request waiting already for the same `method` of `uri` waits for: a new
    /// one waits with it.
    pub fn same(&self, method: Method, uri: &str) -> Option<Wait> {
        let same = self
            .waiting
            .iter()
            .find(|w| w.uri == uri && w.method == method);
        same.map(|w| w.wait.clone())
    }

    /// Host request `id` (`method` of `uri`) waits for `wait`; `Some(id)`: nothing to
    /// wait for, answer it at once (with `{}`).
    pub fn wait(
        &mut self,
        id: RequestId,
        method: Method,
        uri: String,
        wait: Wait,
    ) -> Option<RequestId> {
        if wait == Wait::Nothing {
            return Some(id);
        }
        self.waiting.push(Waiting {
            id,
            method,
            uri,
            wait,
        });
        None
    }

    /// A legacy server answered `step` (`answer`, as the host is to get it): the
    /// requests waiting for it, each with that answer.
    pub fn stepped(&mut self, step: &Step, answer: &Outcome) -> Vec<(RequestId, Outcome)> {
        let of_step = |w: &Waiting| matches!(&w.wait, Wait::Step(s) if s == step);
        self.take(of_step, |_| answer.clone())
    }

    /// `server` acknowledged its listen stream, leaving out what `refused` says: the
    /// requests waiting at it, each with its answer.
    pub fn acknowledged(&mut self, server: &str, refused: &[Refused]) -> Vec<(RequestId, Outcome)> {
        self.take(at(server), |w| {
            let left_out = refused.iter().find(|why| why.uri() == w.uri);
            match (w.method, left_out) {
                (Method::Subscribe, Some(why)) => Err(refusal(why)),
                _ => Ok(()),
            }
        })
    }

    /// `server`'s listen stream ended before its acknowledgement, or the server went
    /// down: the requests waiting at it, each failing with `why`.
    pub fn ended(&mut self, server: &str, why: &RpcError) -> Vec<(RequestId, Outcome)> {
        self.take(at(server), |_| Err(why.clone()))
    }

    /// How many requests wait.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    fn take(
        &mut self,
        which: impl Fn(&Waiting) -> bool,
        answer: impl Fn(&Waiting) -> Outcome,
    ) -> Vec<(RequestId, Outcome)> {
        let (done, waiting) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition::<Vec<_>, _>(&which);
        self.waiting = waiting;
        done.into_iter()
            .map(|w| {
                let outcome = answer(&w);
                (w.id, outcome)
            })
            .collect()
    }
}

/// Whether a request waits for `server`'s acknowledgement.
fn at(server: &str) -> impl Fn(&Waiting) -> bool + '_ {
    move |w| matches!(&w.wait, Wait::Acknowledged { server: s } if s == server)
}

/// The error of a host's subscribe refused with `why` (its `data` names the URI and
/// the server).
pub fn refusal(why: &Refused) -> RpcError {
    RpcError {
        code: codes::INVALID_PARAMS,
        message: why.to_string(),
        data: Some(json!({"uri": why.uri(), "server": why.server()})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: i64) -> RequestId {
        RequestId::Number(n)
    }

    fn step(server: &str, uri: &str) -> Step {
        Step::Subscribe {
            server: server.into(),
            uri: uri.into(),
        }
    }

    fn acked(server: &str) -> Wait {
        Wait::Acknowledged {
            server: server.into(),
        }
    }

    #[test]
    fn what_the_requests_waiting_ask_is_wanted_as_if_answered() {
        let mut s = Subscribing::default();
        let held = ["a".to_owned(), "b".to_owned()];
        assert_eq!(s.wanted(&held, None), ["a", "b"]);
        s.wait(id(1), Method::Subscribe, "c".into(), acked("x"));
        s.wait(
            id(2),
            Method::Unsubscribe,
            "a".into(),
            Wait::Step(step("y", "a")),
        );
        assert_eq!(s.wanted(&held, None), ["b", "c"]);
        assert_eq!(
            s.wanted(&held, Some((Method::Subscribe, "d"))),
            ["b", "c", "d"]
        );
        assert_eq!(s.wanted(&held, Some((Method::Unsubscribe, "c"))), ["b"]);
    }

    #[test]
    fn nothing_to_ask_is_answered_at_once_and_the_same_request_waits_with_the_first() {
        let mut s = Subscribing::default();
        assert_eq!(
            s.wait(id(1), Method::Subscribe, "u".into(), Wait::Nothing),
            Some(id(1))
        );
        assert!(s.is_empty());
        assert_eq!(s.same(Method::Subscribe, "u"), None);
        assert_eq!(
            s.wait(id(2), Method::Subscribe, "u".into(), acked("x")),
            None
        );
        assert_eq!(s.same(Method::Subscribe, "u"), Some(acked("x")));
        assert_eq!(s.same(Method::Unsubscribe, "u"), None, "another method");
        assert_eq!(s.same(Method::Subscribe, "v"), None, "another URI");
    }

    #[test]
    fn a_step_answers_only_the_requests_waiting_for_it_with_its_answer() {
        let mut s = Subscribing::default();
        s.wait(
            id(1),
            Method::Subscribe,
            "u".into(),
            Wait::Step(step("x", "u")),
        );
        s.wait(
            id(2),
            Method::Subscribe,
            "u".into(),
            Wait::Step(step("x", "u")),
        );
        s.wait(
            id(3),
            Method::Subscribe,
            "v".into(),
            Wait::Step(step("x", "v")),
        );
        s.wait(id(4), Method::Subscribe, "u".into(), acked("x"));
        let failed = Err(RpcError {
            code: codes::INTERNAL_ERROR,
            message: "no".into(),
            data: None,
        });
        let answered = s.stepped(&step("x", "u"), &failed);
        assert_eq!(answered, [(id(1), failed.clone()), (id(2), failed)]);
        assert_eq!(s.stepped(&step("y", "v"), &Ok(())), [], "another server's");
        assert_eq!(s.stepped(&step("x", "v"), &Ok(())), [(id(3), Ok(()))]);
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn an_acknowledgement_refuses_a_subscribe_it_left_out_and_answers_only_its_server() {
        let mut s = Subscribing::default();
        s.wait(id(1), Method::Subscribe, "u".into(), acked("x"));
        s.wait(id(2), Method::Subscribe, "v".into(), acked("x"));
        s.wait(id(3), Method::Unsubscribe, "w".into(), acked("x"));
        s.wait(id(4), Method::Subscribe, "u".into(), acked("y"));
        let left_out = Refused::NotHonoured {
            uri: "u".into(),
            server: "x".into(),
        };
        let answered = s.acknowledged("x", std::slice::from_ref(&left_out));
        assert_eq!(answered.len(), 3);
        let Err(refused) = &answered[0].1 else {
            panic!("{answered:?}");
        };
        assert_eq!(answered[0].0, id(1));
        assert_eq!(refused.code, codes::INVALID_PARAMS);
        assert_eq!(refused.data, Some(json!({"uri": "u", "server": "x"})));
        assert_eq!(answered[1..], [(id(2), Ok(())), (id(3), Ok(()))]);
        // Server y's request still waits, and fails when its stream ends first.
        let why = RpcError {
            code: codes::INTERNAL_ERROR,
            message: "ended".into(),
            data: None,
        };
        assert_eq!(s.ended("x", &why), []);
        assert_eq!(s.ended("y", &why), [(id(4), Err(why.clone()))]);
        assert!(s.is_empty());
    }
}
