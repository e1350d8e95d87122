//! The `conformance` profile's tools (and one prompt) that ask the client, as each era
//! asks:
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
//! Either way a question is put only to a client that declared what it needs
//! (`elicitation`, `sampling`, `roots`); a call left with nothing it may ask fails with
//! -32021 (a 2026-07-28 client) or a tool error (a legacy one).
//!
//! The tools follow the suite's descriptions: `test_sampling` (`prompt`),
//! `test_elicitation` (`message`), `test_elicitation_sep1034_defaults` (a form whose
//! every field has a default), `test_elicitation_sep1330_enums` (the five kinds of
//! enum), and the `test_input_required_result_*` tools: `elicitation`, `sampling`,
//! `list_roots`, `request_state`, `multiple_inputs`, `multi_round` (two rounds),
//! `tampered_state` and `capabilities` (elicitation and sampling, each only if
//! declared). The prompt is `test_input_required_result_prompt`.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use capable_core::jsonrpc::{codes, Payload, RequestId, RpcError};
use capable_core::server::ServerMethod;
use serde_json::{json, Map, Value};

use super::conformance::complete;
use super::Fixture;

/// One question: the key its answer comes back under (2026-07-28), what it asks.
struct Ask {
    key: &'static str,
    method: ServerMethod,
    params: Value,
}

fn elicit(key: &'static str, message: &str, schema: Value) -> Ask {
    Ask {
        key,
        method: ServerMethod::Elicit,
        params: json!({"mode": "form", "message": message, "requestedSchema": schema}),
    }
}

fn one_string(name: &str) -> Value {
    json!({"type": "object", "properties": {name: {"type": "string"}}, "required": [name]})
}

fn sample(key: &'static str, question: &str) -> Ask {
    Ask {
        key,
        method: ServerMethod::CreateMessage,
        params: json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": question}}],
            "maxTokens": 100
        }),
    }
}

fn roots(key: &'static str) -> Ask {
    Ask {
        key,
        method: ServerMethod::ListRoots,
        params: json!({}),
    }
}

/// The rounds of questions of `tool` (called with `args`), or `None` for a tool that
/// asks nothing.
fn rounds(tool: &str, args: &Value) -> Option<Vec<Vec<Ask>>> {
    let arg = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let round = |asks: Vec<Ask>| Some(vec![asks]);
    match tool {
        "test_sampling" => round(vec![sample("answer", &arg("prompt"))]),
        "test_elicitation" => round(vec![elicit(
            "answer",
            &arg("message"),
            json!({
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}
                },
                "required": ["username", "email"]
            }),
        )]),
        "test_elicitation_sep1034_defaults" => round(vec![elicit(
            "answer",
            "Please review the defaults.",
            json!({"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": true}
            }}),
        )]),
        "test_elicitation_sep1330_enums" => round(vec![elicit(
            "answer",
            "Please choose.",
            json!({"type": "object", "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}
                ]},
                "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                               "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "items": {"anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"}
                ]}}
            }}),
        )]),
        "test_input_required_result_elicitation" => round(vec![elicit(
            "user_name",
            "What is your name?",
            one_string("name"),
        )]),
        "test_input_required_result_sampling" => round(vec![sample(
            "capital_question",
            "What is the capital of France?",
        )]),
        "test_input_required_result_list_roots" => round(vec![roots("client_roots")]),
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => round(vec![elicit(
            "confirm",
            "Please confirm",
            json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
        )]),
        "test_input_required_result_multiple_inputs" => round(vec![
            elicit("user_name", "What is your name?", one_string("name")),
            sample("capital_question", "What is the capital of France?"),
            roots("client_roots"),
        ]),
        "test_input_required_result_capabilities" => round(vec![
            elicit("user_name", "What is your name?", one_string("name")),
            sample("capital_question", "What is the capital of France?"),
        ]),
        "test_input_required_result_multi_round" => Some(vec![
            vec![elicit(
                "step1",
                "Step 1: What is your name?",
                one_string("name"),
            )],
            vec![elicit(
                "step2",
                "Step 2: What is your favorite color?",
                one_string("color"),
            )],
        ]),
        PROMPT => round(vec![elicit(
            "user_context",
            "What context should the prompt use?",
            one_string("context"),
        )]),
        _ => None,
    }
}

