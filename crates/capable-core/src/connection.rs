//! The ready state: a negotiated connection that issues gated requests and routes
//! every incoming message.
//!
//! A [`Connection`] is pure state. The async shell feeds it received messages
//! ([`Connection::handle`]) and sends the bytes it writes into `out`. Each request is
//! registered with a *waiter* `W`, an opaque value of the shell's choosing (a oneshot
//! sender, say); the connection hands it back with the response, found by id in one
//! map lookup. Results stay raw ([`Payload`]) until the caller decodes them into the
//! one type it expects.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;

use crate::capabilities::ServerCapabilities;
use crate::config::{ClientConfig, GatePolicy};
use crate::gating::{self, ListenFilter, Refusal, Requirement};
use crate::jsonrpc::{self, codes, Incoming, Payload, RequestId, RpcError};
use crate::method::Method;
use crate::model::{
    CancelledParams, Empty, Implementation, ListenFilterWire, ListenParams, ProgressParams,
};
use crate::negotiation::{modern_meta, Established, Negotiated};
use crate::notice::Notice;
use crate::version::{Era, ProtocolVersion};
use crate::violation::Violation;

/// Request ids are sequential integers, so they hash to themselves.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_i64(&mut self, n: i64) {
        self.0 = n as u64;
    }
}

type IdMap<V> = HashMap<i64, V, BuildHasherDefault<IdHasher>>;

struct Pending<W> {
    method: Method,
    /// The request exactly as sent, kept as evidence should the server break its
    /// contract.
    request: Box<[u8]>,
    waiter: W,
}

/// Why a request failed at the server.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ResponseError {
    /// The server answered with a JSON-RPC error.
    #[error("the server answered with an error: {0}")]
    Rpc(RpcError),
    /// The server declared the method's capability and then answered -32601.
    #[error("{0}")]
    Violation(Box<Violation>),
}

/// What one incoming message means for the host.
#[derive(Debug)]
pub enum Event<W> {
    /// The answer to one of our requests, with the waiter it was registered with.
    Response {
        /// Our request id.
        id: i64,
        /// The request's method.
        method: Method,
        /// The waiter given to [`Connection::request`].
        waiter: W,
        /// The raw result, or why there is none.
        outcome: Result<Payload, ResponseError>,
    },
    /// Progress on one of our requests (find its waiter with
    /// [`Connection::waiter_mut`]).
    Progress {
        /// Our request id.
        id: i64,
        /// The progress.
        progress: ProgressParams,
    },
    /// A server notification for the host.
    Notification {
        /// Its method.
        method: String,
        /// Its params.
        params: Payload,
    },
    /// A server request the host handles (elicitation, sampling, roots); answer it with
    /// [`Connection::respond`] or [`Connection::respond_error`].
    ServerRequest {
        /// The server's id.
        id: RequestId,
        /// Its method.
        method: String,
        /// Its params.
        params: Payload,
    },
    /// Nothing for the host: answered internally (a `ping`) or dropped with a notice.
    Handled,
}

/// A negotiated connection. See the module documentation.
pub struct Connection<W> {
    config: ClientConfig,
    negotiated: Negotiated,
    next_id: i64,
    pending: IdMap<Pending<W>>,
    broken: HashSet<Method>,
    violations: Vec<Violation>,
    notices: Vec<Notice>,
    subscriptions: HashSet<String>,
    /// Modern: the members of the `_meta` envelope, pre-serialised once.
    meta_members: Vec<u8>,
    /// Modern: `io.modelcontextprotocol/logLevel` to put on every request.
    log_level: Option<String>,
}

