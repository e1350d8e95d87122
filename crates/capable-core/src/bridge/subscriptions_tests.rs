//! Many servers' resource subscriptions, scripted on a made-up clock: a legacy server
//! (`docs`) and a 2026-07-28 one (`live`), a server that takes none (`plain`); the
//! commands the machine asks the shell for, compared whole, and what the host is
//! answered.

use std::cell::RefCell;

use serde_json::{json, Value};

use super::*;

const WITHIN: Duration = Duration::from_secs(5);

/// The servers behind as the shell would see them: who owns which URI (by prefix),
/// who is up.
struct Servers {
    down: RefCell<BTreeSet<&'static str>>,
}

impl Servers {
    fn new() -> Self {
        Servers {
            down: RefCell::new(BTreeSet::new()),
        }
    }
}

impl Routes for Servers {
    fn route(&self, uri: &str) -> Route {
        let (server, era, subscribe) = match uri.split_once("://").map(|(s, _)| s) {
            Some("docs") => ("docs", Era::Legacy, true),
            Some("live") => ("live", Era::Modern, true),
            Some("plain") => ("plain", Era::Legacy, false),
            _ => return Route::Nobody,
        };
        if self.down.borrow().contains(server) {
            return Route::Down;
        }
        let declared = json!({"resources": {"subscribe": subscribe}});
        Route::Up {
            server: server.into(),
            era,
            capabilities: ServerCapabilities::from_value(declared),
            within: WITHIN,
        }
    }

    fn is_up(&self, server: &str) -> bool {
        !self.down.borrow().contains(server)
    }
}

fn id(n: i64) -> RequestId {
    RequestId::Number(n)
}

/// Everything the machine asks for now: its commands, whole, then its outcomes, in
/// short (`1 <- {}`, `1 <- -32602 why`, `refused: why`, `listen failed: why`).
fn drained(m: &mut Subscriptions) -> (Vec<Command>, Vec<String>) {
    let commands = std::iter::from_fn(|| m.poll_upstream()).collect();
    let outcomes = std::iter::from_fn(|| m.poll_outcome())
        .map(|o| match o {
            Outcome::Answer { id, answer: Ok(()) } => format!("{id} <- {{}}"),
            Outcome::Answer { id, answer: Err(e) } => format!("{id} <- {} {}", e.code, e.message),
            Outcome::Refused { why, once } => format!("refused (once: {once}): {why}"),
            Outcome::ListenFailed { server, error } => format!("{server} listen failed: {error}"),
        })
        .collect();
    (commands, outcomes)
}

fn subscribe(server: &str, uri: &str) -> Command {
    Command::Subscribe {
        server: server.into(),
        uri: uri.into(),
    }
}

fn listen(server: &str, uris: &[&str]) -> Command {
    Command::Listen {
        server: server.into(),
        filter: ListenFilter {
            resource_subscriptions: uris.iter().map(|u| (*u).to_owned()).collect(),
            ..ListenFilter::default()
        },
    }
}

fn stop(server: &str) -> Command {
    Command::StopListening {
        server: server.into(),
    }
}

fn held(uris: &[&str]) -> Vec<String> {
    uris.iter().map(|u| (*u).to_owned()).collect()
}

fn honouring(uris: &[&str]) -> Value {
    json!({"resourceSubscriptions": uris})
}

#[test]
fn a_subscribe_is_asked_of_its_legacy_server_and_answered_with_its_answer() {
    let (mut m, s, t0) = (Subscriptions::default(), Servers::new(), Instant::now());
    m.handle_request(id(1), Method::Subscribe, Some("docs://a"), &[], &s, t0);
    // The same request while the first waits: it waits with it, nothing asked twice.
    m.handle_request(id(2), Method::Subscribe, Some("docs://a"), &[], &s, t0);
    assert_eq!(
        drained(&mut m),
        (vec![subscribe("docs", "docs://a")], vec![])
    );
    assert_eq!(m.waiting(), 2);

    m.handle_stepped(subscribe("docs", "docs://a"), Ok(()), &s);
    assert_eq!(drained(&mut m).1, ["1 <- {}", "2 <- {}"]);
    // Its updates are the host's from that server alone.
    assert!(m.delivers("docs", "docs://a"));
    assert!(m.delivers("docs", "docs://a/part"), "a sub-resource");
    assert!(!m.delivers("live", "docs://a"), "another server's");

    // Held already (the engine's interest says so): nothing to ask, answered at once.
    let now = held(&["docs://a"]);
    m.handle_request(id(3), Method::Subscribe, Some("docs://a"), &now, &s, t0);
    assert_eq!(drained(&mut m), (vec![], vec!["3 <- {}".into()]));
}

