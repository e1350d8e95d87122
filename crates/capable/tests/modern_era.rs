//! The 2026-07-28 era through the library: the `_meta` envelope on every request,
//! `resultType`, `input_required` rounds answered by the host's handlers, and
//! `subscriptions/listen` streams.

mod common;

use std::time::Duration;

use capable::{
    connect, connect_stdio, ClientOptions, ElicitationPolicy, Era, Error, InputHandlers,
    ListenEvent, ListenFilter, Listener, Method, ProtocolVersion, Session,
};
use common::{fixture, fixture_with, real_peer, within, RealPeer, Scripted, Wire, MANUAL};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

fn accept_defaults() -> InputHandlers {
    InputHandlers {
        elicitation: Some(InputHandlers::elicitation_by_policy(
            ElicitationPolicy::AcceptDefaults,
        )),
        ..Default::default()
    }
}

/// A session with `server` whose elicitation handler accepts the defaults, and its wire.
async fn accepting(server: &capable::ServerCommand) -> (Session, Wire) {
    let wire = Wire::default();
    let options = ClientOptions {
        handlers: accept_defaults(),
        ..wire.options()
    };
    let session = connect_stdio(server, options).await.expect("connect");
    (session, wire)
}

fn envelope(request: &Value) -> &Value {
    &request["params"]["_meta"]
}

#[tokio::test]
async fn every_modern_request_carries_the_protocol_envelope() {
    within(LIMIT, async {
        let (session, wire) = common::open(&fixture("modern"), Era::Modern).await;
        session.list_resources().await.expect("list");
        session.read_resource(MANUAL).await.expect("read");
        session.list_tools().await.expect("tools");
        let message = json!({"message": "hi"});
        session
            .call_tool("echo", message.as_object())
            .await
            .expect("echo");
        session.close().await;

        let requests: Vec<Value> = wire
            .sent()
            .into_iter()
            .filter(|m| m.get("id").is_some())
            .collect();
        assert_eq!(requests.len(), 5, "{}", common::show(&requests));
        for request in &requests {
            let meta = envelope(request);
            assert_eq!(
                meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
                "{request}"
            );
            assert!(
                meta["io.modelcontextprotocol/clientCapabilities"].is_object(),
                "{request}"
            );
            assert!(
                meta["io.modelcontextprotocol/clientInfo"]["name"].is_string(),
                "{request}"
            );
        }
        wire.assert_schema_valid(ProtocolVersion::V2026_07_28);
    })
    .await
}

/// A modern server scripted in-process: discover, then reads whose results carry
/// `resultType` as given (or none at all).
fn scripted_modern(result_type: Option<&'static str>) -> Scripted {
    Scripted::new(Box::new(move |msg: &Value| {
        let id = msg["id"].clone();
        match msg["method"].as_str() {
            Some("server/discover") => {
                vec![capable_test_support::discover_result(
                    &id,
                    json!({"resources": {}}),
                )]
            }
            Some("resources/read") => {
                let mut result = json!({"contents": [{"uri": MANUAL, "text": "scripted"}]});
                if let Some(t) = result_type {
                    result["resultType"] = json!(t);
                }
                vec![json!({"jsonrpc": "2.0", "id": id, "result": result})]
            }
            _ => Vec::new(),
        }
    }))
}

#[tokio::test]
async fn a_modern_result_without_result_type_or_with_complete_is_accepted() {
    within(LIMIT, async {
        for result_type in [None, Some("complete")] {
            let wire = Wire::default();
            let session = connect(scripted_modern(result_type), wire.options())
                .await
                .expect("connect");
            common::assert_era(&session, Era::Modern, &wire);
            let read = session
                .read_resource(MANUAL)
                .await
                .unwrap_or_else(|e| panic!("resultType {result_type:?} refused: {e}"));
            assert_eq!(read.text(), "scripted");
            session.close().await;
            wire.assert_schema_valid(ProtocolVersion::V2026_07_28);
        }
    })
    .await
}

