//! The methods a client sends to a server, and the table of what holds of each.
//!
//! Every fact about a client→server method that does not depend on the session is
//! written once, in one row of the table below: its wire name and its
//! [`MethodProps`] —
//!
//! | column | says | read by |
//! |---|---|---|
//! | era and requirement | in which eras it exists, and what the server must declare there | [`crate::gating::requirement`] (and so [`crate::gating::check`], [`crate::gating::actions`]) |
//! | cacheable | its 2026-07-28 results carry `ttlMs` and `cacheScope` | [`crate::cache::is_cacheable`], the hints a bridge adds to a legacy result ([`crate::server::modern_result`]) |
//! | may ask for input | it may be answered with `input_required` | [`crate::input_rounds::may_ask_for_input`] |
//! | target member | the member of its params that names its target (`Mcp-Name`) | [`Method::target_member`] |
//! | task role | what it is to tasks | [`crate::task_bridge::TaskBridge::route`] |
//!
//! The notification methods, each way, are named once in the same manner:
//! [`NotificationMethod`] (the server's) and [`ClientNotificationMethod`] (the
//! client's).
//!
//! The enum, [`Method::ALL`], the names both ways and the rows are all written by the
//! macro from the same list, so none can miss a method or disagree with another. The
//! rows are a `static` array indexed by the variant: reading one is a load, with no
//! hashing and no allocation.
//!
//! # How to add a method
//!
//! 1. A row in the table below: its variant (with a doc comment), its wire name, and
//!    its properties, built from the eras it exists in (`legacy`, `modern`, `both`,
//!    `eras`) and what else holds of it (`.cacheable()`, `.asks_for_input()`,
//!    `.target("…")`, `.task(…)`); see [`MethodProps`]. The gating table, the cache,
//!    the caching hints a bridge adds, the rounds, `Mcp-Name` and the bridge's tasks
//!    follow from it; the gating table's documentation ([`crate::gating`]) gets its
//!    line by hand.
//! 2. Its params and result, when they are new, under [`crate::model`].
//! 3. What a host calls: a method of the shell's `Session` (`session/methods.rs`),
//!    and the audit if the result has something to check.
//! 4. Where a person calls it: the CLI's flag and command file; the inspector's
//!    handler, route, history entry and page.
//! 5. The bridge, where it does more than pass the request on: with many servers,
//!    which server answers it (`bridge/many/`); for a method of one era only, what a
//!    host of the other era's request becomes (the relay's era matrix,
//!    `bridge/relay/era.rs`). And an answer in the fixture server, for the tests.
//!
//! Steps 2–5 are the method's own code: nothing in them repeats the row.

use std::fmt;

mod notifications;
mod props;

pub use notifications::{ClientNotificationMethod, NotificationMethod};
pub(crate) use props::Need;
use props::{both, eras, legacy, modern};
pub use props::{MethodProps, TaskRole};
use props::{COMPLETIONS, LISTEN_FILTER, LOGGING, NOTHING, PROMPTS, RESOURCES, SUBSCRIBE, TOOLS};
use props::{CORE_TASKS, CORE_TASKS_CANCEL, CORE_TASKS_LIST, SKILLS_EXTENSION, TASKS_EXTENSION};

/// Writes, from one list of rows, everything that is said once per method: the
/// [`Method`] enum, [`Method::ALL`], the wire names ([`Method::as_str`],
/// [`Method::from_name`], [`Method::between_id_and_params`]) and the property rows
/// ([`Method::props`]). Each row is `Variant = "wire/name": props;`, its doc comment
/// above it.
macro_rules! methods {
    ($($(#[doc = $doc:literal])* $method:ident = $name:literal: $props:expr;)*) => {
        /// A client→server request method: one row of the method table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Method {
            $($(#[doc = $doc])* $method,)*
        }

        /// How many methods the table has.
        const COUNT: usize = [$($name),*].len();

        /// The rows, in the enum's order: [`Method::props`] indexes them by variant.
        static PROPS: [MethodProps; COUNT] = [$($props),*];

        impl Method {
            /// Every client→server method, in the table's order.
            pub const ALL: [Method; COUNT] = [$(Method::$method),*];

            /// The method name on the wire.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Method::$method => $name,)*
                }
            }

            /// Looks a method up by its wire name.
            pub fn from_name(name: &str) -> Option<Method> {
                match name {
                    $($name => Some(Method::$method),)*
                    _ => None,
                }
            }

            /// What a request line holds between its id and its params,
            /// `,"method":"<name>","params":`, as one piece: no method name needs
            /// escaping, so none is checked or quoted as it is written.
            pub(crate) const fn between_id_and_params(self) -> &'static str {
                match self {
                    $(Method::$method => concat!(",\"method\":\"", $name, "\",\"params\":"),)*
                }
            }
        }
    };
}

