//! What an operator counts: the bridge's requests, sessions, servers and audit, as
//! Prometheus metrics (`/metrics` of the listener, or `--metrics ADDR`), and whether
//! the servers it needs are up (`/readyz`).
//!
//! Every count is an atomic in an array laid out when the bridge starts: a label is an
//! index (the method's place in the method table, the server's in the config, the
//! outcome's), so counting a request allocates nothing and takes no lock, and no label
//! takes a value the bridge did not name (a method outside the table is `other`, a
//! server the config never named `other`). The array has room for [`SPARE`] servers
//! more than the first config's: a server a reload adds takes the next one, under its
//! own name, from then on ([`Metrics::follow`]); a server removed keeps its slot and its
//! counts, no longer needed. Past the room, a new server counts as `other`. A scrape
//! reads the atomics as they are (`encode.rs`); nobody waits for it.
//!
//! | metric (`capable_bridge_…`) | labels | what |
//! |---|---|---|
//! | `requests_total` | `method`, `server`, `outcome`, `caller` | host requests sent on to a server: `ok`, `error` (the server's error, or none came), `cancelled` (the host gave up first), `refused` (the policy refused it before it was sent); by the class of caller ([`CallerClass`]) |
//! | `request_duration_seconds` | `method`, `server` | from sending on to the answer, of those that got one |
//! | `requests_in_flight` | | sent on, not answered yet |
//! | `sessions` | `kind` | host tasks running: `legacy` sessions, `modern` (2026-07-28) declarations |
//! | `upstream_up` | `server` | 1 unless the server's latest state is a down one (below), for each server the bridge needs |
//! | `upstream_state_changes_total` | `server`, `state` | every state a server entered, in any session |
//! | `upstream_restarts_total` | `server` | restarts scheduled after a crash or a failed start |
//! | `upstream_token_refreshes_total` | `server`, `outcome` | the bridge's tokens at a server refreshed (`ok`) or not (`failed`), in every mode of `credentials` ([`Metrics::token_refresh`]) |
//! | `violations_total` | `server`, `method` | contract violations (the audit's evidence) |
//! | `notices_total` | `side`, `level` | notices of the servers' side and the hosts' |
//! | `audit_events_total` | `event` | audit lines by event (`withheld`, `malformed`, `busy`, …), counted before a flood is summarised |
//! | `reloads_total` | `outcome` | the config read anew: `applied`, `failed` (the config in force stayed) |
//! | `spans_dropped_total` | | spans that never reached the OTLP collector (only when traces are on: `traces/`) |
//! | `refusals_total` | `reason` | requests turned away before any server saw them: the gate's (`host`, `origin`, `token`, `media_type`, `access_token`), the bounds' (`sessions_busy`, `bodies_busy`) and the policy's (`denied`: a rule, `rate_limited`: a caller over its limit) |
//!
//! A server's request counts under `server=""` when the bridge answered it from every
//! server at once (a merged list) or itself.

mod encode;
mod histogram;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use capable::internal::Method;

pub use encode::{Exposition, CONTENT_TYPE};
use histogram::Histogram;

/// The outcomes of a request, as labelled.
const OUTCOMES: [&str; 4] = ["ok", "error", "cancelled", "refused"];

/// Who a request is from, as the `caller` label says: a bounded class, never an
/// identity (that is the audit's, per line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallerClass {
    /// Nobody logs in (no `--auth-issuer`), or the request serves no caller.
    Anonymous = 0,
    /// A person: an access token whose subject is not the client it was issued to.
    User = 1,
    /// A client acting for itself (client credentials: its subject is its client).
    Client = 2,
}

const CALLERS: [&str; 3] = ["anonymous", "user", "client"];

impl CallerClass {
    /// The class of `caller`.
    pub fn of(caller: Option<&capable::internal::auth::resource::Caller>) -> CallerClass {
        match caller {
            None => CallerClass::Anonymous,
            Some(c) if c.client_id.as_deref() == Some(c.subject.as_str()) => CallerClass::Client,
            Some(_) => CallerClass::User,
        }
    }
}

/// A request's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Answered with a result.
    Ok = 0,
    /// Answered with an error, or not at all.
    Error = 1,
    /// The host gave up before the answer.
    Cancelled = 2,
    /// Refused before it was sent.
    Refused = 3,
}

/// The states a server enters, as the audit names them; a server's latest is kept as
/// its index plus one (0: never seen).
const STATES: [&str; 9] = [
    "starting",
    "ready",
    "restarting",
    "refused",
    "failed",
    "closed",
    "given_up",
    "stopped",
    "disabled",
];