#[test]
fn what_cannot_be_asked_is_refused_at_once_with_why() {
    let (mut m, s, t0) = (Subscriptions::default(), Servers::new(), Instant::now());
    m.handle_request(id(1), Method::Subscribe, None, &[], &s, t0);
    m.handle_request(id(2), Method::Subscribe, Some("nope://x"), &[], &s, t0);
    m.handle_request(id(3), Method::Subscribe, Some("plain://x"), &[], &s, t0);
    s.down.borrow_mut().insert("docs");
    m.handle_request(id(4), Method::Subscribe, Some("docs://a"), &[], &s, t0);
    // An unsubscribe of what the host does not hold is checked like a subscribe.
    m.handle_request(id(5), Method::Unsubscribe, Some("plain://x"), &[], &s, t0);
    let (commands, outcomes) = drained(&mut m);
    assert_eq!(commands, [], "nothing is sent");
    assert_eq!(
        outcomes,
        [
            "1 <- -32602 resources/subscribe needs a uri",
            "refused (once: false): no server of this bridge offers nope://x",
            "2 <- -32602 no server of this bridge offers nope://x",
            "refused (once: false): server \"plain\" offers plain://x but did not declare \
             resources.subscribe: its updates cannot be subscribed to",
            "3 <- -32602 server \"plain\" offers plain://x but did not declare \
             resources.subscribe: its updates cannot be subscribed to",
            "4 <- -32602 the server that offers docs://a is not up: try again later",
            "refused (once: false): server \"plain\" offers plain://x but did not declare \
             resources.subscribe: its updates cannot be subscribed to",
            "5 <- -32602 server \"plain\" offers plain://x but did not declare \
             resources.subscribe: its updates cannot be subscribed to",
        ]
    );
    assert_eq!(m.waiting(), 0);
}

#[test]
fn a_2026_07_28_server_gets_one_stream_and_its_acknowledgement_answers_the_host() {
    let (mut m, s, t0) = (Subscriptions::default(), Servers::new(), Instant::now());
    m.handle_request(id(1), Method::Subscribe, Some("live://a"), &[], &s, t0);
    assert_eq!(drained(&mut m).0, [listen("live", &["live://a"])]);
    // A second URI while the first waits: the stream opened anew with both.
    m.handle_request(id(2), Method::Subscribe, Some("live://b"), &[], &s, t0);
    assert_eq!(
        drained(&mut m).0,
        [listen("live", &["live://a", "live://b"])]
    );

    // Its acknowledgement leaves b out: a's subscribe succeeds, b's is refused.
    m.handle_acknowledged("live", &honouring(&["live://a"]));
    let (commands, outcomes) = drained(&mut m);
    assert_eq!(commands, []);
    let left_out = "server \"live\" acknowledged its listen stream without live://b: \
                    it does not send its updates";
    assert_eq!(
        outcomes,
        [
            format!("refused (once: true): {left_out}"),
            "1 <- {}".into(),
            format!("2 <- -32602 {left_out}"),
        ]
    );
    assert!(m.delivers("live", "live://a"));
    assert!(!m.delivers("live", "live://b"), "not honoured");
    assert_eq!(m.poll_timeout(), None, "acknowledged: no bound left");

    // The host lets a go: nothing is wanted there any more, the stream ends.
    m.handle_interest(&[], &s, t0);
    assert_eq!(drained(&mut m), (vec![stop("live")], vec![]));
}

#[test]
fn a_stream_not_acknowledged_in_time_ends_and_its_requests_fail() {
    let (mut m, s, t0) = (Subscriptions::default(), Servers::new(), Instant::now());
    m.handle_request(id(1), Method::Subscribe, Some("live://a"), &[], &s, t0);
    assert_eq!(drained(&mut m).0, [listen("live", &["live://a"])]);
    assert_eq!(m.poll_timeout(), Some(t0 + WITHIN));

    m.handle_timeout(t0 + WITHIN - Duration::from_millis(1));
    assert_eq!(drained(&mut m), (vec![], vec![]), "not yet");
    m.handle_timeout(t0 + WITHIN);
    let late = "server \"live\" did not acknowledge its listen stream within 5s";
    assert_eq!(
        drained(&mut m),
        (
            vec![stop("live")],
            vec![
                format!("live listen failed: {late}"),
                format!("1 <- -32603 {late}")
            ]
        )
    );
    assert_eq!(m.poll_timeout(), None);
    // It holds nothing: the next plan opens the stream again.
    let t1 = t0 + WITHIN * 2;
    m.handle_interest(&held(&["live://a"]), &s, t1);
    assert_eq!(drained(&mut m).0, [listen("live", &["live://a"])]);
    assert_eq!(m.poll_timeout(), Some(t1 + WITHIN));
}

