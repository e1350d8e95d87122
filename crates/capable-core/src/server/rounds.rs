//! A legacy server's questions to a 2026-07-28 client, which takes no requests: what a
//! server that relays another (a bridge) does when the server behind it asks
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) while its own client
//! speaks the modern era.
//!
//! ```text
//!  client ── tools/call (id 1) ──> relay ── tools/call ──> legacy server
//!                                  relay <── elicitation/create ── server
//!  client <── input_required {inputRequests: {q: …}, requestState: S} ── (answers id 1)
//!  client ── tools/call (id 2) + inputResponses {q: …} + requestState S ──> relay
//!                                  relay ── the answer to elicitation/create ──> server
//!  client <── the call's result (answers id 2) ───────────────── server's answer
//! ```
//!
//! Each question is one round with a state of the relay's own: the client echoes it
//! exactly on its retry, which answers the question and carries on the exchange that
//! waits on the server, under the retry's id. A round the client does not come back
//! to within its deadline is given up (the server gets an error for its question).

use std::collections::HashMap;
use std::time::Instant;

use serde_json::{json, Value};

use crate::jsonrpc::{codes, RpcError};

use super::requests::ServerMethod;

/// The key of the one question of a round in `inputRequests`.
const KEY: &str = "question";

/// One question put to the client, waiting for its retry.
struct Open<Q> {
    exchange: u64,
    reply: Q,
    deadline: Instant,
}

/// A round the client's retry answered.
#[derive(Debug)]
pub struct Answered<Q> {
    /// The exchange the round belongs to (it goes on under the retry's id).
    pub exchange: u64,
    /// Where the answer goes (the server's question).
    pub reply: Q,
    /// The client's answer, or why there is none.
    pub response: Result<Value, RpcError>,
}

/// The open rounds (see the module documentation); `Q` is where each answer goes.
#[derive(Debug)]
pub struct Rounds<Q> {
    next: u64,
    open: HashMap<String, Open<Q>>,
}

impl<Q> std::fmt::Debug for Open<Q> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Open")
            .field("exchange", &self.exchange)
            .finish_non_exhaustive()
    }
}

impl<Q> Default for Rounds<Q> {
    fn default() -> Self {
        Rounds {
            next: 0,
            open: HashMap::new(),
        }
    }
}

impl<Q> Rounds<Q> {
    /// Puts the server's question (`method`, `params`), asked while `exchange` waits
    /// on it, to the client until `deadline`: the `input_required` result to answer
    /// the client's waiting request with. `reply` is where the answer will go.
    pub fn ask(
        &mut self,
        exchange: u64,
        method: ServerMethod,
        params: Value,
        reply: Q,
        deadline: Instant,
    ) -> Value {
        self.next += 1;
        let state = format!("capable-relay-{}", self.next);
        self.open.insert(
            state.clone(),
            Open {
                exchange,
                reply,
                deadline,
            },
        );
        json!({
            "resultType": "input_required",
            "inputRequests": {KEY: {"method": method.as_str(), "params": params}},
            "requestState": state,
        })
    }

    /// Whether a round is open for `exchange` (the client has its question, and has
    /// not come back yet).
    pub fn is_waiting(&self, exchange: u64) -> bool {
        self.open.values().any(|o| o.exchange == exchange)
    }

    /// The client request whose params are `params`, if it is the retry of an open
    /// round (its `requestState` one of ours): the round, answered.
    pub fn answer(&mut self, params: &Value) -> Option<Answered<Q>> {
        let state = params.get("requestState")?.as_str()?;
        let open = self.open.remove(state)?;
        let response = params
            .pointer(&format!("/inputResponses/{KEY}"))
            .cloned()
            .ok_or_else(|| RpcError {
                code: codes::INVALID_PARAMS,
                message: "the client's retry did not answer the question".into(),
                data: None,
            });
        Some(Answered {
            exchange: open.exchange,
            reply: open.reply,
            response,
        })
    }

    /// When [`Rounds::handle_timeout`] should be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.open.values().map(|o| o.deadline).min()
    }

    /// The rounds past their deadline at `now`, given up: their replies.
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<Q> {
        let due: Vec<String> = self
            .open
            .iter()
            .filter(|(_, o)| o.deadline <= now)
            .map(|(state, _)| state.clone())
            .collect();
        due.into_iter()
            .filter_map(|state| self.open.remove(&state).map(|o| o.reply))
            .collect()
    }

    /// Every open round of `exchange`, given up (its client request was cancelled):
    /// their replies.
    pub fn give_up(&mut self, exchange: u64) -> Vec<Q> {
        let states: Vec<String> = self
            .open
            .iter()
            .filter(|(_, o)| o.exchange == exchange)
            .map(|(state, _)| state.clone())
            .collect();
        states
            .into_iter()
            .filter_map(|state| self.open.remove(&state).map(|o| o.reply))
            .collect()
    }

    /// Every open round, given up: their replies.
    pub fn drain(&mut self) -> Vec<Q> {
        self.open.drain().map(|(_, o)| o.reply).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_question_goes_out_as_input_required_and_comes_back_on_the_retry() {
        let t0 = Instant::now();
        let mut rounds = Rounds::default();
        let form = json!({"message": "ok?", "requestedSchema": {"type": "object"}});
        let result = rounds.ask(
            7,
            ServerMethod::Elicit,
            form.clone(),
            "reply",
            t0 + Duration::from_secs(5),
        );
        assert_eq!(result["resultType"], "input_required");
        assert_eq!(result["inputRequests"][KEY]["method"], "elicitation/create");
        assert_eq!(result["inputRequests"][KEY]["params"], form);
        assert!(rounds.is_waiting(7) && !rounds.is_waiting(8));
        let state = result["requestState"].clone();
        // A retry of someone else's round, or none: not ours.
        assert!(rounds
            .answer(&json!({"name": "x", "requestState": "other"}))
            .is_none());
        assert!(rounds.answer(&json!({"name": "x"})).is_none());
        let retry = json!({"name": "x", "requestState": state,
            "inputResponses": {KEY: {"action": "accept", "content": {}}}});
        let answered = rounds.answer(&retry).expect("our round");
        assert_eq!((answered.exchange, answered.reply), (7, "reply"));
        assert_eq!(answered.response.unwrap()["action"], "accept");
        assert!(!rounds.is_waiting(7));
        assert!(rounds.answer(&retry).is_none(), "once");
    }

    #[test]
    fn a_round_nobody_comes_back_to_is_given_up() {
        let t0 = Instant::now();
        let mut rounds = Rounds::default();
        rounds.ask(
            1,
            ServerMethod::ListRoots,
            json!({}),
            "late",
            t0 + Duration::from_secs(1),
        );
        rounds.ask(
            2,
            ServerMethod::Elicit,
            json!({}),
            "later",
            t0 + Duration::from_secs(2),
        );
        assert_eq!(rounds.poll_timeout(), Some(t0 + Duration::from_secs(1)));
        assert!(rounds.handle_timeout(t0).is_empty());
        assert_eq!(
            rounds.handle_timeout(t0 + Duration::from_secs(1)),
            vec!["late"]
        );
        assert_eq!(rounds.give_up(2), vec!["later"]);
        assert_eq!(rounds.poll_timeout(), None);
        // A retry without the answer is an error for the server's question.
        let result = rounds.ask(3, ServerMethod::Elicit, json!({}), "q", t0);
        let answered = rounds
            .answer(&json!({"requestState": result["requestState"]}))
            .unwrap();
        assert!(answered.response.is_err());
    }
}
