//! The server engine against scripted clients: both eras' negotiation, the gating
//! table from the server's side, cancellation, unreadable lines, the tasks extension.
//! Every line the server writes is validated as a server message of the version it
//! speaks (and each answer's result against its definition).

mod common;

use capable_core::internal::jsonrpc::codes;
use capable_core::internal::server::{ClientNotice, Event, Phase};
use capable_core::{Incoming, Method, ProtocolChoice, ProtocolVersion, RequestId};
use capable_test_support::assert_valid_result;
use serde_json::json;

use common::server::{meta, server, Scripted};
use common::{MODERN, V};

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
fn a_legacy_servers_skills_reach_a_modern_client_with_caching_hints() {
    // The skills extension (SEP-2640) makes `ListSkillsResult` and `GetSkillResult`
    // extend 2026-07-28's `CacheableResult`: a relayed legacy answer, which has no
    // hints, gets them; a result that is no `CacheableResult` gets none.
    let skills = json!({"io.modelcontextprotocol/skills": {}});
    let caps = json!({"resources": {}, "completions": {}, "extensions": skills});
    let mut s = server(caps, ProtocolChoice::Auto);
    s.version = MODERN;
    let complete = json!({"ref": {"type": "ref/prompt", "name": "p"},
        "argument": {"name": "a", "value": ""}});
    for (id, method, params, legacy, hinted) in [
        (1, "skills/list", json!({}), r#"{"skills":[]}"#, true),
        (
            2,
            "skills/get",
            json!({"uri": "skill://a/SKILL.md"}),
            r#"{"skill":{"uri":"skill://a/SKILL.md","resources":"dynamic","frontmatter":{}}}"#,
            true,
        ),
        (3, "resources/list", json!({}), r#"{"resources":[]}"#, true),
        (
            4,
            "completion/complete",
            complete,
            r#"{"completion":{"values":[]}}"#,
            false,
        ),
    ] {
        let Event::Request(r) = s.modern(id, method, params) else {
            panic!("{method} not routed")
        };
        let raw: Box<serde_json::value::RawValue> = serde_json::from_str(legacy).unwrap();
        assert!(s
            .server
            .respond_from_legacy(&r.id, r.method, &raw, &mut s.out));
        let answer = &s.written()[0]["result"];
        assert_eq!(answer["resultType"], "complete", "{method}");
        match hinted {
            true => assert_eq!(
                (&answer["ttlMs"], &answer["cacheScope"]),
                (&json!(0), &json!("private")),
                "{method}"
            ),
            false => assert!(answer.get("ttlMs").is_none(), "{method}: {answer}"),
        }
    }
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
    // Each request's envelope counts: declared no more, refused again.
    s.modern(3, "tasks/get", json!({"taskId": "t"}));
    s.refused(codes::MISSING_CLIENT_CAPABILITY);
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

#[test]
fn a_server_that_declares_anew_is_read_anew_by_a_2026_client_never_by_a_legacy_one() {
    use capable_core::ServerCapabilities;
    let more =
        || ServerCapabilities::from_value(json!({"resources": {"subscribe": true}, "tools": {}}));
    let mut s = server(json!({"resources": {}}), ProtocolChoice::Auto);
    s.version = MODERN;
    s.modern(1, "server/discover", json!({}));
    s.written();
    s.modern(2, "tools/list", json!({}));
    s.refused(codes::METHOD_NOT_FOUND);
    assert!(s.server.redeclare(more(), None));
    assert!(
        !s.server.redeclare(more(), None),
        "the same again is no change"
    );
    s.modern(3, "server/discover", json!({}));
    let answer = s.written();
    assert_valid_result(MODERN, "DiscoverResult", &answer[0]);
    assert_eq!(
        answer[0]["result"]["capabilities"],
        json!({"resources": {"subscribe": true}, "tools": {}})
    );
    assert!(answer[0]["result"].get("instructions").is_none());
    let Event::Request(r) = s.modern(4, "tools/list", json!({})) else {
        panic!("not routed under the new declaration")
    };
    assert_eq!(r.method, Method::ListTools);

    // A legacy client keeps what initialize said.
    let mut s = server(json!({"resources": {}}), ProtocolChoice::Auto);
    s.request(
        1,
        "initialize",
        json!({"protocolVersion": V.as_str(), "capabilities": {},
        "clientInfo": {"name": "host", "version": "1"}}),
    );
    s.written();
    assert!(!s.server.redeclare(more(), None));
    s.request(2, "tools/list", json!({}));
    s.refused(codes::METHOD_NOT_FOUND);
}
