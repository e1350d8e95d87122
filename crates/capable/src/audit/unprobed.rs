//! What no read-only request can probe: a `*.listChanged` flag (a notification is due
//! only when the list changes, and an audit changes nothing) and capability keys
//! capable has no probe for. Both are reported, never guessed.

use capable_core::{Capability, Flag, NotificationMethod};

use super::probe::Auditor;
use super::report::Outcome;

/// The declarations checked for their list change notification.
const LIST_CHANGED: [(Capability, NotificationMethod); 3] = [
    (
        Capability::Resources,
        NotificationMethod::ResourcesListChanged,
    ),
    (Capability::Tools, NotificationMethod::ToolsListChanged),
    (Capability::Prompts, NotificationMethod::PromptsListChanged),
];

impl Auditor<'_> {
    /// For each declared `listChanged`: `ok` when the server sent the notification
    /// during the audit, `unverifiable` otherwise.
    pub(super) fn list_changed(&mut self) {
        for (capability, notification) in LIST_CHANGED {
            if !self
                .session
                .capabilities()
                .has_flag(capability, Flag::ListChanged)
            {
                continue;
            }
            let cap = format!("{}.listChanged", capability.key());
            let check = "list change notification";
            match self.rec.received(notification, 0) {
                Some(_) => self.check(
                    &cap,
                    check,
                    Some(notification.as_str()),
                    Outcome::Ok,
                    "sent during the audit",
                ),
                None => self.check(
                    &cap,
                    check,
                    Some(notification.as_str()),
                    Outcome::Unverifiable,
                    "nothing changed during the audit, so no notification was due",
                ),
            }
        }
    }

    /// Each declared key capable does not know: `skipped`.
    pub(super) fn others(&mut self) {
        let others: Vec<String> = self
            .session
            .capabilities()
            .other_keys()
            .map(str::to_owned)
            .collect();
        for key in others {
            self.check(
                &key,
                "declared",
                None,
                Outcome::Skipped,
                "capable has no read-only probe for this capability",
            );
        }
    }
}
