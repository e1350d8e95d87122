//! `capable bridge --listen` replicas sharing a seal key, and tasks: the task ids the
//! gateway hands out are sealed (the server, the server's own id, the caller, an
//! expiry), so a task started through one replica is polled, fetched, listed and
//! cancelled through any other — after the first was killed with SIGKILL too — under
//! the one id the host was given; a tampered id, another key's, an unsealed one or
//! another caller's is an unknown task (`-32602`) and never reaches the server; a
//! task's question names the task as the host knows it, and the host's answer reaches
//! the server naming it by the server's id.
//!
//! The server behind is one HTTP server every replica reaches (a listening bridge in
//! front of the fixture's `tasks` or `modern-tasks` profile, `--trace`, so that what
//! reaches the fixture shows), as in a deployment; the caller test has its own
//! identity provider (oidc-provider, skipped without `.peers` as the other real-peer
//! tests).

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "identity_support/mod.rs"]
mod identity_support;
#[path = "listen_support/mod.rs"]
mod listen_support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use bridge_support::Bridge;
use listen_support::{
    answer_of, ask, ask_with, initialize_at, key_file, listening, listening_env, modern_post, post,
};
use serde_json::{json, Value};

const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A 2025-11-25 `tools/call` of `tool` as a task: the task id the host is given.
fn start(port: u16, session: &str, id: i64, tool: &str) -> String {
    let params = json!({"name": tool, "arguments": {}, "task": {"ttl": 60000}});
    let created = ask(port, session, id, "tools/call", params);
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working", "{created}");
    task["taskId"].as_str().unwrap().to_owned()
}

/// The error code of `answer` (none: `0`).
fn code(answer: &Value) -> i64 {
    answer["error"]["code"].as_i64().unwrap_or(0)
}

/// `id` with one character changed (in the middle: every bit of it counts).
fn tampered(id: &str) -> String {
    let mut bytes = id.as_bytes().to_vec();
    let at = bytes.len() / 2;
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    String::from_utf8(bytes).unwrap()
}

/// The fixture's task ids are `task-N`: none shows in what a host is handed.
fn assert_sealed(id: &str) {
    assert!(id.len() > 60 && !id.contains("task-"), "a sealed id: {id}");
}

/// The server behind every replica: a listening bridge (`--trace`) in front of the
/// fixture's `profile`, and its URL.
fn http_server(profile: &str) -> (Bridge, String) {
    let (upstream, port) = listening(&["--trace"], profile);
    (upstream, format!("http://127.0.0.1:{port}/mcp"))
}

/// A replica with the key in `key` in front of `url`.
fn replica(key: &std::path::Path, url: &str) -> (Bridge, u16) {
    listening_env(
        &["--seal-key-file", key.to_str().unwrap(), "--url", url],
        &[],
    )
}

#[test]
fn a_task_started_through_one_replica_goes_on_through_any_other_even_once_it_was_killed() {
    let (_server, url) = http_server("tasks");
    let key = key_file("killed.key", 0x55);
    let (a_bridge, a) = replica(&key, &url);
    let (_b, b) = replica(&key, &url);
    let (_c, c) = replica(&key, &url);
    let session = initialize_at(a, "2025-11-25");

    let id = start(a, &session, 2, "report");
    assert_sealed(&id);
    // B never saw the task: it reaches it from the id alone, and names it as the host
    // knows it.
    let got = ask(b, &session, 3, "tasks/get", json!({"taskId": id}));
    assert_eq!(got["result"]["taskId"], id.as_str(), "{got}");
    assert_eq!(got["result"]["status"], "working");

    // A dies mid-task; nothing of the task was A's alone.
    a_bridge.sigkill();
    let result = ask(c, &session, 4, "tasks/result", json!({"taskId": id}));
    assert_eq!(
        result["result"]["content"][0]["text"], "report ready",
        "{result}"
    );
    assert_eq!(
        result["result"]["_meta"][RELATED_TASK]["taskId"],
        id.as_str()
    );
    // Listed by yet another replica under the same id: one task, one id, everywhere.
    let list = ask(b, &session, 5, "tasks/list", json!({}));
    let listed: Vec<&Value> = list["result"]["tasks"].as_array().unwrap().iter().collect();
    assert!(
        listed
            .iter()
            .any(|t| t["taskId"] == id.as_str() && t["status"] == "completed"),
        "{list}"
    );
    assert!(
        listed.iter().all(|t| !t.to_string().contains("task-")),
        "{list}"
    );

    // Started through B, cancelled through C.
    let stall = start(b, &session, 6, "stall");
    assert_sealed(&stall);
    assert_ne!(stall, id);
    let cancelled = ask(c, &session, 7, "tasks/cancel", json!({"taskId": stall}));
    assert_eq!(cancelled["result"]["taskId"], stall.as_str(), "{cancelled}");
    assert_eq!(cancelled["result"]["status"], "cancelled");
    let after = ask(b, &session, 8, "tasks/get", json!({"taskId": stall}));
    assert_eq!(after["result"]["status"], "cancelled", "{after}");
}