#[tokio::test]
async fn a_modern_result_with_an_unknown_result_type_is_an_error() {
    within(LIMIT, async {
        let wire = Wire::default();
        let session = connect(scripted_modern(Some("partial")), wire.options())
            .await
            .expect("connect");
        let err = session.read_resource(MANUAL).await.expect_err("refused");
        assert!(
            matches!(&err, Error::MalformedResult { method: Method::ReadResource, detail } if detail.contains("partial")),
            "{err:?}"
        );
        session.close().await;
    })
    .await
}

#[tokio::test]
async fn an_input_required_result_is_answered_by_the_handler_and_retried_with_a_new_id() {
    within(LIMIT, async {
        let (session, wire) = accepting(&fixture("modern")).await;
        common::assert_era(&session, Era::Modern, &wire);
        let result = session.call_tool("confirm", None).await.expect("confirm");
        let text = result.content[0]["text"].as_str().unwrap_or_default();
        assert_eq!(
            text,
            r#"confirmed: action=accept content={"approve":true,"note":"looks good"}"#
        );
        session.close().await;

        let calls = wire.sent_requests("tools/call");
        assert_eq!(calls.len(), 2, "{}", common::show(&calls));
        let (first, retry) = (&calls[0], &calls[1]);
        assert_ne!(first["id"], retry["id"], "the retry has a new id");
        assert!(first["params"].get("requestState").is_none());
        assert!(first["params"].get("inputResponses").is_none());
        // The server's requestState, echoed exactly.
        let asked = wire
            .received()
            .into_iter()
            .find(|m| m["id"] == first["id"])
            .expect("the first call was answered");
        assert_eq!(asked["result"]["resultType"], "input_required");
        assert_eq!(
            retry["params"]["requestState"],
            asked["result"]["requestState"]
        );
        assert_eq!(retry["params"]["requestState"], "confirm-1");
        assert_eq!(
            retry["params"]["inputResponses"]["confirm"],
            json!({"action": "accept", "content": {"approve": true, "note": "looks good"}})
        );
        assert_eq!(retry["params"]["name"], "confirm");
        // The installed handler is declared, in both requests.
        for call in &calls {
            assert!(
                envelope(call)["io.modelcontextprotocol/clientCapabilities"]
                    .get("elicitation")
                    .is_some(),
                "{call}"
            );
        }
        wire.assert_schema_valid(ProtocolVersion::V2026_07_28);
    })
    .await
}

#[tokio::test]
async fn an_input_required_result_passed_on_comes_back_as_it_was_and_is_not_answered() {
    within(LIMIT, async {
        let (session, wire) = accepting(&fixture("modern")).await;
        let options = capable::RequestOptions {
            pass_input_required: true,
            ..Default::default()
        };
        let params = json!({"name": "confirm"});
        let answer: Value = session
            .request(capable::Method::CallTool, &params, options)
            .await
            .expect("the input_required result itself");
        assert_eq!(answer["resultType"], "input_required");
        assert_eq!(answer["requestState"], "confirm-1");
        session.close().await;
        assert_eq!(wire.sent_requests("tools/call").len(), 1, "no retry");
    })
    .await
}

#[tokio::test]
async fn without_an_elicitation_handler_none_is_declared_and_the_servers_refusal_names_it() {
    within(LIMIT, async {
        let (session, wire) = common::connect_wire(&fixture("modern")).await;
        let err = session
            .call_tool("confirm", None)
            .await
            .expect_err("the server needs elicitation");
        match &err {
            Error::Rpc {
                method: Method::CallTool,
                error,
            } => assert_eq!(error.code, -32021, "{err}"),
            other => panic!("expected the server's -32021, got {other:?}"),
        }
        assert!(err.to_string().contains("elicitation"), "{err}");
        session.close().await;

        for request in wire.sent().iter().filter(|m| m.get("id").is_some()) {
            let caps = &envelope(request)["io.modelcontextprotocol/clientCapabilities"];
            assert!(caps.is_object(), "{request}");
            assert!(
                caps.get("elicitation").is_none(),
                "declared without a handler: {request}"
            );
        }
        assert_eq!(wire.sent_requests("tools/call").len(), 1, "no retry");
    })
    .await
}

