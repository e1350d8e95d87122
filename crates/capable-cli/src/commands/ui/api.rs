//! The inspector's commands: `GET /api/servers` for the state of everything, and one
//! `POST /api/VERB` (a JSON body naming the server) per thing a user can do.
//!
//! Answers are the JSON the CLI prints with `--json` wherever it has a shape: a read
//! is `capable read --json`'s, a server's `inspect` is `capable inspect --json`'s, a
//! watch's events are `capable watch --json`'s lines, an audit is `capable audit
//! --json`'s report, an error is `{"error": {"kind", "message", "exitCode"}}`. Every
//! request a command makes passes the server's gating table like any other: the page
//! cannot make capable send what the server did not declare.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, Response, StatusCode};
use capable::core::model::JsonObject;
use capable::Session;
use serde_json::{json, Value};

use super::events::Bus;
use super::servers::{ServerLookup, Servers};
use super::watches::Watches;
use crate::exit::CliError;

/// What every command shares.
pub struct App {
    /// The servers given at start.
    pub servers: Servers,
    /// Open watches.
    pub watches: Watches,
    /// Tool calls in flight.
    pub calls: super::calls::Calls,
    /// MCP Apps views, ready to be framed.
    pub apps: super::apps::Apps,
}

impl App {
    /// The commands over these servers.
    pub fn new(servers: Servers, bus: Bus) -> App {
        App {
            watches: Watches::new(bus.clone()),
            calls: super::calls::Calls::new(bus),
            apps: super::apps::Apps::default(),
            servers,
        }
    }
}

pub(super) type Shared = State<Arc<App>>;

/// A JSON answer, without any secret capable was given (as the CLI's stdout: a server
/// that echoes a header value back shows `***`).
pub fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let text = crate::secrets::scrub(&value.to_string()).into_owned();
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

pub(super) fn ok(value: Value) -> Response<Body> {
    json_response(StatusCode::OK, &value)
}

/// An error in the CLI's `--json` shape.
pub(super) fn error(status: StatusCode, e: &CliError) -> Response<Body> {
    let body =
        json!({"error": {"kind": e.kind(), "message": e.to_string(), "exitCode": e.exit_code()}});
    json_response(status, &body)
}

pub(super) fn usage(message: impl Into<String>) -> Response<Body> {
    error(StatusCode::BAD_REQUEST, &CliError::Usage(message.into()))
}

/// A client error: `409` when capable refused it locally (nothing was sent), else `502`.
pub(super) fn client(e: capable::Error) -> Response<Body> {
    let status = match e {
        capable::Error::Refused(_) => StatusCode::CONFLICT,
        _ => StatusCode::BAD_GATEWAY,
    };
    error(status, &CliError::Client(e))
}

fn lookup(e: ServerLookup) -> Response<Body> {
    let status = match e {
        ServerLookup::Unknown(_) => StatusCode::NOT_FOUND,
        _ => StatusCode::CONFLICT,
    };
    error(status, &CliError::NotOffered(e.to_string()))
}

/// A command's body: a JSON object with a string `server`.
pub(super) struct Command {
    pub(super) server: String,
    pub(super) body: Value,
}

impl Command {
    /// The command, or what is wrong with it (a usage error for the page).
    fn parse(bytes: &[u8]) -> Result<Command, String> {
        let body: Value =
            serde_json::from_slice(bytes).map_err(|e| format!("the command is not JSON: {e}"))?;
        let server = body
            .get("server")
            .and_then(Value::as_str)
            .ok_or("the command names no \"server\"")?
            .to_owned();
        Ok(Command { server, body })
    }

    pub(super) fn str(&self, key: &str) -> Result<&str, String> {
        self.body
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("the command has no string {key:?}"))
    }

    pub(super) fn object(&self, key: &str) -> Result<Option<JsonObject>, String> {
        match self.body.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map.clone())),
            Some(_) => Err(format!("{key:?} must be a JSON object")),
        }
    }
}

/// Runs `f` on the ready session the command names.
pub(super) async fn with_session(
    app: &App,
    bytes: &[u8],
    f: impl AsyncFnOnce(&Command, Arc<Session>) -> Response<Body>,
) -> Response<Body> {
    let command = match Command::parse(bytes) {
        Ok(c) => c,
        Err(m) => return usage(m),
    };
    match app.servers.session(&command.server).await {
        Ok(session) => f(&command, session).await,
        Err(e) => lookup(e),
    }
}

/// `GET /api/servers`.
pub async fn servers(State(app): Shared) -> Response<Body> {
    ok(app.servers.snapshot().await)
}

/// `POST /api/connect` (also reconnects).
pub async fn connect(State(app): Shared, bytes: Bytes) -> Response<Body> {
    connection(&app, &bytes, true).await
}

/// `POST /api/disconnect`.
pub async fn disconnect(State(app): Shared, bytes: Bytes) -> Response<Body> {
    connection(&app, &bytes, false).await
}

