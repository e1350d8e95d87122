//! One host of the HTTP listener, on a task of its own: a legacy session (its
//! `Mcp-Session-Id`), or the 2026-07-28 host, which has none. The task owns the host's
//! side of the bridge ([`Host`]) and the core's [`Streams`]: each message written for
//! the host goes on the stream the core names — the POST that carried its request, or
//! the standalone `GET` — and is kept for a legacy client that comes back with
//! `Last-Event-ID`. A 2026-07-28 client that closes its POST's stream cancels the
//! request; a legacy one does not (its answer waits to be resumed).

use std::collections::HashMap;
use std::sync::Arc;

use capable::internal::jsonrpc::{Incoming, Payload, RequestId};
use capable::internal::method::ClientNotificationMethod;
use capable::internal::server::streams::{StreamEvent, Streams, STANDALONE};
use capable::internal::{Outbox, ProtocolVersion};
use tokio::sync::{mpsc, oneshot};

use super::queue;
use super::shared_level::Level;
use super::shared_subscriptions::{Intercept, Shared};
use crate::host::{Host, Target};

/// How many events a legacy session keeps for resumption, and at most how many bytes.
const KEEP: usize = 1024;
const KEEP_BYTES: usize = 16 << 20;

/// Which kind of host a task serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A legacy session: streams are kept for resumption; a closed stream is no
    /// cancellation.
    Legacy,
    /// The 2026-07-28 host: nothing kept; a closed stream cancels its request.
    Modern,
}

/// An SSE stream's events as the HTTP side serves them: the priming event's id first,
/// when the host's version has them (2025-11-25 and later, legacy sessions).
pub struct Events {
    /// The id of the priming event to send first (an id and no data), if any.
    pub priming: Option<String>,
    /// The stream's events.
    pub events: queue::Receiver,
}

/// What the HTTP side asks of a host's task.
pub enum Command {
    /// A message the host POSTed.
    Post {
        message: Incoming,
        reply: oneshot::Sender<Posted>,
    },
    /// The host's `GET`: the standalone stream, or (with `Last-Event-ID`) the stream it
    /// comes back to, with what it missed. An id this task never gave is refused, unless
    /// `fresh_if_unknown` (sessions are sealed: the id may be another replica's), when
    /// the host gets a fresh standalone stream instead — nothing replayed, which the
    /// specification allows.
    Get {
        last_event_id: Option<String>,
        fresh_if_unknown: bool,
        reply: oneshot::Sender<Option<Events>>,
    },
    /// Nobody reads `stream` any more (the host closed it).
    Gone { stream: u64 },
    /// The one server behind is to be re-attached to this HTTP session of its when the
    /// host's `initialize` connects it (a sealed session continued here).
    Resume(capable::Resumption),
    /// The session is known by this sealed id from now on (its subscriptions and log
    /// level are kept in the store under keys derived from it, when the gateway has
    /// one).
    Sealed(String),
    /// What another replica needs to re-attach to the one server's HTTP session.
    Resumption {
        reply: oneshot::Sender<Option<capable::Resumption>>,
    },
    /// Whether the host may send batches (a 2025-03-26 session).
    AcceptsBatches { reply: oneshot::Sender<bool> },
    /// The session ends now (a `DELETE`, idle too long, room made): what is in flight
    /// is cancelled at the server, and the server is shut down.
    End,
}

/// What became of a POSTed message.
pub enum Posted {
    /// A notification or an answer: taken.
    Accepted,
    /// A request: its stream, the events of which come on `events`.
    Stream { stream: u64, events: Events },
}

