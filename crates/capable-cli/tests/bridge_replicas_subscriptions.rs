//! `capable bridge --listen` replicas sharing a seal key and a store (`gateway.store`,
//! a `redis-server` the test starts on 127.0.0.1 with nothing saved): a legacy host's
//! resource subscriptions follow its standalone stream from replica to replica where
//! the server behind cannot keep them for it — the servers of a `--config` (each
//! replica its own sessions to them) and a 2026-07-28 server (the bridge listens for
//! the host on a stream of its own).
//!
//! Each test: three replicas, the server(s) behind served over HTTP (a bridge in front
//! of the fixture, whose resource changes every 200 ms once subscribed to), and a host
//! speaking raw HTTP that subscribes on replica A while its `GET` is open on B — the
//! updates come on B; B is SIGKILLed (by its handle), the host's `GET` reopened on C
//! (with the last event id B gave) — the updates go on there, from a replica that never
//! saw the subscribe; the host unsubscribes on A — they stop at C. The store holds the
//! set under a hashed key, as long as a seal, and nothing once it is empty. With Redis
//! gone, `whenDown: open` keeps a subscribe on its replica and `closed` refuses it.
//! Skipped without `redis-server`. A few seconds each.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "listen_support/mod.rs"]
mod listen_support;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use bridge_support::Bridge;
use capable_test_support::RedisServer;
use listen_support::{
    initialize_at, key_file, listening_env, listening_to, post, standalone, store_config, Event,
};
use serde_json::{json, Value};

/// The fixture's resource that changes once subscribed to.
const MANUAL: &str = "docs://manual/current";

/// The fixture of `profile` served over HTTP (a bridge in front of it), its resource
/// changing every 200 ms once subscribed to: the bridge, and its URL.
fn served(profile: &str) -> (Bridge, String) {
    let mut server = common::fixture(profile);
    server.extend(["--update-interval".into(), "200ms".into()]);
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    let (bridge, port) = listening_to(&[], &server);
    (bridge, format!("http://127.0.0.1:{port}/mcp"))
}

/// Waits for `n` updates of [`MANUAL`] on `stream` (within 10 s): their event ids.
#[track_caller]
fn updates(stream: &mpsc::Receiver<Event>, n: usize, on: &str) -> Vec<String> {
    let until = Instant::now() + Duration::from_secs(10);
    let mut ids = Vec::new();
    while ids.len() < n {
        let left = until.saturating_duration_since(Instant::now());
        let (id, message) = stream
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("{} updates on {on}, then none ({e})", ids.len()));
        if message["method"] == "notifications/resources/updated" {
            assert_eq!(message["params"]["uri"], MANUAL, "{message}");
            ids.push(id.unwrap_or_default());
        }
    }
    ids
}

/// Whether an update of [`MANUAL`] comes on `stream` within `wait`.
fn any_update(stream: &mpsc::Receiver<Event>, wait: Duration) -> bool {
    let until = Instant::now() + wait;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match stream.recv_timeout(left) {
            Ok((_, m)) if m["method"] == "notifications/resources/updated" => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
}

/// `method` of [`MANUAL`] in `session` on `port`: its answer.
fn asked(port: u16, session: &str, id: u64, method: &str) -> Value {
    let answer = post(
        port,
        &[("Mcp-Session-Id", session)],
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"uri": MANUAL}}),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    match answer.header("content-type") {
        Some(t) if t.starts_with("text/event-stream") => answer.events().pop().unwrap(),
        _ => answer.json(),
    }
}

/// What the store holds of sessions' subscriptions: each key (`capable:subs:…`) with
/// its URIs and the milliseconds it is still kept.
fn kept(redis: &RedisServer) -> Vec<(String, Vec<String>, i64)> {
    let script = "local out = {} \
        for _, k in ipairs(redis.call('KEYS', 'capable:subs:*')) do \
          table.insert(out, k .. '=' .. table.concat(redis.call('SMEMBERS', k), ',') \
            .. '=' .. redis.call('PTTL', k)) \
        end \
        return redis.status_reply(table.concat(out, ' '))";
    let reply = redis.command(&format!("EVAL \"{script}\" 0")).unwrap();
    let reply = reply.strip_prefix('+').unwrap_or_else(|| panic!("{reply}"));
    reply
        .split_whitespace()
        .map(|entry| {
            let mut parts = entry.split('=');
            let key = parts.next().unwrap().to_owned();
            let uris = parts
                .next()
                .unwrap()
                .split(',')
                .map(str::to_owned)
                .collect();
            (key, uris, parts.next().unwrap().parse().unwrap())
        })
        .collect()
}

