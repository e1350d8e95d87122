//! The `tasks` (2025-11-25, core tasks) and `modern-tasks` (2026-07-28, the
//! `io.modelcontextprotocol/tasks` extension) profiles: tool calls that run as tasks.
//!
//! Two tools, each a task when the call may be one (2025-11-25: the client asked with
//! `params.task`; 2026-07-28: the client declared the extension), a plain call
//! otherwise:
//!
//! - `report` completes on its second `tasks/get` (or at once on `tasks/result`,
//!   which waits for the end), with the text `report ready`;
//! - `stall` works until it is cancelled;
//! - `fail` fails on its second `tasks/get`, with the error `-32603` "the report could
//!   not be built" (2026-07-28: `error` in the task; 2025-11-25: `tasks/result`'s);
//! - `fleeting`'s task expires as it is made (`ttl` 0: the server knows it no more);
//! - `approve` asks on its first look, and completes with the answer in its text:
//!   2026-07-28 as `input_required` with one form elicitation in `inputRequests`,
//!   completed on the look after `tasks/update` answered; 2025-11-25 as
//!   `input_required`, its question an `elicitation/create` request naming the task
//!   (`_meta[RELATED_TASK]`) sent when the client's `tasks/result` comes, which the
//!   answer completes;
//! - `check` (2026-07-28) is never a task: it answers at once, a tool error
//!   (`isError`) when its argument `ok` is `false`;
//! - `batch`, `hold` and `deny` (2025-11-25) require a task (`execution.taskSupport:
//!   "required"`; a plain call is refused, `-32601`): `batch` is `report`, `hold` is
//!   `stall`, `deny` is `fail`.
//!
//! Time plays no part: a task moves on when it is looked at, so a test's polls decide.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use capable_core::internal::jsonrpc::{codes, Payload, RequestId, RpcError};
use capable_core::internal::server::ServerMethod;
use capable_core::{Extension, Method};
use serde_json::{json, Map, Value};

use super::answers::fresh_for_a_second;
use super::Fixture;

/// The `_meta` member that ties a 2025-11-25 result to its task.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
const CREATED: &str = "2026-12-01T00:00:00Z";

/// One task of the fixture's.
struct Entry {
    tool: String,
    status: &'static str,
    looks: u32,
    /// `approve`'s answer, once `tasks/update` brought it.
    answer: Option<Value>,
}

/// Every task the fixture made (one fixture per process).
static BOARD: Mutex<(u64, BTreeMap<String, Entry>)> = Mutex::new((0, BTreeMap::new()));

