//! The HTTP policy against hostile servers: no reconnect storm (a `retry: 0` has a
//! floor, a stream that sends one event and closes again and again is given up), an
//! answer that is no JSON fails its request at once, and nothing of the host's follows
//! a redirect to another origin.

mod common;

use std::time::Duration;

use capable_core::internal::http::redirect::redirected;
use capable_core::internal::http::{
    Action, End, Failure, HttpMethod, Reconnect, Request, StreamEvent,
};
use capable_core::{Notice, ProtocolVersion};
use serde_json::json;

use common::http::*;

fn message() -> StreamEvent {
    StreamEvent::Message(line(
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}),
    ))
}

#[test]
fn a_retry_of_zero_waits_the_floor_not_nothing() {
    let (mut http, opened) = legacy(ProtocolVersion::V2025_11_25);
    let (ex, _, _) = sent(&opened);
    http.on_head(ex, &sse());
    let end = End {
        retry: Some(Duration::ZERO),
        ..End::default()
    };
    let (_, get, _) = sent(&http.on_end(ex, end));
    assert_eq!(get.delay, Reconnect::MIN_SERVER_RETRY);
}

#[test]
fn a_stream_that_sends_one_event_and_closes_is_given_up_like_an_empty_one() {
    let (mut http, opened) = legacy(ProtocolVersion::V2025_11_25);
    let (ex, _, _) = sent(&opened);
    let mut gets = 0;
    loop {
        http.on_head(ex, &sse());
        assert!(matches!(
            &http.on_event(ex, message())[..],
            [Action::Deliver(_)]
        ));
        let actions = http.on_end(ex, End::default());
        if actions
            .iter()
            .any(|a| matches!(a, Action::Notice(Notice::StreamGivenUp { .. })))
        {
            break;
        }
        sent(&actions);
        gets += 1;
        assert!(gets <= 3, "an event per stream must not reset the count");
    }
    assert_eq!(gets, 3, "the configured attempts, then given up");
}

#[test]
fn a_stream_that_stayed_up_and_delivered_counts_its_reconnects_anew() {
    let (mut http, opened) = legacy(ProtocolVersion::V2025_11_25);
    let (ex, _, _) = sent(&opened);
    // Two broken streams in a row, then a healthy one, then more breaks: the healthy
    // stream starts the count again, so none of this is given up.
    for round in 0..3 {
        for _ in 0..2 {
            http.on_head(ex, &sse());
            sent(&http.on_end(ex, End::default()));
        }
        http.on_head(ex, &sse());
        http.on_event(ex, message());
        let healthy = End {
            lasted: Duration::from_secs(31),
            ..End::default()
        };
        let actions = http.on_end(ex, healthy);
        assert!(
            actions.iter().any(|a| matches!(a, Action::Send { .. })),
            "round {round}: {actions:?}"
        );
    }
}

#[test]
fn an_answer_that_is_no_json_fails_its_request_at_once() {
    let mut http = session();
    let list =
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": meta()}});
    let (ex, _, _) = sent(&http.send_line(&line(list)));
    http.on_head(ex, &head(200));
    let actions = http.on_body(ex, b"<html>Service Unavailable</html>".to_vec());
    let (id, failure) = failed(&actions).expect("failed at once");
    assert_eq!(id, json!(4));
    assert!(
        matches!(&failure, Failure::Malformed { method, detail } if method.as_str() == "tools/list" && detail.contains("Service Unavailable")),
        "{failure:?}"
    );
    assert!(delivered(&actions).is_empty());
}

#[test]
fn none_of_the_hosts_headers_follow_a_redirect_to_another_origin() {
    let request = Request {
        method: HttpMethod::Post,
        url: "https://mcp.test/mcp".parse().unwrap(),
        headers: vec![
            ("mcp-session-id".into(), "secret-session".into()),
            ("mcp-protocol-version".into(), "2025-11-25".into()),
        ],
        body: None,
        user_headers: true,
        delay: Duration::ZERO,
    };
    let hop = redirected(&request, "https://elsewhere.test/mcp").unwrap();
    assert!(!hop.user_headers, "no Authorization, Cookie, X-Api-Key, …");
    assert!(hop.headers.iter().all(|(n, _)| n != "mcp-session-id"));
    assert_eq!(header(&hop, "mcp-protocol-version"), Some("2025-11-25"));
}
