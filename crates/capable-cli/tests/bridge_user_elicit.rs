//! `"credentials": {"mode": "user"}` for hosts that take URL-mode elicitations: the
//! gateway (`capable bridge --listen --auth-issuer --config`) asks them to log in to
//! the server behind instead of refusing their call, with real parts — the callers'
//! identity provider is oidc-provider (`tests/peers/oidc_issuer.mjs`), the server
//! behind (`tests/peers/oidc_upstream.mjs`, a TypeScript SDK server whose tool `whoami`
//! answers whose token reached it) has an oidc-provider of its own, and the test is
//! the person's browser (`identity_support::browser`).
//!
//! - A 2025-11-25 host is asked by `elicitation/create` (mode `url`) on its call's
//!   stream, its call waiting for the login; it is told `notifications/elicitation/
//!   complete` with the same `elicitationId` once the login landed. A token the server
//!   refuses later (mid-call) asks it the same way again, once.
//! - A 2026-07-28 host gets an `input_required` result carrying the URL-mode
//!   elicitation and an opaque `requestState`; its retry with the answer is served as
//!   the caller once the login landed; declined, it is refused with why.
//!
//! Everything binds 127.0.0.1. Without `.peers` these tests fail, saying how to install
//! them; set `CAPABLE_SKIP_PEERS=1` to skip them instead.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "identity_support/mod.rs"]
mod identity_support;
#[path = "listen_support/mod.rs"]
mod listen_support;

use std::io::{BufRead, BufReader, Write};
use std::sync::mpsc;
use std::time::Duration;

use bridge_support::{many_entry, Bridge};
use common::oauth::free_port;
use common::TempFile;
use identity_support::browser::Browser;
use identity_support::upstream::Upstream;
use identity_support::{gateway_on, wanted, Gateway};
use listen_support::post;
use serde_json::{json, Value};

/// The messages of one SSE answer (a POST's, or a session's `GET`), read as they come.
struct Sse(mpsc::Receiver<Value>);

impl Sse {
    /// `METHOD /mcp` on `port` with `headers` and `body`, its stream read on a thread.
    fn open(port: u16, method: &str, headers: &[(&str, &str)], body: &str) -> Sse {
        let mut request = format!(
            "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stream);
            let mut line = String::new();
            while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
                let data = line.trim_end().strip_prefix("data:").map(str::trim);
                if let Some(message) = data.and_then(|d| serde_json::from_str::<Value>(d).ok()) {
                    if tx.send(message).is_err() {
                        return;
                    }
                }
                line.clear();
            }
        });
        Sse(rx)
    }

    /// The next message (within 30 s).
    fn next(&self) -> Value {
        self.0
            .recv_timeout(Duration::from_secs(30))
            .expect("no message on the stream")
    }

    /// The next message of `method`, those before it passed over (list changes).
    fn next_of(&self, method: &str) -> Value {
        loop {
            let message = self.next();
            if message["method"] == method {
                return message;
            }
        }
    }
}

/// The gateway on `port` in front of `upstream`, its credentials the caller's own login.
fn gateway(port: u16, idp_port: u16, upstream: &Upstream) -> (Gateway, TempFile) {
    let oauth = json!({"clientId": "gateway-upstream", "clientSecret": "upstream-secret"});
    let config = json!({"mcpServers": {"up": {"url": upstream.peer.mcp, "oauth": oauth,
        "credentials": {"mode": "user"}}, "local": many_entry("no-resources", &[])}});
    let file = TempFile::new("user-elicit.json", &config.to_string());
    let g = gateway_on(idp_port, port, &["--config", file.path()]);
    (g, file)
}

/// The upstream (tokens of an hour) and the gateway in front of it.
fn start() -> (Upstream, Gateway, TempFile) {
    let (idp_port, port) = (free_port(), free_port());
    let callback = format!("http://127.0.0.1:{port}/oauth/callback");
    let upstream = Upstream::with_login(idp_port, &callback, 3600);
    let (g, file) = gateway(port, idp_port, &upstream);
    (upstream, g, file)
}

/// Whose token reached the server, as `up__whoami` said.
fn subject(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no answer: {answer}"))
        .to_owned()
}

/// The login URL of a URL-mode elicitation, checked to be the gateway's.
fn login_url(params: &Value, port: u16) -> String {
    assert_eq!(params["mode"], "url", "{params}");
    let url = params["url"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with(&format!("http://127.0.0.1:{port}/oauth/start?login=")),
        "{url}"
    );
    url
}

