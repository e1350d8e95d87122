//! Tasks across eras, for a bridge between a host and the server behind it: what the
//! host is told it may do, which of its requests the bridge carries out itself, the
//! wire forms translated, and what is refused because nothing on the other side does
//! it.
//!
//! The two designs (see [`Task`]): 2025-11-25 has tasks in the core —
//! the client asks for one (`params.task`), polls `tasks/get`, fetches the outcome
//! with `tasks/result` (which waits for the end), may `tasks/list` and `tasks/cancel`;
//! 2026-07-28 has the `io.modelcontextprotocol/tasks` extension — the server decides
//! (`resultType: "task"`), `tasks/get` carries the outcome, `tasks/update` answers a
//! task's questions, `tasks/cancel`; there is no `tasks/result` and no `tasks/list`.
//!
//! | the host | the server | the bridge ([`Route`]) |
//! |---|---|---|
//! | 2025-11-25 | 2026-07-28 with the extension | declares `tasks.list`, `tasks.cancel` and `tasks.requests.tools.call` ([`TaskBridge::declaration`]), and the extension to the server ([`TaskBridge::declares_upstream`]) |
//! | … `tools/list` | | every tool's `execution.taskSupport` is `optional` unless the server said otherwise ([`tools_for_legacy`]): the server may run any call as a task |
//! | … `tools/call` with `params.task` | `tools/call` | `{task}` ([`legacy_task`]) when the server made a task; when it answered at once, a task of the bridge's, already `completed` (`failed` for `isError`), whose `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/list` the bridge answers itself ([`crate::task_started`]) |
//! | … `tools/call` without it | `tools/call` | a task the server made anyway is waited for: the host gets the tool's result |
//! | … `tasks/get` | `tasks/get` | the task, less its outcome |
//! | … `tasks/result` | `tasks/get`, polled at `pollIntervalMs` (the core's [`crate::task_wait`]) | the result ([`with_related_task`]), or the task's error ([`ended_error`]) |
//! | … `tasks/cancel` | `tasks/cancel`, then `tasks/get` | the task as it is after |
//! | … `tasks/list` | `tasks/get` of each task the host started through the bridge ([`crate::task_started::Started`]; a gateway's replicas with a store: through any of them, the shell's) | those the server still knows, as one page (2026-07-28 lists no tasks) |
//! | 2026-07-28 with the extension | 2025-11-25 with `tasks.requests.tools.call` | declares the extension |
//! | … `tools/call` | `tools/call` with `params.task` when the tool allows it ([`crate::task_call::asks_for_task`]) | `resultType: "task"` ([`modern_task`]), or the plain result |
//! | 2026-07-28 without the extension: `tools/call` of a tool whose `taskSupport` is `required` | `tools/call` with `params.task`, then `tasks/get` at `pollInterval` and `tasks/result` ([`crate::task_wait`]), within the request's time | the tool's result; the host cancelling its call cancels the task (`tasks/cancel`, when declared) |
//! | … `tasks/get` | `tasks/get`; at the end, `tasks/result` | the task with its `result` or `error` inline; while it needs input, its questions ([`crate::task_questions`]) |
//! | … `tasks/cancel` | `tasks/cancel` (only with `tasks.cancel`) | `{}` |
//! | … `tasks/update` | — (the answers go to the questions the server asked on the bridge's `tasks/result`) | `{}`, answered by the bridge ([`crate::task_questions`]) |
//!
//! `notifications/tasks/status` exists in 2025-11-25 only: a legacy server's goes to no
//! 2026-07-28 host (the engine's table); a 2026-07-28 server has none to send, so a
//! 2025-11-25 host hears of each change the bridge sees while its `tasks/result` waits.
//!
//! A task that needs input: a 2026-07-28 task's `inputRequests` reach a 2025-11-25
//! host while its `tasks/result` waits, each naming the task in
//! `_meta[RELATED_TASK]` ([`with_related_task`]; the bridge answers them with the
//! host's answers through `tasks/update`, as [`crate::task_wait`] decides); a 2025-11-25
//! task asks through `tasks/result`, which a 2026-07-28 host never calls: the bridge
//! calls it, and the questions that come on it are the task's `inputRequests` in the
//! host's `tasks/get`, answered by its `tasks/update` ([`crate::task_questions`]).
//!
//! Where both sides speak the same era, tasks pass as they are ([`TaskBridge::Direct`]).

use serde_json::{json, Map, Value};

use crate::capabilities::ServerCapabilities;
use crate::extensions::Extension;
use crate::jsonrpc::{codes, RpcError};
use crate::method::{Method, TaskRole};
use crate::model::{Task, TaskStatus};
use crate::version::{Era, ProtocolVersion};

