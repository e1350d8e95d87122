//! `capable bridge --listen` as replicas sharing a seal key: a legacy session begun on
//! one replica is continued on another (its state sealed into its `Mcp-Session-Id`);
//! a tampered id, or one sealed under a key no longer in the ring, is `404`.
//!
//! The kill test: three replicas on loopback behind Debian's HAProxy (round robin, no
//! affinity, started by the test with a generated config), one HTTP server behind them
//! whose resource changes every 200 ms; the TypeScript SDK's client in one legacy session,
//! subscribed to that resource, the Python SDK's client in another, and capable as a
//! 2026-07-28 host, calling in a loop while the replica holding the TypeScript host's
//! standalone stream is SIGKILLed and brought back, a long call with progress running
//! meanwhile on a replica that is not killed. Skipped, saying so, without `haproxy`
//! (unless `CAPABLE_REQUIRE_HAPROXY` is set, as in CI); without `.peers`, as the other
//! real-peer tests. About 15 s.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "identity_support/mod.rs"]
mod identity_support;
#[path = "listen_support/mod.rs"]
mod listen_support;

use listen_support::{initialize_at, key_file, listening, listening_env, post};
use serde_json::json;

/// `tools/call echo` in session `session` on `port`: the status, and the text it echoed.
fn echo(port: u16, session: &str, message: &str) -> (u16, String) {
    let answer = post(
        port,
        &[("Mcp-Session-Id", session)],
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"message": message}}}),
    );
    if answer.status != 200 {
        return (answer.status, answer.body);
    }
    let result = match answer.header("content-type") {
        Some(t) if t.starts_with("text/event-stream") => answer.events().pop().unwrap(),
        _ => answer.json(),
    };
    let text = result["result"]["content"][0]["text"].as_str();
    (200, text.unwrap_or_default().to_owned())
}

#[test]
fn a_sealed_session_goes_on_at_any_replica_holding_its_key_and_no_other() {
    let old = key_file("old.key", 0x11);
    let new = key_file("new.key", 0x22);
    let (old, new) = (old.to_str().unwrap(), new.to_str().unwrap());
    // A seals with the old key; B, mid-rotation, with the new one and still opens the
    // old; C retired the old key.
    let (_a, a) = listening(&["--seal-key-file", old], "elicit");
    let (_b, b) = listening(
        &["--seal-key-file", new, "--seal-key-previous", old],
        "elicit",
    );
    let (c_bridge, c) = listening(&["--seal-key-file", new], "elicit");

    let session = initialize_at(a, "2025-06-18");
    assert!(session.len() > 100, "a sealed id: {session}");
    assert!(!session.contains("2025-06-18") && !session.contains("\"h\""));
    assert_eq!(echo(a, &session, "on a"), (200, "on a".to_owned()));
    // B never saw the session: it continues it from the seal, at the version the host
    // negotiated with A.
    assert_eq!(echo(b, &session, "on b"), (200, "on b".to_owned()));
    let ping = post(
        b,
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    );
    assert_eq!(ping.status, 200, "{}", ping.body);

    // A host whose stream broke with its replica comes back elsewhere with its
    // Last-Event-ID: a fresh stream there (nothing to replay), not a refusal.
    let later = initialize_at(a, "2025-11-25");
    let back = |port: u16| {
        let headers = [
            ("Accept", "text/event-stream"),
            ("Mcp-Session-Id", later.as_str()),
            ("Last-Event-ID", "999999-7"),
        ];
        listen_support::http(port, "GET", &headers, "", |body| !body.is_empty())
    };
    let resumed = back(b);
    assert_eq!(resumed.status, 200, "{}", resumed.body);
    assert_eq!(resumed.header("content-type"), Some("text/event-stream"));
    assert_eq!(back(c).status, 404);

    // Under a retired key, changed by one character, or not sealed at all: 404, and the
    // host initializes again.
    assert_eq!(echo(c, &session, "on c").0, 404);
    let mut tampered = session.clone().into_bytes();
    let at = tampered.len() / 2;
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    assert_eq!(echo(b, &tampered, "tampered").0, 404);
    assert_eq!(echo(b, "0123456789abcdef0123456789abcdef", "random").0, 404);
    let refused = c_bridge.audit_until(|l| l["event"] == "sealed");
    assert_eq!(refused["restored"], false, "{refused}");
    assert!(
        !refused.to_string().contains(&session),
        "the id is not repeated: {refused}"
    );
}

