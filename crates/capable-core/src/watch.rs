//! Watching a resource, as a decision with no I/O and no clock: which mode, what to
//! send next, when to read again, what to report, and what happens when the server
//! breaks the subscription it declared.
//!
//! [`Watcher::new`] chooses the mode from the negotiated capabilities alone:
//!
//! | negotiated | mode |
//! |---|---|
//! | legacy, `resources.subscribe: true` | [`WatchMode::Subscribe`]: `resources/subscribe`, a read on each `notifications/resources/updated`, `resources/unsubscribe` on close |
//! | modern, `resources.subscribe: true` | [`WatchMode::Listen`]: `subscriptions/listen` with `resourceSubscriptions: [uri]`, a read on each update; closing ends the stream |
//! | anything else, with [`WatchPolicy::poll`] | [`WatchMode::Poll`]: a read every interval (modern: never sooner than the last read's `ttlMs`) |
//! | anything else, no policy | refused ([`Refusal`]), nothing sent |
//!
//! The first [`WatchEvent::Revision`] is the current state; later ones only when the
//! revision changed. If the server breaks its declaration (answers the subscription
//! method with -32601, [`Watcher::handle_violation`]), the watch reports
//! [`WatchEvent::Violation`] and then either falls back to the caller's poll policy
//! (a new [`WatchEvent::Mode`]) or ends with [`WatchEnd::Violation`]. A listen stream
//! the server ends, or acknowledges without the URI, falls back the same way or ends
//! with [`WatchEnd::ListenEnded`].
//!
//! The caller (the shell) drives it the way quinn-proto's users drive a connection:
//!
//! 1. perform every [`Watcher::poll_action`] (subscribe, listen, read, stop listening)
//!    and report its outcome (`handle_subscribed`, `handle_read`, …);
//! 2. hand over every [`Watcher::poll_event`];
//! 3. once [`Watcher::end`] says so, stop;
//! 4. otherwise wait for an update, a listen-stream event, or the time
//!    [`Watcher::poll_timeout`] names, and report it (`handle_update`,
//!    `handle_notification`, `handle_timeout`, …).
//!
//! A burst of updates is one read: an update while a read is already due adds none.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use capable_core::internal::watch::{WatchAction, WatchEvent, WatchMode, WatchPolicy, Watcher};
//! # use capable_core::{model::Implementation, Negotiated, ProtocolVersion, ServerCapabilities};
//! # let negotiated = Negotiated {
//! #     version: ProtocolVersion::V2025_11_25,
//! #     server_info: Implementation::new("docs", "1.0"),
//! #     capabilities: ServerCapabilities::from_value(serde_json::json!({"resources": {}})),
//! #     instructions: None,
//! #     server_versions: Vec::new(),
//! # };
//! // A server with `resources: {}` (no subscribe) and a poll policy of 5 s.
//! let policy = WatchPolicy::poll(Duration::from_secs(5));
//! let mut w: Watcher<&str> = Watcher::new("docs://a", policy, &negotiated, |_| Ok(())).unwrap();
//! assert_eq!(w.mode(), WatchMode::Poll);
//! assert_eq!(w.poll_action(), Some(WatchAction::Read));
//! let t0 = Instant::now();
//! # let revision = capable_core::Revision::of(&[]);
//! w.handle_read(t0, "the first read", &revision, None);
//! assert!(matches!(w.poll_event(), Some(WatchEvent::Mode { mode: WatchMode::Poll, .. })));
//! assert!(matches!(w.poll_event(), Some(WatchEvent::Revision("the first read"))));
//! // Nothing to do until the interval has passed.
//! assert_eq!(w.poll_timeout(), Some(t0 + Duration::from_secs(5)));
//! w.handle_timeout(t0 + Duration::from_secs(5));
//! assert_eq!(w.poll_action(), Some(WatchAction::Read));
//! ```

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::capabilities::{Capability, Flag};
use crate::gating::{self, ListenFilter, Refusal};
use crate::method::Method;
use crate::negotiation::Negotiated;
use crate::notice::Notice;
use crate::notification::Notification;
use crate::revision::Revision;
use crate::version::Era;
use crate::violation::Violation;
use crate::{model, time};

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

/// What a watch reports; `R` is the read the caller handed in
/// ([`Watcher::handle_read`]).
#[derive(Clone, Debug)]
pub enum WatchEvent<R> {
    /// The watch (now) works this way.
    Mode {
        /// The mode.
        mode: WatchMode,
        /// Why, in words (what was declared, or what broke).
        reason: String,
        /// Poll mode: the interval.
        interval: Option<Duration>,
    },
    /// A revision of the resource: the first is the current state, later ones differ
    /// from the one before.
    Revision(R),
    /// The server declared the subscription capability and refused its method.
    Violation(Box<Violation>),
}

