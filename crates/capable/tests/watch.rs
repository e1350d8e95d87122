//! `Session::watch` and the session events, against real processes: a tiny scripted
//! lying server (python3, inline) and the Python SDK server from `.peers` (its `touch`
//! tool publishes `notifications/resources/updated` on a `subscriptions/listen`
//! stream; see tests/peers/FINDINGS.md).

use std::path::PathBuf;
use std::time::Duration;

use capable::{
    connect_stdio, ClientOptions, Error, Method, ServerCommand, SessionEvent, WatchEvent,
    WatchMode, WatchPolicy,
};
use serde_json::json;

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
            SessionEvent::Notice(capable::core::Notice::UndeclaredNotification {
                method,
                needs,
            }) => {
                assert_eq!(method, "notifications/resources/list_changed");
                assert_eq!(needs, "resources.listChanged");
                undeclared += 1;
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
        .any(|n| matches!(n, capable::core::Notice::UndeclaredNotification { .. })));
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
