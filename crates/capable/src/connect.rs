//! Connecting: run the handshake over a fresh transport and hand back a ready
//! [`Session`] — or a precise error, after which nothing more was sent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use capable_core::{Connection, Era, Incoming, Negotiating, Notice, ProtocolChoice, Step};
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

use crate::driver::{self, Shared, State};
use crate::error::Error;
use crate::options::ClientOptions;
use crate::session::Session;
use crate::transport::http::{HttpConfig, HttpTransport};
use crate::transport::stdio::{ServerCommand, StdioTransport};
use crate::transport::{MessageSink, MessageSource, Peer, Transport};

/// Starts a stdio server and connects to it.
///
/// With [`ProtocolChoice::Auto`] the era found for the same command earlier in this
/// process is reused (the era is a property of the server), so only the first
/// connection pays for the modern probe.
pub async fn connect_stdio(
    command: &ServerCommand,
    mut options: ClientOptions,
) -> Result<Session, Error> {
    let key = ServerKey::Command(command.clone());
    let auto = options.config.protocol == ProtocolChoice::Auto;
    if auto {
        remembered_era(&key, &mut options);
    }
    let transport =
        StdioTransport::spawn(command, options.stdio).map_err(|e| Error::Spawn(e.to_string()))?;
    let session = connect(transport, options).await?;
    if auto {
        remember_era(key, session.era());
    }
    Ok(session)
}

/// Connects to an MCP server over HTTP: Streamable HTTP in either era, falling back to
/// the 2024-11-05 HTTP+SSE transport when the URL is one.
///
/// With [`ProtocolChoice::Auto`] the era found for the same origin earlier in this
/// process is reused.
pub async fn connect_http(
    config: HttpConfig,
    mut options: ClientOptions,
) -> Result<Session, Error> {
    let key = ServerKey::Origin(config.url.origin().ascii_serialization());
    let auto = options.config.protocol == ProtocolChoice::Auto;
    if auto {
        remembered_era(&key, &mut options);
    }
    let mut config = config;
    config.max_message_size = options.stdio.max_message_size;
    let transport = HttpTransport::new(config)?;
    let session = connect(transport, options).await?;
    if auto {
        remember_era(key, session.era());
    }
    Ok(session)
}

/// What identifies a server for the era memory.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ServerKey {
    Command(ServerCommand),
    Origin(String),
}

fn remembered_era(key: &ServerKey, options: &mut ClientOptions) {
    match era_memory().lock().ok().and_then(|m| m.get(key).copied()) {
        Some(Era::Legacy) => options.config.protocol = ProtocolChoice::Legacy,
        Some(Era::Modern) => options.config.protocol = ProtocolChoice::Modern,
        None => {}
    }
}

fn remember_era(key: ServerKey, era: Era) {
    if let Ok(mut m) = era_memory().lock() {
        m.insert(key, era);
    }
}

fn era_memory() -> &'static Mutex<HashMap<ServerKey, Era>> {
    static MEMORY: OnceLock<Mutex<HashMap<ServerKey, Era>>> = OnceLock::new();
    MEMORY.get_or_init(Default::default)
}

/// Connects over any transport: negotiates, then starts the reader and writer tasks.
pub async fn connect<T: Transport>(
    transport: T,
    mut options: ClientOptions,
) -> Result<Session, Error> {
    // Declare exactly what the installed handlers handle.
    options.config.capabilities = options.handlers.capabilities();
    let (mut sink, mut source, peer) = transport.split();
    match handshake(&mut sink, &mut source, peer.as_ref(), &options).await {
        Ok((conn, early, out)) => Ok(start(conn, early, out, sink, source, peer, options)),
        Err(e) => {
            // Nothing more is sent: close the server's input and let it go.
            drop(sink);
            drop(source);
            peer.shutdown().await;
            Err(e)
        }
    }
}

type Handshaken = (
    Connection<driver::Waiter>,
    Vec<(String, serde_json::Value)>,
    Vec<u8>,
);

