//! `capable bridge --listen --auth-issuer` with a config's per-identity rules and rate
//! limits: two callers of a real identity provider (`tests/peers/oidc_issuer.mjs`:
//! oidc-provider, client credentials tokens whose groups sit in the nested claim
//! `org.groups`) through one gateway at once. Each is shown only the tools its rules
//! allow, in both eras; a denied call is answered with the rule and never reaches the
//! server (its `--trace` shows no call); a caller over its limit gets `429` with
//! `Retry-After` while the other is served. Everything binds 127.0.0.1.
//!
//! Without `.peers` these tests fail, saying how to install them; set
//! `CAPABLE_SKIP_PEERS=1` to skip them instead.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "identity_support/mod.rs"]
mod identity_support;
#[path = "listen_support/mod.rs"]
mod listen_support;

use bridge_support::{many_entry, Bridge};
use common::TempFile;
use identity_support::{gateway_to, wanted, Gateway};
use listen_support::{post, Http};
use serde_json::{json, Value};

/// A config file of `servers`, its `gateway` section `gateway`.
fn config(test: &str, gateway: Value, servers: Value) -> TempFile {
    let text = json!({"gateway": gateway, "mcpServers": servers}).to_string();
    TempFile::new(&format!("bridge-policy-{test}.json"), &text)
}

/// `docs` for the group `eng`, its `confirm` tool for `admins` alone; `vault` for the
/// subject `alice-app` alone. (alice-app is in eng and admins, bob-app in eng.)
fn team(test: &str) -> TempFile {
    let servers = json!({
        "docs": {"access": {"allow": {"groups": ["eng"]},
                            "tools": {"confirm": {"groups": ["admins"]}}}},
        "vault": {"access": {"allow": {"subjects": ["alice-app"]}}},
    });
    let mut servers = servers;
    for name in ["docs", "vault"] {
        let entry = many_entry("no-resources", &[]);
        for (k, v) in entry.as_object().unwrap() {
            servers[name][k] = v.clone();
        }
    }
    config(test, json!({"groupsClaim": "org.groups"}), servers)
}

/// A request of the legacy session `id`, as `token`'s caller.
fn legacy(g: &Gateway, token: &str, id: &str, method: &str, params: Value) -> Http {
    let bearer = format!("Bearer {token}");
    post(
        g.port,
        &[("Authorization", &bearer), ("Mcp-Session-Id", id)],
        json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params}),
    )
}

/// A 2026-07-28 request (no session), as `token`'s caller.
fn modern(g: &Gateway, token: &str, method: &str, mut params: Value) -> Http {
    let bearer = format!("Bearer {token}");
    params["_meta"] = Bridge::meta(json!({}));
    let mut headers = vec![
        ("Authorization", bearer.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    let name = params["name"].as_str().map(str::to_owned);
    if let Some(name) = &name {
        headers.push(("Mcp-Name", name.as_str()));
    }
    post(
        g.port,
        &headers,
        json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params}),
    )
}