/// The tools, with their `execution.taskSupport` in 2025-11-25 (2026-07-28 tools say
/// nothing of tasks: the server decides).
pub(super) fn tools(modern: bool) -> Value {
    let mut tools = json!([
        {"name": "report", "description": "Builds a report; as a task, done on its second look.",
         "inputSchema": {"type": "object"}},
        {"name": "stall", "description": "As a task, works until it is cancelled.",
         "inputSchema": {"type": "object"}},
        {"name": "fail", "description": "As a task, fails on its second look.",
         "inputSchema": {"type": "object"}},
        {"name": "fleeting", "description": "As a task, expires as it is made.",
         "inputSchema": {"type": "object"}}
    ]);
    let Some(list) = tools.as_array_mut() else {
        return tools;
    };
    list.push(json!({"name": "approve",
        "description": "As a task, asks for approval, then says what it was told.",
        "inputSchema": {"type": "object"}}));
    if modern {
        list.push(json!({"name": "check",
            "description": "Answers at once; a tool error when ok is false.",
            "inputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}));
    } else {
        for tool in list.iter_mut() {
            tool["execution"] = json!({"taskSupport": "optional"});
        }
        for (name, like) in [("batch", "report"), ("hold", "stall"), ("deny", "fail")] {
            list.push(json!({"name": name,
                "description": format!("Runs only as a task, like {like}."),
                "inputSchema": {"type": "object"},
                "execution": {"taskSupport": "required"}}));
        }
    }
    json!({ "tools": tools })
}

fn outcome() -> Value {
    json!({"content": [{"type": "text", "text": "report ready"}]})
}

/// `approve`'s result, with the answer it was given.
fn approved(answer: &Value) -> Value {
    json!({"content": [{"type": "text", "text": format!("approved: {answer}")}]})
}

/// Why `fail`'s task failed.
fn failure() -> Value {
    json!({"code": codes::INTERNAL_ERROR, "message": "the report could not be built"})
}

/// The tool a 2025-11-25 task of `tool` behaves like (`batch`, `hold` and `deny`
/// require one).
fn like(tool: &str) -> &str {
    match tool {
        "batch" => "report",
        "hold" => "stall",
        "deny" => "fail",
        other => other,
    }
}

/// What `approve` asks, as `inputRequests`.
fn approval() -> Value {
    json!({"approve": {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Approve the report?",
        "requestedSchema": {"type": "object", "properties": {"approve": {"type": "boolean"}}}
    }}})
}

/// The questions of 2025-11-25 `approve` tasks out at the client: the question's id,
/// its task.
static ASKED: Mutex<Vec<(i64, String)>> = Mutex::new(Vec::new());

/// A 2025-11-25 `approve` task asks on the client's `tasks/result` (`call`): an
/// `elicitation/create` naming the task; its answer ends the task and the call
/// ([`answered`]).
fn ask_approval(f: &Arc<Fixture>, call: &RequestId, task_id: &str) {
    let mut params = approval()["approve"]["params"].clone();
    params["_meta"] = json!({ RELATED_TASK: {"taskId": task_id} });
    let (asked, bytes) = f.engine(|s, out| {
        s.request(
            ServerMethod::Elicit,
            &params,
            None,
            call.clone(),
            Instant::now(),
            out,
        )
        .map_err(|(why, _)| why)
    });
    match asked {
        Ok(question) => {
            let mut asked = ASKED.lock().unwrap_or_else(|e| e.into_inner());
            asked.push((question, task_id.to_owned()));
            f.write(&bytes);
        }
        Err(why) => f.error(call, codes::INTERNAL_ERROR, &why.to_string(), None),
    }
}

/// The client's answer to question `question`: taken when it is an `approve` task's
/// (the task completes with it, or fails without one, and its `tasks/result`, `call`,
/// is answered); otherwise given back.
pub(super) fn answered(
    f: &Arc<Fixture>,
    question: i64,
    call: &RequestId,
    outcome: Result<Payload, RpcError>,
) -> Option<Result<Payload, RpcError>> {
    let task_id = {
        let mut asked = ASKED.lock().unwrap_or_else(|e| e.into_inner());
        let Some(at) = asked.iter().position(|(q, _)| *q == question) else {
            return Some(outcome);
        };
        asked.remove(at).1
    };
    let mut board = BOARD.lock().unwrap_or_else(|e| e.into_inner());
    let Some(entry) = board.1.get_mut(&task_id) else {
        // Its task is gone: the call is answered as any other question's.
        return Some(outcome);
    };
    match outcome.map(|a| a.decode::<Value>().unwrap_or(Value::Null)) {
        Ok(answer) => {
            let mut result = approved(&answer);
            result["_meta"] = json!({ RELATED_TASK: {"taskId": task_id} });
            entry.answer = Some(answer);
            entry.status = "completed";
            f.result(call, &result);
        }
        Err(e) => {
            entry.status = "failed";
            let message = format!("the approval was not given: {}", e.message);
            f.error(call, codes::INTERNAL_ERROR, &message, None);
        }
    }
    None
}

/// A task as the era has it.
fn task(id: &str, entry: &Entry, modern: bool) -> Map<String, Value> {
    let mut t = Map::new();
    t.insert("taskId".into(), json!(id));
    t.insert("status".into(), json!(entry.status));
    t.insert("createdAt".into(), json!(CREATED));
    t.insert("lastUpdatedAt".into(), json!(CREATED));
    let (ttl, interval) = match modern {
        true => ("ttlMs", "pollIntervalMs"),
        false => ("ttl", "pollInterval"),
    };
    t.insert(ttl.into(), json!(60_000));
    t.insert(interval.into(), json!(100));
    t
}

/// Answers the tasks profiles' requests: `true` when answered.
pub(super) fn handle(f: &Arc<Fixture>, id: &RequestId, method: Method, params: &Value) -> bool {
    let modern = f.modern();
    let task_id = params.get("taskId").and_then(Value::as_str).unwrap_or("");
    let mut board = BOARD.lock().unwrap_or_else(|e| e.into_inner());
    let (next, tasks) = &mut *board;
    let unknown = |f: &Fixture| {
        f.error(
            id,
            codes::INVALID_PARAMS,
            "Unknown task",
            Some(json!({"taskId": task_id})),
        )
    };
    match method {
        Method::ListTools => f.result(id, &fresh_for_a_second(tools(modern), modern)),
        Method::CallTool => {
            let as_task = match modern {
                true => {
                    f.engine(|s, _| {
                        s.phase()
                            .capabilities()
                            .is_some_and(|c| c.has_extension(Extension::Tasks))
                    })
                    .0
                }
                false => params.get("task").is_some(),
            };
            let tool = params.get("name").and_then(Value::as_str).unwrap_or("");
            if tool == "check" {
                let ok = params.pointer("/arguments/ok") != Some(&json!(false));
                let text = if ok {
                    "checked"
                } else {
                    "the check found a problem"
                };
                let result = json!({"content": [{"type": "text", "text": text}],
                    "isError": !ok, "resultType": "complete"});
                f.result(id, &result);
                return true;
            }
            if !as_task && like(tool) != tool {
                let message = format!("Tool {tool} requires task augmentation");
                f.error(id, codes::METHOD_NOT_FOUND, &message, None);
                return true;
            }
            if !as_task {
                let mut plain = outcome();
                if modern {
                    plain["resultType"] = json!("complete");
                }
                f.result(id, &plain);
                return true;
            }
            *next += 1;
            let entry = Entry {
                tool: like(tool).to_owned(),
                status: "working",
                looks: 0,
                answer: None,
            };
            let name = format!("task-{next}");
            let mut made = task(&name, &entry, modern);
            match tool {
                // Expired as it is made: the server knows it no more.
                "fleeting" => {
                    let ttl = if modern { "ttlMs" } else { "ttl" };
                    made.insert(ttl.into(), json!(0));
                }
                _ => {
                    tasks.insert(name, entry);
                }
            }
            let answer = match modern {
                true => {
                    let mut made = made;
                    made.insert("resultType".into(), json!("task"));
                    Value::Object(made)
                }
                false => json!({ "task": made }),
            };
            f.result(id, &answer);
        }
        Method::GetTask => {
            let Some(entry) = tasks.get_mut(task_id) else {
                unknown(f);
                return true;
            };
            entry.looks += 1;
            match (entry.tool.as_str(), entry.status, &entry.answer) {
                ("report", "working", _) if entry.looks >= 2 => entry.status = "completed",
                ("fail", "working", _) if entry.looks >= 2 => entry.status = "failed",
                ("approve", "working", None) => entry.status = "input_required",
                ("approve", "working", Some(_)) => entry.status = "completed",
                _ => {}
            }
            let mut t = task(task_id, entry, modern);
            if modern {
                t.insert("resultType".into(), json!("complete"));
                match (entry.status, &entry.answer) {
                    ("completed", None) => {
                        t.insert("result".into(), outcome());
                    }
                    ("completed", Some(answer)) => {
                        t.insert("result".into(), approved(answer));
                    }
                    ("input_required", _) => {
                        t.insert("inputRequests".into(), approval());
                    }
                    ("failed", _) => {
                        t.insert("error".into(), failure());
                    }
                    _ => {}
                }
            }
            f.result(id, &Value::Object(t));
        }
        Method::TaskResult => {
            let Some(entry) = tasks.get_mut(task_id) else {
                unknown(f);
                return true;
            };
            if !modern && entry.tool == "approve" && entry.status == "input_required" {
                ask_approval(f, id, task_id);
                return true;
            }
            match (entry.tool.as_str(), entry.status) {
                ("report", "working") => entry.status = "completed",
                ("fail", "working") => entry.status = "failed",
                _ => {}
            }
            match entry.status {
                "failed" => {
                    let error = failure();
                    let message = error["message"].as_str().unwrap_or("");
                    f.error(id, codes::INTERNAL_ERROR, message, None);
                }
                "completed" => {
                    let mut result = match &entry.answer {
                        Some(answer) => approved(answer),
                        None => outcome(),
                    };
                    result["_meta"] = json!({ RELATED_TASK: {"taskId": task_id} });
                    f.result(id, &result);
                }
                status => f.error(
                    id,
                    codes::INTERNAL_ERROR,
                    &format!("task {task_id} is {status}: it has no result"),
                    None,
                ),
            }
        }
        Method::CancelTask => {
            let Some(entry) = tasks.get_mut(task_id) else {
                unknown(f);
                return true;
            };
            if entry.status != "working" {
                let message = format!("task {task_id} is {} already", entry.status);
                f.error(id, codes::INVALID_PARAMS, &message, None);
                return true;
            }
            entry.status = "cancelled";
            match modern {
                true => f.result(id, &json!({"resultType": "complete"})),
                false => f.result(id, &Value::Object(task(task_id, entry, false))),
            }
        }
        Method::UpdateTask => {
            let Some(entry) = tasks.get_mut(task_id) else {
                unknown(f);
                return true;
            };
            let answer = params.pointer("/inputResponses/approve").cloned();
            if entry.status == "input_required" && answer.is_some() {
                entry.answer = answer;
                entry.status = "working";
            }
            f.result(id, &json!({"resultType": "complete"}));
        }
        Method::ListTasks => {
            let all: Vec<Value> = tasks
                .iter()
                .map(|(name, entry)| Value::Object(task(name, entry, false)))
                .collect();
            f.result(id, &json!({ "tasks": all }));
        }
        _ => return false,
    }
    true
}
