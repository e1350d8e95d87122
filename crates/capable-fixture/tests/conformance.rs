//! The `conformance` profile over the fixture's real stdio, for what a host (and the
//! bridge, which serves it on HTTP to the official suite) relies on: an asking tool's
//! questions come as each era asks them and its answer comes once they are answered;
//! a `requestState` that is not the one the fixture wrote is refused; a call that
//! needs what the client did not declare says what that was; log lines reach only a
//! request that asked for them; the tools' schemas are valid and their `x-mcp-header`
//! annotations are ones a client on HTTP keeps. Every message either way is checked
//! against the schema of the exchange's version.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use capable_core::internal::http::param_headers::param_headers;
use capable_core::ProtocolVersion;
use capable_test_support::{assert_valid, assert_valid_from_server, assert_valid_result};
use serde_json::{json, Value};

const LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;
const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;
/// How long one message may take before the test fails (a hang is a failure).
const ANSWER: Duration = Duration::from_secs(10);

/// A `conformance` fixture process, killed by its handle when dropped, and the
/// messages it writes.
struct Fixture {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    version: ProtocolVersion,
}

impl Fixture {
    /// Starts the fixture; a legacy `version` is initialized with `capabilities`.
    fn start(version: ProtocolVersion, capabilities: Value) -> Fixture {
        let mut child = Command::new(env!("CARGO_BIN_EXE_capable-fixture"))
            .args(["--profile", "conformance"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start capable-fixture");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(serde_json::from_str(&line).expect("a JSON line"));
            }
        });
        let stdin = child.stdin.take().expect("stdin");
        let mut fixture = Fixture {
            child,
            stdin,
            lines,
            version,
        };
        if version == LEGACY {
            fixture.send(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": version.as_str(),
                    "capabilities": capabilities,
                    "clientInfo": {"name": "capable-fixture-test", "version": "0.0.0"}
                }}),
            );
            assert_valid_result(version, "InitializeResult", &fixture.next());
            fixture.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        }
        fixture
    }

    /// Writes one client message, first checked against the exchange's schema.
    #[track_caller]
    fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        assert_valid(self.version, &line);
        line.push(b'\n');
        self.stdin.write_all(&line).expect("write to the fixture");
        self.stdin.flush().expect("flush");
    }

    /// The next message the fixture wrote, checked against the exchange's schema.
    #[track_caller]
    fn next(&self) -> Value {
        let message = self
            .lines
            .recv_timeout(ANSWER)
            .unwrap_or_else(|e| panic!("no message from the fixture within {ANSWER:?}: {e}"));
        assert_valid_from_server(self.version, &message);
        message
    }

    /// Panics if the fixture writes anything within `wait`.
    #[track_caller]
    fn quiet(&self, wait: Duration) {
        if let Ok(message) = self.lines.recv_timeout(wait) {
            panic!("the fixture wrote before it was answered: {message}");
        }
    }

    /// The messages the fixture wrote up to and with the answer to request `id`.
    #[track_caller]
    fn until_answer(&self, id: i64) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message = self.next();
            let done = message["id"] == id && message.get("method").is_none();
            seen.push(message);
            if done {
                return seen;
            }
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // This one child, by its handle; a no-op once it has exited.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A 2026-07-28 request's `_meta`: the client declared `capabilities`.
fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN.as_str(),
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "capable-fixture-test", "version": "0.0.0"}
    })
}