async fn handshake<Si: MessageSink, So: MessageSource>(
    sink: &mut Si,
    source: &mut So,
    peer: &dyn Peer,
    options: &ClientOptions,
) -> Result<Handshaken, Error> {
    let mut out = Vec::new();
    let mut negotiating = Negotiating::start(options.config.clone(), &mut out);
    let stage_timeout = |n: &Negotiating| {
        if n.is_probing() {
            options.probe_timeout
        } else {
            options.request_timeout
        }
    };
    let mut probing = negotiating.is_probing();
    let mut deadline = Instant::now() + stage_timeout(&negotiating);
    loop {
        if !out.is_empty() {
            if let Some(tap) = &options.tap {
                tap.sent(&out);
            }
            sink.send(&out).await?;
            out.clear();
        }
        let step = match tokio::time::timeout_at(deadline, source.recv()).await {
            Err(_) if negotiating.is_probing() => negotiating.probe_timed_out(&mut out),
            Err(_) => {
                return Err(Error::HandshakeTimeout {
                    after: options.request_timeout,
                })
            }
            Ok(Err(e)) => return Err(Error::Transport(e)),
            Ok(Ok(None)) => {
                let status = peer
                    .exit_status(std::time::Duration::from_secs(2))
                    .await
                    .unwrap_or_else(|| "closed its output but is still running".into());
                return Err(Error::ServerExited {
                    status,
                    stderr: peer.stderr_tail(),
                });
            }
            Ok(Ok(Some(line))) => {
                if let Some(tap) = &options.tap {
                    tap.received(&line);
                }
                match Incoming::parse(line) {
                    Ok(msg) => negotiating.handle(msg, &mut out),
                    Err(e) => {
                        tracing::warn!(
                            "{}",
                            Notice::SkippedLine {
                                reason: e.to_string()
                            }
                        );
                        continue;
                    }
                }
            }
        };
        match step {
            Step::Waiting(mut n) => {
                for notice in n.take_notices() {
                    match notice {
                        // Expected with every legacy server: not worth a warning.
                        Notice::LegacyFallback { .. } => tracing::info!("{notice}"),
                        _ => tracing::warn!("{notice}"),
                    }
                }
                if n.is_probing() != probing {
                    probing = n.is_probing();
                    deadline = Instant::now() + stage_timeout(&n);
                }
                negotiating = n;
            }
            Step::Ready(established) => {
                let (mut conn, early) = Connection::new(*established);
                for notice in conn.take_notices() {
                    tracing::info!("{notice}");
                }
                return Ok((conn, early, out));
            }
            Step::Failed(e) => return Err(Error::Negotiation(e)),
        }
    }
}

fn start<Si: MessageSink, So: MessageSource>(
    conn: Connection<driver::Waiter>,
    early: Vec<(String, serde_json::Value)>,
    out: Vec<u8>,
    sink: Si,
    source: So,
    peer: Box<dyn Peer>,
    options: ClientOptions,
) -> Session {
    let negotiated = conn.negotiated().clone();
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            direct: sink.direct(),
            answered: 0,
            writing: false,
            out_tapped: 0,
            conn,
            out,
            closed: None,
            stop_writing: false,
            dropped_notifications: 0,
            listeners: Default::default(),
            timer_at: None,
        }),
        write_ready: Notify::new(),
        writer_done: Notify::new(),
        timer_wake: Notify::new(),
        peer,
        tap: options.tap.clone(),
        events: crate::events::EventLog::new(),
    });
    let (ntx, nrx) = mpsc::channel(options.notification_capacity.max(1));
    for (method, params) in early {
        let _ = ntx.try_send(driver::ServerNotification { method, params });
    }
    let (rtx, rrx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(driver::run_writer(shared.clone(), sink));
    tokio::spawn(driver::run_deadlines(shared.clone()));
    let reader = tokio::spawn(driver::run_reader(shared.clone(), source, ntx, rtx));
    tokio::spawn(driver::run_input(
        shared.clone(),
        rrx,
        options.handlers.clone(),
    ));
    // `notifications/initialized` (legacy) may be waiting in `out`.
    shared.write_ready.notify_one();
    Session::new(shared, negotiated, options, nrx, reader, writer)
}
