//! The notification methods, each way: their wire names, said once.
//!
//! | table | the protocol's | read into |
//! |---|---|---|
//! | [`NotificationMethod`] | `ServerNotification`s, of every version | [`crate::Notification`], by the client and by a bridge |
//! | [`ClientNotificationMethod`] | `ClientNotification`s, of every version | the server engine ([`crate::server`]); written by the client's [`crate::Outbox`] |
//!
//! A notification named in code is named by its variant
//! (`NotificationMethod::Progress.as_str()`, a constant), never by a string of its
//! own: a name can then neither be misspelt nor drift.
//!
//! How to add a notification: a row in the table of its direction below (its variant
//! with a doc comment, and its wire name); then what it means — for a server's, its
//! [`crate::Notification`] variant (the compiler points at the `match`es), and its
//! [`NotificationMethod::requirement`] when a capability announces it.

use crate::capabilities::{Capability, Flag};
use crate::method::Method;

/// Writes a notification enum, its `ALL`, and its names both ways from one list of
/// rows, `Variant = "notifications/…";`, each with its doc comment above it.
macro_rules! notifications {
    ($(#[doc = $what:literal])* $enum:ident {
        $($(#[doc = $doc:literal])* $method:ident = $name:literal;)*
    }) => {
        $(#[doc = $what])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $enum {
            $($(#[doc = $doc])* $method,)*
        }

        impl $enum {
            /// Every method, in the table's order.
            pub const ALL: [$enum; [$($name),*].len()] = [$($enum::$method),*];

            /// The method name on the wire.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($enum::$method => $name,)*
                }
            }

            /// The method a wire name names; `None` for one the protocol does not
            /// define in this direction.
            pub fn from_name(name: &str) -> Option<$enum> {
                match name {
                    $($name => Some($enum::$method),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $enum {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

notifications! {
    /// A server→client notification method the protocol defines (read into a
    /// [`crate::Notification`]).
    NotificationMethod {
        /// `notifications/cancelled`.
        Cancelled = "notifications/cancelled";
        /// `notifications/progress`.
        Progress = "notifications/progress";
        /// `notifications/message`.
        Message = "notifications/message";
        /// `notifications/resources/updated`.
        ResourceUpdated = "notifications/resources/updated";
        /// `notifications/resources/list_changed`.
        ResourcesListChanged = "notifications/resources/list_changed";
        /// `notifications/tools/list_changed`.
        ToolsListChanged = "notifications/tools/list_changed";
        /// `notifications/prompts/list_changed`.
        PromptsListChanged = "notifications/prompts/list_changed";
        /// `notifications/tasks/status` (2025-11-25).
        TaskStatus = "notifications/tasks/status";
        /// `notifications/elicitation/complete` (2025-11-25).
        ElicitationComplete = "notifications/elicitation/complete";
        /// `notifications/subscriptions/acknowledged` (2026-07-28).
        SubscriptionsAcknowledged = "notifications/subscriptions/acknowledged";
    }
}

notifications! {
    /// A client→server notification method the protocol defines.
    ClientNotificationMethod {
        /// `notifications/initialized` (legacy): the handshake is done.
        Initialized = "notifications/initialized";
        /// `notifications/cancelled`: the client cancels one of its requests.
        Cancelled = "notifications/cancelled";
        /// `notifications/progress`, for a request of the server's (legacy).
        Progress = "notifications/progress";
        /// `notifications/roots/list_changed` (legacy).
        RootsListChanged = "notifications/roots/list_changed";
        /// `notifications/tasks/status` (2025-11-25), for a task of the server's
        /// request.
        TaskStatus = "notifications/tasks/status";
    }
}

impl NotificationMethod {
    /// What the notification presupposes the server declared (`None`: nothing, or
    /// not a server's to declare): a `list_changed` its list's `listChanged`,
    /// `resources/updated` `resources.subscribe`, a log line `logging`.
    pub fn requirement(self) -> Option<(Capability, Option<Flag>)> {
        Some(match self {
            NotificationMethod::ResourcesListChanged => {
                (Capability::Resources, Some(Flag::ListChanged))
            }
            NotificationMethod::ResourceUpdated => (Capability::Resources, Some(Flag::Subscribe)),
            NotificationMethod::ToolsListChanged => (Capability::Tools, Some(Flag::ListChanged)),
            NotificationMethod::PromptsListChanged => {
                (Capability::Prompts, Some(Flag::ListChanged))
            }
            NotificationMethod::Message => (Capability::Logging, None),
            _ => return None,
        })
    }

    /// For a `list_changed`, the list method whose answers it makes stale.
    pub fn list_changed(self) -> Option<Method> {
        Some(match self {
            NotificationMethod::ResourcesListChanged => Method::ListResources,
            NotificationMethod::ToolsListChanged => Method::ListTools,
            NotificationMethod::PromptsListChanged => Method::ListPrompts,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_direction_reads_its_own_names_back_and_no_other() {
        for method in ClientNotificationMethod::ALL {
            assert_eq!(
                ClientNotificationMethod::from_name(method.as_str()),
                Some(method)
            );
        }
        for only_the_clients in [
            "notifications/initialized",
            "notifications/roots/list_changed",
        ] {
            assert_eq!(NotificationMethod::from_name(only_the_clients), None);
        }
        assert_eq!(
            ClientNotificationMethod::from_name("notifications/message"),
            None
        );
        // The names both sides send are the same names.
        assert_eq!(
            ClientNotificationMethod::Cancelled.as_str(),
            NotificationMethod::Cancelled.as_str()
        );
        assert_eq!(
            ClientNotificationMethod::Progress.as_str(),
            NotificationMethod::Progress.as_str()
        );
    }
}
