//! `capable bridge --listen 127.0.0.1:0`: the bridge as a Streamable HTTP server for
//! its host. The gate (`Host`, `Origin`, the token, JSON bodies, CORS); legacy sessions
//! (`Mcp-Session-Id`, the standalone stream, priming events and resumption with
//! `Last-Event-ID`, DELETE ending the session, what it has in flight and its server;
//! sessions bounded and let go when idle); batches; and real clients over it: the
//! TypeScript SDK's (v1, legacy; v2, 2026-07-28), the Python SDK's, and capable's own.
//! The 2026-07-28 hosts, which have no session, are `bridge_listen_modern.rs`'s.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "listen_support/mod.rs"]
mod listen_support;

use std::time::Duration;

use bridge_support::{client, wait_gone, Bridge};
use listen_support::{http, initialize, initialize_at, listening, peak_kib, post};
use serde_json::json;

#[test]
fn the_gate_turns_away_other_hosts_other_origins_and_a_missing_token() {
    let (_b, port) = listening(
        &[
            "--listen-token",
            "s3cret",
            "--allow-origin",
            "http://localhost:6274",
        ],
        "read-only",
    );
    let meta = Bridge::meta(json!({}));
    let discover =
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}})
            .to_string();
    let answer = |headers: &[(&str, &str)]| {
        let mut all = vec![
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "server/discover"),
        ];
        all.extend_from_slice(headers);
        http(port, "POST", &all, &discover, |_| false)
    };
    let status = |headers: &[(&str, &str)]| answer(headers).status;
    let token = ("Authorization", "Bearer s3cret");
    let json = ("Content-Type", "application/json");
    assert_eq!(status(&[("Host", "evil.example:80"), token, json]), 421);
    assert_eq!(
        status(&[("Origin", "http://evil.example"), token, json]),
        403
    );
    // Another loopback origin is not the listener's, nor one allowed: a development
    // server on localhost may serve anyone's script.
    assert_eq!(
        status(&[("Origin", "http://localhost:3000"), token, json]),
        403
    );
    assert_eq!(status(&[json]), 401);
    assert_eq!(status(&[("Authorization", "Bearer wrong"), json]), 401);
    // A body a page may send without asking first is never run.
    for kind in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ] {
        assert_eq!(status(&[token, ("Content-Type", kind)]), 415, "{kind}");
    }
    // The scheme in any case (RFC 7235); an allowed origin gets its CORS headers.
    let allowed = answer(&[
        ("Origin", "http://localhost:6274"),
        ("Authorization", "bearer s3cret"),
        json,
    ]);
    assert_eq!(allowed.status, 200, "{}", allowed.body);
    assert_eq!(
        allowed.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
    // A preflight: granted to the allowed origin, to no other.
    let preflight = |origin: &str| {
        http(
            port,
            "OPTIONS",
            &[
                ("Origin", origin),
                ("Access-Control-Request-Method", "POST"),
                (
                    "Access-Control-Request-Headers",
                    "content-type, authorization",
                ),
            ],
            "",
            |_| false,
        )
    };
    let granted = preflight("http://localhost:6274");
    assert_eq!(granted.status, 204);
    assert_eq!(
        granted.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
    let refused = preflight("http://localhost:3000");
    assert_eq!(refused.status, 403);
    assert!(refused.header("access-control-allow-origin").is_none());
    // A non-loopback address needs --allow-remote, and then a token; an empty token
    // would refuse everyone, so it is refused at start.
    let refused = common::capable(
        &["bridge", "--listen", "0.0.0.0:0", "--", "true"],
        Duration::from_secs(20),
    );
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("--allow-remote"),
        "{}",
        refused.stderr
    );
    let empty = common::capable(
        &[
            "bridge",
            "--listen",
            "127.0.0.1:0",
            "--listen-token",
            " ",
            "--",
            "true",
        ],
        Duration::from_secs(20),
    );
    empty.expect_code(2);
    assert!(
        empty.stderr.contains("--listen-token is empty"),
        "{}",
        empty.stderr
    );
}