#[test]
fn a_legacy_host_is_asked_by_url_elicitation_told_when_its_login_landed_and_asked_again_when_refused(
) {
    if !wanted() {
        return;
    }
    let (mut upstream, g, _file) = start();
    let port = g.port;
    let alice = g.token("alice-app");
    let bearer = format!("Bearer {alice}");
    let hello = post(
        port,
        &[("Authorization", &bearer)],
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"url": {}}},
            "clientInfo": {"name": "h", "version": "1"}}}),
    );
    assert_eq!(hello.status, 200, "{}", hello.body);
    let session = hello.header("mcp-session-id").unwrap().to_owned();
    let headers = [
        ("Authorization", bearer.as_str()),
        ("Mcp-Session-Id", session.as_str()),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(port, &headers, initialized).status, 202);
    // The session's own stream, where what belongs to no request comes.
    let standalone = Sse::open(port, "GET", &headers, "");

    // Her call: asked to log in, told when she did, and the call goes on as her.
    // Each call asks for progress (the server tells one step of a call that does).
    let call = |id: u64| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "up__whoami", "arguments": {}, "_meta": {"progressToken": id}}});
        Sse::open(port, "POST", &headers, &body.to_string())
    };
    let log_in_when_asked = |call: &Sse, id: u64| -> (String, Value) {
        let ask = call.next();
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        let url = login_url(&ask["params"], port);
        let elicitation = ask["params"]["elicitationId"].as_str().unwrap().to_owned();
        let accepted = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}});
        assert_eq!(post(port, &headers, accepted).status, 202);
        let (done, _) = Browser::default().log_in(&url, "alice");
        assert_eq!(done.status, 200, "{}", done.body);
        let complete = standalone.next_of("notifications/elicitation/complete");
        assert_eq!(
            complete,
            json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                "params": {"elicitationId": elicitation}})
        );
        // The call made once the login landed tells its progress, then its result.
        let progress = call.next();
        assert_eq!(progress["method"], "notifications/progress", "{progress}");
        assert_eq!(progress["params"]["progressToken"], id, "{progress}");
        let result = call.next();
        assert_eq!(result["id"], id, "{result}");
        (elicitation, result)
    };
    let first = call(2);
    let (asked, result) = log_in_when_asked(&first, 2);
    assert_eq!(subject(&result), "user:alice");

    // The server forgets every token: her next call is refused mid-way (no refresh
    // helps) and she is asked again by an elicitation — not an error — once.
    let before = upstream.seen().len();
    upstream.peer.restart();
    let second = call(3);
    let (again, result) = log_in_when_asked(&second, 3);
    assert_ne!(again, asked);
    assert_eq!(subject(&result), "user:alice");
    // The old token refused, then the new one: one login anew, no loop.
    let seen = upstream.seen();
    let mut tokens: Vec<&String> = seen[before..].iter().collect();
    tokens.dedup();
    assert_eq!(tokens.len(), 2, "{tokens:?}");
    assert_eq!(tokens[0], &seen[before - 1], "the old token first");
}

/// `up__whoami` as a 2026-07-28 request of `token`'s caller, whose host takes URL-mode
/// elicitations; `more` added to its params (a retry's `requestState` and answers).
fn whoami_modern(g: &Gateway, token: &str, id: u64, more: Value) -> Value {
    let bearer = format!("Bearer {token}");
    let meta = Bridge::meta(json!({"elicitation": {"url": {}}}));
    let mut params = json!({"name": "up__whoami", "arguments": {}, "_meta": meta});
    for (k, v) in more.as_object().unwrap() {
        params[k] = v.clone();
    }
    let headers = [
        ("Authorization", bearer.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "up__whoami"),
    ];
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let answer = post(g.port, &headers, message);
    // A refused retry is a 400 of its own; anything else is answered.
    assert!([200, 400].contains(&answer.status), "{}", answer.body);
    answer.json()
}

/// The one URL-mode elicitation of an `input_required` round: its key and params.
fn asked_in_round(answer: &Value) -> (String, Value) {
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let requests = result["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{answer}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{answer}");
    (key.clone(), request["params"].clone())
}

#[test]
fn a_2026_07_28_host_gets_an_input_round_and_its_retry_is_served_once_the_login_landed() {
    if !wanted() {
        return;
    }
    let (upstream, g, _file) = start();
    let (alice, bob) = (g.token("alice-app"), g.token("bob-app"));

    // Her call: a round asking her to log in, not an error; nothing reached the server.
    let round = whoami_modern(&g, &alice, 2, json!({}));
    let (key, params) = asked_in_round(&round);
    let url = login_url(&params, g.port);
    assert!(params.get("elicitationId").is_none(), "{params}");
    let state = round["result"]["requestState"].as_str().unwrap().to_owned();
    assert!(!state.is_empty() && !state.contains("alice") && !url.contains(&state));
    assert!(upstream.seen().is_empty(), "{:?}", upstream.seen());

    // She logs in; her retry with the answer is served as her.
    let (done, _) = Browser::default().log_in(&url, "alice");
    assert_eq!(done.status, 200, "{}", done.body);
    let accepted = json!({"requestState": state, "inputResponses": {&key: {"action": "accept"}}});
    assert_eq!(
        subject(&whoami_modern(&g, &alice, 3, accepted.clone())),
        "user:alice"
    );
    // The round is spent: the same retry again is refused, never passed on.
    let replayed = whoami_modern(&g, &alice, 4, accepted);
    assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
    // Her later calls go through with no round.
    assert_eq!(
        subject(&whoami_modern(&g, &alice, 5, json!({}))),
        "user:alice"
    );

    // Bob declines: his retry is refused, saying why; nothing of his reached the server.
    let seen = upstream.seen().len();
    let round = whoami_modern(&g, &bob, 6, json!({}));
    let (key, _) = asked_in_round(&round);
    let state = round["result"]["requestState"].clone();
    let declined = json!({"requestState": state, "inputResponses": {key: {"action": "decline"}}});
    let refused = whoami_modern(&g, &bob, 7, declined);
    assert_eq!(refused["error"]["code"], -32010, "{refused}");
    let why = refused["error"]["message"].as_str().unwrap();
    assert!(why.contains("log in") && why.contains("declined"), "{why}");
    assert_eq!(upstream.seen().len(), seen);
}
