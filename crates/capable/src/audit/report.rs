//! The record of one audit: a [`Check`] per probe, a [`Finding`] with its evidence per
//! contract violation, and [`AuditNotice`]s of lower severity.

use std::fmt;
use std::time::SystemTime;

use capable_core::model::Implementation;
use capable_core::{Era, Notice, ProtocolVersion, ServerCapabilities};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;

/// Who was audited: the name and version of `serverInfo`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ServerId {
    /// `serverInfo.name`.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
}

impl ServerId {
    pub(super) fn of(info: &Implementation) -> ServerId {
        ServerId {
            name: info.name.clone(),
            version: info.version.clone(),
        }
    }
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, self.version)
    }
}

/// The verdict of one audit: what the server declared, every check made, and the
/// evidence of every contract violation.
///
/// Serialized, it is the document `capable audit --json` prints:
///
/// ```json
/// {
///   "server": {"name": "…", "version": "…"},
///   "era": "legacy",
///   "protocolVersion": "2025-11-25",
///   "capabilities": {"resources": {"subscribe": true}},
///   "checks": [{"capability": "resources", "check": "list", "method": "resources/list",
///               "outcome": "ok", "detail": "2 items in 1 page; every page valid"}],
///   "violations": [{"capability": "…", "method": "…", "kind": "method-not-found",
///                   "detail": "…", "request": {…}, "response": {…},
///                   "server": {…}, "protocolVersion": "…", "at": "…"}],
///   "notices": [{"severity": "notice", "kind": "undeclared-notification",
///                "notification": "…", "needs": "…"}]
/// }
/// ```
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AuditReport {
    /// Who was audited.
    pub server: ServerId,
    /// The era of the negotiated version.
    #[serde(serialize_with = "era_name")]
    pub era: Era,
    /// The negotiated protocol version; every result was validated against its schema.
    pub protocol_version: ProtocolVersion,
    /// The capabilities, exactly as declared.
    pub capabilities: ServerCapabilities,
    /// Every check, in the order it was made.
    pub checks: Vec<Check>,
    /// One per contract violation, with its evidence (serialized as `violations`).
    /// Every check whose outcome is [`Outcome::Violation`] has its finding here.
    #[serde(rename = "violations")]
    pub findings: Vec<Finding>,
    /// Lower-severity records: things the server did that no declaration covers.
    pub notices: Vec<AuditNotice>,
}

impl AuditReport {
    /// Whether the server kept its contract: no finding. Notices do not count.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// How many checks ended with `outcome`.
    pub fn count(&self, outcome: Outcome) -> usize {
        self.checks_with(outcome).count()
    }

    /// The checks that ended with `outcome`, in order.
    pub fn checks_with(&self, outcome: Outcome) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(move |c| c.outcome == outcome)
    }

    /// The check named `check` of `capability` (`("resources.subscribe",
    /// "subscribe")`), if it was made.
    pub fn check(&self, capability: &str, check: &str) -> Option<&Check> {
        self.checks
            .iter()
            .find(|c| c.capability == capability && c.check == check)
    }
}

fn era_name<S: Serializer>(era: &Era, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(era.as_str())
}

/// How a check ended.
///
/// The four outcomes are the audit's whole vocabulary, so a host may match them
/// exhaustively: a future probe reports with these, never with a fifth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The server did what it declared, and the result is valid.
    Ok,
    /// The server broke its declaration; the report has a [`Finding`] for it.
    Violation,
    /// Not probed: nothing to probe with (no resource listed, no prompt argument),
    /// the method does not exist in this version, or the method was refused locally.
    Skipped,
    /// A probe cannot tell (a `listChanged` notification that nothing caused, a list
    /// still paginating at the page limit).
    Unverifiable,
}

