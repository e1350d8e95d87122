//! `capable bridge --listen` replicas sharing a seal key and a store (`gateway.store`,
//! a `redis-server` the test starts on 127.0.0.1 with nothing saved): a legacy host's
//! `logging/setLevel` holds on every replica, where the server behind cannot keep it
//! for the host — the servers of a `--config` (each replica its own sessions to them),
//! a stdio server (each replica runs its own) and a 2026-07-28 server (the level goes
//! in the `_meta` of each request a replica sends).
//!
//! Each test: replicas and the fixture's `conformance` profile behind (it declares
//! `logging`; its `test_tool_with_logging` logs three `info` lines), and a host
//! speaking raw HTTP whose session begins on A and is used on C. With no level asked, a
//! call on C gets the three lines (on the host's `GET` there) from a legacy server, and
//! none from a 2026-07-28 one (its requests ask for no level). The host asks for
//! `error` on A: the store holds the level's name under a hashed key, as long as a
//! seal; C, told, applies it — its call gets no line. A is SIGKILLed; B, which never
//! saw the session, restores it from its seal and reads the level: its call gets no
//! line either. The host asks for `debug` on B: C, told, gets the lines; so does D, a
//! replica started then, which reads it as it restores the session. Calls cost the
//! store nothing (its command count, `INFO stats`): the level is never read per request.
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
    answer_of, ask, initialize_at, key_file, listening_env, listening_to, post, standalone,
    store_config, Event,
};
use serde_json::{json, Value};

/// The fixture's `conformance` profile served over HTTP (a bridge in front of it): the
/// bridge, and its URL.
fn served() -> (Bridge, String) {
    let server = common::fixture("conformance");
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    let (bridge, port) = listening_to(&[], &server);
    (bridge, format!("http://127.0.0.1:{port}/mcp"))
}

/// What the store holds of sessions' log levels: each key (`capable:level:…`) with its
/// value and the milliseconds it is still kept.
fn kept(redis: &RedisServer) -> Vec<(String, String, i64)> {
    let script = "local out = {} \
        for _, k in ipairs(redis.call('KEYS', 'capable:level:*')) do \
          table.insert(out, k .. '=' .. redis.call('GET', k) .. '=' .. redis.call('PTTL', k)) \
        end \
        return redis.status_reply(table.concat(out, ' '))";
    let reply = redis.command(&format!("EVAL \"{script}\" 0")).unwrap();
    let reply = reply.strip_prefix('+').unwrap_or_else(|| panic!("{reply}"));
    reply
        .split_whitespace()
        .map(|entry| {
            let mut parts = entry.split('=');
            let key = parts.next().unwrap().to_owned();
            let value = parts.next().unwrap().to_owned();
            (key, value, parts.next().unwrap().parse().unwrap())
        })
        .collect()
}

/// How many commands the store has processed (`INFO stats`), this one not counted.
fn commands_processed(redis: &RedisServer) -> u64 {
    use std::io::{Read, Write};
    let port = redis
        .url()
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut s = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(b"INFO stats\r\n").unwrap();
    let mut text = String::new();
    let mut chunk = [0u8; 4096];
    while !text.contains("total_commands_processed:") || !text.ends_with("\r\n") {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "{text}");
        text.push_str(&String::from_utf8_lossy(&chunk[..n]));
    }
    let line = text
        .lines()
        .find(|l| l.starts_with("total_commands_processed:"));
    line.unwrap()[25..].trim().parse().unwrap()
}

