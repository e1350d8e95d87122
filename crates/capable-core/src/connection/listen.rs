//! `subscriptions/listen` streams (modern): which notifications belong to a stream in
//! flight, and when the server ended one.
//!
//! | the server sends | it means |
//! |---|---|
//! | a notification whose `_meta["io.modelcontextprotocol/subscriptionId"]` is the id of a listen request in flight | an item of that stream ([`Event::Listen`]), not one for the host's notification stream |
//! | `notifications/subscriptions/acknowledged` on a stream | the part of the filter the server honours ([`Listened::Acknowledged`]) |
//! | `notifications/cancelled` naming a listen request in flight | the server ended the stream ([`Event::ListenEnded`]): the request is over |
//!
//! Anything else — a subscription id no listen request in flight has, a cancellation of
//! another request, any notification in the legacy era — is the host's, as before.

use serde::Deserialize;
use serde_json::Value;

use crate::jsonrpc::Payload;
use crate::method::Method;
use crate::version::Era;

use super::{Connection, Event};

/// The `_meta` member that names a notification's listen stream.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// What arrived on a listen stream.
#[derive(Clone, Debug)]
pub enum Listened {
    /// `notifications/subscriptions/acknowledged`: the subset of the filter the server
    /// honours (its `notifications`, `null` when absent).
    Acknowledged(Value),
    /// Any other notification on the stream.
    Notification {
        /// Its method.
        method: String,
        /// Its params.
        params: Payload,
    },
}

/// What is read of a notification's params to route it.
#[derive(Deserialize)]
struct Routed {
    #[serde(default, rename = "_meta")]
    meta: Option<Meta>,
    /// `notifications/cancelled`: the request it cancels.
    #[serde(default, rename = "requestId")]
    request_id: Option<Value>,
    /// `notifications/cancelled`: why.
    #[serde(default)]
    reason: Option<Value>,
    /// `notifications/subscriptions/acknowledged`: what is honoured.
    #[serde(default)]
    notifications: Option<Value>,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(default, rename = "io.modelcontextprotocol/subscriptionId")]
    subscription: Option<Value>,
}

impl<W> Connection<W> {
    /// The notification `method` when it belongs to a listen stream in flight: an item
    /// of the stream, or its end. `Err` hands it back, for the host.
    pub(super) fn route_listen(
        &mut self,
        method: String,
        params: Payload,
    ) -> Result<Event<W>, (String, Payload)> {
        if self.negotiated.era() != Era::Modern {
            return Err((method, params));
        }
        let Ok(routed) = params.decode_or_default::<Option<Routed>>() else {
            return Err((method, params));
        };
        let Some(routed) = routed else {
            return Err((method, params));
        };
        if method == "notifications/cancelled" {
            let id = routed.request_id.as_ref().and_then(Value::as_i64);
            return match id.filter(|id| self.is_listen(*id)) {
                Some(id) => {
                    let Some(p) = self.pending.remove(id) else {
                        return Err((method, params));
                    };
                    self.spares.recycle(p.request);
                    let reason = match routed.reason {
                        Some(Value::String(reason)) => reason,
                        _ => String::new(),
                    };
                    Ok(Event::ListenEnded {
                        id,
                        waiter: p.waiter,
                        reason,
                    })
                }
                None => Err((method, params)),
            };
        }
        let stream = routed
            .meta
            .and_then(|m| m.subscription)
            .and_then(|id| id.as_i64())
            .filter(|id| self.is_listen(*id));
        let Some(id) = stream else {
            return Err((method, params));
        };
        let item = match method.as_str() {
            "notifications/subscriptions/acknowledged" => {
                Listened::Acknowledged(routed.notifications.unwrap_or(Value::Null))
            }
            _ => Listened::Notification { method, params },
        };
        Ok(Event::Listen { id, item })
    }

    /// Whether request `id` is a listen request in flight.
    fn is_listen(&self, id: i64) -> bool {
        self.pending
            .get(id)
            .is_some_and(|p| p.method == Method::Listen)
    }
}
