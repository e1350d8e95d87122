//! What the one server behind must keep open for what its host wants to hear of, in
//! the server's era, sans-IO ([`Follow`]): the bridge's host says what it listens for (a
//! legacy host's subscriptions, a 2026-07-28 host's listen streams: the engine's
//! [`Interest`]); the server is asked for it as its era asks. The shell runs each
//! [`FollowStep`] ([`Follow::poll_upstream`]) on the session, tells how it went, and
//! carries out every [`Outcome`] ([`Follow::poll_outcome`]).
//!
//! | the server | the host | what the host's interest becomes |
//! |---|---|---|
//! | 2026-07-28 | either | one listen stream for the whole interest, opened anew when it changes (the new one replaces the old once open), none for an empty one |
//! | legacy | 2026-07-28 | `resources/subscribe` for each URI newly wanted, `resources/unsubscribe` for each no longer |
//! | legacy | legacy | nothing: the host's own subscribe requests reach the server as they are |
//!
//! | what happens | in | what comes out |
//! |---|---|---|
//! | the host's interest changes | [`handle_interest`](Follow::handle_interest) | the steps above |
//! | the listen stream fails to open, or ends | [`handle_opened`](Follow::handle_opened), [`handle_ended`](Follow::handle_ended) | a failure: [`Outcome::ListenFailed`]; opened again at the next change of interest, even to the same; the end of a stream replaced since changes nothing |
//! | a subscribe or unsubscribe fails | [`handle_stepped`](Follow::handle_stepped) | [`Outcome::StepFailed`]; the server holds what it held (asked again at the next change) |
//! | the server comes back as a new session | [`handle_restarted`](Follow::handle_restarted) | it holds nothing: a legacy host's subscriptions made again one by one, any other interest followed from scratch; [`Outcome::ListsChanged`], and [`Outcome::CapabilitiesChanged`] when it declares other than what the host was offered |

use std::collections::{BTreeSet, VecDeque};

use crate::capabilities::ServerCapabilities;
use crate::server::Interest;
use crate::Era;

/// What to ask of the server behind ([`Follow::poll_upstream`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FollowStep {
    /// Open a listen stream for this interest; it replaces the one open, if any. What
    /// happens to it is told under `token`.
    Listen {
        /// The stream's token.
        token: u64,
        /// What it listens for.
        interest: Interest,
    },
    /// Close the listen stream: nothing is wanted any more.
    StopListening,
    /// `resources/subscribe` for this URI; its outcome is told with
    /// [`Follow::handle_stepped`].
    Subscribe(String),
    /// `resources/unsubscribe` for this URI, told the same way.
    Unsubscribe(String),
}

/// What the shell carries out ([`Follow::poll_outcome`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The listen stream failed (for the audit).
    ListenFailed(String),
    /// A subscribe or unsubscribe failed (for the audit).
    StepFailed {
        /// The step.
        step: FollowStep,
        /// Why.
        error: String,
    },
    /// The host is to hear that the lists it was offered may have changed.
    ListsChanged,
    /// The server came back declaring other than the host was offered (for the audit).
    CapabilitiesChanged,
}

/// What is open at the one server behind for its host (see the module documentation).
#[derive(Debug, Default)]
pub struct Follow {
    listening: Interest,
    /// The token of the listen stream open (or opening), if any.
    stream: Option<u64>,
    tokens: u64,
    subscribed: BTreeSet<String>,
    steps: VecDeque<FollowStep>,
    outcomes: VecDeque<Outcome>,
}

impl Follow {
    /// The next step to run, once each.
    pub fn poll_upstream(&mut self) -> Option<FollowStep> {
        self.steps.pop_front()
    }

    /// The next outcome to carry out, once each.
    pub fn poll_outcome(&mut self) -> Option<Outcome> {
        self.outcomes.pop_front()
    }

    /// The host's interest is now `interest` (the server speaks `server`, the host
    /// `host`): what to ask of the server, in order.
    pub fn handle_interest(&mut self, interest: Interest, server: Era, host: Option<Era>) {
        match (server, host) {
            (Era::Modern, _) => self.listen_for(interest),
            (Era::Legacy, Some(Era::Modern)) => self.subscribe_for(interest),
            // A legacy host's own subscribe requests reach a legacy server.
            (Era::Legacy, _) => {}
        }
    }

    /// The listen stream under `token` was opened (`Ok`) or failed to open.
    pub fn handle_opened(&mut self, token: u64, opened: Result<(), String>) {
        if let Err(error) = opened {
            self.handle_ended(token, Some(error));
        }
    }

    /// The listen stream under `token` ended (with `Some` error: it failed). Opened
    /// again at the next change of interest; a stream replaced since is no matter.
    pub fn handle_ended(&mut self, token: u64, error: Option<String>) {
        if self.stream != Some(token) {
            return;
        }
        self.stream = None;
        self.listening = Interest::default();
        if let Some(error) = error {
            self.outcomes.push_back(Outcome::ListenFailed(error));
        }
    }

    /// A subscribe or unsubscribe `step` ran: a failure (`Err`) leaves the server
    /// holding what it held, and is said.
    pub fn handle_stepped(&mut self, step: FollowStep, done: Result<(), String>) {
        let Err(error) = done else {
            return;
        };
        match &step {
            FollowStep::Subscribe(uri) => _ = self.subscribed.remove(uri),
            FollowStep::Unsubscribe(uri) => _ = self.subscribed.insert(uri.clone()),
            FollowStep::Listen { .. } | FollowStep::StopListening => return,
        }
        self.outcomes.push_back(Outcome::StepFailed { step, error });
    }

    /// The server behind came back as a new session holding nothing, declaring
    /// `declared` (the host was offered `offered`): what to ask of it for the host's
    /// `interest`, and what the host hears.
    pub fn handle_restarted(
        &mut self,
        interest: Interest,
        (server, host): (Era, Option<Era>),
        declared: &ServerCapabilities,
        offered: &ServerCapabilities,
    ) {
        self.listening = Interest::default();
        self.stream = None;
        self.subscribed.clear();
        match (server, host) {
            (Era::Legacy, Some(Era::Legacy)) => {
                let again = interest.resource_subscriptions.into_iter();
                self.steps.extend(again.map(FollowStep::Subscribe));
            }
            _ => self.handle_interest(interest, server, host),
        }
        if declared != offered {
            self.outcomes.push_back(Outcome::CapabilitiesChanged);
        }
        self.outcomes.push_back(Outcome::ListsChanged);
    }

    fn listen_for(&mut self, interest: Interest) {
        if interest == self.listening {
            return;
        }
        self.listening = interest.clone();
        if interest == Interest::default() {
            self.stream = None;
            return self.steps.push_back(FollowStep::StopListening);
        }
        self.tokens += 1;
        self.stream = Some(self.tokens);
        let token = self.tokens;
        self.steps.push_back(FollowStep::Listen { token, interest });
    }

    fn subscribe_for(&mut self, interest: Interest) {
        let wanted: BTreeSet<String> = interest.resource_subscriptions.into_iter().collect();
        let new = wanted.difference(&self.subscribed).cloned();
        self.steps.extend(new.map(FollowStep::Subscribe));
        let gone = self.subscribed.difference(&wanted).cloned();
        self.steps.extend(gone.map(FollowStep::Unsubscribe));
        self.subscribed = wanted;
    }
}

#[cfg(test)]
#[path = "follow_tests.rs"]
mod tests;
