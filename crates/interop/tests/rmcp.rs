//! capable against a server built on rmcp 3.11, the official Rust MCP SDK
//! (`src/bin/rmcp_server.rs`: `ServerHandler` by hand, served on stdio).
//!
//! What rmcp does in each era (read from `rmcp-3.11.0/src/service/server.rs` and
//! `src/handler/server.rs`, and checked here on the wire):
//!
//! - **`server/discover`.** Before a lifecycle is chosen, rmcp answers a discover
//!   request whose `_meta` carries the 2026-07-28 keys (protocol version, client
//!   capabilities, client info) with a `DiscoverResult` (`supportedVersions` = every
//!   version it knows, 2024-11-05 … 2026-07-28, the capabilities from `get_info`, the
//!   server info under `_meta`), then stays open to either lifecycle. capable's probe
//!   carries those keys, so with `ProtocolChoice::Auto` the session is **modern**
//!   (2026-07-28), and no `initialize` is ever sent.
//! - **`initialize`.** With `ProtocolChoice::Legacy` rmcp negotiates the version capable
//!   asks for (2025-11-25, the newest with a handshake) and serves the session model;
//!   `notifications/initialized` is the first message capable sends after the answer.
//! - **Per era.** rmcp strips `resultType` from results for legacy peers and fills in
//!   the cache hints (`resultType`, `ttlMs`, `cacheScope`) for modern ones; capable
//!   accepts both. `resources/subscribe` is legacy-only in rmcp and
//!   `subscriptions/listen` modern-only, which matches capable's gating table.
//!
//! In both eras every message capable sends is validated against the official schema
//! of the negotiated version, and an undeclared capability (prompts) is refused
//! locally with nothing sent.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::{
    connect_stdio, Capability, ClientConfig, ClientOptions, Direction, Era, Error, Flag,
    ListenEvent, ListenFilter, ProtocolChoice, ProtocolVersion, Revision, ServerCommand, Session,
    Tap, Timeouts,
};
use serde_json::{json, Value};

const MANUAL: &str = "docs://manual/current";
const LIMIT: Duration = Duration::from_secs(30);

/// Fails the test instead of hanging it.
async fn within<F: Future>(fut: F) -> F::Output {
    tokio::time::timeout(LIMIT, fut)
        .await
        .unwrap_or_else(|_| panic!("the test did not finish within {LIMIT:?}"))
}

/// The rmcp server.
fn rmcp_server() -> ServerCommand {
    ServerCommand::new(env!("CARGO_BIN_EXE_rmcp-server"), Vec::<String>::new())
}

/// Every line on the wire, in order.
#[derive(Clone, Default)]
struct Wire(Arc<Mutex<Vec<(Direction, Value)>>>);

impl Wire {
    fn options(&self, protocol: ProtocolChoice) -> ClientOptions {
        let log = self.0.clone();
        ClientOptions {
            config: ClientConfig {
                protocol,
                timeouts: Timeouts {
                    request: Duration::from_secs(10),
                    probe: Duration::from_secs(10),
                    ..Timeouts::default()
                },
                ..ClientConfig::default()
            },
            tap: Some(Tap::new(move |direction, line| {
                let message = serde_json::from_slice(line).unwrap_or_else(|e| {
                    panic!("not JSON ({e}): {}", String::from_utf8_lossy(line))
                });
                log.lock().unwrap().push((direction, message));
            })),
            ..ClientOptions::default()
        }
    }

    fn all(&self) -> Vec<(Direction, Value)> {
        self.0.lock().unwrap().clone()
    }

    fn sent(&self) -> Vec<Value> {
        self.all()
            .into_iter()
            .filter(|(d, _)| *d == Direction::Sent)
            .map(|(_, m)| m)
            .collect()
    }

    fn sent_methods(&self) -> Vec<String> {
        self.sent()
            .iter()
            .filter_map(|m| m["method"].as_str().map(str::to_owned))
            .collect()
    }

    /// Every sent message is valid under the official schema of `version`.
    fn assert_schema_valid(&self, version: ProtocolVersion) {
        let sent = self.sent();
        assert!(!sent.is_empty(), "nothing was sent");
        for message in sent {
            capable_test_support::assert_valid(version, &serde_json::to_vec(&message).unwrap());
        }
    }
}

