//! `capable bridge` and tasks, against server-everything (the TypeScript SDK's, a
//! 2025-11-25 server with core tasks): its `simulate-research-query` requires a task and
//! takes four stages of a second; on an ambiguous topic it asks which reading is meant,
//! on `tasks/result`. Through the bridge: a 2026-07-28 host with and without the tasks
//! extension, the question read in `tasks/get` or put in a round, and many servers as
//! one, which declare no tasks. Every message the bridge writes is validated as a
//! server message of the host's version.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;

use bridge_support::Bridge;
use capable::internal::ProtocolVersion;
use capable_test_support::assert_valid_result;
use serde_json::{json, Value};

const V: ProtocolVersion = ProtocolVersion::V2025_11_25;
const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A request of a 2026-07-28 host with `meta` as its `_meta`.
fn modern(b: &mut Bridge, id: i64, method: &str, mut params: Value, meta: Value) -> Value {
    params["_meta"] = meta;
    b.request(id, method, params)
}

/// A bridge with `flags` in front of server-everything over stdio.
fn before_everything(flags: &[&str]) -> Bridge {
    let everything = common::servers::everything_stdio();
    let mut args = flags.to_vec();
    args.push("--");
    args.extend(everything.iter().map(String::as_str));
    let mut b = Bridge::start(&args);
    b.version = MODERN;
    b
}