/// Whether the state `STATES[i]` is a down one: the server cannot be reached now.
fn is_down(i: usize) -> bool {
    matches!(
        STATES.get(i),
        Some(&("restarting" | "refused" | "failed" | "closed" | "given_up"))
    )
}

/// The audit's events counted by name; any other is `other`.
const EVENTS: [&str; 17] = [
    "violation",
    "notice",
    "withheld",
    "malformed",
    "state",
    "busy",
    "expired",
    "lagged",
    "list_failed",
    "declared",
    "suppressed",
    "listening",
    "refused",
    // Sealed sessions: continued (or not) from another replica's seal, and streams
    // resumed fresh from another replica's `Last-Event-ID`.
    "sealed",
    "resumed",
    "store_down",
    "other",
];

/// Why a request was turned away before any server saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `Host` is not the listener's (`421`).
    Host = 0,
    /// `Origin` is not allowed (`403`).
    Origin = 1,
    /// The bearer token is missing or wrong (`401`).
    Token = 2,
    /// A POST's body is not JSON (`415`).
    MediaType = 3,
    /// The access token (`--auth-issuer`) was refused.
    AccessToken = 4,
    /// Every session (or 2026-07-28 declaration) was busy (`503`).
    SessionsBusy = 5,
    /// The bodies being read took `--max-body-total` (`503`).
    BodiesBusy = 6,
    /// The policy refused it: a rule (`allowTools`, `access`, …; `-32602`).
    Denied = 7,
    /// The policy refused it for now: the caller is over its rate limit (`-32011`,
    /// over HTTP `429`).
    RateLimited = 8,
}

const REFUSALS: [&str; 9] = [
    "host",
    "origin",
    "token",
    "media_type",
    "access_token",
    "sessions_busy",
    "bodies_busy",
    "denied",
    "rate_limited",
];

/// The kinds of host task, as labelled.
const KINDS: [&str; 2] = ["legacy", "modern"];

/// How many servers a reload may add, beyond the first config's, before a new one
/// counts as `other`.
pub const SPARE: usize = 32;

/// Every count of one bridge (see the module documentation).
pub struct Metrics {
    /// The server slots: the config's servers (or the one server) in its order, then
    /// those reloads added, then room for more (unnamed). The `server` label slots
    /// past them are `""` (the bridge itself, or every server) and `other`.
    servers: Box<[OnceLock<Box<str>>]>,
    /// How many slots are named (only ever grows; a slot is named before it counts).
    named: AtomicUsize,
    /// Names slots, one reload at a time.
    naming: Mutex<()>,
    /// Which of them the bridge needs (not disabled, not left out by `--only`, still in
    /// the config).
    needed: Box<[AtomicBool]>,
    /// By method, server slot, outcome and caller class.
    requests: Box<[AtomicU64]>,
    /// By method and server slot.
    latency: Box<[Histogram]>,
    in_flight: AtomicI64,
    sessions: [AtomicI64; KINDS.len()],
    /// Each server's latest state (index into [`STATES`] plus one; 0: never seen).
    states: Box<[AtomicU8]>,
    /// By server slot and state.
    changes: Box<[AtomicU64]>,
    /// By server slot.
    restarts: Box<[AtomicU64]>,
    /// By server slot and outcome (ok, failed).
    refreshes: Box<[AtomicU64]>,
    /// By server slot and method.
    violations: Box<[AtomicU64]>,
    /// By side (server, host) and level (info, warning).
    notices: [AtomicU64; 4],
    events: [AtomicU64; EVENTS.len()],
    refusals: [AtomicU64; REFUSALS.len()],
    /// Reloads applied, failed.
    reloads: [AtomicU64; 2],
    /// The traces whose dropped spans are counted, when they are on.
    traces: Option<crate::Traces>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("servers", &self.servers)
            .finish_non_exhaustive()
    }
}

impl Default for Metrics {
    /// The counts of a bridge in front of no server known by name.
    fn default() -> Metrics {
        Metrics::new(std::iter::empty())
    }
}

/// How many method slots: the table's, and `other`.
const METHODS: usize = Method::ALL.len() + 1;

fn zeros<T: Default>(n: usize) -> Box<[T]> {
    (0..n).map(|_| T::default()).collect()
}