#[test]
fn a_server_that_goes_down_fails_its_requests_and_is_asked_again_once_back() {
    let (mut m, s, t0) = (Subscriptions::default(), Servers::new(), Instant::now());
    m.handle_request(id(1), Method::Subscribe, Some("live://a"), &[], &s, t0);
    m.handle_request(id(2), Method::Subscribe, Some("docs://a"), &[], &s, t0);
    drained(&mut m);
    s.down.borrow_mut().insert("live");
    m.handle_down("live");
    let (commands, outcomes) = drained(&mut m);
    assert_eq!(commands, [stop("live")]);
    assert_eq!(
        outcomes,
        ["1 <- -32602 server \"live\" went down before it acknowledged the subscription"]
    );
    // docs' request still waits for its own answer: another server's fall is not its.
    assert_eq!(m.waiting(), 1);
    // A legacy server down: no stream to end; its step in flight is answered as it
    // ends.
    s.down.borrow_mut().insert("docs");
    m.handle_down("docs");
    assert_eq!(drained(&mut m), (vec![], vec![]));

    // Both back, the host holding both: each asked again, in its era, nothing refused.
    s.down.borrow_mut().clear();
    let both = held(&["docs://a", "live://a"]);
    m.handle_interest(&both, &s, t0);
    assert_eq!(
        drained(&mut m),
        (
            vec![subscribe("docs", "docs://a"), listen("live", &["live://a"])],
            vec![]
        )
    );
    m.handle_stepped(subscribe("docs", "docs://a"), Ok(()), &s);
    assert_eq!(drained(&mut m).1, ["2 <- {}"]);
}

#[test]
fn a_failed_step_leaves_its_server_holding_what_it_held() {
    let (mut m, s, t0) = (Subscriptions::default(), Servers::new(), Instant::now());
    m.handle_request(id(1), Method::Subscribe, Some("docs://a"), &[], &s, t0);
    drained(&mut m);
    m.handle_stepped(subscribe("docs", "docs://a"), Ok(()), &s);
    drained(&mut m);
    let holding = held(&["docs://a"]);
    m.handle_request(
        id(2),
        Method::Unsubscribe,
        Some("docs://a"),
        &holding,
        &s,
        t0,
    );
    let unsubscribe = Command::Unsubscribe {
        server: "docs".into(),
        uri: "docs://a".into(),
    };
    assert_eq!(drained(&mut m).0, std::slice::from_ref(&unsubscribe));
    let no = RpcError {
        code: codes::INTERNAL_ERROR,
        message: "no".into(),
        data: None,
    };
    m.handle_stepped(unsubscribe, Err(no), &s);
    assert_eq!(drained(&mut m).1, ["2 <- -32603 no"]);
    // Still held there: its updates still reach the host, and the host holds it
    // (the engine's interest unchanged): nothing to ask.
    assert!(m.delivers("docs", "docs://a"));
    m.handle_interest(&holding, &s, t0);
    assert_eq!(drained(&mut m), (vec![], vec![]));
}

#[test]
fn a_stream_the_server_ends_fails_what_waits_at_it_alone() {
    let (mut m, s, t0) = (Subscriptions::default(), Servers::new(), Instant::now());
    m.handle_request(id(1), Method::Subscribe, Some("live://a"), &[], &s, t0);
    m.handle_request(id(2), Method::Subscribe, Some("docs://a"), &[], &s, t0);
    drained(&mut m);
    m.handle_ended("live", None);
    assert_eq!(
        drained(&mut m),
        (
            vec![stop("live")],
            vec![
                "1 <- -32603 server \"live\" ended its listen stream before it acknowledged it"
                    .into()
            ]
        )
    );
    assert_eq!(m.waiting(), 1);
    assert!(!m.delivers("live", "live://a"));
}
