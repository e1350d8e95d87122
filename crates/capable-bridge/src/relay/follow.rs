//! The server behind, followed: its notifications (to the host through the engine's
//! table), what the host wants to hear of (kept open at the server in the server's
//! era), its events (to the audit) and its restarts; or the many servers' events.

use capable::events::SessionEvent;
use capable::internal::bridge::follow::Outcome;
use capable::internal::bridge::FollowStep;
use capable::internal::notification::Notification;
use capable::internal::server::{Interest, Phase, Withheld};
use capable::internal::{Era, Method};
use std::sync::Arc;

use capable::{Error, ListenEvent, Session};
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::{json, Value};
use tokio::sync::broadcast;

use capable::host::{HostEvent, ListKind, ServerState};

use super::{Event, Relay, Servers};
use crate::behind::Change;

impl Relay {
    pub(super) fn on_behind(&mut self, change: Change) {
        let Servers::One(behind) = &mut self.servers else {
            return;
        };
        let name = behind.name().to_owned();
        match change {
            Change::Notification(n) => self.notify(&n.kind, &n.params),
            Change::Event(Ok(SessionEvent::Violation(v))) => self.audit.violation(&name, &v),
            Change::Event(Ok(SessionEvent::Notice(n))) => self.audit.server_notice(&name, &n),
            Change::Event(Ok(SessionEvent::Closed(e))) => behind.ended(*e, &mut self.queue),
            Change::Event(Ok(_)) | Change::Event(Err(broadcast::error::RecvError::Closed)) => {}
            Change::Event(Err(broadcast::error::RecvError::Lagged(missed))) => {
                self.audit
                    .record("lagged", json!({"server": name, "missed": missed}));
            }
            Change::Retry => behind.retry(&mut self.queue),
            Change::Connected(connected) => {
                if behind.connected(*connected, &mut self.queue).is_some() {
                    self.restarted();
                }
            }
        }
    }

