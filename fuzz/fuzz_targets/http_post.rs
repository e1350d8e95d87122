//! A POST the bridge's listener judges before serving it (`server::judge_post`): any
//! body and any `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` values. It never
//! panics; a refusal is `400` or `404`; a 2026-07-28 request let through carries a
//! `_meta` version that is the header's, and an `Mcp-Method` that reads as its method.
//! And a header value made header-safe reads back as what was given (`decoded`).

#![no_main]

use arbitrary::Arbitrary;
use capable_core::internal::http::param_headers::header_safe;
use capable_core::internal::jsonrpc::Incoming;
use capable_core::internal::server::{decoded_header, judge_post, PostHeaders, Verdict};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[derive(Arbitrary, Debug)]
struct Post {
    version: Option<String>,
    method: Option<String>,
    name: Option<String>,
    body: Vec<u8>,
    value: String,
}

fuzz_target!(|post: Post| {
    let safe = header_safe(&post.value);
    assert_eq!(decoded_header(&safe).as_deref(), Some(post.value.as_str()));
    let Ok(message) = Incoming::parse(post.body.clone()) else {
        return;
    };
    let headers = PostHeaders {
        protocol_version: post.version.as_deref(),
        method: post.method.as_deref(),
        name: post.name.as_deref(),
    };
    match judge_post(&headers, &message) {
        Verdict::Refused { status, .. } => assert!(status == 400 || status == 404),
        Verdict::Modern => {
            let Incoming::Request { method, params, .. } = &message else {
                return;
            };
            if method == "initialize" {
                return;
            }
            let header = headers.protocol_version.map(str::trim);
            assert!(header.is_some(), "a request without the version header let through");
            let meta = params.decode::<Value>().ok();
            let version = meta
                .as_ref()
                .and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1protocolVersion"))
                .and_then(Value::as_str);
            if let Some(version) = version {
                assert_eq!(Some(version), header);
            }
            let told = headers.method.map(str::trim).and_then(decoded_header);
            assert_eq!(told.as_deref(), Some(method.as_str()));
        }
        Verdict::Legacy => {
            assert!(matches!(&message, Incoming::Request { method, .. } if method == "initialize"));
        }
        _ => {}
    }
});
