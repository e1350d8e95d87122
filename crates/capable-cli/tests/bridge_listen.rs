//! `capable bridge --listen 127.0.0.1:0`: the bridge as a Streamable HTTP server for
//! its host. The gate (`Host`, `Origin`, the bearer token); legacy sessions
//! (`Mcp-Session-Id`, the standalone stream, resumption with `Last-Event-ID`, DELETE
//! ending the session and its server); the 2026-07-28 host without a session (its
//! errors' HTTP statuses, a closed stream cancelling its request); and real clients
//! over it: the TypeScript SDK's (v1, legacy; v2, 2026-07-28), the Python SDK's, and
//! capable's own.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bridge_support::{client, wait_gone, Bridge};
use serde_json::{json, Value};

/// `capable bridge --listen 127.0.0.1:0 [FLAGS] -- capable fixture --profile P`, and
/// the port it listens on.
fn listening(flags: &[&str], profile: &str) -> (Bridge, u16) {
    let server = common::fixture(profile);
    let mut args = vec!["--listen", "127.0.0.1:0"];
    args.extend_from_slice(flags);
    args.push("--");
    args.extend(server.iter().map(String::as_str));
    let b = Bridge::start(&args);
    let url = b.audit_until(|l| l["event"] == "listening")["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    (b, port)
}

/// One HTTP exchange, as it came back.
struct Http {
    status: u16,
    headers: Vec<(String, String)>,
    /// The body (for SSE, what arrived before the reader stopped).
    body: String,
}

impl Http {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The `data:` of each SSE event, as JSON.
    fn events(&self) -> Vec<Value> {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|d| !d.is_empty())
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }
}

/// `METHOD /mcp` with `headers` and `body`; reads the whole answer (a stream: until
/// `stop` says it has what it wants, then hangs up).
fn http(
    port: u16,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
    stop: impl Fn(&str) -> bool,
) -> Http {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (n, v) in headers {
        request.push_str(&format!("{n}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    s.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(s);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (n, v) = line.split_once(':').unwrap();
        headers.push((n.trim().to_owned(), v.trim().to_owned()));
    }
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let mut body = String::new();
    if chunked {
        // Read chunk by chunk, so that a stream can be left when it has what is wanted.
        loop {
            let mut size = String::new();
            if reader.read_line(&mut size).unwrap_or(0) == 0 {
                break;
            }
            let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if size == 0 {
                break;
            }
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).unwrap();
            body.push_str(&String::from_utf8_lossy(&chunk[..size]));
            if stop(&body) {
                break;
            }
        }
    } else {
        let _ = reader.read_to_string(&mut body);
    }
    Http {
        status,
        headers,
        body,
    }
}

fn post(port: u16, headers: &[(&str, &str)], message: Value) -> Http {
    let mut all = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    all.extend_from_slice(headers);
    http(port, "POST", &all, &message.to_string(), |_| false)
}

/// A 2026-07-28 POST of `message`, with the headers that revision requires of it
/// (`MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for what names a target), as
/// the body has them.
fn modern_post(port: u16, message: Value) -> Http {
    let version = message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        .as_str()
        .unwrap_or("2026-07-28")
        .to_owned();
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    let params = &message["params"];
    let name = ["name", "uri", "taskId"]
        .iter()
        .find_map(|m| params[*m].as_str())
        .map(str::to_owned);
    let mut headers = vec![
        ("MCP-Protocol-Version", version.as_str()),
        ("Mcp-Method", method.as_str()),
    ];
    if let Some(name) = &name {
        headers.push(("Mcp-Name", name.as_str()));
    }
    post(port, &headers, message.clone())
}

fn initialize(port: u16) -> String {
    initialize_at(port, "2025-11-25")
}

/// A legacy session at `version`, initialized.
fn initialize_at(port: u16, version: &str) -> String {
    let answer = post(
        port,
        &[],
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}}),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    let session = answer
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    assert_eq!(answer.json()["result"]["protocolVersion"], version);
    let s = [("Mcp-Session-Id", session.as_str())];
    assert_eq!(
        post(
            port,
            &s,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .status,
        202
    );
    session
}

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
fn a_2026_host_without_a_session_gets_its_statuses_and_cancels_by_closing() {
    // A legacy server behind: the bridge speaks 2026-07-28 to the host all the same.
    let (b, port) = listening(&["--trace"], "slow-progress");
    let meta = Bridge::meta(json!({}));
    let discover = modern_post(
        port,
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
    );
    assert_eq!(discover.status, 200);
    assert!(
        discover.header("mcp-session-id").is_none(),
        "no sessions in 2026-07-28"
    );
    assert_eq!(
        discover.json()["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    let bare = modern_post(
        port,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    assert_eq!(
        (bare.status, bare.json()["error"]["code"].clone()),
        (400, json!(-32602))
    );
    let unknown = modern_post(
        port,
        json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/list", "params": {"_meta": meta}}),
    );
    assert_eq!(
        (unknown.status, unknown.json()["error"]["code"].clone()),
        (404, json!(-32601))
    );
    let old = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let old = modern_post(port, old);
    assert_eq!(
        (old.status, old.json()["error"]["code"].clone()),
        (400, json!(-32022))
    );
    assert_eq!(
        http(port, "GET", &[("Accept", "text/event-stream")], "", |_| {
            false
        })
        .status,
        405
    );
    let _ = b;
}

#[test]
fn two_2026_hosts_may_use_the_same_id_at_once_and_never_cancel_each_other() {
    // Every 2026-07-28 host shares the listener's one server behind, and a request id
    // is each host's own: a second host's id 7 while the first's is in flight is no
    // clash, and each answer comes back under the id its host gave.
    let (b, port) = listening(&["--trace"], "slow-progress");
    let meta = Bridge::meta(json!({}));
    let call = |id: i64, message: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": message}, "_meta": meta}})
    };
    let first = {
        let call = call(7, "first");
        std::thread::spawn(move || modern_post(port, call))
    };
    b.until_sent_upstream("tools/call");
    let second = modern_post(port, call(7, "second"));
    assert_eq!(second.status, 200, "{:?}", second.json());
    assert_eq!(second.json()["id"], 7);
    assert_eq!(second.json()["result"]["content"][0]["text"], "second");
    let first = first.join().unwrap();
    assert_eq!(first.json()["id"], 7);
    assert_eq!(first.json()["result"]["content"][0]["text"], "first");

    // 2026-07-28 has no notifications/cancelled over HTTP (closing the stream cancels),
    // and a host without a session is no one in particular: a POSTed cancellation
    // naming id 1 is taken and dropped, and the call of whoever sent id 1 goes on.
    let third = {
        let call = call(1, "third");
        std::thread::spawn(move || modern_post(port, call))
    };
    b.sent_upstream_count_until("tools/call", 3);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "not mine to cancel", "_meta": meta}});
    assert_eq!(modern_post(port, cancel).status, 202);
    b.audit_until(|l| {
        l["notice"]
            .as_str()
            .is_some_and(|n| n.contains("notifications/cancelled"))
    });
    let third = third.join().unwrap();
    assert_eq!(third.json()["result"]["content"][0]["text"], "third");
    assert_eq!(b.sent_upstream_count("notifications/cancelled"), 0);
}

