//! The server engine against scripted clients, on a made-up clock: both eras'
//! negotiation, the gating table from the server's side, cancellation both ways, the
//! server's own requests and their deadlines, and what notifications may go where.
//! Every line the server writes is validated as a server message of the version it
//! speaks (and each answer's result against its definition).

use std::time::Duration;

use capable_core::jsonrpc::codes;
use capable_core::notification::Notification;
use capable_core::server::{
    ClientNotice, Event, NotAllowed, Phase, ServerConfig, ServerConnection, ServerMethod, Withheld,
};
use capable_core::{Incoming, Method, Outbox, ProtocolChoice, ProtocolVersion, RequestId};
use capable_test_support::{assert_valid_result, at_ms, take_from_server};
use serde_json::{json, Value};

const V: ProtocolVersion = ProtocolVersion::V2025_11_25;
const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;

/// A server and what it wrote, spoken to as `version`.
struct Scripted {
    server: ServerConnection<&'static str>,
    out: Outbox,
    version: ProtocolVersion,
}

fn server(capabilities: Value, protocol: ProtocolChoice) -> Scripted {
    let mut config = ServerConfig::new(
        capable_core::model::Implementation::new("scripted-server", "1.0"),
        capabilities,
    );
    config.protocol = protocol;
    config.instructions = Some("read docs://a".into());
    config.request_timeout = Duration::from_secs(5);
    Scripted {
        server: ServerConnection::new(config),
        out: Outbox::new(),
        version: V,
    }
}

fn message(v: Value) -> Incoming {
    Incoming::parse(v.to_string().into_bytes()).expect("a JSON-RPC message")
}

fn meta(version: &str) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "host", "version": "1"}})
}

impl Scripted {
    fn send(&mut self, v: Value) -> Event<&'static str> {
        self.server.handle(message(v), &mut self.out)
    }

    fn request(&mut self, id: i64, method: &str, params: Value) -> Event<&'static str> {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    }

    fn modern(&mut self, id: i64, method: &str, mut params: Value) -> Event<&'static str> {
        params["_meta"] = meta(MODERN.as_str());
        self.request(id, method, params)
    }

    fn written(&mut self) -> Vec<Value> {
        take_from_server(self.version, &mut self.out)
    }

    /// The one message written, which must be an error with `code`.
    #[track_caller]
    fn refused(&mut self, code: i64) -> Value {
        let written = self.written();
        assert_eq!(written.len(), 1, "{written:?}");
        assert_eq!(written[0]["error"]["code"], code, "{}", written[0]);
        written[0].clone()
    }

    fn initialize(version: &str, capabilities: Value, client: Value) -> Scripted {
        let mut s = server(capabilities, ProtocolChoice::Auto);
        s.request(
            1,
            "initialize",
            json!({"protocolVersion": version,
            "capabilities": client, "clientInfo": {"name": "host", "version": "1"}}),
        );
        s.version = version.parse().unwrap_or(V);
        let answer = s.written();
        assert_valid_result(s.version, "InitializeResult", &answer[0]);
        assert!(matches!(
            s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
            Event::Initialized
        ));
        s
    }
}

#[test]
fn initialize_is_answered_with_the_clients_version_when_offered_else_the_latest() {
    for version in ProtocolVersion::of_era(capable_core::Era::Legacy) {
        let mut s = server(json!({"resources": {}}), ProtocolChoice::Auto);
        s.version = version;
        s.request(
            1,
            "initialize",
            json!({"protocolVersion": version.as_str(),
            "capabilities": {}, "clientInfo": {"name": "host", "version": "1"}}),
        );
        let answer = s.written();
        assert_valid_result(version, "InitializeResult", &answer[0]);
        let result = &answer[0]["result"];
        assert_eq!(result["protocolVersion"], version.as_str());
        assert_eq!(result["capabilities"], json!({"resources": {}}));
        assert_eq!(result["serverInfo"]["name"], "scripted-server");
        assert_eq!(result["instructions"], "read docs://a");
        assert!(matches!(s.server.phase(), Phase::Initializing(c) if c.version == version));
    }
    let mut s = server(json!({}), ProtocolChoice::Auto);
    s.request(
        1,
        "initialize",
        json!({"protocolVersion": "2099-01-01", "capabilities": {},
        "clientInfo": {"name": "host", "version": "1"}}),
    );
    assert_eq!(s.written()[0]["result"]["protocolVersion"], V.as_str());
    // Once only.
    s.request(
        2,
        "initialize",
        json!({"protocolVersion": V.as_str(), "capabilities": {},
        "clientInfo": {"name": "host", "version": "1"}}),
    );
    s.refused(codes::INVALID_REQUEST);
}