impl Metrics {
    /// The counts of a bridge in front of `servers` (name, and whether it is needed).
    pub fn new(servers: impl IntoIterator<Item = (String, bool)>) -> Metrics {
        let servers: Vec<(String, bool)> = servers.into_iter().collect();
        let capacity = servers.len() + SPARE;
        let slots = capacity + 2;
        let metrics = Metrics {
            requests: zeros(METHODS * slots * OUTCOMES.len() * CALLERS.len()),
            latency: zeros(METHODS * slots),
            in_flight: AtomicI64::new(0),
            sessions: Default::default(),
            states: zeros(capacity),
            changes: zeros(slots * STATES.len()),
            restarts: zeros(slots),
            refreshes: zeros(slots * 2),
            violations: zeros(slots * METHODS),
            notices: Default::default(),
            events: Default::default(),
            refusals: Default::default(),
            reloads: Default::default(),
            traces: None,
            servers: zeros(capacity),
            named: AtomicUsize::new(0),
            naming: Mutex::new(()),
            needed: zeros(capacity),
        };
        metrics.follow(servers);
        metrics
    }

    /// The servers of a config now in force (name, and whether the bridge needs it),
    /// after a reload: one it had no slot for takes the next free one, under its own
    /// name; one no longer among them is no longer needed (its counts stay).
    pub fn follow(&self, servers: impl IntoIterator<Item = (String, bool)>) {
        let _naming = self.naming.lock().unwrap_or_else(|e| e.into_inner());
        let named = self.named.load(Ordering::Acquire);
        let mut now = vec![false; self.servers.len()];
        let mut next = named;
        for (name, needed) in servers {
            let at = match self.slot_of(&name, next) {
                Some(at) => at,
                None if next < self.servers.len() => {
                    let _ = self.servers[next].set(name.into_boxed_str());
                    next += 1;
                    next - 1
                }
                // No room left: counted as `other`.
                None => continue,
            };
            now[at] = needed;
        }
        for (flag, needed) in self.needed.iter().zip(now) {
            flag.store(needed, Relaxed);
        }
        self.named.store(next, Ordering::Release);
    }

    /// The slot named `name` among the first `named`.
    fn slot_of(&self, name: &str, named: usize) -> Option<usize> {
        self.servers[..named]
            .iter()
            .position(|s| s.get().is_some_and(|s| **s == *name))
    }

