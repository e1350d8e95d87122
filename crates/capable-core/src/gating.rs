//! The gating table: which client→server methods a host may call, derived from the
//! negotiated protocol version and the server's declared capabilities alone.
//!
//! This is the only place that decides whether a method may be sent; what each method
//! needs per era is its row of the method table ([`crate::method`]). Every request the
//! client issues passes [`check`] first; [`actions`] lists what passes. A refusal is
//! local: nothing reaches the server.
//!
//! | method | needs |
//! |---|---|
//! | `resources/list`, `resources/templates/list`, `resources/read` | `resources` |
//! | `resources/subscribe`, `resources/unsubscribe` (legacy) | `resources.subscribe` |
//! | `subscriptions/listen` (modern) | each filter field its own flag, see [`check_listen`] |
//! | `tools/list`, `tools/call` | `tools` |
//! | `prompts/list`, `prompts/get` | `prompts` |
//! | `logging/setLevel` (legacy) | `logging` |
//! | `completion/complete` | `completions` (2025-03-26+); 2024-11-05 defines no flag |
//! | `ping` (legacy), `initialize` (legacy), `server/discover` (modern) | nothing |
//! | `tasks/get`, `tasks/result` (2025-11-25) | `tasks` |
//! | `tasks/list`, `tasks/cancel` (2025-11-25) | `tasks.list`, `tasks.cancel` |
//! | a `tools/call` run as a task (2025-11-25) | `tasks.requests.tools.call`, see [`check_task_call`] |
//! | `tasks/get`, `tasks/update`, `tasks/cancel` (modern) | the extension `io.modelcontextprotocol/tasks`, declared by both sides |
//! | `skills/list`, `skills/get` | the extension `io.modelcontextprotocol/skills` |

use serde_json::Value;

use crate::capabilities::{Capability, Flag, ServerCapabilities};
use crate::extensions::{Extension, TaskFeature};
use crate::method::{Method, Need};
use crate::version::{Era, ProtocolVersion};

/// What a method needs before it may be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// The method does not exist in this protocol version.
    NotInVersion,
    /// Always allowed (lifecycle and utilities).
    Nothing,
    /// Allowed, but the version defines no way to announce it (2024-11-05
    /// `completion/complete`): the server may still answer -32601.
    Unannounced,
    /// The capability's key must be present.
    Capability(Capability),
    /// The capability must be present with this flag set to `true`.
    Flag(Capability, Flag),
    /// `subscriptions/listen`: each filter field needs its own flag.
    ListenFilter,
    /// The server must declare this extension (and, for tasks, the client too).
    Extension(Extension),
    /// 2025-11-25 tasks: the `tasks` capability, or one of its members.
    Tasks(TaskFeature),
}

impl Requirement {
    /// A short human description: `resources`, `resources.subscribe`, …
    pub fn describe(&self) -> String {
        match self {
            Requirement::NotInVersion => "a different protocol version".into(),
            Requirement::Nothing | Requirement::Unannounced => "nothing".into(),
            Requirement::Capability(c) => c.key().into(),
            Requirement::Flag(c, f) => format!("{}.{}", c.key(), f.key()),
            Requirement::ListenFilter => "a declared flag per filter field".into(),
            Requirement::Extension(e) => format!("extensions.{}", e.id()),
            Requirement::Tasks(f) => f.key().into(),
        }
    }
}

/// What `method` needs in `version`: its row of the method table
/// ([`Method::props`]) says what it needs in `version`'s era; here that is read for
/// the version itself (`completion/complete` announced from 2025-03-26 on, core tasks
/// in 2025-11-25 only).
pub fn requirement(method: Method, version: ProtocolVersion) -> Requirement {
    use Requirement as R;
    let Some(need) = method.props().need(version.era()) else {
        return R::NotInVersion;
    };
    match need {
        Need::Nothing => R::Nothing,
        Need::Capability(c) => R::Capability(c),
        Need::Flag(c, f) => R::Flag(c, f),
        Need::ListenFilter => R::ListenFilter,
        Need::Extension(e) => R::Extension(e),
        Need::Completions if version.has_completions_flag() => {
            R::Capability(Capability::Completions)
        }
        Need::Completions => R::Unannounced,
        Need::CoreTasks(feature) if version.has_core_tasks() => R::Tasks(feature),
        Need::CoreTasks(_) => R::NotInVersion,
    }
}