/// The scenario of the module documentation over `servers` (a config's `mcpServers`;
/// the store added as its `gateway`), each replica started with `flags`; `era`: the one
/// the one server behind speaks to the replicas, as its audit line says.
fn subscriptions_follow_the_hosts_stream(
    test: &str,
    servers: Value,
    flags: &[&str],
    era: Option<&str>,
) {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let file = store_config(&format!("replica-subs-{test}.json"), &redis, None, servers);
    let key = key_file(&format!("{test}.key"), 0x51);
    let mut args = vec![
        "--config",
        file.path(),
        "--seal-key-file",
        key.to_str().unwrap(),
    ];
    args.extend_from_slice(flags);
    let (a_bridge, a) = listening_env(&args, &[]);
    let (b_bridge, b) = listening_env(&args, &[]);
    let (c_bridge, c) = listening_env(&args, &[]);

    // The host's session, begun on A; its stream on B, which never saw it.
    let session = initialize_at(a, "2025-11-25");
    if let Some(era) = era {
        let ready = a_bridge.audit_until(|l| l["server"] == "live" && l["state"] == "ready");
        assert_eq!(ready["era"], era, "{ready}");
    }
    let on_b = standalone(b, &session, None);
    let ok = asked(a, &session, 2, "resources/subscribe");
    assert_eq!(ok["result"], json!({}), "{ok}");
    // The set is in the store, under a key that is a hash (the session id is not in
    // it), kept as long as a seal.
    let sets = kept(&redis);
    assert_eq!(sets.len(), 1, "{sets:?}");
    let (key, uris, ttl) = &sets[0];
    assert!(key.len() == "capable:subs:".len() + 32 && !session.contains(&key[13..]));
    assert_eq!(uris, &[MANUAL.to_owned()]);
    assert!(*ttl > 23 * 3_600_000, "{ttl}");
    // The updates come on B, which subscribed for the set in the store.
    let seen_on_b = updates(&on_b, 2, "B");
    b_bridge.audit_until(|l| l["event"] == "subscriptions" && l["from"] == "store");
    // A took the subscribe and let it go again: only the stream's holder delivers.
    assert!(!a_bridge
        .audit()
        .iter()
        .any(|l| l["event"] == "subscriptions" && l["from"] == "store"));

    // B dies; the host's stream ends, and it comes back on C with the last id B gave.
    drop(b_bridge);
    let until = Instant::now() + Duration::from_secs(10);
    while on_b.recv_timeout(Duration::from_millis(50)) != Err(mpsc::RecvTimeoutError::Disconnected)
    {
        assert!(Instant::now() < until, "B's stream did not end");
    }
    let last = seen_on_b.last().cloned();
    let on_c = standalone(c, &session, last.as_deref());
    let seen_on_c = updates(&on_c, 2, "C");
    // C never saw the subscribe: it read the set, and says where what B had not
    // delivered went (a fresh stream, nothing replayed twice).
    c_bridge.audit_until(|l| l["event"] == "subscriptions" && l["from"] == "store");
    c_bridge.audit_until(|l| l["event"] == "resumed" && l["fresh"] == true);
    assert!(
        seen_on_c.iter().all(|id| !seen_on_b.contains(id)),
        "{seen_on_b:?} {seen_on_c:?}"
    );

    // Unsubscribed on A: the updates stop at C.
    let off = asked(a, &session, 3, "resources/unsubscribe");
    assert_eq!(off["result"], json!({}), "{off}");
    assert_eq!(
        kept(&redis),
        vec![],
        "the set's last URI gone, the set with it"
    );
    // What was on its way when C let go may still come; then nothing, over 8 intervals.
    while any_update(&on_c, Duration::from_millis(400)) {}
    assert!(
        !any_update(&on_c, Duration::from_millis(1600)),
        "updates after the unsubscribe"
    );
    drop(redis);
}

#[test]
fn a_legacy_hosts_subscription_to_a_config_of_two_http_servers_follows_its_stream_across_replicas()
{
    let (_live, live) = served("subscribe");
    let (_tools, tools) = served("no-resources");
    let servers = json!({"live": {"url": live}, "tools": {"url": tools}});
    subscriptions_follow_the_hosts_stream("config", servers, &[], None);
}

#[test]
fn a_legacy_hosts_subscription_at_a_2026_server_follows_its_stream_across_replicas() {
    let (_live, live) = served("modern");
    let servers = json!({"live": {"url": live}});
    // The server in its own era (else a legacy host's version is proposed first, and
    // the front bridge answers in it: one legacy session, which needs no store).
    let flags = ["--server", "live", "--protocol", "modern"];
    subscriptions_follow_the_hosts_stream("modern", servers, &flags, Some("modern"));
}

