//! A host of many servers over a mixed config: fixture profiles (ready, refused for
//! their version, crashing soon after start, hanging at start, tools that change), a
//! legacy and a modern HTTP server (scripted in-test peers on 127.0.0.1), and broken
//! entries. States and reasons, bounded restarts, the merged view, routed calls,
//! `list_changed` that refreshes one server only, and a shutdown that leaves no
//! process behind (checked in /proc).
//!
//! Real processes: waits are bounded and assert states and order, never sleep for a
//! result.

#[path = "../common/mod.rs"]
mod common;
mod lifecycle;
mod lists;
mod pins;
mod reload;

use capable_test_support::http_peer;

use std::collections::BTreeMap;
use std::time::Duration;

use capable::config::ConfigFile;
use capable::host::{Host, HostError, HostEvent, HostOptions, ListKind, ServerError, ServerState};
use capable::internal::restart::RestartPolicy;
use capable::{ClientOptions, Era, Error};
use common::within;
use http_peer::{initialize_result, result, Peer, Reply, Seen};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(90);

fn id(s: &Seen) -> Value {
    s.rpc_id().cloned().unwrap_or(Value::Null)
}

/// A legacy (2025-11-25) Streamable HTTP server with one tool.
async fn legacy_http() -> Peer {
    Peer::start("/mcp", |s| match (s.method.as_str(), s.rpc_method()) {
        ("POST", Some("server/discover")) => Reply::Status(400, vec![]),
        ("POST", Some("initialize")) => Reply::Json(
            200,
            vec![("mcp-session-id".into(), "host-test".into())],
            initialize_result(&id(s), "2025-11-25", json!({"tools": {}})),
        ),
        ("POST", Some("tools/list")) => Reply::Json(
            200,
            vec![],
            result(
                &id(s),
                json!({"tools": [{"name": "search", "inputSchema": {"type": "object"}}]}),
            ),
        ),
        ("POST", Some("tools/call")) => Reply::Json(
            200,
            vec![],
            result(
                &id(s),
                json!({"content": [{"type": "text", "text": "found"}]}),
            ),
        ),
        ("POST", _) => Reply::Status(202, vec![]),
        ("GET", _) => Reply::Status(405, vec![]),
        _ => Reply::Status(200, vec![]),
    })
    .await
}

/// A modern (2026-07-28) HTTP server with one tool and one prompt.
async fn modern_http() -> Peer {
    Peer::start("/mcp", |s| match s.rpc_method() {
        Some("server/discover") => Reply::Json(200, vec![], result(&id(s), json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "prompts": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-peer", "version": "2"}}
        }))),
        Some("tools/list") => Reply::Json(200, vec![], result(&id(s), json!({
            "resultType": "complete", "tools": [{"name": "deploy", "inputSchema": {"type": "object"}}]
        }))),
        Some("prompts/list") => Reply::Json(200, vec![], result(&id(s), json!({
            "resultType": "complete", "prompts": [{"name": "review"}]
        }))),
        _ => Reply::Json(200, vec![], result(&id(s), json!({"resultType": "complete", "content": []}))),
    })
    .await
}

/// A unique mark in every fixture's environment, to find its processes in /proc.
fn marker(test: &str) -> String {
    format!("{test}-{}", std::process::id())
}

/// Shuts `host` down, then checks that no process of any of `marks` is left.
async fn shut_down_leaving_nothing(host: &Host, marks: &[&str]) {
    within(LIMIT, host.shutdown()).await;
    for mark in marks {
        assert_eq!(
            processes_marked(mark),
            Vec::<u32>::new(),
            "processes left behind"
        );
    }
}

fn fixture(profile: &str, extra: &[&str], mark: &str) -> Value {
    let command = common::fixture_with(profile, extra);
    json!({"command": command.program, "args": command.args, "env": {"CAPABLE_HOST_TEST": mark}})
}

/// The processes whose environment carries `mark` (zombies have none left).
fn processes_marked(mark: &str) -> Vec<u32> {
    capable_test_support::processes_with_env("CAPABLE_HOST_TEST", mark)
}

fn options() -> HostOptions {
    HostOptions {
        client: ClientOptions::default()
            .with_request_timeout(Duration::from_secs(3))
            .with_probe_timeout(Duration::from_millis(500)),
        restart: RestartPolicy {
            initial_delay: Duration::from_millis(50),
            max_delay: Duration::from_millis(200),
            max_attempts: 2,
            healthy_after: Duration::from_secs(60),
            jitter: 0.5,
        },
        seed: 15,
        ..HostOptions::default()
    }
}