impl Outcome {
    /// `ok`, `violation`, `skipped` or `unverifiable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Violation => "violation",
            Outcome::Skipped => "skipped",
            Outcome::Unverifiable => "unverifiable",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One check of one declared capability.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Check {
    /// What the check is about: a capability key (`resources`, `tools`), a flag
    /// (`resources.subscribe`, `tools.listChanged`), `(lifecycle)` for the handshake
    /// and `ping`, or any other key the server declared.
    pub capability: String,
    /// What was checked, in words (`list`, `subscribe`, `handshake`, …).
    pub check: String,
    /// The method (or notification) probed, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// How it ended.
    pub outcome: Outcome,
    /// Why, in words: what was found, or what is wrong.
    pub detail: String,
}

/// A contract violation and its evidence: the exact messages, who sent them, under
/// which version, and when.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Finding {
    /// What was declared (`resources.subscribe`, `tools`, `(lifecycle)`, …).
    pub capability: String,
    /// The method that broke it.
    pub method: String,
    /// What went wrong.
    pub kind: FindingKind,
    /// In words: the schema errors, the error the server answered with, …
    pub detail: String,
    /// The request exactly as sent (`null` when it was not recorded).
    pub request: Value,
    /// The response exactly as received: the message itself, the acknowledgement of a
    /// listen stream, or `null` when nothing came.
    pub response: Value,
    /// Who sent it.
    pub server: ServerId,
    /// The negotiated version the response was judged under.
    pub protocol_version: ProtocolVersion,
    /// When the violation was recorded (serialized as RFC 3339, UTC, milliseconds).
    #[serde(serialize_with = "rfc3339")]
    pub at: SystemTime,
}

fn rfc3339<S: Serializer>(at: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&capable_core::internal::time::rfc3339(*at))
}

/// What kind of contract violation a [`Finding`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FindingKind {
    /// A declared capability's method was answered with -32601 (method not found).
    /// The method is marked broken for the session and never sent again.
    MethodNotFound,
    /// The result does not match the schema of the negotiated version.
    MalformedResult,
    /// A read-only probe of a declared capability was answered with a JSON-RPC error.
    ErrorResponse,
    /// No answer: the request timed out, or the connection failed.
    NoAnswer,
    /// A tool's `inputSchema` or `outputSchema` is not a valid JSON Schema.
    InvalidToolSchema,
    /// A `subscriptions/listen` stream was not acknowledged with
    /// `notifications/subscriptions/acknowledged` first.
    NoAcknowledgement,
}

impl FindingKind {
    /// The kebab-case name used in JSON (`method-not-found`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::MethodNotFound => "method-not-found",
            FindingKind::MalformedResult => "malformed-result",
            FindingKind::ErrorResponse => "error-response",
            FindingKind::NoAnswer => "no-answer",
            FindingKind::InvalidToolSchema => "invalid-tool-schema",
            FindingKind::NoAcknowledgement => "no-acknowledgement",
        }
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something the server did that is worth a note but breaks no declaration it made.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuditNotice {
    /// The server sent a notification without declaring what it presupposes
    /// (serialized with `"kind": "undeclared-notification"`).
    UndeclaredNotification {
        /// The notification's method.
        notification: String,
        /// What it presupposes (`resources.listChanged`, …).
        needs: String,
    },
}

impl AuditNotice {
    /// The notice of a session notice the audit reports, if it is one.
    pub(super) fn from_notice(notice: Notice) -> Option<AuditNotice> {
        match notice {
            Notice::UndeclaredNotification { method, needs } => {
                Some(AuditNotice::UndeclaredNotification {
                    notification: method,
                    needs,
                })
            }
            _ => None,
        }
    }
}

impl Serialize for AuditNotice {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AuditNotice::UndeclaredNotification {
                notification,
                needs,
            } => {
                let mut map = s.serialize_map(Some(4))?;
                map.serialize_entry("severity", "notice")?;
                map.serialize_entry("kind", "undeclared-notification")?;
                map.serialize_entry("notification", notification)?;
                map.serialize_entry("needs", needs)?;
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_and_outcomes_serialize_as_their_names() {
        for kind in [
            FindingKind::MethodNotFound,
            FindingKind::MalformedResult,
            FindingKind::ErrorResponse,
            FindingKind::NoAnswer,
            FindingKind::InvalidToolSchema,
            FindingKind::NoAcknowledgement,
        ] {
            assert_eq!(serde_json::to_value(kind).ok(), Some(json!(kind.as_str())));
        }
        for outcome in [
            Outcome::Ok,
            Outcome::Violation,
            Outcome::Skipped,
            Outcome::Unverifiable,
        ] {
            assert_eq!(
                serde_json::to_value(outcome).ok(),
                Some(json!(outcome.as_str()))
            );
        }
    }

    #[test]
    fn a_notice_serializes_with_its_severity_first() {
        let notice = AuditNotice::UndeclaredNotification {
            notification: capable_core::NotificationMethod::ToolsListChanged
                .as_str()
                .into(),
            needs: "tools.listChanged".into(),
        };
        let text = serde_json::to_string(&notice).unwrap_or_default();
        assert_eq!(
            text,
            r#"{"severity":"notice","kind":"undeclared-notification","notification":"notifications/tools/list_changed","needs":"tools.listChanged"}"#
        );
    }
}