/// Why a method may not be sent. Nothing was sent.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The method does not exist in the negotiated protocol version.
    #[error("{method} does not exist in protocol version {version}; nothing was sent")]
    NotInVersion {
        /// The method asked for.
        method: Method,
        /// The negotiated version.
        version: ProtocolVersion,
    },
    /// The server did not declare the capability the method needs.
    #[error(
        "{method} needs the server capability `{}`, which the server did not declare; nothing was sent",
        capability.key()
    )]
    CapabilityNotDeclared {
        /// The method asked for.
        method: Method,
        /// The capability it needs.
        capability: Capability,
    },
    /// The capability is declared, but not the flag the method needs.
    #[error(
        "{method} needs `{cap}.{flag}: true`, but the server declared `\"{cap}\": {declared}`; nothing was sent",
        cap = capability.key(), flag = flag.key()
    )]
    FlagNotDeclared {
        /// The method asked for.
        method: Method,
        /// The capability it needs.
        capability: Capability,
        /// The flag it needs.
        flag: Flag,
        /// The capability object as the server declared it.
        declared: Value,
    },
    /// The method belongs to the handshake and is never sent by a host.
    #[error("{method} is sent by the handshake only; nothing was sent")]
    HandshakeOnly {
        /// The method asked for.
        method: Method,
    },
    /// The server did not declare the extension the method belongs to.
    #[error("{method} belongs to the extension `{extension}`, which the server did not declare; nothing was sent")]
    ExtensionNotDeclared {
        /// The method asked for.
        method: Method,
        /// The extension it needs.
        extension: Extension,
    },
    /// The method belongs to an extension both sides must declare, and this client
    /// was not configured to handle it.
    #[error("{method} belongs to the extension `{extension}`, which this client does not declare (the host does not handle it); nothing was sent")]
    ExtensionNotHandled {
        /// The method asked for.
        method: Method,
        /// The extension it needs.
        extension: Extension,
    },
    /// 2025-11-25 tasks: the server did not declare the `tasks` member the method
    /// needs.
    #[error("{method} needs the server capability `{}`, which the server did not declare (it declared `\"tasks\": {declared}`); nothing was sent", feature.key())]
    TasksNotDeclared {
        /// The method asked for.
        method: Method,
        /// What it needs.
        feature: TaskFeature,
        /// The `tasks` object as the server declared it (`null`: absent).
        declared: Value,
    },
    /// The method was marked broken for this session after the server refused it
    /// despite declaring it (a contract violation).
    #[error("{method} was refused by the server earlier in this session although declared; capable does not retry it")]
    MarkedBroken {
        /// The method asked for.
        method: Method,
    },
}

impl Refusal {
    /// The method that was refused.
    pub fn method(&self) -> Method {
        match self {
            Refusal::NotInVersion { method, .. }
            | Refusal::CapabilityNotDeclared { method, .. }
            | Refusal::FlagNotDeclared { method, .. }
            | Refusal::HandshakeOnly { method }
            | Refusal::ExtensionNotDeclared { method, .. }
            | Refusal::ExtensionNotHandled { method, .. }
            | Refusal::TasksNotDeclared { method, .. }
            | Refusal::MarkedBroken { method } => *method,
        }
    }
}

fn require(
    method: Method,
    capability: Capability,
    flag: Option<Flag>,
    caps: &ServerCapabilities,
) -> Result<(), Refusal> {
    let declared = caps.get(capability);
    if !declared.present {
        return Err(Refusal::CapabilityNotDeclared { method, capability });
    }
    match flag {
        Some(flag) if !declared.flag(flag) => Err(Refusal::FlagNotDeclared {
            method,
            capability,
            flag,
            declared: caps
                .declared_value(capability)
                .cloned()
                .unwrap_or(Value::Null),
        }),
        _ => Ok(()),
    }
}

