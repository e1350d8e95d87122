//! A sealed legacy session's resource subscriptions shared by the replicas through the
//! gateway's store ([`crate::store::subscriptions`]), where the server behind cannot
//! keep them for the host: a 2026-07-28 server (the bridge listens for the host on a
//! stream of its own), the servers of a `--config` (each replica's own sessions) or a
//! stdio server (each replica runs its own).
//! One legacy HTTP server behind (`--url`) needs none of this: every replica
//! re-attaches to its one session, whose record is the host's
//! ([`Host::keeps_state_upstream`](crate::host::Host::keeps_state_upstream)).
//!
//! | when | this session's task |
//! |---|---|
//! | the host's `resources/subscribe`, on any replica | sent on as it came and answered as the server(s) answered; taken, the URI is added to the session's set in the store before the host has its answer, and the replica holding the host's `GET` is told. Here the subscription is let go again unless the host's `GET` is here: only the holder of the stream delivers |
//! | the host's `resources/unsubscribe`, on any replica | the URI taken from the set first (the holder of the stream told); answered `{}` here when this replica held nothing of it, else sent on as it came |
//! | the host's `GET` opens here (first, or its reconnect after its replica died) | the set watched and read: each URI subscribed to here (a request of the bridge's own, answered to nobody); so at each word that the set changed. One refused (its server down, no server offers it) is said in the audit and asked again at the next word |
//! | the host's `GET` ends here | what was subscribed for it here is let go, and the set no longer watched |
//! | the store cannot be reached | `whenDown: open` (default): the subscription stays this replica's, as without a store, and `store_down` in the audit says so; `closed`: the host's subscribe or unsubscribe is refused (`-32603`, saying why) |
//! | a set of [`MAX_URIS`] URIs, a URI past [`MAX_URI_LEN`] bytes | that subscription stays this replica's (a notice in the audit) |
//!
//! The set lives [`KEPT`](crate::store::subscriptions::KEPT) after its last change (a
//! sealed session's life), under a key hashed from the session id. A `DELETE` does not
//! take it away (nothing revokes the seal either): it expires with the session.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use capable::config::WhenDown;
use capable::internal::jsonrpc::{Incoming, Payload, RequestId, RpcError};
use capable::internal::method::Method;
use capable::internal::Outbox;
use serde_json::{json, Value};

use crate::audit::Audit;
use crate::store::subscriptions::{Watch, KIND, MAX_URIS, MAX_URI_LEN};
use crate::store::{Store, StoreError};

/// What becomes of a host's request.
pub enum Intercept {
    /// Sent on to the relay; with the change to keep once it is answered with a result.
    Pass(Option<Change>),
    /// Answered here: the answer, to route as the relay's are.
    Answered(Outbox),
}

/// A host's subscribe waiting for its answer.
pub struct Change {
    uri: String,
}

/// One session's part in the shared subscriptions (see the module documentation).
pub struct Shared {
    store: Arc<dyn Store>,
    when_down: WhenDown,
    audit: Arc<Audit>,
    /// The session's key in the store, once its id is sealed.
    key: Option<String>,
    /// The URIs subscribed to here for the set while the host's `GET` is here.
    held: BTreeSet<String>,
    /// The set watched while the host's `GET` is here.
    watch: Option<Watch>,
    /// The host's subscribes in flight here, by the stream of their answer.
    pending: HashMap<u64, Change>,
    /// The ids of the bridge's own requests.
    next: u64,
    /// The bridge's own requests to send, with the URI of each subscribe among them.
    queued: Vec<(Incoming, Option<String>)>,
    /// The bridge's own subscribes in flight, by the stream of their answer.
    replays: HashMap<u64, String>,
}

impl Shared {
    /// A session's part, when the gateway's store shares subscriptions.
    pub fn new(
        store: Option<&Arc<dyn Store>>,
        when_down: WhenDown,
        audit: Arc<Audit>,
    ) -> Option<Shared> {
        let store = store?;
        store.subscriptions()?;
        Some(Shared {
            store: store.clone(),
            when_down,
            audit,
            key: None,
            held: BTreeSet::new(),
            watch: None,
            pending: HashMap::new(),
            next: 0,
            queued: Vec::new(),
            replays: HashMap::new(),
        })
    }

    /// The session is known by sealed id `id` from now on.
    pub fn sealed(&mut self, id: &str) {
        self.key = Some(crate::store::key(KIND, &[id]));
    }

