//! Sealed legacy sessions: with a seal key (`--seal-key-file`), a legacy session's
//! `Mcp-Session-Id` is its state, sealed ([`SessionSeal`]), so that a replica that never
//! saw the session continues it — behind a load balancer with no affinity, or after the
//! replica that began it died.
//!
//! What the seal holds is what the host said in `initialize`: the version it proposed,
//! its capabilities and `clientInfo`, and who it is (the caller the listener verified);
//! and, when the server behind is one HTTP server, the session that server gave the
//! gateway (its `Mcp-Session-Id`, the version negotiated with it, its `serverInfo` and
//! `capabilities`: a [`capable::Resumption`]). The id is therefore made once the host's
//! `initialize` is answered ([`id_of_new`]): the task starts under a random key and is
//! known by the sealed id from then on. A seal passes no
//! [`MAX_SESSION_SEAL_LEN`](capable::internal::seal::MAX_SESSION_SEAL_LEN) (4,096)
//! characters, a quarter of HAProxy's default 16 KiB for a request's head; an upstream
//! session that would make it longer is left out (the continuing replica then opens
//! its own, as below).
//!
//! A replica that gets a request of a session it does not hold opens the seal, checks
//! that the request's own verified caller is the one sealed (another identity gets `404`,
//! as an unknown id does), and starts the session anew from it: the host's `initialize`
//! replayed to the session's task (answered to nobody), and the server behind either
//! **re-attached** — the sealed upstream session taken up with no second `initialize`
//! (`ClientOptions::with_resume`): the server sees one session going on, and what it
//! keeps per session (subscriptions, its log level, tasks it runs) goes on too — or,
//! with none sealed, **replayed**: connected as the host's `initialize` connected it
//! (the same proposal negotiates the same version; the same declaration is made). A
//! server that no longer holds the sealed session answers `404` to the first request in
//! it; the client then opens a new one with the host's declaration and sends the
//! request again (the audit's `notice`, "expired; started a new one"). The audit's
//! `sealed` line says which (`"upstream": "re-attached"` or `"replayed"`).
//!
//! What happens later cannot be in the seal, because a session id never changes after
//! `initialize`. What of it a continuing replica needs, it gets otherwise:
//!
//! - `resources/subscribe` and `logging/setLevel`, for one legacy HTTP server behind a
//!   legacy host: every replica forwards them as they came, to the one server session
//!   all of them re-attach to, which is this host session's alone — so the server's
//!   record of them *is* the host's, and the replica holding the host's stream need
//!   not have seen them. Each replica's engine leaves them to the server
//!   ([`ServerConnection::keep_state_upstream`](capable::internal::server::ServerConnection::keep_state_upstream),
//!   where the rule is written): the server's `resources/updated` and log lines pass
//!   whatever this replica saw. The bridge's own record stays the replica's; nothing
//!   is kept in a shared store;
//! - **the server's standalone stream follows the host's**: a server keeps one
//!   standalone `GET` per session (the last, or it refuses a second with `409`), and
//!   it sends updates, list changes and its own questions there. So no replica opens
//!   it at connect time (`ClientOptions::with_shared_session`): the replica that gets
//!   the host's `GET` opens it, and closes it when that host stream ends — never one
//!   per replica regardless. A host whose `GET` broke with its replica reconnects
//!   elsewhere; the server's stream opens there, and the subscription goes on (the
//!   audit's `stream` lines, `"standalone": "opened"`/`"closed"`, name the host);
//! - a `GET` with the `Last-Event-ID` of a stream another replica served gets a fresh
//!   standalone stream here, nothing replayed: each replica's event ids carry a tag of
//!   its own ([`Streams::tagged`](capable::internal::server::streams::Streams::tagged)),
//!   so another's id is never read as one of this replica's (which would replay this
//!   one's events as if missed). What that stream had not delivered is lost, and said
//!   in the audit (`resumed`, `"fresh": true`); nothing the host had is sent twice.
//!
//! - a 2026-07-28 server behind (no session to share: the bridge subscribes for the
//!   host on a listen stream of its own), several servers behind (`--config`, each
//!   replica its own sessions to them) and a stdio server (each replica runs its own)
//!   cannot keep the host's subscriptions for it:
//!   with a store the replicas share (`gateway.store`), the session's set of URIs is
//!   kept there, and the replica holding the host's `GET` subscribes to it and
//!   delivers the updates, told of each change (`shared_subscriptions.rs`). The
//!   replica a subscribe reaches sends it on (the host is answered as the server
//!   answered), adds it to the set, and lets it go again unless it holds the stream;
//!   the replica a reconnected `GET` reaches reads the set and subscribes to it;
//! - in the same three cases the host's log level (`logging/setLevel`): with a store,
//!   the level's name is kept there once a replica's `setLevel` is answered, and
//!   every replica holding the session is told; each applies the level kept when it
//!   restores the session and when told it changed, as a host's `setLevel` applies
//!   there (`shared_level.rs`).
//!
//! What stays with the replica that saw it:
//!
//! - without a store, the subscriptions and log level just above: that replica's
//!   record (subscriptions delivered while the host's `GET` is on it; the level
//!   followed by that replica's requests and streams only); stdio servers' own state (per-session state of
//!   a stdio server — what a tool remembered between calls — is that replica's);
//! - the tasks the bridge answers itself for a legacy host (a 2026-07-28 server's call
//!   that answered at once): their record is the replica's;
//! - an SSE answer lives on the replica that runs its request: it breaks with it.
//!
//! The task ids the gateway hands out are sealed too, a kind of their own
//! ([`TaskSeal`](capable::internal::seal::TaskSeal): the server, its own id, the
//! caller, an expiry), by the relay (`relay/task_ids.rs`, the rules in the core's
//! `bridge::task_ids`): a `tasks/*` request on any replica opens the id and reaches the
//! server on the re-attached session, where the task runs — so the upstream session is
//! not sealed in the id. Another caller's, a tampered or foreign id is an unknown task
//! (`-32602`), nothing sent.
//!
//! Several replicas hold a re-attached session at once (round robin sends a host's
//! requests everywhere): each numbers its requests from its own random start, so the
//! server never sees two with one id. A `DELETE` (or a replica letting the session go)
//! ends the server's session for all of them; the next one to use it renews it, as
//! above.
//!
//! A seal that does not open — tampered, another deployment's, sealed under a key no
//! longer in the ring, or expired ([`LIFETIME`] after `initialize`) — is `404`, and the
//! host initializes again. Restored sessions are tasks of the same bounded pool as
//! those begun here.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use capable::internal::auth::resource::Caller as Verified;
use capable::internal::jsonrpc::{Incoming, Payload, RequestId};
use capable::internal::method::{ClientNotificationMethod, Method};
use capable::internal::seal::{Caller, KeyRing, SessionSeal, SessionSealError, Text, Upstream};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::pool::{Busy, Commands, InFlight};
use super::session::{Command, Kind, Posted};
use super::{owned, Listener};

