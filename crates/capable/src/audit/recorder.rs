//! The wire recorder: every message the session sent and received, as JSON, so a
//! result is validated exactly as the server wrote it and a finding shows the exact
//! messages as evidence.

use std::sync::{Arc, Mutex};

use capable_core::NotificationMethod;
use serde_json::Value;

use crate::tap::{Direction, Tap};

/// Records every message of a session for [`run`](super::run).
///
/// Install its [`tap`](Recorder::tap) in the [`ClientOptions`](crate::ClientOptions)
/// the session is connected with, before connecting: the audit judges the handshake
/// from the recorded answer, and takes the evidence of every finding from the record.
/// Clones share one record. The record grows with the session, so connect a session
/// for the audit rather than recording a long-lived one.
#[derive(Clone, Default)]
pub struct Recorder(Arc<Mutex<Vec<(Direction, Value)>>>);

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Recorder {
        Recorder::default()
    }

    /// A tap that shows each message to `next` first (the tap the options already had,
    /// such as a `--trace` printer), then records it. A line that is not JSON is not
    /// recorded.
    pub fn tap(&self, next: Option<Tap>) -> Tap {
        let log = self.0.clone();
        Tap::new(move |direction, line| {
            if let Some(next) = &next {
                next.call(direction, line);
            }
            if let Ok(message) = serde_json::from_slice::<Value>(line) {
                if let Ok(mut log) = log.lock() {
                    log.push((direction, message));
                }
            }
        })
    }

    /// How many messages were recorded: a mark for [`exchange`](Self::exchange) and
    /// [`received`](Self::received).
    pub(super) fn len(&self) -> usize {
        self.0.lock().map(|l| l.len()).unwrap_or(0)
    }

    /// The last request for `method` sent since the mark `since`, and the response to
    /// it (`null` for what was not recorded).
    pub(super) fn exchange(&self, method: &str, since: usize) -> (Value, Value) {
        let Ok(log) = self.0.lock() else {
            return (Value::Null, Value::Null);
        };
        let tail = log.get(since..).unwrap_or_default();
        let request = tail
            .iter()
            .rev()
            .find(|(d, m)| *d == Direction::Sent && m["method"] == method && m.get("id").is_some())
            .map(|(_, m)| m.clone())
            .unwrap_or(Value::Null);
        let response = match request.get("id") {
            Some(id) => tail
                .iter()
                .find(|(d, m)| {
                    *d == Direction::Received
                        && m.get("method").is_none()
                        && m.get("id") == Some(id)
                })
                .map(|(_, m)| m.clone())
                .unwrap_or(Value::Null),
            None => Value::Null,
        };
        (request, response)
    }

    /// The first `notification` received since the mark `since`.
    pub(super) fn received(&self, notification: NotificationMethod, since: usize) -> Option<Value> {
        let log = self.0.lock().ok()?;
        log.get(since..)?
            .iter()
            .find(|(d, m)| *d == Direction::Received && m["method"] == notification.as_str())
            .map(|(_, m)| m.clone())
    }
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Recorder({} messages)", self.len())
    }
}