/// Connects (`up`) or disconnects a server, its watches stopped first either way.
async fn connection(app: &App, bytes: &Bytes, up: bool) -> Response<Body> {
    let command = match Command::parse(bytes) {
        Ok(c) => c,
        Err(m) => return usage(m),
    };
    let entry = match app.servers.get(&command.server) {
        Ok(entry) => entry,
        Err(e) => return lookup(e),
    };
    app.watches.stop_server(&command.server).await;
    let state = if up {
        app.servers.connect(&entry).await;
        "starting"
    } else {
        app.servers.disconnect(&entry).await;
        "disconnected"
    };
    ok(json!({"server": command.server, "state": state}))
}

/// `POST /api/read {server, uri}`: `capable read --json`.
pub async fn read(State(app): Shared, bytes: Bytes) -> Response<Body> {
    with_session(&app, &bytes, async |c, session| {
        let uri = match c.str("uri") {
            Ok(u) => u,
            Err(m) => return usage(m),
        };
        match session.read_resource(uri).await {
            Ok(read) => ok(json!(read)),
            Err(e) => client(e),
        }
    })
    .await
}

/// `POST /api/watch {server, uri, pollMs?}`: the watch's events follow on the stream.
pub async fn watch(State(app): Shared, bytes: Bytes) -> Response<Body> {
    with_session(&app, &bytes, async |c, session| {
        let uri = match c.str("uri") {
            Ok(u) => u.to_owned(),
            Err(m) => return usage(m),
        };
        let poll = c
            .body
            .get("pollMs")
            .and_then(Value::as_u64)
            .filter(|ms| *ms > 0)
            .map(|ms| std::time::Duration::from_millis(ms.max(100)));
        match app.watches.start(&c.server, session, uri, poll).await {
            Ok(id) => ok(json!({"watch": id})),
            Err(e) => error(StatusCode::CONFLICT, &e),
        }
    })
    .await
}

/// `POST /api/unwatch {server, watch}`.
pub async fn unwatch(State(app): Shared, bytes: Bytes) -> Response<Body> {
    let id = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v.get("watch").and_then(Value::as_u64));
    match id {
        Some(id) => ok(json!({"stopped": app.watches.stop(id).await})),
        None => usage("the command has no numeric \"watch\""),
    }
}

/// `POST /api/prompt {server, name, arguments}`.
pub async fn prompt(State(app): Shared, bytes: Bytes) -> Response<Body> {
    with_session(&app, &bytes, async |c, session| {
        let name = match c.str("name") {
            Ok(n) => n,
            Err(m) => return usage(m),
        };
        let arguments = match c.object("arguments") {
            Ok(a) => a,
            Err(m) => return usage(m),
        };
        match session.get_prompt(name, arguments.as_ref()).await {
            Ok(result) => ok(json!(result)),
            Err(e) => client(e),
        }
    })
    .await
}

/// `POST /api/ping {server}`.
pub async fn ping(State(app): Shared, bytes: Bytes) -> Response<Body> {
    with_session(&app, &bytes, async |_, session| {
        let started = std::time::Instant::now();
        match session.ping().await {
            Ok(()) => ok(json!({"ms": started.elapsed().as_secs_f64() * 1000.0})),
            Err(e) => client(e),
        }
    })
    .await
}

/// `POST /api/audit {server}`: `capable audit --json`'s report and its Markdown, from a
/// session of its own (the audit judges every message from the handshake on).
pub async fn audit(State(app): Shared, bytes: Bytes) -> Response<Body> {
    let command = match Command::parse(&bytes) {
        Ok(c) => c,
        Err(m) => return usage(m),
    };
    let target = match app.servers.target(&command.server) {
        Ok(t) => t,
        Err(e) => return error(StatusCode::CONFLICT, &CliError::NotOffered(e)),
    };
    match super::audit::run(&app.servers, &command.server, &target).await {
        Ok((report, markdown)) => ok(json!({"report": report, "markdown": markdown})),
        Err(e) => error(StatusCode::BAD_GATEWAY, &e),
    }
}

/// `POST /api/elicit {server, id, action, content?}`: the answer to a server's request
/// for input.
pub async fn elicit(State(app): Shared, bytes: Bytes) -> Response<Body> {
    let body: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let (Some(id), Some(action)) = (
        body.get("id").and_then(Value::as_u64),
        body.get("action").and_then(Value::as_str),
    ) else {
        return usage("the answer needs a numeric \"id\" and an \"action\"");
    };
    let content = body.get("content").cloned().filter(Value::is_object);
    match app.servers.elicitations.answer(id, action, content) {
        Ok(()) => ok(json!({"id": id, "action": action})),
        Err(e) => error(StatusCode::CONFLICT, &CliError::Usage(e.to_string())),
    }
}
