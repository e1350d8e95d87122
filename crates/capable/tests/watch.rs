//! `Session::watch` and the session events, against real processes — a tiny scripted
//! lying server (python3, inline) and the Python SDK server from `.peers` (its `touch`
//! tool publishes `notifications/resources/updated` on a `subscriptions/listen`
//! stream; see tests/peers/FINDINGS.md) — and, for the poll schedule, a scripted
//! in-process server under tokio's paused clock.

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::{
    connect_stdio, ClientOptions, Error, Method, ProtocolVersion, ServerCommand, SessionEvent,
    WatchEvent, WatchMode, WatchPolicy,
};
use common::{within, Scripted, Wire};
use serde_json::{json, Value};
use tokio::time::Instant;

const MANUAL: &str = "docs://manual/current";

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// A legacy server that declares `resources.subscribe`, answers `resources/subscribe`
/// with -32601, and sends a `list_changed` it never declared.
const LIAR: &str = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method, i = m["method"], m["id"]
    def answer(result=None, error=None):
        out = {"jsonrpc": "2.0", "id": i}
        if error: out["error"] = error
        else: out["result"] = result
        print(json.dumps(out), flush=True)
    if method == "initialize":
        answer({"protocolVersion": "2025-06-18", "capabilities": {"resources": {"subscribe": True}},
                "serverInfo": {"name": "liar", "version": "9.9.9"}})
    elif method == "resources/read":
        print(json.dumps({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}), flush=True)
        answer({"contents": [{"uri": m["params"]["uri"], "text": "same text"}]})
    else:
        answer(error={"code": -32601, "message": "Method not found"})
"#;

fn liar() -> ServerCommand {
    ServerCommand::new("python3", ["-c", LIAR])
}

fn legacy() -> ClientOptions {
    let mut o = ClientOptions::default();
    o.config.protocol = capable::ProtocolChoice::Legacy;
    o.config.timeouts.request = Duration::from_secs(10);
    o
}

async fn next(w: &mut capable::Watch<'_>) -> WatchEvent {
    tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .expect("a watch event within 10 s")
        .expect("a watch event")
}

#[tokio::test]
async fn a_violation_is_an_event_logged_once_and_the_watch_falls_back_to_the_policy() {
    let session = connect_stdio(&liar(), legacy()).await.expect("connect");
    let mut events = session.events();
    let mut watch = session
        .watch(MANUAL, WatchPolicy::poll(Duration::from_millis(50)))
        .expect("watch");
    assert!(matches!(
        next(&mut watch).await,
        WatchEvent::Mode {
            mode: WatchMode::Subscribe,
            ..
        }
    ));
    let WatchEvent::Violation(v) = next(&mut watch).await else {
        panic!("expected the violation")
    };
    assert_eq!(v.method, Method::Subscribe);
    assert_eq!(v.capability, "resources.subscribe");
    assert_eq!(v.server.version, "9.9.9");
    assert_eq!(v.response["error"]["code"], -32601);
    assert!(matches!(
        next(&mut watch).await,
        WatchEvent::Mode {
            mode: WatchMode::Poll,
            interval: Some(_),
            ..
        }
    ));
    assert!(matches!(next(&mut watch).await, WatchEvent::Revision(_)));
    // Polling goes on (same text: no new revision is reported) for a few reads.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), watch.next())
            .await
            .is_err()
    );
    watch.close().await.expect("close");

    // The event stream saw the violation (once) and the undeclared notifications.
    let mut violations = 0;
    let mut undeclared = 0;
    while let Ok(e) = events.try_recv() {
        match e {
            SessionEvent::Violation(v) => {
                assert_eq!(v.method, Method::Subscribe);
                violations += 1;
            }
            SessionEvent::Notice(notice) => {
                if let capable::internal::Notice::UndeclaredNotification { method, needs } = *notice
                {
                    assert_eq!(method, "notifications/resources/list_changed");
                    assert_eq!(needs, "resources.listChanged");
                    undeclared += 1;
                }
            }
            _ => {}
        }
    }
    assert_eq!(violations, 1);
    assert!(undeclared >= 2, "one per read: {undeclared}");
    assert_eq!(session.violations().len(), 1);
    assert!(session
        .notices()
        .iter()
        .any(|n| matches!(n, capable::internal::Notice::UndeclaredNotification { .. })));
    // Never retried: the method is marked broken.
    assert!(matches!(
        session.subscribe(MANUAL).await,
        Err(Error::Refused(capable::Refusal::MarkedBroken { .. }))
    ));
    session.close().await;
}

#[tokio::test]
async fn without_a_policy_the_violation_ends_the_watch() {
    let session = connect_stdio(&liar(), legacy()).await.expect("connect");
    let mut watch = session
        .watch(MANUAL, WatchPolicy::default())
        .expect("watch");
    assert!(matches!(next(&mut watch).await, WatchEvent::Mode { .. }));
    assert!(matches!(next(&mut watch).await, WatchEvent::Violation(_)));
    match watch.next().await {
        Err(Error::Violation(v)) => assert_eq!(v.server.name, "liar"),
        other => panic!("expected the violation as the end: {other:?}"),
    }
    watch.close().await.expect("close");
    // A second watch in the same session is refused locally: the method is broken.
    assert!(matches!(
        session.watch(MANUAL, WatchPolicy::default()),
        Err(Error::Refused(capable::Refusal::MarkedBroken { .. }))
    ));
    session.close().await;
}