/// The prompt that asks.
const PROMPT: &str = "test_input_required_result_prompt";

/// The asking tools, as `tools/list` gives them.
pub(super) fn tools() -> Vec<Value> {
    let plain = |name: &str, description: &str| json!({"name": name, "description": description, "inputSchema": {"type": "object", "properties": {}}});
    vec![
        plain(
            "test_elicitation_sep1034_defaults",
            "Asks for a form whose fields have defaults.",
        ),
        plain(
            "test_elicitation_sep1330_enums",
            "Asks for a form with every kind of enum.",
        ),
        plain(
            "test_input_required_result_elicitation",
            "Asks the user's name.",
        ),
        plain(
            "test_input_required_result_sampling",
            "Asks the client's model.",
        ),
        plain(
            "test_input_required_result_list_roots",
            "Asks for the client's roots.",
        ),
        plain(
            "test_input_required_result_request_state",
            "Asks, and keeps its state in the request.",
        ),
        plain(
            "test_input_required_result_multiple_inputs",
            "Asks three questions at once.",
        ),
        plain(
            "test_input_required_result_multi_round",
            "Asks in two rounds.",
        ),
        plain(
            "test_input_required_result_tampered_state",
            "Asks, and refuses a state not its own.",
        ),
        plain(
            "test_input_required_result_capabilities",
            "Asks only what the client declared.",
        ),
    ]
}

/// The asking prompt, as `prompts/list` gives it.
pub(super) fn prompt_entry() -> Value {
    json!({"name": PROMPT, "description": "A prompt that asks the user for its context first."})
}

/// What `tool` answers once every question was: the answers, in a text the suite reads.
fn finish(tool: &str, answers: &Map<String, Value>) -> Value {
    let text = |t: String| json!({"content": [{"type": "text", "text": t}]});
    let elicited = |key: &str| {
        let a = answers.get(key).cloned().unwrap_or(Value::Null);
        let action = a
            .get("action")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned();
        (action, a.get("content").cloned().unwrap_or(Value::Null))
    };
    match tool {
        "test_sampling" => {
            let said = answers
                .get("answer")
                .and_then(|a| a.pointer("/content/text"))
                .and_then(Value::as_str)
                .unwrap_or("");
            text(format!("LLM response: {said}"))
        }
        "test_elicitation" => {
            let (action, content) = elicited("answer");
            text(format!("User response: action={action}, content={content}"))
        }
        "test_elicitation_sep1034_defaults" | "test_elicitation_sep1330_enums" => {
            let (action, content) = elicited("answer");
            text(format!(
                "Elicitation completed: action={action}, content={content}"
            ))
        }
        "test_input_required_result_elicitation" => {
            let (_, content) = elicited("user_name");
            let name = content
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("stranger");
            text(format!("Hello, {name}!"))
        }
        "test_input_required_result_request_state" => {
            text("state-ok: the request state came back intact.".into())
        }
        PROMPT => {
            let (_, content) = elicited("user_context");
            let context = content.get("context").and_then(Value::as_str).unwrap_or("");
            json!({"messages": [{"role": "user", "content": {"type": "text",
                "text": format!("Answer with this context in mind: {context}")}}]})
        }
        _ => text(format!(
            "Completed with the answers to: {}",
            answers.keys().cloned().collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Whether the client declared what `method` needs.
fn declared(caps: &Value, method: ServerMethod) -> bool {
    let key = match method {
        ServerMethod::Elicit => "elicitation",
        ServerMethod::CreateMessage => "sampling",
        ServerMethod::ListRoots => "roots",
        ServerMethod::Ping => return true,
    };
    caps.get(key).is_some()
}

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
    let asks: Vec<&Ask> = rounds[round]
        .iter()
        .filter(|a| declared(&caps, a.method))
        .collect();
    if asks.is_empty() {
        return f.error(
            id,
            codes::MISSING_CLIENT_CAPABILITY,
            "this call needs a client capability that was not declared",
            Some(json!({"requiredCapabilities": {"elicitation": {}}})),
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
        .filter(|a| declared(&caps, a.method))
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
