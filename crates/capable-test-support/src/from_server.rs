//! What a server writes, held to the official schema of the version it speaks: the
//! server side's counterpart of [`SchemaValidator::errors`], for the core's server
//! engine, the fixture and the bridge.

use capable_core::{Outbox, ProtocolVersion};
use serde_json::Value;

use super::{assert_recorded, errors_of, kind_of, lines, Kind, SchemaValidator};

impl SchemaValidator {
    /// Every schema violation of one server→client message under `version`: a request
    /// against `ServerRequest` (none exists in 2026-07-28), a notification against
    /// `ServerNotification`, an error against its envelope, a result against its
    /// envelope only (check its `result` with [`SchemaValidator::result_errors`]).
    pub fn server_errors(&self, version: ProtocolVersion, message: &Value) -> Vec<String> {
        let rev = &self.revisions[&version];
        let mut errors = Vec::new();
        let (checks, union) = match kind_of(message) {
            None => {
                return vec![
                    "neither a request, a notification, a result nor an error response".into(),
                ]
            }
            Some(Kind::Request) if rev.server_request.is_empty() => {
                return vec![format!("a server request, which {version} does not have")]
            }
            Some(Kind::Request) => (&rev.server_request, "ServerRequest"),
            Some(Kind::Notification) => (&rev.server_notification, "ServerNotification"),
            Some(Kind::Result) => {
                let (name, v) = &rev.result_envelope;
                return errors_of(name, v, message);
            }
            Some(Kind::Error) => {
                let (name, v) = &rev.error;
                return errors_of(name, v, message);
            }
        };
        for (name, v) in checks {
            errors.extend(errors_of(name, v, message));
        }
        if errors.iter().any(|e| e.starts_with(union)) {
            let method = message["method"].as_str().unwrap_or_default();
            match rev.member_for_method(union, method) {
                Some((name, v)) => errors.extend(errors_of(&name, &v, message)),
                None => errors.push(format!(
                    "{method:?} is not a member of {union} in {version}"
                )),
            }
        }
        errors
    }
}

/// Panics, naming the errors and the message, unless `message` is a valid server→client
/// message under `version` (see [`SchemaValidator::server_errors`]).
#[track_caller]
pub fn assert_valid_from_server(version: ProtocolVersion, message: &Value) {
    let errors = SchemaValidator::get().server_errors(version, message);
    assert!(
        errors.is_empty(),
        "the server wrote a message that is invalid under the {version} schema:\n  {}\nmessage: {message}",
        errors.join("\n  ")
    );
}

/// Drains `out`, validating each line as a server→client message under `version` and
/// holding its record to it; returns the messages.
#[track_caller]
pub fn take_from_server(version: ProtocolVersion, out: &mut Outbox) -> Vec<Value> {
    let messages: Vec<Value> = lines(out)
        .into_iter()
        .map(|line| serde_json::from_slice(line).expect("a JSON line"))
        .collect();
    for message in &messages {
        assert_valid_from_server(version, message);
    }
    assert_eq!(out.count(), messages.len(), "one record per message");
    for ((what, _), message) in out.messages().zip(&messages) {
        assert_recorded(&what, message);
    }
    out.clear();
    messages
}
