//! How the `conformance` profile's asking tools (and prompt) put the questions of
//! `conformance_asks.rs`, as each era asks:
//!
//! - a legacy client gets `elicitation/create`, `sampling/createMessage` or
//!   `roots/list` requests of the server's own; the call is answered once the client
//!   answered every question (a question of a later round is asked after the earlier
//!   round's were answered);
//! - a 2026-07-28 client gets an `input_required` result whose `inputRequests` hold the
//!   round's questions, and a `requestState` naming the round, sealed with a key of the
//!   process's own: a retry whose `inputResponses` answer every question goes on to the
//!   next round (or completes); one that misses a key is asked again; a state that is
//!   not the server's (tampered with) is refused with -32602, as are `inputResponses`
//!   that are no object.
//!
//! Either way a question is put only to a client that declared what it needs; a call
//! left with nothing it may ask fails with -32021 naming what was lacking (a 2026-07-28
//! client) or a tool error (a legacy one).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use capable_core::internal::jsonrpc::{codes, Payload, RequestId, RpcError};
use serde_json::{json, Map, Value};

use super::conformance::complete;
use super::conformance_asks::{finish, lacking, may_ask, rounds, Ask, PROMPT};
use super::Fixture;

/// `tools/call` of an asking tool; `false` for another tool.
pub(super) fn call(
    f: &Arc<Fixture>,
    id: &RequestId,
    tool: &str,
    params: &Value,
    modern: bool,
) -> bool {
    let args = params.get("arguments").cloned().unwrap_or(Value::Null);
    let Some(rounds) = rounds(tool, &args) else {
        return false;
    };
    match modern {
        true => stateless(f, id, tool, rounds, params),
        false => ask_legacy(f, id, tool, rounds, 0, Map::new()),
    }
    true
}

/// `prompts/get` of the asking prompt; `false` for another prompt.
pub(super) fn prompt(
    f: &Arc<Fixture>,
    id: &RequestId,
    name: &str,
    params: &Value,
    modern: bool,
) -> bool {
    if name != PROMPT {
        return false;
    }
    let rounds = rounds(PROMPT, &Value::Null).unwrap_or_default();
    match modern {
        true => stateless(f, id, PROMPT, rounds, params),
        false => ask_legacy(f, id, PROMPT, rounds, 0, Map::new()),
    }
    true
}

/// The key that seals a `requestState` (one per process: a state outlives no server).
static SEAL: LazyLock<std::collections::hash_map::RandomState> =
    LazyLock::new(std::collections::hash_map::RandomState::new);

/// The state of round `round` of `tool`: `tool:round:seal`. The seal is a keyed hash
/// (SipHash with the process's random key): enough to tell a state this process wrote
/// from one changed on the way, not a cryptographic signature.
fn state(tool: &str, round: usize) -> String {
    format!("{tool}:{round}:{:016x}", seal(tool, round))
}

fn seal(tool: &str, round: usize) -> u64 {
    SEAL.hash_one((tool, round))
}

/// The round a state names, if this process wrote it for `tool`.
fn round_of(tool: &str, state: &str) -> Option<usize> {
    let rest = state.strip_prefix(tool)?.strip_prefix(':')?;
    let (round, mark) = rest.split_once(':')?;
    let round: usize = round.parse().ok()?;
    (mark == format!("{:016x}", seal(tool, round))).then_some(round)
}

