//! The server engine's own messages to scripted clients, on a made-up clock: its
//! requests and their deadlines, and which notifications may go where (declared,
//! subscribed, asked for by a request in flight or a listen stream). Every line the
//! server writes is validated as a server message of the version it speaks.

mod common;

use std::time::Duration;

use capable_core::internal::jsonrpc::codes;
use capable_core::internal::notification::Notification;
use capable_core::internal::server::{ClientNotice, Event, NotAllowed, ServerMethod, Withheld};
use capable_core::{ProtocolChoice, RequestId};
use capable_test_support::{assert_valid_result, at_ms};
use serde_json::{json, Value};

use common::server::{meta, server, Scripted};
use common::{MODERN, V};

#[test]
fn the_servers_own_requests_pass_the_clients_declaration_and_time_out() {
    let mut s = Scripted::initialize(V.as_str(), json!({"tools": {}}), json!({"elicitation": {}}));
    let form = json!({"mode": "form", "message": "ok?", "requestedSchema": {"type": "object", "properties": {}}});
    let id = s
        .server
        .request(
            ServerMethod::Elicit,
            &form,
            None,
            "ask",
            at_ms(0),
            &mut s.out,
        )
        .expect("declared");
    let sent = s.written();
    assert_eq!(
        (sent[0]["id"].as_i64(), sent[0]["method"].as_str()),
        (Some(id), Some("elicitation/create"))
    );
    // Not declared: refused, nothing written, the waiter handed back.
    let refused = s.server.request(
        ServerMethod::ListRoots,
        &json!({}),
        None,
        "roots",
        at_ms(0),
        &mut s.out,
    );
    assert!(matches!(
        refused,
        Err((
            NotAllowed::NotDeclared {
                capability: "roots",
                ..
            },
            "roots"
        ))
    ));
    let url =
        json!({"mode": "url", "message": "go", "url": "https://example.com", "elicitationId": "e"});
    assert!(s
        .server
        .request(
            ServerMethod::Elicit,
            &url,
            None,
            "url",
            at_ms(0),
            &mut s.out
        )
        .is_err());
    assert!(s.written().is_empty());

    // The answer reaches its waiter.
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {}}});
    let Event::Response {
        waiter,
        method,
        outcome,
        ..
    } = s.send(answer.clone())
    else {
        panic!("not routed")
    };
    assert_eq!((waiter, method), ("ask", ServerMethod::Elicit));
    assert_eq!(
        outcome.unwrap().decode::<Value>().unwrap()["action"],
        "accept"
    );
    // Twice: a notice, nothing else.
    assert!(matches!(s.send(answer), Event::Handled));
    assert!(matches!(
        &s.server.take_notices()[..],
        [ClientNotice::UnknownResponse { .. }]
    ));

    // A deadline: its own, or the configured one; early calls do nothing.
    let short = s
        .server
        .request(
            ServerMethod::Ping,
            &json!({}),
            Some(Duration::from_secs(1)),
            "short",
            at_ms(0),
            &mut s.out,
        )
        .unwrap();
    let long = s
        .server
        .request(
            ServerMethod::Ping,
            &json!({}),
            None,
            "long",
            at_ms(0),
            &mut s.out,
        )
        .unwrap();
    s.written();
    assert_eq!(s.server.poll_timeout(), Some(at_ms(1000)));
    assert!(s.server.handle_timeout(at_ms(999), &mut s.out).is_empty());
    let expired = s.server.handle_timeout(at_ms(1000), &mut s.out);
    assert_eq!(
        (expired[0].id, expired[0].waiter, expired[0].after),
        (short, "short", Duration::from_secs(1))
    );
    let cancelled = s.written();
    assert_eq!(cancelled[0]["method"], "notifications/cancelled");
    assert_eq!(cancelled[0]["params"]["requestId"], short);
    assert_eq!(s.server.poll_timeout(), Some(at_ms(5000)));
    assert_eq!(s.server.cancel(long, "done", &mut s.out), Some("long"));
    assert_eq!(s.written()[0]["params"]["requestId"], long);
    assert_eq!(s.server.requests_in_flight(), 0);
}

#[test]
fn a_modern_client_gets_no_requests_and_a_closed_server_writes_nothing() {
    let mut s = server(json!({"tools": {}}), ProtocolChoice::Auto);
    s.modern(1, "tools/list", json!({}));
    let refused = s.server.request(
        ServerMethod::Elicit,
        &json!({}),
        None,
        "x",
        at_ms(0),
        &mut s.out,
    );
    assert!(matches!(refused, Err((NotAllowed::NotInVersion { .. }, _))));
    let mut s = Scripted::initialize(V.as_str(), json!({"tools": {}}), json!({}));
    s.server
        .request(
            ServerMethod::Ping,
            &json!({}),
            None,
            "ping",
            at_ms(0),
            &mut s.out,
        )
        .unwrap();
    s.written();
    assert_eq!(s.server.close(), vec!["ping"]);
    assert!(matches!(
        s.request(5, "tools/list", json!({})),
        Event::Handled
    ));
    assert_eq!(s.server.poll_timeout(), None);
    let n = Notification::ToolsListChanged;
    assert_eq!(
        s.server.notify(&n, &json!({}), &mut s.out),
        Err(Withheld::Closed)
    );
    assert!(s.out.is_empty());
}

