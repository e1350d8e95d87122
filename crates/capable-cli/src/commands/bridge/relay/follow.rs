//! The server behind, followed: its notifications (to the host through the engine's
//! table), what the host wants to hear of (kept open at the server in the server's
//! era), its events (to the audit) and its restarts.

use std::collections::BTreeSet;

use capable::core::notification::Notification;
use capable::core::server::{Interest, Withheld};
use capable::core::Era;
use capable::events::SessionEvent;
use capable::{Error, ListenEvent, Listener};
use futures_util::FutureExt;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::{Change, Relay};

impl Relay {
    pub(super) fn on_behind(&mut self, change: Change) {
        let name = self.behind.name().to_owned();
        match change {
            Change::Notification(n) => self.notify(&n.kind, &n.params),
            Change::Event(Ok(SessionEvent::Violation(v))) => self.audit.violation(&name, &v),
            Change::Event(Ok(SessionEvent::Notice(n))) => self.audit.server_notice(&name, &n),
            Change::Event(Ok(SessionEvent::Closed(e))) => self.behind.ended(*e),
            Change::Event(Ok(_)) | Change::Event(Err(broadcast::error::RecvError::Closed)) => {}
            Change::Event(Err(broadcast::error::RecvError::Lagged(missed))) => {
                self.audit
                    .record("lagged", json!({"server": name, "missed": missed}));
            }
            Change::Retry => self.behind.retry(),
            Change::Connected(connected) => {
                if self.behind.connected(*connected).is_some() {
                    self.restarted();
                }
            }
        }
    }

    /// A notification of the server's, to the host if the engine's table lets it go.
    pub(super) fn notify(&mut self, kind: &Notification, params: &Value) {
        match self.engine.notify(kind, params, &mut self.out) {
            Ok(()) => {}
            // The server's own cancellation of a question it asked the host: the
            // host's answer will simply not be used.
            Err(Withheld::EngineOnly { .. }) if matches!(kind, Notification::Cancelled { .. }) => {}
            // What the session noticed already (an undeclared notification, an update
            // nobody subscribed to), and ordinary filtering (a log line below the level
            // asked for, nothing listening): not worth a second line.
            Err(
                Withheld::NotDeclared { .. }
                | Withheld::NotSubscribed { .. }
                | Withheld::BelowLevel { .. }
                | Withheld::NoRequest { .. }
                | Withheld::NotListened { .. },
            ) => {}
            Err(why) => self.audit.withheld(self.behind.name(), kind.name(), &why),
        }
    }

    /// Keeps what the host wants to hear of open at the server, in the server's era: a
    /// listen stream (2026-07-28), or subscriptions (legacy, for a 2026-07-28 host; a
    /// legacy host's own subscribe requests reach the server as they are).
    pub(super) fn follow(&mut self, interest: Interest) {
        match self.behind.session().era() {
            Era::Modern => self.listen_for(interest),
            Era::Legacy if self.host_era() == Some(Era::Modern) => self.subscribe_for(interest),
            Era::Legacy => {}
        }
    }

    fn listen_for(&mut self, interest: Interest) {
        if interest == self.listening {
            return;
        }
        self.listening = interest.clone();
        // The new stream replaces the old one once it is open.
        self.listener = None;
        if interest == Interest::default() {
            self.opening = None;
            return;
        }
        let session = self.behind.session().clone();
        self.opening = Some(async move { session.listen(&interest).await }.boxed());
    }

    fn subscribe_for(&mut self, interest: Interest) {
        let wanted: BTreeSet<String> = interest.resource_subscriptions.into_iter().collect();
        let session = self.behind.session().clone();
        for uri in wanted.difference(&self.subscribed) {
            let (session, uri) = (session.clone(), uri.clone());
            self.background.push(
                async move {
                    let _ = session.subscribe(&uri).await;
                }
                .boxed(),
            );
        }
        for uri in self.subscribed.difference(&wanted) {
            let (session, uri) = (session.clone(), uri.clone());
            self.background.push(
                async move {
                    let _ = session.unsubscribe(&uri).await;
                }
                .boxed(),
            );
        }
        self.subscribed = wanted;
    }

    pub(super) fn opened(&mut self, opened: Result<Listener, Error>) {
        match opened {
            Ok(listener) => self.listener = Some(listener),
            Err(e) => self.listen_failed(&e),
        }
    }

    pub(super) fn listened(&mut self, listened: Result<Option<ListenEvent>, Error>) {
        match listened {
            Ok(Some(ListenEvent::Notification(n))) => self.notify(&n.kind, &n.params),
            Ok(Some(ListenEvent::Acknowledged(_))) => {}
            ended => {
                self.listener = None;
                if let Err(e) = ended {
                    self.listen_failed(&e);
                }
                // Opened again on the next change of interest.
                self.listening = Interest::default();
            }
        }
    }

    fn listen_failed(&self, e: &Error) {
        let error = crate::secrets::scrub(&e.to_string()).into_owned();
        self.audit.record(
            "listen_failed",
            json!({"server": self.behind.name(), "error": error}),
        );
    }

    /// The server behind came back: what the host listens for is asked again, and the
    /// host hears that the lists it declared may have changed.
    fn restarted(&mut self) {
        let session = self.behind.session().clone();
        let interest = self.engine.interest();
        self.listening = Interest::default();
        self.subscribed.clear();
        self.log_level = None;
        match (session.era(), self.host_era()) {
            (Era::Legacy, Some(Era::Legacy)) => {
                for uri in interest.resource_subscriptions {
                    let session = session.clone();
                    self.background.push(
                        async move {
                            let _ = session.subscribe(&uri).await;
                        }
                        .boxed(),
                    );
                }
            }
            _ => self.follow(interest),
        }
        if session.capabilities() != &self.engine.config().capabilities {
            self.audit.record(
                "capabilities_changed",
                json!({"server": self.behind.name(), "now": session.capabilities(),
                    "host_has": self.engine.config().capabilities}),
            );
        }
        for list in [
            Notification::ToolsListChanged,
            Notification::ResourcesListChanged,
            Notification::PromptsListChanged,
        ] {
            let _ = self
                .engine
                .notify(&list, &Value::Object(Default::default()), &mut self.out);
        }
    }
}
