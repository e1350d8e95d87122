//! Output schemas through a session: a tool's `structuredContent` is checked against
//! the `outputSchema` the session learnt (from its own listing, or told by the host);
//! a mismatch is a recorded notice with the schema and the value, the result is still
//! delivered; an error result is not checked.

mod common;

use capable::internal::model::Tool;
use capable::internal::Notice;
use capable::{connect, ClientOptions};
use common::Scripted;
use serde_json::{json, Value};

fn server() -> Scripted {
    Scripted::new(Box::new(move |msg: &Value| {
        let id = msg["id"].clone();
        let ok = |result: Value| vec![json!({"jsonrpc": "2.0", "id": id, "result": result})];
        match msg["method"].as_str() {
            Some("initialize") => vec![capable_test_support::initialize_result(
                &id,
                "2025-11-25",
                json!({"tools": {}}),
            )],
            Some("tools/list") => ok(json!({"tools": [weather()]})),
            Some("tools/call") => match msg["params"]["arguments"]["mode"].as_str() {
                Some("wrong") => {
                    ok(json!({"content": [], "structuredContent": {"celsius": "warm"}}))
                }
                Some("error") => {
                    ok(json!({"content": [{"type": "text", "text": "no"}], "isError": true}))
                }
                _ => ok(json!({"content": [], "structuredContent": {"celsius": 21.5}})),
            },
            _ => vec![],
        }
    }))
}

fn weather() -> Value {
    json!({"name": "weather", "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]}})
}

fn args(mode: &str) -> serde_json::Map<String, Value> {
    json!({"mode": mode}).as_object().cloned().unwrap()
}

fn mismatches(notices: &[Notice]) -> Vec<&Notice> {
    notices
        .iter()
        .filter(|n| matches!(n, Notice::OutputSchemaMismatch { .. }))
        .collect()
}

#[tokio::test]
async fn a_mismatch_is_a_notice_with_schema_and_value_and_the_result_is_delivered() {
    let session = connect(
        server(),
        ClientOptions::default().with_protocol(capable::ProtocolChoice::Legacy),
    )
    .await
    .unwrap();
    session.list_tools().await.unwrap();
    session
        .call_tool("weather", Some(&args("right")))
        .await
        .unwrap();
    session
        .call_tool("weather", Some(&args("error")))
        .await
        .unwrap();
    assert!(
        mismatches(&session.notices()).is_empty(),
        "a match and an error: nothing to say"
    );
    let wrong = session
        .call_tool("weather", Some(&args("wrong")))
        .await
        .unwrap();
    assert_eq!(
        wrong.structured_content,
        Some(json!({"celsius": "warm"})),
        "delivered as sent"
    );
    let notices = session.notices();
    match mismatches(&notices)[..] {
        [Notice::OutputSchemaMismatch {
            tool,
            schema,
            value,
            errors,
        }] => {
            assert_eq!(tool, "weather");
            assert_eq!(schema, &weather()["outputSchema"]);
            assert_eq!(value, &json!({"celsius": "warm"}));
            assert!(errors[0].contains("/celsius"), "{errors:?}");
        }
        ref other => panic!("{other:?}"),
    }
    session.close().await;
}

#[tokio::test]
async fn a_schema_the_host_already_knows_checks_a_call_made_without_listing() {
    let known: Tool = serde_json::from_value(weather()).unwrap();
    let options = ClientOptions::default()
        .with_protocol(capable::ProtocolChoice::Legacy)
        .with_known_tools(vec![known]);
    let session = connect(server(), options).await.unwrap();
    session
        .call_tool("weather", Some(&args("wrong")))
        .await
        .unwrap();
    assert_eq!(mismatches(&session.notices()).len(), 1);
    session.close().await;
}