#[test]
fn a_sealed_session_goes_on_elsewhere_only_for_the_caller_it_was_sealed_for() {
    if !identity_support::wanted() {
        return;
    }
    let key = key_file("identity.key", 0x44);
    let key = key.to_str().unwrap();
    let fixture = common::fixture("read-only");
    let mut behind = vec!["--seal-key-file", key, "--"];
    behind.extend(fixture.iter().map(String::as_str));
    // Replica A with the identity provider; B beside it, for the same public URL.
    let a = identity_support::gateway_to(&behind);
    let b_port = free_port();
    let b_listen = format!("127.0.0.1:{b_port}");
    let mut flags = vec!["--listen", &b_listen, "--auth-issuer", &a.issuer];
    flags.extend(["--public-url", &a.url, "--auth-scope", "mcp:tools"]);
    flags.extend(&behind);
    let b = bridge_support::Bridge::start(&flags);
    b.audit_until(|l| l["event"] == "listening");

    let (alice, bob) = (a.token("alice-app"), a.token("bob-app"));
    let opened = a.initialize(&alice);
    assert_eq!(opened.status, 200, "{}", opened.body);
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    // A proxy in front sends the public URL's authority as `Host`.
    let public = a.url.trim_start_matches("http://").trim_end_matches("/mcp");
    let at_b = |token: &str, id: i64| {
        let bearer = format!("Bearer {token}");
        let headers = [
            ("Host", public),
            ("Authorization", bearer.as_str()),
            ("Mcp-Session-Id", session.as_str()),
        ];
        post(
            b_port,
            &headers,
            json!({"jsonrpc": "2.0", "id": id, "method": "resources/list"}),
        )
    };
    // Bob with Alice's session, at a replica that never saw it: as if there were none.
    let stolen = at_b(&bob, 2);
    assert_eq!(stolen.status, 404, "{}", stolen.body);
    let refused = b.audit_until(|l| l["event"] == "sealed");
    assert_eq!(refused["why"], "sealed for another caller", "{refused}");
    // Alice with hers: continued there; Bob still refused once B holds it.
    let mine = at_b(&alice, 3);
    assert_eq!(mine.status, 200, "{}", mine.body);
    assert!(mine.body.contains("docs://"), "{}", mine.body);
    assert_eq!(at_b(&bob, 4).status, 404);
    let said = b.stderr_text();
    assert!(!said.contains(&alice) && !said.contains(&bob));
}