/// What the caller is to do for the watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchAction {
    /// Send `resources/subscribe` for the URI, then call
    /// [`Watcher::handle_subscribed`] (or [`Watcher::handle_violation`]).
    Subscribe,
    /// Open `subscriptions/listen` with this filter, then call
    /// [`Watcher::handle_listening`].
    Listen(ListenFilter),
    /// Let the listen stream go (ending it, when the server has not).
    StopListening,
    /// Read the resource from the server (never from a cache: the watch decides
    /// itself when to read), then call [`Watcher::handle_read`].
    Read,
    /// Send `resources/unsubscribe` for the URI (on close).
    Unsubscribe,
}

/// Why a watch ended by its own rules.
#[derive(Clone, Debug, PartialEq)]
pub enum WatchEnd {
    /// The server broke its subscription and the caller allowed no fallback.
    Violation(Box<Violation>),
    /// The server ended the listen stream (or acknowledged it without the URI) and the
    /// caller allowed no fallback.
    ListenEnded {
        /// Why, in words.
        reason: String,
    },
}

/// The state of one watch. See the module documentation.
#[derive(Debug)]
pub struct Watcher<R> {
    uri: String,
    policy: WatchPolicy,
    mode: WatchMode,
    /// Why the first mode, in words.
    start_reason: String,
    started: bool,
    actions: VecDeque<WatchAction>,
    /// An action taken whose outcome is not handed back yet (a subscribe, a listen, a
    /// read): the events it leads to come after it.
    awaiting: bool,
    events: VecDeque<WatchEvent<R>>,
    end: Option<WatchEnd>,
    last: Option<Revision>,
    next_read: Option<Instant>,
    /// The interval polling uses now (the policy's, or longer for a `ttlMs`).
    poll_wait: Duration,
    listening: bool,
    subscribed: bool,
    notices: Vec<Notice>,
}

/// The `subscriptions/listen` filter of a watch on `uri`.
pub fn listen_filter(uri: &str) -> ListenFilter {
    ListenFilter {
        resource_subscriptions: vec![uri.to_owned()],
        ..Default::default()
    }
}

impl<R> Watcher<R> {
    /// A watch on `uri`, its mode chosen from what was `negotiated` (see the module
    /// documentation); `check` is the session's gate (the gating table, its policy,
    /// and the methods marked broken). Refused, nothing to send, when the server
    /// declared no `resources`, or no `resources.subscribe` and `policy` has no poll
    /// interval.
    pub fn new(
        uri: &str,
        policy: WatchPolicy,
        negotiated: &Negotiated,
        check: impl Fn(Method) -> Result<(), Refusal>,
    ) -> Result<Watcher<R>, Refusal> {
        check(Method::ReadResource)?;
        let (version, caps) = (negotiated.version, &negotiated.capabilities);
        let declared = caps.has_flag(Capability::Resources, Flag::Subscribe);
        let era = negotiated.era();
        let (method, refusal) = match era {
            Era::Legacy => (
                Method::Subscribe,
                gating::check(Method::Subscribe, version, caps).err(),
            ),
            Era::Modern => (
                Method::Listen,
                gating::check_listen(&listen_filter(uri), version, caps).err(),
            ),
        };
        let broken = check(method).err();
        let mode = match (declared, &broken, policy.poll) {
            (true, None, _) if era == Era::Legacy => WatchMode::Subscribe,
            (true, None, _) => WatchMode::Listen,
            (_, _, Some(_)) => WatchMode::Poll,
            (true, Some(broken), None) => return Err(broken.clone()),
            (false, _, None) => {
                return Err(refusal.unwrap_or(Refusal::CapabilityNotDeclared {
                    method,
                    capability: Capability::Resources,
                }))
            }
        };
        let declared = caps
            .declared_value(Capability::Resources)
            .map(|v| format!("\"resources\": {v}"))
            .unwrap_or_default();
        let start_reason = match (mode, broken) {
            (WatchMode::Subscribe, _) => {
                format!("the server declared {declared}: resources/subscribe")
            }
            (WatchMode::Listen, _) => format!(
                "the server declared {declared}: subscriptions/listen with resourceSubscriptions"
            ),
            (WatchMode::Poll, Some(Refusal::MarkedBroken { method })) => format!(
                "{method} was refused earlier in this session; re-reading as the caller asked"
            ),
            (WatchMode::Poll, _) => format!(
                "the server declared {declared} (no subscribe); re-reading as the caller asked"
            ),
        };
        Ok(Watcher {
            uri: uri.to_owned(),
            policy,
            mode,
            start_reason,
            started: false,
            actions: VecDeque::new(),
            awaiting: false,
            events: VecDeque::new(),
            end: None,
            last: None,
            next_read: None,
            poll_wait: policy.poll.unwrap_or(Duration::from_secs(1)),
            listening: false,
            subscribed: false,
            notices: Vec::new(),
        })
    }