/// Serves one host until its commands end (the session is deleted, the listener
/// stops); then the server behind is shut down. `replicated`: the session is sealed,
/// continued by other replicas too ([`Host::share_with_replicas`]): the server's
/// standalone stream is open here only while the host's `GET` is. `seal`: the
/// replicas' key ring, under which the task ids the host is handed are sealed
/// ([`Host::seal_tasks`]), and a 2026-07-28 host's input rounds
/// ([`Host::seal_rounds`]).
pub async fn run(
    target: Arc<Target>,
    kind: Kind,
    bound: usize,
    replicated: bool,
    seal: Option<capable::internal::seal::KeyRing>,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let audit = target.audit.clone();
    // A sealed session's subscriptions, kept in the gateway's store for every replica.
    let config = &target.config;
    let mut shared = match replicated {
        true => Shared::new(config.store.as_ref(), config.store_when_down, audit.clone()),
        false => None,
    };
    // And its log level.
    let mut level = match replicated {
        true => Level::new(config.store.as_ref(), config.store_when_down, audit.clone()),
        false => None,
    };
    let mut host = Host::new(target, kind == Kind::Modern);
    if let (Kind::Modern, Some(ring)) = (kind, &seal) {
        host.seal_rounds(ring.clone());
    }
    if replicated {
        host.share_with_replicas();
    }
    if let Some(ring) = seal {
        host.seal_tasks(ring);
    }
    let mut streams = match kind {
        Kind::Legacy => Streams::new(KEEP, KEEP_BYTES),
        Kind::Modern => Streams::new(0, 0),
    };
    if replicated {
        // Each replica's event ids are its own: a `Last-Event-ID` another replica gave
        // (it died, the host came back here) is none of this one's — a fresh stream,
        // never this replica's events under the other's numbers.
        streams = streams.tagged(&crate::random_hex::<4>());
    }
    let mut readers: HashMap<u64, queue::Sender> = HashMap::new();
    let mut requests: HashMap<u64, RequestId> = HashMap::new();
    let mut ids = ClientIds::default();
    loop {
        // Answers this task gives itself (shared subscriptions), routed as the relay's.
        let mut own = Outbox::new();
        tokio::select! {
            command = commands.recv() => match command {
                None | Some(Command::End) => break,
                Some(Command::Post { mut message, reply }) => {
                    if kind == Kind::Modern && !ids.take_in(&mut message) {
                        let _ = reply.send(Posted::Accepted);
                        continue;
                    }
                    let Incoming::Request { id, .. } = &message else {
                        let _ = reply.send(Posted::Accepted);
                        host.message(message).await;
                        continue;
                    };
                    let intercept = match &mut shared {
                        Some(shared) => shared.before(host.keeps_state_upstream(), &message).await,
                        None => Intercept::Pass(None),
                    };
                    let asks = level
                        .as_ref()
                        .and_then(|level| level.before(host.keeps_state_upstream(), &message));
                    let stream = streams.open(id.clone());
                    let (tx, events) = queue::stream(bound);
                    readers.insert(stream, tx);
                    requests.insert(stream, id.clone());
                    match intercept {
                        Intercept::Pass(change) => {
                            if let Some(shared) = &mut shared {
                                shared.wait(stream, change);
                            }
                            if let Some(level) = &mut level {
                                level.wait(stream, asks);
                            }
                            // The version is known once the host said it (initialize,
                            // or its envelope): the request's answer may come at once.
                            host.message(message).await;
                        }
                        Intercept::Answered(out) => own = out,
                    }
                    let events = Events {
                        priming: priming(kind, &host, &streams, stream),
                        events,
                    };
                    let _ = reply.send(Posted::Stream { stream, events });
                }
                Some(Command::Get { last_event_id, fresh_if_unknown, reply }) => {
                    let (tx, events) = queue::stream(bound);
                    let stream = match last_event_id.as_deref().and_then(|l| streams.resume(l)) {
                        Some((stream, missed)) => {
                            for event in missed {
                                let _ = tx.send(event);
                            }
                            stream
                        }
                        None if last_event_id.is_some() && !fresh_if_unknown => {
                            let _ = reply.send(None);
                            continue;
                        }
                        None if last_event_id.is_some() => {
                            audit.record(
                                "resumed",
                                serde_json::json!({"fresh": true,
                                "notice": "a Last-Event-ID this replica never gave (another \
                                           replica's, which may have died): a fresh stream, \
                                           what that stream had not delivered is lost"}),
                            );
                            STANDALONE
                        }
                        None => STANDALONE,
                    };
                    readers.insert(stream, tx);
                    if stream == STANDALONE {
                        host.host_listens(true);
                    }
                    let priming = priming(kind, &host, &streams, stream);
                    let _ = reply.send(Some(Events { priming, events }));
                }
                Some(Command::Resume(session)) => host.resume(session),
                Some(Command::Sealed(id)) => {
                    if let Some(shared) = &mut shared {
                        shared.sealed(&id);
                    }
                    if let Some(level) = &mut level {
                        // A restore seals the task before it replays `initialize`; a
                        // session begun here is sealed once its `initialize` is answered.
                        level.sealed(&id, host.version().is_none());
                    }
                    host.sealed(&id);
                }
                Some(Command::Resumption { reply }) => {
                    let _ = reply.send(host.resumption());
                }
                Some(Command::AcceptsBatches { reply }) => {
                    let _ = reply.send(host.accepts_batches());
                }
                Some(Command::Gone { stream }) => {
                    // The standalone stream the host opened again since (a second `GET`
                    // replaced the first) is read anew: not gone.
                    let reread = readers.get(&stream).is_some_and(|r| !r.is_closed());
                    if stream == STANDALONE && reread {
                        continue;
                    }
                    readers.remove(&stream);
                    if stream == STANDALONE {
                        host.host_listens(false);
                    }
                    if let (Kind::Modern, Some(id)) = (kind, requests.remove(&stream)) {
                        ids.forget(&id);
                        if streams.is_open(stream) {
                            streams.forget(&id);
                            host.message(cancelled(&id)).await;
                        }
                    }
                }
            },
            wake = host.next() => host.on(wake),
            () = changed(&shared) => {
                if let Some(shared) = &mut shared {
                    shared.reconcile().await;
                }
            }
            () = level_changed(&level) => {
                if let Some(level) = &mut level {
                    level.told();
                }
            }
        }
        let [first, second] = host.take_output();
        for out in [first, second, own] {
            for mut event in streams.route(&out) {
                let (stream, ends) = (event.stream, event.ends);
                if ends && kind == Kind::Modern {
                    ids.give_back(&mut event);
                }
                if let (true, Some(shared)) = (ends, &mut shared) {
                    shared
                        .answered(host.listens(), stream, &mut event.data)
                        .await;
                }
                if let (true, Some(level)) = (ends, &mut level) {
                    level.answered(stream, &mut event.data).await;
                }
                if let Some(reader) = readers.get(&stream) {
                    match reader.send(event) {
                        Ok(()) => {}
                        Err(queue::Closed::Gone) => {
                            readers.remove(&stream);
                            if stream == STANDALONE {
                                host.host_listens(false);
                            }
                        }
                        Err(queue::Closed::Full) => {
                            // Its reader let too much pile up: the stream is closed (a
                            // legacy host resumes it with Last-Event-ID).
                            readers.remove(&stream);
                            if stream == STANDALONE {
                                host.host_listens(false);
                            }
                            audit.record(
                                "closed",
                                serde_json::json!({"side": "host",
                                "notice": "a stream of the host's was closed: it left more than \
                                           --stream-buffer unread"}),
                            );
                        }
                    }
                }
                if ends {
                    readers.remove(&stream);
                    requests.remove(&stream);
                }
            }
        }
        // The host's `GET` opened or ended here: the shared subscriptions follow it; the
        // requests of the bridge's own they make go to the relay (their answers to no
        // reader, a subscribe's watched).
        if let Some(shared) = &mut shared {
            shared
                .follow(host.listens(), host.keeps_state_upstream())
                .await;
            for (message, watched) in shared.take_replays() {
                if let (Incoming::Request { id, .. }, Some(uri)) = (&message, watched) {
                    let stream = streams.open(id.clone());
                    shared.replaying(stream, uri);
                }
                host.message(message).await;
            }
        }
        // The level kept for the session, read when taken up here or told it changed,
        // once the host's `initialize` is answered: applied as the host's would be.
        if let Some(level) = &mut level {
            let ready = host.version().is_some();
            level.refresh(ready, host.keeps_state_upstream()).await;
            if let Some(message) = level.take_replay() {
                host.message(message).await;
            }
        }
    }
    host.close().await;
}