/// server-everything (the TypeScript SDK's, 2025-11-25 with core tasks) behind the
/// bridge, a 2026-07-28 host in front: its `simulate-research-query` tool requires a
/// task and takes four stages of a second. A host with the tasks extension gets the
/// task and polls it to its end, the report inline; a host without it gets the report
/// as the call's result, the bridge having run and waited for the task.
#[test]
fn a_2026_host_runs_server_everythings_research_task_with_and_without_the_extension() {
    // What went to the server is counted off the trace.
    let mut b = before_everything(&["--trace"]);
    let with_tasks = || Bridge::meta(json!({"extensions": {TASKS: {}}}));
    let query = json!({"name": "simulate-research-query", "arguments": {"topic": "tide pools"}});

    let call = modern(&mut b, 1, "tools/call", query.clone(), with_tasks());
    assert_eq!(call["result"]["resultType"], "task", "{call}");
    let id = call["result"]["taskId"].clone();
    let poll = call["result"]["pollIntervalMs"].as_f64().unwrap_or(500.0);
    let mut done = Value::Null;
    for n in 2..40 {
        std::thread::sleep(std::time::Duration::from_millis(poll as u64));
        let got = modern(&mut b, n, "tasks/get", json!({"taskId": id}), with_tasks());
        assert_eq!(got["result"]["resultType"], "complete", "{got}");
        if got["result"]["status"] != "working" {
            done = got;
            break;
        }
    }
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let report = done["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(report.contains("tide pools"), "{done}");

    let plain = modern(&mut b, 50, "tools/call", query, Bridge::meta(json!({})));
    assert_valid_result(MODERN, "CallToolResult", &plain);
    let report = plain["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(report.contains("tide pools"), "{plain}");
    assert_eq!(b.sent_upstream_count("tools/call"), 2);
}

/// server-everything's research task on an ambiguous topic asks which reading is meant
/// (an `elicitation/create` naming the task, sent on `tasks/result`): a 2026-07-28 host
/// behind the bridge reads the question in `tasks/get`, answers it with `tasks/update`,
/// and the report is written for that reading.
#[test]
fn a_2026_host_answers_server_everythings_research_question_through_the_bridge() {
    let mut b = before_everything(&[]);
    let meta = || Bridge::meta(json!({"elicitation": {}, "extensions": {TASKS: {}}}));
    let query = json!({"name": "simulate-research-query",
        "arguments": {"topic": "tide pools", "ambiguous": true}});
    let call = modern(&mut b, 1, "tools/call", query, meta());
    assert_eq!(call["result"]["resultType"], "task", "{call}");
    let id = call["result"]["taskId"].clone();
    let poll = call["result"]["pollIntervalMs"].as_f64().unwrap_or(500.0) as u64;
    let poll_until = |b: &mut Bridge, from: i64, want: &str| {
        for n in from..from + 40 {
            std::thread::sleep(std::time::Duration::from_millis(poll.min(250)));
            let got = modern(b, n, "tasks/get", json!({"taskId": id}), meta());
            if got["result"]["status"] == want || got.get("error").is_some() {
                return got;
            }
        }
        panic!("task {id} never became {want}")
    };
    let asking = poll_until(&mut b, 2, "input_required");
    let questions = asking["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(questions.len(), 1, "{asking}");
    let (key, question) = questions.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create");
    let schema = &question["params"]["requestedSchema"]["properties"]["interpretation"];
    assert!(
        schema["oneOf"].as_array().is_some_and(|o| !o.is_empty()),
        "{question}"
    );

    let answer = json!({"action": "accept", "content": {"interpretation": "historical"}});
    let update = json!({"taskId": id, "inputResponses": {key.as_str(): answer}});
    let updated = modern(&mut b, 100, "tasks/update", update, meta());
    assert_eq!(updated["result"]["resultType"], "complete", "{updated}");
    let done = poll_until(&mut b, 101, "completed");
    let report = done["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(report.contains("tide pools (historical)"), "{done}");
}

/// The same question for a 2026-07-28 host without the tasks extension: the bridge
/// runs the task the tool requires and waits for it, and the question the task asks on
/// the way reaches the host as an `input_required` round of its call, whose retry
/// answers it; the call's result is the report written for that reading.
#[test]
fn a_2026_host_without_tasks_answers_server_everythings_research_question_in_a_round() {
    let mut b = before_everything(&[]);
    let meta = || Bridge::meta(json!({"elicitation": {}}));
    let query = json!({"name": "simulate-research-query",
        "arguments": {"topic": "tide pools", "ambiguous": true}});
    let round = modern(&mut b, 1, "tools/call", query.clone(), meta());
    assert_valid_result(MODERN, "InputRequiredResult", &round);
    let questions = round["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(questions.len(), 1, "{round}");
    let (key, question) = questions.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create");

    let mut retry = query;
    retry["requestState"] = round["result"]["requestState"].clone();
    let answer = json!({"action": "accept", "content": {"interpretation": "current"}});
    retry["inputResponses"] = json!({ key.as_str(): answer });
    let done = modern(&mut b, 2, "tools/call", retry, meta());
    assert_valid_result(MODERN, "CallToolResult", &done);
    let report = done["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(report.contains("tide pools (current)"), "{done}");
}

/// A tool that must run as a task (server-everything's `simulate-research-query`,
/// `execution.taskSupport: "required"`) behind many servers as one, which declare no
/// tasks: the bridge lists it as a plain tool, runs the task the call needs and waits
/// for it, and the host gets the tool's result.
#[test]
fn a_tool_that_requires_a_task_is_run_and_waited_for_behind_many_servers() {
    let everything: Vec<String> = common::servers::everything_stdio();
    let config = json!({"mcpServers": {
        "docs": {"command": common::bin(), "args": ["fixture", "--profile", "read-only"]},
        "ev": {"command": everything[0], "args": everything[1..]},
    }});
    let file = common::TempFile::new("bridge-task-peers-many.json", &config.to_string());
    let mut b = Bridge::start(&["--config", file.path()]);
    let init = b.initialize(V, json!({}));
    assert!(
        init["result"]["capabilities"].get("tasks").is_none(),
        "{init}"
    );
    let tools = b.request(1, "tools/list", json!({}));
    assert_valid_result(V, "ListToolsResult", &tools);
    let research = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ev__simulate-research-query")
        .unwrap_or_else(|| panic!("no research tool: {tools}"));
    assert!(
        research["execution"].get("taskSupport").is_none(),
        "listed as a plain tool: {research}"
    );
    let call = json!({"name": "ev__simulate-research-query", "arguments": {"topic": "kelp"}});
    let done = b.request(2, "tools/call", call);
    assert_valid_result(V, "CallToolResult", &done);
    let report = done["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(report.contains("kelp"), "{done}");
}