#[test]
fn a_tampered_foreign_or_unsealed_task_id_is_an_unknown_task_and_never_reaches_the_server() {
    let (server, url) = http_server("tasks");
    let key = key_file("refused.key", 0x66);
    let other_key = key_file("other.key", 0x77);
    let (a_bridge, a) = replica(&key, &url);
    let (_d, d) = replica(&other_key, &url);
    let session = initialize_at(a, "2025-11-25");
    let elsewhere = initialize_at(d, "2025-11-25");
    let id = start(a, &session, 2, "report");
    // Another deployment's task (another key), at the same server.
    let foreign = start(d, &elsewhere, 2, "report");
    assert_sealed(&foreign);

    let before = server.sent_upstream_count("tasks/get");
    let refused = [
        ("tasks/get", tampered(&id)),
        ("tasks/get", foreign.clone()),
        // The server's own id, which a host never had: not a task id of the gateway's.
        ("tasks/get", "task-1".to_owned()),
        ("tasks/result", tampered(&id)),
        ("tasks/cancel", foreign.clone()),
    ];
    for (n, (method, bad)) in refused.iter().enumerate() {
        let answer = ask(a, &session, 10 + n as i64, method, json!({"taskId": bad}));
        assert_eq!(code(&answer), -32602, "{method} {bad}: {answer}");
        assert!(!answer.to_string().contains(bad.as_str()), "{answer}");
    }
    // The id that opens goes; those before it never went (the server sees requests in
    // the order they were sent).
    let got = ask(a, &session, 20, "tasks/get", json!({"taskId": id}));
    assert_eq!(got["result"]["taskId"], id.as_str(), "{got}");
    assert_eq!(
        server.sent_upstream_count_until("tasks/get", before + 1),
        before + 1,
        "only the task id that opened reached the server"
    );
    assert_eq!(server.sent_upstream_count("tasks/cancel"), 0);
    let said = a_bridge.audit_until(|l| l["event"] == "sealed" && l["task"] == "refused");
    assert_eq!(said["method"], "tasks/get", "{said}");
    assert!(!a_bridge.stderr_text().contains(&foreign));
}

#[test]
fn a_task_id_opens_only_for_the_caller_it_was_sealed_for() {
    if !identity_support::wanted() {
        return;
    }
    let key = key_file("caller.key", 0x88);
    let key = key.to_str().unwrap();
    let fixture = common::fixture("tasks");
    let mut behind = vec!["--seal-key-file", key, "--"];
    behind.extend(fixture.iter().map(String::as_str));
    let gateway = identity_support::gateway_to(&behind);
    let (alice, bob) = (gateway.token("alice-app"), gateway.token("bob-app"));
    let (alice_session, bob_session) = (gateway.session(&alice), gateway.session(&bob));
    let as_alice = format!("Bearer {alice}");
    let as_bob = format!("Bearer {bob}");
    let (port, alice_h, bob_h) = (
        gateway.port,
        [("Authorization", as_alice.as_str())],
        [("Authorization", as_bob.as_str())],
    );
    let params = json!({"name": "report", "arguments": {}, "task": {"ttl": 60000}});
    let created = ask_with(port, &alice_h, &alice_session, 2, "tools/call", params);
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_sealed(&id);

    // Bob, in his own session, with Alice's task id: an unknown task, nothing sent.
    let stolen = ask_with(
        port,
        &bob_h,
        &bob_session,
        3,
        "tasks/get",
        json!({"taskId": id}),
    );
    assert_eq!(code(&stolen), -32602, "{stolen}");
    let cancel = ask_with(
        port,
        &bob_h,
        &bob_session,
        4,
        "tasks/cancel",
        json!({"taskId": id}),
    );
    assert_eq!(code(&cancel), -32602, "{cancel}");
    // Alice with hers: her task.
    let mine = ask_with(
        port,
        &alice_h,
        &alice_session,
        5,
        "tasks/get",
        json!({"taskId": id}),
    );
    assert_eq!(mine["result"]["taskId"], id.as_str(), "{mine}");
    let bridge = &gateway.bridge;
    assert_eq!(bridge.sent_upstream_count_until("tasks/get", 1), 1);
    assert_eq!(bridge.sent_upstream_count("tasks/cancel"), 0);
}

