//! Robustness against garbage: random bytes, mutated lines and mutated messages from a
//! seeded generator never panic the parser or a ready connection in either era, and
//! whatever the client answers is valid under the official schema of the negotiated
//! version.

mod common;

use capable_core::Outbox;
use capable_core::{Incoming, Method, Timing};
use capable_test_support::{t0, take};
use common::{everything, legacy, modern, MODERN, V};
use serde_json::{json, Value};

/// A deterministic xorshift64* generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const SEEDS: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#,
    r#"{"jsonrpc":"2.0","id":2,"result":{"contents":[{"uri":"docs://a","text":"A"}]}}"#,
    r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}"#,
    r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"bad","data":{"x":[1,2]}}}"#,
    r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse"}}"#,
    r#"{"jsonrpc":"2.0","id":"s","method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":7,"method":"roots/list","params":{}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":5,"progress":1,"total":2}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"docs://a"}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"é\u0000"}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
    r#"{"jsonrpc":"2.0","id":6,"result":null}"#,
    r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
];

const ALPHABET: &[u8] =
    br#"{}[]":,0123456789-+.eE truefalsnul\"jsonrpc2.0idmethodparamsresulterrorcode"#;

fn random_bytes(rng: &mut Rng) -> Vec<u8> {
    let len = rng.below(120);
    (0..len)
        .map(|_| match rng.below(4) {
            0 => rng.next() as u8,
            _ => *rng.pick(ALPHABET),
        })
        .collect()
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for _ in 0..=rng.below(4) {
        if bytes.is_empty() {
            bytes.push(*rng.pick(ALPHABET));
            continue;
        }
        let at = rng.below(bytes.len());
        match rng.below(7) {
            0 => bytes[at] = rng.next() as u8,
            1 => bytes[at] = *rng.pick(ALPHABET),
            2 => {
                bytes.remove(at);
            }
            3 => bytes.insert(at, *rng.pick(ALPHABET)),
            4 => bytes.truncate(at),
            5 => {
                // Swap a number for another, possibly huge or negative, number.
                let n = *rng.pick(&["0", "-1", "9223372036854775807", "1e400", "5", "1.5"]);
                let digit = bytes.iter().position(|b| b.is_ascii_digit());
                if let Some(d) = digit {
                    bytes.splice(d..d + 1, n.bytes());
                }
            }
            _ => {
                let other = rng.pick(SEEDS).as_bytes();
                let cut = rng.below(other.len());
                bytes.extend_from_slice(&other[cut..]);
            }
        }
    }
    bytes
}

/// A random JSON value, small.
fn random_value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 2 { 6 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(*rng.pick(&[0i64, 1, 2, 5, -1, i64::MAX, i64::MIN])),
        3 => json!(*rng.pick(&[0.5f64, 1e300, -0.0])),
        4 => json!(*rng.pick(&[
            "",
            "ping",
            "2.0",
            "notifications/progress",
            "roots/list",
            "docs://a",
            "\u{0}\n",
        ])),
        5 => json!(rng.next().to_string()),
        6 => Value::Array(
            (0..rng.below(3))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let keys = [
                "jsonrpc",
                "id",
                "method",
                "params",
                "result",
                "error",
                "code",
                "message",
                "data",
                "progressToken",
                "progress",
                "uri",
                "_meta",
            ];
            let mut map = serde_json::Map::new();
            for _ in 0..rng.below(4) {
                map.insert((*rng.pick(&keys)).to_owned(), random_value(rng, depth + 1));
            }
            Value::Object(map)
        }
    }
}

/// Replaces, adds or removes one member somewhere in a valid message: stays JSON, so
/// it exercises classification and routing rather than the JSON parser.
fn mutate_value(rng: &mut Rng, value: &mut Value) {
    match value {
        Value::Object(map) if !map.is_empty() && rng.below(3) != 0 => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = rng.pick(&keys).clone();
            match rng.below(4) {
                0 => {
                    map.remove(&key);
                }
                1 => {
                    map.insert(key, random_value(rng, 0));
                }
                _ => mutate_value(rng, map.get_mut(&key).unwrap()),
            }
        }
        Value::Array(items) if !items.is_empty() && rng.below(3) != 0 => {
            let at = rng.below(items.len());
            mutate_value(rng, &mut items[at]);
        }
        Value::Object(map) => {
            let key = *rng.pick(&["id", "result", "error", "method", "params", "extra"]);
            map.insert(key.to_owned(), random_value(rng, 0));
        }
        other => *other = random_value(rng, 0),
    }
}

#[test]
fn robustness_garbage_never_panics_the_parser_or_a_ready_connection() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut legacy_conn = legacy(everything());
    let mut modern_conn = modern(everything());
    // Requests in flight, so random answers and progress have something to hit.
    let mut out = Outbox::new();
    for conn in [&mut legacy_conn, &mut modern_conn] {
        for _ in 0..8 {
            conn.request(
                Method::ListTools,
                &json!({}),
                Timing::new().with_progress(true),
                "w",
                t0(),
                &mut out,
            )
            .unwrap();
        }
        out.clear();
    }
    let mut parsed = 0;
    for round in 0..9000 {
        let seed = rng.pick(SEEDS).as_bytes().to_vec();
        let bytes = match round % 3 {
            0 => random_bytes(&mut rng),
            1 => mutate(&mut rng, &seed),
            _ => match serde_json::from_slice::<Value>(&seed) {
                Ok(mut value) => {
                    for _ in 0..=rng.below(2) {
                        mutate_value(&mut rng, &mut value);
                    }
                    serde_json::to_vec(&value).unwrap()
                }
                Err(_) => seed,
            },
        };
        let Ok(_) = Incoming::parse(bytes.clone()) else {
            continue;
        };
        parsed += 1;
        for (conn, version) in [(&mut legacy_conn, V), (&mut modern_conn, MODERN)] {
            let message = Incoming::parse(bytes.clone()).unwrap();
            let _ = conn.handle(message, capable_test_support::moment(), &mut out);
            // Whatever the client answered is a valid message.
            take(version, &mut out);
            conn.take_notices();
            // Keep requests in flight.
            // (A random -32601 may have marked a method broken: try several.)
            if conn.in_flight() < 4 {
                for method in [
                    Method::ListTools,
                    Method::ListPrompts,
                    Method::ListResources,
                ] {
                    if conn
                        .request(
                            method,
                            &json!({}),
                            Timing::new().with_progress(true),
                            "w",
                            t0(),
                            &mut out,
                        )
                        .is_ok()
                    {
                        break;
                    }
                }
                take(version, &mut out);
            }
        }
    }
    assert!(
        parsed > 500,
        "the mutations should produce many parseable messages, got {parsed}"
    );
}

#[test]
fn robustness_every_seed_message_parses_and_is_handled() {
    let mut conn = legacy(everything());
    let mut out = Outbox::new();
    for seed in SEEDS {
        match Incoming::parse(seed.as_bytes().to_vec()) {
            Ok(message) => {
                let _ = conn.handle(message, capable_test_support::moment(), &mut out);
                take(V, &mut out);
            }
            Err(e) => assert!(seed.starts_with('['), "{seed}: {e}"),
        }
    }
}