/// The tools a `tools/list` answer names, sorted.
fn tools(answer: &Http) -> Vec<String> {
    assert_eq!(answer.status, 200, "{}", answer.body);
    let result = &answer.json()["result"];
    let mut names: Vec<String> = result["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {}", answer.body))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn each_caller_sees_and_calls_only_what_its_rules_allow_in_both_eras() {
    if !wanted() {
        return;
    }
    let file = team("rules");
    let g = gateway_to(&["--config", file.0.to_str().unwrap()]);
    let (alice, bob) = (g.token("alice-app"), g.token("bob-app"));
    let (hers, his) = (g.session(&alice), g.session(&bob));
    let all = [
        "docs__confirm",
        "docs__echo",
        "vault__confirm",
        "vault__echo",
    ];
    assert_eq!(
        tools(&legacy(&g, &alice, &hers, "tools/list", json!({}))),
        all
    );
    assert_eq!(
        tools(&legacy(&g, &bob, &his, "tools/list", json!({}))),
        ["docs__echo"]
    );
    // The same callers in 2026-07-28: the same lists, each its own.
    assert_eq!(tools(&modern(&g, &alice, "tools/list", json!({}))), all);
    assert_eq!(
        tools(&modern(&g, &bob, "tools/list", json!({}))),
        ["docs__echo"]
    );

    // Bob's calls of what he is not shown: refused with the rule, nothing sent.
    let call = |name: &str| json!({"name": name, "arguments": {"message": "hi"}});
    let denied = legacy(&g, &bob, &his, "tools/call", call("docs__confirm"));
    assert_eq!(denied.status, 200, "{}", denied.body);
    let error = &denied.json()["error"];
    assert_eq!(error["code"], -32602, "{}", denied.body);
    let said = error["message"].as_str().unwrap();
    assert!(
        said.contains("rule mcpServers.docs.access.tools.confirm"),
        "{said}"
    );
    assert!(!said.contains(&bob), "the token is never in an answer");
    let denied = modern(&g, &bob, "tools/call", call("vault__echo"));
    assert_eq!(denied.status, 400, "{}", denied.body);
    let said = denied.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        said.contains("rule mcpServers.vault.access.allow"),
        "{said}"
    );
    assert_eq!(g.bridge.sent_upstream_count("tools/call"), 0);

    // What they may call reaches the server: one call each.
    let echoed = legacy(&g, &bob, &his, "tools/call", call("docs__echo"));
    assert!(
        echoed.json()["result"]["content"].is_array(),
        "{}",
        echoed.body
    );
    let echoed = modern(&g, &alice, "tools/call", call("vault__echo"));
    assert_eq!(echoed.status, 200, "{}", echoed.body);
    assert_eq!(g.bridge.sent_upstream_count_until("tools/call", 2), 2);

    // Each refusal is audited, naming the caller and the rule, never the token.
    let denials = g.bridge.audit_count_until(2, |l| l["event"] == "denied");
    assert_eq!(denials, 2);
    let line = g.bridge.audit_until(|l| l["event"] == "denied");
    assert_eq!(line["caller"]["sub"], "bob-app");
    assert_eq!(line["server"], "docs");
    assert_eq!(line["name"], "confirm");
    // Each call that went on is audited with its caller and what the server did; the
    // refused ones are no call.
    let calls = g.bridge.audit_count_until(2, |l| l["event"] == "called");
    assert_eq!(calls, 2, "{}", g.bridge.stderr_text());
    let his = g
        .bridge
        .audit_until(|l| l["event"] == "called" && l["caller"]["sub"] == "bob-app");
    assert_eq!(
        (&his["server"], &his["name"], &his["outcome"]),
        (&json!("docs"), &json!("echo"), &json!("ok"))
    );
    let written = g.bridge.stderr_text();
    assert!(!written.contains(&alice) && !written.contains(&bob));
}

/// One server of the config (`--server`): its list filtered for each caller as the
/// server gives it, in both eras, and a denied call refused before it is sent.
#[test]
fn one_server_alone_is_filtered_per_caller_too() {
    if !wanted() {
        return;
    }
    let file = team("one");
    let path = file.0.to_str().unwrap();
    let g = gateway_to(&["--config", path, "--server", "docs"]);
    let (alice, bob) = (g.token("alice-app"), g.token("bob-app"));
    let his = g.session(&bob);
    assert_eq!(
        tools(&legacy(&g, &bob, &his, "tools/list", json!({}))),
        ["echo"]
    );
    assert_eq!(tools(&modern(&g, &bob, "tools/list", json!({}))), ["echo"]);
    assert_eq!(
        tools(&modern(&g, &alice, "tools/list", json!({}))),
        ["confirm", "echo"]
    );
    let call = json!({"name": "confirm", "arguments": {}});
    let denied = legacy(&g, &bob, &his, "tools/call", call);
    let said = denied.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(said.contains("access.tools.confirm"), "{said}");
    assert_eq!(g.bridge.sent_upstream_count("tools/call"), 0);
    let denied = g.bridge.audit_until(|l| l["event"] == "denied");
    assert_eq!(denied["caller"]["sub"], "bob-app");
}

