//! `capable bridge --listen` replicas sharing a seal key and a store (`gateway.store`,
//! a `redis-server` the test starts on 127.0.0.1 with nothing saved), and a legacy
//! host's `tasks/list`: each task the host starts through any replica — a task of the
//! server's, or a task of the bridge's own (a call the 2026-07-28 server behind ran at
//! once) — is listed for its session in the store, so the `tasks/list` of a replica
//! that started none of them lists them all, once the replica that started one was
//! killed with SIGKILL too, under the ids the host was given; a task the server no
//! longer knows leaves the list (and the store). Another session of the host never
//! sees them. With Redis gone, `whenDown: closed` refuses the list, saying why, and
//! `open` lists the tasks started through the replica — the audit says `store_down`
//! for `"use": "tasks"` either way.
//!
//! The server behind is one HTTP server every replica reaches (a listening bridge in
//! front of the fixture's `modern-tasks` profile: `stall` a task that works until
//! cancelled, `fleeting` one the server forgets as it is made, `check` a call answered
//! at once). Skipped without `redis-server`. A few seconds each.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "listen_support/mod.rs"]
mod listen_support;

use bridge_support::Bridge;
use capable_test_support::RedisServer;
use common::TempFile;
use listen_support::{ask, initialize_at, key_file, listening, listening_env, store_config};
use serde_json::{json, Value};

/// The server behind every replica, and its URL.
fn http_server() -> (Bridge, String) {
    let (upstream, port) = listening(&[], "modern-tasks");
    (upstream, format!("http://127.0.0.1:{port}/mcp"))
}

/// A replica with the key in `key`, the server at `url` (spoken to in its own era) and
/// `redis` as its store, `whenDown` as said.
fn replica(
    key: &std::path::Path,
    url: &str,
    redis: &RedisServer,
    when_down: &str,
    n: u32,
) -> (Bridge, u16, TempFile) {
    let stem = key.file_stem().unwrap().to_string_lossy();
    let name = format!("replica-list-{stem}-{n}.json");
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

/// A 2025-11-25 task call of `tool`: the task the host is given.
fn start(port: u16, session: &str, id: i64, tool: &str) -> Value {
    let params = json!({"name": tool, "arguments": {"ok": true}, "task": {"ttl": 60000}});
    let created = ask(port, session, id, "tools/call", params);
    let task = created["result"]["task"].clone();
    assert!(task["taskId"].is_string(), "{created}");
    task
}

/// The tasks a `tasks/list` on `port` lists.
fn list(port: u16, session: &str, id: i64) -> Vec<Value> {
    let listed = ask(port, session, id, "tasks/list", json!({}));
    listed["result"]["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {listed}"))
        .clone()
}

/// The ids of `tasks`.
fn ids(tasks: &[Value]) -> Vec<&str> {
    tasks
        .iter()
        .map(|t| t["taskId"].as_str().unwrap())
        .collect()
}

/// The sessions' task lists in the store, each with how many tasks it holds.
fn lists(redis: &RedisServer) -> Vec<(String, i64)> {
    let script = "local out = {} \
        for _, k in ipairs(redis.call('KEYS', 'capable:tasks:*')) do \
          table.insert(out, k .. '=' .. redis.call('ZCARD', k)) \
        end \
        return redis.status_reply(table.concat(out, ' '))";
    let reply = redis.command(&format!("EVAL \"{script}\" 0")).unwrap();
    reply
        .trim_start_matches('+')
        .split_whitespace()
        .map(|entry| {
            let (key, n) = entry.rsplit_once('=').unwrap();
            (key.to_owned(), n.parse().unwrap())
        })
        .collect()
}

