//! The one harness every reader of this module is held to its contract with (see
//! `mod.rs`): whatever a reader takes, serde_json takes with the same value, and what
//! it gives up on is serde's to judge. Inputs come two ways, and each is read both
//! ways:
//!
//! - byte-level mutations of seeds ([`Mutator`]), which find the edges nobody writes
//!   by hand: a quote too many, a stray control byte, a broken escape, invalid UTF-8;
//! - generated valid values ([`read_results`], [`json_text`]), which find the layouts
//!   and strings a server may write.
//!
//! Through a whole response line as well: routed by its shape, then decoded as a
//! caller decodes it, the outcome is the generic decode's, value or refusal.

use proptest::prelude::*;
use serde_json::{Map, Value};

/// A small xorshift generator: the same seed gives the same mutations on every run.
pub(crate) struct Mutator(u64);

impl Mutator {
    pub(crate) fn new(seed: u64) -> Mutator {
        Mutator(seed)
    }

    /// A number below `n` (`n` > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        let s = &mut self.0;
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        (*s % n as u64) as usize
    }

    /// One of `seeds`, with 1 to `max_edits` bytes removed, replaced or inserted (the
    /// new ones drawn from `alphabet`).
    pub(crate) fn mutated(
        &mut self,
        seeds: &[&[u8]],
        alphabet: &[u8],
        max_edits: usize,
    ) -> Vec<u8> {
        let mut text = seeds[self.below(seeds.len())].to_vec();
        for _ in 0..=self.below(max_edits) {
            let at = self.below(text.len() + 1);
            match self.below(3) {
                0 if at < text.len() => {
                    text.remove(at);
                }
                1 if at < text.len() => text[at] = alphabet[self.below(alphabet.len())],
                _ => text.insert(at, alphabet[self.below(alphabet.len())]),
            }
        }
        text
    }
}

/// What serde's derived decoder makes of `raw`, shown: what a reader must make.
pub(crate) fn by_serde<T: serde::de::DeserializeOwned + std::fmt::Debug>(
    raw: &[u8],
) -> Option<String> {
    serde_json::from_slice::<T>(raw)
        .ok()
        .map(|r| format!("{r:?}"))
}

/// `raw` read both ways: when `reader` takes it, serde takes it with the same value;
/// through a whole response line, `payload` (the decode a caller makes, the reader
/// first) gives the generic decode's outcome. Returns whether `reader` took it.
pub(crate) fn agree<R: std::fmt::Debug, T: serde::de::DeserializeOwned + std::fmt::Debug>(
    raw: &[u8],
    reader: impl Fn(&[u8]) -> Option<R>,
    payload: impl Fn(&crate::Payload) -> Result<T, serde_json::Error>,
) -> bool {
    let mut line = br#"{"jsonrpc":"2.0","id":1,"result":"#.to_vec();
    line.extend_from_slice(raw);
    line.push(b'}');
    if let Ok(crate::Incoming::Result { result, .. }) = crate::Incoming::parse(line.clone()) {
        assert_eq!(
            payload(&result).map(|r| format!("{r:?}")).ok(),
            result.decode::<T>().map(|r| format!("{r:?}")).ok(),
            "{}",
            String::from_utf8_lossy(&line)
        );
    }
    let Some(read) = reader(raw) else {
        return false;
    };
    assert_eq!(
        Some(format!("{read:?}")),
        by_serde::<T>(raw),
        "{}",
        String::from_utf8_lossy(raw)
    );
    true
}

/// [`agree`] on `rounds` mutations of `seeds`; how many `reader` took, for the test to
/// require enough.
pub(crate) fn agrees_on_mutations<
    R: std::fmt::Debug,
    T: serde::de::DeserializeOwned + std::fmt::Debug,
>(
    seed: u64,
    seeds: &[&str],
    alphabet: &[u8],
    rounds: usize,
    reader: impl Fn(&[u8]) -> Option<R>,
    payload: impl Fn(&crate::Payload) -> Result<T, serde_json::Error>,
) -> usize {
    let mut m = Mutator::new(seed);
    let seeds: Vec<&[u8]> = seeds.iter().map(|s| s.as_bytes()).collect();
    (0..rounds)
        .filter(|_| agree(&m.mutated(&seeds, alphabet, 3), &reader, &payload))
        .count()
}

/// A string a server may write: plain ASCII, non-ASCII text, and the characters that
/// need escapes (quotes, backslashes, control characters), short and long.
pub(crate) fn json_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-zA-Z0-9:/._-]{0,12}",
        1 => "[é✓🦀ü]{1,3}",
        1 => prop::sample::select(vec!["\"", "\\", "\n", "\t", "\u{1}", "\u{1f}", "/", "\u{7f}"])
            .prop_map(str::to_owned),
        1 => "x{60,200}",
    ];
    prop::collection::vec(piece, 0..6).prop_map(|pieces| pieces.concat())
}

