//! `capable ui --config FILE` follows its file while it serves (over plain HTTP and its
//! event stream, no browser): servers added, removed and changed follow in its list,
//! those left as they were keep their sessions (no second handshake); a file that
//! cannot be used changes nothing and the page hears why; SIGHUP reads the file anew
//! instead of stopping the inspector.

mod ui_support;

use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use ui_support::{fixture_entry, Ui};

/// Writes `text` as editors do: another file renamed into place.
fn rewrite(ui: &Ui, text: &str) {
    let path = ui.config_path();
    let next = path.with_extension("json.new");
    std::fs::write(&next, text).unwrap();
    std::fs::rename(&next, &path).unwrap();
}

/// The `initialize` requests sent, by server, among `seen`.
fn handshakes(seen: &[(String, Value)], server: &str) -> usize {
    seen.iter()
        .filter(|(event, d)| {
            event == "msg"
                && d["server"] == server
                && d["dir"] == "sent"
                && d["method"] == "initialize"
        })
        .count()
}

/// Events until one named `name` (kept in `seen`): its data.
#[track_caller]
fn until(rx: &Receiver<(String, Value)>, seen: &mut Vec<(String, Value)>, name: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (event, data) = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no {name} event; saw {seen:#?}"));
        seen.push((event.clone(), data.clone()));
        if event == name {
            return data;
        }
    }
}

fn names(servers: &Value) -> Vec<&str> {
    servers
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect()
}

#[test]
fn servers_follow_the_file_the_others_keep_their_sessions_and_a_bad_file_changes_nothing() {
    let config = |servers: Value| json!({ "mcpServers": servers }).to_string();
    let kept = fixture_entry(&["--profile", "read-only"]);
    let ui = Ui::with_config(&json!({"mcpServers": {
        "kept": kept,
        "changed": fixture_entry(&["--profile", "read-only"]),
        "removed": fixture_entry(&["--profile", "read-only"]),
    }}));
    let cookie = ui.cookie();
    ui.all_ready(&cookie, Duration::from_secs(10));
    let rx = ui.events();
    let mut seen = Vec::new();

    rewrite(
        &ui,
        &config(json!({
            "kept": kept,
            "changed": fixture_entry(&["--profile", "no-resources"]),
            "added": fixture_entry(&["--profile", "read-only"]),
        })),
    );
    let reloaded = until(&rx, &mut seen, "reloaded");
    assert_eq!(reloaded["added"], json!(["added"]), "{reloaded}");
    assert_eq!(reloaded["removed"], json!(["removed"]), "{reloaded}");
    assert_eq!(reloaded["changed"], json!(["changed"]), "{reloaded}");
    let servers = ui.settled(&cookie, Duration::from_secs(10));
    assert_eq!(names(&servers), ["kept", "changed", "added"]);
    assert!(
        servers
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["state"] == "ready"),
        "{servers:#}"
    );
    // The ring holds every message since the start (the replay of a fresh stream, read
    // until it pauses: every server is ready by now): the changed and the added server
    // connected anew, the one left as it was only once, at start.
    let replay = ui.events();
    let mut all = Vec::new();
    while let Ok(event) = replay.recv_timeout(Duration::from_millis(300)) {
        all.push(event);
    }
    assert_eq!(handshakes(&all, "kept"), 1, "its session kept: {all:#?}");
    assert_eq!(handshakes(&all, "changed"), 2, "restarted");
    assert_eq!(handshakes(&all, "added"), 1, "started");
    assert_eq!(handshakes(&all, "removed"), 1);
    // A page reaches the added server, and no longer the removed one.
    let added = ui.post(&cookie, "/api/ping", &json!({"server": "added"}));
    assert_eq!(added.status, 200, "{added:?}");
    let gone = ui.post(&cookie, "/api/ping", &json!({"server": "removed"}));
    assert_eq!(gone.status / 100, 4, "{gone:?}");

    // Not JSON: nothing changes, and the page hears why.
    rewrite(&ui, "{\"mcpServers\": {");
    let failed = until(&rx, &mut seen, "reload_failed");
    assert!(
        failed["why"].as_str().is_some_and(|w| !w.is_empty()),
        "{failed}"
    );
    // An entry broken anew: the whole file refused, the entry named.
    rewrite(
        &ui,
        &config(json!({"kept": kept, "changed": {"comand": "capable"}})),
    );
    let failed = until(&rx, &mut seen, "reload_failed");
    let why = failed["why"].as_str().unwrap_or_default();
    assert!(why.starts_with("mcpServers.changed: "), "{failed}");
    let servers = ui.settled(&cookie, Duration::from_secs(10));
    assert_eq!(names(&servers), ["kept", "changed", "added"]);

    // SIGHUP reads the file anew (still broken: said again) and the inspector goes on.
    // SAFETY: kill(2) takes plain integers; the PID is our running child's.
    unsafe {
        libc::kill(ui.pid() as i32, libc::SIGHUP);
    }
    let failed = until(&rx, &mut seen, "reload_failed");
    assert!(failed["why"]
        .as_str()
        .unwrap_or_default()
        .starts_with("mcpServers.changed: "));
    assert_eq!(ui.api_get(&cookie, "/api/servers").status, 200);
    assert_eq!(ui.interrupt(), Some(0));
}
