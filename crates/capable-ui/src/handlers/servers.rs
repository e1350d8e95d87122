//! The servers: `GET /api/servers` (the state of everything), connect and disconnect
//! one, ping it, export it (its `mcpServers` entry, a `capable` command), accept a
//! definition its pins hold back.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use serde_json::json;

use crate::extract::{Answer, Command, Deadline, OnServer, Reply};
use crate::state::AppState;

/// `GET /api/servers`: every server as the page shows it — its state with the
/// reason, and once ready `capable inspect --json`'s report, the capability matrix,
/// its lists, violations, notices and stderr.
pub async fn list(State(app): State<Arc<AppState>>) -> Reply {
    Reply(app.servers.snapshot())
}

/// `POST /api/connect {server}`: connects it again (its session, if any, closed
/// first; its watches stopped).
pub async fn connect(State(app): State<Arc<AppState>>, Command(c): Command<OnServer>) -> Answer {
    app.watches.stop_server(&c.server).await;
    app.servers.reconnect(&c.server).await?;
    Ok(Reply(json!({"server": c.server, "state": "starting"})))
}

/// `POST /api/disconnect {server}`: its watches stopped, its session closed (its
/// process group with it).
pub async fn disconnect(State(app): State<Arc<AppState>>, Command(c): Command<OnServer>) -> Answer {
    app.watches.stop_server(&c.server).await;
    app.servers.disconnect(&c.server).await?;
    Ok(Reply(json!({"server": c.server, "state": "disconnected"})))
}

/// `POST /api/ping {server}`: the round trip in milliseconds.
pub async fn ping(
    State(app): State<Arc<AppState>>,
    deadline: Deadline,
    Command(c): Command<OnServer>,
) -> Answer {
    let session = app.servers.session(&c.server)?;
    let started = Instant::now();
    deadline.run(session.ping()).await?;
    Ok(Reply(
        json!({"ms": started.elapsed().as_secs_f64() * 1000.0}),
    ))
}

/// `POST /api/export {server}`: the server as the person may take it elsewhere — its
/// `mcpServers` entry and the `capable` command that reaches it (secret values as
/// `***`).
pub async fn export(State(app): State<Arc<AppState>>, Command(c): Command<OnServer>) -> Answer {
    let target = app.servers.target(&c.server)?;
    Ok(Reply(json!({
        "server": c.server,
        "mcpServers": {(c.server.clone()): crate::export::entry(&target)},
        "command": crate::export::command(&target),
    })))
}

/// `{server, name}`: a definition that waits in the pins.
#[derive(serde::Deserialize)]
pub struct Pinned {
    server: String,
    name: String,
}

/// `POST /api/pins/accept {server, name}`: the tool or prompt pinned as the server lists
/// it now (the lock file written), its list read again so that it is offered.
pub async fn accept_pin(State(app): State<Arc<AppState>>, Command(c): Command<Pinned>) -> Answer {
    Ok(Reply(app.servers.accept_pin(&c.server, &c.name).await?))
}
