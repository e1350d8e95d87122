//! What the one server behind must keep open for what its host wants to hear of, in
//! the server's era ([`Follow`]): the bridge's host says what it listens for (a legacy
//! host's subscriptions, a 2026-07-28 host's listen streams: the engine's
//! [`Interest`]); the server is asked for it as its era asks.
//!
//! | the server | the host | what the host's interest becomes |
//! |---|---|---|
//! | 2026-07-28 | either | one listen stream for the whole interest, opened anew when it changes (the new one replaces the old once open), none for an empty one |
//! | legacy | 2026-07-28 | `resources/subscribe` for each URI newly wanted, `resources/unsubscribe` for each no longer |
//! | legacy | legacy | nothing: the host's own subscribe requests reach the server as they are |
//!
//! After a restart the new server holds nothing: a legacy host's subscriptions are
//! made again one by one, any other interest followed from scratch.

use std::collections::BTreeSet;

use crate::server::Interest;
use crate::Era;

/// What to ask of the server behind ([`Follow`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FollowStep {
    /// Open a listen stream for this interest; it replaces the one open, if any.
    Listen(Interest),
    /// Close the listen stream: nothing is wanted any more.
    StopListening,
    /// `resources/subscribe` for this URI.
    Subscribe(String),
    /// `resources/unsubscribe` for this URI.
    Unsubscribe(String),
}

/// What is open at the one server behind for its host (see the module documentation).
#[derive(Debug, Default)]
pub struct Follow {
    listening: Interest,
    subscribed: BTreeSet<String>,
}

impl Follow {
    /// The host's interest is now `interest` (the server speaks `server`, the host
    /// `host`): what to ask of the server, in order.
    pub fn follow(
        &mut self,
        interest: Interest,
        server: Era,
        host: Option<Era>,
    ) -> Vec<FollowStep> {
        match (server, host) {
            (Era::Modern, _) => self.listen_for(interest),
            (Era::Legacy, Some(Era::Modern)) => self.subscribe_for(interest),
            // A legacy host's own subscribe requests reach a legacy server.
            (Era::Legacy, _) => Vec::new(),
        }
    }

    fn listen_for(&mut self, interest: Interest) -> Vec<FollowStep> {
        if interest == self.listening {
            return Vec::new();
        }
        self.listening = interest.clone();
        match interest == Interest::default() {
            true => vec![FollowStep::StopListening],
            false => vec![FollowStep::Listen(interest)],
        }
    }

    fn subscribe_for(&mut self, interest: Interest) -> Vec<FollowStep> {
        let wanted: BTreeSet<String> = interest.resource_subscriptions.into_iter().collect();
        let new = wanted.difference(&self.subscribed).cloned();
        let steps = new.map(FollowStep::Subscribe);
        let gone = self.subscribed.difference(&wanted).cloned();
        let steps: Vec<FollowStep> = steps.chain(gone.map(FollowStep::Unsubscribe)).collect();
        self.subscribed = wanted;
        steps
    }

    /// The listen stream ended (the server closed it, or it failed): it is opened
    /// again at the next change of interest.
    pub fn stream_ended(&mut self) {
        self.listening = Interest::default();
    }

    /// The server behind came back as a new session holding nothing: what to ask of it
    /// for the host's `interest`.
    pub fn restarted(
        &mut self,
        interest: Interest,
        server: Era,
        host: Option<Era>,
    ) -> Vec<FollowStep> {
        self.listening = Interest::default();
        self.subscribed.clear();
        match (server, host) {
            (Era::Legacy, Some(Era::Legacy)) => interest
                .resource_subscriptions
                .into_iter()
                .map(FollowStep::Subscribe)
                .collect(),
            _ => self.follow(interest, server, host),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uris(list: &[&str]) -> Interest {
        Interest {
            resource_subscriptions: list.iter().map(|u| (*u).to_owned()).collect(),
            ..Interest::default()
        }
    }

    #[test]
    fn a_2026_07_28_server_gets_one_stream_for_the_whole_interest_and_anew_on_change() {
        let mut f = Follow::default();
        let (m, host) = (Era::Modern, Some(Era::Legacy));
        assert_eq!(
            f.follow(uris(&["a://1"]), m, host),
            [FollowStep::Listen(uris(&["a://1"]))]
        );
        // The same interest again: nothing to ask.
        assert!(f.follow(uris(&["a://1"]), m, host).is_empty());
        let both = uris(&["a://1", "a://2"]);
        assert_eq!(
            f.follow(both.clone(), m, host),
            [FollowStep::Listen(both.clone())]
        );
        assert_eq!(
            f.follow(Interest::default(), m, host),
            [FollowStep::StopListening]
        );
        // A stream that ended is opened again at the next change, even to the same.
        assert_eq!(
            f.follow(both.clone(), m, host),
            [FollowStep::Listen(both.clone())]
        );
        f.stream_ended();
        assert_eq!(f.follow(both.clone(), m, host), [FollowStep::Listen(both)]);
    }

    #[test]
    fn a_legacy_server_is_asked_for_each_uri_a_2026_07_28_host_comes_to_want_or_not() {
        let mut f = Follow::default();
        let (l, host) = (Era::Legacy, Some(Era::Modern));
        let steps = f.follow(uris(&["a://1", "a://2"]), l, host);
        assert_eq!(
            steps,
            [
                FollowStep::Subscribe("a://1".into()),
                FollowStep::Subscribe("a://2".into())
            ]
        );
        let steps = f.follow(uris(&["a://2", "a://3"]), l, host);
        assert_eq!(
            steps,
            [
                FollowStep::Subscribe("a://3".into()),
                FollowStep::Unsubscribe("a://1".into())
            ]
        );
        assert!(
            f.follow(uris(&["a://3", "a://2"]), l, host).is_empty(),
            "order is no change"
        );
        // A legacy host's own subscribe requests reach a legacy server: nothing here.
        assert!(Follow::default()
            .follow(uris(&["a://1"]), l, Some(Era::Legacy))
            .is_empty());
    }

    #[test]
    fn a_restarted_server_holds_nothing_and_is_asked_for_everything_again() {
        let mut f = Follow::default();
        let host = Some(Era::Modern);
        f.follow(uris(&["a://1"]), Era::Legacy, host);
        let again = f.restarted(uris(&["a://1"]), Era::Legacy, host);
        assert_eq!(again, [FollowStep::Subscribe("a://1".into())]);
        // A legacy host before a legacy server: its subscriptions made again one by one.
        let mut f = Follow::default();
        let again = f.restarted(uris(&["a://1", "a://2"]), Era::Legacy, Some(Era::Legacy));
        assert_eq!(again.len(), 2);
        // Before a 2026-07-28 server: the stream opened again, whatever was open.
        let mut f = Follow::default();
        f.follow(uris(&["a://1"]), Era::Modern, host);
        let again = f.restarted(uris(&["a://1"]), Era::Modern, host);
        assert_eq!(again, [FollowStep::Listen(uris(&["a://1"]))]);
    }
}