/// Two 2026-07-28 hosts that declare differently share nothing: each is served by a
/// server behind connected with its own declaration and name, so the server asks
/// only the host that can answer, and a host is never asked what it did not declare.
#[test]
fn two_2026_hosts_that_declare_differently_are_each_served_as_they_declared() {
    let (b, port) = listening(&["--trace"], "elicit");
    let meta = |caps: Value, name: &str| {
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps,
            "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"}})
    };
    let confirm = |id: i64, meta: &Value, more: Value| {
        let mut params = json!({"name": "confirm", "arguments": {}, "_meta": meta});
        for (k, v) in more.as_object().unwrap() {
            params[k] = v.clone();
        }
        modern_post(
            port,
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
        )
    };
    let eliciting = meta(json!({"elicitation": {}}), "eliciting-host");
    let sampling = meta(json!({"sampling": {}}), "sampling-host");
    // The host that declared elicitation first: its call gets a round with the question.
    let round = confirm(1, &eliciting, json!({})).json();
    let questions = round["result"]["inputRequests"]
        .as_object()
        .expect("a round");
    assert_eq!(questions.len(), 1, "{round}");
    let (key, question) = questions.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create", "{round}");
    // Then one that declared only sampling: the server behind it knows it cannot be
    // asked, and says so; it is asked nothing.
    let plain = confirm(1, &sampling, json!({})).json();
    assert!(plain["result"].get("inputRequests").is_none(), "{plain}");
    assert_eq!(plain["result"]["isError"], true, "{plain}");
    assert_eq!(
        plain["result"]["content"][0]["text"],
        "this client cannot be asked for input"
    );
    // The eliciting host's retry still completes its own call.
    let answers = json!({ key.clone(): {"action": "accept", "content": {"approve": true}} });
    let more = json!({"requestState": round["result"]["requestState"], "inputResponses": answers});
    let done = confirm(2, &eliciting, more).json();
    assert_eq!(
        done["result"]["content"][0]["text"],
        r#"confirmed: action=accept content={"approve":true}"#,
        "{done}"
    );
    // Behind: one connection per declaration, each with the host's own.
    b.sent_upstream_count_until("initialize", 2);
    let inits: Vec<Value> = b
        .sent_upstream()
        .into_iter()
        .filter(|m| m["method"] == "initialize")
        .collect();
    assert_eq!(inits.len(), 2, "{inits:?}");
    let by_name = |name: &str| {
        inits
            .iter()
            .find(|i| i["params"]["clientInfo"]["name"] == name)
            .unwrap_or_else(|| panic!("no initialize as {name}: {inits:?}"))
            .clone()
    };
    let caps = by_name("eliciting-host")["params"]["capabilities"].clone();
    assert!(
        caps.get("elicitation").is_some() && caps.get("sampling").is_none(),
        "{caps}"
    );
    let caps = by_name("sampling-host")["params"]["capabilities"].clone();
    assert!(
        caps.get("sampling").is_some() && caps.get("elicitation").is_none(),
        "{caps}"
    );
}

