//! The notifications a server sends, read into one typed enum.
//!
//! Every server→client notification of every spec version (2024-11-05 … 2026-07-28)
//! has a [`NotificationMethod`]; a received one is read into a [`Notification`] with
//! its params typed, so that no caller compares method names:
//!
//! | method | [`Notification`] | since |
//! |---|---|---|
//! | `notifications/cancelled` | [`Cancelled`](Notification::Cancelled) (modern stdio: ends a listen stream) | 2024-11-05 |
//! | `notifications/progress` | [`Progress`](Notification::Progress) | 2024-11-05 |
//! | `notifications/message` | [`Message`](Notification::Message) (a log line) | 2024-11-05 |
//! | `notifications/resources/updated` | [`ResourceUpdated`](Notification::ResourceUpdated) | 2024-11-05 |
//! | `notifications/resources/list_changed` | [`ResourcesListChanged`](Notification::ResourcesListChanged) | 2024-11-05 |
//! | `notifications/tools/list_changed` | [`ToolsListChanged`](Notification::ToolsListChanged) | 2024-11-05 |
//! | `notifications/prompts/list_changed` | [`PromptsListChanged`](Notification::PromptsListChanged) | 2024-11-05 |
//! | `notifications/tasks/status` | [`TaskStatus`](Notification::TaskStatus) | 2025-11-25 |
//! | `notifications/elicitation/complete` | [`ElicitationComplete`](Notification::ElicitationComplete) | 2025-11-25 |
//! | `notifications/subscriptions/acknowledged` | [`SubscriptionsAcknowledged`](Notification::SubscriptionsAcknowledged) | 2026-07-28 |
//!
//! A method the protocol does not define is [`Notification::Other`]; a defined one
//! whose params are not what the schema says is [`Notification::Malformed`]: both are
//! still handed to the host, never dropped.
//!
//! ```
//! use capable_core::internal::notification::{Notification, NotificationMethod};
//! use serde_json::json;
//!
//! let n = Notification::from_value("notifications/resources/updated", &json!({"uri": "docs://a"}));
//! assert_eq!(n, Notification::ResourceUpdated { uri: "docs://a".into() });
//! assert_eq!(n.method(), Some(NotificationMethod::ResourceUpdated));
//! assert!(n.concerns("docs://a"));
//!
//! let list = Notification::from_value("notifications/tools/list_changed", &json!(null));
//! assert_eq!(list.list_changed(), Some(capable_core::Method::ListTools));
//! ```

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

pub use crate::method::NotificationMethod;

use crate::jsonrpc::{Payload, RequestId};
use crate::method::Method;
use crate::model::{self, ProgressParams, Task};

/// A `notifications/message` log line.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct LogMessage {
    /// Its severity (`debug` … `emergency`), as the server wrote it.
    pub level: String,
    /// The logger's name, when given.
    #[serde(default)]
    pub logger: Option<String>,
    /// The message: any JSON.
    #[serde(default)]
    pub data: Value,
}

