//! A config read anew by a running host: the servers added started, the removed ones
//! stopped with nothing left of their processes, the changed ones restarted, the
//! others untouched (the same process, the same session).

use std::sync::Arc;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_starts_the_added_stops_the_removed_restarts_the_changed_and_leaves_the_rest() {
    let marks = ["same", "changed", "removed", "added"].map(|m| marker(&format!("reload-{m}")));
    let [same, changed, removed, added] = &marks;
    let first = json!({"mcpServers": {
        "same": fixture("no-resources", &[], same),
        "changed": fixture("no-resources", &[], changed),
        "removed": fixture("no-resources", &[], removed),
    }});
    let file = ConfigFile::from_text(&first.to_string(), "reload.json", &|_| None).unwrap();
    let host = Host::from_config(&file, options());
    within(LIMIT, host.settled()).await;
    let kept_session = host.session("same").unwrap();
    let kept_pid = processes_marked(same);
    let old_pid = processes_marked(changed);
    assert_eq!((kept_pid.len(), old_pid.len()), (1, 1));
    assert_eq!(processes_marked(removed).len(), 1);
    let events = Recorded::start(&host);

    let mut changed_entry = fixture("no-resources", &[], changed);
    changed_entry["env"]["EXTRA"] = "1".into();
    let second = json!({"mcpServers": {
        "same": fixture("no-resources", &[], same),
        "changed": changed_entry,
        "added": fixture("no-resources", &[], added),
    }});
    let file = ConfigFile::from_text(&second.to_string(), "reload.json", &|_| None).unwrap();
    let done = within(LIMIT, host.reload(&file)).await.unwrap();
    assert_eq!(done.added, ["added"]);
    assert_eq!(done.removed, ["removed"]);
    assert_eq!(done.changed, ["changed"]);
    assert_eq!(done.unchanged, ["same"]);

    // The removed server is gone, processes and all, at once.
    assert_eq!(processes_marked(removed), Vec::<u32>::new());
    assert!(host.server("removed").is_none());
    within(LIMIT, host.settled()).await;
    let names: Vec<String> = host.servers().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["same", "changed", "added"], "changed in its place");
    for name in ["same", "changed", "added"] {
        assert!(host.server(name).unwrap().state.is_ready(), "{name}");
    }
    // The unchanged one was not touched: the same process, the same session.
    assert_eq!(processes_marked(same), kept_pid);
    assert!(Arc::ptr_eq(&kept_session, &host.session("same").unwrap()));
    assert!(kept_session.ping().await.is_ok());
    // The changed one runs anew.
    let new_pid = processes_marked(changed);
    assert_eq!(new_pid.len(), 1);
    assert_ne!(new_pid, old_pid);
    assert_eq!(processes_marked(added).len(), 1);
    let text = json!({"text": "hi"});
    let answer = host.call_tool("added/echo", text.as_object()).await;
    assert!(answer.is_ok(), "{answer:?}");

    let recorded = events
        .until(|all| states_of(all, "added").iter().any(ServerState::is_ready))
        .await;
    let said: Vec<(String, &str)> = recorded
        .iter()
        .filter_map(|e| match e {
            HostEvent::Reloaded { server, change } => Some((server.clone(), change.name())),
            _ => None,
        })
        .collect();
    assert_eq!(
        said,
        [
            ("removed".to_owned(), "removed"),
            ("changed".to_owned(), "changed"),
            ("added".to_owned(), "added")
        ]
    );
    assert!(states_of(&recorded, "same").is_empty(), "untouched");

    // The same file again changes nothing.
    assert!(within(LIMIT, host.reload(&file)).await.unwrap().is_empty());
    shut_down_leaving_nothing(&host, &[same, changed, added]).await;
    assert!(matches!(host.reload(&file).await, Err(HostError::ShutDown)));
}
