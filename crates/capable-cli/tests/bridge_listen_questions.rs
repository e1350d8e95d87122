//! `capable bridge --listen`, a legacy host that opened no standalone `GET` stream: a
//! question its server asks while the host's call runs comes on that call's own SSE
//! stream (the transport lets a server's request that relates to a client request go
//! there), so the host hears it, answers it, and gets its call's result on the same
//! stream — not a timeout with advice to raise `--timeout`.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "listen_support/mod.rs"]
mod listen_support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use listen_support::{listening, post};
use serde_json::{json, Value};

#[test]
fn a_question_about_a_call_comes_on_the_calls_own_stream() {
    let (_b, port) = listening(&[], "elicit");
    let hello = post(
        port,
        &[],
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "h", "version": "1"}}}),
    );
    assert_eq!(hello.status, 200, "{}", hello.body);
    let session = hello
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    let s = [("Mcp-Session-Id", session.as_str())];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(port, &s, initialized).status, 202);

    // The call, its SSE stream read as it comes; no GET stream is ever opened.
    let mut call = TcpStream::connect(("127.0.0.1", port)).unwrap();
    call.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "confirm"}})
            .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    call.write_all(request.as_bytes()).unwrap();
    let mut stream = BufReader::new(call);
    let mut next_message = || -> Value {
        loop {
            let mut line = String::new();
            assert!(stream.read_line(&mut line).unwrap() > 0, "the stream ended");
            if let Some(data) = line.trim_end().strip_prefix("data:") {
                if let Ok(message) = serde_json::from_str::<Value>(data.trim()) {
                    return message;
                }
            }
        }
    };
    let ask = next_message();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"approve": true}}});
    assert_eq!(post(port, &s, answer).status, 202);
    let result = next_message();
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(
        result["result"]["content"][0]["text"],
        r#"confirmed: action=accept content={"approve":true}"#
    );
}
