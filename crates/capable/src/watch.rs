//! Watching a resource: its revisions over time, using only what the server declared
//! or an explicit re-read policy from the caller.
//!
//! [`Session::watch`] chooses the mode from the negotiated capabilities alone:
//!
//! | negotiated | mode |
//! |---|---|
//! | legacy, `resources.subscribe: true` | [`WatchMode::Subscribe`]: `resources/subscribe`, re-read on `notifications/resources/updated`, `resources/unsubscribe` on [`Watch::close`] |
//! | modern, `resources.subscribe: true` | [`WatchMode::Listen`]: `subscriptions/listen` with `resourceSubscriptions: [uri]`, re-read on each update; closing sends `notifications/cancelled` |
//! | anything else, with [`WatchPolicy::poll`] | [`WatchMode::Poll`]: re-read every interval (modern: never sooner than the last read's `ttlMs`) |
//! | anything else, no policy | refused: [`Error::Refused`], nothing sent |
//!
//! The first [`WatchEvent::Revision`] is the current state; later ones are reported only
//! when the revision actually changed. If the server breaks its declaration (answers
//! the subscription method with -32601), the watch yields [`WatchEvent::Violation`]
//! with the evidence and then either falls back to the caller's poll policy (a new
//! [`WatchEvent::Mode`]) or ends with [`Error::Violation`]. The refused method is never
//! sent again in the session.

use std::collections::VecDeque;
use std::time::Duration;

use capable_core::gating::{self, ListenFilter};
use capable_core::{Capability, Era, Flag, Method, Revision, Violation};
use serde::Serialize;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::broadcast::Receiver;
use tokio::time::Instant;

use crate::error::Error;
use crate::events::SessionEvent;
use crate::read::ResourceRead;
use crate::session::{ListenEvent, Listener, Session};

/// What the caller allows beyond the server's own subscriptions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WatchPolicy {
    /// Re-read every this long when the server offers no subscription (or breaks the
    /// one it declared). `None`: never poll.
    pub poll: Option<Duration>,
}

impl WatchPolicy {
    /// Follow the server's subscriptions only.
    pub fn subscriptions_only() -> WatchPolicy {
        WatchPolicy { poll: None }
    }

    /// Subscriptions when declared, else re-read every `interval`.
    pub fn poll(interval: Duration) -> WatchPolicy {
        WatchPolicy {
            poll: Some(interval),
        }
    }
}

/// How a watch learns about changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WatchMode {
    /// Legacy `resources/subscribe` + `notifications/resources/updated`.
    Subscribe,
    /// Modern `subscriptions/listen` with `resourceSubscriptions`.
    Listen,
    /// Re-reading on the caller's schedule.
    Poll,
}

impl WatchMode {
    /// `subscribe`, `listen` or `poll`.
    pub fn as_str(self) -> &'static str {
        match self {
            WatchMode::Subscribe => "subscribe",
            WatchMode::Listen => "listen",
            WatchMode::Poll => "poll",
        }
    }
}

/// What a watch reports.
#[derive(Clone, Debug)]
pub enum WatchEvent {
    /// The watch (now) works this way.
    Mode {
        /// The mode.
        mode: WatchMode,
        /// Why, in words (what was declared, or what broke).
        reason: String,
        /// Poll mode: the caller's interval.
        interval: Option<Duration>,
    },
    /// A revision of the resource: the first is the current state, later ones differ
    /// from the one before.
    Revision(ResourceRead),
    /// The server declared the subscription capability and refused its method.
    Violation(Box<Violation>),
}

enum Phase {
    Start,
    Running,
}

/// An open watch on one resource. Call [`Watch::next`] for events and
/// [`Watch::close`] when done (it unsubscribes or closes the listen stream).
pub struct Watch<'s> {
    session: &'s Session,
    uri: String,
    policy: WatchPolicy,
    mode: WatchMode,
    phase: Phase,
    queue: VecDeque<WatchEvent>,
    failure: Option<Error>,
    last: Option<Revision>,
    events: Receiver<SessionEvent>,
    subscribed: bool,
    listener: Option<Listener>,
    next_poll: Option<Instant>,
    poll_wait: Duration,
}

