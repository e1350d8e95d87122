//! `capable bridge --listen ADDR:PORT`: the bridge as a Streamable HTTP server for its
//! host, both eras at `/mcp`, instead of stdio.
//!
//! | the host | the listener |
//! |---|---|
//! | POSTs `initialize` without `Mcp-Session-Id` | a new legacy session (its own server behind), its id in `Mcp-Session-Id` |
//! | POSTs with `Mcp-Session-Id` | that session's (an unknown id: `404`, so the host starts anew; with a seal key, another replica's sealed session is continued: `sealed.rs`) |
//! | POSTs anything else without a session | the 2026-07-28 hosts' (stateless): its headers must agree with its body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`; else `400`, `-32020`), and `initialize` is no method there (`404`, `-32601`, no session); one server behind for each declaration (below), each request under an id of the bridge's (two hosts' ids never clash); `notifications/cancelled` is not taken (closing the stream cancels) |
//! | a request | its answer: JSON when it is all there is, else an SSE stream (progress first) that the answer ends |
//! | a notification or an answer | `202` |
//! | a batch, in a 2025-03-26 session | each message taken in turn; the answers to its requests as one JSON array (`202` when it has none) |
//! | `GET` with a session | the standalone SSE stream; with `Last-Event-ID`, the stream it names with what it missed |
//! | `DELETE` with a session | the session ends, and its server behind |
//! | `GET`, `DELETE` without one | `405` (2026-07-28 has neither) |
//!
//! A 2026-07-28 request's JSON-RPC error gets the HTTP status that revision gives it
//! (`400` for a missing envelope or an unsupported version, `404` for an unknown
//! method); a 2026-07-28 host that closes a request's stream cancels the request.
//! Every request passes the gate first (`gate.rs`: `Host`, `Origin`, the token), and
//! with `--auth-issuer` its caller is known (`identity.rs`: an OAuth access token, a
//! JWT verified or an opaque one asked of the issuer in `introspect.rs`; a session
//! and a 2026-07-28 server behind per caller), before its body is read.
//!
//! A 2026-07-28 host has no session: all it says of itself comes with each request, in
//! `_meta` — its version, `clientCapabilities` and `clientInfo` (one key, read with its
//! headers: [`judge_post_declared`]). The server behind is connected declaring exactly
//! that (a legacy server is asked only what the host can answer, and sees the host's
//! name), so hosts that declare differently are never served by the same connection: a
//! host that declared only `sampling` is never asked to elicit because another host
//! declared `elicitation`. Requests that declare the same share one task and one server
//! behind; they are a [`Pool`] as legacy sessions are (`pool.rs`).

mod answer;
mod batch;
mod bodies;
mod connections;
mod gate;
mod headers;
mod identity;
mod introspect;
mod login;
mod ops;
mod params;
mod pool;
mod queue;
mod sealed;

pub(crate) use sealed::sealed_caller;
mod session;
mod shared_level;
mod shared_subscriptions;
mod sse;

use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use capable::internal::auth::resource::Caller;
use capable::internal::jsonrpc::{codes, FramingError, Incoming};
use capable::internal::method::Method::{CallTool, ListTools};
use capable::internal::server::{decoded_header, judge_post_declared, Verdict};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use self::answer::{answer, busy, get, refused};
use self::gate::Gate;
use self::headers::{grant_headers, post_headers, public_authority, traceparent};
use self::pool::{Busy, Commands, InFlight, Pool};
use self::session::{Command, Kind, Posted};
use super::host::Target;
use crate::{BridgeError, ListenConfig};

/// How often, at most, sessions idle past `--session-idle` are looked for.
const SWEEP: Duration = Duration::from_secs(5);

/// What every request of the listener shares.
struct Listener {
    target: Arc<Target>,
    gate: Gate,
    /// Legacy sessions, by `Mcp-Session-Id`.
    sessions: Mutex<Pool>,
    /// 2026-07-28 hosts, by declaration (see the module documentation).
    modern: Mutex<Pool>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// How long a task with nothing in flight lives on.
    idle: Duration,
    /// The most messages of one batch.
    max_batch: usize,
    /// The most bytes a stream's reader may leave unread behind its first message.
    stream_buffer: usize,
    /// The largest body, and how long it may take to arrive.
    max_body: usize,
    body_timeout: Duration,
    /// The room for every body read at once.
    bodies: bodies::Bodies,
    /// What the tools' `Mcp-Param-*` headers must agree with.
    params: Arc<params::Params>,
    /// Who is calling, when the listener is a protected resource (`--auth-issuer`).
    identity: Option<Arc<identity::Identity>>,
    /// The replicas' key ring: legacy sessions sealed into their ids (`sealed.rs`).
    seal: Option<capable::internal::seal::KeyRing>,
}

