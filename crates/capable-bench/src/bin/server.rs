//! A minimal, fast stdio MCP server for benchmarks.
//!
//! It behaves like a legacy (2025-11-25) server: `server/discover` is answered with
//! -32601, `initialize` normally. It declares `resources` and `tools`, lists one
//! resource (`bench://1k`) whose `resources/read` result carries 1 KiB of text, and one
//! tool (`echo`). Responses are buffered and flushed when no more input is waiting, so
//! pipelined requests are answered in batches.

use std::io::{BufRead, BufReader, BufWriter, Write};

use serde::Deserialize;
use serde_json::value::RawValue;

const URI: &str = "bench://1k";
const LEGACY: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a str>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct InitParams<'a> {
    #[serde(borrow, rename = "protocolVersion")]
    protocol_version: Option<&'a str>,
}

#[path = "../placement.rs"]
#[allow(dead_code)]
mod placement;

fn main() {
    placement::pin_from_env(placement::SERVER_CPU);
    let text = "x".repeat(1024 - URI.len() - 60);
    // The whole `result` of a read: exactly 1 KiB of JSON.
    let mut read_result =
        format!(r#"{{"contents":[{{"uri":"{URI}","mimeType":"text/plain","text":"{text}"}}]}}"#);
    while read_result.len() < 1024 {
        read_result.insert(read_result.len() - 4, 'x');
    }
    let stdin = std::io::stdin().lock();
    let mut input = BufReader::with_capacity(256 * 1024, stdin);
    let mut out = BufWriter::with_capacity(256 * 1024, std::io::stdout().lock());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if let Ok(req) = serde_json::from_slice::<Request<'_>>(&line) {
            if let (Some(id), Some(method)) = (req.id, req.method) {
                answer(&mut out, id.get(), method, req.params, &read_result);
            }
        }
        if input.buffer().is_empty() && out.flush().is_err() {
            break;
        }
    }
    let _ = out.flush();
}

fn answer(out: &mut impl Write, id: &str, method: &str, params: Option<&RawValue>, read: &str) {
    let result = |out: &mut dyn Write, body: &str| {
        let _ = write!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":{body}}}"#);
        let _ = out.write_all(b"\n");
    };
    match method {
        "resources/read" => result(out, read),
        "tools/call" => result(
            out,
            r#"{"content":[{"type":"text","text":"ok"}],"isError":false}"#,
        ),
        "initialize" => {
            let asked = params
                .and_then(|p| serde_json::from_str::<InitParams<'_>>(p.get()).ok())
                .and_then(|p| p.protocol_version);
            let version = match asked {
                Some(v) if LEGACY.contains(&v) => v,
                _ => LEGACY[LEGACY.len() - 1],
            };
            result(
                out,
                &format!(
                    r#"{{"protocolVersion":"{version}","capabilities":{{"resources":{{}},"tools":{{}}}},"serverInfo":{{"name":"capable-bench-server","version":"{}"}}}}"#,
                    env!("CARGO_PKG_VERSION")
                ),
            );
        }
        "resources/list" => result(
            out,
            &format!(r#"{{"resources":[{{"uri":"{URI}","name":"1k","mimeType":"text/plain"}}]}}"#),
        ),
        "tools/list" => result(
            out,
            r#"{"tools":[{"name":"echo","description":"Answers ok.","inputSchema":{"type":"object"}}]}"#,
        ),
        "ping" => result(out, "{}"),
        _ => {
            let _ = writeln!(
                out,
                r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"Method not found: {method}"}}}}"#
            );
        }
    }
}
