//! Extensions, and the legacy `tasks` capability they grew out of.
//!
//! 2026-07-28 negotiates optional features as *extensions*: the server lists the ones
//! it speaks under `capabilities.extensions` (in `server/discover`, or in `initialize`
//! for servers that declare them on a legacy handshake), the client lists the ones it
//! handles under `_meta["io.modelcontextprotocol/clientCapabilities"].extensions` on
//! every request. Presence is by key, like every capability: `{}` declares the
//! extension with no optional settings.
//!
//! | extension | what it adds | who must declare it |
//! |---|---|---|
//! | [`Extension::Tasks`] `io.modelcontextprotocol/tasks` | `tools/call` may answer with a task; `tasks/get`, `tasks/update`, `tasks/cancel` | both: the server may return a task only to a client that declared it on that request |
//! | [`Extension::Skills`] `io.modelcontextprotocol/skills` (SEP-2640) | `skills/list`, `skills/get`; skill files are resources | the server |
//! | [`Extension::Ui`] `io.modelcontextprotocol/ui` (MCP Apps) | tools that come with a `ui://` resource a host renders | the server; the client only if it can render |
//!
//! 2025-11-25 has tasks in the core instead: a `tasks` capability whose members
//! (`list`, `cancel`, `requests.tools.call`) are read by key ([`LegacyTasks`]).

use serde_json::Value;

/// An extension capable knows by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Extension {
    /// `io.modelcontextprotocol/tasks`.
    Tasks,
    /// `io.modelcontextprotocol/skills`.
    Skills,
    /// `io.modelcontextprotocol/ui` (MCP Apps).
    Ui,
}

impl Extension {
    /// Every extension capable knows.
    pub const ALL: [Extension; 3] = [Extension::Tasks, Extension::Skills, Extension::Ui];

    /// The extension's identifier, its key under `extensions`.
    pub fn id(self) -> &'static str {
        match self {
            Extension::Tasks => "io.modelcontextprotocol/tasks",
            Extension::Skills => "io.modelcontextprotocol/skills",
            Extension::Ui => "io.modelcontextprotocol/ui",
        }
    }

    /// Looks an extension up by its identifier.
    pub fn from_id(id: &str) -> Option<Extension> {
        Self::ALL.into_iter().find(|e| e.id() == id)
    }
}

impl std::fmt::Display for Extension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// The 2025-11-25 `tasks` server capability, read by key: `{"list": {}, "cancel": {},
/// "requests": {"tools": {"call": {}}}}` declares all of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LegacyTasks {
    /// `tasks` is present: `tasks/get` and `tasks/result` work for tasks it made.
    pub present: bool,
    /// `tasks.list`: `tasks/list`.
    pub list: bool,
    /// `tasks.cancel`: `tasks/cancel`.
    pub cancel: bool,
    /// `tasks.requests.tools.call`: a `tools/call` may ask to run as a task.
    pub tool_calls: bool,
}

impl LegacyTasks {
    /// Reads the `tasks` capability (`None`: not declared).
    pub fn read(tasks: Option<&Value>) -> LegacyTasks {
        let Some(tasks) = tasks else {
            return LegacyTasks::default();
        };
        LegacyTasks {
            present: true,
            list: tasks.get("list").is_some(),
            cancel: tasks.get("cancel").is_some(),
            tool_calls: tasks.pointer("/requests/tools/call").is_some(),
        }
    }
}

/// What a legacy tasks method needs of the `tasks` capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskFeature {
    /// `tasks` itself (`tasks/get`, `tasks/result`).
    Any,
    /// `tasks.list` (`tasks/list`).
    List,
    /// `tasks.cancel` (`tasks/cancel`).
    Cancel,
    /// `tasks.requests.tools.call` (a `tools/call` run as a task).
    ToolCalls,
}

impl TaskFeature {
    /// The capability path, as a person reads it.
    pub fn key(self) -> &'static str {
        match self {
            TaskFeature::Any => "tasks",
            TaskFeature::List => "tasks.list",
            TaskFeature::Cancel => "tasks.cancel",
            TaskFeature::ToolCalls => "tasks.requests.tools.call",
        }
    }

    /// Whether `tasks` declares this feature.
    pub fn declared_in(self, tasks: &LegacyTasks) -> bool {
        match self {
            TaskFeature::Any => tasks.present,
            TaskFeature::List => tasks.list,
            TaskFeature::Cancel => tasks.cancel,
            TaskFeature::ToolCalls => tasks.tool_calls,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn legacy_tasks_are_read_by_key() {
        let all = json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
        assert_eq!(
            LegacyTasks::read(Some(&all)),
            LegacyTasks {
                present: true,
                list: true,
                cancel: true,
                tool_calls: true
            }
        );
        let bare = LegacyTasks::read(Some(&json!({})));
        assert!(bare.present && !bare.list && !bare.cancel && !bare.tool_calls);
        assert_eq!(LegacyTasks::read(None), LegacyTasks::default());
    }

    #[test]
    fn extensions_are_known_by_id() {
        for e in Extension::ALL {
            assert_eq!(Extension::from_id(e.id()), Some(e));
        }
        assert_eq!(Extension::from_id("com.example/other"), None);
    }
}