/// The `_meta` member that ties a message to its task (2025-11-25).
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// How a bridge carries tasks between one host and the server behind it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskBridge {
    /// Both sides speak the same era, or one of them has no tasks: tasks pass as they
    /// are (or not at all, by the gating table).
    Direct,
    /// A 2025-11-25 host in front of a 2026-07-28 server that declares the tasks
    /// extension.
    LegacyHost,
    /// A 2026-07-28 host in front of a 2025-11-25 server that runs tool calls as tasks.
    ModernHost {
        /// The server declares `tasks.cancel`.
        cancel: bool,
    },
}

/// What the bridge does with one host request.
#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    /// Passes it on as it is.
    Pass,
    /// Carries it out across the eras (see the module documentation).
    Carry(Carry),
    /// Refuses it with this error: nothing was sent.
    Refuse(RpcError),
}

/// A host request the bridge carries out across the eras.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carry {
    /// A legacy host's `tools/list`: [`tools_for_legacy`].
    ListToolsForLegacy,
    /// A legacy host's `tools/call`, which asked for a task (`params.task`, taken
    /// out) or not.
    CallForLegacy {
        /// The host asked for a task.
        asked: bool,
    },
    /// A legacy host's `tasks/get`.
    GetForLegacy,
    /// A legacy host's `tasks/result`: polled to the end.
    ResultForLegacy,
    /// A legacy host's `tasks/cancel`.
    CancelForLegacy,
    /// A legacy host's `tasks/list`: the tasks it started
    /// ([`crate::task_started::Started`]).
    ListForLegacy,
    /// A 2026-07-28 host's `tools/call`: a task asked for when the tool allows it and
    /// the host `declared` the tasks extension, or when the tool requires one — then,
    /// for a host that did not declare it, waited for: the host gets the tool's result.
    CallForModern {
        /// The host declared the tasks extension on the call.
        declared: bool,
    },
    /// A 2026-07-28 host's `tasks/get`.
    GetForModern,
    /// A 2026-07-28 host's `tasks/cancel`.
    CancelForModern,
    /// A 2026-07-28 host's `tasks/update`: its answers go to the questions the server
    /// asked (the bridge answers it, `task_questions`).
    UpdateForModern,
}

impl TaskBridge {
    /// The bridge for a host of version `host` in front of a server of `server`'s
    /// version that declared `caps`.
    pub fn new(host: ProtocolVersion, server: ProtocolVersion, caps: &ServerCapabilities) -> Self {
        match (host.era(), server.era()) {
            (Era::Legacy, Era::Modern)
                if host.has_core_tasks() && caps.has_extension(Extension::Tasks) =>
            {
                TaskBridge::LegacyHost
            }
            (Era::Modern, Era::Legacy) if server.has_core_tasks() => {
                let tasks = caps.legacy_tasks();
                match tasks.tool_calls {
                    true => TaskBridge::ModernHost {
                        cancel: tasks.cancel,
                    },
                    false => TaskBridge::Direct,
                }
            }
            _ => TaskBridge::Direct,
        }
    }

    /// Whether the bridge declares the tasks extension to a 2026-07-28 server for a
    /// host of version `host`: a 2025-11-25 host has tasks (it asks per call), and the
    /// bridge carries them out with the extension. The declaration goes on modern
    /// requests only (see [`crate::capabilities::ClientCapabilities`]).
    pub fn declares_upstream(host: ProtocolVersion) -> bool {
        host.has_core_tasks()
    }

    /// What the host is told the server can do: `server`'s declaration, with the
    /// tasks the bridge carries out in the host's era's terms. Nothing more: a legacy
    /// host's `tasks.list` lists the tasks it started through the bridge (2026-07-28
    /// has no way to list tasks, so the bridge keeps them,
    /// [`crate::task_started::Started`]); a 2026-07-28
    /// host gets the extension only for a server that runs tool calls as tasks.
    pub fn declaration(self, server: &ServerCapabilities) -> ServerCapabilities {
        let mut raw = server.raw().clone();
        match self {
            TaskBridge::Direct => return server.clone(),
            TaskBridge::LegacyHost => {
                raw.insert(
                    "tasks".into(),
                    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
                );
            }
            TaskBridge::ModernHost { .. } => {
                let extensions = raw.entry("extensions").or_insert_with(|| json!({}));
                if let Some(extensions) = extensions.as_object_mut() {
                    extensions.insert(Extension::Tasks.id().into(), json!({}));
                }
            }
        }
        ServerCapabilities::from_map(raw)
    }