/// `tools/call` of `tool` without arguments; `more` is merged into its params.
fn call(id: i64, tool: &str, more: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": {}});
    if let Value::Object(more) = more {
        params.as_object_mut().unwrap().extend(more);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// The only text of a tool result.
fn text_of(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
}

#[test]
fn legacy_asks_a_later_round_only_once_the_earlier_one_was_answered() {
    let mut fixture = Fixture::start(LEGACY, json!({"elicitation": {}}));
    fixture.send(call(1, "test_input_required_result_multi_round", json!({})));
    let mut asked = Vec::new();
    for name in ["Ada", "teal"] {
        // One question, a request of the server's own; nothing else until it is answered.
        let question = fixture.next();
        assert_eq!(question["method"], "elicitation/create", "{question}");
        fixture.quiet(Duration::from_millis(200));
        asked.push(question["params"]["message"].clone());
        let key = question["params"]["requestedSchema"]["required"][0].clone();
        let key = key.as_str().expect("one required field").to_owned();
        fixture.send(json!({"jsonrpc": "2.0", "id": question["id"], "result": {
            "action": "accept", "content": {key: name}
        }}));
    }
    assert_eq!(
        asked,
        [
            "Step 1: What is your name?",
            "Step 2: What is your favorite color?"
        ]
    );
    let answer = fixture.next();
    assert_eq!(
        answer["id"], 1,
        "the call is answered once both were: {answer}"
    );
    assert_valid_result(LEGACY, "CallToolResult", &answer);
    assert_eq!(
        text_of(&answer),
        "Completed with the answers to: step1, step2"
    );
}

#[test]
fn legacy_client_that_declared_nothing_is_asked_nothing_and_gets_a_tool_error() {
    let mut fixture = Fixture::start(LEGACY, json!({}));
    fixture.send(call(
        1,
        "test_elicitation",
        json!({"arguments": {"message": "Hi?"}}),
    ));
    let answer = fixture.next();
    assert_eq!(
        answer["id"], 1,
        "no elicitation/create came first: {answer}"
    );
    assert_valid_result(LEGACY, "CallToolResult", &answer);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
}

/// A 2026-07-28 `input_required` answer's questions (by key) and its `requestState`.
#[track_caller]
fn input_required(answer: &Value) -> (Value, String) {
    assert_valid_result(MODERN, "InputRequiredResult", answer);
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let state = result["requestState"].as_str().expect("a requestState");
    (result["inputRequests"].clone(), state.to_owned())
}

#[test]
fn modern_rounds_go_on_by_the_state_the_fixture_wrote_and_a_missed_answer_is_asked_again() {
    const TOOL: &str = "test_input_required_result_multi_round";
    let caps = json!({"elicitation": {}});
    let mut fixture = Fixture::start(MODERN, Value::Null);
    let accept = |field: &str, value: &str| json!({"action": "accept", "content": {field: value}});

    fixture.send(call(1, TOOL, json!({"_meta": meta(caps.clone())})));
    let (asks, first) = input_required(&fixture.next());
    assert_eq!(
        asks.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["step1"]
    );
    assert_eq!(asks["step1"]["method"], "elicitation/create");

    // A retry without the round's answer: the same question, again.
    fixture.send(call(
        2,
        TOOL,
        json!({"_meta": meta(caps.clone()), "requestState": first,
        "inputResponses": {"unrelated": accept("name", "x")}}),
    ));
    let (asks, again) = input_required(&fixture.next());
    assert!(asks.get("step1").is_some(), "asked again: {asks}");
    assert_eq!(again, first, "still the first round");

    fixture.send(call(
        3,
        TOOL,
        json!({"_meta": meta(caps.clone()), "requestState": first,
        "inputResponses": {"step1": accept("name", "Ada")}}),
    ));
    let (asks, second) = input_required(&fixture.next());
    assert_eq!(
        asks.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["step2"]
    );
    assert_ne!(second, first);

    fixture.send(call(
        4,
        TOOL,
        json!({"_meta": meta(caps), "requestState": second,
        "inputResponses": {"step2": accept("color", "teal")}}),
    ));
    let answer = fixture.next();
    assert_valid_result(MODERN, "CallToolResult", &answer);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(text_of(&answer), "Completed with the answers to: step2");
}

#[test]
fn modern_refuses_a_request_state_it_did_not_write() {
    const TOOL: &str = "test_input_required_result_multi_round";
    let caps = json!({"elicitation": {}});
    let mut fixture = Fixture::start(MODERN, Value::Null);
    let answered = json!({"step1": {"action": "accept", "content": {"name": "Ada"}},
                          "step2": {"action": "accept", "content": {"color": "teal"}}});
    fixture.send(call(1, TOOL, json!({"_meta": meta(caps.clone())})));
    let (_, state) = input_required(&fixture.next());
    fixture.send(call(
        2,
        "test_input_required_result_request_state",
        json!({"_meta": meta(caps.clone())}),
    ));
    let (_, other_tools) = input_required(&fixture.next());

    // The state names its round in the clear (the first is round 0); its seal is what
    // makes it the fixture's, so naming the next round with it skips nothing.
    let skipped_ahead = state.replacen(":0:", ":1:", 1);
    assert_ne!(skipped_ahead, state, "the state names round 0: {state}");
    let forged = [
        skipped_ahead,
        format!("{}0", &state[..state.len() - 1]),
        other_tools,
        "anything".to_owned(),
    ];
    for (n, forged) in forged.iter().enumerate() {
        let id = 10 + n as i64;
        fixture.send(call(
            id,
            TOOL,
            json!({"_meta": meta(caps.clone()),
            "requestState": forged, "inputResponses": answered}),
        ));
        let answer = fixture.next();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32602, "{forged}: {answer}");
    }

    // The state it wrote still goes on.
    fixture.send(call(
        20,
        TOOL,
        json!({"_meta": meta(caps), "requestState": state,
        "inputResponses": answered}),
    ));
    let (asks, _) = input_required(&fixture.next());
    assert!(asks.get("step2").is_some(), "{asks}");
}

#[test]
fn modern_call_that_needs_an_undeclared_capability_says_which() {
    let mut fixture = Fixture::start(MODERN, Value::Null);
    fixture.send(call(
        1,
        "test_missing_capability",
        json!({"_meta": meta(json!({}))}),
    ));
    let answer = fixture.next();
    assert_eq!(answer["error"]["code"], -32021, "{answer}");
    assert_eq!(
        answer["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}}),
        "a ClientCapabilities object: {answer}"
    );

    // A client that declared sampling is asked instead.
    fixture.send(call(
        2,
        "test_missing_capability",
        json!({"_meta": meta(json!({"sampling": {}}))}),
    ));
    let (asks, _) = input_required(&fixture.next());
    assert_eq!(asks["answer"]["method"], "sampling/createMessage", "{asks}");

    // Of two questions a client may be asked one: only that one is asked.
    fixture.send(call(
        3,
        "test_input_required_result_capabilities",
        json!({"_meta": meta(json!({"sampling": {}}))}),
    ));
    let (asks, _) = input_required(&fixture.next());
    let methods: Vec<&Value> = asks
        .as_object()
        .unwrap()
        .values()
        .map(|a| &a["method"])
        .collect();
    assert_eq!(methods, [&json!("sampling/createMessage")], "{asks}");
}

#[test]
fn modern_log_lines_reach_only_a_request_that_asked_for_their_level() {
    let mut fixture = Fixture::start(MODERN, Value::Null);
    let logged = |seen: &[Value]| {
        seen.iter()
            .filter(|m| m["method"] == "notifications/message")
            .count()
    };
    let with_level = |level: Option<&str>| {
        let mut meta = meta(json!({}));
        if let Some(level) = level {
            meta["io.modelcontextprotocol/logLevel"] = json!(level);
        }
        json!({"_meta": meta})
    };
    for (id, level, lines) in [(1, None, 0), (2, Some("warning"), 0), (3, Some("info"), 3)] {
        fixture.send(call(id, "test_logging_tool", with_level(level)));
        let seen = fixture.until_answer(id);
        assert_eq!(logged(&seen), lines, "logLevel {level:?}: {seen:?}");
        assert_valid_result(MODERN, "CallToolResult", seen.last().unwrap());
    }
}

#[test]
fn tools_are_valid_in_both_eras_and_their_param_headers_are_ones_a_client_keeps() {
    for version in [LEGACY, MODERN] {
        let mut fixture = Fixture::start(version, json!({}));
        let mut params = json!({});
        if version == MODERN {
            params["_meta"] = meta(json!({}));
        }
        fixture.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}));
        let answer = fixture.next();
        assert_valid_result(version, "ListToolsResult", &answer);
        let tools = answer["result"]["tools"].as_array().expect("tools");

        // A client on HTTP drops a tool whose annotations break the rules; none here does.
        let mut headers = Vec::new();
        for tool in tools {
            let found = param_headers(&tool["inputSchema"])
                .unwrap_or_else(|e| panic!("{} would be dropped: {e}", tool["name"]));
            headers.extend(found.into_iter().map(|h| h.header));
        }
        assert_eq!(headers.len(), 3, "{headers:?}");
        for header in ["Region", "Priority", "Verbose"] {
            assert!(headers.iter().any(|h| h == header), "{header}: {headers:?}");
        }
    }
}
