//! Connecting: run the handshake over a fresh transport and hand back a ready
//! [`Session`] — or a precise error, after which nothing more was sent.
//!
//! The handshake's rules (what to send first, when the probe gives up, what an answer
//! means) are the core's [`Negotiating`]; this file moves its bytes and sleeps until
//! its [`poll_timeout`](Negotiating::poll_timeout).

use std::sync::Arc;

use capable_core::{AfterFailure, Connection, Incoming, Negotiating, Outbox, RequestFailure, Step};
use tokio::sync::{mpsc, watch};
use tokio::time::{Duration, Instant};

use crate::driver::{self, Driver, State};
use crate::error::Error;
use crate::options::ClientOptions;
use crate::session::Session;
use crate::transport::http::{HttpConfig, HttpTransport};
use crate::transport::shortcut::Sealed;
use crate::transport::stdio::{ServerCommand, StdioLimits, StdioTransport};
use crate::transport::{Inbound, MessageSink, MessageSource, Peer, Transport, TransportError};

/// Starts a stdio server and connects to it.
///
/// Which era the server speaks is found by asking (see
/// [`Negotiating`](capable_core::Negotiating)); a host that remembers it from an
/// earlier connection passes it as [`ClientOptions::with_era_hint`] to skip the probe
/// of a legacy server, without ever being locked out of the other era.
///
/// ```no_run
/// # async fn f() -> Result<(), capable::Error> {
/// use capable::{connect_stdio, ClientOptions, ServerCommand};
/// let server = ServerCommand::new("node", ["server.js"]);
/// let first = connect_stdio(&server, ClientOptions::default()).await?;
/// let era = first.era();
/// first.close().await;
/// // Next time, start with what worked:
/// let again = connect_stdio(&server, ClientOptions::default().with_era_hint(Some(era))).await?;
/// # again.close().await; Ok(()) }
/// ```
pub async fn connect_stdio(
    command: &ServerCommand,
    options: ClientOptions,
) -> Result<Session, Error> {
    let limits = StdioLimits {
        max_message_size: options.max_message_size,
        shutdown_grace: options.shutdown_grace,
        burst_pauses: options.burst_pauses,
    };
    let transport = StdioTransport::spawn(command, limits)?;
    connect(transport, options).await
}

/// Connects to an MCP server over HTTP: Streamable HTTP in either era, falling back to
/// the 2024-11-05 HTTP+SSE transport when the URL is one.
///
/// With [`ClientOptions::resume`] set, nothing is negotiated: the legacy session it names
/// is taken up where another client left it (see [`Resumption`](crate::Resumption)).
pub async fn connect_http(
    config: HttpConfig,
    mut options: ClientOptions,
) -> Result<Session, Error> {
    if let Some(resumption) = options.resume.take() {
        return resume_http(config, options, &resumption).await;
    }
    let busy = config.oauth.as_ref().map(|o| o.busy());
    let transport = HttpTransport::new(config, options.max_message_size)?;
    if options.shared_session {
        transport.standalone_on_demand();
    }
    connect_paused(transport, options, busy).await
}

/// A legacy HTTP session resumed: no handshake, its standalone stream opened.
async fn resume_http(
    config: HttpConfig,
    options: ClientOptions,
    resumption: &crate::Resumption,
) -> Result<Session, Error> {
    let (established, initialize) = crate::resume::established(resumption, options.core_config()?)?;
    let transport = HttpTransport::new(config, options.max_message_size)?;
    if options.shared_session {
        transport.standalone_on_demand();
    }
    transport
        .resume(&resumption.session_id, &established.negotiated, &initialize)
        .await?;
    let (mut sink, source, peer) = transport.split();
    let events = crate::events::EventLog::new();
    for notice in sink.know_tools(&options.known_tools) {
        events.notice(notice);
    }
    let (conn, early) = Connection::new(established);
    Ok(start(
        (conn, early, Outbox::new()),
        (sink, source, peer),
        options,
        events,
    ))
}

/// Connects over any transport: negotiates, then starts the reader, writer and timer
/// tasks.
pub async fn connect<T: Transport>(transport: T, options: ClientOptions) -> Result<Session, Error> {
    connect_paused(transport, options, None).await
}