/// A server notification, read: what it says, typed by its method.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Notification {
    /// `notifications/cancelled`: the server cancels one of our requests. On modern
    /// stdio this is how a server ends a `subscriptions/listen` stream.
    Cancelled {
        /// The request cancelled (ours).
        request_id: RequestId,
        /// Why, when it says.
        reason: Option<String>,
    },
    /// `notifications/progress` for one of our requests.
    Progress(ProgressParams),
    /// `notifications/message`: a log line.
    Message(LogMessage),
    /// `notifications/resources/updated`: a resource (or a sub-resource of one) that
    /// a subscription covers changed.
    ResourceUpdated {
        /// The resource that changed.
        uri: String,
    },
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/tasks/status` (2025-11-25): a task's new status.
    TaskStatus(Box<Task>),
    /// `notifications/elicitation/complete` (2025-11-25): a URL elicitation ended.
    ElicitationComplete {
        /// The elicitation that completed.
        elicitation_id: String,
    },
    /// `notifications/subscriptions/acknowledged` (2026-07-28): the first message of a
    /// listen stream.
    SubscriptionsAcknowledged {
        /// The part of the filter the server honours (its `notifications`; `null`
        /// when it sent none).
        notifications: Value,
    },
    /// A method the protocol defines, with params that are not what it says.
    Malformed {
        /// The method.
        method: NotificationMethod,
        /// What is wrong.
        detail: String,
    },
    /// A method the protocol does not define (an extension's, a server's own).
    Other {
        /// Its name.
        method: String,
    },
}

/// Where a notification's params are read from: a received message's payload, or
/// JSON already decoded.
trait Params {
    fn read<T: DeserializeOwned>(&self) -> Result<T, String>;
}

impl Params for Payload {
    fn read<T: DeserializeOwned>(&self) -> Result<T, String> {
        if self.is_absent() {
            return Err("no params".into());
        }
        self.decode().map_err(|e| e.to_string())
    }
}

impl Params for Value {
    fn read<T: DeserializeOwned>(&self) -> Result<T, String> {
        if self.is_null() {
            return Err("no params".into());
        }
        T::deserialize(self).map_err(|e| e.to_string())
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ElicitationCompleteParams {
    elicitation_id: String,
}

#[derive(Deserialize)]
struct AcknowledgedParams {
    #[serde(default)]
    notifications: Value,
}

impl Notification {
    /// Reads a received notification: its method and its params.
    pub fn parse(method: &str, params: &Payload) -> Notification {
        Notification::read(method, params)
    }

    /// Reads a notification whose params are already JSON (`null` when absent).
    pub fn from_value(method: &str, params: &Value) -> Notification {
        Notification::read(method, params)
    }

    fn read(name: &str, params: &impl Params) -> Notification {
        let Some(method) = NotificationMethod::from_name(name) else {
            return Notification::Other {
                method: name.to_owned(),
            };
        };
        let read = match method {
            // Their params carry nothing but `_meta`: absent or not, they are what
            // they say.
            NotificationMethod::ResourcesListChanged => Ok(Notification::ResourcesListChanged),
            NotificationMethod::ToolsListChanged => Ok(Notification::ToolsListChanged),
            NotificationMethod::PromptsListChanged => Ok(Notification::PromptsListChanged),
            NotificationMethod::Cancelled => {
                params
                    .read::<model::CancelledParams>()
                    .map(|p| Notification::Cancelled {
                        request_id: p.request_id,
                        reason: p.reason,
                    })
            }
            NotificationMethod::Progress => params.read().map(Notification::Progress),
            NotificationMethod::Message => params.read().map(Notification::Message),
            NotificationMethod::ResourceUpdated => params
                .read::<model::ResourceUpdatedParams>()
                .map(|p| Notification::ResourceUpdated { uri: p.uri }),
            NotificationMethod::TaskStatus => params
                .read::<Task>()
                .map(|t| Notification::TaskStatus(Box::new(t))),
            NotificationMethod::ElicitationComplete => params
                .read::<ElicitationCompleteParams>()
                .map(|p| Notification::ElicitationComplete {
                    elicitation_id: p.elicitation_id,
                }),
            NotificationMethod::SubscriptionsAcknowledged => params
                .read::<AcknowledgedParams>()
                .map(|p| Notification::SubscriptionsAcknowledged {
                    notifications: p.notifications,
                }),
        };
        read.unwrap_or_else(|detail| Notification::Malformed { method, detail })
    }

    /// Its method, when the protocol defines it (a malformed one's too).
    pub fn method(&self) -> Option<NotificationMethod> {
        Some(match self {
            Notification::Cancelled { .. } => NotificationMethod::Cancelled,
            Notification::Progress(_) => NotificationMethod::Progress,
            Notification::Message(_) => NotificationMethod::Message,
            Notification::ResourceUpdated { .. } => NotificationMethod::ResourceUpdated,
            Notification::ResourcesListChanged => NotificationMethod::ResourcesListChanged,
            Notification::ToolsListChanged => NotificationMethod::ToolsListChanged,
            Notification::PromptsListChanged => NotificationMethod::PromptsListChanged,
            Notification::TaskStatus(_) => NotificationMethod::TaskStatus,
            Notification::ElicitationComplete { .. } => NotificationMethod::ElicitationComplete,
            Notification::SubscriptionsAcknowledged { .. } => {
                NotificationMethod::SubscriptionsAcknowledged
            }
            Notification::Malformed { method, .. } => *method,
            Notification::Other { .. } => return None,
        })
    }

    /// The method name on the wire.
    pub fn name(&self) -> &str {
        match (self, self.method()) {
            (Notification::Other { method }, _) => method,
            (_, Some(method)) => method.as_str(),
            (_, None) => "",
        }
    }

    /// For a well-formed `list_changed`, the list method whose answers it makes stale.
    pub fn list_changed(&self) -> Option<Method> {
        match self {
            Notification::Malformed { .. } => None,
            n => n.method()?.list_changed(),
        }
    }

    /// Whether this is a `resources/updated` for `watched` or a sub-resource of it
    /// (`docs://a/b` and `docs://a#x` concern `docs://a`; `docs://ab` does not).
    pub fn concerns(&self, watched: &str) -> bool {
        match self {
            Notification::ResourceUpdated { uri } => model::is_same_or_sub_resource(uri, watched),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::{Capability, Flag};
    use serde_json::json;

    #[test]
    fn every_method_reads_back_from_its_name() {
        for method in NotificationMethod::ALL {
            assert_eq!(NotificationMethod::from_name(method.as_str()), Some(method));
            assert_eq!(method.to_string(), method.as_str());
        }
        assert_eq!(
            NotificationMethod::from_name("notifications/initialized"),
            None
        );
        assert_eq!(NotificationMethod::from_name(""), None);
    }

    #[test]
    fn each_defined_notification_is_read_with_its_params() {
        let read = Notification::from_value;
        assert_eq!(
            read(
                "notifications/cancelled",
                &json!({"requestId": 7, "reason": "done"})
            ),
            Notification::Cancelled {
                request_id: RequestId::Number(7),
                reason: Some("done".into())
            }
        );
        let Notification::Progress(p) = read(
            "notifications/progress",
            &json!({"progressToken": 3, "progress": 0.5, "total": 1}),
        ) else {
            panic!("progress")
        };
        assert_eq!((p.progress, p.total), (0.5, Some(1.0)));
        assert_eq!(
            read(
                "notifications/message",
                &json!({"level": "info", "data": {"step": 1}})
            ),
            Notification::Message(LogMessage {
                level: "info".into(),
                logger: None,
                data: json!({"step": 1})
            })
        );
        for (name, list) in [
            ("notifications/tools/list_changed", Method::ListTools),
            ("notifications/prompts/list_changed", Method::ListPrompts),
            (
                "notifications/resources/list_changed",
                Method::ListResources,
            ),
        ] {
            // With or without params (only `_meta` may be in them).
            assert_eq!(read(name, &Value::Null).list_changed(), Some(list));
            assert_eq!(read(name, &json!({"_meta": {}})).list_changed(), Some(list));
        }
        let Notification::TaskStatus(task) = read(
            "notifications/tasks/status",
            &json!({"taskId": "t", "status": "working"}),
        ) else {
            panic!("task status")
        };
        assert_eq!(task.task_id, "t");
        assert_eq!(
            read(
                "notifications/elicitation/complete",
                &json!({"elicitationId": "e"})
            ),
            Notification::ElicitationComplete {
                elicitation_id: "e".into()
            }
        );
        assert_eq!(
            read(
                "notifications/subscriptions/acknowledged",
                &json!({"notifications": {"toolsListChanged": true}})
            ),
            Notification::SubscriptionsAcknowledged {
                notifications: json!({"toolsListChanged": true})
            }
        );
    }

    #[test]
    fn a_defined_method_with_wrong_params_is_malformed_and_an_unknown_one_other() {
        for (name, params) in [
            ("notifications/resources/updated", json!({})),
            ("notifications/resources/updated", Value::Null),
            ("notifications/cancelled", json!({"reason": "no id"})),
            ("notifications/message", json!({"data": 1})),
        ] {
            let n = Notification::from_value(name, &params);
            assert!(
                matches!(n, Notification::Malformed { .. }),
                "{name} {params}: {n:?}"
            );
            assert_eq!(n.name(), name);
            assert_eq!(n.list_changed(), None);
        }
        let other = Notification::from_value("notifications/custom/thing", &json!({}));
        assert_eq!(
            other,
            Notification::Other {
                method: "notifications/custom/thing".into()
            }
        );
        assert_eq!(other.name(), "notifications/custom/thing");
        assert_eq!(other.method(), None);
    }

    #[test]
    fn a_payload_reads_as_its_json_does() {
        let line = br#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"docs://a/b"}}"#;
        let crate::jsonrpc::Incoming::Notification { method, params } =
            crate::jsonrpc::Incoming::parse(line.to_vec()).expect("a notification")
        else {
            panic!("not a notification")
        };
        let n = Notification::parse(&method, &params);
        assert_eq!(
            n,
            Notification::ResourceUpdated {
                uri: "docs://a/b".into()
            }
        );
        assert!(n.concerns("docs://a"));
        assert!(!n.concerns("docs://ab"));
        let bare = br#"{"jsonrpc":"2.0","method":"notifications/resources/updated"}"#;
        let crate::jsonrpc::Incoming::Notification { method, params } =
            crate::jsonrpc::Incoming::parse(bare.to_vec()).expect("a notification")
        else {
            panic!("not a notification")
        };
        assert!(matches!(
            Notification::parse(&method, &params),
            Notification::Malformed {
                method: NotificationMethod::ResourceUpdated,
                ..
            }
        ));
    }

    #[test]
    fn updates_concern_the_uri_and_its_sub_resources() {
        let updated = |uri: &str| Notification::ResourceUpdated { uri: uri.into() };
        assert!(updated("docs://a").concerns("docs://a"));
        assert!(updated("docs://a/b").concerns("docs://a"));
        assert!(updated("docs://a#x").concerns("docs://a"));
        assert!(!updated("docs://ab").concerns("docs://a"));
        assert!(!updated("docs://b").concerns("docs://a"));
        assert!(!Notification::ToolsListChanged.concerns("docs://a"));
    }

    #[test]
    fn requirements_are_those_of_the_gating_table() {
        assert_eq!(
            NotificationMethod::ResourceUpdated.requirement(),
            Some((Capability::Resources, Some(Flag::Subscribe)))
        );
        assert_eq!(
            NotificationMethod::Message.requirement(),
            Some((Capability::Logging, None))
        );
        assert_eq!(NotificationMethod::Cancelled.requirement(), None);
        assert_eq!(
            NotificationMethod::SubscriptionsAcknowledged.requirement(),
            None
        );
    }
}