/// The log lines a call of `tool` in `session` on `port` brings: on its own stream or
/// on the host's `GET` there (`stream`). All three are waited for (within 10 s) when
/// `expect` is 3; with 0, what comes within half a second of the answer is counted.
#[track_caller]
fn lines_of_a_call(
    port: u16,
    session: &str,
    id: i64,
    tool: &str,
    stream: &mpsc::Receiver<Event>,
    expect: usize,
) -> usize {
    let headers = [
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": tool, "arguments": {}}});
    let answer = post(port, &headers, message);
    let done = answer_of(&answer);
    assert!(done["result"]["content"].is_array(), "{done}");
    let logged = |m: &Value| m["method"] == "notifications/message";
    let mut lines = answer.events().iter().filter(|m| logged(m)).count();
    let wait = match expect {
        0 => Duration::from_millis(500),
        _ => Duration::from_secs(10),
    };
    let until = Instant::now() + wait;
    while expect == 0 || lines < expect {
        let left = until.saturating_duration_since(Instant::now());
        match stream.recv_timeout(left) {
            Ok((_, m)) if logged(&m) => {
                assert_eq!(m["params"]["level"], "info", "{m}");
                lines += 1;
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    lines
}

/// The level `level` asked in `session` on `port`: answered.
#[track_caller]
fn set_level(port: u16, session: &str, id: i64, level: &str) {
    let ok = ask(
        port,
        session,
        id,
        "logging/setLevel",
        json!({"level": level}),
    );
    assert_eq!(ok["result"], json!({}), "{ok}");
}

/// Waits for `replica` to say it applied `level` from the store.
#[track_caller]
fn applied(replica: &Bridge, level: &str) {
    replica.audit_until(|l| l["event"] == "level" && l["from"] == "store" && l["level"] == level);
}

/// The scenario of the module documentation over `servers` (a config's `mcpServers`;
/// the store added as its `gateway`), each replica started with `flags`; `tool`: the
/// name the host calls the logging tool by; `untold`: the lines a call gets before any
/// level is asked.
fn the_level_holds_on_every_replica(
    test: &str,
    servers: Value,
    flags: &[&str],
    tool: &str,
    untold: usize,
) {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let file = store_config(&format!("replica-level-{test}.json"), &redis, None, servers);
    let key = key_file(&format!("level-{test}.key"), 0x61);
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

    // The host's session, begun on A, its stream on C: no level asked.
    let session = initialize_at(a, "2025-11-25");
    let on_c = standalone(c, &session, None);
    assert_eq!(lines_of_a_call(c, &session, 2, tool, &on_c, untold), untold);

    // `error` on A: kept in the store by name, under a key that is a hash (the session
    // id is not in it), as long as a seal.
    set_level(a, &session, 3, "error");
    let levels = kept(&redis);
    assert_eq!(levels.len(), 1, "{levels:?}");
    let (stored, value, ttl) = &levels[0];
    assert!(stored.len() == "capable:level:".len() + 32 && !session.contains(&stored[14..]));
    assert_eq!(value, "error");
    assert!(*ttl > 23 * 3_600_000, "{ttl}");
    // C held the session already: told, it applies the level — no `info` line now.
    applied(&c_bridge, "error");
    assert_eq!(lines_of_a_call(c, &session, 4, tool, &on_c, 0), 0);

    // A dies. B never saw the session: restored from its seal, it reads the level.
    drop(a_bridge);
    let on_b = standalone(b, &session, None);
    applied(&b_bridge, "error");
    assert_eq!(lines_of_a_call(b, &session, 5, tool, &on_b, 0), 0);

    // `debug` on B: C, told, gives the lines; B applied it itself.
    set_level(b, &session, 6, "debug");
    applied(&c_bridge, "debug");
    assert_eq!(lines_of_a_call(c, &session, 7, tool, &on_c, 3), 3);
    assert_eq!(lines_of_a_call(b, &session, 8, tool, &on_b, 3), 3);
    // Nothing of the level is read per request: four calls, and the store counts the
    // first `INFO`, and at most B's read of the word its own setLevel sent (told as C
    // was, it may read a moment later) — never one a call.
    let before = commands_processed(&redis);
    for id in 10..14 {
        assert_eq!(lines_of_a_call(c, &session, id, tool, &on_c, 3), 3);
    }
    let spent = commands_processed(&redis) - before;
    assert!((1..=2).contains(&spent), "{spent}");
    assert!(!b_bridge
        .audit()
        .iter()
        .any(|l| l["event"] == "level" && l["level"] == "debug"));
    assert_eq!(kept(&redis)[0].1, "debug");
    // D, started now, restores the session with the level kept.
    let (d_bridge, d) = listening_env(&args, &[]);
    let on_d = standalone(d, &session, None);
    applied(&d_bridge, "debug");
    assert_eq!(lines_of_a_call(d, &session, 9, tool, &on_d, 3), 3);
    drop(redis);
}

#[test]
fn a_legacy_hosts_log_level_holds_on_every_replica_before_a_config_of_stdio_servers() {
    let servers = json!({
        "fx": bridge_support::many_entry("conformance", &[]),
        "tools": bridge_support::many_entry("no-resources", &[]),
    });
    let tool = "fx__test_tool_with_logging";
    the_level_holds_on_every_replica("config", servers, &[], tool, 3);
}

#[test]
fn a_legacy_hosts_log_level_holds_on_every_replica_before_a_stdio_server() {
    let servers = json!({"fx": bridge_support::many_entry("conformance", &[])});
    let flags = ["--server", "fx"];
    the_level_holds_on_every_replica("stdio", servers, &flags, "test_tool_with_logging", 3);
}

#[test]
fn a_legacy_hosts_log_level_holds_on_every_replica_before_a_2026_server() {
    let (_server, url) = served();
    let servers = json!({"live": {"url": url}});
    // The server in its own era (else a legacy host's version is proposed first, and
    // the front bridge answers in it: one legacy session, which keeps the level itself).
    let flags = ["--server", "live", "--protocol", "modern"];
    the_level_holds_on_every_replica("modern", servers, &flags, "test_tool_with_logging", 0);
}

#[test]
fn with_redis_gone_a_level_holds_on_its_replica_when_open_and_is_refused_when_closed() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let key = key_file("level-down.key", 0x62);
    let replica = |when_down: &str| {
        let servers = json!({"fx": bridge_support::many_entry("conformance", &[])});
        let name = format!("replica-level-{when_down}.json");
        let file = store_config(&name, &redis, Some(when_down), servers);
        let flags = [
            "--config",
            file.path(),
            "--seal-key-file",
            key.to_str().unwrap(),
            "--server",
            "fx",
        ];
        let (bridge, port) = listening_env(&flags, &[]);
        (bridge, port, file)
    };
    let tool = "test_tool_with_logging";
    let (open, o, _f) = replica("open");
    let (closed, c, _g) = replica("closed");
    let open_session = initialize_at(o, "2025-11-25");
    let closed_session = initialize_at(c, "2025-11-25");
    redis.stop();

    // open: served as without a store — the level holds on the replica that took it.
    set_level(o, &open_session, 2, "error");
    let down = open.audit_until(|l| l["event"] == "store_down");
    assert_eq!(down["use"], "log level", "{down}");
    let on_o = standalone(o, &open_session, None);
    assert_eq!(lines_of_a_call(o, &open_session, 3, tool, &on_o, 0), 0);

    // closed: refused, saying why; the store's name and address are not in it.
    let refused = ask(
        c,
        &closed_session,
        2,
        "logging/setLevel",
        json!({"level": "error"}),
    );
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("store") && !message.contains("127.0.0.1"),
        "{refused}"
    );
    closed.audit_until(|l| l["event"] == "store_down" && l["use"] == "log level");

    // Redis back (empty): once the store has rested, the level is taken and kept.
    redis.restart();
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let answer = ask(
            c,
            &closed_session,
            3,
            "logging/setLevel",
            json!({"level": "warning"}),
        );
        if answer.get("result").is_some() {
            break;
        }
        assert!(Instant::now() < until, "{answer}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let levels = kept(&redis);
    assert_eq!(levels.len(), 1, "{levels:?}");
    assert_eq!(levels[0].1, "warning");
}