    /// The current mode.
    pub fn mode(&self) -> WatchMode {
        self.mode
    }

    /// The URI watched.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Whether a legacy subscription is in place (to end on close).
    pub fn is_subscribed(&self) -> bool {
        self.subscribed
    }

    /// The next thing to do. An action's outcome is handed back (`handle_subscribed`,
    /// `handle_listening`, `handle_read`, `handle_violation`) before any event is
    /// reported: the events it leads to come after it.
    pub fn poll_action(&mut self) -> Option<WatchAction> {
        self.begin();
        let action = self.actions.pop_front()?;
        self.awaiting = matches!(
            action,
            WatchAction::Subscribe | WatchAction::Listen(_) | WatchAction::Read
        );
        Some(action)
    }

    fn busy(&self) -> bool {
        self.awaiting || !self.actions.is_empty()
    }

    /// The next event to report, once no action is pending.
    pub fn poll_event(&mut self) -> Option<WatchEvent<R>> {
        self.begin();
        if self.busy() {
            return None;
        }
        self.events.pop_front()
    }

    /// Why the watch is over, once every action and event before it was taken. It
    /// stays over.
    pub fn end(&self) -> Option<&WatchEnd> {
        if self.busy() || !self.events.is_empty() {
            return None;
        }
        self.end.as_ref()
    }

