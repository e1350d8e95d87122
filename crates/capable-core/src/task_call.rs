//! Whether a `tools/call` runs as a task: whether tasks may be used in a session,
//! whether a 2025-11-25 call asks for one, and whether an answer started one.
//!
//! | era | who decides | the session may use tasks when |
//! |---|---|---|
//! | 2026-07-28 (extension `io.modelcontextprotocol/tasks`) | the server, per call | both sides declared the extension |
//! | 2025-11-25 (core tasks) | the client asks with `params.task` ([`asks_for_task`]) | the server declared `tasks.requests.tools.call` |
//!
//! Waiting for a task that started is [`crate::task_wait`].

use serde::Deserialize;
use serde_json::Value;

use crate::capabilities::ClientCapabilities;
use crate::extensions::Extension;
use crate::gating;
use crate::jsonrpc::Payload;
use crate::model::{CreateTaskResult, Task, TaskSupport};
use crate::negotiation::Negotiated;
use crate::version::Era;

/// Whether this session may use tasks at all: modern, when the server declared the
/// tasks extension and the client did too; 2025-11-25, when the server declared
/// `tasks.requests.tools.call`.
pub fn supports_tasks(negotiated: &Negotiated, client: &ClientCapabilities) -> bool {
    let caps = &negotiated.capabilities;
    match negotiated.era() {
        Era::Modern => {
            caps.has_extension(Extension::Tasks) && client.has_extension(Extension::Tasks)
        }
        Era::Legacy => gating::check_task_call(negotiated.version, caps).is_ok(),
    }
}

/// Whether a 2025-11-25 call of a tool with `support` (its `execution.taskSupport`, as
/// listed; `None` when unknown) asks to run as a task: the tool requires it, or allows
/// it and the caller `ask`s — and the server declared task calls. A modern call never
/// asks (the server decides).
pub fn asks_for_task(support: Option<TaskSupport>, ask: bool, negotiated: &Negotiated) -> bool {
    // The tool's own support first: most tools run no task, and their calls skip the
    // gate check of task calls.
    wants_task(support, ask) && takes_task_calls(negotiated)
}

/// Whether a call of a tool with `support` wants a task, whatever the server takes:
/// the tool requires one, or allows one and the caller `ask`s.
pub fn wants_task(support: Option<TaskSupport>, ask: bool) -> bool {
    match support {
        Some(TaskSupport::Required) => true,
        Some(TaskSupport::Optional) => ask,
        Some(TaskSupport::Forbidden) | None => false,
    }
}

/// Whether the server of `negotiated` takes task calls: a 2025-11-25 one that declared
/// them (a modern server decides itself).
pub fn takes_task_calls(negotiated: &Negotiated) -> bool {
    negotiated.era() == Era::Legacy
        && gating::check_task_call(negotiated.version, &negotiated.capabilities).is_ok()
}

/// The task a `tools/call` answer started (modern: `resultType: "task"`, its fields
/// inline; 2025-11-25: a `task` member), or `None` for a plain result. `Err` says what
/// is malformed about an answer that claims to be a task.
pub fn started_task(payload: &Payload) -> Result<Option<Task>, String> {
    // Most answers are plain results: a look for the names, before any decoding.
    let maybe = payload.mentions("\"task")
        && (payload.mentions("\"resultType\"") || payload.mentions("\"task\""));
    if !maybe {
        return Ok(None);
    }
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default, rename = "resultType")]
        result_type: Option<String>,
        #[serde(default)]
        task: Option<Value>,
    }
    let probe: Probe = payload.decode().map_err(|e| e.to_string())?;
    if probe.result_type.as_deref() != Some("task") && probe.task.is_none() {
        return Ok(None);
    }
    let created: CreateTaskResult = payload.decode().map_err(|e| e.to_string())?;
    match created.task() {
        Some(task) => Ok(Some(task)),
        None => Err("a task result without a task".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::ServerCapabilities;
    use crate::model::{Implementation, TaskStatus};
    use crate::version::ProtocolVersion;
    use serde_json::json;

    fn negotiated(version: ProtocolVersion, caps: Value) -> Negotiated {
        Negotiated {
            version,
            server_info: Implementation::new("tasks", "1.0"),
            capabilities: ServerCapabilities::from_value(caps),
            instructions: None,
            server_versions: Vec::new(),
        }
    }

    fn client(tasks: bool) -> ClientCapabilities {
        let mut c = ClientCapabilities::default();
        if tasks {
            c.extensions
                .insert(Extension::Tasks.id().to_owned(), json!({}));
        }
        c
    }

    const LEGACY_TASKS: &str = r#"{"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}"#;

    fn legacy_tasks() -> Negotiated {
        negotiated(
            ProtocolVersion::V2025_11_25,
            serde_json::from_str(LEGACY_TASKS).unwrap(),
        )
    }

    #[test]
    fn tasks_need_both_sides_in_the_modern_era_and_the_server_in_2025_11_25() {
        let modern = negotiated(
            ProtocolVersion::V2026_07_28,
            json!({"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}),
        );
        assert!(supports_tasks(&modern, &client(true)));
        assert!(!supports_tasks(&modern, &client(false)));
        let undeclared = negotiated(ProtocolVersion::V2026_07_28, json!({"tools": {}}));
        assert!(!supports_tasks(&undeclared, &client(true)));
        assert!(supports_tasks(&legacy_tasks(), &client(false)));
        let older = negotiated(ProtocolVersion::V2025_06_18, json!({"tools": {}}));
        assert!(!supports_tasks(&older, &client(true)));
    }

    #[test]
    fn a_2025_11_25_call_asks_for_a_task_as_the_tool_allows() {
        let n = legacy_tasks();
        assert!(asks_for_task(Some(TaskSupport::Required), false, &n));
        assert!(asks_for_task(Some(TaskSupport::Optional), true, &n));
        assert!(!asks_for_task(Some(TaskSupport::Optional), false, &n));
        assert!(!asks_for_task(Some(TaskSupport::Forbidden), true, &n));
        assert!(
            !asks_for_task(None, true, &n),
            "an unknown tool is called plainly"
        );
        // A server that declared no task calls is never asked, whatever the tool says.
        let plain = negotiated(ProtocolVersion::V2025_11_25, json!({"tools": {}}));
        assert!(!asks_for_task(Some(TaskSupport::Required), true, &plain));
        // Modern servers decide by themselves.
        let modern = negotiated(
            ProtocolVersion::V2026_07_28,
            json!({"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}),
        );
        assert!(!asks_for_task(Some(TaskSupport::Required), true, &modern));
    }

    #[test]
    fn an_answer_started_a_task_in_either_eras_shape_or_none() {
        let read = |v: Value| started_task(&Payload::from_json(v.to_string()));
        let modern = read(json!({"resultType": "task", "taskId": "t", "status": "working"}));
        let task = modern.unwrap().expect("a task");
        assert_eq!(
            (task.task_id.as_str(), &task.status),
            ("t", &TaskStatus::Working)
        );
        let legacy =
            read(json!({"task": {"taskId": "l", "status": "working", "pollInterval": 200}}));
        assert_eq!(legacy.unwrap().expect("a task").task_id, "l");
        // Plain results, including ones that only mention the word.
        assert_eq!(
            read(json!({"content": [{"type": "text", "text": "a \"task\""}]})),
            Ok(None)
        );
        assert_eq!(
            read(json!({"resultType": "complete", "content": [], "taskHint": 1})),
            Ok(None)
        );
        assert!(
            read(json!({"resultType": "task"})).is_err(),
            "a task without its fields"
        );
    }
}
