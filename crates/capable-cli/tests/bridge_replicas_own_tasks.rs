//! `capable bridge --listen` replicas sharing a seal key and a store (`gateway.store`,
//! a `redis-server` the test starts on 127.0.0.1 with nothing saved), and the tasks the
//! bridge answers itself: a 2025-11-25 host's task-augmented `tools/call` that the
//! 2026-07-28 server behind answered at once is a task of the bridge's, already over.
//! Kept in the store (under a hashed key, for the task's ttl), it is polled and fetched
//! through a replica that never saw it, and through a third once the first was killed
//! with SIGKILL; nothing of it reaches the server. With Redis gone and `whenDown:
//! closed`, a replica that did not make the task says the store cannot be reached;
//! `open`: an unknown task, as without a store — and the audit says `store_down` for
//! `"use": "tasks"` either way. Another caller's host with the id gets an unknown task
//! (that test has its own identity provider, oidc-provider, skipped without `.peers`).
//!
//! The server behind is one HTTP server every replica reaches (a listening bridge in
//! front of the fixture's `modern-tasks` profile, whose `check` answers at once,
//! `--trace`, so that what reaches the fixture shows). Skipped without
//! `redis-server`. A few seconds each.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "identity_support/mod.rs"]
mod identity_support;
#[path = "listen_support/mod.rs"]
mod listen_support;

use bridge_support::Bridge;
use capable_test_support::RedisServer;
use common::TempFile;
use listen_support::{
    ask, ask_with, initialize_at, key_file, listening, listening_env, store_config,
};
use serde_json::{json, Value};

const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The server behind every replica: a listening bridge (`--trace`) in front of the
/// fixture's `modern-tasks`, and its URL.
fn http_server() -> (Bridge, String) {
    let (upstream, port) = listening(&["--trace"], "modern-tasks");
    (upstream, format!("http://127.0.0.1:{port}/mcp"))
}

/// A replica with the key in `key`, the server at `url` (`--server up`, spoken to in
/// its own era) and `redis` as its store, `whenDown` as said.
fn replica(
    key: &std::path::Path,
    url: &str,
    redis: &RedisServer,
    when_down: &str,
) -> (Bridge, u16, TempFile) {
    let stem = key.file_stem().unwrap().to_string_lossy();
    let name = format!("replica-own-{stem}-{when_down}.json");
    let servers = json!({"up": {"url": url}});
    let file = store_config(&name, redis, Some(when_down), servers);
    let flags = [
        "--config",
        file.path(),
        "--server",
        "up",
        "--protocol",
        "modern",
        "--seal-key-file",
        key.to_str().unwrap(),
    ];
    let (bridge, port) = listening_env(&flags, &[]);
    (bridge, port, file)
}

/// A 2025-11-25 task call of `check`, which the server runs at once: the task the host
/// is given.
fn start(port: u16, session: &str, id: i64) -> Value {
    let params = json!({"name": "check", "arguments": {"ok": true}, "task": {"ttl": 60000}});
    let created = ask(port, session, id, "tools/call", params);
    let task = created["result"]["task"].clone();
    assert_eq!(task["status"], "completed", "{created}");
    task
}

/// The keys of the bridge's own tasks in the store, each with its time left (ms).
fn kept(redis: &RedisServer) -> Vec<(String, i64)> {
    let script = "local out = {} \
        for _, k in ipairs(redis.call('KEYS', 'capable:task:*')) do \
          table.insert(out, k .. '=' .. redis.call('PTTL', k)) \
        end \
        return redis.status_reply(table.concat(out, ' '))";
    let reply = redis.command(&format!("EVAL \"{script}\" 0")).unwrap();
    let reply = reply.trim_start_matches('+');
    reply
        .split_whitespace()
        .map(|entry| {
            let (key, ttl) = entry.rsplit_once('=').unwrap();
            (key.to_owned(), ttl.parse().unwrap())
        })
        .collect()
}

