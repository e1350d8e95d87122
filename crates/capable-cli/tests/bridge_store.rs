//! `capable bridge --listen` replicas sharing one store (the config's `gateway.store`,
//! a `redis-server` the test starts on 127.0.0.1 with nothing saved): one caller's
//! requests spread over two replicas get its rate limit once, not once per replica —
//! `429` with `Retry-After` on whichever replica is over. Redis stopped mid-run: with
//! `whenDown: open` (the default) each replica counts alone and serves, with
//! `closed` what a limit applies to is refused; either way at once, never hanging, and
//! the audit says so. A gateway with a seal key and no store says at start what it
//! gives up.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "listen_support/mod.rs"]
mod listen_support;

use std::time::{Duration, Instant};

use bridge_support::{many_entry, Bridge};
use capable_test_support::RedisServer;
use common::TempFile;
use listen_support::{listening_env, modern_post, Http};
use serde_json::{json, Value};

/// A config of one `docs` server whose `gateway` section is `gateway`.
fn config(test: &str, gateway: Value) -> TempFile {
    let text = json!({"gateway": gateway, "mcpServers": {"docs": many_entry("no-resources", &[])}});
    TempFile::new(&format!("bridge-store-{test}.json"), &text.to_string())
}

/// A replica: `capable bridge --listen 127.0.0.1:0 --config FILE`, and its port.
fn replica(file: &TempFile, flags: &[&str]) -> (Bridge, u16) {
    let mut args = vec!["--config", file.path()];
    args.extend_from_slice(flags);
    listening_env(&args, &[])
}

/// A 2026-07-28 call of `docs__echo` (nobody logs in: every request is one caller's).
fn call(port: u16, id: u64) -> Http {
    let params = json!({"name": "docs__echo", "arguments": {"message": "hi"},
        "_meta": Bridge::meta(json!({}))});
    modern_post(
        port,
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
    )
}

#[track_caller]
fn served(answer: &Http) {
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(
        answer.json()["result"]["content"].is_array(),
        "{}",
        answer.body
    );
}

#[track_caller]
fn limited(answer: &Http) -> u64 {
    assert_eq!(answer.status, 429, "{}", answer.body);
    assert_eq!(answer.json()["error"]["code"], -32011, "{}", answer.body);
    answer.header("retry-after").unwrap().parse().unwrap()
}

#[test]
fn one_callers_limit_holds_across_two_replicas_and_each_counts_alone_when_redis_is_gone() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let gateway = json!({"store": {"redis": redis.url(), "timeout": "300ms"},
        "rateLimit": {"requests": 4, "per": "1h"}});
    let file = config("two", gateway);
    let (a, pa) = replica(&file, &[]);
    let (b, pb) = replica(&file, &[]);
    // Spread over both: 4 in all, not 4 each.
    for (n, port) in [pa, pb, pa, pb].into_iter().enumerate() {
        served(&call(port, n as u64 + 10));
    }
    let wait = limited(&call(pa, 20));
    assert!(
        (800..=900).contains(&wait),
        "one more each 15 minutes: {wait}"
    );
    assert!((800..=900).contains(&limited(&call(pb, 21))));
    let said = a.audit_until(|l| l["event"] == "limited");
    assert!(
        said["why"].as_str().unwrap().contains("gateway.rateLimit"),
        "{said}"
    );

    // Redis gone mid-run: `open`, each replica counts alone, at once.
    redis.stop();
    let started = Instant::now();
    for id in 30..34 {
        served(&call(pa, id));
    }
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "no request waits on a Redis that is gone: {:?}",
        started.elapsed()
    );
    limited(&call(pa, 34));
    served(&call(pb, 35));
    let down = a.audit_until(|l| l["event"] == "store_down");
    let why = down["why"].as_str().unwrap();
    assert!(why.contains("counted on this replica alone"), "{why}");
    b.audit_until(|l| l["event"] == "store_down");
}

#[test]
fn closed_refuses_while_redis_is_gone_and_serves_again_once_it_is_back() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let gateway = json!({"store": {"redis": redis.url(), "timeout": "300ms", "whenDown": "closed"},
        "rateLimit": {"requests": 100, "per": "1m"}});
    let file = config("closed", gateway);
    let (a, pa) = replica(&file, &[]);
    served(&call(pa, 1));
    redis.stop();
    let started = Instant::now();
    assert_eq!(limited(&call(pa, 2)), 1);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let refused = call(pa, 3);
    limited(&refused);
    let message = refused.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("cannot be reached"), "{message}");
    a.audit_until(|l| l["event"] == "store_down");
    // Back: served again once the store's rest is over.
    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut id = 10;
    while call(pa, id).status != 200 {
        assert!(
            Instant::now() < deadline,
            "not served again with Redis back"
        );
        std::thread::sleep(Duration::from_millis(200));
        id += 1;
    }
}