#[test]
fn a_caller_over_its_rate_limit_gets_429_and_retry_after_and_another_is_served() {
    if !wanted() {
        return;
    }
    let servers = json!({"docs": many_entry("no-resources", &[])});
    let mut servers = servers;
    servers["docs"]["rateLimit"] = json!({"requests": 2, "per": "1h"});
    let file = config("limit", json!({}), servers);
    // One server (`--server`): the limit holds through the one-server path too.
    let path = file.0.to_str().unwrap();
    let g = gateway_to(&["--config", path, "--server", "docs"]);
    let (alice, bob) = (g.token("alice-app"), g.token("bob-app"));
    let hers = g.session(&alice);
    let call = json!({"name": "echo", "arguments": {"message": "hi"}});
    for _ in 0..2 {
        let served = legacy(&g, &alice, &hers, "tools/call", call.clone());
        assert_eq!(served.status, 200, "{}", served.body);
        assert!(served.json()["result"].is_object(), "{}", served.body);
    }
    let limited = legacy(&g, &alice, &hers, "tools/call", call.clone());
    assert_eq!(limited.status, 429, "{}", limited.body);
    let wait: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=1800).contains(&wait), "{wait}");
    // The body is the JSON-RPC error a host reads, under the request's id.
    let error = &limited.json()["error"];
    assert_eq!(error["code"], -32011, "{}", limited.body);
    assert_eq!(error["data"]["retryAfter"], wait);
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("mcpServers.docs.rateLimit"));
    // In 2026-07-28 too: the limit is the caller's, whatever the era.
    let limited = modern(&g, &alice, "tools/call", call.clone());
    assert_eq!(limited.status, 429, "{}", limited.body);
    assert!(limited.header("retry-after").is_some());
    // Bob is not held back by Alice's limit.
    let his = modern(&g, &bob, "tools/call", call.clone());
    assert_eq!(his.status, 200, "{}", his.body);
    assert_eq!(g.bridge.sent_upstream_count_until("tools/call", 3), 3);
    let limited = g.bridge.audit_until(|l| l["event"] == "limited");
    assert_eq!(limited["caller"]["sub"], "alice-app");
    // The calls served, and only those, are audited as calls.
    let called = |l: &Value| l["event"] == "called" && l["server"] == "docs";
    assert_eq!(g.bridge.audit_count_until(3, called), 3);
    // The metrics count the refusals by why, and the calls by class of caller (both
    // apps get tokens of their own: clients acting for themselves), no identity.
    let bearer = format!("Bearer {bob}");
    let scrape =
        listen_support::http_at(g.port, "GET", "/metrics", &[("Authorization", &bearer)], "");
    assert_eq!(scrape.status, 200, "{}", scrape.body);
    let count = |series: &str| {
        let prefix = format!("capable_bridge_{series} ");
        let line = scrape
            .body
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()));
        line.and_then(|n| n.parse::<u64>().ok())
    };
    // Each request the limit refused (the two calls, and whatever else Alice asked
    // over it) is one refusal, and one request refused.
    let refused: u64 = scrape
        .body
        .lines()
        .filter(|l| l.starts_with("capable_bridge_requests_total{"))
        .filter(|l| l.contains(r#"outcome="refused""#))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    assert!(refused >= 2, "{}", scrape.body);
    let limited = count(r#"refusals_total{reason="rate_limited"}"#);
    assert_eq!(limited, Some(refused), "{}", scrape.body);
    let denied = count(r#"refusals_total{reason="denied"}"#);
    assert_eq!(denied, Some(0), "{}", scrape.body);
    let calls = r#"requests_total{method="tools/call",server="docs",outcome="ok",caller="client"}"#;
    assert_eq!(count(calls), Some(3), "{}", scrape.body);
    assert!(!scrape.body.contains("alice-app"), "{}", scrape.body);
}

#[test]
fn rules_naming_callers_without_an_issuer_stop_the_start_saying_why() {
    let servers = json!({"docs": many_entry("no-resources", &[])});
    let mut servers = servers;
    servers["docs"]["access"] = json!({"tools": {"echo": {"groups": ["admins"]}}});
    let file = config("no-issuer", json!({}), servers);
    let path = file.0.to_str().unwrap();
    for flags in [vec![], vec!["--listen", "127.0.0.1:0"]] {
        let mut args = vec!["bridge", "--config", path];
        args.extend(flags.iter().copied());
        let refused = common::capable(&args, std::time::Duration::from_secs(20));
        refused.expect_code(2);
        let said = &refused.stderr;
        assert!(said.contains("mcpServers.docs.access.tools.echo"), "{said}");
        assert!(said.contains("--auth-issuer"), "{said}");
    }
}

/// Without an issuer, everyone is one caller: a stdio host over its limit reads the
/// JSON-RPC error, with how long to wait, and nothing more reaches the server.
#[test]
fn a_stdio_host_over_its_limit_reads_the_json_rpc_error_and_when_to_retry() {
    let mut servers = json!({"docs": many_entry("no-resources", &[])});
    servers["docs"]["rateLimit"] = json!({"requests": 1, "per": "1h", "concurrent": 4});
    let file = config("stdio", json!({}), servers);
    let path = file.0.to_str().unwrap();
    let mut b = Bridge::start(&["--trace", "--config", path, "--server", "docs"]);
    b.initialize(capable::internal::ProtocolVersion::V2025_11_25, json!({}));
    let call = json!({"name": "echo", "arguments": {"message": "hi"}});
    let served = b.request(1, "tools/call", call.clone());
    assert!(served["result"]["content"].is_array(), "{served}");
    let limited = b.request(2, "tools/call", call);
    assert_eq!(limited["error"]["code"], -32011, "{limited}");
    let wait = limited["error"]["data"]["retryAfter"].as_u64().unwrap();
    assert!((3500..=3600).contains(&wait), "{wait}");
    assert_eq!(b.sent_upstream_count("tools/call"), 1);
}
