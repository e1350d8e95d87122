//! Every message the client sends — requests, notifications, answers to server
//! requests — is valid under the official JSON schema of the negotiated protocol
//! version (`schemas/<version>/schema.json`), in real sessions over stdio against the
//! fixture and the real peers. In the legacy era, `notifications/initialized` is the
//! first message after the `initialize` answer.

mod common;

use std::time::Duration;

use capable::{
    connect_stdio, ClientOptions, ElicitationPolicy, Era, InputHandlers, ListenEvent, ListenFilter,
    Method, ProtocolChoice, ProtocolVersion,
};
use common::{fixture, fixture_with, real_peer, within, RealPeer, Wire, MANUAL};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

fn args(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().expect("arguments are an object")
}

#[tokio::test]
async fn a_legacy_session_with_the_read_only_fixture_sends_only_schema_valid_messages() {
    within(LIMIT, async {
        let (session, wire) = common::open(&fixture("read-only"), Era::Legacy).await;
        let read = session.read_resource(MANUAL).await.expect("read");
        assert!(read.text().contains("Acceptance instructions"));
        assert_eq!(session.list_resources().await.expect("list").len(), 2);
        session.list_resource_templates().await.expect("templates");
        session.ping().await.expect("ping");
        // Not declared: refused locally, nothing sent.
        assert!(session.subscribe(MANUAL).await.is_err());
        session.close().await;

        wire.assert_schema_valid(ProtocolVersion::V2025_11_25);
        wire.assert_legacy_order();
        assert!(!wire
            .sent_methods()
            .contains(&"resources/subscribe".to_owned()));
    })
    .await
}

#[tokio::test]
async fn a_modern_session_with_the_modern_fixture_sends_only_schema_valid_messages() {
    within(LIMIT, async {
        let wire = Wire::default();
        let server = fixture_with("modern", &["--update-interval", "100ms"]);
        let session = connect_stdio(&server, wire.options())
            .await
            .expect("connect");
        common::assert_era(&session, Era::Modern, &wire);
        assert_eq!(session.protocol_version(), ProtocolVersion::V2026_07_28);
        session.read_resource(MANUAL).await.expect("read");
        session.list_resources().await.expect("list");
        session.list_tools().await.expect("tools");
        let echoed = session
            .call_tool("echo", Some(&args(json!({"message": "hi"}))))
            .await
            .expect("echo");
        assert_eq!(echoed.content[0]["text"], "hi");
        let mut listener = session
            .listen(&ListenFilter {
                resource_subscriptions: vec![MANUAL.into()],
                ..Default::default()
            })
            .await
            .expect("listen");
        let first = listener.recv().await.expect("stream").expect("an event");
        assert!(matches!(first, ListenEvent::Acknowledged(_)), "{first:?}");
        let id = listener.id();
        listener.close();
        wire.until_sent("notifications/cancelled for the listen request", |s| {
            s.iter()
                .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == id)
        })
        .await;
        session.close().await;

        wire.assert_schema_valid(ProtocolVersion::V2026_07_28);
        let methods = wire.sent_methods();
        assert_eq!(methods[0], "server/discover");
        assert!(
            !methods
                .iter()
                .any(|m| m == "initialize" || m == "notifications/initialized"),
            "{methods:?}"
        );
    })
    .await
}

#[tokio::test]
async fn the_answer_to_a_legacy_elicitation_request_is_a_schema_valid_client_result() {
    within(LIMIT, async {
        let wire = Wire::default();
        let options = ClientOptions {
            handlers: InputHandlers {
                elicitation: Some(InputHandlers::elicitation_by_policy(
                    ElicitationPolicy::AcceptDefaults,
                )),
                ..Default::default()
            },
            ..wire.options()
        };
        let session = connect_stdio(&fixture("elicit"), options)
            .await
            .expect("connect");
        common::assert_era(&session, Era::Legacy, &wire);
        let result = session.call_tool("confirm", None).await.expect("confirm");
        let text = result.content[0]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with("confirmed: action=accept"), "{text}");
        session.close().await;

        let version = ProtocolVersion::V2025_11_25;
        wire.assert_schema_valid(version);
        wire.assert_legacy_order();
        let init = &wire.sent_requests("initialize")[0];
        assert!(
            init["params"]["capabilities"].get("elicitation").is_some(),
            "an installed handler declares elicitation: {init}"
        );
        // The elicitation request's id is a string the server chose; the answer is a
        // ClientResult (an ElicitResult) under that id.
        let asked = wire
            .received()
            .into_iter()
            .find(|m| m["method"] == "elicitation/create")
            .expect("the server asked");
        let answer = wire
            .sent()
            .into_iter()
            .find(|m| m["id"] == asked["id"] && m.get("method").is_none())
            .expect("the client answered");
        assert_eq!(answer["result"]["action"], "accept", "{answer}");
        assert_eq!(
            answer["result"]["content"],
            json!({"approve": true, "note": "looks good"})
        );
        capable_test_support::assert_valid(version, &serde_json::to_vec(&answer).unwrap());
    })
    .await
}