#[test]
fn a_task_of_the_bridges_made_on_one_replica_is_answered_by_any_other_even_once_it_was_killed() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let (server, url) = http_server();
    let key = key_file("killed.key", 0x61);
    let (a_bridge, a, _fa) = replica(&key, &url, &redis, "open");
    let (_b_bridge, b, _fb) = replica(&key, &url, &redis, "open");
    let (_c_bridge, c, _fc) = replica(&key, &url, &redis, "open");
    let session = initialize_at(a, "2025-11-25");

    let task = start(a, &session, 2);
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert!(
        id.len() > 60 && !id.contains("bridge-"),
        "a sealed id: {id}"
    );
    // Kept under a hashed key, for the task's ttl (60 s asked): nothing of the id in it.
    let keys = kept(&redis);
    assert_eq!(keys.len(), 1, "{keys:?}");
    let (k, ttl) = &keys[0];
    assert!(k.len() == "capable:task:".len() + 32, "{k}");
    assert!((50_000..=60_000).contains(ttl), "{ttl}");

    // B never saw the task: it answers as A would, under the id the host was given.
    let got = ask(b, &session, 3, "tasks/get", json!({"taskId": id}));
    assert_eq!(got["result"], task, "{got}");
    let result = ask(b, &session, 4, "tasks/result", json!({"taskId": id}));
    assert_eq!(
        result["result"]["content"],
        json!([{"type": "text", "text": "checked"}]),
        "{result}"
    );
    assert_eq!(
        result["result"]["_meta"][RELATED_TASK]["taskId"],
        id.as_str()
    );
    // Over: it cannot be cancelled, as the spec says (the id as the host knows it).
    let cancel = ask(b, &session, 5, "tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancel["error"]["code"], -32602, "{cancel}");
    assert_eq!(cancel["error"]["data"]["taskId"], id.as_str());
    assert!(
        cancel["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("completed") && !m.contains("bridge-")),
        "{cancel}"
    );

    // A dies; the task was not A's alone.
    a_bridge.sigkill();
    let again = ask(c, &session, 6, "tasks/result", json!({"taskId": id}));
    assert_eq!(again["result"], result["result"], "{again}");

    // None of the questions about it reached the server: the one call only.
    let asked: Vec<String> = server
        .sent_upstream()
        .iter()
        .filter_map(|m| m["method"].as_str().map(str::to_owned))
        .filter(|m| m.starts_with("tasks/") || m == "tools/call")
        .collect();
    assert_eq!(asked, ["tools/call"], "{asked:?}");
}

#[test]
fn with_redis_gone_another_replicas_task_is_unknown_when_open_and_said_when_closed() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let (_server, url) = http_server();
    let key = key_file("down.key", 0x62);
    let (_maker, m, _fm) = replica(&key, &url, &redis, "open");
    let (open, o, _fo) = replica(&key, &url, &redis, "open");
    let (closed, c, _fc) = replica(&key, &url, &redis, "closed");
    let session = initialize_at(m, "2025-11-25");
    let task = start(m, &session, 2);
    let id = task["taskId"].as_str().unwrap().to_owned();
    redis.stop();

    // closed: said, the store's name and address not in it.
    let said = ask(c, &session, 3, "tasks/result", json!({"taskId": id}));
    assert_eq!(said["error"]["code"], -32603, "{said}");
    let message = said["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("store") && !message.contains("127.0.0.1"),
        "{message}"
    );
    // (A restore with the store down says so of the session's log level too.)
    closed.audit_until(|l| l["event"] == "store_down" && l["use"] == "tasks");

    // open: as without a store, an unknown task.
    let unknown = ask(o, &session, 4, "tasks/get", json!({"taskId": id}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    open.audit_until(|l| l["event"] == "store_down" && l["use"] == "tasks");

    // The replica that made it still answers it, from its memory.
    let here = ask(m, &session, 5, "tasks/get", json!({"taskId": id}));
    assert_eq!(here["result"], task, "{here}");
}

#[test]
fn a_task_of_the_bridges_opens_only_for_the_caller_it_was_made_for() {
    if !identity_support::wanted() {
        return;
    }
    let key = key_file("caller.key", 0x63);
    let fixture = common::fixture("modern-tasks");
    let key = key.to_str().unwrap();
    let mut behind = vec!["--seal-key-file", key, "--protocol", "modern", "--"];
    behind.extend(fixture.iter().map(String::as_str));
    let gateway = identity_support::gateway_to(&behind);
    let (alice, bob) = (gateway.token("alice-app"), gateway.token("bob-app"));
    let (alice_session, bob_session) = (gateway.session(&alice), gateway.session(&bob));
    let (as_alice, as_bob) = (format!("Bearer {alice}"), format!("Bearer {bob}"));
    let alice_h = [("Authorization", as_alice.as_str())];
    let bob_h = [("Authorization", as_bob.as_str())];
    let port = gateway.port;
    let params = json!({"name": "check", "arguments": {"ok": true}, "task": {"ttl": 60000}});
    let created = ask_with(port, &alice_h, &alice_session, 2, "tools/call", params);
    assert_eq!(
        created["result"]["task"]["status"], "completed",
        "{created}"
    );
    let id = created["result"]["task"]["taskId"].as_str().unwrap();

    // Bob, in his own session, with Alice's task id: an unknown task.
    for (n, method) in [(3, "tasks/get"), (4, "tasks/result"), (5, "tasks/cancel")] {
        let stolen = ask_with(port, &bob_h, &bob_session, n, method, json!({"taskId": id}));
        assert_eq!(stolen["error"]["code"], -32602, "{method}: {stolen}");
        assert!(stolen["error"].get("data").is_none(), "{stolen}");
    }
    // Alice with hers: her result.
    let mine = ask_with(
        port,
        &alice_h,
        &alice_session,
        6,
        "tasks/result",
        json!({"taskId": id}),
    );
    assert_eq!(
        mine["result"]["content"],
        json!([{"type": "text", "text": "checked"}]),
        "{mine}"
    );
}
