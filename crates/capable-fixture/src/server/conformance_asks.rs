//! What the `conformance` profile's asking tools (and its one asking prompt) ask, and
//! what they answer once every question was answered. How a question reaches the
//! client — a request of the server's own, or an `input_required` round — is the era's
//! business, in `conformance_input.rs`.
//!
//! A tool asks in rounds; each question of a round has a key (the key its answer comes
//! back under in a 2026-07-28 retry) and needs a client capability (`elicitation`,
//! `sampling`, `roots`): a question is put only to a client that declared it.
//!
//! The tools follow the suite's descriptions: `test_sampling` (`prompt`),
//! `test_elicitation` (`message`), `test_elicitation_sep1034_defaults` (a form whose
//! every field has a default), `test_elicitation_sep1330_enums` (the five kinds of
//! enum), the `test_input_required_result_*` tools (`elicitation`, `sampling`,
//! `list_roots`, `request_state`, `multiple_inputs`, `multi_round` (two rounds),
//! `tampered_state` and `capabilities` (elicitation and sampling, each only if
//! declared)), and two of the stateless scenario's diagnostics:
//! `test_missing_capability`, which needs sampling (a client that did not declare it
//! is refused, and told so), and `test_streaming_elicitation`, one form question whose
//! 2026-07-28 answer must be a result, never a request on the response stream. The
//! prompt is `test_input_required_result_prompt`.

use serde_json::{json, Map, Value};

use capable_core::internal::server::ServerMethod;

/// One question: the key its answer comes back under (2026-07-28), what it asks.
pub(super) struct Ask {
    pub(super) key: &'static str,
    pub(super) method: ServerMethod,
    pub(super) params: Value,
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
pub(super) fn rounds(tool: &str, args: &Value) -> Option<Vec<Vec<Ask>>> {
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
        "test_missing_capability" => round(vec![sample(
            "answer",
            "This call needs the client's model.",
        )]),
        "test_streaming_elicitation" => round(vec![elicit(
            "answer",
            "Please confirm to go on.",
            json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
        )]),
        PROMPT => round(vec![elicit(
            "user_context",
            "What context should the prompt use?",
            one_string("context"),
        )]),
        _ => None,
    }
}

/// The prompt that asks.
pub(super) const PROMPT: &str = "test_input_required_result_prompt";

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
        plain(
            "test_missing_capability",
            "Needs sampling: refused to a client that did not declare it.",
        ),
        plain(
            "test_streaming_elicitation",
            "Asks one question while the call is open.",
        ),
    ]
}

/// The asking prompt, as `prompts/list` gives it.
pub(super) fn prompt_entry() -> Value {
    json!({"name": PROMPT, "description": "A prompt that asks the user for its context first."})
}

/// What `tool` answers once every question was: the answers, in a text the suite reads.
pub(super) fn finish(tool: &str, answers: &Map<String, Value>) -> Value {
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

/// The client capability a question of `method` needs (`None`: any client may be asked).
fn needs(method: ServerMethod) -> Option<&'static str> {
    match method {
        ServerMethod::Elicit => Some("elicitation"),
        ServerMethod::CreateMessage => Some("sampling"),
        ServerMethod::ListRoots => Some("roots"),
        ServerMethod::Ping => None,
    }
}

/// Whether a client that declared `caps` may be asked `ask`.
pub(super) fn may_ask(caps: &Value, ask: &Ask) -> bool {
    needs(ask.method).is_none_or(|key| caps.get(key).is_some())
}

/// What a client that declared `caps` lacks for `asks`, as a -32021 error's
/// `requiredCapabilities` has it: a `ClientCapabilities` object, each capability it
/// did not declare as `{}`.
pub(super) fn lacking(caps: &Value, asks: &[Ask]) -> Value {
    let missing: Map<String, Value> = asks
        .iter()
        .filter_map(|a| needs(a.method))
        .filter(|key| caps.get(key).is_none())
        .map(|key| (key.to_owned(), json!({})))
        .collect();
    Value::Object(missing)
}