/// How long a restore waits for the server behind to be connected, at most.
const RESTORE_WAIT: Duration = Duration::from_secs(60);

/// How long a sealed session id opens after its `initialize`.
pub const LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// The id of the `initialize` a restore replays (answered to nobody).
const REPLAYED: &str = "capable/restore";

/// Why a sealed session id was not continued; every one is a `404` to the host.
#[derive(Debug)]
pub enum Refused {
    /// The seal did not open (tampered, foreign, a retired key's, expired).
    Seal(SessionSealError),
    /// It opened, but belongs to another caller than the request's.
    OtherCaller,
}

/// Seconds since the Unix epoch.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The caller as a seal holds it (borrowed from the verified caller).
pub fn sealed_caller(caller: Option<&Arc<Verified>>) -> Caller<'_> {
    match caller {
        Some(c) => Caller {
            iss: Some(Text::from(c.issuer.as_str())),
            sub: Some(Text::from(c.subject.as_str())),
            client_id: c.client_id.as_deref().map(Text::from),
        },
        None => Caller::default(),
    }
}

/// The state to seal for a new session `initialize` opens for `caller`; `None` when the
/// message is no `initialize`. Its upstream session is added once it is known
/// ([`seal_with`]).
pub fn pending(message: &Incoming, caller: Option<&Arc<Verified>>) -> Option<SessionSeal<'static>> {
    let Incoming::Request { method, params, .. } = message else {
        return None;
    };
    if method != Method::Initialize.as_str() {
        return None;
    }
    let params: Value = params.decode().ok()?;
    // The nested documents kept as their JSON text, parsed only by a restore.
    let text = |v: &Value| Text::from(v.to_string());
    Some(SessionSeal {
        caller: sealed_caller(caller).into_owned(),
        version: Text::from(params.get("protocolVersion")?.as_str()?.to_owned()),
        capabilities: params.get("capabilities").map(text),
        client_info: params.get("clientInfo").map(text),
        log_level: None,
        upstream: Default::default(),
        expires_at: now().saturating_add(LIFETIME.as_secs()),
    })
}

