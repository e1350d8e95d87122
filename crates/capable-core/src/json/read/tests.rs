//! The reader of `resources/read` results against serde's verdict: what it takes is
//! serde's value, what it does not take is serde's to decode (and decodes the same
//! through [`ReadResourceResult::from_payload`]).

use crate::json::agreement::{agree, agrees_on_mutations, by_serde};
use crate::model::ReadResourceResult;

/// The reader, as the result a caller gets.
fn read_result(raw: &[u8]) -> Option<ReadResourceResult> {
    super::read_contents(raw).map(ReadResourceResult::of_contents)
}

/// 50,000 mutations of `seeds` (bytes drawn from `bytes`), each read as serde reads
/// it or left to serde, and enough of them read to mean something.
fn agrees_with_serde_on_mutations(seed: u64, seeds: &[&str], bytes: &[u8]) {
    let read = agrees_on_mutations(
        seed,
        seeds,
        bytes,
        50_000,
        read_result,
        ReadResourceResult::from_payload,
    );
    assert!(read > 2000, "too few mutations read to mean much: {read}");
}

/// `raw` is read, and read as serde reads it.
fn reads_as_serde(raw: &str) {
    let read = read_result(raw.as_bytes()).map(|r| format!("{r:?}"));
    assert!(read.is_some(), "{raw} should be read");
    assert_eq!(
        read,
        by_serde::<ReadResourceResult>(raw.as_bytes()),
        "{raw}"
    );
}

/// `raw` is left to serde, and decodes as serde decodes it.
fn left_to_serde(raw: &str) {
    assert!(
        !agree(
            raw.as_bytes(),
            read_result,
            ReadResourceResult::from_payload
        ),
        "{raw} should be left to serde"
    );
}

#[test]
fn the_usual_layout_is_read_as_serde_reads_it() {
    for raw in [
        r#"{"contents":[{"uri":"a://b","mimeType":"text/plain","text":"hello"}]}"#,
        r#"{"contents":[{"uri":"a://b","text":"line\none \"q\" \\ \u00e9\ud83e\udd80 \u0001"}]}"#,
        r#"{"contents":[{"uri":"a\/b","text":"\\"}]}"#,
    ] {
        reads_as_serde(raw);
    }
    // Other layouts decode all the same, by serde.
    for raw in [
        r#"{"contents":[]}"#,
        r#" { "contents" : [ { "text" : "x" , "uri" : "a://b" } ] } "#,
        r#"{"contents":[{"uri":"a://b","blob":"AAEC","mimeType":null}],"ttlMs":5,"cacheScope":"public","resultType":"complete"}"#,
        r#"{"ttlMs":1.5e3,"contents":[{"uri":"a://b","text":null},{"uri":"c://d","text":"é ✓ 🦀"}]}"#,
        r#"{"contents":[{"uri":"a\/b","text":"\\"}],"ttlMs":null}"#,
    ] {
        left_to_serde(raw);
    }
}

#[test]
fn the_strings_of_a_read_share_one_copy_of_it() {
    let raw = br#"{"contents":[{"uri":"a://b","mimeType":"text/plain","text":"e\u0301"}]}"#;
    let read = read_result(raw).unwrap();
    let [only] = &read.contents[..] else {
        panic!("one content: {read:?}")
    };
    assert!(only.uri.shares_text_with(only.mime_type.as_ref().unwrap()));
    // A string with escapes is decoded on its own.
    let decoded = only.text.as_ref().unwrap();
    assert_eq!(decoded, "e\u{301}");
    assert!(!only.uri.shares_text_with(decoded));
}

