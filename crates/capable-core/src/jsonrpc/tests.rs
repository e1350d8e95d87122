//! The framing's tests: routing, the fast path against the full parse, garbage.

use super::incoming::Shape;
use super::*;

fn parse(s: &str) -> Result<Incoming, FramingError> {
    Incoming::parse(s.as_bytes().to_vec())
}

#[test]
fn a_result_is_routed_by_id_and_its_payload_kept_raw() {
    let m = parse(r#"{"jsonrpc":"2.0","id":7,"result":{"contents":[]}}"#).unwrap();
    match m {
        Incoming::Result { id, result } => {
            assert_eq!(id, RequestId::Number(7));
            assert_eq!(result.json(), r#"{"contents":[]}"#);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn requests_notifications_and_errors_are_told_apart() {
    assert!(matches!(
        parse(r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#).unwrap(),
        Incoming::Request { method, params, .. } if method == "ping" && params.is_absent()
    ));
    assert!(matches!(
        parse(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}"#).unwrap(),
        Incoming::Notification { method, .. } if method == "notifications/message"
    ));
    assert!(matches!(
        parse(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"nope"}}"#).unwrap(),
        Incoming::Error { id: Some(RequestId::Number(3)), error, .. } if error.code == -32601
    ));
    assert!(matches!(
        parse(r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse"}}"#).unwrap(),
        Incoming::Error { id: None, .. }
    ));
}

/// Decodes a line's result as a JSON value, or says why not (refused by the parse
/// or by the decode).
fn result_of(line: &str) -> Result<(RequestId, serde_json::Value), String> {
    match parse(line).map_err(|e| format!("parse: {e}"))? {
        Incoming::Result { id, result } => {
            let value = result.decode().map_err(|e| format!("decode: {e}"))?;
            Ok((id, value))
        }
        other => Err(format!("not a result: {other:?}")),
    }
}

#[test]
fn a_compact_result_is_routed_by_its_leading_id_and_decoded_exactly() {
    let (id, v) = result_of(r#"{"jsonrpc":"2.0","id":42,"result":{"a":[1,"}"]}}"#).unwrap();
    assert_eq!(id, RequestId::Number(42));
    assert_eq!(v, serde_json::json!({"a": [1, "}"]}));
    // Whitespace and a carriage return after the envelope are not part of the value.
    let (_, v) = result_of("{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{} }\r\n").unwrap();
    assert_eq!(v, serde_json::json!({}));
    let line = r#"{"jsonrpc":"2.0","id":9,"result":{"b":true}}"#;
    let Ok(Incoming::Result { result, .. }) = parse(line) else {
        panic!("not a result")
    };
    assert_eq!(result.json(), r#"{"b":true}"#);
    assert!(result.mentions("\"b\""));
    assert!(!result.mentions("\"resultType\""));
}

/// The id read off a line's shape: every length up to 18 digits is read exactly; a
/// longer one, a leading zero, a sign or no digit at all leave the line to the full
/// parse; and what follows the digits must be the `result` key.
#[test]
fn the_id_read_off_the_shape_is_exact_up_to_18_digits() {
    for digits in 1..=18u32 {
        let id = 10_i64.pow(digits) - 1 - i64::from(digits);
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
        assert_eq!(
            crate::json::result_by_shape(line.as_bytes()).map(|(id, _)| id),
            Some(id),
            "{line}"
        );
        assert_eq!(crate::json::leading_id(line.as_bytes()), Some(id), "{line}");
    }
    for id in [
        "1234567890123456789",
        "99999999999999999999",
        "01",
        "-1",
        "",
        "1.0",
    ] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
        assert_eq!(
            crate::json::result_by_shape(line.as_bytes()),
            None,
            "{line}"
        );
        assert_eq!(crate::json::leading_id(line.as_bytes()), None, "{line}");
    }
    for line in [
        r#"{"jsonrpc":"2.0","id":7,"result" :{}}"#,
        r#"{"jsonrpc":"2.0","id":7,"resulT":{}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":"#,
        r#"{"jsonrpc":"2.0","id":7"#,
        r#"{"jsonrpc":"2.0","id":"#,
        r#"{"jsonrpc":"2.0" ,"id":7,"result":{}}"#,
    ] {
        assert_eq!(
            crate::json::result_by_shape(line.as_bytes()),
            None,
            "{line}"
        );
    }
    assert_eq!(
        crate::json::leading_id(br#"{"jsonrpc":"2.0","id":7}"#),
        Some(7)
    );
}

/// The fast path on its own takes what `parse` takes by shape, with the same id and
/// result, and hands any other line back as it came (the same bytes, not a copy).
#[test]
fn a_result_by_shape_is_what_parse_makes_of_it_and_anything_else_comes_back() {
    for line in [
        r#"{"jsonrpc":"2.0","id":7,"result":{"contents":[]}}"#,
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{} }\r\n",
    ] {
        let Ok((id, result)) = Incoming::result_by_shape(line.into()) else {
            panic!("{line} is a result by its shape")
        };
        let Ok(Incoming::Result {
            id: parsed_id,
            result: parsed,
        }) = parse(line)
        else {
            panic!("{line} is a result")
        };
        assert_eq!((id, result.json()), (parsed_id, parsed.json()), "{line}");
    }
    for line in [
        r#"{"id":7,"jsonrpc":"2.0","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","method":"ping","id":1}"#,
        r#"[{"jsonrpc":"2.0","id":7,"result":{}}]"#,
        "garbage",
    ] {
        let bytes = bytes::Bytes::from(line);
        let Err(back) = Incoming::result_by_shape(bytes.clone()) else {
            panic!("{line} is not a result by its shape")
        };
        assert_eq!(back, bytes);
        assert_eq!(back.as_ptr(), bytes.as_ptr(), "the same bytes");
    }
}

#[test]
fn members_after_the_result_are_read_by_a_full_parse() {
    // Valid JSON-RPC whatever the member order: the value is found exactly.
    for line in [
        r#"{"jsonrpc":"2.0","id":5,"result":{"x":1},"_extra":{"y":2}}"#,
        r#"{"id":5,"jsonrpc":"2.0","result":{"x":1}}"#,
        r#"{"result":{"x":1},"jsonrpc":"2.0","id":5}"#,
        r#"{ "jsonrpc": "2.0", "id": 5, "result": {"x": 1} }"#,
    ] {
        let (id, v) = result_of(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(id, RequestId::Number(5), "{line}");
        assert_eq!(v, serde_json::json!({"x": 1}), "{line}");
    }
}

#[test]
fn a_malformed_response_is_refused_by_the_parse_or_by_its_decode() {
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"a":}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\u{1}\"}",
        r#"{"jsonrpc":"2.0","id":1,"result":"\ud800"}"#,
        r#"{"jsonrpc":"2.0","id":99999999999999999999,"result":{}}"#,
    ] {
        assert!(result_of(line).is_err(), "{line:?} should be refused");
    }
}

/// The same answer, whether a line is read by its shape or parsed whole: mutated
/// success responses decode to exactly what a full parse finds, or are refused.
#[test]
fn reading_by_shape_agrees_with_a_full_parse_on_mutated_lines() {
    let seeds = [
        r#"{"jsonrpc":"2.0","id":7,"result":{"contents":[{"uri":"a://b","mimeType":"text/plain","text":"hello \"w\" \n é"}]}}"#,
        r#"{"jsonrpc":"2.0","id":12,"result":{"contents":[{"uri":"a://b","blob":"AAEC"}],"ttlMs":5}}"#,
        r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":3,"result":[1,{"a":null}]}"#,
    ];
    let mut m = crate::json::agreement::Mutator::new(0x2545_f491_4f6c_dd1d);
    let seeds: Vec<&[u8]> = seeds.iter().map(|s| s.as_bytes()).collect();
    const BYTES: &[u8] = b"{}[]\",:\\ \t\r\n0123456789abcdeu\x01\x7f\xc3\xa9\xff";
    let mut agreed = 0;
    for _ in 0..20_000 {
        let line = m.mutated(&seeds, BYTES, 3);
        // As a JSON value and as the typed result (whose text and blob are read as
        // bytes), each on its own: the id with whichever decodes succeed, or nothing
        // when neither does.
        type Read = crate::model::ReadResourceResult;
        let outcome = |id: i64, value: Option<serde_json::Value>, typed: Option<Read>| {
            let typed = typed.map(|r| format!("{r:?}"));
            (value.is_some() || typed.is_some()).then_some((id, value, typed))
        };
        let whole = match Incoming::parse_shape(&line) {
            Ok(Shape::Result {
                id: RequestId::Number(id),
                range,
            }) => outcome(
                id,
                serde_json::from_slice(&line[range.clone()]).ok(),
                serde_json::from_slice(&line[range]).ok(),
            ),
            _ => None,
        };
        let by_shape = match Incoming::parse(line.clone()) {
            Ok(Incoming::Result {
                id: RequestId::Number(id),
                result,
            }) => outcome(id, result.decode().ok(), result.decode().ok()),
            _ => None,
        };
        assert_eq!(by_shape, whole, "{}", String::from_utf8_lossy(&line));
        agreed += usize::from(whole.is_some());
    }
    assert!(
        agreed > 1000,
        "too few valid mutations to mean much: {agreed}"
    );
}

#[test]
fn garbage_is_an_error_never_a_panic() {
    for line in [
        "",
        "hello",
        "{",
        "[]",
        "null",
        "42",
        r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":01,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}} trailing"#,
        "\u{0}\u{1}",
    ] {
        assert!(parse(line).is_err(), "{line:?} should be refused");
    }
}

#[test]
fn written_messages_are_single_lines() {
    let mut out = Vec::new();
    write_request(
        &mut out,
        &RequestId::Number(1),
        "tools/call",
        &serde_json::json!({"name": "echo", "arguments": {"message": "a\nb"}}),
    );
    write_notification::<()>(&mut out, "notifications/initialized", None);
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.matches('\n').count(), 2);
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["jsonrpc"], "2.0");
    }
}

#[test]
fn values_are_counted_outside_strings_only() {
    assert_eq!(count_values(br#"{"a":[1,2,3],"b":"x,y:[{"}"#), 8);
    assert_eq!(count_values(br#""escaped \" , still a string""#), 1);
    let dense = format!("[{}0]", "0,".repeat(1_000_000));
    assert_eq!(count_values(dense.as_bytes()), 1_000_002);
    // A megabyte of prose or of base64 holds a handful of values: always within.
    let text = format!(r#"{{"text":"{}"}}"#, "a, b: c [d] {e} ".repeat(200_000));
    assert!(within_value_budget(text.as_bytes(), 64 << 20).is_ok());
    // Two megabytes of zeros: a million values, past the budget of a 4 MiB limit.
    let zeros = format!("[{}0]", "0,".repeat(2_000_000));
    assert_eq!(value_budget(4 << 20), 1 << 20);
    assert!(within_value_budget(zeros.as_bytes(), 4 << 20).is_err());
}

#[test]
fn a_line_that_is_not_utf8_is_refused_wherever_the_bad_byte_lies() {
    // JSON text is UTF-8. A bad byte inside a member capable does not read (skipped
    // by the parse without a look at its text) refuses the line as surely as one
    // inside the payload does.
    for line in [
        &b"{\"jsonrpc\":\"2.0\",\"id\":2,\"x\":\"a\x8e\",\"result\":{}}"[..],
        b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1,\"note\":\"\xff\"}",
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"z\":[\"\xc3\"],\"params\":{}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"text\":\"\xe2\x82\"}}",
    ] {
        assert!(
            matches!(Incoming::parse(line.to_vec()), Err(FramingError::NotJson(_)))
                || Incoming::parse(line.to_vec()).is_ok_and(|m| match m {
                    Incoming::Result { result, .. } => result.decode::<serde_json::Value>().is_err(),
                    _ => false,
                }),
            "{}",
            String::from_utf8_lossy(line)
        );
        assert!(
            matches!(Incoming::parse_whole(line.to_vec()), Err(FramingError::NotJson(_))),
            "{}",
            String::from_utf8_lossy(line)
        );
    }
}

#[test]
fn mentions_finds_a_needle_anywhere_in_short_and_long_payloads() {
    for filler in [0, 10, 300, 5000] {
        let pad = "x".repeat(filler);
        let text = format!(r#"{{"a":"{pad}","task":1,"z":"{pad}end"}}"#);
        let p = Payload::from_json(text.clone());
        for needle in ["{\"a", "\"task\"", "end\"}", "a\":", "1,"] {
            assert!(p.mentions(needle), "{needle} in {} bytes", text.len());
        }
        for needle in ["\"tasks", "end\"}}", "y", "\"task\"\""] {
            assert!(!p.mentions(needle), "{needle} in {} bytes", text.len());
        }
        assert!(
            !p.mentions(&format!("{text} ")),
            "a needle longer than the text"
        );
        assert!(p.mentions(""));
    }
}

#[test]
fn a_result_type_is_read_off_the_members_or_judged_by_serde() {
    let rt = |text: &str| Payload::from_json(text.to_owned()).result_type().ok();
    assert_eq!(rt(r#"{"contents":[],"ttlMs":0}"#), Some(None));
    assert_eq!(
        rt(r#"{"a":{"resultType":"nested"},"resultType":"complete"}"#),
        Some(Some("complete".into()))
    );
    assert_eq!(rt(r#"{"resultType":null}"#), Some(None));
    // What the walk leaves to serde, serde decides as before.
    assert_eq!(
        rt(r#"{"result\u0054ype":"input_required"}"#),
        Some(Some("input_required".into()))
    );
    assert_eq!(rt(r#"{"resultType":"a","resultType":"b"}"#), None);
    assert_eq!(rt(r#"{"resultType":7}"#), None);
    assert_eq!(rt(r#"{"resultType":"complete""#), None);
}

#[test]
fn a_raw_value_is_exactly_the_result_or_refused_as_the_decode_would() {
    let raw = |line: &str| match parse(line).unwrap() {
        Incoming::Result { result, .. } => result.raw_value().map(|v| v.get().to_owned()),
        other => panic!("{other:?}"),
    };
    // Read off its shape: the value alone, without what closes the envelope.
    assert_eq!(
        raw("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":[1,\"}\"]} }\r\n").unwrap(),
        r#"{"a":[1,"}"]}"#
    );
    // Members after the result: the whole line is parsed for its place.
    assert_eq!(
        raw(r#"{"jsonrpc":"2.0","id":1,"result":{"a":1},"x":2}"#).unwrap(),
        r#"{"a":1}"#
    );
    // Parsed whole (another layout): exactly the value.
    assert_eq!(
        raw(r#"{"id":1,"jsonrpc":"2.0","result":[true]}"#).unwrap(),
        "[true]"
    );
    // What the decode refuses is refused: a raw control byte in a string.
    let bad = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":\"x\u{1}y\"}}";
    assert!(raw(bad).is_err());
}

#[test]
fn checked_text_is_the_raw_value_and_a_seed_reads_it_in_the_same_pass() {
    use std::marker::PhantomData;
    let result = |line: &str| match parse(line).unwrap() {
        Incoming::Result { result, .. } => result,
        other => panic!("{other:?}"),
    };
    let lines = [
        // Read off its shape, then after members that follow it, then parsed whole.
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":[1,\"}\"]} }\r\n",
        r#"{"jsonrpc":"2.0","id":1,"result":{"a":1},"x":2}"#,
        r#"{"id":1,"jsonrpc":"2.0","result":{"b":[true]}}"#,
    ];
    for line in lines {
        let payload = result(line);
        let raw = payload.raw_value().unwrap().get().to_owned();
        assert_eq!(payload.checked().unwrap().get(), raw);
        let (text, value) = payload
            .checked_with(PhantomData::<serde_json::Value>)
            .unwrap();
        assert_eq!(text.get(), raw);
        assert_eq!(
            value,
            serde_json::from_str::<serde_json::Value>(&raw).unwrap()
        );
        // Written as it is.
        let mut out = Vec::new();
        text.write_json(&mut out);
        assert_eq!(out, raw.as_bytes());
    }
    // What `raw_value` refuses is refused, whatever the seed: a raw control byte in
    // a member the seed skips.
    let bad = result("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":\"x\u{1}y\"}}");
    assert!(bad.checked().is_err());
    assert!(bad
        .checked_with(PhantomData::<serde::de::IgnoredAny>)
        .is_err());
    // A seed that cannot read the value: refused, the text checked nonetheless.
    let object = result(r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#);
    assert!(object.checked_with(PhantomData::<Vec<u8>>).is_err());
}