impl Listener {
    /// A host's task, its audit lines naming `caller`, its spans `session` (a legacy
    /// session's id).
    fn spawn(&self, kind: Kind, caller: Option<&Arc<Caller>>, session: Option<&str>) -> Commands {
        let (tx, rx) = mpsc::unbounded_channel();
        let bound = self.stream_buffer;
        // A sealed legacy session is continued by any replica: shared with them.
        let replicated = kind == Kind::Legacy && self.seal.is_some();
        let seal = self.seal.clone();
        let run = session::run(self.target.clone(), kind, bound, replicated, seal, rx);
        // Counted among the sessions while it runs.
        let running = self.target.audit.metrics().session(kind == Kind::Legacy);
        let run = async move {
            let _running = running;
            run.await
        };
        let run = crate::traces::in_session(session, run);
        let task = tokio::spawn(crate::audit::as_caller(caller.cloned(), run));
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        // Those that ended are let go, so that nothing grows per session.
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
        tx
    }

    /// The task of the 2026-07-28 hosts that declare `declared` (`message` declares
    /// it): for a request, started if need be, with the request's hold on it; for a
    /// notification, the task if one runs.
    /// Two callers never share one: the key is the caller's and the declaration.
    fn modern(
        &self,
        message: &Incoming,
        declared: &str,
        caller: Option<&Arc<Caller>>,
    ) -> Result<Option<(Commands, Option<InFlight>)>, Busy> {
        let key = owned(caller, declared);
        let mut moderns = self.moderns();
        if !matches!(message, Incoming::Request { .. }) {
            return Ok(moderns.existing(&key).map(|tx| (tx, None)));
        }
        let spawn = || self.spawn(Kind::Modern, caller, None);
        let (tx, held) = moderns.task(&key, Instant::now(), spawn)?;
        Ok(Some((tx, Some(held))))
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn moderns(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.modern.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ends the tasks idle past their time, every [`SWEEP`].
    async fn sweep(&self) {
        // Often enough for a short idle time to be kept to, within half of it.
        let period = (self.idle / 2).clamp(Duration::from_millis(100), SWEEP);
        let mut every = tokio::time::interval(period);
        loop {
            every.tick().await;
            let now = Instant::now();
            let ended =
                self.sessions().expire(now, self.idle) + self.moderns().expire(now, self.idle);
            if ended > 0 {
                self.target.audit.record(
                    "expired",
                    serde_json::json!({"sessions": ended, "idleMs": self.idle.as_millis() as u64}),
                );
            }
        }
    }
}

/// The pool key of `id` (a session id, a declaration) for `caller`: another caller's
/// key is never the same, so a session id replayed by another identity is not found.
fn owned(caller: Option<&Arc<Caller>>, id: &str) -> String {
    match caller {
        Some(caller) => format!("{}{id}", caller.key()),
        None => id.to_owned(),
    }
}

/// Serves the target's server on `addr` until a signal comes.
pub async fn serve(target: Arc<Target>, args: &ListenConfig) -> Result<(), BridgeError> {
    let addr = args.addr;
    // Everything the flags say is checked (and the issuer reached) before anything
    // listens.
    let prepared = Prepared::new(target.clone(), args).await?;
    let socket = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|error| BridgeError::Bind { addr, error })?;
    let port = socket
        .local_addr()
        .map_err(|error| BridgeError::Bind { addr, error })?
        .port();
    let shown = match addr {
        SocketAddr::V6(a) => format!("http://[{}]:{port}/mcp", a.ip()),
        SocketAddr::V4(a) => format!("http://{}:{port}/mcp", a.ip()),
    };
    let prepared = prepared.on_port(port);
    target
        .audit
        .record("listening", serde_json::json!({"url": shown}));
    let bounds = connections::Bounds {
        max_connections: args.max_connections,
        header_timeout: args.header_timeout,
    };
    let router = prepared.router();
    prepared
        .run(connections::serve(socket, router, bounds))
        .await
}

/// The listener, ready to serve: its [`Router`] for any HTTP server, and what runs
/// beside it (idle sessions let go, every session ended when the bridge stops).
pub struct Prepared {
    listener: Arc<Listener>,
    /// `/healthz`, `/readyz`, `/metrics`.
    ops: Arc<ops::Ops>,
    /// `--metrics ADDR`: the port bound for them, served beside the listener.
    metrics_port: Option<ops::Port>,
}

impl Prepared {
    /// Checks `args` (tokens, origins; the issuer reached) and makes the listener for
    /// `args.addr` (whose port the `Host` gate expects on loopback).
    pub async fn new(target: Arc<Target>, args: &ListenConfig) -> Result<Prepared, BridgeError> {
        let addr = args.addr;
        let loopback = addr.ip().is_loopback();
        let origins = gate::checked(args)?;
        // The issuer is known before anything listens: unreachable, it stops the bridge.
        let identity = match &args.auth {
            Some(auth) => Some(Arc::new(identity::Identity::discover(auth).await?)),
            None => None,
        };
        if let Some(identity) = &identity {
            target.users.set_base(identity.resource().resource());
        }
        let ops = Arc::new(ops::Ops::new(target.audit.metrics().clone()));
        let metrics_port = ops::Port::of(args, &ops, &target.audit).await?;
        let listener = Listener {
            target: target.clone(),
            gate: Gate {
                loopback_port: loopback.then_some(addr.port()),
                token: args.token.clone(),
                origins,
                public_host: identity
                    .as_ref()
                    .and_then(|i| public_authority(i.resource().resource())),
            },
            sessions: Mutex::new(Pool::new(args.max_sessions)),
            modern: Mutex::new(Pool::new(args.max_sessions)),
            tasks: Mutex::new(Vec::new()),
            idle: args.session_idle,
            max_batch: args.max_batch,
            max_body: target.max_message(),
            stream_buffer: args.stream_buffer,
            body_timeout: args.body_timeout,
            bodies: bodies::Bodies::new(args.max_body_total),
            params: Arc::default(),
            identity,
            seal: args.seal.clone(),
        };
        Ok(Prepared {
            listener: Arc::new(listener),
            ops,
            metrics_port,
        })
    }