/// [`connect`], with the handshake's clock stopped while `busy` is true (an
/// authorization in progress: the user may be logging in).
async fn connect_paused<T: Transport>(
    transport: T,
    options: ClientOptions,
    busy: Option<watch::Receiver<bool>>,
) -> Result<Session, Error> {
    let config = options.core_config()?;
    let (mut sink, mut source, peer) = transport.split();
    for notice in sink.know_tools(&options.known_tools) {
        tracing::warn!("{notice}");
    }
    // The session's event log exists from the first message: what the handshake noticed
    // is in `Session::notices` too.
    let events = crate::events::EventLog::new();
    match handshake(
        config,
        &mut sink,
        &mut source,
        peer.as_ref(),
        &options,
        &events,
        busy,
    )
    .await
    {
        Ok((conn, early, out)) => Ok(start(
            (conn, early, out),
            (sink, source, peer),
            options,
            events,
        )),
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
    Outbox,
);

async fn handshake<Si: MessageSink, So: MessageSource>(
    config: capable_core::ClientConfig,
    sink: &mut Si,
    source: &mut So,
    peer: &dyn Peer,
    options: &ClientOptions,
    events: &crate::events::EventLog,
    mut busy: Option<watch::Receiver<bool>>,
) -> Result<Handshaken, Error> {
    // The handshake's own clock: real time less the time spent authorizing.
    let mut paused = Duration::ZERO;
    let mut paused_since: Option<Instant> = None;
    let now = |paused: Duration| (Instant::now() - paused).into_std();
    let mut out = Outbox::new();
    let mut negotiating = Negotiating::start(config, now(paused), &mut out);
    loop {
        if !out.is_empty() {
            if let Some(tap) = &options.tap {
                tap.sent(&out);
            }
            if let Err(e) = sink.send(&out).await {
                // The server is gone before it read its first message (EPIPE): how it
                // exited is the answer, not the broken pipe.
                return Err(driver::ended(peer, Some(e)).await);
            }
            out.clear();
        }
        let deadline = Instant::from_std(negotiating.poll_timeout()) + paused;
        let changed = async {
            match busy.as_mut() {
                Some(b) => b.changed().await.is_ok(),
                None => std::future::pending().await,
            }
        };
        let received = tokio::select! {
            r = source.recv() => Ok(r),
            _ = tokio::time::sleep_until(deadline), if paused_since.is_none() => Err(()),
            ok = changed => {
                let authorizing = ok && busy.as_ref().is_some_and(|b| *b.borrow());
                match (authorizing, paused_since) {
                    (true, None) => paused_since = Some(Instant::now()),
                    (false, Some(since)) => {
                        paused += since.elapsed();
                        paused_since = None;
                    }
                    _ => {}
                }
                if !ok {
                    busy = None;
                }
                continue;
            }
        };
        let step = match received {
            Err(_) => negotiating.handle_timeout(now(paused), &mut out),
            Ok(Err(e)) => return Err(Error::Transport(e)),
            Ok(Ok(None)) => return Err(driver::ended(peer, None).await),
            Ok(Ok(Some(Inbound::Failed { id, error }))) => {
                // The transport failed a handshake request without a JSON-RPC answer
                // (an HTTP status): the core says whether the handshake goes on.
                let failure = match error {
                    Error::Auth(_) => RequestFailure::Authorization,
                    Error::Http {
                        status: 502..=504, ..
                    } => RequestFailure::Unavailable,
                    _ => RequestFailure::Transport,
                };
                let why = error.to_string();
                match negotiating.handle_failure(&id, failure, why, now(paused), &mut out) {
                    AfterFailure::Step(step) => step,
                    AfterFailure::Ends => return Err(error),
                }
            }
            Ok(Ok(Some(Inbound::Notice(notice)))) => {
                events.notice(notice);
                continue;
            }
            Ok(Ok(Some(Inbound::Unterminated(line)))) if Incoming::parse(line.clone()).is_err() => {
                events.notice(driver::cut_off(&line));
                continue;
            }
            Ok(Ok(Some(
                Inbound::Message(line)
                | Inbound::Unterminated(line)
                | Inbound::Related { message: line, .. },
            ))) => {
                if let Some(tap) = &options.tap {
                    tap.received(&line);
                }
                let budget = capable_core::internal::jsonrpc::within_value_budget(
                    &line,
                    options.max_message_size,
                );
                if let Err(values) = budget {
                    let limit =
                        capable_core::internal::jsonrpc::value_budget(options.max_message_size);
                    return Err(Error::Transport(TransportError::TooManyValues {
                        values,
                        limit,
                    }));
                }
                match Incoming::parse(line.clone()) {
                    Ok(msg) => negotiating.handle(msg, now(paused), &mut out),
                    Err(e) => negotiating.handle_unreadable(&line, &e, now(paused), &mut out),
                }
            }
        };
        match step {
            Step::Waiting(mut n) => {
                for notice in n.take_notices() {
                    events.notice(notice);
                }
                negotiating = n;
            }
            Step::Ready(established) => {
                // The transport learns the negotiated version before anything is sent
                // under it (`notifications/initialized` waits in `out`).
                sink.negotiated(&established.negotiated);
                let (mut conn, early) = Connection::new(*established);
                for notice in conn.take_notices() {
                    events.notice(notice);
                }
                return Ok((conn, early, out));
            }
            Step::Failed(e) => return Err(Error::Negotiation(e)),
        }
    }
}

fn start<Si: MessageSink, So: MessageSource>(
    (conn, early, out): Handshaken,
    (sink, source, peer): (Si, So, Box<dyn Peer>),
    options: ClientOptions,
    events: crate::events::EventLog,
) -> Session {
    let mut conn = conn;
    if options.shared_session {
        conn.share_subscriptions();
    }
    let negotiated = conn.negotiated().clone();
    let state = State {
        bypass: sink.bypass(Sealed(())),
        work: None,
        answered: 0,
        writing: false,
        out_tapped: 0,
        conn,
        slots: Default::default(),
        out,
        closed: None,
        listeners: Default::default(),
        timer_armed: None,
    };
    let shared = Arc::new(Driver::new(
        state,
        peer,
        options.tap.clone(),
        events,
        options.max_message_size,
    ));
    let (ntx, nrx) = mpsc::channel(options.notification_capacity.max(1));
    for (method, params) in early {
        let early = crate::events::ServerNotification::from_value(method, params);
        if ntx.try_send(early).is_err() {
            shared.dropped_notification();
        }
    }
    let (rtx, rrx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(driver::run_writer(shared.clone(), sink));
    tokio::spawn(driver::run_timer(shared.clone()));
    let reader = tokio::spawn(driver::run_reader(shared.clone(), source, ntx, rtx));
    tokio::spawn(driver::run_input(
        shared.clone(),
        rrx,
        options.handlers.clone(),
        negotiated.era() == capable_core::Era::Legacy,
    ));
    // `notifications/initialized` (legacy) may be waiting in `out`.
    shared.write_ready.notify_one();
    Session::new(shared, negotiated, options, nrx, reader, writer)
}
