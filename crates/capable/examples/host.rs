//! A multi-server host in a page: every server of an MCP config started at once and
//! kept alive, their states shown, their tools merged under `server/tool`, one call
//! routed, then every change followed until Ctrl-C; everything shut down at the end.
//!
//! ```text
//! cargo run -p capable --example host -- .mcp.json                       # list, then follow
//! cargo run -p capable --example host -- .mcp.json docs/echo '{"message":"hi"}'
//! cargo run -p capable --example host                                    # built-in servers
//! ```

use capable::config::ConfigFile;
use capable::host::{Host, HostEvent, HostOptions};
use tokio::sync::broadcast::error::RecvError;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let file = match args.next().filter(|a| a != "-") {
        Some(path) => ConfigFile::load(Some(path.as_ref()))?,
        None => built_in()?,
    };

    let host = Host::new(HostOptions::default());
    let mut events = host.events(); // before the servers start: no event is missed
    for entry in &file.servers {
        host.add_entry(entry)?; // a broken entry becomes a refused server, not an error
    }
    host.settled().await; // every server ready, or given up with its reason

    for server in host.servers() {
        println!("{:<12} {}", server.name, server.state);
    }
    for tool in host.tools() {
        let about = tool.tool.description.as_deref().unwrap_or("");
        println!("  {:<24} {about}", tool.name);
    }

    if let Some(tool) = args.next() {
        let arguments = args.next().map(|a| serde_json::from_str(&a)).transpose()?;
        match host.call_tool(&tool, arguments.as_ref()).await {
            Ok(result) => {
                for block in &result.content {
                    match block.get("text").and_then(|t| t.as_str()) {
                        Some(text) => println!("{text}"),
                        None => println!("{block}"),
                    }
                }
            }
            Err(e) => println!("{tool}: {e}"), // a typed HostError: not ready, refused, …
        }
    } else {
        println!("following the servers; Ctrl-C to stop");
        loop {
            let event = tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                event = events.recv() => event,
            };
            match event {
                Ok(HostEvent::State { server, state }) => println!("{server}: {state}"),
                Ok(HostEvent::ListChanged { server, list }) => {
                    println!(
                        "{server}: its {list:?} changed; the host has {} tools",
                        host.tools().len()
                    )
                }
                Ok(HostEvent::Violation { server, violation }) => println!("{server}: {violation}"),
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => {} // host.servers() has the state they led to
                Err(RecvError::Closed) => break,
            }
        }
    }
    host.shutdown().await; // every session closed, every server's process group with it
    Ok(())
}

/// Built-in fixture servers (the `capable` binary next to this example): ready ones, one
/// refused for its protocol version, one that crashes soon after every start.
fn built_in() -> Result<ConfigFile, Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let capable = exe
        .parent()
        .and_then(|examples| examples.parent())
        .map(|dir| dir.join("capable").display().to_string())
        .ok_or("cannot locate the capable binary")?;
    let fixture = |profile: &str| serde_json::json!({"command": capable, "args": ["fixture", "--profile", profile]});
    let config = serde_json::json!({"mcpServers": {
        "docs": fixture("read-only"),
        "tools": fixture("tools-changed"),
        "modern": fixture("modern"),
        "old": fixture("unsupported-version"),
        "crashy": fixture("crash-soon"),
    }});
    Ok(ConfigFile::from_text(
        &config.to_string(),
        "built-in",
        &|_| None,
    )?)
}