#[test]
fn a_modern_only_server_refuses_initialize_naming_its_versions() {
    let mut s = server(json!({}), ProtocolChoice::Modern);
    s.request(
        1,
        "initialize",
        json!({"protocolVersion": V.as_str(), "capabilities": {},
        "clientInfo": {"name": "host", "version": "1"}}),
    );
    let refusal = s.refused(codes::INVALID_PARAMS);
    assert_eq!(refusal["error"]["data"]["supported"], json!(["2026-07-28"]));
    assert_eq!(refusal["error"]["data"]["requested"], V.as_str());
    assert_eq!(*s.server.phase(), Phase::Fresh);
    assert!(matches!(
        &s.server.take_notices()[..],
        [ClientNotice::Refused {
            code: codes::INVALID_PARAMS,
            ..
        }]
    ));
}

#[test]
fn discover_is_answered_and_every_modern_request_needs_its_envelope() {
    let mut s = server(json!({"resources": {}}), ProtocolChoice::Auto);
    s.version = MODERN;
    s.modern(1, "server/discover", json!({}));
    let answer = s.written();
    assert_valid_result(MODERN, "DiscoverResult", &answer[0]);
    let result = &answer[0]["result"];
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(result["capabilities"], json!({"resources": {}}));
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "scripted-server"
    );
    assert!(matches!(s.server.phase(), Phase::Modern(c) if c.client_info.is_some()));

    // No envelope, an unknown version, no capabilities.
    s.request(2, "resources/list", json!({}));
    s.refused(codes::INVALID_PARAMS);
    s.request(3, "resources/list", json!({"_meta": meta("2099-01-01")}));
    let refusal = s.refused(codes::UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(
        refusal["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2099-01-01"})
    );
    s.request(
        4,
        "resources/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    );
    s.refused(codes::INVALID_PARAMS);
    // With it: the application's.
    let Event::Request(r) = s.modern(5, "resources/list", json!({})) else {
        panic!("not routed")
    };
    assert_eq!((r.method, r.version), (Method::ListResources, MODERN));
    assert!(s.written().is_empty());
    // ping is gone in 2026-07-28.
    s.modern(6, "ping", json!({}));
    s.refused(codes::METHOD_NOT_FOUND);
}

#[test]
fn a_legacy_only_server_answers_the_probe_as_unknown_and_wants_initialize_first() {
    let mut s = server(json!({"resources": {}}), ProtocolChoice::Legacy);
    s.modern(1, "server/discover", json!({}));
    s.refused(codes::METHOD_NOT_FOUND);
    s.request(2, "resources/read", json!({"uri": "docs://a"}));
    s.refused(codes::INVALID_REQUEST);
    // A ping before initialize is answered.
    s.request(3, "ping", json!({}));
    assert_eq!(s.written()[0]["result"], json!({}));
    assert_eq!(*s.server.phase(), Phase::Fresh);
}

#[test]
fn only_what_the_server_declared_reaches_the_application() {
    let mut s = Scripted::initialize(V.as_str(), json!({"resources": {}}), json!({}));
    let Event::Request(read) = s.request(2, "resources/read", json!({"uri": "docs://a"})) else {
        panic!("a declared method is the application's")
    };
    assert_eq!(
        (read.id.clone(), read.method, read.version),
        (RequestId::Number(2), Method::ReadResource, V)
    );
    for (id, method) in [
        (3, "resources/subscribe"),
        (4, "tools/call"),
        (5, "prompts/get"),
        (6, "subscriptions/listen"),
    ] {
        assert!(matches!(
            s.request(id, method, json!({"uri": "docs://a", "name": "x"})),
            Event::Handled
        ));
        let refusal = s.refused(codes::METHOD_NOT_FOUND);
        assert!(
            refusal["error"]["message"]
                .as_str()
                .unwrap()
                .contains(method),
            "{refusal}"
        );
    }
    assert!(matches!(s.request(7, "no/such", json!({})), Event::Handled));
    s.refused(codes::METHOD_NOT_FOUND);
    // An id still in flight is not taken twice.
    s.request(2, "resources/list", json!({}));
    s.refused(codes::INVALID_REQUEST);
    assert!(s
        .server
        .respond(&read.id, &json!({"contents": []}), &mut s.out));
    assert_valid_result(V, "ReadResourceResult", &s.written()[0]);
    // Answered once: a second answer writes nothing.
    assert!(!s
        .server
        .respond(&read.id, &json!({"contents": []}), &mut s.out));
    assert!(s.written().is_empty());
    assert_eq!(s.server.take_notices().len(), 6);
}

