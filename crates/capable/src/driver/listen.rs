//! The items of `subscriptions/listen` streams (modern), handed to their
//! [`Listener`](crate::Listener)s instead of the session's notification stream. Which
//! notification belongs to which stream, and when the server ended one, the connection
//! decides ([`Event::Listen`](capable_core::Event::Listen),
//! [`Event::ListenEnded`](capable_core::Event::ListenEnded)); this file only moves the
//! item to the listener's channel.

use capable_core::{Listened, Payload};
use serde_json::Value;

use crate::events::ServerNotification;
use crate::session::ListenEvent;

use super::Driver;

/// Hands `item` of the stream of listen request `id` to its listener. A listener
/// that is gone, or too slow to keep up, loses it (counted as dropped).
pub(super) fn deliver(shared: &Driver, id: i64, item: Listened) {
    let event = match item {
        Listened::Acknowledged(honoured) => ListenEvent::Acknowledged(honoured),
        Listened::Notification {
            notification,
            method,
            params,
        } => ListenEvent::Notification(ServerNotification {
            kind: notification,
            method,
            params: params_of(&params),
        }),
    };
    let tx = shared.lock().listeners.get(&id).cloned();
    if tx.is_none_or(|tx| tx.try_send(event).is_err()) {
        shared.dropped_notification();
    }
}

/// A notification's params as JSON (`null` when absent or unreadable).
pub(super) fn params_of(params: &Payload) -> Value {
    params.decode_or_default::<Value>().unwrap_or(Value::Null)
}