/// A `resources/read` result in and around the usual layout: one or more contents,
/// each with a URI and some of `mimeType`, `text`, `blob` (a string or `null`) and
/// now and then a member the reader does not take, in the usual order or another,
/// and now and then a member of the result beside the contents.
pub(crate) fn read_results() -> impl Strategy<Value = Value> {
    let optional = prop_oneof![3 => json_text().prop_map(Value::from), 1 => Just(Value::Null)];
    let content = (
        json_text(),
        prop::option::of(optional.clone()),
        prop::option::of(optional.clone()),
        prop::option::of(optional),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(uri, mime, text, blob, annotated, reversed)| {
            let mut members = vec![("uri", Value::from(uri))];
            members.extend(mime.map(|m| ("mimeType", m)));
            members.extend(text.map(|t| ("text", t)));
            members.extend(blob.map(|b| ("blob", b)));
            if annotated {
                members.push(("annotations", serde_json::json!({"priority": 0.5})));
            }
            if reversed {
                members.reverse();
            }
            let object: Map<String, Value> = members
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect();
            Value::Object(object)
        });
    (
        prop::collection::vec(content, 1..3),
        prop::option::of(prop_oneof![
            Just(("ttlMs", Value::from(0))),
            Just(("resultType", Value::from("complete"))),
            Just(("_meta", serde_json::json!({}))),
        ]),
    )
        .prop_map(|(contents, beside)| {
            let mut result = Map::new();
            result.insert("contents".into(), Value::Array(contents));
            if let Some((key, value)) = beside {
                result.insert(key.into(), value);
            }
            Value::Object(result)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ReadResourceResult, ResourceContents};

    fn read_contents(raw: &[u8]) -> Option<ReadResourceResult> {
        super::super::read_contents(raw).map(ReadResourceResult::of_contents)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Generated reads, compact and with whitespace: the reader's value is
        /// serde's, and it takes every one in the usual layout.
        #[test]
        fn generated_reads_agree_with_serde(result in read_results(), pretty in any::<bool>()) {
            let raw = match pretty {
                true => serde_json::to_vec_pretty(&result).unwrap(),
                false => serde_json::to_vec(&result).unwrap(),
            };
            let took = agree(&raw, read_contents, ReadResourceResult::from_payload);
            let contents = result["contents"].as_array().unwrap();
            let usual = !pretty
                && result.as_object().unwrap().len() == 1
                && contents.len() == 1
                && usual_content(&contents[0]);
            prop_assert_eq!(took, usual, "{}", String::from_utf8_lossy(&raw));
        }

        /// Generated strings in every field the reader takes: as serde reads them.
        #[test]
        fn generated_strings_agree_with_serde(uri in json_text(), text in json_text()) {
            let raw = serde_json::to_vec(&serde_json::json!(
                {"contents": [{"uri": uri, "mimeType": text, "text": text}]}
            )).unwrap();
            prop_assert!(agree(&raw, read_contents, ReadResourceResult::from_payload));
        }

        /// Generated success responses, routed by their shape and then decoded: the
        /// same as a full parse of the line.
        #[test]
        fn generated_answers_read_off_their_shape_agree_with_a_full_parse(
            result in read_results(),
            id in 0i64..1_000_000,
            beside in any::<bool>(),
        ) {
            let mut message = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result});
            if beside {
                message["extra"] = Value::from(1);
            }
            let line = serde_json::to_vec(&message).unwrap();
            let Ok(crate::Incoming::Result { id: got, result: payload }) =
                crate::Incoming::parse(line.clone())
            else {
                return Err(TestCaseError::fail("a result"));
            };
            prop_assert_eq!(got, crate::RequestId::Number(id));
            let decoded = ReadResourceResult::from_payload(&payload).map(|r| format!("{r:?}"));
            prop_assert_eq!(decoded.ok(), by_serde::<ReadResourceResult>(
                &serde_json::to_vec(&message["result"]).unwrap()
            ));
        }
    }

    /// Whether a content is one the usual layout holds: `uri`, then `mimeType`, then
    /// one of `text` and `blob`, each optional, nothing else.
    fn usual_content(content: &Value) -> bool {
        let keys: Vec<&str> = content
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let rest = keys.strip_prefix(&["uri"]).unwrap_or(&["-"]);
        let rest = rest.strip_prefix(&["mimeType"]).unwrap_or(rest);
        matches!(rest, [] | ["text"] | ["blob"])
    }

    #[test]
    fn a_content_built_by_the_reader_is_the_one_serde_builds() {
        let raw = br#"{"contents":[{"uri":"a://b","mimeType":"text/plain","text":"hi"}]}"#;
        let read = read_contents(raw).expect("the usual layout");
        let serde: ReadResourceResult = serde_json::from_slice(raw).unwrap();
        let only = |r: &ReadResourceResult| -> ResourceContents { r.contents[0].clone() };
        assert_eq!(only(&read), only(&serde));
    }
}