/// `state` sealed, with the HTTP session of server `server` it re-attaches to when
/// there is one; `None` when even the state alone is too large to seal (the session is
/// then this replica's only, under a random id). An upstream session that makes the
/// seal pass [`MAX_SESSION_SEAL_LEN`](capable::internal::seal::MAX_SESSION_SEAL_LEN) is
/// left out: a replica continuing the session then opens its own.
pub fn seal_with<'a>(
    ring: &KeyRing,
    mut state: SessionSeal<'a>,
    upstream: Option<(&'a str, capable::Resumption)>,
) -> Option<String> {
    if let Some((server, session)) = upstream {
        let text = |v: &Value| (!v.is_null()).then(|| Text::from(v.to_string()));
        state.upstream.push(Upstream {
            server: Text::from(server),
            server_info: text(&session.server_info),
            capabilities: text(&session.capabilities),
            session_id: Text::from(session.session_id),
            version: Text::from(session.version),
        });
        if let Ok(sealed) = state.seal(ring) {
            return Some(sealed);
        }
        state.upstream.clear();
    }
    state.seal(ring).ok()
}

/// The sealed id of a new session `initialize` opens for `caller`, with no upstream
/// session; `None` as for [`pending`] and [`seal_with`].
#[cfg(test)]
pub fn seal_new(
    ring: &KeyRing,
    message: &Incoming,
    caller: Option<&Arc<Verified>>,
) -> Option<String> {
    seal_with(ring, pending(message, caller)?, None)
}

/// The sealed id of new session `id` (its `initialize` answered, its server behind
/// connected): `state` with the server's HTTP session, the task known by it from now on.
/// `id` itself when nothing seals.
pub async fn id_of_new(
    listener: &Listener,
    commands: &Commands,
    caller: Option<&Arc<Verified>>,
    id: String,
    state: SessionSeal<'static>,
) -> String {
    let Some(ring) = &listener.seal else {
        return id;
    };
    let (reply, upstream) = oneshot::channel();
    let upstream = match commands.send(Command::Resumption { reply }) {
        Ok(()) => tokio::time::timeout(RESTORE_WAIT, upstream)
            .await
            .ok()
            .and_then(Result::ok)
            .flatten(),
        Err(_) => None,
    };
    let upstream = upstream.map(|u| (listener.target.name(), u));
    let Some(sealed) = seal_with(ring, state, upstream) else {
        return id;
    };
    match listener
        .sessions()
        .rename(&owned(caller, &id), &owned(caller, &sealed))
    {
        true => {
            let _ = commands.send(Command::Sealed(sealed.clone()));
            sealed
        }
        false => id,
    }
}

/// The state sealed in `id`, if it opens now and is `caller`'s: decrypted in `buffer`,
/// its strings borrowed from it.
pub fn open<'b>(
    ring: &KeyRing,
    id: &str,
    caller: Option<&Arc<Verified>>,
    buffer: &'b mut Vec<u8>,
) -> Result<SessionSeal<'b>, Refused> {
    let state = SessionSeal::open(ring, id, now(), buffer).map_err(Refused::Seal)?;
    // The identity a session is bound to is the issuer and subject (as on one replica).
    if !state.caller.same(&sealed_caller(caller)) {
        return Err(Refused::OtherCaller);
    }
    Ok(state)
}

/// Whether `presented` is a sealed session id of `caller`'s that opens here.
pub fn opens(listener: &Listener, presented: Option<&str>, caller: Option<&Arc<Verified>>) -> bool {
    match (&listener.seal, presented) {
        (Some(ring), Some(id)) => open(ring, id, caller, &mut Vec::new()).is_ok(),
        _ => false,
    }
}

/// The sealed session of server `server` as the client re-attaches to it; `None` when
/// none is sealed, or what is sealed does not read (the restore then replays).
fn resumption(state: &SessionSeal<'_>, server: &str) -> Option<capable::Resumption> {
    let sealed = state.upstream.iter().find(|u| &*u.server == server)?;
    let json = |t: &Option<Text<'_>>| match t {
        Some(t) => serde_json::from_str::<Value>(t).ok(),
        None => Some(Value::Null),
    };
    Some(capable::Resumption {
        session_id: sealed.session_id.to_string(),
        version: sealed.version.to_string(),
        server_info: json(&sealed.server_info)?,
        capabilities: json(&sealed.capabilities)?,
    })
}

