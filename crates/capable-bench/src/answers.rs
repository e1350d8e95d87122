//! What both bench servers answer, whatever carries it (stdio lines or HTTP bodies):
//! a legacy (2025-11-25 and earlier) server declaring `resources` and `tools`, with one
//! resource (`bench://1k`, whose `resources/read` result is exactly 1 KiB of JSON) and
//! one tool (`echo`). Every other method, `server/discover` included, is unknown.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

/// The URI of the 1 KiB resource.
pub const URI: &str = "bench://1k";
const LEGACY: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// An incoming message, read only as far as answering needs.
#[derive(Deserialize)]
pub struct Message<'a> {
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub method: Option<&'a str>,
    #[serde(borrow, default)]
    pub params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct InitParams<'a> {
    #[serde(borrow, rename = "protocolVersion")]
    protocol_version: Option<&'a str>,
}

/// The answers, serialised once where they never change.
pub struct Answers {
    server_name: &'static str,
    read_result: String,
    resources: String,
}

impl Answers {
    pub fn new(server_name: &'static str) -> Answers {
        let text = "x".repeat(1024 - URI.len() - 60);
        let mut read_result = format!(
            r#"{{"contents":[{{"uri":"{URI}","mimeType":"text/plain","text":"{text}"}}]}}"#
        );
        while read_result.len() < 1024 {
            read_result.insert(read_result.len() - 4, 'x');
        }
        Answers {
            server_name,
            read_result,
            resources: format!(
                r#"{{"resources":[{{"uri":"{URI}","name":"1k","mimeType":"text/plain"}}]}}"#
            ),
        }
    }

    /// The `result` of a request, or `None` for a method this server does not know
    /// (answered with [`method_not_found`]).
    pub fn result(&self, method: &str, params: Option<&RawValue>) -> Option<Cow<'_, str>> {
        Some(match method {
            "resources/read" => Cow::Borrowed(self.read_result.as_str()),
            "tools/call" => {
                Cow::Borrowed(r#"{"content":[{"type":"text","text":"ok"}],"isError":false}"#)
            }
            "initialize" => {
                let asked = params
                    .and_then(|p| serde_json::from_str::<InitParams<'_>>(p.get()).ok())
                    .and_then(|p| p.protocol_version);
                let version = match asked {
                    Some(v) if LEGACY.contains(&v) => v,
                    _ => LEGACY[LEGACY.len() - 1],
                };
                Cow::Owned(format!(
                    r#"{{"protocolVersion":"{version}","capabilities":{{"resources":{{}},"tools":{{}}}},"serverInfo":{{"name":"{}","version":"{}"}}}}"#,
                    self.server_name,
                    env!("CARGO_PKG_VERSION")
                ))
            }
            "resources/list" => Cow::Borrowed(self.resources.as_str()),
            "tools/list" => Cow::Borrowed(
                r#"{"tools":[{"name":"echo","description":"Answers ok.","inputSchema":{"type":"object"}}]}"#,
            ),
            "ping" => Cow::Borrowed("{}"),
            _ => return None,
        })
    }
}

/// The -32601 error response to request `id` (its JSON text) for `method`.
pub fn method_not_found(id: &str, method: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"Method not found: {method}"}}}}"#
    )
}