    /// What the bridge does with the host's request for `method`, by what `method` is
    /// to tasks (its [`TaskRole`] in the method table). `mentions_task`
    /// says whether its params mention `task` (a 2025-11-25 call asking for one: read
    /// before any decoding); `host_declared` whether a 2026-07-28 host declared the
    /// tasks extension on it (without it, the host gets no task: one a tool requires is
    /// waited for). Each is asked only where it matters: most requests cost one
    /// comparison.
    pub fn route(
        self,
        method: Method,
        mentions_task: impl FnOnce() -> bool,
        host_declared: impl FnOnce() -> bool,
    ) -> Route {
        use Carry::*;
        match (self, method.props().task_role()) {
            (TaskBridge::Direct, _) | (_, None) => Route::Pass,
            (TaskBridge::LegacyHost, Some(role)) => Route::Carry(match role {
                TaskRole::ToolList => ListToolsForLegacy,
                TaskRole::Call => CallForLegacy {
                    asked: mentions_task(),
                },
                TaskRole::Status => GetForLegacy,
                TaskRole::Outcome => ResultForLegacy,
                TaskRole::Cancel => CancelForLegacy,
                TaskRole::List => ListForLegacy,
                // Not in a legacy host's era: the gating table refuses it.
                TaskRole::Answers => return Route::Pass,
            }),
            (TaskBridge::ModernHost { cancel }, Some(role)) => Route::Carry(match role {
                TaskRole::Call => CallForModern {
                    declared: host_declared(),
                },
                TaskRole::Status => GetForModern,
                TaskRole::Cancel if cancel => CancelForModern,
                TaskRole::Cancel => {
                    return Route::Refuse(not_mapped(
                        "tasks/cancel: the 2025-11-25 server behind the bridge does not \
                         declare tasks.cancel",
                    ))
                }
                TaskRole::Answers => UpdateForModern,
                // A 2026-07-28 host's tools/list passes as it is; tasks/result and
                // tasks/list are not in its era.
                TaskRole::ToolList | TaskRole::Outcome | TaskRole::List => return Route::Pass,
            }),
        }
    }
}

/// The refusal of what does not map: `-32601`, with why.
fn not_mapped(why: &str) -> RpcError {
    RpcError {
        code: codes::METHOD_NOT_FOUND,
        message: format!("Method not found: {why}"),
        data: Some(json!({"reason": "not-mapped-across-eras"})),
    }
}

/// The fields both eras' tasks share, under the names of the era given by `legacy`.
fn task_fields(task: &Task, legacy: bool) -> Map<String, Value> {
    let mut t = Map::new();
    t.insert("taskId".into(), json!(task.task_id));
    t.insert("status".into(), json!(task.status.as_str()));
    if let Some(message) = &task.status_message {
        t.insert("statusMessage".into(), json!(message));
    }
    for (name, value) in [
        ("createdAt", &task.created_at),
        ("lastUpdatedAt", &task.last_updated_at),
    ] {
        if let Some(value) = value {
            t.insert(name.into(), json!(value));
        }
    }
    let (ttl, interval) = match legacy {
        true => ("ttl", "pollInterval"),
        false => ("ttlMs", "pollIntervalMs"),
    };
    // Both eras require the retention: `null` (unlimited) when the server gave none.
    t.insert(ttl.into(), task.ttl_ms.clone().unwrap_or(Value::Null));
    if let Some(ms) = task.poll_interval_ms {
        t.insert(interval.into(), json!(ms));
    }
    t
}

/// A 2026-07-28 task as a 2025-11-25 host gets it (`tasks/get`, `tasks/cancel`, and
/// under `task` in a `CreateTaskResult`): its outcome left out (the host fetches it
/// with `tasks/result`), `ttlMs`/`pollIntervalMs` named `ttl`/`pollInterval`. A task
/// waiting for answers stays `input_required`: its `tasks/result` answers them.
pub fn legacy_task(task: &Task) -> Value {
    Value::Object(task_fields(task, true))
}

/// A 2025-11-25 task as a 2026-07-28 host gets it: `resultType` (`"task"` for the
/// call that made it, `"complete"` for `tasks/get`), the 2026 names, and its outcome
/// inline once it is over (`result`, or `error`). A 2025-11-25 task waiting for
/// input stays `input_required`, without its questions: they come on `tasks/result`,
/// and [`crate::task_questions::TaskQuestions::present`] completes the task before
/// the host sees it.
pub fn modern_task(
    task: &Task,
    result_type: &str,
    outcome: Option<Result<Value, RpcError>>,
) -> Value {
    let mut t = task_fields(task, false);
    t.insert("resultType".into(), json!(result_type));
    match outcome {
        Some(Ok(result)) => {
            t.insert("result".into(), result);
        }
        Some(Err(error)) => {
            t.insert("status".into(), json!("failed"));
            t.insert("error".into(), json!(error));
        }
        None => {}
    }
    Value::Object(t)
}

