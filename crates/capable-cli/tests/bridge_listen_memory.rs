//! `capable bridge --listen`'s memory under a server that talks faster than its host
//! reads: what waits for a stream's reader is bounded (`--stream-buffer`, then the
//! stream is closed and only what resumption keeps is held), so the bridge's peak stays
//! far below what the server sent.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "listen_support/mod.rs"]
mod listen_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use listen_support::{initialize_at, listening_to, peak_kib, post};
use serde_json::json;

/// A legacy server that declares logging and tools (no list changes); its one tool
/// writes `FLOOD` log messages of 16 KiB each, then a `tools/list_changed` it never
/// declared (which the bridge audits when it gets that far), then its result.
const SERVER: &str = r#"
import json, sys
FLOOD = 4096
data = "x" * 16384
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {
            "protocolVersion": m["params"]["protocolVersion"],
            "capabilities": {"logging": {}, "tools": {}},
            "serverInfo": {"name": "flood", "version": "1"}}})
    elif m["method"] == "tools/call":
        for i in range(FLOOD):
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": data}})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": []}})
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "result": {}})
"#;

/// Waits until `pid` has used no CPU for half a second (at most a minute).
fn settle(pid: u32) {
    let used = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        // utime and stime: fields 14 and 15 of stat, 12 and 13 after the name.
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut last = used();
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = used();
        if now == last || std::time::Instant::now() > deadline {
            return;
        }
        last = now;
    }
}

/// A host whose standalone stream is open and never read while its server writes
/// 64 MiB to it: the bridge's peak grows by less than 40 MiB (1 MiB of
/// `--stream-buffer`, the 16 MiB resumption keeps, what is in flight), and the stream
/// is closed, as the audit says. (Without the bound it grows by all 64 MiB.)
#[test]
fn a_stream_nobody_reads_costs_the_bridge_its_bound_not_what_the_server_sent() {
    let (b, port) = listening_to(&["--stream-buffer", "1MiB"], &["python3", "-c", SERVER]);
    let session = initialize_at(port, "2025-11-25");
    // The standalone stream, opened and then never read: the socket's buffers fill,
    // and what the server says piles up in the bridge until its bound.
    let mut unread = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        unread,
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\n\r\n"
    )
    .unwrap();
    let mut head = [0u8; 12];
    unread.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200", "the stream opened");
    let before = peak_kib(b.pid());
    let s = [("Mcp-Session-Id", session.as_str())];
    let call = post(
        port,
        &s,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "flood"}}),
    );
    assert_eq!(call.status, 200, "{}", call.body);
    // The relay has taken every message of the flood once it withholds the last.
    // The answer may overtake the flood's last messages: they are taken once the
    // bridge stops working.
    settle(b.pid());
    let grown = peak_kib(b.pid()).saturating_sub(before);
    for l in b.audit().iter().filter(|l| l["event"] != "sent") {
        eprintln!(
            "AUDIT {}",
            l.to_string().chars().take(300).collect::<String>()
        );
    }
    assert!(
        grown < 40 * 1024,
        "the bridge's peak grew by {grown} KiB for 64 MiB sent to a stream nobody reads"
    );
    // The stream was closed, and said so in the audit.
    b.audit_until(|l| l["event"] == "closed");
    drop(unread);
}