#[test]
fn legacy_notifications_go_only_where_declared_and_subscribed() {
    let caps =
        json!({"resources": {"subscribe": true}, "tools": {"listChanged": true}, "logging": {}});
    let mut s = Scripted::initialize(V.as_str(), caps, json!({}));
    let updated = |uri: &str| {
        (
            Notification::ResourceUpdated { uri: uri.into() },
            json!({"uri": uri}),
        )
    };
    let (n, p) = updated("docs://a");
    assert_eq!(
        s.server.notify(&n, &p, &mut s.out),
        Err(Withheld::NotSubscribed {
            uri: "docs://a".into()
        })
    );
    // A subscription takes effect when it is answered.
    let Event::Request(sub) = s.request(2, "resources/subscribe", json!({"uri": "docs://a"}))
    else {
        panic!("not routed")
    };
    assert!(
        s.server.notify(&n, &p, &mut s.out).is_err(),
        "not answered yet"
    );
    s.server.respond(&sub.id, &json!({}), &mut s.out);
    s.written();
    let (sub_resource, p2) = updated("docs://a/part");
    assert_eq!(s.server.notify(&sub_resource, &p2, &mut s.out), Ok(()));
    assert_eq!(s.written()[0]["params"]["uri"], "docs://a/part");
    // Relayed from a 2026-07-28 server: its stream id means nothing to a legacy client.
    let relayed =
        json!({"uri": "docs://a", "_meta": {"io.modelcontextprotocol/subscriptionId": 4}});
    s.server.notify(&n, &relayed, &mut s.out).unwrap();
    assert_eq!(s.written()[0]["params"], json!({"uri": "docs://a"}));
    assert!(
        s.server.interest().resource_subscriptions == ["docs://a"]
            && s.server.interest().tools_list_changed
    );
    let Event::Request(unsub) = s.request(3, "resources/unsubscribe", json!({"uri": "docs://a"}))
    else {
        panic!("not routed")
    };
    s.server.respond(&unsub.id, &json!({}), &mut s.out);
    s.written();
    assert!(s.server.notify(&n, &p, &mut s.out).is_err());

    // Lists: declared or not.
    assert_eq!(
        s.server
            .notify(&Notification::ToolsListChanged, &json!({}), &mut s.out),
        Ok(())
    );
    assert!(matches!(
        s.server
            .notify(&Notification::PromptsListChanged, &json!({}), &mut s.out),
        Err(Withheld::NotDeclared { .. })
    ));
    // Logs at or above the level asked for.
    let Event::Request(level) = s.request(4, "logging/setLevel", json!({"level": "warning"}))
    else {
        panic!("not routed")
    };
    s.server.respond(&level.id, &json!({}), &mut s.out);
    let log = |level: &str| {
        let p = json!({"level": level, "data": "x"});
        (Notification::from_value("notifications/message", &p), p)
    };
    let (info, p) = log("info");
    assert!(matches!(
        s.server.notify(&info, &p, &mut s.out),
        Err(Withheld::BelowLevel { .. })
    ));
    let (error, p) = log("error");
    assert_eq!(s.server.notify(&error, &p, &mut s.out), Ok(()));
    let written = s.written();
    assert_eq!(
        written.len(),
        3,
        "list_changed, the setLevel answer, the error line: {written:?}"
    );
    s.request(5, "logging/setLevel", json!({"level": "loud"}));
    s.refused(codes::INVALID_PARAMS);
}

#[test]
fn progress_goes_only_to_a_request_in_flight_that_asked_for_it() {
    let mut s = Scripted::initialize("2024-11-05", json!({"tools": {}}), json!({}));
    let Event::Request(asked) = s.request(
        2,
        "tools/call",
        json!({"name": "x", "_meta": {"progressToken": "p-1"}}),
    ) else {
        panic!("not routed")
    };
    assert!(asked.wants_progress);
    s.server
        .progress(&asked.id, 1.0, Some(2.0), Some("half"), &mut s.out)
        .unwrap();
    let progress = s.written();
    // 2024-11-05 has no progress message; whole numbers are written as integers.
    assert_eq!(
        progress[0]["params"],
        json!({"progressToken": "p-1", "progress": 1, "total": 2})
    );
    s.server
        .progress(&asked.id, 1.5, None, None, &mut s.out)
        .unwrap();
    assert_eq!(s.written()[0]["params"]["progress"], 1.5);
    let Event::Request(silent) = s.request(3, "tools/call", json!({"name": "x"})) else {
        panic!("not routed")
    };
    assert_eq!(
        s.server.progress(&silent.id, 1.0, None, None, &mut s.out),
        Err(Withheld::NoRequest { what: "progress" })
    );
    s.server
        .respond(&asked.id, &json!({"content": []}), &mut s.out);
    s.written();
    assert!(
        s.server
            .progress(&asked.id, 2.0, None, None, &mut s.out)
            .is_err(),
        "answered already"
    );
}