/// Whether a 2026-07-28 host's `tasks/get` needs the outcome of a 2025-11-25 task
/// (`tasks/result`): it is over, and not cancelled.
pub fn needs_outcome(task: &Task) -> bool {
    matches!(task.status, TaskStatus::Completed | TaskStatus::Failed)
}

/// A legacy host's `tools/list` from a 2026-07-28 server with the tasks extension:
/// every tool that says nothing of tasks is `execution.taskSupport: "optional"` (the
/// server may run any call as a task; the host may ask for one, and gets the plain
/// result when the server made none).
pub fn tools_for_legacy(list: &mut Value) {
    let Some(tools) = list.get_mut("tools").and_then(Value::as_array_mut) else {
        return;
    };
    for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
        let execution = tool.entry("execution").or_insert_with(|| json!({}));
        if let Some(execution) = execution.as_object_mut() {
            execution
                .entry("taskSupport")
                .or_insert_with(|| json!("optional"));
        }
    }
}

/// A task's result as a legacy host's `tasks/result` returns it: what the call would
/// have, with `_meta[RELATED_TASK]` naming the task. The same for the params of a
/// question the task asks the host while its `tasks/result` waits.
pub fn with_related_task(mut result: Value, task_id: &str) -> Value {
    if let Some(result) = result.as_object_mut() {
        let meta = result.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(RELATED_TASK.into(), json!({"taskId": task_id}));
        }
    }
    result
}

