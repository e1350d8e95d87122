//! Answers that cannot be read — truncated, nested too deep, an error without a code,
//! neither result nor error — fail the request they name at once instead of leaving it
//! to time out; lines that name no request are skipped with a notice. And JSON-RPC
//! batches, which a 2025-03-26 server may send and a client must then accept.

mod common;

use bytes::Bytes;
use capable_core::internal::jsonrpc::{
    split_batch, split_batch_within, BatchRefusal, FramingError,
};
use capable_core::Outbox;
use capable_core::{
    ClientConfig, Event, Incoming, Method, Negotiating, NegotiationError, Notice, ProtocolChoice,
    ProtocolVersion, ResponseError, Step,
};
use capable_test_support::{config, legacy_connection, t0, take};
use common::{legacy, send, Conn};
use serde_json::json;

fn unreadable(conn: &mut Conn, line: &str) -> Event<&'static str> {
    let error = Incoming::parse(line.as_bytes().to_vec()).expect_err("unreadable");
    conn.handle_unreadable(line.as_bytes(), &error)
}

fn deep(levels: usize) -> String {
    format!("{}1{}", "[".repeat(levels), "]".repeat(levels))
}

#[test]
fn an_unreadable_answer_fails_its_request_at_once() {
    let cases = [
        ("truncated", "{\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"contents\":[".to_owned()),
        ("no code", "{\"jsonrpc\":\"2.0\",\"id\":ID,\"error\":{\"message\":\"x\"}}".to_owned()),
        ("neither result nor error", "{\"jsonrpc\":\"2.0\",\"id\":ID}".to_owned()),
        (
            "too deep",
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":ID,\"error\":{{\"code\":1,\"message\":\"x\",\"data\":{}}}}}",
                deep(100_000)
            ),
        ),
        ("id not first", "{\"id\":ID,\"jsonrpc\":\"2.0\",\"result\":5,\"error\":{\"code\":1,\"message\":\"x\"}}".to_owned()),
    ];
    let mut conn = legacy(json!({"resources": {}}));
    for (what, template) in cases {
        let (id, _) = send(
            &mut conn,
            Method::ReadResource,
            json!({"uri": "docs://a"}),
            "read",
        );
        let line = template.replace("ID", &id.to_string());
        match unreadable(&mut conn, &line) {
            Event::Response {
                id: answered,
                waiter,
                outcome: Err(ResponseError::Malformed(why)),
                ..
            } => {
                assert_eq!((answered, waiter), (id, "read"), "{what}");
                assert!(!why.is_empty(), "{what}");
            }
            other => panic!("{what}: {other:?}"),
        }
        assert_eq!(conn.in_flight(), 0, "{what}: nothing left to time out");
    }
}

#[test]
fn an_unreadable_line_that_names_no_request_in_flight_is_skipped_with_a_notice() {
    let mut conn = legacy(json!({"resources": {}}));
    let (id, _) = send(
        &mut conn,
        Method::ReadResource,
        json!({"uri": "docs://a"}),
        "read",
    );
    for line in [
        "garbage".to_owned(),
        "{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":".to_owned(),
        // A request is not an answer, whatever its id.
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"x\",\"result\":1}}"),
    ] {
        assert!(
            matches!(unreadable(&mut conn, &line), Event::Handled),
            "{line}"
        );
    }
    assert_eq!(conn.in_flight(), 1, "the read still waits for its answer");
    let notices = conn.take_notices();
    assert_eq!(notices.len(), 3);
    assert!(notices
        .iter()
        .all(|n| matches!(n, Notice::SkippedLine { .. })));
}