/// A 2026-07-28 call: the round its state names (the first without one), answered when
/// its retry answers every question.
fn stateless(f: &Fixture, id: &RequestId, tool: &str, rounds: Vec<Vec<Ask>>, params: &Value) {
    let round = match params.get("requestState") {
        None => 0,
        Some(s) => match s.as_str().and_then(|s| round_of(tool, s)) {
            Some(r) if r < rounds.len() => r,
            _ => {
                return f.error(
                    id,
                    codes::INVALID_PARAMS,
                    "requestState is not one this server issued",
                    None,
                )
            }
        },
    };
    let responses = match params.get("inputResponses") {
        None => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => {
            return f.error(
                id,
                codes::INVALID_PARAMS,
                "inputResponses must be an object",
                None,
            )
        }
    };
    let caps = params
        .pointer("/_meta/io.modelcontextprotocol~1clientCapabilities")
        .cloned()
        .unwrap_or(Value::Null);
    let asks: Vec<&Ask> = rounds[round].iter().filter(|a| may_ask(&caps, a)).collect();
    if asks.is_empty() {
        return f.error(
            id,
            codes::MISSING_CLIENT_CAPABILITY,
            "this call needs a client capability that was not declared",
            Some(json!({"requiredCapabilities": lacking(&caps, &rounds[round])})),
        );
    }
    let answered = responses.is_some_and(|r| {
        asks.iter()
            .all(|a| r.get(a.key).is_some_and(Value::is_object))
    });
    let next = match answered {
        true => round + 1,
        false => round,
    };
    if next == rounds.len() {
        let answers = responses.cloned().unwrap_or_default();
        return f.result(id, &complete(finish(tool, &answers), true));
    }
    let requests: Map<String, Value> = rounds[next]
        .iter()
        .filter(|a| may_ask(&caps, a))
        .map(|a| {
            (
                a.key.to_owned(),
                json!({"method": a.method.as_str(), "params": a.params}),
            )
        })
        .collect();
    f.result(
        id,
        &json!({"resultType": "input_required", "inputRequests": requests, "requestState": state(tool, next)}),
    );
}

/// A legacy call waiting on its questions.
struct Waiting {
    tool: String,
    round: usize,
    /// The server's ids of the round's questions not answered yet, with their keys.
    open: Vec<(i64, &'static str)>,
    answers: Map<String, Value>,
}

/// The legacy calls waiting, by the caller's id (one fixture per process).
static WAITING: LazyLock<Mutex<HashMap<RequestId, Waiting>>> = LazyLock::new(Default::default);

fn waiting() -> std::sync::MutexGuard<'static, HashMap<RequestId, Waiting>> {
    WAITING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Asks round `round`'s questions of a legacy client (those it declared what they
/// need for); answers the call when there is no round left.
fn ask_legacy(
    f: &Arc<Fixture>,
    call: &RequestId,
    tool: &str,
    rounds: Vec<Vec<Ask>>,
    round: usize,
    answers: Map<String, Value>,
) {
    let Some(asks) = rounds.get(round) else {
        let result = finish(tool, &answers);
        return f.result(call, &result);
    };
    let (asked, bytes) = f.engine(|s, out| {
        let mut open = Vec::new();
        for a in asks {
            if let Ok(q) = s.request(a.method, &a.params, None, call.clone(), Instant::now(), out) {
                open.push((q, a.key));
            }
        }
        open
    });
    if asked.is_empty() {
        return f.result(
            call,
            &json!({"content": [{"type": "text", "text": "this client cannot be asked for input"}], "isError": true}),
        );
    }
    waiting().insert(
        call.clone(),
        Waiting {
            tool: tool.to_owned(),
            round,
            open: asked,
            answers,
        },
    );
    f.write(&bytes);
}

/// The client's answer to the server's question `question`, asked for `call`: taken
/// when it is this profile's (the next round asked, or the call answered); otherwise
/// given back.
pub(super) fn answered(
    f: &Arc<Fixture>,
    question: i64,
    call: &RequestId,
    outcome: Result<Payload, RpcError>,
) -> Option<Result<Payload, RpcError>> {
    let mut all = waiting();
    let Some(w) = all.get_mut(call) else {
        return Some(outcome);
    };
    let Some(at) = w.open.iter().position(|(q, _)| *q == question) else {
        return Some(outcome);
    };
    let (_, key) = w.open.remove(at);
    let answer = match outcome {
        Ok(p) => p.decode::<Value>().unwrap_or(Value::Null),
        Err(e) => json!({"error": {"code": e.code, "message": e.message}}),
    };
    w.answers.insert(key.to_owned(), answer);
    if !w.open.is_empty() {
        return None;
    }
    let w = all.remove(call).expect("looked up above");
    drop(all);
    let rounds = rounds(&w.tool, &Value::Null).unwrap_or_default();
    ask_legacy(f, call, &w.tool, rounds, w.round + 1, w.answers);
    None
}
