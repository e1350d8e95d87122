//! The merged lists: a `list_changed` from one server refreshes only its own tools, on
//! a legacy server's notification as on a modern server's listen stream.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_from_one_server_refreshes_only_its_tools() {
    let mark = marker("changed");
    let config = json!({"mcpServers": {
        "a": fixture("tools-changed", &[], &mark),
        "b": fixture("tools-changed", &[], &mark),
        "docs": fixture("read-only", &[], &mark),
    }});
    let file = ConfigFile::from_text(&config.to_string(), "changed.json", &|_| None).unwrap();
    let host = Host::from_config(&file, options());
    within(LIMIT, host.settled()).await;
    let before_b: Vec<String> = host
        .tools()
        .into_iter()
        .filter(|t| t.server == "b")
        .map(|t| t.name)
        .collect();
    assert_eq!(before_b, ["b/echo", "b/grow"]);

    let mut events = host.events();
    let grown = host.call_tool("a/grow", None).await.unwrap();
    assert_eq!(grown.content[0]["text"], "added grown-1");
    // The refresh of a's tools, then the notification that caused it: nothing of b's.
    let mut seen = Vec::new();
    within(LIMIT, async {
        loop {
            let event = events.recv().await.unwrap();
            let done = matches!(&event, HostEvent::Notification { server, notification }
                if server == "a" && notification.method == "notifications/tools/list_changed");
            seen.push(event);
            if done {
                break;
            }
        }
    })
    .await;
    let changes: Vec<(String, ListKind)> = seen
        .iter()
        .filter_map(|e| match e {
            HostEvent::ListChanged { server, list } => Some((server.clone(), *list)),
            _ => None,
        })
        .collect();
    assert_eq!(changes, [("a".to_owned(), ListKind::Tools)]);
    let tools: Vec<String> = host.tools().into_iter().map(|t| t.name).collect();
    assert!(tools.contains(&"a/grown-1".to_owned()), "{tools:?}");
    assert_eq!(
        tools
            .iter()
            .filter(|t| t.starts_with("b/"))
            .collect::<Vec<_>>(),
        ["b/echo", "b/grow"]
    );
    assert_eq!(host.server("a").unwrap().tools, Some(3));
    shut_down_leaving_nothing(&host, &[&mark]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_servers_list_changed_on_its_listen_stream_refreshes_its_tools() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

    type Stream = Arc<Mutex<Option<(Value, UnboundedSender<String>)>>>;
    let stream: Stream = Arc::default();
    let changed = Arc::new(AtomicBool::new(false));
    let peer = Peer::start("/mcp", {
        let (stream, changed) = (stream.clone(), changed.clone());
        move |s| match s.rpc_method() {
            Some("server/discover") => Reply::Json(200, vec![], result(&id(s), json!({
                "resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {"listChanged": true}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-peer", "version": "2"}}
            }))),
            Some("tools/list") => {
                let mut tools = vec![json!({"name": "deploy", "inputSchema": {"type": "object"}})];
                if changed.load(Ordering::SeqCst) {
                    tools.push(json!({"name": "rollback", "inputSchema": {"type": "object"}}));
                }
                Reply::Json(200, vec![], result(&id(s), json!({"resultType": "complete", "tools": tools})))
            }
            Some("subscriptions/listen") => {
                let (tx, rx) = unbounded_channel();
                let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                    "params": {"notifications": s.body.as_ref().unwrap()["params"]["notifications"],
                        "_meta": {"io.modelcontextprotocol/subscriptionId": id(s)}}});
                tx.send(http_peer::event(None, &ack)).unwrap();
                *stream.lock().unwrap() = Some((id(s), tx));
                Reply::Stream(rx)
            }
            _ => Reply::Json(200, vec![], result(&id(s), json!({"resultType": "complete", "content": []}))),
        }
    })
    .await;
    let config = json!({"mcpServers": {"cloud": {"type": "http", "url": peer.url}}});
    let file = ConfigFile::from_text(&config.to_string(), "modern.json", &|_| None).unwrap();
    let host = Host::from_config(&file, options());
    within(LIMIT, host.settled()).await;
    assert_eq!(host.server("cloud").unwrap().era, Some(Era::Modern));
    let tools = || host.tools().into_iter().map(|t| t.name).collect::<Vec<_>>();
    assert_eq!(tools(), ["cloud/deploy"]);

    // The host listens for what the server declared: tools.listChanged.
    let listen = within(LIMIT, async {
        loop {
            if let Some(open) = stream.lock().unwrap().clone() {
                return open;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let sent = peer.posts("subscriptions/listen");
    assert_eq!(
        sent[0].body.as_ref().unwrap()["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    let mut events = host.events();
    changed.store(true, Ordering::SeqCst);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": listen.0}}});
    listen.1.send(http_peer::event(None, &note)).unwrap();
    within(LIMIT, async {
        loop {
            if let HostEvent::ListChanged {
                server,
                list: ListKind::Tools,
            } = events.recv().await.unwrap()
            {
                assert_eq!(server, "cloud");
                return;
            }
        }
    })
    .await;
    assert_eq!(tools(), ["cloud/deploy", "cloud/rollback"]);
    within(LIMIT, host.shutdown()).await;
}