    /// The listener on `port` after all (it was bound to port 0).
    fn on_port(mut self, port: u16) -> Prepared {
        if let Some(listener) = Arc::get_mut(&mut self.listener) {
            if listener.gate.loopback_port.is_some() {
                listener.gate.loopback_port = Some(port);
            }
        }
        self
    }

    /// `/mcp` (and, as a protected resource, its metadata), every request through the
    /// gate and the bounds of bodies, batches and streams.
    pub fn router(&self) -> Router {
        let mut router = Router::new().route("/mcp", any(handle));
        let l = &self.listener;
        if let Some(identity) = &l.identity {
            router = identity::routes(router, identity.resource(), &l.gate);
            router = login::routes(router);
        }
        let checks = ops::Checks {
            gate: l.gate.clone(),
            metrics: self.metrics_port.is_none(),
            identity: l.identity.clone(),
            audit: l.target.audit.clone(),
        };
        router = ops::routes(router, &self.ops, checks);
        router.with_state(self.listener.clone())
    }

    /// Lets idle sessions go while `serving` runs, until it ends or the bridge's stop
    /// is signalled; then every session's server is shut down (within 10 s).
    pub async fn run(
        self,
        serving: impl std::future::Future<Output = ()>,
    ) -> Result<(), BridgeError> {
        let listener = self.listener;
        let target = listener.target.clone();
        let stop = target.stop.clone();
        let metrics = ops::serve(self.metrics_port);
        let stopped = tokio::select! {
            () = listener.sweep() => None,
            () = serving => None,
            () = metrics => None,
            signal = stop.stopped() => Some(signal),
        };
        // Every session's task ends as its commands do, shutting its server down.
        listener.sessions().clear();
        listener.moderns().clear();
        let tasks = std::mem::take(&mut *listener.tasks.lock().unwrap_or_else(|e| e.into_inner()));
        let _ = tokio::time::timeout(
            Duration::from_secs(10),
            futures_util::future::join_all(tasks),
        )
        .await;
        target.flush_traces().await;
        target.stopped(stopped)
    }
}

async fn handle(State(listener): State<Arc<Listener>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let (method, headers) = (parts.method, parts.headers);
    if method == Method::OPTIONS {
        return match listener.gate.preflight(&headers) {
            Ok(grant) => (StatusCode::NO_CONTENT, grant_headers(grant)).into_response(),
            Err(refused) => refused.into_response(),
        };
    }
    // The gate first: the body of a request it turns away is never read.
    if let Err(refused) = listener.gate.check(&method, &headers) {
        let metrics = listener.target.audit.metrics();
        metrics.refusal(ops::refusal_of(refused.0));
        return refused.into_response();
    }
    let caller = match &listener.identity {
        Some(identity) => {
            match identity::caller(identity, &headers, &listener.target.audit).await {
                Ok(caller) => {
                    // The caller's latest token, for exchanges of its credentials.
                    if listener.target.exchanging.load(Relaxed) {
                        let authorization = headers.get(header::AUTHORIZATION);
                        let authorization = authorization.and_then(|v| v.to_str().ok());
                        listener.target.exchanges.present(&caller, authorization);
                    }
                    Some(caller)
                }
                Err(mut refused) => {
                    let refusal = crate::metrics::Refusal::AccessToken;
                    listener.target.audit.metrics().refusal(refusal);
                    // A page of an allowed origin reads the challenge too (a browser
                    // client logs in from it).
                    if let Some(origin) = headers.get(header::ORIGIN) {
                        let grant = grant_headers(listener.gate.grant(origin));
                        refused.headers_mut().extend(grant);
                    }
                    return refused;
                }
            }
        }
        None => None,
    };
    // A body that never ends (or dribbles in) holds its connection no longer than
    // --body-timeout; all bodies together take no more than --max-body-total.
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    let l = &listener;
    let read = l
        .bodies
        .read(body, length, l.max_body, l.body_timeout)
        .await;
    let (body, _held) = match read {
        Ok(read) => read,
        Err(bodies::Refused::TooLarge) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                "the body is larger than --max-message, or broke off",
            )
                .into_response()
        }
        Err(bodies::Refused::TooSlow) => {
            return (
                StatusCode::REQUEST_TIMEOUT,
                "the body did not arrive within --body-timeout",
            )
                .into_response()
        }
        Err(bodies::Refused::NoRoom) => {
            let refusal = crate::metrics::Refusal::BodiesBusy;
            l.target.audit.metrics().refusal(refusal);
            l.target.audit.record(
                "busy",
                serde_json::json!({"why": "the bodies being read take --max-body-total"}),
            );
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "1")],
                "the bodies being read take --max-body-total: try again",
            )
                .into_response();
        }
    };
    let served = past_gate(&listener, method, &headers, body, caller.as_ref());
    let mut response = crate::audit::as_caller(caller.clone(), served).await;
    // The gate let the request through: its origin, if it sent one, is allowed.
    if let Some(origin) = headers.get(header::ORIGIN) {
        response
            .headers_mut()
            .extend(grant_headers(listener.gate.grant(origin)));
    }
    response
}