    /// The session's key, when the host's subscriptions are kept in the store: it is
    /// sealed, and the server behind does not keep them itself (`upstream_keeps`).
    fn active(&self, upstream_keeps: bool) -> Option<&str> {
        self.key.as_deref().filter(|_| !upstream_keeps)
    }

    /// What becomes of `message`, a host's request (the others pass); `upstream_keeps`:
    /// the server behind keeps the host's subscriptions
    /// ([`Host::keeps_state_upstream`](crate::host::Host::keeps_state_upstream)).
    pub async fn before(&mut self, upstream_keeps: bool, message: &Incoming) -> Intercept {
        let Incoming::Request { id, method, params } = message else {
            return Intercept::Pass(None);
        };
        let subscribe = method == Method::Subscribe.as_str();
        if !subscribe && method != Method::Unsubscribe.as_str() {
            return Intercept::Pass(None);
        }
        let Some(key) = self.active(upstream_keeps).map(str::to_owned) else {
            return Intercept::Pass(None);
        };
        let Some(uri) = uri_of(params) else {
            return Intercept::Pass(None);
        };
        if uri.len() > MAX_URI_LEN {
            self.notice(
                "a URI longer than the store keeps: its subscription stays with this replica",
            );
            return Intercept::Pass(None);
        }
        if subscribe {
            return Intercept::Pass(Some(Change { uri }));
        }
        let Some(shared) = self.store.subscriptions() else {
            return Intercept::Pass(None);
        };
        // Taken from the set first: the stream's holder lets it go at once.
        match shared.change(&key, &uri, false).await {
            // Held for the set here (the host's `GET` is here): let go as it came.
            Ok(true) if self.held.remove(&uri) => Intercept::Pass(None),
            // Nothing of it here: the holder of the stream lets it go.
            Ok(true) => {
                let mut out = Outbox::new();
                out.write_result(id, &json!({}));
                Intercept::Answered(out)
            }
            // Not in the set: this replica's own, if anyone's (else refused as ever).
            Ok(false) => Intercept::Pass(None),
            Err(e) => match self.down(&e) {
                None => Intercept::Pass(None),
                Some(error) => {
                    let mut out = Outbox::new();
                    out.write_error(id, &error);
                    Intercept::Answered(out)
                }
            },
        }
    }

    /// A host's request that went on in `stream`, with `change` to keep once answered.
    pub fn wait(&mut self, stream: u64, change: Option<Change>) {
        if let Some(change) = change {
            self.pending.insert(stream, change);
        }
    }

    /// The answer `data` ends `stream`: a subscribe taken is added to the set before the
    /// host has it (its answer turned into an error when the store is down and
    /// `whenDown` is `closed`), and let go here unless the host's `GET` is here.
    /// A subscribe of the bridge's own for the set that was refused is said, and asked
    /// again at the set's next change. `listens`: the host's `GET` is here.
    pub async fn answered(&mut self, listens: bool, stream: u64, data: &mut bytes::Bytes) {
        if let Some(uri) = self.replays.remove(&stream) {
            return self.replayed(uri, data);
        }
        let Some(Change { uri }) = self.pending.remove(&stream) else {
            return;
        };
        let answer: Value = serde_json::from_slice(data).unwrap_or_default();
        if answer.get("result").is_none() {
            return;
        }
        let (Some(key), Some(shared)) = (self.key.clone(), self.store.subscriptions()) else {
            return;
        };
        match shared.change(&key, &uri, true).await {
            Ok(true) if listens => {
                self.held.insert(uri);
            }
            Ok(true) => self.replay(Method::Unsubscribe, &uri),
            Ok(false) => {
                self.notice("the session's subscriptions in the store are as many as it keeps: this one stays with this replica");
            }
            Err(e) => {
                if let Some(error) = self.down(&e) {
                    self.replay(Method::Unsubscribe, &uri);
                    let id = answer.get("id").cloned().unwrap_or(Value::Null);
                    let refused = json!({"jsonrpc": "2.0", "id": id, "error": error});
                    *data = refused.to_string().into();
                }
            }
        }
    }

    /// The answer `data` to the bridge's own subscribe of `uri` for the set: refused, it
    /// is not held here (asked again at the set's next change), and said.
    fn replayed(&mut self, uri: String, data: &bytes::Bytes) {
        let answer: Value = serde_json::from_slice(data).unwrap_or_default();
        let Some(error) = answer.get("error") else {
            return;
        };
        self.held.remove(&uri);
        let why = error.get("message").and_then(Value::as_str).unwrap_or("");
        let why: String = why.chars().take(200).collect();
        self.audit.record(
            "notice",
            json!({"side": "bridge", "level": "warning",
                   "notice": format!("a subscription of the host's session could not be made again \
                                      on this replica ({why}): asked again when its set changes \
                                      or the host's stream reopens")}),
        );
    }