/// What `get_info` in `rmcp_server.rs` declares, exactly as rmcp puts it on the wire.
fn declared() -> Value {
    json!({"resources": {"subscribe": true}, "tools": {}})
}

/// The same scenario in either era: list, read, list tools, call echo, the capability
/// matrix, and a local refusal of prompts.
async fn exercise(session: &Session, wire: &Wire) {
    // Capabilities: exactly what the server declared, flag by flag.
    let caps = session.capabilities();
    assert_eq!(Value::Object(caps.raw().clone()), declared());
    assert!(caps.has(Capability::Resources));
    assert!(caps.has_flag(Capability::Resources, Flag::Subscribe));
    assert!(!caps.has_flag(Capability::Resources, Flag::ListChanged));
    assert!(caps.has(Capability::Tools));
    assert!(!caps.has_flag(Capability::Tools, Flag::ListChanged));
    for absent in [
        Capability::Prompts,
        Capability::Logging,
        Capability::Completions,
    ] {
        assert!(!caps.has(absent), "{absent:?} was not declared");
    }
    assert_eq!(session.server_info().name, "capable-interop-rmcp");
    assert_eq!(
        session.instructions(),
        Some("Read docs://manual/current first.")
    );

    let resources = session.list_resources().await.expect("resources/list");
    assert_eq!(resources.len(), 1, "{resources:?}");
    assert_eq!(resources[0].uri, MANUAL);

    let read = session.read_resource(MANUAL).await.expect("resources/read");
    assert!(
        read.text().starts_with("Acceptance instructions (rmcp)"),
        "{}",
        read.text()
    );
    // rmcp sends no `annotations.lastModified`, so the revision is capable's digest.
    match read.revision() {
        Revision::Digest(d) => assert!(d.starts_with("sha256:"), "{d}"),
        other => panic!("expected a digest revision, got {other:?}"),
    }

    let tools = session.list_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert_eq!(tools[0].name, "echo");
    let args = json!({"message": "hello from capable"});
    let echoed = session
        .call_tool("echo", args.as_object())
        .await
        .expect("tools/call echo");
    assert_eq!(echoed.content[0]["type"], "text");
    assert_eq!(echoed.content[0]["text"], "hello from capable");

    // Prompts were not declared: refused locally, nothing written.
    let before = wire.sent().len();
    match session.list_prompts().await {
        Err(Error::Refused(refusal)) => eprintln!("refused locally: {refusal}"),
        other => panic!("prompts/list must be refused locally, got {other:?}"),
    }
    match session.get_prompt("greet", None).await {
        Err(Error::Refused(_)) => {}
        other => panic!("prompts/get must be refused locally, got {other:?}"),
    }
    assert_eq!(wire.sent().len(), before, "a refused request was sent");
    assert!(
        !wire
            .sent_methods()
            .iter()
            .any(|m| m.starts_with("prompts/")),
        "{:?}",
        wire.sent_methods()
    );
    assert!(
        session.violations().is_empty(),
        "{:?}",
        session.violations()
    );
}