/// A request past the gate.
async fn past_gate(
    listener: &Listener,
    method: Method,
    headers: &HeaderMap,
    body: Bytes,
    caller: Option<&Arc<Caller>>,
) -> Response {
    let presented = headers.get("mcp-session-id").and_then(|v| v.to_str().ok());
    let session = presented.map(|id| owned(caller, id));
    let unknown = || {
        (
            StatusCode::NOT_FOUND,
            "no such session: start a new one with initialize",
        )
            .into_response()
    };
    match (method, session) {
        // A DELETE ends the session now: what it has in flight is cancelled at the
        // server, and its server is shut down.
        // A sealed session this replica does not hold has nothing here to end.
        (Method::DELETE, Some(id)) => match listener.sessions().remove(&id) {
            true => StatusCode::OK.into_response(),
            false if sealed::opens(listener, presented, caller) => StatusCode::OK.into_response(),
            false => unknown(),
        },
        (method, Some(id)) => {
            let held = listener.sessions().hold(&id, Instant::now());
            let found = match held {
                Some(found) => found,
                // Sealed: another replica's session, continued here.
                None => match sealed::restore(listener, presented, caller).await {
                    Some(Ok(found)) => found,
                    Some(Err(Busy)) => {
                        return busy(listener, "every session is busy: retry, or DELETE one")
                    }
                    None => return unknown(),
                },
            };
            match method {
                Method::POST => post(listener, Some(found), headers, body, caller).await,
                Method::GET => get(found, headers, listener.seal.is_some()).await,
                _ => (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response(),
            }
        }
        (Method::POST, None) => post(listener, None, headers, body, caller).await,
        _ => (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response(),
    }
}

/// A POST: of the legacy session `found` (held), or without a session.
async fn post(
    listener: &Listener,
    found: Option<(Commands, InFlight)>,
    headers: &HeaderMap,
    body: Bytes,
    caller: Option<&Arc<Caller>>,
) -> Response {
    // Traced: the caller's `traceparent` header into the `_meta` of its requests.
    let body = match (listener.target.audit.traces(), traceparent(headers)) {
        (Some(_), Some((parent, state))) => crate::traces::into_body(body, parent, state),
        _ => body,
    };
    let message = match Incoming::parse(body.clone()) {
        Ok(message) => message,
        Err(FramingError::Batch) => return batch::post(found, body, listener.max_batch).await,
        Err(e) => {
            let error = serde_json::json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": codes::PARSE_ERROR, "message": e.to_string()}});
            let json = [(header::CONTENT_TYPE, "application/json")];
            return (StatusCode::BAD_REQUEST, json, error.to_string()).into_response();
        }
    };
    let (verdict, declared) = match &found {
        Some(_) => (Verdict::Legacy, String::new()),
        None => judge_post_declared(&post_headers(headers), &message),
    };
    let mut pending = None;
    let (tx, kind, new_session, held) = match found {
        Some((tx, held)) => (tx, Kind::Legacy, None, Some(held)),
        None if verdict == Verdict::Legacy => {
            // Sealed: the state now, its id once `initialize` is answered (below).
            pending = listener
                .seal
                .as_ref()
                .and(sealed::pending(&message, caller));
            let id = session_id();
            let spawn = || listener.spawn(Kind::Legacy, caller, Some(&id));
            match listener
                .sessions()
                .task(&owned(caller, &id), Instant::now(), spawn)
            {
                Ok((tx, held)) => (tx, Kind::Legacy, Some(id), Some(held)),
                Err(Busy) => return busy(listener, "every session is busy: retry, or DELETE one"),
            }
        }
        None => match verdict {
            Verdict::Refused { status, error } => return refused(&message, status, &error),
            // 2026-07-28 has no `notifications/cancelled` over HTTP (closing a
            // request's stream cancels it), and a host without a session cannot be
            // told from another: what it names could be anyone's request.
            _ if is_cancellation(&message) => {
                listener.target.audit.host_round(
                    "info",
                    "a 2026-07-28 host POSTed notifications/cancelled, which that revision \
                     does not define over HTTP: ignored (closing the request's stream \
                     cancels it)",
                );
                return StatusCode::ACCEPTED.into_response();
            }
            _ => match listener.modern(&message, &declared, caller) {
                Err(Busy) => {
                    return busy(
                        listener,
                        "every 2026-07-28 declaration the bridge serves at once is busy: retry",
                    )
                }
                // A notification of a declaration nobody serves: nothing to tell.
                Ok(None) => return StatusCode::ACCEPTED.into_response(),
                Ok(Some((tx, held))) => (tx, Kind::Modern, None, held),
            },
        },
    };
    let method = match &message {
        Incoming::Request { method, .. } => Some(method.as_str()),
        _ => None,
    };
    let lists_tools = method == Some(ListTools.as_str());
    if kind == Kind::Modern && method == Some(CallTool.as_str()) {
        // The judge checked `Mcp-Name` against the body: it is the tool's name.
        let name = headers.get("mcp-name").and_then(|v| v.to_str().ok());
        let name = name.and_then(|n| decoded_header(n.trim_matches([' ', '\t'])));
        if let Some(name) = name {
            if let Err(error) = listener.params.check(&tx, &name, &message, headers).await {
                listener.target.audit.host_round("warning", &error.message);
                return refused(&message, 400, &error);
            }
        }
    }
    let (reply, posted) = oneshot::channel();
    if tx.send(Command::Post { message, reply }).is_err() {
        return (StatusCode::SERVICE_UNAVAILABLE, "the session ended").into_response();
    }
    let commands = tx.clone();
    let mut response = match posted.await {
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "the session ended").into_response(),
        Ok(Posted::Accepted) => StatusCode::ACCEPTED.into_response(),
        Ok(Posted::Stream { stream, events }) => {
            let learn = lists_tools.then(|| listener.params.clone());
            answer(tx, kind, stream, events, headers, held, learn).await
        }
    };
    let new_session = match (new_session, pending) {
        (Some(id), Some(state)) => {
            Some(sealed::id_of_new(listener, &commands, caller, id, state).await)
        }
        (id, _) => id,
    };
    if let Some(id) = new_session.and_then(|id| HeaderValue::from_str(&id).ok()) {
        response.headers_mut().insert("mcp-session-id", id);
    }
    response
}

/// Whether `message` is a `notifications/cancelled`.
fn is_cancellation(message: &Incoming) -> bool {
    matches!(message, Incoming::Notification { method, .. } if method == capable::internal::method::ClientNotificationMethod::Cancelled.as_str())
}

/// A fresh session id: 16 random bytes, hex (visible ASCII, as the specification asks).
fn session_id() -> String {
    super::random_hex::<16>()
}