impl<W> std::fmt::Debug for Connection<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("version", &self.negotiated.version)
            .field("server", &self.negotiated.server_info)
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl<W> Connection<W> {
    /// The connection a finished handshake leads to. Notifications the server sent
    /// during the handshake are returned for delivery.
    pub fn new(established: Established) -> (Connection<W>, Vec<(String, Value)>) {
        let Established {
            config,
            negotiated,
            next_id,
            notices,
            early_notifications,
        } = established;
        let meta_members = match negotiated.era() {
            Era::Modern => {
                let meta = serde_json::to_vec(&modern_meta(&config, negotiated.version))
                    .unwrap_or_default();
                // Strip the braces: members only, so more can be added per request.
                meta.get(1..meta.len().saturating_sub(1))
                    .unwrap_or_default()
                    .to_vec()
            }
            Era::Legacy => Vec::new(),
        };
        let conn = Connection {
            config,
            negotiated,
            next_id,
            pending: IdMap::default(),
            broken: HashSet::new(),
            violations: Vec::new(),
            notices,
            subscriptions: HashSet::new(),
            meta_members,
            log_level: None,
        };
        (conn, early_notifications)
    }

    /// What was negotiated.
    pub fn negotiated(&self) -> &Negotiated {
        &self.negotiated
    }

    /// The negotiated version.
    pub fn version(&self) -> ProtocolVersion {
        self.negotiated.version
    }

    /// The server's capabilities.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.negotiated.capabilities
    }

    /// The client configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// The methods the host may call now (the gating table, less methods marked
    /// broken by a violation).
    pub fn actions(&self) -> Vec<Method> {
        gating::actions(self.negotiated.version, &self.negotiated.capabilities)
            .into_iter()
            .filter(|m| !self.broken.contains(m))
            .collect()
    }

    /// Whether `method` may be sent now; the same check every request passes.
    pub fn check(&self, method: Method) -> Result<(), Refusal> {
        if self.broken.contains(&method) {
            return Err(Refusal::MarkedBroken { method });
        }
        if method == Method::Initialize && self.negotiated.era() == Era::Legacy {
            // The handshake sends it, once; a second one would restart the session.
            return Err(Refusal::HandshakeOnly { method });
        }
        match gating::check(
            method,
            self.negotiated.version,
            &self.negotiated.capabilities,
        ) {
            Err(r @ Refusal::NotInVersion { .. }) => Err(r),
            Err(r) if self.config.gate_policy == GatePolicy::Strict => Err(r),
            _ => Ok(()),
        }
    }

    /// Contract violations recorded so far.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Warnings gathered so far (drained).
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    /// Number of requests in flight.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Modern: the log level to ask for on every request (`None` asks for no logs).
    pub fn set_modern_log_level(&mut self, level: Option<String>) {
        self.log_level = level;
    }

    /// Issues a request: gate check, id, one line written to `out`, waiter registered.
    /// On refusal nothing is written and the waiter is handed back.
    ///
    /// With `progress`, the request asks for progress notifications; its token is its
    /// id.
    pub fn request<P: Serialize + ?Sized>(
        &mut self,
        method: Method,
        params: &P,
        progress: bool,
        waiter: W,
        out: &mut Vec<u8>,
    ) -> Result<i64, (Refusal, W)> {
        if let Err(refusal) = self.check(method) {
            return Err((refusal, waiter));
        }
        Ok(self.write_request(method, params, progress, waiter, out))
    }

    /// Issues `subscriptions/listen` (modern), checking every filter field against its
    /// flag. The listen stream's notifications carry this request's id as
    /// `io.modelcontextprotocol/subscriptionId`.
    pub fn listen(
        &mut self,
        filter: &ListenFilter,
        waiter: W,
        out: &mut Vec<u8>,
    ) -> Result<i64, (Refusal, W)> {
        if let Err(refusal) = self.check(Method::Listen) {
            return Err((refusal, waiter));
        }
        if self.config.gate_policy == GatePolicy::Strict {
            if let Err(refusal) = gating::check_listen(
                filter,
                self.negotiated.version,
                &self.negotiated.capabilities,
            ) {
                return Err((refusal, waiter));
            }
        }
        let params = ListenParams {
            notifications: ListenFilterWire::from(filter),
        };
        Ok(self.write_request(Method::Listen, &params, false, waiter, out))
    }

    fn write_request<P: Serialize + ?Sized>(
        &mut self,
        method: Method,
        params: &P,
        progress: bool,
        waiter: W,
        out: &mut Vec<u8>,
    ) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        let start = out.len();
        let rid = RequestId::Number(id);
        if self.negotiated.era() == Era::Legacy && !progress {
            jsonrpc::write_request(out, &rid, method.as_str(), params);
        } else {
            self.write_request_with_meta(out, &rid, method, params, progress);
        }
        self.pending.insert(
            id,
            Pending {
                method,
                request: out[start..].into(),
                waiter,
            },
        );
        id
    }

    fn write_request_with_meta<P: Serialize + ?Sized>(
        &self,
        out: &mut Vec<u8>,
        id: &RequestId,
        method: Method,
        params: &P,
        progress: bool,
    ) {
        let mut meta: Vec<u8> = Vec::with_capacity(self.meta_members.len() + 64);
        meta.extend_from_slice(&self.meta_members);
        let mut member = |key: &str, value: &dyn erased::Json| {
            if !meta.is_empty() {
                meta.push(b',');
            }
            meta.extend_from_slice(serde_json::to_string(key).unwrap_or_default().as_bytes());
            meta.push(b':');
            value.write(&mut meta);
        };
        if progress {
            if let RequestId::Number(n) = id {
                member("progressToken", n);
            }
        }
        if let Some(level) = &self.log_level {
            member("io.modelcontextprotocol/logLevel", level);
        }
        jsonrpc::write_request_with_meta(out, id, method.as_str(), params, &meta);
    }

    /// Handles one message from the server. `now` stamps any violation it reveals.
    pub fn handle(&mut self, msg: Incoming, now: SystemTime, out: &mut Vec<u8>) -> Event<W> {
        match msg {
            Incoming::Result { id, result } => match self.take_pending(&id) {
                Some((n, p)) => Event::Response {
                    id: n,
                    method: p.method,
                    waiter: p.waiter,
                    outcome: Ok(result),
                },
                None => Event::Handled,
            },
            Incoming::Error {
                id: None, error, ..
            } => {
                self.notices.push(Notice::SkippedLine {
                    reason: format!("an error response without an id: {error}"),
                });
                Event::Handled
            }
            Incoming::Error {
                id: Some(id),
                error,
                message,
            } => match self.take_pending(&id) {
                Some((n, p)) => {
                    let outcome = Err(self.classify_error(&p, error, &message, now));
                    Event::Response {
                        id: n,
                        method: p.method,
                        waiter: p.waiter,
                        outcome,
                    }
                }
                None => Event::Handled,
            },
            Incoming::Request { id, method, params } => {
                self.on_server_request(id, method, params, out)
            }
            Incoming::Notification { method, params } => self.on_notification(method, params),
        }
    }

    fn take_pending(&mut self, id: &RequestId) -> Option<(i64, Pending<W>)> {
        let n = match id {
            RequestId::Number(n) => *n,
            RequestId::String(_) => {
                self.notices
                    .push(Notice::UnknownResponseId { id: id.clone() });
                return None;
            }
        };
        match self.pending.remove(&n) {
            Some(p) => Some((n, p)),
            None => {
                let notice = if (0..self.next_id).contains(&n) {
                    Notice::LateResponse { id: id.clone() }
                } else {
                    Notice::UnknownResponseId { id: id.clone() }
                };
                self.notices.push(notice);
                None
            }
        }
    }

    fn classify_error(
        &mut self,
        p: &Pending<W>,
        error: RpcError,
        message: &[u8],
        now: SystemTime,
    ) -> ResponseError {
        if error.code != codes::METHOD_NOT_FOUND {
            return ResponseError::Rpc(error);
        }
        let (version, caps) = (self.negotiated.version, &self.negotiated.capabilities);
        let declared = match p.method {
            // `subscriptions/listen` is declared only through the filter fields it
            // asked for (sent in lenient mode, they may be undeclared).
            Method::Listen => listen_filter_of(&p.request).is_some_and(|filter| {
                filter != ListenFilter::default()
                    && gating::check_listen(&filter, version, caps).is_ok()
            }),
            _ => gating::check(p.method, version, caps).is_ok(),
        };
        let requirement = gating::requirement(p.method, self.negotiated.version);
        let gated = matches!(
            requirement,
            Requirement::Capability(_) | Requirement::Flag(..) | Requirement::ListenFilter
        );
        if !declared || !gated {
            return ResponseError::Rpc(error);
        }
        let violation = Violation {
            capability: requirement.describe(),
            method: p.method,
            request: serde_json::from_slice(&p.request).unwrap_or(Value::Null),
            response: serde_json::from_slice(message).unwrap_or(Value::Null),
            server: self.negotiated.server_info.clone(),
            protocol_version: self.negotiated.version,
            at: now,
        };
        self.broken.insert(p.method);
        self.violations.push(violation.clone());
        ResponseError::Violation(Box::new(violation))
    }

    fn on_server_request(
        &mut self,
        id: RequestId,
        method: String,
        params: Payload,
        out: &mut Vec<u8>,
    ) -> Event<W> {
        let caps = &self.config.capabilities;
        let handled = match method.as_str() {
            "ping" if self.negotiated.era() == Era::Legacy => {
                jsonrpc::write_result(out, &id, &Empty {});
                return Event::Handled;
            }
            "roots/list" => caps.roots,
            "sampling/createMessage" => caps.sampling,
            "elicitation/create" => {
                self.negotiated.version.has_elicitation()
                    && (caps.elicitation_form || caps.elicitation_url)
            }
            _ => false,
        };
        if self.negotiated.era() == Era::Modern {
            // 2026-07-28: servers send no requests and clients send no responses;
            // input arrives as `input_required` results instead.
            self.notices
                .push(Notice::UnsupportedServerRequest { method });
            return Event::Handled;
        }
        if handled {
            return Event::ServerRequest { id, method, params };
        }
        let error = RpcError {
            code: codes::METHOD_NOT_FOUND,
            message: format!("capable does not handle {method}"),
            data: None,
        };
        jsonrpc::write_error(out, &id, &error);
        self.notices
            .push(Notice::UnsupportedServerRequest { method });
        Event::Handled
    }

    fn on_notification(&mut self, method: String, params: Payload) -> Event<W> {
        if method == "notifications/progress" {
            let Ok(progress) = params.decode::<ProgressParams>() else {
                self.notices.push(Notice::SkippedLine {
                    reason: "notifications/progress with malformed params".into(),
                });
                return Event::Handled;
            };
            return match progress.progress_token.as_i64() {
                Some(id) if self.pending.contains_key(&id) => Event::Progress { id, progress },
                _ => {
                    self.notices.push(Notice::UnknownProgress {
                        token: progress.progress_token.to_string(),
                    });
                    Event::Handled
                }
            };
        }
        if let Some((capability, flag)) = gating::notification_requirement(&method) {
            let caps = &self.negotiated.capabilities;
            let declared = match flag {
                Some(flag) => caps.has_flag(capability, flag),
                None => caps.has(capability),
            };
            if !declared {
                let needs = match flag {
                    Some(flag) => format!("{}.{}", capability.key(), flag.key()),
                    None => capability.key().to_owned(),
                };
                self.notices.push(Notice::UndeclaredNotification {
                    method: method.clone(),
                    needs,
                });
            } else if method == "notifications/resources/updated"
                && self.negotiated.era() == Era::Legacy
            {
                let uri = params
                    .decode::<crate::model::ResourceUpdatedParams>()
                    .map(|p| p.uri);
                if let Ok(uri) = uri {
                    if !self
                        .subscriptions
                        .iter()
                        .any(|s| is_same_or_sub_resource(&uri, s))
                    {
                        self.notices.push(Notice::UndeclaredNotification {
                            method: format!("{method} for {uri}"),
                            needs: "a subscription to that URI".into(),
                        });
                    }
                }
            }
        }
        Event::Notification { method, params }
    }

    /// Records a successful `resources/subscribe` (so updates for it are expected).
    pub fn record_subscription(&mut self, uri: &str) {
        self.subscriptions.insert(uri.to_owned());
    }

    /// Forgets a subscription after `resources/unsubscribe`.
    pub fn forget_subscription(&mut self, uri: &str) {
        self.subscriptions.remove(uri);
    }

    /// Every request in flight, by id, with its waiter.
    pub fn waiters(&self) -> impl Iterator<Item = (i64, &W)> {
        self.pending.iter().map(|(id, p)| (*id, &p.waiter))
    }

    /// The waiter of a request in flight.
    pub fn waiter_mut(&mut self, id: i64) -> Option<&mut W> {
        self.pending.get_mut(&id).map(|p| &mut p.waiter)
    }

    /// Gives up on a request: forgets it and writes `notifications/cancelled` for it.
    /// Returns its waiter if it was still in flight.
    pub fn cancel(&mut self, id: i64, reason: &str, out: &mut Vec<u8>) -> Option<W> {
        let p = self.pending.remove(&id)?;
        let params = CancelledParams {
            request_id: RequestId::Number(id),
            reason: Some(reason.to_owned()),
        };
        jsonrpc::write_notification(out, "notifications/cancelled", Some(&params));
        Some(p.waiter)
    }

    /// Forgets a request without telling the server (the transport is gone).
    pub fn forget(&mut self, id: i64) -> Option<W> {
        self.pending.remove(&id).map(|p| p.waiter)
    }

    /// Takes every waiter in flight (the connection closed).
    pub fn drain(&mut self) -> Vec<W> {
        self.pending.drain().map(|(_, p)| p.waiter).collect()
    }

    /// Answers a server request the host handled.
    pub fn respond<R: Serialize + ?Sized>(
        &mut self,
        id: &RequestId,
        result: &R,
        out: &mut Vec<u8>,
    ) {
        jsonrpc::write_result(out, id, result);
    }

    /// Answers a server request with an error.
    pub fn respond_error(&mut self, id: &RequestId, error: &RpcError, out: &mut Vec<u8>) {
        jsonrpc::write_error(out, id, error);
    }

    /// The server's identity.
    pub fn server_info(&self) -> &Implementation {
        &self.negotiated.server_info
    }
}