/// Whether `method` may be sent to a server that negotiated `version` and declared
/// `caps`. For `subscriptions/listen` this checks only that the method exists; the
/// filter is checked by [`check_listen`].
pub fn check(
    method: Method,
    version: ProtocolVersion,
    caps: &ServerCapabilities,
) -> Result<(), Refusal> {
    match requirement(method, version) {
        Requirement::NotInVersion => Err(Refusal::NotInVersion { method, version }),
        Requirement::Nothing | Requirement::Unannounced | Requirement::ListenFilter => Ok(()),
        Requirement::Capability(c) => require(method, c, None, caps),
        Requirement::Flag(c, f) => require(method, c, Some(f), caps),
        Requirement::Extension(extension) => match caps.has_extension(extension) {
            true => Ok(()),
            false => Err(Refusal::ExtensionNotDeclared { method, extension }),
        },
        Requirement::Tasks(feature) => require_tasks(method, feature, caps),
    }
}

fn require_tasks(
    method: Method,
    feature: TaskFeature,
    caps: &ServerCapabilities,
) -> Result<(), Refusal> {
    if feature.declared_in(&caps.legacy_tasks()) {
        return Ok(());
    }
    Err(Refusal::TasksNotDeclared {
        method,
        feature,
        declared: caps.raw().get("tasks").cloned().unwrap_or(Value::Null),
    })
}

/// Whether a `tools/call` may ask to run as a task: 2025-11-25 servers must declare
/// `tasks.requests.tools.call`; modern servers the tasks extension (the client then
/// declares it on the request, and the server decides). Other versions have no tasks.
pub fn check_task_call(version: ProtocolVersion, caps: &ServerCapabilities) -> Result<(), Refusal> {
    let method = Method::CallTool;
    check(method, version, caps)?;
    match version.era() {
        Era::Modern => match caps.has_extension(Extension::Tasks) {
            true => Ok(()),
            false => Err(Refusal::ExtensionNotDeclared {
                method,
                extension: Extension::Tasks,
            }),
        },
        Era::Legacy if version.has_core_tasks() => {
            require_tasks(method, TaskFeature::ToolCalls, caps)
        }
        Era::Legacy => Err(Refusal::NotInVersion {
            method: Method::GetTask,
            version,
        }),
    }
}

/// What a `subscriptions/listen` filter asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListenFilter {
    /// `toolsListChanged`.
    pub tools_list_changed: bool,
    /// `promptsListChanged`.
    pub prompts_list_changed: bool,
    /// `resourcesListChanged`.
    pub resources_list_changed: bool,
    /// `resourceSubscriptions`: URIs whose content changes are wanted.
    pub resource_subscriptions: Vec<String>,
}

impl ListenFilter {
    /// The filter for every list change `caps` declares (`tools`, `prompts`,
    /// `resources` with `listChanged`) and nothing else: what a host that keeps those
    /// lists listens to, and only what the check below allows. Empty (the default)
    /// when nothing is declared: then there is no stream to open.
    pub fn list_changes(caps: &ServerCapabilities) -> ListenFilter {
        let declared = |c: Capability| caps.has_flag(c, Flag::ListChanged);
        ListenFilter {
            tools_list_changed: declared(Capability::Tools),
            prompts_list_changed: declared(Capability::Prompts),
            resources_list_changed: declared(Capability::Resources),
            resource_subscriptions: Vec::new(),
        }
    }
}

/// Checks each filter field of a `subscriptions/listen` request against its flag:
/// `toolsListChanged` ← `tools.listChanged`, `promptsListChanged` ←
/// `prompts.listChanged`, `resourcesListChanged` ← `resources.listChanged`,
/// `resourceSubscriptions` ← `resources.subscribe`.
pub fn check_listen(
    filter: &ListenFilter,
    version: ProtocolVersion,
    caps: &ServerCapabilities,
) -> Result<(), Refusal> {
    check(Method::Listen, version, caps)?;
    let fields = [
        (
            filter.tools_list_changed,
            Capability::Tools,
            Flag::ListChanged,
        ),
        (
            filter.prompts_list_changed,
            Capability::Prompts,
            Flag::ListChanged,
        ),
        (
            filter.resources_list_changed,
            Capability::Resources,
            Flag::ListChanged,
        ),
        (
            !filter.resource_subscriptions.is_empty(),
            Capability::Resources,
            Flag::Subscribe,
        ),
    ];
    for (asked, capability, flag) in fields {
        if asked {
            require(Method::Listen, capability, Some(flag), caps)?;
        }
    }
    Ok(())
}