    /// The named server slots: index and name.
    fn named_slots(&self) -> impl Iterator<Item = (usize, &str)> {
        let named = self.named.load(Ordering::Acquire);
        self.servers[..named]
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((i, &**s.get()?)))
    }

    /// Counts the spans `traces` dropped too (`spans_dropped_total`).
    pub fn count_dropped_spans(&mut self, traces: crate::Traces) {
        self.traces = Some(traces);
    }

    /// How many `server` label slots there are.
    fn slots(&self) -> usize {
        self.servers.len() + 2
    }

    /// The slot of server `name` (`None`: the bridge itself, or every server).
    pub fn server(&self, name: Option<&str>) -> usize {
        match name {
            None => self.servers.len(),
            Some(name) => {
                let named = self.named.load(Ordering::Acquire);
                self.slot_of(name, named).unwrap_or(self.servers.len() + 1)
            }
        }
    }

    /// The label of server slot `i`.
    fn server_label(&self, i: usize) -> &str {
        match self.servers.get(i) {
            Some(name) => name.get().map_or("other", |n| n),
            None if i == self.servers.len() => "",
            None => "other",
        }
    }

    /// A request of `method` sent on to server slot `server` for a caller of class
    /// `caller`: in flight until the returned guard is told how it ended, or dropped
    /// (the host gave up).
    pub fn sent(self: &Arc<Self>, method: Method, server: usize, caller: CallerClass) -> Sent {
        self.in_flight.fetch_add(1, Relaxed);
        Sent {
            metrics: self.clone(),
            method: method as usize,
            server,
            caller,
            since: Instant::now(),
            done: false,
        }
    }

    /// A request of `method` the policy refused before it was sent.
    pub fn refused_request(&self, method: Method, server: usize, caller: CallerClass) {
        self.count(method as usize, server, Outcome::Refused, caller);
    }

    fn count(&self, method: usize, server: usize, outcome: Outcome, caller: CallerClass) {
        let at = (method * self.slots() + server) * OUTCOMES.len() + outcome as usize;
        if let Some(n) = self.requests.get(at * CALLERS.len() + caller as usize) {
            n.fetch_add(1, Relaxed);
        }
    }

    /// A host task of `kind` (`legacy`: a session) runs until the guard is dropped.
    pub fn session(self: &Arc<Self>, legacy: bool) -> Running {
        let kind = usize::from(!legacy);
        self.sessions[kind].fetch_add(1, Relaxed);
        Running {
            metrics: self.clone(),
            kind,
        }
    }

    /// Server `server` entered `state` (the audit's name for it).
    pub fn state(&self, server: &str, state: &str) {
        let Some(s) = STATES.iter().position(|known| *known == state) else {
            return;
        };
        let slot = self.server(Some(server));
        if let Some(latest) = self.states.get(slot) {
            latest.store(s as u8 + 1, Relaxed);
        }
        if let Some(n) = self.changes.get(slot * STATES.len() + s) {
            n.fetch_add(1, Relaxed);
        }
        if state == "restarting" {
            if let Some(n) = self.restarts.get(slot) {
                n.fetch_add(1, Relaxed);
            }
        }
    }

    /// A token of the bridge's at `server` refreshed (`ok`) or not.
    pub fn token_refresh(&self, server: &str, ok: bool) {
        let at = self.server(Some(server)) * 2 + usize::from(!ok);
        if let Some(n) = self.refreshes.get(at) {
            n.fetch_add(1, Relaxed);
        }
    }

    /// A contract violation of `server` on `method`.
    pub fn violation(&self, server: &str, method: Method) {
        let at = self.server(Some(server)) * METHODS + method as usize;
        if let Some(n) = self.violations.get(at) {
            n.fetch_add(1, Relaxed);
        }
    }

    /// A notice of the servers' side (`server`) or the hosts', `warning` or not.
    pub fn notice(&self, server_side: bool, warning: bool) {
        let at = usize::from(!server_side) * 2 + usize::from(warning);
        self.notices[at].fetch_add(1, Relaxed);
    }

    /// An audit line of `event`.
    pub fn event(&self, event: &str) {
        let at = EVENTS.iter().position(|e| *e == event);
        let at = at.unwrap_or(EVENTS.len() - 1);
        self.events[at].fetch_add(1, Relaxed);
    }

    /// The config read anew: applied, or failed (the one in force stayed).
    pub fn reload(&self, applied: bool) {
        self.reloads[usize::from(!applied)].fetch_add(1, Relaxed);
    }

    /// A request turned away for `why`.
    pub fn refusal(&self, why: Refusal) {
        self.refusals[why as usize].fetch_add(1, Relaxed);
    }

    /// The servers the bridge needs that are down, each with its latest state: none
    /// when it is ready. A server never started yet (a host's first word starts it)
    /// or on its way up does not count as down.
    pub fn down(&self) -> Vec<(&str, &'static str)> {
        let mut down = Vec::new();
        for (i, name) in self.named_slots() {
            let latest = usize::from(self.states[i].load(Relaxed));
            if self.needed[i].load(Relaxed) && latest > 0 && is_down(latest - 1) {
                down.push((name, STATES[latest - 1]));
            }
        }
        down
    }
}

/// A request on its way (see [`Metrics::sent`]).
pub struct Sent {
    metrics: Arc<Metrics>,
    method: usize,
    server: usize,
    caller: CallerClass,
    since: Instant,
    done: bool,
}

impl Sent {
    /// It was answered: with a result (`ok`) or not.
    pub fn answered(mut self, ok: bool) {
        let outcome = if ok { Outcome::Ok } else { Outcome::Error };
        self.end(outcome);
    }

    fn end(&mut self, outcome: Outcome) {
        self.done = true;
        let m = &self.metrics;
        m.in_flight.fetch_sub(1, Relaxed);
        m.count(self.method, self.server, outcome, self.caller);
        if outcome != Outcome::Cancelled {
            let at = self.method * m.slots() + self.server;
            if let Some(h) = m.latency.get(at) {
                h.observe(self.since.elapsed());
            }
        }
    }
}

impl Drop for Sent {
    fn drop(&mut self) {
        if !self.done {
            self.end(Outcome::Cancelled);
        }
    }
}

