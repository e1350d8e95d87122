//! The methods a client sends to a server.

use std::fmt;

/// A client→server request method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    /// `initialize` (legacy handshake).
    Initialize,
    /// `server/discover` (modern).
    Discover,
    /// `ping` (legacy).
    Ping,
    /// `resources/list`.
    ListResources,
    /// `resources/templates/list`.
    ListResourceTemplates,
    /// `resources/read`.
    ReadResource,
    /// `resources/subscribe` (legacy).
    Subscribe,
    /// `resources/unsubscribe` (legacy).
    Unsubscribe,
    /// `subscriptions/listen` (modern).
    Listen,
    /// `tools/list`.
    ListTools,
    /// `tools/call`.
    CallTool,
    /// `prompts/list`.
    ListPrompts,
    /// `prompts/get`.
    GetPrompt,
    /// `completion/complete`.
    Complete,
    /// `logging/setLevel` (legacy).
    SetLoggingLevel,
    /// `tasks/get`: a task's status (2025-11-25, and the modern tasks extension).
    GetTask,
    /// `tasks/result`: a finished task's result (2025-11-25 only).
    TaskResult,
    /// `tasks/list` (2025-11-25 only).
    ListTasks,
    /// `tasks/cancel` (2025-11-25, and the modern tasks extension).
    CancelTask,
    /// `tasks/update`: answers to a task's questions (modern tasks extension).
    UpdateTask,
    /// `skills/list` (skills extension).
    ListSkills,
    /// `skills/get` (skills extension).
    GetSkill,
}

/// Writes [`Method::as_str`] and [`Method::between_id_and_params`] from one list of
/// names, so that the two never disagree.
macro_rules! names {
    ($($method:ident => $name:literal,)*) => {
        /// The method name on the wire.
        pub fn as_str(self) -> &'static str {
            match self {
                $(Method::$method => $name,)*
            }
        }

        /// What a request line holds between its id and its params,
        /// `,"method":"<name>","params":`, as one piece: no method name needs
        /// escaping, so none is checked or quoted as it is written.
        pub(crate) fn between_id_and_params(self) -> &'static str {
            match self {
                $(Method::$method => concat!(",\"method\":\"", $name, "\",\"params\":"),)*
            }
        }
    };
}

impl Method {
    names! {
        Initialize => "initialize",
        Discover => "server/discover",
        Ping => "ping",
        ListResources => "resources/list",
        ListResourceTemplates => "resources/templates/list",
        ReadResource => "resources/read",
        Subscribe => "resources/subscribe",
        Unsubscribe => "resources/unsubscribe",
        Listen => "subscriptions/listen",
        ListTools => "tools/list",
        CallTool => "tools/call",
        ListPrompts => "prompts/list",
        GetPrompt => "prompts/get",
        Complete => "completion/complete",
        SetLoggingLevel => "logging/setLevel",
        GetTask => "tasks/get",
        TaskResult => "tasks/result",
        ListTasks => "tasks/list",
        CancelTask => "tasks/cancel",
        UpdateTask => "tasks/update",
        ListSkills => "skills/list",
        GetSkill => "skills/get",
    }

    /// Every client→server method.
    pub const ALL: [Method; 22] = [
        Method::Initialize,
        Method::Discover,
        Method::Ping,
        Method::ListResources,
        Method::ListResourceTemplates,
        Method::ReadResource,
        Method::Subscribe,
        Method::Unsubscribe,
        Method::Listen,
        Method::ListTools,
        Method::CallTool,
        Method::ListPrompts,
        Method::GetPrompt,
        Method::Complete,
        Method::SetLoggingLevel,
        Method::GetTask,
        Method::TaskResult,
        Method::ListTasks,
        Method::CancelTask,
        Method::UpdateTask,
        Method::ListSkills,
        Method::GetSkill,
    ];

    /// The member of its params that names what a request of this method targets:
    /// `name` for `tools/call` and `prompts/get`, `uri` for `resources/read`, `taskId`
    /// for `tasks/get`, `tasks/update` and `tasks/cancel` (what modern HTTP's
    /// `Mcp-Name` carries); `None` for the others.
    pub fn target_member(self) -> Option<&'static str> {
        match self {
            Method::CallTool | Method::GetPrompt => Some("name"),
            Method::ReadResource => Some("uri"),
            Method::GetTask | Method::UpdateTask | Method::CancelTask => Some("taskId"),
            _ => None,
        }
    }

    /// Looks a method up by its wire name.
    pub fn from_name(name: &str) -> Option<Method> {
        Self::ALL.into_iter().find(|m| m.as_str() == name)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Method {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}
