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

use capable_core::internal::watch::{WatchAction, WatchEnd, Watcher};
use serde_json::{json, Value};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::broadcast::Receiver;
use tokio::time::Instant;

use crate::error::Error;
use crate::events::SessionEvent;
use crate::read::ResourceRead;
use crate::session::{ListenEvent, Listener, Session};

pub use capable_core::internal::watch::{WatchMode, WatchPolicy};

/// What a watch reports: the core's [`WatchEvent`](capable_core::internal::watch::WatchEvent)
/// with each revision as a [`ResourceRead`].
pub type WatchEvent = capable_core::internal::watch::WatchEvent<ResourceRead>;

/// An open watch on one resource. Call [`Watch::next`] for events and
/// [`Watch::close`] when done (it unsubscribes or closes the listen stream).
pub struct Watch<'s> {
    session: &'s Session,
    watcher: Watcher<ResourceRead>,
    events: Receiver<SessionEvent>,
    listener: Option<Listener>,
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
        let watcher = Watcher::new(uri, policy, self.negotiated(), |m| self.gate(m))
            .map_err(Error::Refused)?;
        Ok(Watch {
            session: self,
            watcher,
            // Before anything is sent: no update can be missed.
            events: self.events(),
            listener: None,
        })
    }
}

fn now() -> std::time::Instant {
    Instant::now().into_std()
}

impl Watch<'_> {
    /// The current mode.
    pub fn mode(&self) -> WatchMode {
        self.watcher.mode()
    }

    /// The URI watched.
    pub fn uri(&self) -> &str {
        self.watcher.uri()
    }

    /// The next event. An `Err` ends the watch (close it still, to unsubscribe).
    pub async fn next(&mut self) -> Result<WatchEvent, Error> {
        loop {
            if let Some(action) = self.watcher.poll_action() {
                self.perform(action).await?;
                continue;
            }
            if let Some(event) = self.watcher.poll_event() {
                return Ok(event);
            }
            match self.watcher.end() {
                Some(WatchEnd::Violation(v)) => return Err(Error::Violation(v.clone())),
                Some(WatchEnd::ListenEnded { reason }) => {
                    return Err(Error::ListenEnded {
                        reason: reason.clone(),
                    })
                }
                None => self.wait().await?,
            }
        }
    }

    /// Ends the watch: `resources/unsubscribe` (legacy subscription) or
    /// `notifications/cancelled` for the listen stream (modern).
    pub async fn close(mut self) -> Result<(), Error> {
        self.watcher.close();
        while let Some(action) = self.watcher.poll_action() {
            self.perform(action).await?;
        }
        Ok(())
    }

    /// Does what the watcher asked, and tells it how that went.
    async fn perform(&mut self, action: WatchAction) -> Result<(), Error> {
        let uri = self.watcher.uri();
        match action {
            WatchAction::Subscribe => match self.session.subscribe(uri).await {
                Ok(()) => self.watcher.handle_subscribed(),
                Err(Error::Violation(v)) => self.watcher.handle_violation(now(), v),
                Err(e) => return Err(e),
            },
            WatchAction::Listen(filter) => {
                self.listener = Some(self.session.listen(&filter).await?);
                self.watcher.handle_listening();
            }
            WatchAction::StopListening => {
                if let Some(listener) = self.listener.take() {
                    listener.close();
                }
            }
            WatchAction::Read => {
                let read = self
                    .session
                    .read_resource_with(uri, capable_core::internal::cache::CachePolicy::Refresh)
                    .await?;
                let (revision, ttl_ms) = (read.revision().clone(), read.ttl_ms);
                self.watcher.handle_read(now(), read, &revision, ttl_ms);
                for notice in self.watcher.take_notices() {
                    self.session.record_notice(notice);
                }
            }
            WatchAction::Unsubscribe => self.session.unsubscribe(uri).await?,
        }
        Ok(())
    }

    /// Waits for what the watcher follows: the listen stream, or the session's events
    /// and the next poll. Between reads the session may end (the server crashed): that
    /// is said then, not at the next read an interval later.
    async fn wait(&mut self) -> Result<(), Error> {
        if let Some(listener) = self.listener.as_mut() {
            let received = listener.recv().await;
            let w = &mut self.watcher;
            match received {
                Ok(Some(ListenEvent::Notification(n))) => w.handle_notification(&n.kind),
                Ok(Some(ListenEvent::Acknowledged(honoured))) => {
                    w.handle_acknowledged(now(), &honoured)
                }
                Ok(None) => w.handle_listen_completed(now()),
                Err(Error::Violation(v)) => w.handle_violation(now(), v),
                Err(Error::ListenEnded { reason }) => w.handle_listen_ended(now(), reason),
                Err(e) => return Err(e),
            }
            return Ok(());
        }
        let timer = self.watcher.poll_timeout();
        let sleep = async {
            match timer {
                Some(at) => tokio::time::sleep_until(Instant::from_std(at)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = sleep => self.watcher.handle_timeout(now()),
            event = self.events.recv() => {
                self.session_event(event)?;
                // A burst of updates is one read: those already queued go with it.
                loop {
                    match self.events.try_recv() {
                        Ok(event) => self.session_event(Ok(event))?,
                        Err(TryRecvError::Lagged(n)) => self.session_event(Err(RecvError::Lagged(n)))?,
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Closed) => return Err(Error::Closed),
                    }
                }
            }
        }
        Ok(())
    }

    /// One of the session's events, for the watcher; the session's end ends the watch.
    fn session_event(&mut self, event: Result<SessionEvent, RecvError>) -> Result<(), Error> {
        match event {
            Ok(SessionEvent::ResourceUpdated { uri }) => self.watcher.handle_update(&uri),
            Ok(SessionEvent::Closed(e)) => return Err(*e),
            Ok(_) => {}
            // Fell behind: an update may be among the lost events.
            Err(RecvError::Lagged(_)) => self.watcher.handle_lagged(),
            Err(RecvError::Closed) => return Err(Error::Closed),
        }
        Ok(())
    }
}

/// A watch event as one JSON object (`capable watch --json` prints one a line):
/// `{"event": "mode", "mode", "uri", "reason", "intervalMs"?}`,
/// `{"event": "revision", "uri", "revision", "readAt", "contents", "ttlMs"?}`, or
/// `{"event": "violation", …}` with the [`Violation`](capable_core::Violation)'s
/// evidence beside it.
pub fn event_json(uri: &str, event: &WatchEvent) -> Value {
    match event {
        WatchEvent::Mode {
            mode,
            reason,
            interval,
        } => {
            let mut v =
                json!({"event": "mode", "mode": mode.as_str(), "uri": uri, "reason": reason});
            if let Some(i) = interval {
                v["intervalMs"] = json!(i.as_millis() as u64);
            }
            v
        }
        WatchEvent::Revision(read) => {
            let mut v = json!({
                "event": "revision",
                "uri": read.uri,
                "revision": read.revision().as_str(),
                "readAt": read.read_at_rfc3339(),
                "contents": read.contents,
            });
            if let Some(ttl) = read.ttl_ms {
                v["ttlMs"] = json!(ttl);
            }
            v
        }
        WatchEvent::Violation(v) => {
            let mut line = serde_json::Map::new();
            line.insert("event".into(), "violation".into());
            if let Ok(Value::Object(evidence)) = serde_json::to_value(v) {
                line.extend(evidence);
            }
            Value::Object(line)
        }
    }
}