impl Session {
    /// Watches `uri`: see the [module documentation](crate::watch). Fails with
    /// [`Error::Refused`] (nothing sent) when the server declared no `resources`, or
    /// declared no `resources.subscribe` and `policy` has no poll interval.
    ///
    /// ```no_run
    /// # async fn f(session: &capable::Session) -> Result<(), capable::Error> {
    /// use std::time::Duration;
    /// use capable::{WatchEvent, WatchPolicy};
    /// // The server's subscription when it declares one, else a re-read every 5 s.
    /// let mut watch = session.watch("docs://manual/current", WatchPolicy::poll(Duration::from_secs(5)))?;
    /// for _ in 0..3 {
    ///     match watch.next().await? {
    ///         WatchEvent::Mode { mode, reason, .. } => println!("{} — {reason}", mode.as_str()),
    ///         WatchEvent::Revision(read) => println!("{} at {}", read.revision(), read.read_at_rfc3339()),
    ///         WatchEvent::Violation(v) => eprintln!("{v}"), // then the fallback's Mode event
    ///     }
    /// }
    /// watch.close().await?; // unsubscribes, or closes the listen stream
    /// # Ok(()) }
    /// ```
    pub fn watch(&self, uri: &str, policy: WatchPolicy) -> Result<Watch<'_>, Error> {
        self.check(Method::ReadResource)?;
        let (version, caps) = (self.protocol_version(), self.capabilities());
        let declared = caps.has_flag(Capability::Resources, Flag::Subscribe);
        let (method, refusal) = match self.era() {
            Era::Legacy => (
                Method::Subscribe,
                gating::check(Method::Subscribe, version, caps).err(),
            ),
            Era::Modern => (
                Method::Listen,
                gating::check_listen(&listen_filter(uri), version, caps).err(),
            ),
        };
        let broken = self.check(method).err();
        let mode = match (declared, broken, policy.poll) {
            (true, None, _) if self.era() == Era::Legacy => WatchMode::Subscribe,
            (true, None, _) => WatchMode::Listen,
            (_, _, Some(_)) => WatchMode::Poll,
            (true, Some(broken), None) => return Err(broken),
            (false, _, None) => {
                return Err(refusal.map(Error::Refused).unwrap_or(Error::Refused(
                    capable_core::Refusal::CapabilityNotDeclared {
                        method,
                        capability: Capability::Resources,
                    },
                )))
            }
        };
        Ok(Watch {
            session: self,
            uri: uri.to_owned(),
            policy,
            mode,
            phase: Phase::Start,
            queue: VecDeque::new(),
            failure: None,
            last: None,
            // Before anything is sent: no update can be missed.
            events: self.events(),
            subscribed: false,
            listener: None,
            next_poll: None,
            poll_wait: policy.poll.unwrap_or(Duration::from_secs(1)),
        })
    }
}

fn listen_filter(uri: &str) -> ListenFilter {
    ListenFilter {
        resource_subscriptions: vec![uri.to_owned()],
        ..Default::default()
    }
}

/// The instant `wait` from now, saturating: no interval, however long, overflows.
fn after(wait: Duration) -> Instant {
    Instant::from_std(capable_core::time::deadline(
        Instant::now().into_std(),
        wait,
    ))
}

/// Whether an update for `uri` concerns the `watched` resource (it may name a
/// sub-resource of it).
fn concerns(uri: &str, watched: &str) -> bool {
    capable_core::model::is_same_or_sub_resource(uri, watched)
}