#[tokio::test]
async fn the_same_elicitation_handler_answers_a_legacy_servers_request() {
    within(LIMIT, async {
        let (session, wire) = accepting(&fixture("elicit")).await;
        common::assert_era(&session, Era::Legacy, &wire);
        let result = session.call_tool("confirm", None).await.expect("confirm");
        assert_eq!(
            result.content[0]["text"],
            r#"confirmed: action=accept content={"approve":true,"note":"looks good"}"#
        );
        session.close().await;
        assert_eq!(
            wire.sent_requests("tools/call").len(),
            1,
            "legacy: no retry"
        );
    })
    .await
}

/// The next event, failing on anything but an event.
async fn next(listener: &mut Listener) -> ListenEvent {
    match listener.recv().await {
        Ok(Some(event)) => event,
        other => panic!("the listen stream ended: {other:?}"),
    }
}

fn manual_only() -> ListenFilter {
    ListenFilter {
        resource_subscriptions: vec![MANUAL.into()],
        ..Default::default()
    }
}

#[tokio::test]
async fn a_listen_stream_is_acknowledged_then_delivers_resource_updates_until_closed() {
    within(LIMIT, async {
        let wire = Wire::default();
        let server = fixture_with("modern", &["--update-interval", "100ms"]);
        let session = connect_stdio(&server, wire.options())
            .await
            .expect("connect");
        let mut listener = session.listen(&manual_only()).await.expect("listen");
        match next(&mut listener).await {
            ListenEvent::Acknowledged(filter) => {
                assert_eq!(filter["resourceSubscriptions"], json!([MANUAL]), "{filter}")
            }
            other => panic!("the first event must be the acknowledgement: {other:?}"),
        }
        for _ in 0..2 {
            match next(&mut listener).await {
                ListenEvent::Notification(n) => {
                    assert_eq!(n.method, "notifications/resources/updated");
                    assert_eq!(n.params["uri"], MANUAL);
                    assert_eq!(
                        n.params["_meta"]["io.modelcontextprotocol/subscriptionId"],
                        listener.id()
                    );
                }
                other => panic!("expected an update: {other:?}"),
            }
        }
        let id = listener.id();
        let listens = wire.sent_requests("subscriptions/listen");
        assert_eq!(listens.len(), 1);
        assert_eq!(listens[0]["id"], id);
        assert_eq!(
            listens[0]["params"]["notifications"],
            json!({"resourceSubscriptions": [MANUAL]})
        );
        listener.close();
        let sent = wire
            .until_sent("notifications/cancelled for the listen request", |s| {
                s.iter().any(|m| m["method"] == "notifications/cancelled")
            })
            .await;
        let cancelled: Vec<&Value> = sent
            .iter()
            .filter(|m| m["method"] == "notifications/cancelled")
            .collect();
        assert_eq!(cancelled.len(), 1);
        assert_eq!(cancelled[0]["params"]["requestId"], id);
        // The session goes on after the stream ended.
        session
            .read_resource(MANUAL)
            .await
            .expect("read after close");
        session.close().await;
        wire.assert_schema_valid(ProtocolVersion::V2026_07_28);
    })
    .await
}

#[tokio::test]
async fn dropping_a_listener_ends_its_stream_with_notifications_cancelled() {
    within(LIMIT, async {
        let (session, wire) = common::connect_wire(&fixture("modern")).await;
        let mut listener = session.listen(&manual_only()).await.expect("listen");
        next(&mut listener).await;
        let id = listener.id();
        drop(listener);
        wire.until_sent("notifications/cancelled", |s| {
            s.iter()
                .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == id)
        })
        .await;
        session.close().await;
    })
    .await
}