fn python_peer() -> Option<ServerCommand> {
    if std::env::var("CAPABLE_SKIP_PEERS").is_ok_and(|v| v == "1") {
        eprintln!("CAPABLE_SKIP_PEERS=1: skipping a real-peer test");
        return None;
    }
    let root = workspace();
    let python = root.join(".peers/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `.ci/install-peers` (or set CAPABLE_SKIP_PEERS=1)",
        python.display()
    );
    Some(ServerCommand::new(
        python.display().to_string(),
        [root
            .join("tests/peers/python_server.py")
            .display()
            .to_string()],
    ))
}

#[tokio::test]
async fn python_sdk_listen_sees_an_update_made_by_another_request() {
    let Some(server) = python_peer() else { return };
    let options = ClientOptions::default().with_request_timeout(Duration::from_secs(10));
    let session = connect_stdio(&server, options).await.expect("connect");
    assert_eq!(session.era(), capable::Era::Modern);
    let mut watch = session
        .watch(MANUAL, WatchPolicy::default())
        .expect("watch");
    assert!(matches!(
        next(&mut watch).await,
        WatchEvent::Mode {
            mode: WatchMode::Listen,
            ..
        }
    ));
    let WatchEvent::Revision(first) = next(&mut watch).await else {
        panic!("expected the first revision")
    };
    assert!(first.text().contains("(revision 0)"), "{}", first.text());
    // Another request on the same session changes the resource; the server publishes
    // the update on the listen stream and the watch re-reads.
    let args = json!({"uri": MANUAL});
    let touched = session
        .call_tool("touch", args.as_object())
        .await
        .expect("touch");
    assert_eq!(touched.is_error, Some(false));
    let WatchEvent::Revision(second) = next(&mut watch).await else {
        panic!("expected a new revision")
    };
    assert!(second.text().contains("(revision 1)"), "{}", second.text());
    assert_ne!(first.revision(), second.revision());
    watch.close().await.expect("close");
    assert!(session.violations().is_empty());
    session.close().await;
}

/// A 2026-07-28 server scripted in-process that declares `resources: {}` and answers
/// every read with the same text, fresh for `ttl_ms`; it records when each read
/// arrived (on tokio's clock).
fn modern_with_ttl(ttl_ms: u64, reads: Arc<Mutex<Vec<Instant>>>) -> Scripted {
    Scripted::new(Box::new(move |msg: &Value| {
        let id = msg["id"].clone();
        match msg["method"].as_str() {
            Some("server/discover") => vec![capable_test_support::discover_result(
                &id,
                json!({"resources": {}}),
            )],
            Some("resources/read") => {
                reads.lock().unwrap().push(Instant::now());
                vec![json!({"jsonrpc": "2.0", "id": id, "result": {
                    "resultType": "complete",
                    "contents": [{"uri": MANUAL, "mimeType": "text/plain", "text": "the same text"}],
                    "ttlMs": ttl_ms,
                    "cacheScope": "public"
                }})]
            }
            _ => Vec::new(),
        }
    }))
}

#[tokio::test(start_paused = true)]
async fn polling_a_modern_server_waits_for_the_reads_ttl() {
    within(Duration::from_secs(20), async {
        // The server says a read stays fresh for 1 s; the host asks to poll every 100 ms.
        let ttl = Duration::from_millis(1000);
        let reads = Arc::new(Mutex::new(Vec::new()));
        let wire = Wire::default();
        let session = capable::connect(modern_with_ttl(1000, reads.clone()), wire.options())
            .await
            .expect("connect");
        let started = Instant::now();
        let mut watch = session
            .watch(MANUAL, WatchPolicy::poll(Duration::from_millis(100)))
            .expect("watch");
        let mut events = Vec::new();
        let watching = tokio::time::timeout(Duration::from_millis(3200), async {
            loop {
                events.push(watch.next().await.expect("a watch event"));
            }
        })
        .await;
        assert!(watching.is_err(), "the watch ended by itself: {events:?}");
        watch.close().await.expect("close");
        session.close().await;

        // Polling from the start (no subscription is declared); the text never changes,
        // so one revision.
        assert!(
            matches!(
                events[..],
                [
                    WatchEvent::Mode {
                        mode: WatchMode::Poll,
                        ..
                    },
                    WatchEvent::Revision(_)
                ]
            ),
            "{events:?}"
        );
        // At 100 ms there would be 33 reads; the ttl allows one now and one per second.
        let at: Vec<Duration> = reads.lock().unwrap().iter().map(|t| *t - started).collect();
        assert_eq!(
            at,
            [0, 1000, 2000, 3000].map(Duration::from_millis),
            "the reads in a paused 3.2 s"
        );
        for pair in at.windows(2) {
            assert!(
                pair[1] - pair[0] >= ttl,
                "a read came sooner than the ttl after the previous one: {at:?}"
            );
        }
        assert_eq!(wire.sent_requests("resources/read").len(), at.len());
        wire.assert_schema_valid(ProtocolVersion::V2026_07_28);
    })
    .await
}