/// Two 2026-07-28 hosts that declare the same share a server behind, and have no
/// session to tell them apart: a legacy server's question that could be either's is
/// put to neither (the server is told it cannot ask), never to whoever waits.
#[test]
fn a_question_that_could_be_either_of_two_hosts_is_put_to_neither() {
    let (b, port) = listening(&["--trace"], "elicit");
    let meta = Bridge::meta(json!({"elicitation": {}}));
    let confirm = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "confirm", "arguments": {}, "_meta": meta}})
    };
    // One request in flight: the question is its own.
    let first = modern_post(port, confirm(1)).json();
    assert!(first["result"]["inputRequests"].is_object(), "{first}");
    // A second while the first holds its round: the server's next question could be
    // the first's as well as the second's.
    let second = modern_post(port, confirm(1)).json();
    assert!(second["result"].get("inputRequests").is_none(), "{second}");
    assert_eq!(second["result"]["isError"], true, "{second}");
    let said = second["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(said.contains("cannot tell apart"), "{second}");
    b.audit_until(|l| {
        l["notice"]
            .as_str()
            .is_some_and(|n| n.contains("cannot tell apart"))
    });
}

/// The 2026-07-28 transport's server validation: the headers a gateway routes by
/// must say what the body says, or the request is refused before anything is served.
#[test]
fn a_2026_post_whose_headers_disagree_with_its_body_is_refused_before_it_is_served() {
    let (b, port) = listening(&["--trace"], "slow-progress");
    let meta = Bridge::meta(json!({}));
    let list =
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": meta}});
    let call = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "m"}, "_meta": meta}});
    let refused = |headers: &[(&str, &str)], message: &Value| {
        let answer = post(port, headers, message.clone());
        let json = answer.json();
        assert_eq!(json["id"], message["id"], "{json}");
        (answer.status, json["error"]["code"].as_i64())
    };
    let v = ("MCP-Protocol-Version", "2026-07-28");
    let mismatch = (400, Some(-32020));
    assert_eq!(refused(&[("Mcp-Method", "tools/list")], &list), mismatch);
    assert_eq!(
        refused(
            &[
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Mcp-Method", "tools/list")
            ],
            &list
        ),
        mismatch
    );
    assert_eq!(refused(&[v], &list), mismatch, "no Mcp-Method");
    assert_eq!(
        refused(&[v, ("Mcp-Method", "prompts/list")], &list),
        mismatch
    );
    assert_eq!(refused(&[v, ("Mcp-Method", "TOOLS/LIST")], &list), mismatch);
    let m = ("Mcp-Method", "tools/call");
    assert_eq!(refused(&[v, m], &call), mismatch, "no Mcp-Name");
    assert_eq!(
        refused(&[v, m, ("Mcp-Name", "wrong_tool_name")], &call),
        mismatch
    );
    // Header names in any case; values with spaces around them.
    let ok = post(
        port,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("MCP-METHOD", "tools/call"),
            ("mcp-name", "  echo  "),
        ],
        call.clone(),
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.json()["result"]["content"][0]["text"], "m");
    // Nothing refused went behind: the one call that passed is the only one.
    assert_eq!(b.sent_upstream_count("tools/call"), 1);

    // initialize under the 2026-07-28 header (or with its envelope) is no method of
    // that revision: 404 / -32601, and no session is opened.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "h", "version": "1"}, "_meta": meta}});
    let answer = post(port, &[v, ("Mcp-Method", "initialize")], init.clone());
    assert_eq!(answer.status, 404, "{}", answer.body);
    assert_eq!(answer.json()["error"]["code"], -32601);
    assert!(answer.header("mcp-session-id").is_none());
    let enveloped = post(port, &[], init);
    assert_eq!(enveloped.status, 404, "{}", enveloped.body);
    assert!(enveloped.header("mcp-session-id").is_none());
    assert_eq!(
        b.sent_upstream_count("initialize"),
        1,
        "the server's own, once"
    );
}

#[test]
fn a_2025_03_26_session_may_batch_and_later_ones_may_not() {
    let (_b, port) = listening(&[], "read-only");
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