    /// An event of the many servers behind: their states and lists (the merged view
    /// changed: the host is told), their violations and notices (to the audit), their
    /// notifications (to the host, through the engine's table).
    pub(super) fn on_many(&mut self, event: Result<HostEvent, broadcast::error::RecvError>) {
        let event = match event {
            Ok(event) => event,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                self.audit
                    .record("lagged", json!({"server": "bridge", "missed": missed}));
                return self.lists_changed();
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        match event {
            HostEvent::State { server, state } => {
                let more = match (&state, state.error()) {
                    (ServerState::Restarting { attempt, delay, .. }, Some(error)) => json!({
                        "attempt": attempt, "delayMs": delay.as_millis() as u64,
                        "error": error.to_string(),
                    }),
                    (_, Some(error)) => json!({"error": error.to_string()}),
                    (_, None) => json!({}),
                };
                self.audit.state(&server, state.name(), more);
                if !state.is_ready() {
                    self.server_down(&server);
                }
                self.declare_anew();
                self.lists_changed();
                self.fan_out(&self.core.engine().interest().resource_subscriptions);
            }
            HostEvent::ListChanged { list, .. } => {
                let changed = match list {
                    ListKind::Tools => Notification::ToolsListChanged,
                    ListKind::Resources => {
                        // Who owns which URI may have changed.
                        self.fan_out(&self.core.engine().interest().resource_subscriptions);
                        Notification::ResourcesListChanged
                    }
                    ListKind::Prompts => Notification::PromptsListChanged,
                    _ => return,
                };
                let _ = self.core.notify(&changed, &json!({}));
            }
            HostEvent::ListFailed {
                server,
                list,
                error,
            } => {
                let error = error.to_string();
                self.audit.record(
                    "list_failed",
                    json!({"server": server, "list": list.to_string(), "error": error}),
                );
            }
            HostEvent::Violation { server, violation } => self.audit.violation(&server, &violation),
            HostEvent::Notice { server, notice } => self.audit.server_notice(&server, &notice),
            HostEvent::Notification {
                server,
                notification: n,
            } if n.kind.list_changed().is_none() => self.many_notify(&server, &n),
            other => {
                self.audit.pins(&other);
            }
        }
    }

    /// What the many servers can do together may have changed: a 2026-07-28 host reads
    /// it at its next `server/discover` (a legacy host keeps what `initialize` said;
    /// the engine decides).
    fn declare_anew(&mut self) {
        let config = self.servers.declaration(self.tasks);
        if self
            .core
            .engine_mut()
            .redeclare(config.capabilities, config.instructions)
        {
            let now = &self.core.engine().config().capabilities;
            self.audit
                .record("declared", json!({"server": "bridge", "capabilities": now}));
        }
    }

    /// Every list the host was offered may have changed.
    /// The many servers' config was read anew: the host hears of the lists the new
    /// policy offers otherwise — when its era and declaration let it hear of them (the
    /// servers follow the config on their own, `many/reload.rs`: their states and
    /// lists come back as their events).
    pub(super) fn on_reloaded(&mut self, generation: &crate::reload::Generation) {
        for list in &generation.lists {
            let changed = match list {
                ListKind::Tools => Notification::ToolsListChanged,
                ListKind::Resources => Notification::ResourcesListChanged,
                ListKind::Prompts => Notification::PromptsListChanged,
                _ => continue,
            };
            let _ = self.core.notify(&changed, &json!({}));
        }
    }

    fn lists_changed(&mut self) {
        for list in [
            Notification::ToolsListChanged,
            Notification::ResourcesListChanged,
            Notification::PromptsListChanged,
        ] {
            let _ = self.core.notify(&list, &json!({}));
        }
    }

    /// A notification of the server's, to the host if the engine's table lets it go.
    pub(super) fn notify(&mut self, kind: &Notification, params: &Value) {
        // Its task ids sealed (withheld when one cannot be).
        let Some(params) = self.seal_notification(kind.name(), params) else {
            let why = "a task id in it cannot be sealed";
            return self.audit.withheld(self.servers.name(), kind.name(), &why);
        };
        match self.core.notify(kind, &params) {
            Ok(()) => {}
            // The server's own cancellation of a question it asked the host: its
            // handler ends, and the host is told then (see `Relay::ask_over`).
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
            Err(why) => self.audit.withheld(self.servers.name(), kind.name(), &why),
        }
    }

    /// Keeps what the host wants to hear of open at the server, in the server's era: a
    /// listen stream (2026-07-28), or subscriptions (legacy, for a 2026-07-28 host; a
    /// legacy host's own subscribe requests reach the server as they are). The core's
    /// [`Follow`](capable::internal::bridge::Follow) decides; this carries its steps out.
    pub(super) fn follow(&mut self, interest: Interest) {
        let Some(era) = self.servers.era() else {
            // Many servers: each URI at its own (their lists they tell of themselves).
            self.fan_out(&interest.resource_subscriptions);
            return;
        };
        self.following
            .handle_interest(interest, era, self.host_era());
        self.run_follow();
    }

    /// Runs on the one server behind what the core's follow asks, and carries out its
    /// outcomes.
    fn run_follow(&mut self) {
        let Some(session) = self.servers.one().cloned() else {
            return;
        };
        while let Some(step) = self.following.poll_upstream() {
            match step {
                FollowStep::Listen { token, interest } => {
                    // The new stream replaces the old one (dropped: cancelled there).
                    self.stop_listening();
                    let stream = listen(session.clone(), token, interest);
                    let (stream, stop) = stream::abortable(stream);
                    self.listening = Some(stop);
                    self.queue.follow(stream.boxed());
                }
                FollowStep::StopListening => self.stop_listening(),
                FollowStep::Subscribe(_) | FollowStep::Unsubscribe(_) => {
                    let session = session.clone();
                    self.queue.push(async move {
                        let done = match &step {
                            FollowStep::Subscribe(uri) => session.subscribe(uri).await,
                            FollowStep::Unsubscribe(uri) => session.unsubscribe(uri).await,
                            _ => Ok(()),
                        };
                        Event::Followed(step, done)
                    });
                }
            }
        }
        let server = self.servers.name().to_owned();
        while let Some(outcome) = self.following.poll_outcome() {
            match outcome {
                Outcome::ListenFailed(error) => {
                    self.audit
                        .record("listen_failed", json!({"server": server, "error": error}));
                }
                Outcome::StepFailed { step, error } => {
                    let (method, uri) = match &step {
                        FollowStep::Subscribe(uri) => (Method::Subscribe, uri.as_str()),
                        FollowStep::Unsubscribe(uri) => (Method::Unsubscribe, uri.as_str()),
                        FollowStep::Listen { .. } | FollowStep::StopListening => continue,
                    };
                    self.audit.record(
                        "subscribe_failed",
                        json!({"server": server, "method": method.as_str(), "uri": uri, "error": error}),
                    );
                }
                Outcome::CapabilitiesChanged => {
                    self.audit.record(
                        "capabilities_changed",
                        json!({"server": server, "now": session.capabilities(),
                            "host_has": self.core.engine().config().capabilities}),
                    );
                }
                Outcome::ListsChanged => self.lists_changed(),
            }
        }
    }

    /// Ends the listen stream open at the one server, or opening (dropped: cancelled
    /// there).
    fn stop_listening(&mut self) {
        if let Some(stop) = self.listening.take() {
            stop.abort();
        }
    }

    /// The listen stream under `token` was opened, or failed to.
    pub(super) fn opened(&mut self, token: u64, opened: Result<(), Error>) {
        self.following
            .handle_opened(token, opened.map_err(|e| e.to_string()));
        self.run_follow();
    }

    /// Something on the listen stream under `token`: a notification to the host; its
    /// end told to the core's follow (opened again at the next change of interest).
    pub(super) fn listened(&mut self, token: u64, listened: Result<Option<ListenEvent>, Error>) {
        match listened {
            Ok(Some(ListenEvent::Notification(n))) => self.notify(&n.kind, &n.params),
            Ok(Some(ListenEvent::Acknowledged(_))) => {}
            ended => {
                let error = ended.err().map(|e| e.to_string());
                self.following.handle_ended(token, error);
                self.run_follow();
            }
        }
    }

    /// A subscribe or unsubscribe at the one server ran.
    pub(super) fn followed(&mut self, step: FollowStep, done: Result<(), Error>) {
        self.following
            .handle_stepped(step, done.map_err(|e| e.to_string()));
        self.run_follow();
    }

    /// The host's session and the one server's are held by other replicas too
    /// (sealed sessions, `ClientOptions::with_shared_session`), each forwarding every
    /// `resources/subscribe` and `logging/setLevel` as it came: the server's record of
    /// them is the host's, which this replica need not have seen — the core's rule
    /// ([`ServerConnection::keep_state_upstream`](capable::internal::server::ServerConnection::keep_state_upstream)).
    /// Only for a legacy host of one legacy server (a 2026-07-28 server has no session
    /// to share; many servers are each replica's own).
    pub fn share_with_replicas(&mut self, host: Option<capable::internal::Era>) {
        if host == Some(Era::Legacy) && self.servers.era() == Some(Era::Legacy) {
            self.core.engine_mut().keep_state_upstream();
            // Kept for every replica only where they all reach the one session (HTTP,
            // with a session id): a stdio server is each replica's own.
            self.state_upstream = self.servers.one().is_some_and(|s| s.resumption().is_some());
        }
    }

    /// The host's standalone `GET` opened here (`true`) or ended (`false`): the one
    /// server's standalone stream follows it, so that the replica holding the host's
    /// stream is the one the server sends on (a server keeps one per session). A
    /// session not shared with replicas keeps its stream open throughout.
    pub fn host_listens(&mut self, listens: bool) {
        if self.host_listens == listens {
            return;
        }
        self.host_listens = listens;
        // Only a legacy HTTP session has a standalone stream to follow (a stdio
        // server's messages all come on its one pipe).
        let shared = self.servers.one().filter(|s| s.resumption().is_some());
        if let Some(session) = shared {
            session.set_standalone_stream(listens);
            let state = if listens { "opened" } else { "closed" };
            // Which host's, by the name it gave (several hosts' streams are open at
            // once), cut short.
            let host = match self.core.engine().phase() {
                Phase::Legacy(c) | Phase::Initializing(c) => {
                    Some(c.client_info.name.chars().take(64).collect::<String>())
                }
                _ => None,
            };
            self.audit.record(
                "stream",
                json!({"server": self.servers.name(), "side": "server", "standalone": state,
                       "host": host}),
            );
        }
    }

    /// The server behind came back: what the host listens for is asked again, and the
    /// host hears that the lists it declared may have changed.
    fn restarted(&mut self) {
        let Some(session) = self.servers.one().cloned() else {
            return;
        };
        // A new session of the server's: its stream opens again if the host listens.
        session.set_standalone_stream(self.host_listens);
        let interest = self.core.engine().interest();
        self.core.forget_log_level();
        let eras = (session.era(), self.host_era());
        let offered = &self.core.engine().config().capabilities;
        self.following
            .handle_restarted(interest, eras, session.capabilities(), offered);
        self.run_follow();
    }
}

/// The listen stream at `session` for `interest`, under `token`: [`Event::Opened`] once
/// it is opened (or failed to), then each of its events as [`Event::Listened`], its end
/// the last.
fn listen(session: Arc<Session>, token: u64, interest: Interest) -> BoxStream<'static, Event> {
    let opened = async move { session.listen(&interest).await };
    stream::once(opened)
        .flat_map(move |opened| match opened {
            Ok(listener) => {
                let events = stream::unfold(Some(listener), move |listener| async move {
                    let mut listener = listener?;
                    let event = listener.recv().await;
                    let more = matches!(event, Ok(Some(_)));
                    Some((Event::Listened(token, event), more.then_some(listener)))
                });
                stream::once(async move { Event::Opened(token, Ok(())) })
                    .chain(events)
                    .boxed()
            }
            Err(e) => stream::once(async move { Event::Opened(token, Err(e)) }).boxed(),
        })
        .boxed()
}