#[test]
fn with_redis_gone_a_subscribe_stays_on_its_replica_when_open_and_is_refused_when_closed() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let (_live, live) = served("subscribe");
    let key = key_file("down.key", 0x52);
    let replica = |when_down: &str| {
        let servers = json!({"live": {"url": live}});
        let name = format!("replica-subs-{when_down}.json");
        let file = store_config(&name, &redis, Some(when_down), servers);
        let flags = [
            "--config",
            file.path(),
            "--seal-key-file",
            key.to_str().unwrap(),
        ];
        let (bridge, port) = listening_env(&flags, &[]);
        (bridge, port, file)
    };
    let (open, o, _f) = replica("open");
    let (closed, c, _g) = replica("closed");
    let open_session = initialize_at(o, "2025-11-25");
    let closed_session = initialize_at(c, "2025-11-25");
    redis.stop();

    // open: served as without a store — the subscription is this replica's, its updates
    // delivered on the host's stream here.
    let ok = asked(o, &open_session, 2, "resources/subscribe");
    assert_eq!(ok["result"], json!({}), "{ok}");
    let down = open.audit_until(|l| l["event"] == "store_down");
    assert_eq!(down["use"], "subscriptions", "{down}");
    let on_o = standalone(o, &open_session, None);
    updates(&on_o, 2, "the replica that took it");

    // closed: refused, saying why; the store's name and address are not in it.
    let refused = asked(c, &closed_session, 2, "resources/subscribe");
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("store") && !message.contains("127.0.0.1"),
        "{refused}"
    );
    closed.audit_until(|l| l["event"] == "store_down" && l["use"] == "subscriptions");
    // Nothing of it held here: no update on the host's stream.
    let on_c = standalone(c, &closed_session, None);
    assert!(!any_update(&on_c, Duration::from_millis(1000)));

    // Redis back (empty): once the store has rested, the subscribe is taken and kept.
    redis.restart();
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let answer = asked(c, &closed_session, 3, "resources/subscribe");
        if answer.get("result").is_some() {
            break;
        }
        assert!(Instant::now() < until, "{answer}");
        std::thread::sleep(Duration::from_millis(100));
    }
    updates(&on_c, 2, "the replica holding the stream");
    assert_eq!(kept(&redis).len(), 1);
}

#[test]
fn a_legacy_hosts_subscription_at_a_stdio_server_follows_its_stream_across_replicas() {
    // Each replica runs its own copy of the server: none of them saw the subscribe but A.
    let live = bridge_support::many_entry("subscribe", &["--update-interval", "200ms"]);
    let servers = json!({"live": live});
    subscriptions_follow_the_hosts_stream("stdio", servers, &["--server", "live"], None);
}

#[test]
fn a_uri_of_the_set_the_streams_holder_cannot_subscribe_to_is_said_and_the_others_go_on() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let (_live, live) = served("subscribe");
    let servers = json!({"live": {"url": live}});
    let file = store_config("replica-subs-refused.json", &redis, None, servers);
    let key = key_file("refused.key", 0x53);
    let flags = [
        "--config",
        file.path(),
        "--seal-key-file",
        key.to_str().unwrap(),
    ];
    let (a_bridge, a) = listening_env(&flags, &[]);
    let session = initialize_at(a, "2025-11-25");
    let on_a = standalone(a, &session, None);
    let ok = asked(a, &session, 2, "resources/subscribe");
    assert_eq!(ok["result"], json!({}), "{ok}");
    updates(&on_a, 1, "A");
    // A URI no server offers, put in the session's set as another replica would have:
    // the holder of the stream is told, reads the set, and cannot subscribe to it.
    let script = "local k = redis.call('KEYS', 'capable:subs:*')[1] \
        redis.call('SADD', k, 'nowhere://x') redis.call('PUBLISH', k, '+') \
        return redis.status_reply('OK')";
    assert_eq!(
        redis.command(&format!("EVAL \"{script}\" 0")).unwrap(),
        "+OK"
    );
    let said = a_bridge.audit_until(|l| {
        l["event"] == "notice"
            && l["notice"]
                .as_str()
                .is_some_and(|n| n.contains("could not be made again"))
    });
    assert!(
        said["notice"].as_str().unwrap().contains("nowhere://x"),
        "{said}"
    );
    updates(&on_a, 2, "A, after");
}