#[test]
fn a_truncated_initialize_answer_fails_the_handshake_at_once() {
    let mut out = Outbox::new();
    let n = Negotiating::start(config(ProtocolChoice::Legacy), t0(), &mut out);
    let sent = take(ProtocolVersion::V2025_11_25, &mut out);
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{\"protocolVersion\":",
        sent[0]["id"]
    );
    let error = Incoming::parse(line.clone().into_bytes()).unwrap_err();
    let step = n.handle_unreadable(line.as_bytes(), &error, t0(), &mut out);
    assert!(
        matches!(
            step,
            Step::Failed(NegotiationError::MalformedAnswer {
                method: "initialize",
                ..
            })
        ),
        "{step:?}"
    );
    assert!(out.is_empty(), "nothing more is sent");
    // A garbled answer to the probe is no modern answer: fall back.
    let n = Negotiating::start(config(ProtocolChoice::Auto), t0(), &mut out);
    let probe = take(ProtocolVersion::V2026_07_28, &mut out);
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{",
        probe[0]["id"]
    );
    let error = Incoming::parse(line.clone().into_bytes()).unwrap_err();
    let Step::Waiting(_) = n.handle_unreadable(line.as_bytes(), &error, t0(), &mut out) else {
        panic!("no fallback")
    };
    assert_eq!(
        take(ProtocolVersion::V2025_11_25, &mut out)[0]["method"],
        "initialize"
    );
}

#[test]
fn a_batch_is_split_into_its_messages_and_accepted_only_in_2025_03_26() {
    let line = Bytes::from_static(
        br#"[{"jsonrpc":"2.0","id":1,"result":{}}, {"jsonrpc":"2.0","method":"notifications/message","params":{}}]"#,
    );
    assert!(matches!(
        Incoming::parse(line.clone()),
        Err(FramingError::Batch)
    ));
    let parts = split_batch(&line).expect("an array of messages");
    assert_eq!(parts.len(), 2);
    assert!(matches!(
        Incoming::parse(parts[0].clone()),
        Ok(Incoming::Result { .. })
    ));
    assert!(matches!(
        Incoming::parse(parts[1].clone()),
        Ok(Incoming::Notification { .. })
    ));
    assert!(split_batch(&Bytes::from_static(b"[1, 2]")).is_none());
    assert!(split_batch(&Bytes::from_static(b"[{\"a\":")).is_none());

    let accepts = |version| {
        let cfg = ClientConfig {
            protocol: ProtocolChoice::Exact(version),
            ..config(ProtocolChoice::Legacy)
        };
        let conn: Conn = legacy_connection(cfg, version, json!({}));
        conn.accepts_batches()
    };
    assert!(accepts(ProtocolVersion::V2025_03_26));
    for version in [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
    ] {
        assert!(!accepts(version), "{version}");
    }
}

#[test]
fn a_batch_is_read_no_further_than_one_message_past_its_bound() {
    let line = Bytes::from_static(br#"[{"id":1}, {"id":2}, {"id":3}]"#);
    assert_eq!(split_batch_within(&line, 3).unwrap().len(), 3);
    assert_eq!(split_batch_within(&line, 2), Err(BatchRefusal::TooMany(2)));
    // Millions of tiny messages: refused at the bound's first step past it, whatever
    // follows (the rest is never read, broken or not).
    let mut huge = b"[".to_vec();
    for _ in 0..1_000_000 {
        huge.extend_from_slice(b"{},");
    }
    huge.extend_from_slice(b"{} oops");
    let huge = Bytes::from(huge);
    assert_eq!(
        split_batch_within(&huge, 256),
        Err(BatchRefusal::TooMany(256))
    );
    assert_eq!(
        split_batch_within(&huge, usize::MAX),
        Err(BatchRefusal::NotMessages)
    );
    for bad in [&b"[1, 2]"[..], b"[{\"a\":", b"{}", b"[{}] x", b""] {
        let bad = Bytes::copy_from_slice(bad);
        assert_eq!(
            split_batch_within(&bad, 10),
            Err(BatchRefusal::NotMessages),
            "{bad:?}"
        );
    }
    assert_eq!(
        split_batch_within(&Bytes::from_static(b" [ ] "), 10),
        Ok(vec![])
    );
}