#[test]
fn anything_else_is_left_to_serde() {
    for raw in [
        r#"{"contents":[{"uri":"a://b","annotations":{"priority":1}}]}"#,
        r#"{"contents":[{"uri":"a://b","_meta":{}}]}"#,
        r#"{"contents":[],"_meta":{"x":1}}"#,
        r#"{"contents":[{"uri":"a://b","uri":"c://d"}]}"#,
        r#"{"contents":[{"uri":"a://b"}],"contents":[]}"#,
        r#"{"contents":[{"mimeType":"text/plain"}]}"#,
        r#"{"contents":[{"uri":"a://b","text":"raw	tab"}]}"#,
        r#"{"contents":[{"uri":"a://b","text":"\ud800"}]}"#,
        r#"{"contents":[{"uri":"a://b","text":42}]}"#,
        r#"{"contents":[{"uri":"a://b"}]} x"#,
        r#"{"contents":[{"uri":"a://b"},]}"#,
        r#"{"contents":[{"uri":"a://b"}],}"#,
        r#"{"contents":[{"uri":"a://b"}],"ttlMs":1,"ttlMs":2}"#,
        r#"{"contents":[{"uri":"a://b"}],"resultType":"complete","_meta":{}}"#,
        r#"{"contents":[{"uri":"a://b"}],"ttlMs":1e999}"#,
        r#"{"other":1,"contents":[]}"#,
        r#"{"contents":[{"uri":"a://b"}]"#,
        r#"{"contents":[{"u\u0072i":"a://b"}]}"#,
        r#"[]"#,
        "",
    ] {
        left_to_serde(raw);
    }
    // Invalid UTF-8 in a string.
    let mut bad = br#"{"contents":[{"uri":"a://b","text":"ab"}]}"#.to_vec();
    let at = bad.iter().rposition(|&b| b == b'a').unwrap();
    bad[at] = 0xff;
    assert!(read_result(&bad).is_none());
}

/// A string with escapes and raw non-ASCII text before the first plain one (as some
/// encoders write a URI): the check of the shared copy, which starts a little
/// early, never starts inside one of its characters. Every length moves where it
/// would start.
#[test]
fn raw_non_ascii_before_the_first_plain_string_is_read() {
    for pad in 0..80 {
        let uri = format!("a\\u0026{}é✓", "x".repeat(pad));
        for text in ["short", &"t".repeat(100 + pad)] {
            let raw = format!(
                r#"{{"contents":[{{"uri":"{uri}","mimeType":"text/plain","text":"{text}"}}]}}"#
            );
            reads_as_serde(&raw);
        }
    }
}

/// The usual layout in all its forms, and its near misses: read as serde reads them,
/// or left to serde.
#[test]
fn the_usual_layout_and_its_near_misses_are_read_as_serde_reads_them() {
    for raw in [
        r#"{"contents":[{"uri":"a://b"}]}"#,
        r#"{"contents":[{"uri":"a://b","mimeType":null,"text":null}]}"#,
        r#"{"contents":[{"uri":"a://b","blob":"AAEC"}]}"#,
        r#"{"contents":[{"uri":"a://b","mimeType":"x/y","blob":null}]}"#,
        "{\"contents\":[{\"uri\":\"a://b\",\"text\":\"x\"}]}\r\n ",
        r#"{"contents":[{"uri":"a\"b","mimeType":"\u0041","text":"\n"}]}"#,
        r#"{"contents":[{"uri":"é\n","mimeType":"x","text":"y"}]}"#,
    ] {
        reads_as_serde(raw);
    }
    for raw in [
        r#"{"contents":[{"uri":"a://b","text":"x","blob":"y"}]}"#,
        r#"{"contents":[{"uri":"a://b","text":"x","mimeType":"y"}]}"#,
        r#"{"contents":[{"uri":"a://b","mimeType":"x"},{"uri":"c","text":"d"}]}"#,
        r#"{"contents":[{"uri":"a://b","text":"x"}],"ttlMs":5}"#,
        r#"{"contents":[{"uri":"a://b","text":"x"} ]}"#,
        r#"{"contents":[{"uri":"🦀\n","text":"é"}],"cacheScope":"é"}"#,
        r#"{"contents":[{"uri":null}]}"#,
        r#"{"contents":[{"uri":"a://b","text":"x"}]}}"#,
        r#"{"contents":[{"uri":"a://b","text":"x"}]"#,
        r#"{"contents":[{"uri":"a://b","text":"x"},]}"#,
        r#"{"contents":[{"uri":"a://b","text":"x","text":"y"}]}"#,
        r#"{"contents":[{"uri":"a://b","te\u0078t":"x"}]}"#,
        "{\"contents\":[{\"uri\":\"a://b\",\"text\":\"\u{7f}\u{1}\"}]}",
    ] {
        left_to_serde(raw);
    }
}

