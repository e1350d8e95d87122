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

use crate::jsonrpc::{Payload, RequestId};
use crate::method::Method;
use crate::notification::Notification;
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
        /// What it says, typed.
        notification: Notification,
        /// Its method, as sent.
        method: String,
        /// Its params.
        params: Payload,
    },
}

/// What is read of a notification's params to route it: the stream it names.
#[derive(Deserialize)]
struct Routed {
    #[serde(default, rename = "_meta")]
    meta: Option<Meta>,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(default, rename = "io.modelcontextprotocol/subscriptionId")]
    subscription: Option<Value>,
}

impl<W> Connection<W> {
    /// The notification `method` (read as `notification`) as an event: an item of a
    /// listen stream in flight or its end when it belongs to one, else the host's
    /// [`Event::Notification`].
    pub(super) fn route_listen(
        &mut self,
        notification: Notification,
        method: String,
        params: Payload,
    ) -> Event<W> {
        let hosts = |notification, method, params| Event::Notification {
            notification,
            method,
            params,
        };
        if self.negotiated.era() != Era::Modern {
            return hosts(notification, method, params);
        }
        if let Notification::Cancelled { request_id, reason } = &notification {
            let id = match request_id {
                RequestId::Number(id) => Some(*id),
                _ => None,
            };
            let Some(p) = id
                .filter(|id| self.is_listen(*id))
                .and_then(|id| self.pending.remove(id).map(|p| (id, p)))
            else {
                return hosts(notification, method, params);
            };
            let (id, p) = p;
            self.spares.recycle(p.request);
            return Event::ListenEnded {
                id,
                waiter: p.waiter,
                reason: reason.clone().unwrap_or_default(),
            };
        }
        let stream = match params.decode_or_default::<Option<Routed>>() {
            Ok(Some(routed)) => routed
                .meta
                .and_then(|m| m.subscription)
                .and_then(|id| id.as_i64())
                .filter(|id| self.is_listen(*id)),
            _ => None,
        };
        let Some(id) = stream else {
            return hosts(notification, method, params);
        };
        let item = match notification {
            Notification::SubscriptionsAcknowledged { notifications } => {
                Listened::Acknowledged(notifications)
            }
            notification => Listened::Notification {
                notification,
                method,
                params,
            },
        };
        Event::Listen { id, item }
    }

    /// Whether request `id` is a listen request in flight.
    fn is_listen(&self, id: i64) -> bool {
        self.pending
            .get(id)
            .is_some_and(|p| p.method == Method::Listen)
    }
}