    /// When [`Watcher::handle_timeout`] should be called: the next read of a poll.
    /// `None` when nothing is timed (a subscription waits for updates).
    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.mode, &self.end) {
            (WatchMode::Poll, None) => self.next_read,
            _ => None,
        }
    }

    /// The time is `now`: a poll whose interval has passed reads again.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.poll_timeout().is_some_and(|at| now >= at) {
            self.next_read = None;
            self.read_due();
        }
    }

    /// `resources/subscribe` succeeded.
    pub fn handle_subscribed(&mut self) {
        self.awaiting = false;
        self.subscribed = true;
        self.read_due();
    }

    /// The listen stream is open (its request sent).
    pub fn handle_listening(&mut self) {
        self.awaiting = false;
        self.listening = true;
        self.read_due();
    }

    /// A read arrived at `now`: `read` is reported when its `revision` differs from
    /// the last one. In poll mode the next read is due an interval later — never
    /// sooner than the read's `ttlMs` says it stays fresh (capped at
    /// [`time::MAX_TTL`], with a [`Notice::TtlCapped`]).
    pub fn handle_read(&mut self, now: Instant, read: R, revision: &Revision, ttl_ms: Option<f64>) {
        self.awaiting = false;
        if self.mode == WatchMode::Poll {
            let ttl = ttl_ms.and_then(time::ttl).unwrap_or_default();
            if let Some(ttl_ms) = ttl_ms.filter(|_| ttl == time::MAX_TTL) {
                if ttl_ms > time::MAX_TTL.as_millis() as f64 {
                    self.notices.push(Notice::TtlCapped { ttl_ms });
                }
            }
            let wait = self.policy.poll.unwrap_or(self.poll_wait).max(ttl);
            self.poll_wait = wait;
            self.next_read = Some(time::deadline(now, wait));
        }
        if self.last.as_ref() != Some(revision) {
            self.last = Some(revision.clone());
            self.events.push_back(WatchEvent::Revision(read));
        }
    }

    /// A legacy `notifications/resources/updated` for `uri` arrived: a read, when it
    /// concerns the watched resource (or a sub-resource of it) and a subscription is
    /// followed.
    pub fn handle_update(&mut self, uri: &str) {
        if self.mode != WatchMode::Poll && model::is_same_or_sub_resource(uri, &self.uri) {
            self.read_due();
        }
    }

    /// Updates may have been lost (the caller fell behind its event stream): a read,
    /// when a subscription is followed.
    pub fn handle_lagged(&mut self) {
        if self.mode == WatchMode::Subscribe {
            self.read_due();
        }
    }

    /// A notification arrived on the listen stream.
    pub fn handle_notification(&mut self, notification: &Notification) {
        if let Notification::ResourceUpdated { uri } = notification {
            self.handle_update(uri);
        }
    }

    /// The listen stream was acknowledged with the filter the server honours
    /// (`notifications`); without the watched URI in it the stream is no use.
    pub fn handle_acknowledged(&mut self, now: Instant, honoured: &Value) {
        let covered = honoured
            .get("resourceSubscriptions")
            .and_then(|s| s.as_array())
            .is_some_and(|s| s.iter().any(|u| u.as_str() == Some(&self.uri)));
        if !covered {
            let reason = format!(
                "the server acknowledged the subscription without {} ({honoured})",
                self.uri
            );
            self.stream_ended(now, reason);
        }
    }

    /// The server completed the listen request (a result: the stream is over).
    pub fn handle_listen_completed(&mut self, now: Instant) {
        self.stream_ended(now, "it completed the listen request".into());
    }

    /// The server ended the listen stream, saying `reason` (empty: nothing).
    pub fn handle_listen_ended(&mut self, now: Instant, reason: String) {
        self.stream_ended(now, reason);
    }

    /// The server broke its declaration at `now` (answered the subscription method
    /// with -32601). Reported; then the caller's poll policy, or the end.
    pub fn handle_violation(&mut self, now: Instant, violation: Box<Violation>) {
        self.awaiting = false;
        self.events
            .push_back(WatchEvent::Violation(violation.clone()));
        self.stop_listening();
        self.subscribed = false;
        if self.policy.poll.is_none() {
            self.end = Some(WatchEnd::Violation(violation));
            return;
        }
        let v = &violation;
        self.mode_event(
            WatchMode::Poll,
            format!(
                "{} is broken on this server ({} {} declared `{}`); falling back to the caller's re-read policy",
                v.method, v.server.name, v.server.version, v.capability
            ),
        );
        match self.last {
            // Polling goes on from the last read.
            Some(_) => self.next_read = Some(time::deadline(now, self.poll_wait)),
            None => self.read_due(),
        }
    }

    /// Ends the watch: what is to be undone (the listen stream, the subscription) is
    /// queued as actions; nothing else is done or reported any more.
    pub fn close(&mut self) {
        self.started = true;
        self.awaiting = false;
        self.actions.clear();
        self.events.clear();
        self.stop_listening();
        if std::mem::take(&mut self.subscribed) {
            self.actions.push_back(WatchAction::Unsubscribe);
        }
        self.next_read = None;
    }

    /// Records the watch noticed (drained).
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    fn begin(&mut self) {
        if std::mem::replace(&mut self.started, true) {
            return;
        }
        let reason = std::mem::take(&mut self.start_reason);
        self.mode_event(self.mode, reason);
        let first = match self.mode {
            WatchMode::Subscribe => WatchAction::Subscribe,
            WatchMode::Listen => WatchAction::Listen(listen_filter(&self.uri)),
            WatchMode::Poll => WatchAction::Read,
        };
        self.actions.push_back(first);
    }

    fn read_due(&mut self) {
        if self.end.is_none() && !self.actions.contains(&WatchAction::Read) {
            self.actions.push_back(WatchAction::Read);
        }
    }

    fn stop_listening(&mut self) {
        if std::mem::take(&mut self.listening) {
            self.actions.push_back(WatchAction::StopListening);
        }
    }

    fn mode_event(&mut self, mode: WatchMode, reason: String) {
        self.mode = mode;
        let interval = (mode == WatchMode::Poll).then_some(self.poll_wait);
        self.events.push_back(WatchEvent::Mode {
            mode,
            reason,
            interval,
        });
    }

    /// The listen stream is over (`reason` as the server's, or ours): poll if
    /// allowed, else the end.
    fn stream_ended(&mut self, now: Instant, reason: String) {
        self.stop_listening();
        if self.policy.poll.is_none() {
            self.end = Some(WatchEnd::ListenEnded { reason });
            return;
        }
        let why = match reason.as_str() {
            "" => "the server ended the subscription stream".to_owned(),
            reason => format!("the server ended the subscription stream: {reason}"),
        };
        self.mode_event(
            WatchMode::Poll,
            format!("{why}; falling back to the caller's re-read policy"),
        );
        self.next_read = Some(time::deadline(now, self.poll_wait));
    }
}

#[cfg(test)]
mod tests;
