//! What the one server behind is asked for its host, scripted: the steps the machine
//! asks the shell for, compared whole, and what the shell is to carry out.

use serde_json::json;

use super::*;

fn uris(list: &[&str]) -> Interest {
    Interest {
        resource_subscriptions: list.iter().map(|u| (*u).to_owned()).collect(),
        ..Interest::default()
    }
}

/// Everything the machine asks for now: its steps, then its outcomes.
fn drained(f: &mut Follow) -> (Vec<FollowStep>, Vec<Outcome>) {
    let steps = std::iter::from_fn(|| f.poll_upstream()).collect();
    let outcomes = std::iter::from_fn(|| f.poll_outcome()).collect();
    (steps, outcomes)
}

/// The steps alone.
fn steps(f: &mut Follow) -> Vec<FollowStep> {
    drained(f).0
}

fn listen(token: u64, interest: Interest) -> FollowStep {
    FollowStep::Listen { token, interest }
}

fn caps(value: serde_json::Value) -> ServerCapabilities {
    ServerCapabilities::from_value(value)
}

#[test]
fn a_2026_07_28_server_gets_one_stream_for_the_whole_interest_and_anew_on_change() {
    let mut f = Follow::default();
    let (m, host) = (Era::Modern, Some(Era::Legacy));
    f.handle_interest(uris(&["a://1"]), m, host);
    assert_eq!(steps(&mut f), [listen(1, uris(&["a://1"]))]);
    // The same interest again: nothing to ask.
    f.handle_interest(uris(&["a://1"]), m, host);
    assert_eq!(steps(&mut f), []);
    let both = uris(&["a://1", "a://2"]);
    f.handle_interest(both.clone(), m, host);
    assert_eq!(steps(&mut f), [listen(2, both.clone())]);
    f.handle_interest(Interest::default(), m, host);
    assert_eq!(steps(&mut f), [FollowStep::StopListening]);
    // A stream that ended is opened again at the next change, even to the same.
    f.handle_interest(both.clone(), m, host);
    assert_eq!(steps(&mut f), [listen(3, both.clone())]);
    f.handle_ended(3, None);
    assert_eq!(
        drained(&mut f),
        (vec![], vec![]),
        "closed by the server: no failure"
    );
    f.handle_interest(both.clone(), m, host);
    assert_eq!(steps(&mut f), [listen(4, both)]);
}

#[test]
fn a_stream_that_fails_to_open_is_said_and_opened_again_at_the_next_change() {
    let mut f = Follow::default();
    let (m, host) = (Era::Modern, Some(Era::Modern));
    f.handle_interest(uris(&["a://1"]), m, host);
    assert_eq!(steps(&mut f), [listen(1, uris(&["a://1"]))]);
    f.handle_opened(1, Err("refused".into()));
    assert_eq!(
        drained(&mut f),
        (vec![], vec![Outcome::ListenFailed("refused".into())])
    );
    // Not taken for open: the same interest asks for it again.
    f.handle_interest(uris(&["a://1"]), m, host);
    assert_eq!(steps(&mut f), [listen(2, uris(&["a://1"]))]);
    f.handle_opened(2, Ok(()));
    assert_eq!(drained(&mut f), (vec![], vec![]));
}

#[test]
fn the_end_of_a_stream_replaced_since_changes_nothing() {
    let mut f = Follow::default();
    let (m, host) = (Era::Modern, Some(Era::Legacy));
    f.handle_interest(uris(&["a://1"]), m, host);
    f.handle_interest(uris(&["a://1", "a://2"]), m, host);
    assert_eq!(steps(&mut f).len(), 2);
    // The first stream, replaced, ends late (it was dropped, cancelled at the server).
    f.handle_ended(1, Some("cancelled".into()));
    assert_eq!(drained(&mut f), (vec![], vec![]));
    // The one open is still taken for open: the same interest asks for nothing.
    f.handle_interest(uris(&["a://1", "a://2"]), m, host);
    assert_eq!(steps(&mut f), []);
    f.handle_ended(2, Some("gone".into()));
    assert_eq!(drained(&mut f).1, [Outcome::ListenFailed("gone".into())]);
}