#[tokio::test]
async fn auto_ends_modern_because_rmcp_answers_the_discover_probe() {
    within(async {
        let wire = Wire::default();
        let session = connect_stdio(&rmcp_server(), wire.options(ProtocolChoice::Auto))
            .await
            .expect("connect");
        // rmcp answers `server/discover` (sent with the 2026-07-28 `_meta`) with a
        // DiscoverResult listing 2026-07-28 among its supportedVersions, so capable
        // settles in the modern era on the probe alone: no `initialize`, no
        // `notifications/initialized`.
        assert_eq!(session.era(), Era::Modern, "sent: {:?}", wire.sent());
        assert_eq!(session.protocol_version(), ProtocolVersion::V2026_07_28);
        let answer = wire
            .all()
            .into_iter()
            .find(|(d, m)| *d == Direction::Received && m["id"] == wire.sent()[0]["id"])
            .map(|(_, m)| m)
            .expect("the probe was answered");
        assert!(
            answer["result"]["supportedVersions"]
                .as_array()
                .is_some_and(|v| v.contains(&json!("2026-07-28"))),
            "{answer}"
        );
        assert_eq!(answer["result"]["capabilities"], declared());

        exercise(&session, &wire).await;

        // Modern subscriptions: `subscriptions/listen`, acknowledged by rmcp.
        let mut listener = session
            .listen(&ListenFilter {
                resource_subscriptions: vec![MANUAL.into()],
                ..Default::default()
            })
            .await
            .expect("subscriptions/listen");
        match listener.recv().await.expect("the stream") {
            Some(ListenEvent::Acknowledged(ack)) => eprintln!("acknowledged: {ack}"),
            other => panic!("expected the acknowledgement, got {other:?}"),
        }
        listener.close();
        // The legacy method is refused locally in the modern era.
        assert!(matches!(
            session.subscribe(MANUAL).await,
            Err(Error::Refused(_))
        ));
        session.close().await;

        let methods = wire.sent_methods();
        assert_eq!(methods[0], "server/discover", "{methods:?}");
        assert!(
            !methods
                .iter()
                .any(|m| m == "initialize" || m == "notifications/initialized"),
            "{methods:?}"
        );
        wire.assert_schema_valid(ProtocolVersion::V2026_07_28);
        // Every modern request carries the `_meta` envelope.
        for request in wire
            .sent()
            .iter()
            .filter(|m| m.get("id").is_some() && m.get("method").is_some())
        {
            assert_eq!(
                request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
                "{request}"
            );
        }
    })
    .await
}

#[tokio::test]
async fn legacy_handshake_with_rmcp() {
    // rmcp agrees to the version capable asks for (the newest with a handshake).
    within(legacy(ProtocolChoice::Legacy, ProtocolVersion::V2025_11_25)).await
}

#[tokio::test]
async fn every_older_legacy_version_with_rmcp() {
    within(async {
        for version in [
            ProtocolVersion::V2024_11_05,
            ProtocolVersion::V2025_03_26,
            ProtocolVersion::V2025_06_18,
        ] {
            legacy(ProtocolChoice::Exact(version), version).await;
        }
    })
    .await
}

/// A legacy session under `choice` that negotiates `expected`: the scenario, legacy
/// subscriptions, the order of the handshake, and the schema of `expected`.
async fn legacy(choice: ProtocolChoice, expected: ProtocolVersion) {
    let wire = Wire::default();
    let session = connect_stdio(&rmcp_server(), wire.options(choice))
        .await
        .expect("connect");
    assert_eq!(session.era(), Era::Legacy);
    assert_eq!(session.protocol_version(), expected);

    exercise(&session, &wire).await;

    // Legacy subscriptions: subscribe + unsubscribe, both accepted by rmcp.
    session
        .subscribe(MANUAL)
        .await
        .expect("resources/subscribe");
    session
        .unsubscribe(MANUAL)
        .await
        .expect("resources/unsubscribe");
    session.close().await;

    // initialize first, and `notifications/initialized` is the first message sent
    // after its answer.
    let all = wire.all();
    let (init_at, init) = all
        .iter()
        .enumerate()
        .find(|(_, (d, m))| *d == Direction::Sent && m.get("method").is_some())
        .map(|(i, (_, m))| (i, m.clone()))
        .expect("a first request");
    assert_eq!(init["method"], "initialize", "{init}");
    let answer_at = all
        .iter()
        .position(|(d, m)| {
            *d == Direction::Received && m.get("method").is_none() && m["id"] == init["id"]
        })
        .expect("initialize was answered");
    assert!(answer_at > init_at);
    assert_eq!(
        all[answer_at].1["result"]["protocolVersion"],
        expected.as_str(),
        "{}",
        all[answer_at].1
    );
    assert_eq!(all[answer_at].1["result"]["capabilities"], declared());
    let next_sent = all[answer_at + 1..]
        .iter()
        .find(|(d, _)| *d == Direction::Sent)
        .map(|(_, m)| m.clone())
        .expect("something after the answer");
    assert_eq!(
        next_sent["method"], "notifications/initialized",
        "{next_sent}"
    );
    let methods = wire.sent_methods();
    assert!(
        !methods.iter().any(|m| m == "server/discover"),
        "{methods:?}"
    );
    assert!(
        !methods.iter().any(|m| m == "subscriptions/listen"),
        "{methods:?}"
    );
    wire.assert_schema_valid(expected);
}