/// Texts short and long, with a byte of each kind that matters at places around
/// the word and block boundaries of the string search, in the usual layouts and
/// others: what the reader takes is what serde makes of it, it takes every valid one
/// in the usual layout, and it leaves every other to serde.
#[test]
fn strings_of_every_length_and_content_agree_with_serde() {
    let usual: [fn(&str) -> String; 2] = [
        |t| format!(r#"{{"contents":[{{"uri":"a://b","mimeType":"text/plain","text":"{t}"}}]}}"#),
        |t| format!(r#"{{"contents":[{{"uri":"{t}","mimeType":"{t}","blob":"{t}"}}]}}"#),
    ];
    let others: [fn(&str) -> String; 4] = [
        |t| format!("{{ \"contents\" : [ {{ \"uri\" : \"a\",\n\t\"text\" : \"{t}\" }} ] }}\n"),
        |t| format!(r#"{{"contents":[{{"text":"{t}","uri":"a://b"}}],"cacheScope":"{t}"}}"#),
        |t| format!(r#"{{"resultType":"{t}","contents":[{{"uri":"a://b","text":"{t}"}}]}}"#),
        |t| {
            format!(
                r#"{{"contents":[{{"uri":"a://b","text":"{t}"}}],"resultType":"complete","ttlMs":0,"cacheScope":"{t}"}}"#
            )
        },
    ];
    // (what is put in the text, whether the text is then still valid JSON)
    let specials = [
        ("é", true),
        ("🦀", true),
        ("\\\"", true),
        ("\\\\", true),
        ("\\u00e9", true),
        ("\\ud83e\\udd80", true),
        ("\u{1}", false),
        ("\t", false),
        ("\u{1f}", false),
        ("\"", false),
        ("\\", false),
        ("\\x", false),
        ("\\ud800", false),
    ];
    for len in [
        0usize, 1, 7, 8, 9, 31, 32, 33, 40, 63, 64, 65, 100, 127, 128, 129, 300,
    ] {
        for at in [0, len / 3, len / 2, len.saturating_sub(1), len] {
            for (special, valid) in specials {
                let mut text = "x".repeat(len);
                text.insert_str(at, special);
                for layout in usual {
                    let raw = layout(&text);
                    let read = read_result(raw.as_bytes()).map(|r| format!("{r:?}"));
                    if valid {
                        assert!(read.is_some(), "{raw:?} should be read");
                        assert_eq!(read, by_serde::<ReadResourceResult>(raw.as_bytes()));
                    } else {
                        assert_eq!(read, None, "{raw:?} should be left to serde");
                    }
                }
                for layout in others {
                    left_to_serde(&layout(&text));
                }
            }
        }
    }
}

/// Mutated reads: whatever the reader accepts, serde accepts with the same value.
#[test]
fn the_reader_never_disagrees_with_serde_on_mutated_reads() {
    let seeds = [
        r#"{"contents":[{"uri":"a://b","mimeType":"text/plain","text":"hello \"w\" \n é"}]}"#,
        r#"{"contents":[{"uri":"a://b","blob":"AAEC"}],"ttlMs":5,"cacheScope":"private"}"#,
        r#"{"contents":[{"uri":"a://b","text":null},{"uri":"c","mimeType":null}],"resultType":"complete"}"#,
        r#"{"contents":[{"uri":"a://b","mimeType":null,"blob":"AAEC"}]}"#,
    ];
    agrees_with_serde_on_mutations(
        0x9e37_79b9_7f4a_7c15,
        &seeds,
        b"{}[]\",:\\ \t\r\n0123456789abcdeunl\x01\x7f\xc3\xa9\xff",
    );
}

/// The same, on reads whose strings are long enough for the vector search, in the
/// usual layout and around it.
#[test]
fn the_reader_never_disagrees_with_serde_on_mutated_long_reads() {
    let text = "x".repeat(90);
    let seeds = [
        format!(
            r#"{{"contents":[{{"uri":"a://{text}","mimeType":"text/plain","text":"{text}é{text}\"{text}"}}]}}"#
        ),
        format!(
            r#"{{"contents":[{{"uri":"a://b","text":"{text}"}},{{"uri":"c","blob":"{text}"}}],"ttlMs":5}}"#
        ),
        format!(r#"{{"contents":[{{"uri":"{text}","text":"{text}\\n{text}"}}]}}"#),
    ];
    let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
    agrees_with_serde_on_mutations(
        0x2545_f491_4f6c_dd1d,
        &seeds,
        b"{}[]\",:\\ \t\r\n0123456789abcdeunl\x01\x1f\x7f\xc3\xa9\xff",
    );
}

/// A read's text and blob decode exactly as strings do, whatever reads them.
#[test]
fn text_decodes_exactly_as_a_string_would() {
    for text in [
        "plain",
        "",
        "line one\nline two\t\"quoted\" \\ back",
        "ünïcödé ✓ 🦀",
        "\u{1}\u{1f} control characters, escaped on the wire",
    ] {
        let wire = serde_json::to_string(text).unwrap();
        for raw in [
            format!(r#"{{"contents":[{{"uri":"a://b","text":{wire}}}]}}"#),
            format!(r#"{{"contents":[{{"text":{wire},"uri":"a://b"}}]}}"#),
        ] {
            let got = decode(&raw).unwrap();
            assert_eq!(got.contents[0].text.as_deref(), Some(text), "{raw}");
        }
    }
    let got = decode(r#"{"contents":[{"uri":"a://b","text":"\u00e9\ud83e\udd80"}]}"#).unwrap();
    assert_eq!(got.contents[0].text.as_deref(), Some("é🦀"));
    let got = decode(r#"{"contents":[{"uri":"a://b","text":null}]}"#).unwrap();
    assert_eq!(got.contents[0].text, None);
}

/// And are refused where a string would be, in the usual layout and any other; so is
/// a raw control byte or invalid UTF-8 in a member nobody reads.
#[test]
fn text_is_refused_where_a_string_would_be() {
    for bad in [
        "\"raw \u{1} control\"",
        "\"raw\ttab\"",
        "\"escaped \\n and raw \u{2} control\"",
        r#""\ud800 lone surrogate""#,
        r#""\x""#,
        "[104, 105]",
        "42",
        r#""unterminated"#,
    ] {
        for raw in [
            format!(r#"{{"contents":[{{"uri":"a://b","text":{bad}}}]}}"#),
            format!(r#"{{"contents":[{{"text":{bad},"uri":"a://b"}}]}}"#),
        ] {
            assert!(decode(&raw).is_err(), "{raw:?} should be refused");
        }
    }
    for raw in [
        "{\"contents\":[],\"other\":\"raw \u{1} control\"}",
        "{\"contents\":[{\"uri\":\"a\",\"annotations\":{\"x\":\"\t\"}}]}",
    ] {
        assert!(decode(raw).is_err(), "{raw:?} should be refused");
    }
    let mut bytes =
        br#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"a://b","text":"ab"}]}}"#.to_vec();
    let at = bytes.iter().position(|&b| b == b'a').unwrap();
    bytes[at] = 0xff;
    let Ok(crate::Incoming::Result { result, .. }) = crate::Incoming::parse(bytes) else {
        panic!("not a result")
    };
    assert!(ReadResourceResult::from_payload(&result).is_err());
}

/// Decodes a `resources/read` result the way the client does: off a response line.
fn decode(result: &str) -> Result<ReadResourceResult, String> {
    let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
    match crate::Incoming::parse(line.into_bytes()).map_err(|e| e.to_string())? {
        crate::Incoming::Result { result, .. } => {
            ReadResourceResult::from_payload(&result).map_err(|e| e.to_string())
        }
        other => Err(format!("not a result: {other:?}")),
    }
}
