//! What the fuzz targets share: a made-up clock, handshakes that reach a ready
//! connection in any version, and a reader of what the client wrote.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::time::{Duration, Instant, SystemTime};

use capable_core::model::Implementation;
use capable_core::{
    ClientConfig, Connection, Era, Incoming, Negotiating, Now, Outbox, ProtocolChoice,
    ProtocolVersion, Step,
};
use serde_json::Value;

/// The moment every target acts at: deadlines are computed from it, never read.
pub fn t0() -> Instant {
    static T0: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *T0.get_or_init(Instant::now)
}

/// `t0()` on both clocks.
pub fn now() -> Now {
    Now::new(
        t0(),
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
    )
}

/// A client configuration for `protocol`.
pub fn config(protocol: ProtocolChoice) -> ClientConfig {
    ClientConfig {
        client_info: Implementation::new("capable-fuzz", "0.0.0"),
        protocol,
        ..Default::default()
    }
}

/// Every line the client wrote, each checked to be one JSON-RPC 2.0 object.
pub fn written(out: &[u8]) -> Vec<Value> {
    out.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let v: Value = serde_json::from_slice(l).unwrap_or_else(|e| {
                panic!("the client wrote a line that is not JSON ({e}): {l:?}")
            });
            assert_eq!(v["jsonrpc"], "2.0", "the client wrote {v}");
            v
        })
        .collect()
}

/// The answer a server of `era` gives to the first message: an `initialize` result
/// choosing `version` (legacy) or a `server/discover` result supporting it (modern),
/// declaring `capabilities` (JSON text).
pub fn first_answer(era: Era, id: &Value, version: &str, capabilities: &str) -> Vec<u8> {
    let id = id.to_string();
    match era {
        Era::Legacy => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"{v}","capabilities":{capabilities},"serverInfo":{{"name":"fuzz","version":"1"}}}}}}"#,
            v = version
        ),
        Era::Modern => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"resultType":"complete","supportedVersions":["{v}"],"capabilities":{capabilities},"_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"fuzz","version":"1"}}}}}}}}"#,
            v = version
        ),
    }
    .into_bytes()
}

/// A connection ready in exactly `version`, the server declaring `capabilities`; `None`
/// when the handshake does not complete with that answer.
pub fn connection<W>(version: ProtocolVersion, capabilities: &str) -> Option<Connection<W>> {
    let mut out = Outbox::new();
    let n = Negotiating::start(config(ProtocolChoice::Exact(version)), t0(), &mut out);
    let first = written(&out);
    assert_eq!(first.len(), 1, "one first message");
    out.clear();
    let answer = first_answer(
        version.era(),
        &first[0]["id"],
        version.as_str(),
        capabilities,
    );
    let msg = Incoming::parse(answer).ok()?;
    match n.handle(msg, t0(), &mut out) {
        Step::Ready(established) => {
            assert_eq!(established.negotiated.version, version);
            Some(Connection::new(*established).0)
        }
        _ => None,
    }
}