/// The session sealed in `presented`, continued on this replica: its task started, the
/// host's `initialize` replayed to it and answered (the server behind connected), and
/// the request's hold on it. `None` when there is no seal to continue (no key, or the
/// seal refused: `404`) or the server behind could not be connected (`404` too: the
/// host's own `initialize` then says why); `Busy` when the pool has no room.
pub async fn restore(
    listener: &Listener,
    presented: Option<&str>,
    caller: Option<&Arc<Verified>>,
) -> Option<Result<(Commands, InFlight), Busy>> {
    let (ring, id) = (listener.seal.as_ref()?, presented?);
    let audit = &listener.target.audit;
    let mut buffer = Vec::new();
    let state = match open(ring, id, caller, &mut buffer) {
        Ok(state) => state,
        Err(why) => {
            let why = match why {
                Refused::Seal(e) => e.to_string(),
                Refused::OtherCaller => "sealed for another caller".to_owned(),
            };
            audit.record("sealed", json!({"restored": false, "why": why}));
            return None;
        }
    };
    let [initialize, initialized] = replay(&state);
    // The server's HTTP session the replica that began it opened: re-attached to.
    let upstream = resumption(&state, listener.target.name());
    let sealed_upstream = upstream.as_ref().map(|u| u.session_id.clone());
    let (reply, posted) = oneshot::channel();
    let mut replayed = false;
    let key = owned(caller, id);
    // The replay is sent while the pool is locked, so that a request of the same session
    // arriving meanwhile finds the task with the replay ahead of it.
    let held = listener.sessions().task(&key, Instant::now(), || {
        let tx = listener.spawn(Kind::Legacy, caller, Some(id));
        let _ = tx.send(Command::Sealed(id.to_owned()));
        if let Some(upstream) = upstream {
            let _ = tx.send(Command::Resume(upstream));
        }
        let _ = tx.send(Command::Post {
            message: initialize,
            reply,
        });
        let (ignored, _) = oneshot::channel();
        let _ = tx.send(Command::Post {
            message: initialized,
            reply: ignored,
        });
        replayed = true;
        tx
    });
    let held = match held {
        Ok(held) => held,
        Err(Busy) => return Some(Err(Busy)),
    };
    if !replayed {
        return Some(Ok(held));
    }
    let answered = tokio::time::timeout(RESTORE_WAIT, initialized_ok(posted)).await;
    if answered != Ok(true) {
        drop(held);
        listener.sessions().remove(&key);
        let why = "the server behind could not be connected";
        audit.record("sealed", json!({"restored": false, "why": why}));
        return None;
    }
    // Re-attached: the server's session goes on (what it keeps per session with it);
    // replayed: a new one (a stdio server, or none sealed). A server that no longer
    // holds the session renews it at the first request, which its notice says.
    // Re-attached when the server's session is the sealed one (not opened anew after a
    // refusal to take it up).
    let (ask, now_upstream) = oneshot::channel();
    let now_upstream = match held.0.send(Command::Resumption { reply: ask }) {
        Ok(()) => now_upstream.await.ok().flatten().map(|u| u.session_id),
        Err(_) => None,
    };
    let reattached = sealed_upstream.is_some() && sealed_upstream == now_upstream;
    let upstream = if reattached {
        "re-attached"
    } else {
        "replayed"
    };
    audit.record(
        "sealed",
        json!({"restored": true, "version": &*state.version, "upstream": upstream}),
    );
    Some(Ok(held))
}

/// Whether the replayed `initialize` was answered with a result.
async fn initialized_ok(posted: oneshot::Receiver<Posted>) -> bool {
    let Ok(Posted::Stream { mut events, .. }) = posted.await else {
        return false;
    };
    while let Some(event) = events.events.recv().await {
        if event.ends {
            let answer: Value = serde_json::from_slice(&event.data).unwrap_or_default();
            return answer.get("result").is_some();
        }
    }
    false
}