#[test]
fn a_tasks_question_names_its_sealed_id_and_the_hosts_answer_reaches_the_server_with_its_own() {
    let (_server, url) = http_server("tasks");
    let key = key_file("question.key", 0xaa);
    let (_a, a) = replica(&key, &url);
    let (_b, b) = replica(&key, &url);
    // A legacy host that answers elicitations, its session begun on A.
    let hello = post(
        a,
        &[],
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "h", "version": "1"}}}),
    );
    let session = hello
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    let s = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(a, &s, initialized).status, 202);
    let id = start(a, &session, 2, "approve");
    let asking = ask(b, &session, 20, "tasks/get", json!({"taskId": id}));
    assert_eq!(asking["result"]["status"], "input_required", "{asking}");

    // The host's standalone stream, on B: a question no request of the host's may carry
    // (a `tasks/result` asks for no input) comes there.
    let heard = standalone(b, &session);
    // Its outcome fetched through B: the task asks meanwhile.
    let fetched = {
        let (session, id) = (session.clone(), id.clone());
        std::thread::spawn(move || ask(b, &session, 3, "tasks/result", json!({"taskId": id})))
    };
    let ask = heard
        .recv_timeout(Duration::from_secs(30))
        .expect("the task's question");
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    // The question names the task as the host knows it.
    assert_eq!(
        ask["params"]["_meta"][RELATED_TASK]["taskId"],
        id.as_str(),
        "{ask}"
    );
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept",
        "content": {"approve": true}, "_meta": {RELATED_TASK: {"taskId": id}}}});
    assert_eq!(post(b, &s, answer).status, 202);
    let result = fetched.join().unwrap();
    assert_eq!(
        result["result"]["_meta"][RELATED_TASK]["taskId"],
        id.as_str()
    );
    // The fixture says what it was told: the answer named the task by the server's id.
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(r#""taskId":"task-"#), "{text}");
    assert!(!text.contains(&id), "{text}");
}

/// A 2026-07-28 request of `method` (the host declares the tasks extension).
fn modern(port: u16, id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = Bridge::meta(json!({"extensions": {TASKS: {}}}));
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    answer_of(&modern_post(port, message))
}

#[test]
fn a_2026_hosts_task_goes_on_through_another_replica_under_its_sealed_id() {
    let (server, url) = http_server("modern-tasks");
    let key = key_file("modern.key", 0x99);
    let (_a, a) = replica(&key, &url);
    let (_b, b) = replica(&key, &url);

    let call = modern(
        a,
        1,
        "tools/call",
        json!({"name": "report", "arguments": {}}),
    );
    assert_eq!(call["result"]["resultType"], "task", "{call}");
    let id = call["result"]["taskId"].as_str().unwrap().to_owned();
    assert_sealed(&id);
    let first = modern(b, 2, "tasks/get", json!({"taskId": id}));
    assert_eq!(first["result"]["taskId"], id.as_str(), "{first}");
    assert_eq!(first["result"]["status"], "working");
    let done = modern(a, 3, "tasks/get", json!({"taskId": id}));
    assert_eq!(done["result"]["taskId"], id.as_str(), "{done}");
    assert_eq!(done["result"]["status"], "completed");
    assert_eq!(
        done["result"]["result"]["content"][0]["text"],
        "report ready"
    );

    // The server's trace may come after the answers: both looks counted first.
    let before = server.sent_upstream_count_until("tasks/get", 2);
    let message = json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get",
        "params": {"taskId": tampered(&id), "_meta": Bridge::meta(json!({"extensions": {TASKS: {}}}))}});
    // 2026-07-28 over HTTP: the error's status says what it is (`400`), its body why.
    let refused = modern_post(b, message);
    assert_eq!(refused.status, 400, "{}", refused.body);
    let refused = refused.json();
    assert_eq!(code(&refused), -32602, "{refused}");
    let again = modern(b, 5, "tasks/get", json!({"taskId": id}));
    assert_eq!(again["result"]["status"], "completed", "{again}");
    assert_eq!(
        server.sent_upstream_count_until("tasks/get", before + 1),
        before + 1,
        "the tampered id never reached the server"
    );
}

/// The events of a legacy session's standalone stream opened on `port`, as they come.
fn standalone(port: u16, session: &str) -> std::sync::mpsc::Receiver<Value> {
    let mut listen = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
    );
    listen.write_all(get.as_bytes()).unwrap();
    // Open once its head came back.
    let mut stream = BufReader::new(listen);
    let mut status = String::new();
    stream.read_line(&mut status).unwrap();
    assert!(status.contains(" 200 "), "{status}");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stream.lines() {
            let Ok(line) = line else { return };
            if let Some(data) = line.strip_prefix("data:") {
                if let Ok(message) = serde_json::from_str::<Value>(data.trim()) {
                    if tx.send(message).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

#[test]
fn a_tasks_status_notifications_name_its_sealed_id() {
    // A 2025-11-25 host's task at a 2026-07-28 server: the server behind the replicas
    // carries it across, telling of each change while `tasks/result` waits.
    let (_server, url) = http_server("modern-tasks");
    let key = key_file("status.key", 0xbb);
    let (_a, a) = replica(&key, &url);
    let (_b, b) = replica(&key, &url);
    let session = initialize_at(a, "2025-11-25");
    let heard = standalone(b, &session);
    let id = start(a, &session, 2, "report");
    assert_sealed(&id);
    let result = ask(b, &session, 3, "tasks/result", json!({"taskId": id}));
    assert_eq!(result["result"]["content"][0]["text"], "report ready");
    let status = heard
        .recv_timeout(Duration::from_secs(30))
        .expect("a status notification");
    assert_eq!(status["method"], "notifications/tasks/status", "{status}");
    assert_eq!(status["params"]["taskId"], id.as_str(), "{status}");
}
