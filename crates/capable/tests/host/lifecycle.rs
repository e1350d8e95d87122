//! One server's life in a host: restarted after a crash with its lists back, its
//! stderr followed live, disconnected and reconnected by hand while the others go on.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_after_it_was_ready_is_restarted_with_its_lists_back() {
    let mark = marker("restart");
    let config = json!({"mcpServers": {
        "crashy": fixture("crash-soon", &["--update-interval", "3s"], &mark),
    }});
    let file = ConfigFile::from_text(&config.to_string(), "restart.json", &|_| None).unwrap();
    let mut opts = options();
    opts.restart.max_attempts = 1;
    let host = Host::new(opts);
    let events = Recorded::start(&host);
    host.add_entry(&file.servers[0]).unwrap();
    let failed = |all: &[HostEvent]| {
        states_of(all, "crashy")
            .iter()
            .any(|s| matches!(s, ServerState::Failed { .. }))
    };
    let recorded = within(LIMIT, events.until(failed)).await;
    // Up, down (its tools leave the merged view), up again with its tools, down for good.
    assert_eq!(
        names(&states_of(&recorded, "crashy")),
        ["starting", "ready", "restarting", "ready", "failed"]
    );
    let tool_changes = recorded
        .iter()
        .filter(|e| matches!(e, HostEvent::ListChanged { server, list: ListKind::Tools } if server == "crashy"))
        .count();
    assert_eq!(tool_changes, 4, "listed, dropped, listed, dropped");
    assert!(host.tools().is_empty());
    let status = host.server("crashy").unwrap();
    assert_eq!(status.restarts, 1);
    assert!(
        matches!(status.state, ServerState::Failed { attempts: 1, .. }),
        "{}",
        status.state
    );
    shut_down_leaving_nothing(&host, &[&mark]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_stderr_reaches_the_host_live_with_its_secrets_scrubbed() {
    let mark = marker("stderr");
    let secret = "stderr-test-secret-0123456789";
    let mut tools = fixture("no-resources", &[], &mark);
    tools["env"]["API_TOKEN"] = json!(secret);
    let config = json!({"mcpServers": {
        "tools": tools,
        "docs": fixture("read-only", &[], &mark),
    }});
    let file = ConfigFile::from_text(&config.to_string(), "stderr.json", &|_| None).unwrap();
    let host = Host::from_config(&file, options());
    within(LIMIT, host.settled()).await;
    let mut events = host.events();
    let arguments = json!({"message": format!("hello {secret}")});
    let called = host
        .call_tool("tools/echo", arguments.as_object())
        .await
        .unwrap();
    assert_eq!(called.content[0]["text"], format!("hello {secret}"));
    // The line the fixture wrote while answering, as a host event of its server.
    let line = within(LIMIT, async {
        loop {
            if let HostEvent::Stderr { server, line } = events.recv().await.unwrap() {
                assert_eq!(server, "tools", "only the server that wrote it");
                return line;
            }
        }
    })
    .await;
    assert_eq!(&*line, "capable fixture: echo hello ***");
    let tail = host.session("tools").unwrap().stderr_tail();
    assert!(tail.ends_with("capable fixture: echo hello ***"), "{tail}");
    shut_down_leaving_nothing(&host, &[&mark]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_is_disconnected_and_reconnected_by_hand_while_the_others_go_on() {
    let (mark_a, mark_b) = (marker("by-hand-a"), marker("by-hand-b"));
    let config = json!({"mcpServers": {
        "a": fixture("no-resources", &[], &mark_a),
        "b": fixture("no-resources", &[], &mark_b),
        "broken": {"args": ["no command"]},
    }});
    let file = ConfigFile::from_text(&config.to_string(), "by-hand.json", &|_| None).unwrap();
    let host = Host::new(options());
    let events = Recorded::start(&host);
    for entry in &file.servers {
        host.add_entry(entry).unwrap();
    }
    within(LIMIT, host.settled()).await;
    let tools = || -> Vec<String> {
        host.tools()
            .into_iter()
            .map(|t| t.name)
            .filter(|n| n.ends_with("/echo"))
            .collect()
    };
    assert_eq!(tools(), ["a/echo", "b/echo"]);
    let first = processes_marked(&mark_a);
    assert_eq!(first.len(), 1, "{first:?}");

    // Disconnected: its process gone, its tools out of the view, calls refused
    // locally; the other server untouched.
    within(LIMIT, host.disconnect("a")).await.unwrap();
    assert!(matches!(
        host.server("a").unwrap().state,
        ServerState::Stopped
    ));
    assert_eq!(processes_marked(&mark_a), Vec::<u32>::new());
    assert_eq!(tools(), ["b/echo"]);
    assert!(matches!(
        host.call_tool("a/echo", None).await,
        Err(HostError::NotReady { .. })
    ));
    assert!(host.session("b").unwrap().ping().await.is_ok());
    assert_eq!(processes_marked(&mark_b).len(), 1);

    // Connected again: a new process, its tools back.
    within(LIMIT, host.reconnect("a")).await.unwrap();
    within(LIMIT, host.settled()).await;
    assert!(host.server("a").unwrap().state.is_ready());
    assert_eq!(tools(), ["a/echo", "b/echo"]);
    let second = processes_marked(&mark_a);
    assert_eq!(second.len(), 1);
    assert_ne!(second, first, "a new server process");

    // A ready server reconnected: its old session closed first, then a new one.
    within(LIMIT, host.reconnect("a")).await.unwrap();
    within(LIMIT, host.settled()).await;
    let third = processes_marked(&mark_a);
    assert_eq!(third.len(), 1, "the old process is gone: {third:?}");
    assert_ne!(third, second);
    let recorded = within(LIMIT, events.until(|all| states_of(all, "a").len() >= 7)).await;
    assert_eq!(
        names(&states_of(&recorded, "a")),
        ["starting", "ready", "stopped", "starting", "ready", "starting", "ready"]
    );
    assert_eq!(
        names(&states_of(&recorded, "b")),
        ["starting", "ready"],
        "the other server never noticed"
    );
    assert_eq!(
        host.server("a").unwrap().restarts,
        0,
        "not the policy's restarts"
    );

    // What cannot be reconnected says why; nothing else changes.
    assert!(matches!(
        host.reconnect("nope").await,
        Err(HostError::UnknownServer { .. })
    ));
    assert!(matches!(
        host.reconnect("broken").await,
        Err(HostError::NotReady { .. })
    ));
    host.disconnect("broken").await.unwrap();
    assert!(matches!(
        host.server("broken").unwrap().state,
        ServerState::Refused { .. }
    ));

    shut_down_leaving_nothing(&host, &[&mark_a, &mark_b]).await;
    assert!(matches!(
        host.reconnect("a").await,
        Err(HostError::ShutDown)
    ));
    assert!(matches!(
        host.server("a").unwrap().state,
        ServerState::Stopped
    ));
}