/// Every event of a host from the moment it was made, kept in order.
struct Recorded(tokio::sync::watch::Receiver<Vec<HostEvent>>);

impl Recorded {
    fn start(host: &Host) -> Recorded {
        let (tx, rx) = tokio::sync::watch::channel(Vec::new());
        let mut events = host.events();
        tokio::spawn(async move {
            while let Ok(event) = events.recv().await {
                tx.send_modify(|all| all.push(event));
            }
        });
        Recorded(rx)
    }

    /// Waits until the events so far pass `pred`.
    async fn until(&self, pred: impl Fn(&[HostEvent]) -> bool) -> Vec<HostEvent> {
        let mut rx = self.0.clone();
        let all = rx.wait_for(|all| pred(all)).await.expect("recording");
        all.clone()
    }
}

fn states_of(events: &[HostEvent], name: &str) -> Vec<ServerState> {
    events
        .iter()
        .filter_map(|e| match e {
            HostEvent::State { server, state } if server == name => Some(state.clone()),
            _ => None,
        })
        .collect()
}

fn names(states: &[ServerState]) -> Vec<&'static str> {
    states.iter().map(ServerState::name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_config_settles_each_server_with_its_state_and_reason() {
    let mark = marker("mixed");
    let (legacy, modern) = (legacy_http().await, modern_http().await);
    let config = json!({"mcpServers": {
        "docs": fixture("read-only", &[], &mark),
        "tools": fixture("tools-changed", &[], &mark),
        "modern": fixture("modern", &[], &mark),
        "old": fixture("unsupported-version", &[], &mark),
        "crashy": fixture("crash-soon", &["--update-interval", "1ms"], &mark),
        "stuck": fixture("hang-start", &[], &mark),
        "missing": {"command": "/nonexistent/capable-host-test-server"},
        "broken": {"args": ["no command"]},
        "bad/name": fixture("read-only", &[], &mark),
        "legacy-http": {"type": "http", "url": legacy.url},
        "modern-http": {"type": "http", "url": modern.url},
        "gone-http": {"type": "http", "url": "http://127.0.0.1:1/mcp"},
    }});
    let file = ConfigFile::from_text(&config.to_string(), "mixed.json", &|_| None).unwrap();
    let host = Host::new(options());
    let events = Recorded::start(&host);
    for entry in &file.servers {
        host.add_entry(entry).unwrap();
    }
    within(LIMIT, host.settled()).await;

    let status: BTreeMap<String, _> = host
        .servers()
        .into_iter()
        .map(|s| (s.name.clone(), s))
        .collect();
    let state = |name: &str| status[name].state.clone();
    for ready in ["docs", "tools", "modern", "legacy-http", "modern-http"] {
        assert!(state(ready).is_ready(), "{ready}: {}", state(ready));
    }
    assert_eq!(status["docs"].era, Some(Era::Legacy));
    assert_eq!(status["modern"].era, Some(Era::Modern));
    assert_eq!(status["legacy-http"].era, Some(Era::Legacy));
    assert_eq!(status["modern-http"].era, Some(Era::Modern));
    assert_eq!(
        (status["docs"].resources, status["docs"].tools),
        (Some(2), None)
    );
    assert_eq!(status["tools"].tools, Some(2));
    assert_eq!(status["modern-http"].prompts, Some(1));
    assert!(status["docs"].handshake.is_some());

    // Refused for its version: never retried.
    let ServerState::Refused {
        error: ServerError::Session(Error::Negotiation(_)),
    } = state("old")
    else {
        panic!("old: {}", state("old"))
    };
    // What the host says now, its events said too (the recorder may be a step behind).
    let given_up = ["old", "crashy", "stuck", "gone-http", "missing"];
    let recorded = within(
        LIMIT,
        events.until(|all| {
            given_up.iter().all(|n| {
                states_of(all, n)
                    .last()
                    .is_some_and(ServerState::is_settled)
            })
        }),
    )
    .await;
    assert_eq!(names(&states_of(&recorded, "old")), ["starting", "refused"]);
    assert_eq!(status["old"].restarts, 0);

    // Broken entries: refused with their reason, nothing started.
    assert!(
        matches!(
            state("missing"),
            ServerState::Refused {
                error: ServerError::Session(Error::Spawn(_))
            }
        ),
        "{}",
        state("missing")
    );
    assert!(
        matches!(
            state("broken"),
            ServerState::Refused {
                error: ServerError::Config(_)
            }
        ),
        "{}",
        state("broken")
    );
    assert!(
        matches!(
            state("bad/name"),
            ServerState::Refused {
                error: ServerError::InvalidName { .. }
            }
        ),
        "{}",
        state("bad/name")
    );

    // Crashing, hanging, unreachable: restarted twice, with attempts in order, then failed.
    for (name, why) in [
        ("crashy", "exited"),
        ("stuck", "timeout"),
        ("gone-http", "transport"),
    ] {
        let ServerState::Failed { attempts, error } = state(name) else {
            panic!("{name}: {}", state(name))
        };
        assert_eq!(attempts, 2, "{name}");
        assert_eq!(error.failure().name(), why, "{name}: {error}");
        assert_eq!(status[name].restarts, 2, "{name}");
        let restarting: Vec<u32> = states_of(&recorded, name)
            .iter()
            .filter_map(|s| match s {
                ServerState::Restarting { attempt, delay, .. } => {
                    assert!(*delay <= Duration::from_millis(200), "{name}: {delay:?}");
                    Some(*attempt)
                }
                _ => None,
            })
            .collect();
        assert_eq!(restarting, [1, 2], "{name}");
    }
    let ServerState::Failed { error, .. } = state("crashy") else {
        unreachable!()
    };
    let Some(Error::ServerExited {
        status: Some(exit), ..
    }) = error.session_error()
    else {
        panic!("crashy: {error}")
    };
    assert_eq!(exit.code(), Some(3));

    // The merged view: every ready server's tools under server/tool, none of the others'.
    let tools: Vec<(String, String)> = host
        .tools()
        .into_iter()
        .map(|t| (t.name, t.server))
        .collect();
    for (name, server) in [
        ("tools/echo", "tools"),
        ("tools/grow", "tools"),
        ("modern/echo", "modern"),
        ("legacy-http/search", "legacy-http"),
        ("modern-http/deploy", "modern-http"),
    ] {
        assert!(
            tools.contains(&(name.into(), server.into())),
            "{name} in {tools:?}"
        );
    }
    assert!(
        tools.iter().all(|(_, s)| status[s].state.is_ready()),
        "{tools:?}"
    );
    assert_eq!(
        host.resources()
            .iter()
            .filter(|r| r.server == "docs")
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>(),
        ["docs/docs://manual/current", "docs/docs://manual/archive"]
    );
    assert_eq!(
        host.prompts()
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        ["modern-http/review"]
    );

    // Calls go to the owning server, through its gating table.
    let args = json!({"message": "hi"}).as_object().cloned();
    let echoed = host.call_tool("tools/echo", args.as_ref()).await.unwrap();
    assert_eq!(echoed.content[0]["text"], "hi");
    let found = host.call_tool("legacy-http/search", None).await.unwrap();
    assert_eq!(found.content[0]["text"], "found");
    let read = host
        .read_resource("docs/docs://manual/current")
        .await
        .unwrap();
    assert!(read.text().contains("Acceptance instructions"));
    match host.call_tool("docs/echo", None).await {
        Err(HostError::Server { server, error }) => {
            assert_eq!(server, "docs");
            assert!(matches!(*error, Error::Refused(_)), "nothing sent: {error}");
        }
        other => panic!("docs declares no tools: {other:?}"),
    }
    match host.call_tool("old/echo", None).await {
        Err(HostError::NotReady { server, state }) => {
            assert_eq!(server, "old");
            assert!(matches!(*state, ServerState::Refused { .. }), "{state}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        host.call_tool("echo", None).await,
        Err(HostError::NotQualified { .. })
    ));
    assert!(matches!(
        host.call_tool("nobody/echo", None).await,
        Err(HostError::UnknownServer { .. })
    ));

    // Shutdown: every server stopped, no process of theirs left.
    assert!(processes_marked(&mark).len() >= 3, "the ready fixtures run");
    within(LIMIT, host.shutdown()).await;
    assert!(host
        .servers()
        .iter()
        .all(|s| matches!(s.state, ServerState::Stopped)));
    assert_eq!(
        processes_marked(&mark),
        Vec::<u32>::new(),
        "processes left behind"
    );
}