#[test]
fn a_replica_continuing_a_session_re_attaches_to_the_http_servers_session_behind() {
    // The server behind, over Streamable HTTP: a listener of its own, whose audit says
    // how many sessions it opened (one server process each).
    let (upstream, up) = listening(&[], "elicit");
    let url = format!("http://127.0.0.1:{up}/mcp");
    let key = key_file("reattach.key", 0x44);
    let key = key.to_str().unwrap();
    let flags = ["--seal-key-file", key, "--url", &url];
    let (_a, a) = listening_env(&flags, &[]);
    let (b_bridge, b) = listening_env(&flags, &[]);
    let (c_bridge, c) = listening_env(&flags, &[]);
    // The legacy sessions the server behind holds now.
    let held = || {
        let metrics = listen_support::http_at(up, "GET", "/metrics", &[], "").body;
        let line = metrics
            .lines()
            .find(|l| l.starts_with(r#"capable_bridge_sessions{kind="legacy"}"#));
        line.and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
    };

    let session = initialize_at(a, "2025-06-18");
    assert_eq!(echo(a, &session, "on a"), (200, "on a".to_owned()));
    assert_eq!(held(), Some(1));
    // B never saw the session: it goes on in the server's session A opened — no second
    // session behind (before, B opened its own and the server's per-session state was
    // lost on the way).
    assert_eq!(echo(b, &session, "on b"), (200, "on b".to_owned()));
    assert_eq!(held(), Some(1), "{:?}", upstream.audit());
    let restored = b_bridge.audit_until(|l| l["event"] == "sealed");
    assert_eq!(restored["restored"], true);
    assert_eq!(restored["upstream"], "re-attached");

    // The host ends the session at B: the server's session ends with it. C, continuing
    // the sealed id, finds it gone (404) and opens a new one with the host's
    // declaration, says so, and the call goes through.
    let deleted = listen_support::http_at(b, "DELETE", "/mcp", &[("Mcp-Session-Id", &session)], "");
    assert_eq!(deleted.status, 200);
    assert_eq!(echo(c, &session, "on c"), (200, "on c".to_owned()));
    assert_eq!(held(), Some(1), "the ended one gone, the new one held");
    let renewed = c_bridge.audit_until(|l| {
        l["event"] == "notice" && l["notice"].as_str().is_some_and(|n| n.contains("expired"))
    });
    assert_eq!(renewed["side"], "server");
}

/// A free loopback port (the replica binds it next).
use capable_test_support::free_port;

/// One replica as a team runs it: the config names the one HTTP server behind and the
/// store the replicas share (`gateway.store`, Redis), and a gateway-wide rate limit
/// counted there — `capable bridge --listen 127.0.0.1:PORT --seal-key-file KEY
/// --config FILE --server up`, listening.
fn replica_with_store(port: u16, key: &str, config: &str) -> bridge_support::Bridge {
    let addr = format!("127.0.0.1:{port}");
    let flags = [
        "--listen",
        &addr,
        "--seal-key-file",
        key,
        "--config",
        config,
        "--server",
        "up",
    ];
    let replica = bridge_support::Bridge::start(&flags);
    replica.audit_until(|l| l["event"] == "listening");
    replica
}

/// HAProxy on `port` in front of `replicas`, round robin, no affinity: the shape of
/// `deploy/haproxy.cfg`, on loopback (each replica's `Host` check wants its own port,
/// which the server's name carries).
fn haproxy(port: u16, replicas: &[u16]) -> Haproxy {
    let dir = std::env::temp_dir().join(format!("capable-replicas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let servers: String = replicas
        .iter()
        .map(|p| format!("  server 127.0.0.1:{p} 127.0.0.1:{p} check inter 100ms fall 1 rise 1\n"))
        .collect();
    let config = format!(
        "global\n  maxconn 256\n\
         defaults\n  mode http\n  timeout connect 1s\n  timeout client 30s\n  timeout server 30s\n  \
         retries 3\n  option redispatch 1\n\
         frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
         backend replicas\n  balance roundrobin\n  http-send-name-header Host\n{servers}"
    );
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, config).unwrap();
    let child = std::process::Command::new("haproxy")
        .args(["-db", "-f"])
        .arg(&path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start haproxy");
    let child = Haproxy(child);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < until, "haproxy did not listen");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}

/// A legacy session on `port` whose host answers the server's questions (elicitation).
fn initialize_asking(port: u16) -> String {
    let answer = post(
        port,
        &[],
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "asking", "version": "1"}}}),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    let session = answer.header("mcp-session-id").unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post(port, &[("Mcp-Session-Id", &session)], initialized).status,
        202
    );
    session
}

/// A `tools/call confirm` in flight at the replica on `port`, in session `session`: the
/// connection, once the server's question (`elicitation/create`) came back on it — the
/// call waits for an answer that is never given.
fn in_flight(port: u16, session: &str) -> std::io::BufReader<std::net::TcpStream> {
    use std::io::{BufRead, Write};
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                      "params": {"name": "confirm", "arguments": {}}})
    .to_string();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut reader = std::io::BufReader::new(s);
    let mut line = String::new();
    while !line.contains("elicitation/create") {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the stream ended early"
        );
    }
    reader
}

/// HAProxy, stopped (by its handle) when the test ends, however it ends.
struct Haproxy(std::process::Child);

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One 2026-07-28 host's call through `url`: `capable --protocol modern tools call echo`.
fn modern_call(url: &str, i: usize) -> Result<String, String> {
    let args = format!(r#"{{"message": "modern {i}"}}"#);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_capable"))
        .args(["--protocol", "modern", "--timeout", "10s", "--url", url])
        .args(["tools", "call", "echo", "--json", "--args", &args])
        .env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join("capable-replicas-cache"),
        )
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    match out.status.success() {
        true => Ok(text),
        false => Err(format!("{text}{}", String::from_utf8_lossy(&out.stderr))),
    }
}