/// The listener's token comes from the environment (`CAPABLE_BRIDGE_TOKEN`, kept out
/// of `ps`): a server started with the whole environment (`--inherit-env`) still
/// never gets it.
#[test]
fn the_listeners_token_never_reaches_a_servers_environment() {
    let dir = std::env::temp_dir().join(format!("capable-bridge-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let seen = dir.join("env.txt");
    let script = format!(
        r#"env > {}.part && mv {0}.part {0}; exec "$0" "$@""#,
        seen.display()
    );
    let mut args = vec![
        "--listen".to_owned(),
        "127.0.0.1:0".into(),
        "--inherit-env".into(),
        "--".into(),
        "sh".into(),
        "-c".into(),
        script,
    ];
    args.extend(common::fixture("read-only"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let token = "tok-never-passed-7f3a";
    let b = Bridge::start_env(
        &args,
        &[
            ("CAPABLE_BRIDGE_TOKEN", token),
            ("CAPABLE_TEST_SEEN", "yes"),
        ],
    );
    let url = b.audit_until(|l| l["event"] == "listening")["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let port: u16 = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let bearer = format!("Bearer {token}");
    let session = post(
        port,
        &[("Authorization", &bearer)],
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "h", "version": "1"}}}),
    );
    assert_eq!(session.status, 200, "{}", session.body);
    let env = std::fs::read_to_string(&seen).expect("the server started and wrote its environment");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        env.contains("CAPABLE_TEST_SEEN=yes"),
        "the whole environment: {env}"
    );
    assert!(!env.contains(token), "the token reached the server");
}

