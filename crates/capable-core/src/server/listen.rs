//! What the client wants to hear of, in either era.
//!
//! - A legacy client hears every list change the server declares, and the updates
//!   of the URIs it subscribed to: a `resources/subscribe` takes effect when the
//!   application answers it, a `resources/unsubscribe` likewise.
//! - A 2026-07-28 client opens `subscriptions/listen` streams, which the engine serves
//!   itself: it honours the part of the filter the server declared (each field its
//!   flag), acknowledges it as the stream's first message, and keeps the stream until
//!   the client cancels it or the application ends it ([`ServerConnection::end_listen`]).
//!
//! [`ServerConnection::interest`] is the union of it all: what a server that relays
//! another (a bridge) must itself listen for upstream.

use serde::Deserialize;
use serde_json::json;

use crate::capabilities::{Capability, Flag};
use crate::connection::SUBSCRIPTION_ID;
use crate::gating::ListenFilter;
use crate::jsonrpc::{codes, Payload, RequestId};
use crate::model::{self, ListenFilterWire};
use crate::notification::{Notification, NotificationMethod};
use crate::outbox::Outbox;
use crate::version::Era;

use super::{error, ClientNotice, Event, ServerConnection};

/// What the client wants to hear of: list changes by list, and the resources whose
/// updates it wants (see [`ServerConnection::interest`]).
pub type Interest = ListenFilter;

/// One open listen stream: the listen request's id, and the filter honoured.
#[derive(Debug)]
pub(super) struct Listen {
    pub(super) id: RequestId,
    filter: ListenFilter,
}

impl Listen {
    /// Whether `notification` belongs on this stream.
    pub(super) fn wants(&self, notification: &Notification) -> bool {
        let f = &self.filter;
        match notification {
            Notification::ToolsListChanged => f.tools_list_changed,
            Notification::PromptsListChanged => f.prompts_list_changed,
            Notification::ResourcesListChanged => f.resources_list_changed,
            Notification::ResourceUpdated { uri } => f
                .resource_subscriptions
                .iter()
                .any(|s| model::is_same_or_sub_resource(uri, s)),
            _ => false,
        }
    }
}

/// `subscriptions/listen` params, as a server reads them.
#[derive(Deserialize)]
struct ListenIn {
    #[serde(default)]
    notifications: FilterIn,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FilterIn {
    #[serde(default)]
    tools_list_changed: bool,
    #[serde(default)]
    prompts_list_changed: bool,
    #[serde(default)]
    resources_list_changed: bool,
    #[serde(default)]
    resource_subscriptions: Vec<String>,
}

impl<W> ServerConnection<W> {
    /// Opens a listen stream for request `id` (see the module documentation).
    pub(super) fn on_listen(
        &mut self,
        id: RequestId,
        params: &Payload,
        out: &mut Outbox,
    ) -> Event<W> {
        let asked = match params.decode::<ListenIn>() {
            Ok(p) => p.notifications,
            Err(e) => {
                let e = error(
                    codes::INVALID_PARAMS,
                    format!("invalid subscriptions/listen: {e}"),
                );
                self.refuse(&id, "subscriptions/listen", e, out);
                return Event::Handled;
            }
        };
        let caps = &self.config.capabilities;
        let resource_subscriptions = match caps.has_flag(Capability::Resources, Flag::Subscribe) {
            true => self.subscribable_of(asked.resource_subscriptions),
            false => Vec::new(),
        };
        let caps = &self.config.capabilities;
        let has = |c, f| caps.has_flag(c, f);
        let filter = ListenFilter {
            tools_list_changed: asked.tools_list_changed
                && has(Capability::Tools, Flag::ListChanged),
            prompts_list_changed: asked.prompts_list_changed
                && has(Capability::Prompts, Flag::ListChanged),
            resources_list_changed: asked.resources_list_changed
                && has(Capability::Resources, Flag::ListChanged),
            resource_subscriptions,
        };
        let ack = json!({
            "notifications": ListenFilterWire::from(&filter),
            "_meta": {SUBSCRIPTION_ID: id},
        });
        out.write_related(
            NotificationMethod::SubscriptionsAcknowledged.as_str(),
            Some(&ack),
            &id,
        );
        self.listens.push(Listen { id, filter });
        Event::Interest(self.interest())
    }

    /// The URIs of `asked` a listen stream may hold; those left out are a notice.
    fn subscribable_of(&mut self, asked: Vec<String>) -> Vec<String> {
        let Some(subscribable) = &self.subscribable else {
            return asked;
        };
        let (honoured, left): (Vec<String>, Vec<String>) =
            asked.into_iter().partition(|uri| subscribable(uri));
        if !left.is_empty() {
            self.notices
                .push(ClientNotice::NotSubscribable { uris: left });
        }
        honoured
    }

    /// The client cancelled request `id`: if it was a listen stream, the stream ends
    /// (returns whether it was one).
    pub(super) fn cancel_listen(&mut self, id: &RequestId) -> bool {
        let before = self.listens.len();
        self.listens.retain(|l| l.id != *id);
        self.listens.len() != before
    }

    /// Ends the listen stream of request `id` from the server's side, with the result
    /// that closes it gracefully (`resultType: "complete"`, tagged with its id).
    /// Returns whether there was such a stream.
    pub fn end_listen(&mut self, id: &RequestId, out: &mut Outbox) -> bool {
        if !self.cancel_listen(id) {
            return false;
        }
        let result = json!({"resultType": "complete", "_meta": {SUBSCRIPTION_ID: id}});
        out.write_result(id, &result);
        true
    }

    /// The listen streams open, by the id of the request that opened each.
    pub fn listen_streams(&self) -> impl Iterator<Item = &RequestId> {
        self.listens.iter().map(|l| &l.id)
    }

    /// Everything the client wants to hear of now: a legacy client every list change
    /// the server declares and the updates of the URIs it subscribed to; a 2026-07-28
    /// client the union of its listen streams' filters.
    pub fn interest(&self) -> Interest {
        match self.phase.era() {
            Some(Era::Legacy) => {
                let caps = &self.config.capabilities;
                let list = |c| caps.has_flag(c, Flag::ListChanged);
                ListenFilter {
                    tools_list_changed: list(Capability::Tools),
                    prompts_list_changed: list(Capability::Prompts),
                    resources_list_changed: list(Capability::Resources),
                    resource_subscriptions: self.subscriptions.iter().cloned().collect(),
                }
            }
            Some(Era::Modern) => {
                let mut union = ListenFilter::default();
                // Each URI once, in the order first asked; in linear time, however many
                // URIs a client names (a host controls this list).
                let mut seen = std::collections::HashSet::new();
                for l in &self.listens {
                    let f = &l.filter;
                    union.tools_list_changed |= f.tools_list_changed;
                    union.prompts_list_changed |= f.prompts_list_changed;
                    union.resources_list_changed |= f.resources_list_changed;
                    for uri in &f.resource_subscriptions {
                        if seen.insert(uri.as_str()) {
                            union.resource_subscriptions.push(uri.clone());
                        }
                    }
                }
                union
            }
            None => ListenFilter::default(),
        }
    }
}