#[test]
fn a_cancelled_request_is_never_answered() {
    let mut s = Scripted::initialize(V.as_str(), json!({"tools": {}}), json!({}));
    let Event::Request(call) = s.request(2, "tools/call", json!({"name": "slow"})) else {
        panic!("not routed")
    };
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "the user gave up"}});
    let Event::Cancelled { id, reason } = s.send(cancel.clone()) else {
        panic!("not a cancellation")
    };
    assert_eq!(
        (id, reason.as_deref()),
        (call.id.clone(), Some("the user gave up"))
    );
    assert!(!s.server.is_in_flight(&call.id));
    assert!(!s
        .server
        .respond(&call.id, &json!({"content": []}), &mut s.out));
    assert!(!s.server.respond_error(
        &call.id,
        &capable_core::RpcError {
            code: -1,
            message: "x".into(),
            data: None
        },
        &mut s.out
    ));
    assert!(s.written().is_empty());
    // A second cancellation of it (or of anything not in flight) is nothing.
    assert!(matches!(s.send(cancel), Event::Handled));
}

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
fn the_tasks_extension_needs_both_sides() {
    let caps = json!({"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let mut s = server(caps, ProtocolChoice::Auto);
    s.version = MODERN;
    s.modern(1, "tasks/get", json!({"taskId": "t"}));
    let refusal = s.refused(codes::MISSING_CLIENT_CAPABILITY);
    assert!(
        refusal["error"]["data"]["requiredCapabilities"]["extensions"]
            .get("io.modelcontextprotocol/tasks")
            .is_some()
    );
    let mut params = json!({"taskId": "t", "_meta": meta(MODERN.as_str())});
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    assert!(matches!(
        s.request(2, "tasks/get", params),
        Event::Request(_)
    ));
}

#[test]
fn an_unreadable_line_is_answered_by_its_id_when_it_has_one_else_without() {
    let mut s = Scripted::initialize(V.as_str(), json!({"tools": {}}), json!({}));
    let Event::Request(call) = s.request(2, "tools/call", json!({"name": "slow"})) else {
        panic!("not routed")
    };
    let unreadable = |s: &mut Scripted, line: &str| {
        let error = Incoming::parse(line.as_bytes().to_vec()).expect_err(line);
        assert!(matches!(
            s.server
                .handle_unreadable(line.as_bytes(), &error, &mut s.out),
            Event::Handled
        ));
    };
    unreadable(&mut s, "{\"jsonrpc\": \"2.0\", \"id\": 3, \"meth");
    let no_json = s.refused(codes::PARSE_ERROR);
    assert!(no_json.get("id").is_none(), "{no_json}");
    for line in [
        "[{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"ping\"}]",
        "{\"a\": 1}",
    ] {
        unreadable(&mut s, line);
        let refused = s.refused(codes::INVALID_REQUEST);
        assert!(refused.get("id").is_none(), "{refused}");
    }
    unreadable(&mut s, r#"{"jsonrpc": "2.0", "id": 9, "method": 5}"#);
    assert_eq!(s.refused(codes::INVALID_REQUEST)["id"], 9);
    // Not answered: a malformed notification, an answer to nothing, and a request by
    // the id of one in flight (whose own answer is still to come).
    unreadable(&mut s, r#"{"jsonrpc": "2.0", "method": 5}"#);
    unreadable(&mut s, r#"{"jsonrpc": "2.0", "id": 40}"#);
    unreadable(&mut s, r#"{"jsonrpc": "2.0", "id": 2, "method": 5}"#);
    assert!(s.written().is_empty());
    assert!(s.server.is_in_flight(&call.id));
    assert_eq!(s.server.take_notices().len(), 7);
}