/// What the host said to begin the session, as a restore says it again: `initialize`
/// (under an id of the bridge's own), then `notifications/initialized`.
pub fn replay(state: &SessionSeal<'_>) -> [Incoming; 2] {
    /// The sealed document's JSON text, checked to be one JSON value (it is put into
    /// the replayed `initialize` as it is), or `or` when there is none or it is not.
    fn raw<'a>(text: &'a Option<Text<'_>>, or: &'static str) -> Option<&'a RawValue> {
        let parsed = text.as_deref().map(serde_json::from_str::<&RawValue>);
        parsed
            .and_then(Result::ok)
            .or_else(|| serde_json::from_str(or).ok())
    }
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Params<'a> {
        protocol_version: &'a str,
        capabilities: Option<&'a RawValue>,
        client_info: Option<&'a RawValue>,
    }
    let params = Params {
        protocol_version: &state.version,
        capabilities: raw(&state.capabilities, "{}"),
        client_info: raw(&state.client_info, r#"{"name":"restored","version":"0"}"#),
    };
    let params = serde_json::to_string(&params).unwrap_or_default();
    [
        Incoming::Request {
            id: RequestId::String(REPLAYED.into()),
            method: Method::Initialize.as_str().into(),
            params: Payload::from_json(params),
        },
        Incoming::Notification {
            method: ClientNotificationMethod::Initialized.as_str().into(),
            params: Payload::from_json("{}"),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use capable::internal::seal::SealKey;

    fn verified(sub: &str) -> Arc<Verified> {
        Arc::new(Verified {
            issuer: "https://issuer.example".into(),
            subject: sub.into(),
            client_id: Some("host".into()),
            scopes: vec![],
            groups: vec![],
            expires_at: 0,
        })
    }

    fn initialize() -> Incoming {
        let params = json!({"protocolVersion": "2025-06-18",
            "capabilities": {"roots": {}}, "clientInfo": {"name": "h", "version": "1"}});
        Incoming::Request {
            id: RequestId::Number(1),
            method: "initialize".into(),
            params: Payload::from_json(params.to_string()),
        }
    }

    #[test]
    fn a_session_opens_for_its_own_caller_only_and_replays_what_the_host_said() {
        let ring = KeyRing::new(SealKey::from_bytes(&[5; 32]), vec![]);
        let alice = verified("alice");
        let id = seal_new(&ring, &initialize(), Some(&alice)).unwrap();
        assert!(!id.contains("alice"));
        let mut buffer = Vec::new();
        assert!(matches!(
            open(&ring, &id, Some(&verified("bob")), &mut buffer),
            Err(Refused::OtherCaller)
        ));
        assert!(matches!(
            open(&ring, &id, None, &mut buffer),
            Err(Refused::OtherCaller)
        ));
        let state = open(&ring, &id, Some(&alice), &mut buffer).unwrap();
        let [Incoming::Request { method, params, .. }, Incoming::Notification { .. }] =
            replay(&state)
        else {
            panic!("initialize, then initialized");
        };
        assert_eq!(method, "initialize");
        let params: Value = params.decode().unwrap();
        assert_eq!(params["protocolVersion"], "2025-06-18");
        assert_eq!(params["capabilities"], json!({"roots": {}}));
        assert_eq!(params["clientInfo"]["name"], "h");
    }

    #[test]
    fn an_upstream_session_is_sealed_unless_it_would_not_fit_a_header() {
        let ring = KeyRing::new(SealKey::from_bytes(&[5; 32]), vec![]);
        let state = pending(&initialize(), None).unwrap();
        let session = |info: Value| capable::Resumption {
            session_id: "7c9e6679-7425-40de-944b-e07fc1f90ae7".into(),
            version: "2025-06-18".into(),
            server_info: info,
            capabilities: json!({"tools": {}, "resources": {"subscribe": true}}),
        };
        let small = session(json!({"name": "upstream", "version": "1"}));
        let id = seal_with(&ring, state.clone(), Some(("up", small.clone()))).unwrap();
        let mut buffer = Vec::new();
        let opened = open(&ring, &id, None, &mut buffer).unwrap();
        assert_eq!(resumption(&opened, "up"), Some(small));
        assert_eq!(resumption(&opened, "other"), None);
        // Too large for a header: the session is still sealed, without it (a replica
        // continuing it opens its own upstream session).
        let large = session(json!({"name": "x".repeat(5000), "version": "1"}));
        let id = seal_with(&ring, state, Some(("up", large))).unwrap();
        assert!(id.len() <= capable::internal::seal::MAX_SESSION_SEAL_LEN);
        assert!(open(&ring, &id, None, &mut buffer)
            .unwrap()
            .upstream
            .is_empty());
    }

    #[test]
    fn only_initialize_is_sealed() {
        let ring = KeyRing::new(SealKey::from_bytes(&[5; 32]), vec![]);
        let ping = Incoming::Request {
            id: RequestId::Number(1),
            method: "ping".into(),
            params: Payload::from_json("{}"),
        };
        assert!(seal_new(&ring, &ping, None).is_none());
    }
}