/// A host task running (see [`Metrics::session`]).
pub struct Running {
    metrics: Arc<Metrics>,
    kind: usize,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.metrics.sessions[self.kind].fetch_sub(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> Arc<Metrics> {
        Arc::new(Metrics::new([("a".into(), true), ("b".into(), false)]))
    }

    #[test]
    fn a_request_is_counted_once_by_how_it_ended() {
        let m = two();
        let a = m.server(Some("a"));
        let anonymous = CallerClass::Anonymous;
        m.sent(Method::CallTool, a, anonymous).answered(true);
        m.sent(Method::CallTool, a, anonymous).answered(false);
        drop(m.sent(Method::CallTool, a, anonymous));
        m.sent(Method::CallTool, a, CallerClass::Client)
            .answered(true);
        let at = |o: Outcome, c: CallerClass| {
            let at = (Method::CallTool as usize * m.slots() + a) * 4 + o as usize;
            m.requests[at * CALLERS.len() + c as usize].load(Relaxed)
        };
        let outcomes = [Outcome::Ok, Outcome::Error, Outcome::Cancelled];
        assert_eq!(outcomes.map(|o| at(o, anonymous)), [1, 1, 1]);
        assert_eq!(outcomes.map(|o| at(o, CallerClass::Client)), [1, 0, 0]);
        assert_eq!(at(Outcome::Ok, CallerClass::User), 0);
        let text = super::Exposition::new(m.clone()).text();
        let series =
            r#"requests_total{method="tools/call",server="a",outcome="ok",caller="client"} 1"#;
        assert!(text.contains(series), "{text}");
        assert_eq!(m.in_flight.load(Relaxed), 0);
        // A cancelled request has no duration; every caller's share one histogram.
        assert_eq!(
            m.latency[Method::CallTool as usize * m.slots() + a].count(),
            3
        );
    }

    #[test]
    fn a_callers_class_is_what_its_token_says_of_it() {
        let caller = |sub: &str, client: Option<&str>| capable::internal::auth::resource::Caller {
            issuer: "https://idp".into(),
            subject: sub.into(),
            client_id: client.map(Into::into),
            scopes: Vec::new(),
            groups: Vec::new(),
            expires_at: 0,
        };
        assert_eq!(CallerClass::of(None), CallerClass::Anonymous);
        let app = caller("alice-app", Some("alice-app"));
        assert_eq!(CallerClass::of(Some(&app)), CallerClass::Client);
        let person = caller("alice", Some("alice-app"));
        assert_eq!(CallerClass::of(Some(&person)), CallerClass::User);
        let unsaid = caller("alice", None);
        assert_eq!(CallerClass::of(Some(&unsaid)), CallerClass::User);
    }

    #[test]
    fn names_outside_the_config_share_one_slot() {
        let m = two();
        assert_eq!(m.server(Some("x")), m.server(Some("y")));
        assert_eq!(m.server_label(m.server(Some("x"))), "other");
        assert_eq!(m.server_label(m.server(None)), "");
    }

    #[test]
    fn a_server_a_reload_adds_is_counted_under_its_own_name() {
        let m = two();
        m.follow([("a".into(), true), ("c".into(), true)]);
        let c = m.server(Some("c"));
        assert_eq!(m.server_label(c), "c");
        assert_ne!(c, m.server(Some("other-name")));
        m.sent(Method::CallTool, c, CallerClass::Anonymous)
            .answered(true);
        let text = super::Exposition::new(m.clone()).text();
        assert!(
            text.contains(r#"method="tools/call",server="c",outcome="ok",caller="anonymous"} 1"#),
            "{text}"
        );
        // b was removed: its slot stays, no longer needed; c is.
        m.state("b", "failed");
        m.state("c", "failed");
        assert_eq!(m.down(), [("c", "failed")]);
        assert!(text.contains(r#"upstream_up{server="c"} 1"#), "{text}");
        assert!(!text.contains(r#"upstream_up{server="b"}"#), "{text}");
        // Past the room left, a new server is `other`.
        let many = (0..SPARE + 5).map(|i| (format!("s{i}"), true));
        m.follow(many);
        let late = format!("s{}", SPARE + 4);
        assert_eq!(m.server_label(m.server(Some(&late))), "other");
        assert_eq!(m.server_label(m.server(Some("s0"))), "s0");
    }

    #[test]
    fn readiness_is_the_needed_servers_latest_state() {
        let m = two();
        assert!(m.down().is_empty(), "never started is not down");
        m.state("a", "starting");
        assert!(m.down().is_empty(), "on its way up is not down");
        m.state("a", "restarting");
        m.state("b", "failed");
        // b is not needed (disabled, or left out by --only).
        assert_eq!(m.down(), [("a", "restarting")]);
        m.state("a", "ready");
        assert!(m.down().is_empty());
        assert_eq!(m.restarts[0].load(Relaxed), 1);
    }
}