#[test]
fn a_listen_stream_is_acknowledged_with_what_was_declared_and_gets_only_what_it_asked_for() {
    let caps =
        json!({"resources": {"listChanged": true}, "tools": {"listChanged": true}, "logging": {}});
    let mut s = server(caps, ProtocolChoice::Auto);
    s.version = MODERN;
    let filter = json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true,
        "resourceSubscriptions": ["docs://a"]}});
    let Event::Interest(interest) = s.modern(7, "subscriptions/listen", filter) else {
        panic!("a listen stream is the engine's")
    };
    // Prompts and subscriptions were not declared: not honoured.
    assert!(interest.tools_list_changed && !interest.prompts_list_changed);
    assert!(interest.resource_subscriptions.is_empty());
    let ack = s.written();
    assert_eq!(ack[0]["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack[0]["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(
        ack[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    let Event::Interest(_) = s.modern(
        8,
        "subscriptions/listen",
        json!({"notifications": {"resourcesListChanged": true}}),
    ) else {
        panic!("a second stream")
    };
    s.written();

    // Each change to the streams that asked, tagged with theirs.
    s.server
        .notify(
            &Notification::ToolsListChanged,
            &json!({"_meta": {"io.modelcontextprotocol/subscriptionId": 99}}),
            &mut s.out,
        )
        .unwrap();
    let tools = s.written();
    assert_eq!(tools.len(), 1);
    assert_eq!(
        tools[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    s.server
        .notify(&Notification::ResourcesListChanged, &json!({}), &mut s.out)
        .unwrap();
    assert_eq!(
        s.written()[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        8
    );
    // A log line belongs to a request that asked for one, never to a stream.
    let p = json!({"level": "info", "data": "x"});
    let log = Notification::from_value("notifications/message", &p);
    assert!(matches!(
        s.server.notify(&log, &p, &mut s.out),
        Err(Withheld::NoRequest { .. })
    ));
    let mut params = json!({"name": "t", "_meta": meta(MODERN.as_str())});
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    let Event::Request(call) = s.request(9, "tools/call", params) else {
        panic!("not routed")
    };
    assert_eq!(s.server.notify(&log, &p, &mut s.out), Ok(()));
    assert_eq!(s.written()[0]["method"], "notifications/message");
    s.server.respond(
        &call.id,
        &json!({"resultType": "complete", "content": []}),
        &mut s.out,
    );
    s.written();

    // The client ends one stream, the server the other.
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}});
    let Event::Interest(left) = s.send(cancel) else {
        panic!("the end of a stream changes the interest")
    };
    assert!(!left.tools_list_changed && left.resources_list_changed);
    assert!(matches!(
        s.server
            .notify(&Notification::ToolsListChanged, &json!({}), &mut s.out),
        Err(Withheld::NotListened { .. })
    ));
    assert!(s.server.end_listen(&RequestId::Number(8), &mut s.out));
    let end = s.written();
    assert_valid_result(MODERN, "SubscriptionsListenResult", &end[0]);
    assert_eq!(s.server.listen_streams().count(), 0);
}

#[test]
fn a_notification_of_no_protocol_method_goes_only_where_the_application_lets_it() {
    let mut s = server(json!({"tools": {}}), ProtocolChoice::Auto);
    s.version = MODERN;
    let p = json!({"n": 1});
    let own = Notification::from_value("x/custom", &p);
    // The session is known: a request came.
    let call = json!({"name": "t", "_meta": meta(MODERN.as_str())});
    let Event::Request(_) = s.request(1, "tools/call", call) else {
        panic!("not routed")
    };
    s.written();
    assert_eq!(
        s.server.notify(&own, &p, &mut s.out),
        Err(Withheld::Custom {
            method: "x/custom".into()
        })
    );
    assert!(s.written().is_empty());
    s.server
        .set_custom_notifications(Box::new(|m: &str| m.starts_with("x/")));
    assert_eq!(s.server.notify(&own, &p, &mut s.out), Ok(()));
    // A server's own, which no schema has: read as it is.
    let line = String::from_utf8_lossy(s.out.bytes()).into_owned();
    assert!(line.contains(r#""method":"x/custom""#), "{line}");
    s.out.clear();
    let other = Notification::from_value("y/other", &p);
    assert!(s.server.notify(&other, &p, &mut s.out).is_err());
}

#[test]
fn clients_that_cannot_be_told_apart_never_get_each_others_log_lines() {
    let mut s = server(json!({"logging": {}, "tools": {}}), ProtocolChoice::Auto);
    s.version = MODERN;
    // A bridge's 2026-07-28 hosts over HTTP: two requests in flight may be two hosts'.
    s.server.set_shared(true);
    let p = json!({"level": "info", "data": "whose?"});
    let log = Notification::from_value("notifications/message", &p);
    let call = |s: &mut Scripted, id: i64| {
        let mut params = json!({"name": "t", "_meta": meta(MODERN.as_str())});
        params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
        match s.request(id, "tools/call", params) {
            Event::Request(call) => call,
            _ => panic!("not routed"),
        }
    };
    let first = call(&mut s, 1);
    assert_eq!(
        s.server.notify(&log, &p, &mut s.out),
        Ok(()),
        "the only one"
    );
    assert_eq!(s.written()[0]["method"], "notifications/message");
    let second = call(&mut s, 2);
    assert_eq!(
        s.server.notify(&log, &p, &mut s.out),
        Err(Withheld::Unattributable {
            what: "a log line",
            requests: 2
        })
    );
    assert!(s.written().is_empty(), "nothing guessed");
    // One client alone (a legacy session, stdio): the line goes to a request that asked.
    s.server.set_shared(false);
    assert_eq!(s.server.notify(&log, &p, &mut s.out), Ok(()));
    let done = json!({"resultType": "complete", "content": []});
    s.server.respond(&first.id, &done, &mut s.out);
    s.server.respond(&second.id, &done, &mut s.out);
}

#[test]
fn a_listen_stream_is_acknowledged_with_the_uris_that_can_be_subscribed_alone() {
    let mut s = server(
        json!({"resources": {"subscribe": true}}),
        ProtocolChoice::Auto,
    );
    s.version = MODERN;
    // A server in front of several: only `live://` URIs take subscriptions.
    s.server
        .set_subscribable(Box::new(|uri: &str| uri.starts_with("live://")));
    let filter =
        json!({"notifications": {"resourceSubscriptions": ["live://a", "docs://b", "live://c"]}});
    let Event::Interest(interest) = s.modern(7, "subscriptions/listen", filter) else {
        panic!("a listen stream is the engine's")
    };
    assert_eq!(interest.resource_subscriptions, ["live://a", "live://c"]);
    let ack = s.written();
    assert_eq!(
        ack[0]["params"]["notifications"],
        json!({"resourceSubscriptions": ["live://a", "live://c"]})
    );
    assert!(matches!(
        &s.server.take_notices()[..],
        [ClientNotice::NotSubscribable { uris }] if uris == &["docs://b"]
    ));
    // An update of the URI left out is not the stream's.
    let updated = Notification::from_value(
        "notifications/resources/updated",
        &json!({"uri": "docs://b"}),
    );
    assert!(s
        .server
        .notify(&updated, &json!({"uri": "docs://b"}), &mut s.out)
        .is_err());
}

#[test]
fn state_kept_upstream_lets_the_servers_updates_and_log_lines_through_unseen_here() {
    // A relay's engine whose server session is this client's alone, continued on
    // another replica: the subscribe and setLevel went through a replica before it.
    let caps = json!({"resources": {"subscribe": true}, "logging": {}});
    let mut s = Scripted::initialize(V.as_str(), caps, json!({}));
    let update = Notification::ResourceUpdated {
        uri: "docs://a".into(),
    };
    let p = json!({"uri": "docs://a"});
    let debug = json!({"level": "debug", "data": "x"});
    let line = Notification::from_value("notifications/message", &debug);
    let Event::Request(level) = s.request(2, "logging/setLevel", json!({"level": "error"})) else {
        panic!("not routed")
    };
    s.server.respond(&level.id, &json!({}), &mut s.out);
    s.written();
    assert!(s.server.notify(&update, &p, &mut s.out).is_err());
    assert!(s.server.notify(&line, &debug, &mut s.out).is_err());
    s.server.keep_state_upstream();
    assert_eq!(s.server.notify(&update, &p, &mut s.out), Ok(()));
    assert_eq!(s.server.notify(&line, &debug, &mut s.out), Ok(()));
    assert_eq!(s.written().len(), 2);
    // What the server did not declare is still withheld.
    assert!(matches!(
        s.server
            .notify(&Notification::PromptsListChanged, &json!({}), &mut s.out),
        Err(Withheld::NotDeclared { .. })
    ));
}
