//! The notifications of `subscriptions/listen` streams (modern), handed to their
//! [`Listener`](crate::Listener)s instead of the session's notification stream: each
//! carries its stream's id as `_meta["io.modelcontextprotocol/subscriptionId"]`. On
//! stdio a server may also end a stream by cancelling the listen request.

use capable_core::Payload;
use serde_json::Value;

use crate::error::Error;
use crate::events::ServerNotification;
use crate::session::ListenEvent;

use super::Driver;

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Delivers a notification that belongs to a listen stream to its listener; returns it
/// when it belongs to none.
pub(super) fn route(shared: &Driver, n: ServerNotification) -> Option<ServerNotification> {
    if n.method == "notifications/cancelled" {
        let id = n.params.get("requestId").and_then(Value::as_i64)?;
        let mut st = shared.lock();
        if st.listeners.remove(&id).is_some() {
            if let Some(w) = st.conn.forget(id) {
                let reason = n
                    .params
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let waker = st.finish(w, Err(Error::ListenEnded { reason }));
                drop(st);
                super::wake_all([waker]);
            }
            return None;
        }
        drop(st);
        return Some(n);
    }
    let id = n
        .params
        .get("_meta")
        .and_then(|m| m.get(SUBSCRIPTION_ID))
        .and_then(Value::as_i64);
    let Some(id) = id else { return Some(n) };
    let tx = shared.lock().listeners.get(&id).cloned();
    match tx {
        Some(tx) => {
            let event = if n.method == "notifications/subscriptions/acknowledged" {
                ListenEvent::Acknowledged(
                    n.params
                        .get("notifications")
                        .cloned()
                        .unwrap_or(Value::Null),
                )
            } else {
                ListenEvent::Notification(n)
            };
            if tx.try_send(event).is_err() {
                shared.dropped_notification();
            }
            None
        }
        None => Some(n),
    }
}

/// A notification's params as JSON (`null` when absent or unreadable).
pub(super) fn params_of(params: &Payload) -> Value {
    params.decode_or_default::<Value>().unwrap_or(Value::Null)
}