/// Resolves when the session's log level may have changed in the store; never when it
/// is not kept there.
async fn level_changed(level: &Option<Level>) {
    match level {
        Some(level) => level.changed().await,
        None => std::future::pending().await,
    }
}

/// Resolves when the shared subscriptions changed while this replica holds the host's
/// stream; never otherwise.
async fn changed(shared: &Option<Shared>) {
    match shared {
        Some(shared) => shared.changed().await,
        None => std::future::pending().await,
    }
}

/// The ids of 2026-07-28 clients. Every one of them shares the listener's one task (they
/// have no session), and two may use the same id at once: each request goes behind under
/// an id of the task's own, and its answer takes the client's back. A client's
/// `notifications/cancelled` names its own id: it reaches the request only while one
/// request in flight has that id (else it is dropped, as for a request not in flight).
#[derive(Default)]
struct ClientIds {
    last: i64,
    /// The task's id of each request in flight, and the client's.
    in_flight: HashMap<RequestId, RequestId>,
}

impl ClientIds {
    /// `message` as it goes behind: a request under an id of the task's, a
    /// cancellation under the id it names; `false` for a cancellation that names no
    /// single request in flight, which goes no further.
    fn take_in(&mut self, message: &mut Incoming) -> bool {
        match message {
            Incoming::Request { id, .. } => {
                self.last += 1;
                let theirs = std::mem::replace(id, RequestId::Number(self.last));
                self.in_flight.insert(id.clone(), theirs);
                true
            }
            Incoming::Notification { method, params } if method == CANCELLED => {
                let Ok(mut cancel) = params.decode::<serde_json::Map<String, serde_json::Value>>()
                else {
                    return true;
                };
                let named = cancel
                    .get("requestId")
                    .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
                let mut ours = self
                    .in_flight
                    .iter()
                    .filter(|(_, theirs)| Some(*theirs) == named.as_ref())
                    .map(|(ours, _)| ours.clone());
                let (Some(ours), None) = (ours.next(), ours.next()) else {
                    return false;
                };
                cancel.insert("requestId".into(), serde_json::json!(ours));
                *params = Payload::from_json(serde_json::Value::Object(cancel).to_string());
                true
            }
            _ => true,
        }
    }