methods! {
    /// `initialize` (legacy handshake).
    Initialize = "initialize": legacy(NOTHING);
    /// `server/discover` (modern).
    Discover = "server/discover": modern(NOTHING).cacheable();
    /// `ping` (legacy).
    Ping = "ping": legacy(NOTHING);
    /// `resources/list`.
    ListResources = "resources/list": both(RESOURCES).cacheable();
    /// `resources/templates/list`.
    ListResourceTemplates = "resources/templates/list": both(RESOURCES).cacheable();
    /// `resources/read`.
    ReadResource = "resources/read": both(RESOURCES).cacheable().asks_for_input().target("uri");
    /// `resources/subscribe` (legacy).
    Subscribe = "resources/subscribe": legacy(SUBSCRIBE);
    /// `resources/unsubscribe` (legacy).
    Unsubscribe = "resources/unsubscribe": legacy(SUBSCRIBE);
    /// `subscriptions/listen` (modern).
    Listen = "subscriptions/listen": modern(LISTEN_FILTER);
    /// `tools/list`.
    ListTools = "tools/list": both(TOOLS).cacheable().task(TaskRole::ToolList);
    /// `tools/call`.
    CallTool = "tools/call": both(TOOLS).asks_for_input().target("name").task(TaskRole::Call);
    /// `prompts/list`.
    ListPrompts = "prompts/list": both(PROMPTS).cacheable();
    /// `prompts/get`.
    GetPrompt = "prompts/get": both(PROMPTS).asks_for_input().target("name");
    /// `completion/complete`.
    Complete = "completion/complete": both(COMPLETIONS);
    /// `logging/setLevel` (legacy).
    SetLoggingLevel = "logging/setLevel": legacy(LOGGING);
    /// `tasks/get`: a task's status (2025-11-25, and the modern tasks extension).
    GetTask = "tasks/get": eras(CORE_TASKS, TASKS_EXTENSION)
        .target("taskId").task(TaskRole::Status);
    /// `tasks/result`: a finished task's result (2025-11-25 only).
    TaskResult = "tasks/result": legacy(CORE_TASKS).task(TaskRole::Outcome);
    /// `tasks/list` (2025-11-25 only).
    ListTasks = "tasks/list": legacy(CORE_TASKS_LIST).task(TaskRole::List);
    /// `tasks/cancel` (2025-11-25, and the modern tasks extension).
    CancelTask = "tasks/cancel": eras(CORE_TASKS_CANCEL, TASKS_EXTENSION)
        .target("taskId").task(TaskRole::Cancel);
    /// `tasks/update`: answers to a task's questions (modern tasks extension).
    UpdateTask = "tasks/update": modern(TASKS_EXTENSION).target("taskId").task(TaskRole::Answers);
    /// `skills/list` (skills extension).
    ListSkills = "skills/list": both(SKILLS_EXTENSION).cacheable();
    /// `skills/get` (skills extension).
    GetSkill = "skills/get": both(SKILLS_EXTENSION).cacheable();
}

impl Method {
    /// The method's row of the table: what holds of it whatever the session.
    pub const fn props(self) -> &'static MethodProps {
        &PROPS[self as usize]
    }

    /// The member of its params that names what a request of this method targets:
    /// `name` for `tools/call` and `prompts/get`, `uri` for `resources/read`, `taskId`
    /// for `tasks/get`, `tasks/update` and `tasks/cancel` (what modern HTTP's
    /// `Mcp-Name` carries); `None` for the others.
    pub const fn target_member(self) -> Option<&'static str> {
        self.props().target_member()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::Era;

    fn with(column: impl Fn(&MethodProps) -> bool) -> Vec<&'static str> {
        Method::ALL
            .into_iter()
            .filter(|m| column(m.props()))
            .map(Method::as_str)
            .collect()
    }

    #[test]
    fn every_method_has_its_own_row_and_name_both_ways() {
        for (i, method) in Method::ALL.into_iter().enumerate() {
            assert_eq!(method as usize, i, "ALL is in the enum's order");
            assert_eq!(Method::from_name(method.as_str()), Some(method));
            assert!(
                method.props().exists_in(Era::Legacy) || method.props().exists_in(Era::Modern),
                "{method} exists in some era"
            );
        }
        assert_eq!(Method::from_name("tools/lists"), None);
    }

    #[test]
    fn the_cacheable_column_is_the_spec_s_cacheable_results() {
        // 2026-07-28: the results that extend `CacheableResult`; the skills extension
        // (SEP-2640) makes `ListSkillsResult` and `GetSkillResult` extend it too.
        assert_eq!(
            with(MethodProps::is_cacheable),
            [
                "server/discover",
                "resources/list",
                "resources/templates/list",
                "resources/read",
                "tools/list",
                "prompts/list",
                "skills/list",
                "skills/get"
            ]
        );
    }

    #[test]
    fn only_calls_prompts_and_reads_may_ask_for_input() {
        assert_eq!(
            with(MethodProps::may_ask_for_input),
            ["resources/read", "tools/call", "prompts/get"]
        );
    }

    #[test]
    fn targets_and_task_roles_are_where_the_spec_puts_them() {
        let targets: Vec<_> = Method::ALL
            .into_iter()
            .filter_map(|m| Some((m.as_str(), m.target_member()?)))
            .collect();
        assert_eq!(
            targets,
            [
                ("resources/read", "uri"),
                ("tools/call", "name"),
                ("prompts/get", "name"),
                ("tasks/get", "taskId"),
                ("tasks/cancel", "taskId"),
                ("tasks/update", "taskId")
            ]
        );
        assert_eq!(
            Method::ALL
                .into_iter()
                .filter_map(|m| m.props().task_role())
                .count(),
            7
        );
        assert_eq!(
            Method::UpdateTask.props().task_role(),
            Some(TaskRole::Answers)
        );
        assert!(!Method::UpdateTask.props().exists_in(Era::Legacy));
        assert!(!Method::TaskResult.props().exists_in(Era::Modern));
    }
}