#[tokio::test]
async fn a_question_the_server_cancels_is_never_answered_and_its_handler_is_dropped() {
    /// Set when the handler's future is dropped.
    struct Dropped(std::sync::Arc<std::sync::atomic::AtomicBool>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
    within(LIMIT, async {
        let wire = Wire::default();
        let dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = dropped.clone();
        let options = ClientOptions {
            handlers: InputHandlers {
                // A person who never answers.
                elicitation: Some(std::sync::Arc::new(move |_| {
                    let guard = Dropped(flag.clone());
                    Box::pin(async move {
                        let _guard = guard;
                        std::future::pending().await
                    })
                })),
                ..Default::default()
            },
            ..wire.options()
        };
        let session = connect_stdio(&fixture("elicit"), options)
            .await
            .expect("connect");
        let result = session
            .call_tool("confirm", Some(&args(json!({"giveUpAfterMs": 100}))))
            .await
            .expect("confirm");
        assert_eq!(result.is_error, Some(true), "{result:?}");
        let asked = wire
            .received()
            .into_iter()
            .find(|m| m["method"] == "elicitation/create")
            .expect("the server asked");
        let cancelled = wire
            .received()
            .into_iter()
            .find(|m| m["method"] == "notifications/cancelled")
            .expect("the server gave up");
        assert_eq!(cancelled["params"]["requestId"], asked["id"]);
        // The handler goes with the question, and the question is never answered.
        for _ in 0..100 {
            if dropped.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
        session.ping().await.expect("the session goes on");
        session.close().await;
        let answers = wire.sent();
        let answer = answers
            .iter()
            .find(|m| m["id"] == asked["id"] && m.get("method").is_none());
        assert!(answer.is_none(), "{answer:?}");
        wire.assert_schema_valid(ProtocolVersion::V2025_11_25);
    })
    .await
}

#[tokio::test]
async fn a_session_with_server_everything_sends_only_schema_valid_messages() {
    let Some(server) = real_peer(RealPeer::Everything) else {
        return;
    };
    within(LIMIT, async {
        let (session, wire) = common::open(&server, Era::Legacy).await;
        let version = session.protocol_version();
        let mut exercised = Vec::new();
        let resources = session.list_resources().await.expect("resources/list");
        let uri = resources[0].uri.clone();
        session.read_resource(&uri).await.expect("resources/read");
        session
            .list_resource_templates()
            .await
            .expect("resources/templates/list");
        exercised.extend([
            "resources/list",
            "resources/read",
            "resources/templates/list",
        ]);
        session.list_tools().await.expect("tools/list");
        let echo = session
            .call_tool("echo", Some(&args(json!({"message": "hi"}))))
            .await
            .expect("tools/call");
        assert_eq!(echo.content[0]["text"], "Echo: hi");
        exercised.extend(["tools/list", "tools/call"]);
        let prompts = session.list_prompts().await.expect("prompts/list");
        session
            .get_prompt("simple-prompt", None)
            .await
            .expect("prompts/get");
        exercised.extend(["prompts/list", "prompts/get"]);
        if session.check(Method::Subscribe).is_ok() {
            session.subscribe(&uri).await.expect("subscribe");
            session.unsubscribe(&uri).await.expect("unsubscribe");
            exercised.extend(["resources/subscribe", "resources/unsubscribe"]);
        }
        session.ping().await.expect("ping");
        exercised.push("ping");
        if session.check(Method::Complete).is_ok() {
            let prompt = prompts
                .iter()
                .find(|p| p.name == "completable-prompt")
                .expect("server-everything has completable-prompt");
            let argument = &prompt.arguments[0].name;
            session
                .complete(
                    &json!({"type": "ref/prompt", "name": prompt.name}),
                    argument,
                    "",
                )
                .await
                .expect("completion/complete");
            // The second argument narrowed by the first: its values depend on it.
            let mut given = serde_json::Map::new();
            given.insert("department".into(), json!("Engineering"));
            let narrowed = session
                .complete_in_context(
                    &json!({"type": "ref/prompt", "name": prompt.name}),
                    "name",
                    "",
                    &given,
                )
                .await
                .expect("completion/complete with a context");
            let wants = if version.has_completion_context() {
                vec!["Alice", "Bob", "Charlie"]
            } else {
                vec![]
            };
            assert_eq!(narrowed.completion.values, wants, "{version}");
            exercised.push("completion/complete");
        }
        if session.check(Method::SetLoggingLevel).is_ok() {
            session.set_logging_level("info").await.expect("setLevel");
            exercised.push("logging/setLevel");
        }
        session.close().await;

        wire.assert_schema_valid(version);
        wire.assert_legacy_order();
        let sent = wire.sent_methods();
        for method in exercised {
            assert!(
                sent.iter().any(|m| m == method),
                "{method} was not sent: {sent:?}"
            );
        }
        // server-everything declares all of these: the checks above must not have skipped.
        for method in [
            "resources/subscribe",
            "completion/complete",
            "logging/setLevel",
        ] {
            assert!(
                sent.iter().any(|m| m == method),
                "{method} was not sent: {sent:?}"
            );
        }
    })
    .await
}

#[tokio::test]
async fn a_modern_session_with_the_python_server_sends_only_schema_valid_messages() {
    let Some(server) = real_peer(RealPeer::Python) else {
        return;
    };
    within(LIMIT, async {
        let (session, wire) = common::open(&server, Era::Modern).await;
        session.list_resources().await.expect("list");
        session.read_resource(MANUAL).await.expect("read");
        session.list_resource_templates().await.expect("templates");
        session.list_tools().await.expect("tools");
        let added = session
            .call_tool("add", Some(&args(json!({"a": 2, "b": 3}))))
            .await
            .expect("add");
        assert_eq!(added.structured_content, Some(json!({"result": 5})));
        session.list_prompts().await.expect("prompts");
        session
            .get_prompt("greet", Some(&args(json!({"name": "Ada"}))))
            .await
            .expect("greet");
        let mut listener = session
            .listen(&ListenFilter {
                resource_subscriptions: vec![MANUAL.into()],
                ..Default::default()
            })
            .await
            .expect("listen");
        listener
            .recv()
            .await
            .expect("stream")
            .expect("acknowledged");
        listener.close();
        wire.until_sent("the listen stream's cancellation", |s| {
            s.iter().any(|m| m["method"] == "notifications/cancelled")
        })
        .await;
        session.close().await;

        wire.assert_schema_valid(ProtocolVersion::V2026_07_28);
        assert!(!wire.sent_methods().iter().any(|m| m == "initialize"));
    })
    .await
}

#[tokio::test]
async fn a_legacy_session_with_the_python_server_sends_only_schema_valid_messages() {
    let Some(server) = real_peer(RealPeer::Python) else {
        return;
    };
    within(LIMIT, async {
        let wire = Wire::default();
        let mut options = wire.options();
        options.config.protocol = ProtocolChoice::Legacy;
        let session = connect_stdio(&server, options).await.expect("connect");
        common::assert_era(&session, Era::Legacy, &wire);
        let version = session.protocol_version();
        session.list_resources().await.expect("list");
        session.read_resource(MANUAL).await.expect("read");
        session.list_tools().await.expect("tools");
        session
            .call_tool("echo", Some(&args(json!({"message": "hi"}))))
            .await
            .expect("echo");
        session
            .get_prompt("greet", Some(&args(json!({"name": "Ada"}))))
            .await
            .expect("greet");
        session.ping().await.expect("ping");
        session.close().await;

        wire.assert_schema_valid(version);
        wire.assert_legacy_order();
    })
    .await
}

#[tokio::test]
async fn a_legacy_session_with_the_typescript_server_sends_only_schema_valid_messages() {
    let Some(server) = real_peer(RealPeer::Ts) else {
        return;
    };
    within(LIMIT, async {
        let (session, wire) = common::open(&server, Era::Legacy).await;
        let version = session.protocol_version();
        session.list_resources().await.expect("list");
        session.read_resource(MANUAL).await.expect("read");
        session.list_tools().await.expect("tools");
        // No prompts capability: refused locally.
        assert!(session.list_prompts().await.is_err());
        session.ping().await.expect("ping");
        session.close().await;

        wire.assert_schema_valid(version);
        wire.assert_legacy_order();
        assert!(!wire.sent_methods().iter().any(|m| m == "prompts/list"));
    })
    .await
}