/// The methods a host may call, in table order (lifecycle methods left out).
pub fn actions(version: ProtocolVersion, caps: &ServerCapabilities) -> Vec<Method> {
    Method::ALL
        .into_iter()
        .filter(|m| !matches!(m, Method::Initialize | Method::Discover))
        .filter(|m| check(*m, version, caps).is_ok())
        .collect()
}

/// What a server→client notification presupposes the server declared. Used to record
/// (at low severity) notifications a server sends without having declared them.
pub fn notification_requirement(method: &str) -> Option<(Capability, Option<Flag>)> {
    crate::notification::NotificationMethod::from_name(method)?.requirement()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const V: ProtocolVersion = ProtocolVersion::V2025_11_25;
    const M: ProtocolVersion = ProtocolVersion::V2026_07_28;

    fn caps(v: Value) -> ServerCapabilities {
        ServerCapabilities::from_value(v)
    }

    #[test]
    fn empty_resources_allows_reading_but_not_subscribing() {
        let c = caps(json!({"resources": {}}));
        assert!(check(Method::ReadResource, V, &c).is_ok());
        assert!(check(Method::ListResources, V, &c).is_ok());
        let err = check(Method::Subscribe, V, &c).unwrap_err();
        assert!(matches!(
            err,
            Refusal::FlagNotDeclared {
                flag: Flag::Subscribe,
                ..
            }
        ));
        assert!(err.to_string().contains(r#""resources": {}"#), "{err}");
    }

    #[test]
    fn subscribe_flag_allows_subscribe_and_reading_still() {
        let c = caps(json!({"resources": {"subscribe": true}}));
        assert!(check(Method::Subscribe, V, &c).is_ok());
        assert!(check(Method::Unsubscribe, V, &c).is_ok());
        assert!(check(Method::ReadResource, V, &c).is_ok());
    }

    #[test]
    fn list_changed_does_not_imply_subscribe() {
        let c = caps(json!({"resources": {"listChanged": true}}));
        assert!(check(Method::Subscribe, V, &c).is_err());
        assert!(check(Method::ReadResource, V, &c).is_ok());
    }

    #[test]
    fn no_resources_no_read() {
        let c = caps(json!({"tools": {}}));
        assert_eq!(
            check(Method::ReadResource, V, &c),
            Err(Refusal::CapabilityNotDeclared {
                method: Method::ReadResource,
                capability: Capability::Resources
            })
        );
        assert!(check(Method::CallTool, V, &c).is_ok());
    }

    #[test]
    fn methods_belong_to_their_era() {
        let c = caps(json!({"resources": {"subscribe": true}, "logging": {}}));
        assert!(check(Method::Subscribe, M, &c).is_err());
        assert!(check(Method::Ping, M, &c).is_err());
        assert!(check(Method::SetLoggingLevel, M, &c).is_err());
        assert!(check(Method::SetLoggingLevel, V, &c).is_ok());
        assert!(check(Method::Listen, V, &c).is_err());
        assert!(check(Method::Listen, M, &c).is_ok());
    }

    #[test]
    fn completions_in_2024_have_no_flag() {
        let none = caps(json!({}));
        assert!(check(Method::Complete, ProtocolVersion::V2024_11_05, &none).is_ok());
        assert!(check(Method::Complete, ProtocolVersion::V2025_03_26, &none).is_err());
        let c = caps(json!({"completions": {}}));
        assert!(check(Method::Complete, ProtocolVersion::V2025_03_26, &c).is_ok());
    }

    #[test]
    fn listen_filter_fields_each_need_their_flag() {
        let c = caps(json!({"resources": {"listChanged": true}, "tools": {}}));
        let list = ListenFilter {
            resources_list_changed: true,
            ..Default::default()
        };
        assert!(check_listen(&list, M, &c).is_ok());
        let sub = ListenFilter {
            resource_subscriptions: vec!["a://b".into()],
            ..Default::default()
        };
        assert!(check_listen(&sub, M, &c).is_err());
        let tools = ListenFilter {
            tools_list_changed: true,
            ..Default::default()
        };
        assert!(check_listen(&tools, M, &c).is_err());
    }

    #[test]
    fn a_hosts_listen_filter_asks_for_each_declared_list_change_and_passes_the_check() {
        let c = caps(json!({
            "tools": {"listChanged": true}, "prompts": {}, "resources": {"listChanged": true, "subscribe": true}
        }));
        let filter = ListenFilter::list_changes(&c);
        assert_eq!(
            filter,
            ListenFilter {
                tools_list_changed: true,
                resources_list_changed: true,
                ..Default::default()
            }
        );
        assert!(check_listen(&filter, M, &c).is_ok());
        let quiet = caps(json!({"tools": {}, "prompts": {"listChanged": false}}));
        assert_eq!(ListenFilter::list_changes(&quiet), ListenFilter::default());
    }

    #[test]
    fn tasks_are_core_in_2025_11_25_and_an_extension_in_2026() {
        let legacy =
            caps(json!({"tools": {}, "tasks": {"list": {}, "requests": {"tools": {"call": {}}}}}));
        assert!(check(Method::GetTask, V, &legacy).is_ok());
        assert!(check(Method::TaskResult, V, &legacy).is_ok());
        assert!(check(Method::ListTasks, V, &legacy).is_ok());
        let err = check(Method::CancelTask, V, &legacy).unwrap_err();
        assert!(
            matches!(
                err,
                Refusal::TasksNotDeclared {
                    feature: TaskFeature::Cancel,
                    ..
                }
            ),
            "{err}"
        );
        assert!(check_task_call(V, &legacy).is_ok());
        assert!(check(Method::UpdateTask, V, &legacy).is_err());
        assert!(check(Method::GetTask, ProtocolVersion::V2025_06_18, &legacy).is_err());

        let modern =
            caps(json!({"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}));
        for m in [Method::GetTask, Method::UpdateTask, Method::CancelTask] {
            assert!(check(m, M, &modern).is_ok(), "{m}");
        }
        for m in [Method::TaskResult, Method::ListTasks] {
            assert!(
                matches!(check(m, M, &modern), Err(Refusal::NotInVersion { .. })),
                "{m}"
            );
        }
        // The legacy capability means nothing in 2026, and no extension nothing.
        assert!(check(Method::GetTask, M, &legacy).is_err());
        assert!(check_task_call(M, &legacy).is_err());
        assert!(check_task_call(M, &modern).is_ok());
    }

    #[test]
    fn skills_need_the_servers_skills_extension_in_either_era() {
        let with =
            caps(json!({"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}}));
        let without = caps(json!({"resources": {}}));
        for v in [V, M] {
            assert!(check(Method::ListSkills, v, &with).is_ok());
            assert!(check(Method::GetSkill, v, &with).is_ok());
            assert_eq!(
                check(Method::ListSkills, v, &without),
                Err(Refusal::ExtensionNotDeclared {
                    method: Method::ListSkills,
                    extension: Extension::Skills
                })
            );
        }
    }

    #[test]
    fn actions_are_derived_from_the_table() {
        let c = caps(json!({"resources": {}}));
        assert_eq!(
            actions(V, &c),
            vec![
                Method::Ping,
                Method::ListResources,
                Method::ListResourceTemplates,
                Method::ReadResource
            ]
        );
        let c = caps(json!({"resources": {"subscribe": true}}));
        assert!(actions(V, &c).contains(&Method::Subscribe));
        assert!(!actions(M, &c).contains(&Method::Subscribe));
        assert!(actions(M, &c).contains(&Method::Listen));
    }
}