/// The error a legacy host's `tasks/result` gets for a task that did not complete:
/// the server's own error when it gave one, else one that says how it ended.
pub fn ended_error(task_id: &str, error: Option<&Value>, how: &str) -> RpcError {
    if let Some(error) = error.and_then(|e| serde_json::from_value::<RpcError>(e.clone()).ok()) {
        return error;
    }
    RpcError {
        code: codes::INTERNAL_ERROR,
        message: format!("task {task_id} {how}"),
        data: Some(json!({"taskId": task_id})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: ProtocolVersion = ProtocolVersion::V2025_11_25;
    const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;

    fn caps(v: Value) -> ServerCapabilities {
        ServerCapabilities::from_value(v)
    }

    fn task(v: Value) -> Task {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_host_is_told_only_the_tasks_the_bridge_carries_out() {
        let modern =
            caps(json!({"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}));
        let bridge = TaskBridge::new(V, MODERN, &modern);
        assert_eq!(bridge, TaskBridge::LegacyHost);
        let declared = bridge.declaration(&modern);
        let tasks = declared.legacy_tasks();
        assert!(tasks.tool_calls && tasks.cancel && tasks.list);
        // An older legacy host has no tasks to be told of.
        let older = TaskBridge::new(ProtocolVersion::V2025_06_18, MODERN, &modern);
        assert_eq!(older, TaskBridge::Direct);
        assert_eq!(older.declaration(&modern), modern);
        // A server without the extension: nothing to carry.
        let plain = caps(json!({"tools": {}}));
        assert_eq!(TaskBridge::new(V, MODERN, &plain), TaskBridge::Direct);

        let legacy = caps(json!({"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}));
        let bridge = TaskBridge::new(MODERN, V, &legacy);
        assert_eq!(bridge, TaskBridge::ModernHost { cancel: false });
        assert!(bridge.declaration(&legacy).has_extension(Extension::Tasks));
        // Tasks that no tool call makes are nothing a 2026-07-28 host could use.
        let listing = caps(json!({"tools": {}, "tasks": {"list": {}}}));
        assert_eq!(TaskBridge::new(MODERN, V, &listing), TaskBridge::Direct);
        // Same era: as declared.
        assert_eq!(TaskBridge::new(V, V, &legacy), TaskBridge::Direct);
        assert!(TaskBridge::declares_upstream(V));
        assert!(!TaskBridge::declares_upstream(ProtocolVersion::V2025_06_18));
    }

    #[test]
    fn each_method_is_carried_or_refused_with_why() {
        let legacy_host = TaskBridge::LegacyHost;
        assert_eq!(
            legacy_host.route(Method::CallTool, || true, || false),
            Route::Carry(Carry::CallForLegacy { asked: true })
        );
        assert_eq!(
            legacy_host.route(Method::TaskResult, || false, || false),
            Route::Carry(Carry::ResultForLegacy)
        );
        assert_eq!(
            legacy_host.route(Method::ListTasks, || false, || false),
            Route::Carry(Carry::ListForLegacy)
        );
        // A 2026-07-28 method has no 2025-11-25 host to come from: it passes to the
        // gate, which refuses it there.
        assert_eq!(
            legacy_host.route(Method::UpdateTask, || false, || false),
            Route::Pass
        );
        assert_eq!(
            legacy_host.route(Method::ReadResource, || false, || false),
            Route::Pass
        );

        let modern_host = TaskBridge::ModernHost { cancel: false };
        assert_eq!(
            modern_host.route(Method::CallTool, || false, || true),
            Route::Carry(Carry::CallForModern { declared: true })
        );
        // A host that did not declare the extension gets no task: one the tool
        // requires is waited for.
        assert_eq!(
            modern_host.route(Method::CallTool, || false, || false),
            Route::Carry(Carry::CallForModern { declared: false })
        );
        let Route::Refuse(e) = modern_host.route(Method::CancelTask, || false, || true) else {
            panic!("tasks/cancel without tasks.cancel is refused");
        };
        assert!(e.message.contains("tasks/cancel"), "{}", e.message);
        // A task's questions came on the bridge's tasks/result: the bridge takes the
        // answers.
        assert_eq!(
            modern_host.route(Method::UpdateTask, || false, || true),
            Route::Carry(Carry::UpdateForModern)
        );
        let cancels = TaskBridge::ModernHost { cancel: true };
        assert_eq!(
            cancels.route(Method::CancelTask, || false, || true),
            Route::Carry(Carry::CancelForModern)
        );
        assert_eq!(
            TaskBridge::Direct.route(Method::UpdateTask, || true, || true),
            Route::Pass
        );
    }

    #[test]
    fn a_task_crosses_in_the_other_eras_names() {
        let modern = task(json!({"taskId": "t", "status": "completed", "ttlMs": 60000,
            "pollIntervalMs": 100, "createdAt": "a", "lastUpdatedAt": "b",
            "result": {"content": []}, "resultType": "complete"}));
        assert_eq!(
            legacy_task(&modern),
            json!({"taskId": "t", "status": "completed", "ttl": 60000, "pollInterval": 100.0,
                "createdAt": "a", "lastUpdatedAt": "b"})
        );
        let legacy = task(json!({"taskId": "l", "status": "working", "ttl": null,
            "pollInterval": 200, "createdAt": "a", "lastUpdatedAt": "b"}));
        assert_eq!(
            modern_task(&legacy, "task", None),
            json!({"resultType": "task", "taskId": "l", "status": "working", "ttlMs": null,
                "pollIntervalMs": 200.0, "createdAt": "a", "lastUpdatedAt": "b"})
        );
        let done = task(json!({"taskId": "l", "status": "completed", "ttl": null}));
        let result = json!({"content": [{"type": "text", "text": "ok"}]});
        let got = modern_task(&done, "complete", Some(Ok(result.clone())));
        assert_eq!(got["result"], result);
        let error = RpcError {
            code: -32603,
            message: "broke".into(),
            data: None,
        };
        let failed = modern_task(&done, "complete", Some(Err(error)));
        assert_eq!(
            (failed["status"].as_str(), failed["error"]["code"].as_i64()),
            (Some("failed"), Some(-32603))
        );
        let asking = task(json!({"taskId": "l", "status": "input_required", "ttl": null}));
        assert_eq!(
            modern_task(&asking, "complete", None)["status"],
            "input_required"
        );
        assert!(needs_outcome(&done) && !needs_outcome(&legacy));
    }

    #[test]
    fn tools_may_run_as_tasks_unless_they_say_otherwise_and_results_name_their_task() {
        let mut list = json!({"tools": [{"name": "a"}, {"name": "b", "execution": {"taskSupport": "forbidden"}}]});
        tools_for_legacy(&mut list);
        assert_eq!(list["tools"][0]["execution"]["taskSupport"], "optional");
        assert_eq!(list["tools"][1]["execution"]["taskSupport"], "forbidden");
        let result = with_related_task(json!({"content": []}), "t");
        assert_eq!(result["_meta"][RELATED_TASK]["taskId"], "t");
        let own = json!({"code": -32000, "message": "disk full"});
        assert_eq!(ended_error("t", Some(&own), "failed").message, "disk full");
        let none = ended_error("t", None, "was cancelled");
        assert_eq!(none.message, "task t was cancelled");
    }
}