    /// The host's `GET` opened or ended here (`listens`; `upstream_keeps` as for
    /// [`Shared::before`]): the set is watched and subscribed to here, or let go.
    pub async fn follow(&mut self, listens: bool, upstream_keeps: bool) {
        let Some(key) = self.active(upstream_keeps).map(str::to_owned) else {
            return;
        };
        match (listens, self.watch.is_some()) {
            (true, false) => {
                let Some(shared) = self.store.subscriptions() else {
                    return;
                };
                // Watched before it is read: no change is missed in between.
                self.watch = Some(shared.watch(&key));
                self.reconcile().await;
            }
            (false, true) => {
                self.watch = None;
                for uri in std::mem::take(&mut self.held) {
                    self.replay(Method::Unsubscribe, &uri);
                }
            }
            _ => {}
        }
    }

    /// Resolves when the set may have changed while it is watched; never otherwise.
    pub async fn changed(&self) {
        match &self.watch {
            Some(watch) => watch.changed().await,
            None => std::future::pending().await,
        }
    }

    /// The set read again: what it gained subscribed to here, what it lost let go.
    pub async fn reconcile(&mut self) {
        let (Some(key), Some(shared)) = (self.key.clone(), self.store.subscriptions()) else {
            return;
        };
        let members = match shared.members(&key).await {
            Ok(members) => members,
            Err(e) => {
                self.down(&e);
                return;
            }
        };
        let members: BTreeSet<String> = members.into_iter().take(MAX_URIS).collect();
        let gone: Vec<String> = self.held.difference(&members).cloned().collect();
        let new: Vec<String> = members.difference(&self.held).cloned().collect();
        for uri in gone {
            self.held.remove(&uri);
            self.replay(Method::Unsubscribe, &uri);
        }
        if !new.is_empty() {
            self.audit.record(
                "subscriptions",
                json!({"side": "bridge", "from": "store", "subscribed": new.len()}),
            );
        }
        for uri in new {
            self.replay(Method::Subscribe, &uri);
            self.held.insert(uri);
        }
    }

    /// `method` of `uri` to be sent by the bridge for the host ([`Shared::take_replays`]),
    /// answered to nobody.
    fn replay(&mut self, method: Method, uri: &str) {
        self.next += 1;
        let message = Incoming::Request {
            id: RequestId::String(format!("capable/shared/{}", self.next)),
            method: method.as_str().into(),
            params: Payload::from_json(json!({ "uri": uri }).to_string()),
        };
        let watched = (method == Method::Subscribe).then(|| uri.to_owned());
        self.queued.push((message, watched));
    }

    /// The requests of the bridge's own to send now, in order: each with the URI of a
    /// subscribe whose answer is to be watched ([`Shared::replaying`]).
    pub fn take_replays(&mut self) -> Vec<(Incoming, Option<String>)> {
        std::mem::take(&mut self.queued)
    }

    /// The bridge's own subscribe of `uri` went on in `stream`: its answer is watched.
    pub fn replaying(&mut self, stream: u64, uri: String) {
        self.replays.insert(stream, uri);
    }

    /// The store could not be reached (`e`): said, and the error the host gets when
    /// `whenDown` is `closed` (`None`: served as without a store).
    fn down(&self, e: &StoreError) -> Option<RpcError> {
        let closed = self.when_down == WhenDown::Closed;
        let then = match closed {
            true => "the host's subscribe or unsubscribe is refused",
            false => "the host's subscriptions stay with the replica that took them",
        };
        self.audit.record(
            "store_down",
            json!({"side": "bridge", "use": "subscriptions", "error": e.to_string(),
                   "notice": then}),
        );
        closed.then(|| RpcError {
            code: -32603,
            message: format!(
                "the store that keeps this session's subscriptions for every replica cannot be reached ({e}): try again"
            ),
            data: None,
        })
    }

    fn notice(&self, notice: &str) {
        self.audit.record(
            "notice",
            json!({"side": "bridge", "level": "warning", "notice": notice}),
        );
    }
}

/// The `uri` of a subscribe's or unsubscribe's params.
fn uri_of(params: &Payload) -> Option<String> {
    let params: Value = params.decode().ok()?;
    params.get("uri")?.as_str().map(str::to_owned)
}