    /// An answer's event, with the client's id in place of the task's.
    fn give_back(&mut self, event: &mut StreamEvent) {
        type Members = std::collections::BTreeMap<String, Box<serde_json::value::RawValue>>;
        let Ok(mut answer) = serde_json::from_slice::<Members>(&event.data) else {
            return;
        };
        let ours = answer
            .get("id")
            .and_then(|id| serde_json::from_str::<RequestId>(id.get()).ok());
        let Some(theirs) = ours.and_then(|ours| self.in_flight.remove(&ours)) else {
            return;
        };
        if let Ok(theirs) = serde_json::value::to_raw_value(&theirs) {
            answer.insert("id".into(), theirs);
            if let Ok(data) = serde_json::to_vec(&answer) {
                event.data = data.into();
            }
        }
    }

    /// Forgets a request that ends unanswered (its client closed the stream).
    fn forget(&mut self, ours: &RequestId) {
        self.in_flight.remove(ours);
    }
}

/// The id of the priming event `stream` starts with: a legacy session's, from
/// 2025-11-25 on (older clients may take an event without data for a broken message).
fn priming(kind: Kind, host: &Host, streams: &Streams, stream: u64) -> Option<String> {
    let version = host.version()?;
    (kind == Kind::Legacy && version >= ProtocolVersion::V2025_11_25)
        .then(|| streams.priming(stream))
}

/// A host's cancellation's method name.
const CANCELLED: &str = ClientNotificationMethod::Cancelled.as_str();

/// `notifications/cancelled` for request `id`, as if the host had sent it.
fn cancelled(id: &RequestId) -> Incoming {
    let params = serde_json::json!({"requestId": id, "reason": "the client closed the stream"});
    Incoming::Notification {
        method: CANCELLED.into(),
        params: Payload::from_json(params.to_string().into_bytes()),
    }
}
