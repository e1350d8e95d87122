//! Scripted-peer tests of two routing decisions the connection makes for the shell:
//! which notifications belong to a `subscriptions/listen` stream in flight (and when
//! the server ended one), and how the messages of a JSON-RPC batch read in each
//! version. No runtime, no clock.

mod common;

use bytes::Bytes;
use capable_core::internal::jsonrpc::{FramingError, Incoming};
use capable_core::{Event, ListenFilter, Listened, Notice, Outbox, ProtocolChoice, ResponseError};
use capable_test_support::{config, feed, legacy_connection, moment, t0, take};
use common::{everything, modern, send, Conn};
use serde_json::{json, Value};

/// A modern connection with a listen stream open for tool list changes.
fn listening() -> (Conn, i64) {
    let mut conn = modern(everything());
    let mut out = Outbox::new();
    let filter = ListenFilter {
        tools_list_changed: true,
        ..Default::default()
    };
    let id = conn.listen(&filter, "listener", t0(), &mut out).unwrap();
    take(conn.version(), &mut out);
    (conn, id)
}

fn on_stream(id: Value, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({"io.modelcontextprotocol/subscriptionId": id});
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

#[test]
fn a_notification_naming_a_listen_stream_in_flight_is_an_item_of_that_stream() {
    let (mut conn, id) = listening();
    let mut out = Outbox::new();
    let ack = on_stream(
        json!(id),
        "notifications/subscriptions/acknowledged",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    match feed(&mut conn, ack, &mut out) {
        Event::Listen {
            id: on,
            item: Listened::Acknowledged(honoured),
        } => {
            assert_eq!(on, id);
            assert_eq!(honoured, json!({"toolsListChanged": true}));
        }
        other => panic!("{other:?}"),
    }
    let changed = on_stream(json!(id), "notifications/tools/list_changed", json!({}));
    match feed(&mut conn, changed, &mut out) {
        Event::Listen {
            id: on,
            item:
                Listened::Notification {
                    notification,
                    method,
                    params,
                },
        } => {
            assert_eq!(on, id);
            assert_eq!(method, "notifications/tools/list_changed");
            assert_eq!(notification, capable_core::Notification::ToolsListChanged);
            let params: Value = params.decode().unwrap();
            assert_eq!(
                params["_meta"]["io.modelcontextprotocol/subscriptionId"],
                id
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(conn.in_flight(), 1, "the stream goes on");
    assert!(out.is_empty());
}

#[test]
fn a_subscription_id_no_listen_stream_has_is_the_hosts() {
    let (mut conn, id) = listening();
    let (other, _) = send(
        &mut conn,
        capable_core::Method::ListTools,
        json!({}),
        "list",
    );
    let mut out = Outbox::new();
    for named in [json!(id + 100), json!(other), json!("x"), json!(null)] {
        let n = on_stream(named.clone(), "notifications/tools/list_changed", json!({}));
        assert!(
            matches!(feed(&mut conn, n, &mut out), Event::Notification { .. }),
            "{named}"
        );
    }
    let plain = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    assert!(matches!(
        feed(&mut conn, plain, &mut out),
        Event::Notification { .. }
    ));
}

#[test]
fn the_server_cancelling_a_listen_request_ends_its_stream_with_the_reason() {
    let (mut conn, id) = listening();
    let (other, _) = send(
        &mut conn,
        capable_core::Method::ListTools,
        json!({}),
        "list",
    );
    let mut out = Outbox::new();
    // A cancellation of another request is the host's.
    let cancel_other = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": other, "reason": "busy"}});
    assert!(matches!(
        feed(&mut conn, cancel_other, &mut out),
        Event::Notification { .. }
    ));
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "shutting down"}});
    match feed(&mut conn, cancel, &mut out) {
        Event::ListenEnded {
            id: ended,
            waiter,
            reason,
        } => {
            assert_eq!((ended, waiter), (id, "listener"));
            assert_eq!(reason, "shutting down");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(conn.in_flight(), 1, "only the other request is left");
    assert!(out.is_empty(), "nothing is written back");
    // The stream is over: its items are the host's, and a late answer is noted.
    let late = on_stream(json!(id), "notifications/tools/list_changed", json!({}));
    assert!(matches!(
        feed(&mut conn, late, &mut out),
        Event::Notification { .. }
    ));
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {}});
    assert!(matches!(feed(&mut conn, answer, &mut out), Event::Handled));
    assert!(conn
        .take_notices()
        .iter()
        .any(|n| matches!(n, Notice::LateResponse { .. })));
}

#[test]
fn a_cancellation_without_a_reason_ends_the_stream_with_none() {
    let (mut conn, id) = listening();
    let mut out = Outbox::new();
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": id}});
    assert!(matches!(
        feed(&mut conn, cancel, &mut out),
        Event::ListenEnded { reason, .. } if reason.is_empty()
    ));
}

fn batch(messages: Value) -> Bytes {
    Bytes::from(serde_json::to_vec(&messages).unwrap())
}

fn legacy_at(version: capable_core::ProtocolVersion) -> Conn {
    legacy_connection(config(ProtocolChoice::Legacy), version, everything())
}

#[test]
fn a_batch_is_taken_apart_where_the_version_has_batches_and_each_answer_routed() {
    let mut conn = legacy_at(capable_core::ProtocolVersion::V2025_03_26);
    let (a, _) = send(&mut conn, capable_core::Method::ListTools, json!({}), "a");
    let (b, _) = send(&mut conn, capable_core::Method::ListPrompts, json!({}), "b");
    let line = batch(json!([
        {"jsonrpc": "2.0", "id": a, "result": {"tools": []}},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": 1}},
        {"jsonrpc": "2.0", "id": b, "result": {"prompts": []}},
    ]));
    assert!(matches!(
        Incoming::parse_whole(line.clone()),
        Err(FramingError::Batch)
    ));
    let messages = conn.unbatch(&line);
    assert_eq!(messages.len(), 3);
    let mut out = Outbox::new();
    let mut answered = Vec::new();
    for (_, parsed) in messages {
        match conn.handle(parsed.expect("each message reads"), moment(), &mut out) {
            Event::Response {
                waiter, outcome, ..
            } => {
                assert!(outcome.is_ok());
                answered.push(waiter);
            }
            Event::Notification { method, .. } => assert_eq!(method, "notifications/message"),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(answered, ["a", "b"]);
    assert_eq!(conn.in_flight(), 0);
}

#[test]
fn a_batch_in_a_version_without_batches_fails_each_request_it_answers() {
    let mut conn = legacy_at(capable_core::ProtocolVersion::V2025_06_18);
    let (a, _) = send(&mut conn, capable_core::Method::ListTools, json!({}), "a");
    let line = batch(json!([{"jsonrpc": "2.0", "id": a, "result": {"tools": []}}]));
    let messages = conn.unbatch(&line);
    assert_eq!(messages.len(), 1);
    let (message, parsed) = messages.into_iter().next().unwrap();
    let error = parsed.expect_err("refused as a batch");
    assert!(matches!(error, FramingError::Batch));
    match conn.handle_unreadable(&message, &error) {
        Event::Response {
            waiter, outcome, ..
        } => {
            assert_eq!(waiter, "a");
            assert!(matches!(outcome, Err(ResponseError::Malformed(_))));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(conn.in_flight(), 0, "failed at once, not by timeout");
}

#[test]
fn a_batch_that_is_no_array_of_messages_is_skipped_with_a_notice() {
    let mut conn = legacy_at(capable_core::ProtocolVersion::V2025_03_26);
    for line in [json!([1, 2]), json!([{"jsonrpc": "2.0"}, "x"])] {
        assert!(conn.unbatch(&batch(line.clone())).is_empty(), "{line}");
        assert!(
            conn.take_notices()
                .iter()
                .any(|n| matches!(n, Notice::SkippedLine { .. })),
            "{line}"
        );
    }
}