#[test]
fn a_legacy_session_streams_resumes_and_ends_with_its_server() {
    let (b, port) = listening(&[], "slow-progress");
    let session = initialize(port);
    let s = ("Mcp-Session-Id", session.as_str());
    let pid = b.server_pid();
    // Unknown sessions, and GET or DELETE without one.
    assert_eq!(
        post(
            port,
            &[("Mcp-Session-Id", "nope")],
            json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        )
        .status,
        404
    );
    assert_eq!(http(port, "GET", &[], "", |_| false).status, 405);
    // A slow call with progress: the host hangs up after the first event, and comes back
    // with Last-Event-ID for the rest.
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "resumed"}, "_meta": {"progressToken": 3}}});
    let first = http(
        port,
        "POST",
        &[
            s,
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        &call.to_string(),
        |body| body.contains("progress\""),
    );
    assert_eq!(first.status, 200);
    assert_eq!(first.header("content-type"), Some("text/event-stream"));
    // 2025-11-25: the stream opens with a priming event — an id, how long to wait
    // before coming back, no data — so that even a host cut off before anything came
    // can resume it.
    let priming: Vec<&str> = first.body.split("\n\n").next().unwrap().lines().collect();
    assert!(priming[0].starts_with("id: "), "{}", first.body);
    assert!(priming.contains(&"retry: 1000"), "{}", first.body);
    assert!(priming.contains(&"data: "), "{}", first.body);
    let ids: Vec<&str> = first
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .collect();
    let last_id = ids[1].to_owned();
    assert_eq!(first.events()[0]["params"]["progress"], 1);
    let rest = http(
        port,
        "GET",
        &[
            s,
            ("Accept", "text/event-stream"),
            ("Last-Event-ID", &last_id),
        ],
        "",
        |body| body.contains("\"result\""),
    );
    assert_eq!(rest.status, 200);
    let events = rest.events();
    let answer = events.last().unwrap();
    assert_eq!(answer["id"], 3, "{events:?}");
    assert_eq!(answer["result"]["content"][0]["text"], "resumed");
    assert!(events[..events.len() - 1]
        .iter()
        .all(|e| e["method"] == "notifications/progress"));
    // DELETE ends the session, and the server behind it.
    assert_eq!(http(port, "DELETE", &[s], "", |_| false).status, 200);
    wait_gone(pid);
    assert_eq!(
        post(
            port,
            &[s],
            json!({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        )
        .status,
        404
    );
}

#[test]
fn a_2025_03_26_session_may_batch_and_later_ones_may_not() {
    let (_b, port) = listening(&["--max-batch", "4"], "read-only");
    let batch = |session: &str| {
        let body = json!([
            {"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
            {"jsonrpc": "2.0", "method": "notifications/progress"},
            {"jsonrpc": "2.0", "id": 3, "method": "ping"},
            {"no": "message"}
        ]);
        http(
            port,
            "POST",
            &[
                ("Mcp-Session-Id", session),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
            ],
            &body.to_string(),
            |_| false,
        )
    };
    // 2025-03-26 has batches: each message taken, the requests' answers in one array.
    let old = initialize_at(port, "2025-03-26");
    let answer = batch(&old);
    assert_eq!(answer.status, 200, "{}", answer.body);
    let answers = answer.json();
    let answers = answers.as_array().expect("an array");
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert_eq!(answers[0]["id"], 2);
    assert!(answers[0]["result"]["resources"].is_array(), "{answers:?}");
    assert_eq!(answers[1]["id"], 3);
    assert_eq!(answers[1]["result"], json!({}));
    assert_eq!(answers[2]["error"]["code"], -32600);
    // Past --max-batch (4 here) a batch is refused whole, and nothing of it is taken.
    let many: Vec<_> = (10..15)
        .map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
        .collect();
    let too_many = http(
        port,
        "POST",
        &[
            ("Mcp-Session-Id", &old),
            ("Content-Type", "application/json"),
        ],
        &json!(many).to_string(),
        |_| false,
    );
    assert_eq!(too_many.status, 400, "{}", too_many.body);
    assert!(too_many.body.contains("--max-batch"), "{}", too_many.body);
    // A batch of notifications alone is taken with nothing to say.
    let quiet = http(
        port,
        "POST",
        &[
            ("Mcp-Session-Id", &old),
            ("Content-Type", "application/json"),
        ],
        &json!([{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}]).to_string(),
        |_| false,
    );
    assert_eq!(quiet.status, 202, "{}", quiet.body);
    // Later revisions took batches out, and without a session there is none to batch in.
    let new = initialize(port);
    let refused = batch(&new);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(refused.json()["error"]["code"], -32600);
    let body = json!([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]).to_string();
    let sessionless = http(
        port,
        "POST",
        &[("Content-Type", "application/json")],
        &body,
        |_| false,
    );
    assert_eq!(sessionless.status, 400, "{}", sessionless.body);
}

#[test]
fn real_clients_over_the_listener_in_both_eras() {
    if !common::peers_wanted(&[
        common::servers::PYTHON,
        ".peers/client-v2/node_modules/@modelcontextprotocol/client/package.json",
    ]) {
        return;
    }
    let (b, port) = listening(&[], "elicit");
    let url = format!("http://127.0.0.1:{port}/mcp");
    // A legacy session: the server's question reaches the host on its standalone stream.
    let (seen, _) = client("node", &["tests/peers/ts_client.mjs", "v1", "--url", &url]);
    assert_eq!(
        seen["confirm"], r#"confirmed: action=accept content={"approve":true}"#,
        "{seen}"
    );
    // 2026-07-28 hosts, without a session: the question comes as an input_required round.
    let (seen, _) = client(
        "node",
        &["tests/peers/ts_client.mjs", "v2-modern", "--url", &url],
    );
    assert_eq!(seen["protocolVersion"], "2026-07-28", "{seen}");
    assert_eq!(
        seen["confirm"], r#"confirmed: action=accept content={"approve":true}"#,
        "{seen}"
    );
    let python = common::servers::path(common::servers::PYTHON);
    let (seen, _) = client(
        &python,
        &["tests/peers/py_client.py", "auto", "--url", &url],
    );
    assert_eq!(seen["echo"], "hi from python", "{seen}");
    // capable itself, as the client.
    let tools = common::capable(&["tools", "--url", &url], Duration::from_secs(30));
    tools.expect_code(0);
    assert!(tools.stdout.contains("confirm"), "{}", tools.stdout);
    let _ = b;
}

/// A DELETE ends the session now: its call in flight is cancelled (its answer never
/// comes), and its server is shut down.
#[test]
fn a_delete_ends_what_the_session_has_in_flight() {
    let (b, port) = listening(&["--trace"], "slow-progress");
    let session = initialize(port);
    let pid = b.server_pid();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "never"}}});
    let stream = {
        let session = session.clone();
        std::thread::spawn(move || {
            let s = ("Mcp-Session-Id", session.as_str());
            let headers = [
                s,
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
            ];
            http(port, "POST", &headers, &call.to_string(), |body| {
                body.contains("\"result\"")
            })
        })
    };
    b.until_sent_upstream("tools/call");
    let s = ("Mcp-Session-Id", session.as_str());
    assert_eq!(http(port, "DELETE", &[s], "", |_| false).status, 200);
    let cut = stream.join().unwrap();
    assert!(
        !cut.body.contains("\"result\""),
        "answered after the DELETE: {}",
        cut.body
    );
    wait_gone(pid);
}