#[test]
fn a_legacy_server_is_asked_for_each_uri_a_2026_07_28_host_comes_to_want_or_not() {
    let mut f = Follow::default();
    let (l, host) = (Era::Legacy, Some(Era::Modern));
    f.handle_interest(uris(&["a://1", "a://2"]), l, host);
    assert_eq!(
        steps(&mut f),
        [
            FollowStep::Subscribe("a://1".into()),
            FollowStep::Subscribe("a://2".into())
        ]
    );
    f.handle_interest(uris(&["a://2", "a://3"]), l, host);
    assert_eq!(
        steps(&mut f),
        [
            FollowStep::Subscribe("a://3".into()),
            FollowStep::Unsubscribe("a://1".into())
        ]
    );
    f.handle_interest(uris(&["a://3", "a://2"]), l, host);
    assert_eq!(steps(&mut f), [], "order is no change");
    // A legacy host's own subscribe requests reach a legacy server: nothing here.
    let mut f = Follow::default();
    f.handle_interest(uris(&["a://1"]), l, Some(Era::Legacy));
    assert_eq!(steps(&mut f), []);
}

#[test]
fn a_failed_subscribe_is_said_and_asked_again_at_the_next_change() {
    let mut f = Follow::default();
    let (l, host) = (Era::Legacy, Some(Era::Modern));
    f.handle_interest(uris(&["a://1"]), l, host);
    let step = FollowStep::Subscribe("a://1".into());
    assert_eq!(steps(&mut f), std::slice::from_ref(&step));
    f.handle_stepped(step.clone(), Err("no".into()));
    let failed = Outcome::StepFailed {
        step: step.clone(),
        error: "no".into(),
    };
    assert_eq!(drained(&mut f), (vec![], vec![failed]));
    // Not held: the next interest that wants it asks again.
    f.handle_interest(uris(&["a://1", "a://2"]), l, host);
    assert_eq!(steps(&mut f), [step, FollowStep::Subscribe("a://2".into())]);
    // An unsubscribe that fails leaves it held: asked again when still unwanted.
    f.handle_interest(uris(&["a://2"]), l, host);
    let gone = FollowStep::Unsubscribe("a://1".into());
    assert_eq!(steps(&mut f), std::slice::from_ref(&gone));
    f.handle_stepped(gone.clone(), Err("busy".into()));
    drained(&mut f);
    f.handle_interest(uris(&["a://2", "a://3"]), l, host);
    assert_eq!(steps(&mut f), [FollowStep::Subscribe("a://3".into()), gone]);
}

#[test]
fn a_restarted_server_holds_nothing_and_is_asked_for_everything_again() {
    let same = caps(json!({"resources": {"subscribe": true}}));
    let mut f = Follow::default();
    let host = Some(Era::Modern);
    f.handle_interest(uris(&["a://1"]), Era::Legacy, host);
    drained(&mut f);
    f.handle_restarted(uris(&["a://1"]), (Era::Legacy, host), &same, &same);
    assert_eq!(
        drained(&mut f),
        (
            vec![FollowStep::Subscribe("a://1".into())],
            vec![Outcome::ListsChanged]
        )
    );
    // A legacy host before a legacy server: its subscriptions made again one by one.
    let mut f = Follow::default();
    let both = uris(&["a://1", "a://2"]);
    f.handle_restarted(both, (Era::Legacy, Some(Era::Legacy)), &same, &same);
    assert_eq!(steps(&mut f).len(), 2);
    // Before a 2026-07-28 server: the stream opened again, whatever was open; a server
    // back with another declaration is said.
    let mut f = Follow::default();
    f.handle_interest(uris(&["a://1"]), Era::Modern, host);
    drained(&mut f);
    let other = caps(json!({}));
    f.handle_restarted(uris(&["a://1"]), (Era::Modern, host), &other, &same);
    assert_eq!(
        drained(&mut f),
        (
            vec![listen(2, uris(&["a://1"]))],
            vec![Outcome::CapabilitiesChanged, Outcome::ListsChanged]
        )
    );
    // The old session's stream ending now is no matter.
    f.handle_ended(1, Some("closed".into()));
    assert_eq!(drained(&mut f), (vec![], vec![]));
}