/// The replica that opened the server's standalone stream for host `host` (its `GET`
/// is there), waiting up to 10 s for exactly one to have.
fn holding_stream(replicas: &[bridge_support::Bridge], host: &str) -> usize {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let holding: Vec<usize> = (0..replicas.len())
            .filter(|i| {
                let audit = replicas[*i].audit();
                let opened = |l: &&serde_json::Value| {
                    l["event"] == "stream" && l["host"] == host && l["standalone"] == "opened"
                };
                audit.iter().filter(opened).count() > 0
            })
            .collect();
        if let [one] = holding[..] {
            return one;
        }
        assert!(std::time::Instant::now() < until, "{holding:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The JSON lines a host prints, read on a thread of their own: each sent on as it
/// comes.
fn lines_of(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<serde_json::Value> {
    use std::io::BufRead;
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            let Ok(line) = serde_json::from_str(&line) else {
                continue;
            };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

#[test]
fn a_replica_killed_under_load_loses_no_session_no_subscription_and_only_its_requests_in_flight() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    if std::process::Command::new("haproxy")
        .arg("-v")
        .output()
        .is_err()
    {
        // CI installs it (.ci/install-peers) and requires it.
        assert!(
            std::env::var_os("CAPABLE_REQUIRE_HAPROXY").is_none(),
            "CAPABLE_REQUIRE_HAPROXY is set but haproxy is not installed"
        );
        eprintln!("haproxy is not installed (Debian's `haproxy`, see .ci/install-peers): skipped");
        return;
    }
    if !common::peers_wanted(&[
        ".peers/npm/node_modules/@modelcontextprotocol/sdk",
        ".peers/venv/bin/python",
    ]) {
        return;
    }
    // One HTTP server behind every replica: the fixture, served over Streamable HTTP,
    // its resource changing every 200 ms once subscribed to.
    let mut fixture = common::fixture("elicit-subscribe");
    fixture.extend(["--update-interval".into(), "200ms".into()]);
    let fixture: Vec<&str> = fixture.iter().map(String::as_str).collect();
    let (_upstream, up) = listen_support::listening_to(&[], &fixture);
    let upstream = format!("http://127.0.0.1:{up}/mcp");
    let key = key_file("replicas.key", 0x33);
    let key = key.to_str().unwrap();
    // Redis beside the replicas: the store they share, counting a gateway-wide limit
    // high enough never to refuse (every request counted there, on every replica).
    let Some(redis) = capable_test_support::RedisServer::start() else {
        return;
    };
    let config = std::path::Path::new(key).with_file_name("replicas.json");
    let text = json!({"gateway": {"store": {"redis": redis.url(), "timeout": "500ms"},
                                   "rateLimit": {"requests": 100_000, "per": "1h"}},
                      "mcpServers": {"up": {"url": upstream}}});
    std::fs::write(&config, text.to_string()).unwrap();
    let config = config.to_str().unwrap();
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let mut replicas: Vec<_> = ports
        .iter()
        .map(|p| replica_with_store(*p, key, config))
        .collect();
    let front = free_port();
    let _lb = haproxy(front, &ports);
    let url = format!("http://127.0.0.1:{front}/mcp");

    // capable as a 2026-07-28 host, calling in a loop until the legacy hosts are done.
    let done = Arc::new(AtomicBool::new(false));
    let modern = {
        let (done, url) = (done.clone(), url.clone());
        std::thread::spawn(move || {
            let mut outcomes = Vec::new();
            while !done.load(Ordering::Acquire) && outcomes.len() < 200 {
                outcomes.push(modern_call(&url, outcomes.len()));
            }
            outcomes
        })
    };
    // The Python SDK's client in a legacy session of its own, calling once every third
    // call of the TypeScript host's, before the kill and after it — never in flight at
    // the kill itself (its transport does not survive a connection closed under a
    // request: see tests/peers/py_replicas_client.py).
    let mut py = std::process::Command::new(".peers/venv/bin/python")
        .args(["tests/peers/py_replicas_client.py", &url])
        .current_dir(common::workspace())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("python");
    let mut py_go = py.stdin.take().unwrap();
    let py_lines = lines_of(&mut py);
    let ready = py_lines.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(ready["ready"], true, "{ready}");
    let mut py_calls = Vec::new();
    // One call of the Python host's, waited for.
    let py_call = |go: &mut std::process::ChildStdin, calls: &mut Vec<serde_json::Value>| {
        use std::io::Write;
        writeln!(go, "go").unwrap();
        calls.push(py_lines.recv_timeout(Duration::from_secs(20)).unwrap());
    };
    // The TypeScript SDK's client in one legacy session, subscribed to the resource that
    // changes, then 120 calls 15 ms apart.
    let mut ts = std::process::Command::new("node")
        .args(["tests/peers/ts_replicas_client.mjs", &url, "120", "15"])
        .arg(capable_fixture::MANUAL)
        .current_dir(common::workspace())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("node");
    let ts_lines = lines_of(&mut ts);
    let mut calls = Vec::new();
    let mut killed = None;
    let mut held = None;
    let mut long = None;
    while let Ok(call) = ts_lines.recv_timeout(Duration::from_secs(30)) {
        let end = call["done"] == true;
        calls.push(call);
        if end {
            break;
        }
        if calls.len() % 3 == 0 {
            py_call(&mut py_go, &mut py_calls);
        }
        match calls.len() {
            // A long call with progress (3 s) in a session of its own on a replica that
            // is not killed: it runs across the kill.
            25 => {
                // The replica to kill: the one holding the TypeScript host's standalone
                // stream, on which its subscription's updates come.
                let k = holding_stream(&replicas, "ts-replicas-host");
                killed = Some((k, 0));
                let port = ports[(k + 1) % ports.len()];
                long = Some(std::thread::spawn(move || {
                    let session = initialize_at(port, "2025-11-25");
                    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                        "params": {"name": "echo", "_meta": {"progressToken": "long"},
                                   "arguments": {"message": "long", "progressSteps": 15}}});
                    post(port, &[("Mcp-Session-Id", &session)], call)
                }));
            }
            // Mid-run, that replica is killed (SIGKILL, by its handle)…
            30 => {
                let (k, _) = killed.unwrap();
                // A call of another legacy session held in flight there…
                let session = initialize_asking(ports[k]);
                held = Some((in_flight(ports[k], &session), session));
                drop(replicas.remove(k));
                let updates = calls.last().unwrap()["updates"].as_u64().unwrap();
                killed = Some((k, updates));
            }
            // …and brought back on its port.
            60 => {
                let (k, _) = killed.unwrap();
                replicas.insert(k, replica_with_store(ports[k], key, config));
            }
            _ => {}
        }
    }
    let _ = ts.wait();
    // The end of its input ends the Python host.
    drop(py_go);
    let py_end = py_lines.recv_timeout(Duration::from_secs(20)).unwrap();
    let _ = py.wait();
    done.store(true, Ordering::Release);
    let modern = modern.join().unwrap();
    let (k, updates_at_kill) = killed.expect("a replica was killed");

    // The call that was in flight on the killed replica ended with its connection, no
    // answer on it (its host sees the stream break, and may retry); its session goes on
    // at the survivors, behind the load balancer.
    let (mut held, session_held) = held.unwrap();
    let mut rest = String::new();
    let ended = std::io::Read::read_to_string(&mut held, &mut rest);
    assert!(
        ended.is_ok()
            || ended
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "the stream ended at once, not by a timeout: {ended:?}"
    );
    assert!(!rest.contains("\"result\""), "{rest}");
    assert_eq!(
        echo(front, &session_held, "after"),
        (200, "after".to_owned())
    );

    // The long call on a survivor finished, every progress step delivered, in order.
    let long = long.unwrap().join().unwrap();
    assert_eq!(long.status, 200, "{}", long.body);
    let events = long.events();
    let progress: Vec<_> = events
        .iter()
        .filter(|e| e["method"] == "notifications/progress")
        .map(|e| e["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, (1..=15).map(f64::from).collect::<Vec<_>>());
    assert_eq!(
        events.last().unwrap()["result"]["content"][0]["text"],
        "long"
    );

    let end = calls.pop().unwrap();
    assert_eq!(end["done"], true, "the host ran to its end: {calls:?}");
    assert_eq!(calls.len(), 120);
    // The session is never lost: one id from the first call to the last.
    let session = &calls[0]["session"];
    assert!(session.as_str().is_some_and(|s| s.len() > 100), "{session}");
    assert!(calls.iter().all(|c| &c["session"] == session) && &end["session"] == session);
    // Only what was in flight on the killed replica fails (one call at a time: at most
    // one), with an error the host can retry; every other call is answered.
    let failed: Vec<_> = calls.iter().filter(|c| c["ok"] != true).collect();
    assert!(failed.len() <= 1, "{failed:?}");
    // Never a 404: no replica ever failed to know the session.
    assert!(
        failed
            .iter()
            .all(|c| !c["error"].to_string().contains("404")),
        "{failed:?}"
    );
    for call in calls.iter().filter(|c| c["ok"] == true) {
        assert_eq!(call["text"], format!("call {}", call["i"]), "{call}");
    }
    // The subscription made before the kill was not dropped: its updates came before
    // it, on the killed replica's stream, and went on coming after it, on the stream the
    // host reopened at a survivor (which never saw the subscribe, and re-attached to
    // the server's session that holds it).
    let updates = end["updates"].as_u64().unwrap();
    assert!(
        updates_at_kill >= 1,
        "updates before the kill: {updates_at_kill}"
    );
    assert!(
        updates >= updates_at_kill + 3,
        "updates after the kill: {updates_at_kill} then {updates}"
    );
    // The Python SDK's host likewise: every call answered but at most the one in flight
    // on the killed replica, all in the one session it opened.
    assert_eq!(py_end["done"], true, "{py_calls:?}");
    assert_eq!(py_calls.len(), 40);
    let py_sessions = py_end["sessions"].as_array().unwrap();
    assert_eq!(py_sessions.len(), 1, "{py_sessions:?}");
    let py_failed: Vec<_> = py_calls.iter().filter(|c| c["ok"] != true).collect();
    assert!(py_failed.len() <= 1, "{py_failed:?}");
    for call in py_calls.iter().filter(|c| c["ok"] == true) {
        assert_eq!(call["text"], format!("py {}", call["i"]), "{call}");
    }
    // The 2026-07-28 host likewise: at most its one call in flight failed.
    let modern_failed: Vec<_> = modern.iter().filter_map(|c| c.as_ref().err()).collect();
    assert!(modern.len() >= 3, "{modern:?}");
    assert!(modern_failed.len() <= 1, "{modern_failed:?}");
    assert!(
        modern_failed.iter().all(|e| !e.contains("404")),
        "{modern_failed:?}"
    );
    assert!(modern.iter().flatten().all(|out| out.contains("modern")));
    // The replicas say what happened: those that did not begin the legacy session
    // continued it from its seal, the one brought back too — each re-attached to the HTTP
    // server's session the first replica opened.
    let restored = |r: &bridge_support::Bridge| {
        r.audit().iter().any(|l| {
            l["event"] == "sealed" && l["restored"] == true && l["upstream"] == "re-attached"
        })
    };
    assert!(restored(&replicas[k]), "the replica brought back");
    let survivors: Vec<_> = (0..replicas.len()).filter(|i| *i != k).collect();
    assert!(survivors.iter().any(|i| restored(&replicas[*i])));
    // The host's stream came back at another replica (a survivor, or the one brought
    // back if it was up by then), fresh (what the dead replica had not delivered is said
    // lost), and the server's stream was opened there for it.
    let said =
        |i: usize, want: &dyn Fn(&serde_json::Value) -> bool| replicas[i].audit().iter().any(want);
    let streams: Vec<Vec<serde_json::Value>> = (0..replicas.len())
        .map(|i| {
            let audit = replicas[i].audit().into_iter();
            audit
                .filter(|l| l["event"] == "stream" || l["event"] == "resumed")
                .collect()
        })
        .collect();
    assert!(
        (0..replicas.len()).any(|i| {
            said(i, &|l| l["event"] == "resumed" && l["fresh"] == true)
                && said(i, &|l| {
                    l["event"] == "stream"
                        && l["host"] == "ts-replicas-host"
                        && l["standalone"] == "opened"
                })
        }),
        "{streams:#?}"
    );
    // And its metrics count it.
    let metrics = listen_support::http_at(ports[k], "GET", "/metrics", &[], "").body;
    let sealed = metrics
        .lines()
        .find(|l| l.starts_with(r#"capable_bridge_audit_events_total{event="sealed"}"#));
    let count = sealed.and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok());
    assert!(count.is_some_and(|n| n >= 1), "{sealed:?}");
    // Every replica counted its callers in the one store beside them: the limit's keys
    // are there (hashed, naming no caller), and no store call ever failed.
    // (The reply's first line: `*N`, the number of keys.)
    let keys = redis.command("KEYS capable:rate:*").unwrap_or_default();
    let keys: usize = keys
        .strip_prefix('*')
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(keys >= 1, "no rate-limit key in the store");
    for (i, r) in replicas.iter().enumerate() {
        let audit = r.audit();
        assert!(
            !audit.iter().any(|l| l["event"] == "store_down"),
            "replica {i}: {audit:?}"
        );
    }
    eprintln!(
        "killed replica {k}; TypeScript calls failed: {}/{} {failed:?}, updates {updates_at_kill} \
         at the kill, {updates} at the end; Python calls failed: {}/{} {py_failed:?}; \
         2026-07-28 calls failed: {}/{} {modern_failed:?}",
        failed.len(),
        calls.len(),
        py_failed.len(),
        py_calls.len(),
        modern_failed.len(),
        modern.len()
    );
}