#[test]
fn a_legacy_hosts_tasks_list_lists_what_it_started_through_any_replica_even_a_killed_one() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let (_server, url) = http_server();
    let key = key_file("list.key", 0x71);
    let (a_bridge, a, _fa) = replica(&key, &url, &redis, "open", 1);
    let (_b_bridge, b, _fb) = replica(&key, &url, &redis, "open", 2);
    let (_c_bridge, c, _fc) = replica(&key, &url, &redis, "open", 3);
    let session = initialize_at(a, "2025-11-25");

    // A task of the server's through A, one it forgets at once through A, and a task of
    // the bridge's own through B.
    let stall = start(a, &session, 2, "stall");
    assert_eq!(stall["status"], "working");
    let fleeting = start(a, &session, 3, "fleeting");
    let check = start(b, &session, 4, "check");
    assert_eq!(check["status"], "completed");
    // One list, under a hashed key: nothing of the session's id in it.
    let stored = lists(&redis);
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(stored[0].0.len(), "capable:tasks:".len() + 32, "{stored:?}");
    assert_eq!(stored[0].1, 3, "{stored:?}");

    a_bridge.sigkill();
    // C started none of them: it lists both that live, oldest first, under the ids the
    // host was given; the one the server forgot is not listed, and leaves the store.
    let listed = list(c, &session, 5);
    assert_eq!(
        ids(&listed),
        [
            stall["taskId"].as_str().unwrap(),
            check["taskId"].as_str().unwrap()
        ],
        "{listed:?}"
    );
    assert!(!ids(&listed).contains(&fleeting["taskId"].as_str().unwrap()));
    assert_eq!(listed[0]["status"], "working", "{listed:?}");
    assert_eq!(listed[1], check, "the bridge's own, as the host got it");
    assert_eq!(lists(&redis)[0].1, 2, "the forgotten task left the store");

    // The ids listed are the host's to use on any replica: the bridge's own answered
    // from the store, the server's asked about at the server.
    let got = ask(
        b,
        &session,
        6,
        "tasks/get",
        json!({"taskId": listed[1]["taskId"]}),
    );
    assert_eq!(got["result"], check, "{got}");
    let cancelled = ask(
        c,
        &session,
        7,
        "tasks/cancel",
        json!({"taskId": listed[0]["taskId"]}),
    );
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    // Cancelled, it stays listed until the server forgets it (as the spec lists tasks).
    let again = list(b, &session, 8);
    assert_eq!(ids(&again), ids(&listed), "{again:?}");
    assert_eq!(again[0]["status"], "cancelled", "{again:?}");

    // Another session of the same host sees none of them, on any replica.
    let other = initialize_at(c, "2025-11-25");
    assert!(list(c, &other, 2).is_empty());
    assert!(list(b, &other, 3).is_empty());
}

#[test]
fn with_redis_gone_a_tasks_list_is_refused_when_closed_and_the_replicas_own_when_open() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let (_server, url) = http_server();
    let key = key_file("down.key", 0x72);
    let (_maker, m, _fm) = replica(&key, &url, &redis, "open", 4);
    let (open, o, _fo) = replica(&key, &url, &redis, "open", 5);
    let (closed, c, _fc) = replica(&key, &url, &redis, "closed", 6);
    let session = initialize_at(m, "2025-11-25");
    let made_elsewhere = start(m, &session, 2, "stall");
    let made_here = start(o, &session, 3, "stall");
    assert_eq!(list(c, &session, 4).len(), 2, "both, while Redis is there");
    redis.stop();

    // closed: said, the store's address not in it.
    let said = ask(c, &session, 5, "tasks/list", json!({}));
    assert_eq!(said["error"]["code"], -32603, "{said}");
    let message = said["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("store") && !message.contains("127.0.0.1"),
        "{message}"
    );
    let down = closed.audit_until(|l| l["event"] == "store_down");
    assert_eq!(down["use"], "tasks", "{down}");

    // open: a task started meanwhile is the host's all the same, listed here alone.
    let during = start(o, &session, 6, "stall");
    assert_eq!(during["status"], "working");
    let down = open.audit_until(|l| {
        l["event"] == "store_down"
            && l["notice"]
                .as_str()
                .is_some_and(|n| n.contains("listed by the replica that started it alone"))
    });
    assert_eq!(down["use"], "tasks", "{down}");
    // Its list: the tasks started through this replica, as without a store.
    let listed = list(o, &session, 7);
    let here = [
        made_here["taskId"].as_str().unwrap(),
        during["taskId"].as_str().unwrap(),
    ];
    assert_eq!(ids(&listed), here);
    assert!(!ids(&listed).contains(&made_elsewhere["taskId"].as_str().unwrap()));
    let down = open.audit_until(|l| {
        l["event"] == "store_down"
            && l["notice"]
                .as_str()
                .is_some_and(|n| n.contains("tasks/list lists the tasks started through"))
    });
    assert_eq!(down["use"], "tasks", "{down}");
}