/// Whether `uri` is `subscribed` or a sub-resource of it (`…/part`, `…#frag`,
/// `…?query`): updates may name a sub-resource of the subscribed URI.
fn is_same_or_sub_resource(uri: &str, subscribed: &str) -> bool {
    match uri.strip_prefix(subscribed) {
        Some("") => true,
        Some(rest) => rest.starts_with(['/', '#', '?']) || subscribed.ends_with('/'),
        None => false,
    }
}

/// The filter of a `subscriptions/listen` request, read back from the request as sent.
fn listen_filter_of(request: &[u8]) -> Option<ListenFilter> {
    let request: Value = serde_json::from_slice(request).ok()?;
    let fields = request.get("params")?.get("notifications")?;
    let flag = |key: &str| fields.get(key).and_then(Value::as_bool) == Some(true);
    Some(ListenFilter {
        tools_list_changed: flag("toolsListChanged"),
        prompts_list_changed: flag("promptsListChanged"),
        resources_list_changed: flag("resourcesListChanged"),
        resource_subscriptions: fields
            .get("resourceSubscriptions")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .unwrap_or_default(),
    })
}

/// Writing heterogeneous `_meta` members without boxing serde.
mod erased {
    pub trait Json {
        fn write(&self, out: &mut Vec<u8>);
    }
    impl<T: serde::Serialize> Json for T {
        fn write(&self, out: &mut Vec<u8>) {
            if serde_json::to_writer(&mut *out, self).is_err() {
                out.extend_from_slice(b"null");
            }
        }
    }
}