#[test]
fn a_sealed_gateway_without_a_store_says_what_it_gives_up_and_a_store_away_is_named() {
    let key = TempFile::new("bridge-store-seal.key", &"ab".repeat(32));
    let file = config("seal", json!({"rateLimit": {"requests": 10, "per": "1s"}}));
    let (b, _) = replica(&file, &["--seal-key-file", key.path()]);
    let said = b.stderr_text();
    assert!(said.contains("no gateway.store"), "{said}");
    assert!(
        said.contains("each replica counts rate limits alone"),
        "{said}"
    );
    assert!(
        said.contains("subscriptions to a 2026-07-28 server, a stdio server or the servers of a --config stay with the replica that took them"),
        "{said}"
    );
    assert!(
        said.contains("and so does the log level it sets (logging/setLevel)"),
        "{said}"
    );
    assert!(
        said.contains("a task of the bridge's own (a legacy host's task call a 2026-07-28 server answered at once) is known only to the replica that made it"),
        "{said}"
    );
    assert!(
        said.contains(
            "a legacy host's tasks/list lists the tasks started through the replica it reaches"
        ),
        "{said}"
    );
    // A store named but away at start: said, and the gateway serves anyway.
    let port = capable_test_support::free_port();
    let gateway = json!({"store": {"redis": format!("redis://127.0.0.1:{port}/0"),
        "timeout": "200ms"}, "rateLimit": {"requests": 10, "per": "1s"}});
    let file = config("away", gateway);
    let (b, pb) = replica(&file, &["--seal-key-file", key.path()]);
    let said = b.stderr_text();
    assert!(
        said.contains("gateway.store (redis, timeout 200ms) cannot be reached now"),
        "{said}"
    );
    assert!(!said.contains("no gateway.store"), "{said}");
    served(&call(pb, 1));
}

/// A 2026-07-28 stdio host's call of `confirm`, whose legacy server asks a question:
/// the round it gets.
fn confirm(b: &mut Bridge, id: i64, extra: Value) -> Value {
    b.version = capable::internal::ProtocolVersion::V2026_07_28;
    let mut params = json!({"name": "confirm", "_meta": Bridge::meta(json!({"elicitation": {}}))});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    b.request(id, "tools/call", params)
}

#[test]
fn a_round_spent_in_the_store_is_refused_and_a_first_retry_spends_it_there() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let text = json!({"gateway": {"store": {"redis": redis.url()}},
        "mcpServers": {"docs": many_entry("elicit", &[])}});
    let file = TempFile::new("bridge-store-rounds.json", &text.to_string());
    let mut b = Bridge::start(&["--trace", "--config", file.path(), "--server", "docs"]);
    let answers = |round: &Value| {
        let asked = round["result"]["inputRequests"].as_object().unwrap();
        let key = asked.keys().next().unwrap().clone();
        json!({key: {"action": "accept", "content": {"approve": true}}})
    };

    // Another replica took this round's retry first: the store says it is spent.
    let first = confirm(&mut b, 1, json!({}));
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let key = capable_bridge::store::key("spent", &[&state]);
    assert_eq!(
        redis.command(&format!("SET {key} 1 PX 60000")).as_deref(),
        Some("+OK")
    );
    let retry = json!({"requestState": state, "inputResponses": answers(&first)});
    let refused = confirm(&mut b, 2, retry);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("spent already"), "{message}");

    // A round nobody answered yet: taken here, and spent in the store for the others.
    let second = confirm(&mut b, 3, json!({}));
    let state = second["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    // Another request's params do not spend it (the round stays open for the real one).
    let other = json!({"arguments": {"giveUpAfterMs": 1}, "requestState": state,
        "inputResponses": answers(&second)});
    assert_eq!(confirm(&mut b, 4, other)["error"]["code"], -32602);
    let key = capable_bridge::store::key("spent", &[&state]);
    assert_eq!(
        redis.command(&format!("EXISTS {key}")).as_deref(),
        Some(":0")
    );
    let retry = json!({"requestState": state, "inputResponses": answers(&second)});
    let done = confirm(&mut b, 5, retry);
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(
        redis.command(&format!("EXISTS {key}")).as_deref(),
        Some(":1")
    );
}
