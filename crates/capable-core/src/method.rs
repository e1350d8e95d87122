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

impl Method {
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

    /// The method name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Initialize => "initialize",
            Method::Discover => "server/discover",
            Method::Ping => "ping",
            Method::ListResources => "resources/list",
            Method::ListResourceTemplates => "resources/templates/list",
            Method::ReadResource => "resources/read",
            Method::Subscribe => "resources/subscribe",
            Method::Unsubscribe => "resources/unsubscribe",
            Method::Listen => "subscriptions/listen",
            Method::ListTools => "tools/list",
            Method::CallTool => "tools/call",
            Method::ListPrompts => "prompts/list",
            Method::GetPrompt => "prompts/get",
            Method::Complete => "completion/complete",
            Method::SetLoggingLevel => "logging/setLevel",
            Method::GetTask => "tasks/get",
            Method::TaskResult => "tasks/result",
            Method::ListTasks => "tasks/list",
            Method::CancelTask => "tasks/cancel",
            Method::UpdateTask => "tasks/update",
            Method::ListSkills => "skills/list",
            Method::GetSkill => "skills/get",
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