impl Watch<'_> {
    /// The current mode.
    pub fn mode(&self) -> WatchMode {
        self.mode
    }

    /// The URI watched.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The next event. An `Err` ends the watch (close it still, to unsubscribe).
    pub async fn next(&mut self) -> Result<WatchEvent, Error> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Ok(event);
            }
            if let Some(e) = self.failure.take() {
                return Err(e);
            }
            match self.phase {
                Phase::Start => {
                    self.phase = Phase::Running;
                    self.start().await?;
                }
                Phase::Running => self.wait().await?,
            }
        }
    }

    /// Ends the watch: `resources/unsubscribe` (legacy subscription) or
    /// `notifications/cancelled` for the listen stream (modern).
    pub async fn close(mut self) -> Result<(), Error> {
        if let Some(listener) = self.listener.take() {
            listener.close();
        }
        if self.subscribed {
            self.subscribed = false;
            self.session.unsubscribe(&self.uri).await?;
        }
        Ok(())
    }

    fn mode_event(&mut self, mode: WatchMode, reason: String) {
        self.mode = mode;
        let interval = (mode == WatchMode::Poll).then_some(self.poll_wait);
        self.queue.push_back(WatchEvent::Mode {
            mode,
            reason,
            interval,
        });
    }

    async fn start(&mut self) -> Result<(), Error> {
        let declared = self
            .session
            .capabilities()
            .declared_value(Capability::Resources)
            .map(|v| format!("\"resources\": {v}"))
            .unwrap_or_default();
        match self.mode {
            WatchMode::Subscribe => {
                self.mode_event(
                    WatchMode::Subscribe,
                    format!("the server declared {declared}: resources/subscribe"),
                );
                match self.session.subscribe(&self.uri).await {
                    Ok(()) => self.subscribed = true,
                    Err(Error::Violation(v)) => {
                        self.broken(v)?;
                        if self.failure.is_some() {
                            // No fallback allowed: nothing more is sent.
                            return Ok(());
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
            WatchMode::Listen => {
                self.mode_event(
                    WatchMode::Listen,
                    format!(
                        "the server declared {declared}: subscriptions/listen with resourceSubscriptions"
                    ),
                );
                self.listener = Some(self.session.listen(&listen_filter(&self.uri)).await?);
            }
            WatchMode::Poll => {
                let reason = match self.session.check(match self.session.era() {
                    Era::Legacy => Method::Subscribe,
                    Era::Modern => Method::Listen,
                }) {
                    Err(Error::Refused(capable_core::Refusal::MarkedBroken { method })) => format!(
                        "{method} was refused earlier in this session; re-reading as the caller asked"
                    ),
                    _ => format!(
                        "the server declared {declared} (no subscribe); re-reading as the caller asked"
                    ),
                };
                self.mode_event(WatchMode::Poll, reason);
            }
        }
        self.reread().await
    }

    /// The server broke its declaration: report it, then the explicit fallback or the
    /// end.
    fn broken(&mut self, v: Box<Violation>) -> Result<(), Error> {
        self.queue.push_back(WatchEvent::Violation(v.clone()));
        self.listener = None;
        self.subscribed = false;
        match self.policy.poll {
            Some(_) => {
                self.mode_event(
                    WatchMode::Poll,
                    format!(
                        "{} is broken on this server ({} {} declared `{}`); falling back to the caller's re-read policy",
                        v.method, v.server.name, v.server.version, v.capability
                    ),
                );
                self.next_poll = self.last.is_some().then(|| after(self.poll_wait));
                Ok(())
            }
            None => {
                self.failure = Some(Error::Violation(v));
                Ok(())
            }
        }
    }

    /// The stream the server offered ended; poll if allowed.
    fn stream_ended(&mut self, why: Error) -> Result<(), Error> {
        self.listener = None;
        match self.policy.poll {
            Some(_) => {
                self.mode_event(
                    WatchMode::Poll,
                    format!("{why}; falling back to the caller's re-read policy"),
                );
                self.next_poll = Some(after(self.poll_wait));
                Ok(())
            }
            None => Err(why),
        }
    }

    async fn reread(&mut self) -> Result<(), Error> {
        // A watch decides itself when to read again (never sooner than the ttl): each
        // read goes to the server.
        let read = self
            .session
            .read_resource_with(&self.uri, capable_core::cache::CachePolicy::Refresh)
            .await?;
        if self.mode == WatchMode::Poll {
            // Never sooner than the server says the content stays fresh (a TTL is
            // capped at a day: a server's `1e30` cannot stall the watch for ever).
            let ttl = read.ttl().unwrap_or_default();
            if let Some(ttl_ms) = read.ttl_ms.filter(|_| ttl == capable_core::time::MAX_TTL) {
                if ttl_ms > capable_core::time::MAX_TTL.as_millis() as f64 {
                    self.session
                        .record_notice(capable_core::Notice::TtlCapped { ttl_ms });
                }
            }
            let wait = self.policy.poll.unwrap_or(self.poll_wait).max(ttl);
            self.poll_wait = wait;
            self.next_poll = Some(after(wait));
        }
        if self.last.as_ref() != Some(read.revision()) {
            self.last = Some(read.revision().clone());
            self.queue.push_back(WatchEvent::Revision(read));
        }
        Ok(())
    }

    /// Takes every event already queued: updates are covered by the re-read that
    /// follows; the session's end is returned.
    fn drain_events(&mut self) -> Result<(), Error> {
        use tokio::sync::broadcast::error::TryRecvError;
        loop {
            match self.events.try_recv() {
                Ok(SessionEvent::Closed(e)) => return Err(*e),
                Ok(_) | Err(TryRecvError::Lagged(_)) => {}
                Err(TryRecvError::Empty) => return Ok(()),
                Err(TryRecvError::Closed) => return Err(Error::Closed),
            }
        }
    }

    async fn wait(&mut self) -> Result<(), Error> {
        match self.mode {
            WatchMode::Poll => {
                if let Some(at) = self.next_poll {
                    // Between reads the session may end (the server crashed): say so
                    // then, not at the next read an interval later.
                    let sleep = tokio::time::sleep_until(at);
                    tokio::pin!(sleep);
                    loop {
                        tokio::select! {
                            () = &mut sleep => break,
                            event = self.events.recv() => match event {
                                Ok(SessionEvent::Closed(e)) => return Err(*e),
                                Err(RecvError::Closed) => return Err(Error::Closed),
                                Ok(_) | Err(RecvError::Lagged(_)) => {}
                            },
                        }
                    }
                }
                self.reread().await
            }
            WatchMode::Subscribe => loop {
                match self.events.recv().await {
                    Ok(SessionEvent::ResourceUpdated { uri }) if concerns(&uri, &self.uri) => {
                        // A burst of updates is one re-read: those already queued are
                        // taken with it (later ones cause the next).
                        self.drain_events()?;
                        return self.reread().await;
                    }
                    Ok(SessionEvent::Closed(e)) => return Err(*e),
                    Ok(_) => {}
                    // Fell behind: an update may be among the lost events.
                    Err(RecvError::Lagged(_)) => return self.reread().await,
                    Err(RecvError::Closed) => return Err(Error::Closed),
                }
            },
            WatchMode::Listen => {
                let Some(listener) = self.listener.as_mut() else {
                    return Err(Error::Closed);
                };
                match listener.recv().await {
                    Ok(Some(ListenEvent::Notification(n)))
                        if n.method == "notifications/resources/updated" =>
                    {
                        let uri = n.params.get("uri").and_then(|u| u.as_str()).unwrap_or("");
                        if concerns(uri, &self.uri) {
                            return self.reread().await;
                        }
                        Ok(())
                    }
                    Ok(Some(ListenEvent::Acknowledged(ack))) => {
                        let honoured = ack
                            .get("resourceSubscriptions")
                            .and_then(|s| s.as_array())
                            .is_some_and(|s| s.iter().any(|u| u.as_str() == Some(&self.uri)));
                        if honoured {
                            Ok(())
                        } else {
                            self.stream_ended(Error::ListenEnded {
                                reason: format!(
                                    "the server acknowledged the subscription without {} ({ack})",
                                    self.uri
                                ),
                            })
                        }
                    }
                    Ok(Some(_)) => Ok(()),
                    Ok(None) => self.stream_ended(Error::ListenEnded {
                        reason: "it completed the listen request".into(),
                    }),
                    Err(Error::Violation(v)) => self.broken(v),
                    Err(e @ Error::ListenEnded { .. }) => self.stream_ended(e),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::concerns;

    #[test]
    fn updates_concern_the_uri_and_its_sub_resources() {
        assert!(concerns("docs://a", "docs://a"));
        assert!(concerns("docs://a/b", "docs://a"));
        assert!(concerns("docs://a#x", "docs://a"));
        assert!(!concerns("docs://ab", "docs://a"));
        assert!(!concerns("docs://b", "docs://a"));
    }
}