#[tokio::test]
async fn a_touch_on_the_python_server_arrives_on_the_listen_stream() {
    let Some(server) = real_peer(RealPeer::Python) else {
        return;
    };
    within(LIMIT, async {
        let (session, wire) = common::open(&server, Era::Modern).await;
        let mut listener = session.listen(&manual_only()).await.expect("listen");
        assert!(matches!(
            next(&mut listener).await,
            ListenEvent::Acknowledged(_)
        ));
        let touch = json!({"uri": MANUAL});
        let touched = session
            .call_tool("touch", touch.as_object())
            .await
            .expect("touch");
        assert_ne!(touched.is_error, Some(true), "{touched:?}");
        match next(&mut listener).await {
            ListenEvent::Notification(n) => {
                assert_eq!(n.method, "notifications/resources/updated");
                assert_eq!(n.params["uri"], MANUAL);
            }
            other => panic!("expected the update: {other:?}"),
        }
        let read = session.read_resource(MANUAL).await.expect("read");
        assert!(read.text().contains("revision 1"), "{}", read.text());
        listener.close();
        session.close().await;
        wire.assert_schema_valid(ProtocolVersion::V2026_07_28);
    })
    .await
}

/// Asserts `listen(filter)` is refused locally and nothing more is sent.
async fn assert_listen_refused(session: &Session, wire: &Wire, filter: ListenFilter) {
    let before = wire.sent().len();
    match session.listen(&filter).await {
        Err(Error::Refused(_)) => {}
        Err(other) => panic!("expected a local refusal of {filter:?}, got {other:?}"),
        Ok(_) => panic!("{filter:?} was not refused"),
    }
    // Give the writer a chance to show anything it might have queued (past the cache:
    // the list must go out).
    let _: capable::internal::model::ListResourcesResult = session
        .list_page_with(Method::ListResources, None, capable::CachePolicy::Bypass)
        .await
        .expect("list");
    let sent = wire.sent();
    let methods: Vec<&str> = sent[before..]
        .iter()
        .map(|m| m["method"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(methods, ["resources/list"], "{filter:?}");
}

#[tokio::test]
async fn a_listen_filter_field_whose_flag_is_not_declared_is_refused_locally() {
    within(LIMIT, async {
        let (session, wire) = common::connect_wire(&fixture("modern")).await;
        // The modern fixture declares tools without listChanged and no prompts.
        assert_listen_refused(
            &session,
            &wire,
            ListenFilter {
                tools_list_changed: true,
                ..Default::default()
            },
        )
        .await;
        assert_listen_refused(
            &session,
            &wire,
            ListenFilter {
                prompts_list_changed: true,
                resource_subscriptions: vec![MANUAL.into()],
                ..Default::default()
            },
        )
        .await;
        session.close().await;
        assert!(wire.sent_requests("subscriptions/listen").is_empty());
    })
    .await
}

#[tokio::test]
async fn listen_is_refused_in_a_legacy_session() {
    within(LIMIT, async {
        let (session, wire) = common::open(&fixture("subscribe"), Era::Legacy).await;
        // The writer sends `notifications/initialized` on its own time.
        wire.until_sent("notifications/initialized", |s| {
            s.iter().any(|m| m["method"] == "notifications/initialized")
        })
        .await;
        assert_listen_refused(&session, &wire, manual_only()).await;
        session.close().await;
    })
    .await
}

#[tokio::test]
async fn caching_hints_of_modern_lists_and_reads_reach_the_host() {
    within(LIMIT, async {
        let (session, _wire) = common::connect_wire(&fixture("modern")).await;
        let page: capable::internal::model::ListToolsResult = session
            .list_page(capable::Method::ListTools, None)
            .await
            .expect("tools page");
        assert_eq!(page.cache.ttl_ms, Some(1000.0));
        assert_eq!(page.cache.cache_scope.as_deref(), Some("public"));
        let read = session.read_resource(MANUAL).await.expect("read");
        assert_eq!(read.ttl_ms, Some(1000.0));
        assert_eq!(read.cache_scope.as_deref(), Some("public"));
        session.close().await;
    })
    .await;
}