/// Sessions are bounded and let go: past `--max-sessions`, the least recently used
/// idle one makes room (its host gets `404` and starts anew) — bare `initialize`s never
/// lock later hosts out; one idle past `--session-idle` is ended with its server.
#[test]
fn sessions_make_room_and_end_when_idle() {
    let (b, port) = listening(
        &["--max-sessions", "2", "--session-idle", "2s"],
        "read-only",
    );
    let ping = |session: &str| {
        post(
            port,
            &[("Mcp-Session-Id", session)],
            json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
        )
        .status
    };
    let first = initialize(port);
    let second = initialize(port);
    let third = initialize(port);
    assert_eq!(ping(&first), 404, "the least recently used made room");
    assert_eq!(ping(&second), 200);
    assert_eq!(ping(&third), 200);
    // Nothing in flight for --session-idle: ended with their servers, and said so. (A
    // server's `ready` line may be read after its session's answer.)
    let ready = || -> Vec<u32> {
        b.audit()
            .iter()
            .filter(|l| l["state"] == "ready")
            .filter_map(|l| l["pid"].as_u64())
            .map(|p| p as u32)
            .collect()
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while ready().len() < 3 && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pids = ready();
    assert_eq!(pids.len(), 3, "a server per session");
    for pid in pids {
        wait_gone(pid);
    }
    let expired: u64 = b
        .audit()
        .iter()
        .filter(|l| l["event"] == "expired")
        .filter_map(|l| l["sessions"].as_u64())
        .sum();
    assert_eq!(expired, 2, "{:?}", b.audit());
    assert_eq!(ping(&second), 404);
    assert_eq!(ping(&third), 404);
}

/// Requests that never finish hold nothing for long: headers sent a byte at a time are
/// cut off after `--header-timeout`, a body that never ends gets `408` after
/// `--body-timeout`; a real host is served meanwhile.
#[test]
fn slow_and_unfinished_requests_are_cut_off_while_a_host_is_served() {
    use std::io::{Read, Write};
    let (_b, port) = listening(
        &["--header-timeout", "1s", "--body-timeout", "1s"],
        "read-only",
    );
    let connect = || {
        let s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s
    };
    let mut slow = connect();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHo").unwrap();
    let mut endless = connect();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\n5\r\n{{\"a\":\r\n"
    );
    endless.write_all(head.as_bytes()).unwrap();
    // A host is served while both hang.
    let session = initialize(port);
    assert!(!session.is_empty());
    // Each is let go: the slow one's connection closed, the endless one answered 408.
    let mut seen = String::new();
    let ended = slow.read_to_string(&mut seen);
    assert!(ended.is_ok(), "the slow connection was held: {ended:?}");
    assert!(
        seen.is_empty() || seen.starts_with("HTTP/1.1 408"),
        "{seen}"
    );
    let mut answer = String::new();
    let _ = endless.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

/// Bodies read at once share one room (`--max-body-total`): a host that holds part of
/// a large body takes its room, the next body that does not fit is refused `503` at
/// once (never read), and the room is given back when the held request ends.
#[test]
fn bodies_read_at_once_share_one_room_given_back_when_they_end() {
    use std::io::Write;
    let (_b, port) = listening(&["--max-body-total", "1KiB"], "read-only");
    let mut holding = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 800\r\n\r\n{{\"jsonrpc\":"
    );
    holding.write_all(head.as_bytes()).unwrap();
    // 800 of 1024 bytes are taken: an initialize of more than the 224 left is refused
    // at once, not queued.
    let hello = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "a host whose initialize is longer than the 224 bytes of room left by the held body", "version": "1.0.0"}
    }});
    // (The held request takes its room as its headers are read, which may come after
    // this host's first try: it is served then, and tries again.)
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let refused = loop {
        let answer = post(port, &[], hello.clone());
        if answer.status != 200 {
            break answer;
        }
        assert!(std::time::Instant::now() < deadline, "never refused");
    };
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(refused.header("retry-after"), Some("1"));
    // The held request goes: its room comes back.
    drop(holding);
    loop {
        let answer = post(port, &[], hello.clone());
        if answer.status == 200 {
            assert!(answer.header("mcp-session-id").is_some());
            break;
        }
        assert_eq!(answer.status, 503, "{}", answer.body);
        assert!(
            std::time::Instant::now() < deadline,
            "the room never came back"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A batch of millions of tiny messages is refused having read no further than one
/// message past `--max-batch`: it costs the bridge a few MiB (its body), not the
/// hundreds an index of every message would.
#[test]
fn a_batch_of_millions_is_refused_before_it_costs_more_than_its_body() {
    let (b, port) = listening(&[], "read-only");
    let old = initialize_at(port, "2025-03-26");
    let before = peak_kib(b.pid());
    // 4,000,000 empty objects: a 12 MiB body.
    let mut body = String::with_capacity(12 << 20);
    body.push('[');
    for _ in 0..4_000_000 {
        body.push_str("{},");
    }
    body.push_str("{}]");
    let refused = http(
        port,
        "POST",
        &[
            ("Mcp-Session-Id", &old),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        &body,
        |_| false,
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("more than 256"), "{}", refused.body);
    let grew = peak_kib(b.pid()).saturating_sub(before);
    // The body is 12 MiB; every message indexed would be 4,000,000 × (16 + 32) bytes.
    assert!(grew < 64 * 1024, "the bridge's peak grew by {grew} KiB");
}
