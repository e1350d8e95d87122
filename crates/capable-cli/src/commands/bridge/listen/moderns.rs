//! The 2026-07-28 hosts of the listener, one task for each declaration.
//!
//! A 2026-07-28 host has no session: all it says of itself comes with each request, in
//! `_meta` — its version, `clientCapabilities` and `clientInfo`. The server behind is
//! connected declaring exactly that (a legacy server is asked only what the host can
//! answer, and sees the host's name), so hosts that declare differently are never
//! served by the same connection: a host that declared only `sampling` is never asked
//! to elicit because another host declared `elicitation`, nor sampled because another
//! did. Requests that declare the same share one task and one server behind.
//!
//! The tasks are a [`Pool`](super::pool::Pool): at most `--max-sessions` at once, the
//! least recently used idle one making room, idle ones ended after `--session-idle`.

use capable::core::jsonrpc::Incoming;
use serde::Deserialize;
use serde_json::value::RawValue;

/// What a 2026-07-28 request declares of its host, as one key: the version, the
/// capabilities and the client info exactly as sent (`""` for a request without the
/// envelope, which the engine refuses).
pub fn declaration(message: &Incoming) -> String {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Option<Meta<'a>>,
    }
    #[derive(Deserialize)]
    struct Meta<'a> {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
        version: Option<&'a RawValue>,
        #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow)]
        capabilities: Option<&'a RawValue>,
        #[serde(rename = "io.modelcontextprotocol/clientInfo", borrow)]
        client_info: Option<&'a RawValue>,
    }
    let (Incoming::Request { params, .. } | Incoming::Notification { params, .. }) = message else {
        return String::new();
    };
    let Some(meta) = params
        .raw_value()
        .ok()
        .and_then(|raw| serde_json::from_str::<Params<'_>>(raw.get()).ok())
        .and_then(|p| p.meta)
    else {
        return String::new();
    };
    let text = |v: Option<&RawValue>| v.map_or("", RawValue::get).to_owned();
    [
        text(meta.version),
        text(meta.capabilities),
        text(meta.client_info),
    ]
    .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(meta: serde_json::Value) -> Incoming {
        let line = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": meta}});
        Incoming::parse(line.to_string().into_bytes()).unwrap()
    }

    #[test]
    fn declarations_differ_by_version_capabilities_and_client_info() {
        let meta = |caps: serde_json::Value, name: &str| {
            serde_json::json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps,
                "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"}})
        };
        let sampling = declaration(&request(meta(serde_json::json!({"sampling": {}}), "a")));
        let elicit = declaration(&request(meta(serde_json::json!({"elicitation": {}}), "a")));
        let other_name = declaration(&request(meta(serde_json::json!({"sampling": {}}), "b")));
        assert_ne!(sampling, elicit);
        assert_ne!(sampling, other_name);
        let again = declaration(&request(meta(serde_json::json!({"sampling": {}}), "a")));
        assert_eq!(sampling, again);
        assert_eq!(declaration(&request(serde_json::json!(null))), "");
    }
}
