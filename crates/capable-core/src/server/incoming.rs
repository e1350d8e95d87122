//! Every client message: requests gated and routed, notifications, answers to the
//! server's own requests.
//!
//! A request goes through these steps, each of which may answer it:
//!
//! 1. its id is not one in flight already (else `-32600`), its method one MCP
//!    defines (else `-32601`);
//! 2. `initialize` is the engine's ([`negotiate`](super::negotiate));
//! 3. the version it is served under: the legacy session's, or its own modern
//!    envelope's (a client that is neither legacy nor modern yet may `ping`; anything
//!    else without the envelope is refused);
//! 4. the gating table for that version and what the server declared (`-32601`);
//!    for the modern tasks extension, the client must have declared it too (`-32021`);
//! 5. `ping`, `server/discover` and `subscriptions/listen` are the engine's; every
//!    other request is the application's ([`Event::Request`]), kept in flight until
//!    answered or cancelled.

use serde::Deserialize;
use serde_json::json;

use crate::extensions::Extension;
use crate::gating::{self, Requirement};
use crate::jsonrpc::{self, codes, FramingError, Incoming, Payload, RequestId, RpcError};
use crate::method::{ClientNotificationMethod, Method};
use crate::model::{CancelledParams, Empty};
use crate::outbox::Outbox;
use crate::version::{Era, ProtocolVersion};

use super::negotiate::{read_meta, Meta};
use super::notify::LogLevel;
use super::phase::Phase;
use super::{error, ClientNotice, ClientRequest, Event, Inbound, ServerConnection};

#[derive(Deserialize)]
struct UriIn {
    uri: String,
}

#[derive(Deserialize)]
struct LevelIn {
    level: String,
}

impl<W> ServerConnection<W> {
    /// Handles one message from the client. After [`ServerConnection::close`] every
    /// message is [`Event::Handled`] and nothing is written.
    pub fn handle(&mut self, msg: Incoming, out: &mut Outbox) -> Event<W> {
        if self.phase.is_closed() {
            return Event::Handled;
        }
        match msg {
            Incoming::Request { id, method, params } => self.on_request(id, method, params, out),
            Incoming::Notification { method, params } => self.on_notification(method, params),
            Incoming::Result { id, result } => self.on_response(id, Ok(result)),
            Incoming::Error {
                id: Some(id),
                error,
                ..
            } => self.on_response(id, Err(error)),
            Incoming::Error {
                id: None, error, ..
            } => {
                self.notices.push(ClientNotice::SkippedLine {
                    reason: format!("an error response without an id: {error}"),
                });
                Event::Handled
            }
        }
    }

    /// A line that is not a usable message (`error` says why), skipped with a notice.
    /// When it answers one of the server's requests (a response too malformed to
    /// read), that request fails at once. When it asks something, it is answered as
    /// JSON-RPC says: `-32600` to a request whose id can be read (unless a request by
    /// that id is in flight), else without an id, `-32700` when the line is no JSON
    /// and `-32600` when it is JSON but no message (a batch among them). A malformed
    /// notification or answer to nothing is not answered.
    pub fn handle_unreadable(
        &mut self,
        line: &[u8],
        error: &FramingError,
        out: &mut Outbox,
    ) -> Event<W> {
        if let Some(RequestId::Number(n)) = jsonrpc::answered_id(line) {
            if self.outbound.contains_key(&n) {
                let unreadable = RpcError {
                    code: codes::PARSE_ERROR,
                    message: format!("the client's answer is not a valid response: {error}"),
                    data: None,
                };
                return self.on_response(RequestId::Number(n), Err(unreadable));
            }
        }
        self.notices.push(ClientNotice::SkippedLine {
            reason: error.to_string(),
        });
        if self.phase.is_closed() {
            return Event::Handled;
        }
        let invalid = |what: &str| RpcError {
            code: codes::INVALID_REQUEST,
            message: format!("{what}: {error}"),
            data: None,
        };
        match jsonrpc::loose_shape(line) {
            Ok((Some(id), true)) => {
                if !self.inbound.contains_key(&id) {
                    out.write_error(&id, &invalid("not a valid request"));
                }
            }
            Ok((None, false)) => out.write_refusal(&invalid("not a JSON-RPC message")),
            Ok(_) => {}
            Err(e) if e.is_syntax() || e.is_eof() => out.write_refusal(&RpcError {
                code: codes::PARSE_ERROR,
                message: error.to_string(),
                data: None,
            }),
            Err(_) => out.write_refusal(&invalid("not a JSON-RPC message")),
        }
        Event::Handled
    }

    /// Whether the client may send JSON-RPC batches (a 2025-03-26 session): the shell
    /// then splits one ([`jsonrpc::split_batch`]) and hands each message in.
    pub fn accepts_batches(&self) -> bool {
        self.phase
            .version()
            .is_some_and(ProtocolVersion::has_batches)
    }

    fn on_request(
        &mut self,
        id: RequestId,
        name: String,
        params: Payload,
        out: &mut Outbox,
    ) -> Event<W> {
        if self.inbound.contains_key(&id) {
            let e = error(
                codes::INVALID_REQUEST,
                format!("request id {id} is in use by a request in flight"),
            );
            self.refuse(&id, &name, e, out);
            return Event::Handled;
        }
        let Some(method) = Method::from_name(&name) else {
            self.refuse(&id, &name, not_found(&name), out);
            return Event::Handled;
        };
        if method == Method::Initialize {
            return self.on_initialize(id, &params, out);
        }
        let meta = match read_meta(&params) {
            Ok(meta) => meta,
            Err(e) => {
                let e = error(
                    codes::INVALID_PARAMS,
                    format!("params is not an object: {e}"),
                );
                self.refuse(&id, &name, e, out);
                return Event::Handled;
            }
        };
        let served = match self.phase.legacy() {
            Some(client) => Ok((client.version, None)),
            None => self.served_under(method, &name, &meta),
        };
        let (version, log_level) = match served {
            Ok(served) => served,
            Err(None) => {
                // A legacy client's `ping` before its `initialize`.
                out.write_result(&id, &Empty {});
                return Event::Handled;
            }
            Err(Some(e)) => {
                self.refuse(&id, &name, e, out);
                return Event::Handled;
            }
        };
        if let Err(e) = self.gate(method, version) {
            self.refuse(&id, &name, e, out);
            return Event::Handled;
        }
        match method {
            Method::Ping => {
                out.write_result(&id, &Empty {});
                Event::Handled
            }
            Method::Discover => {
                self.on_discover(&id, version, out);
                Event::Handled
            }
            Method::Listen => self.on_listen(id, &params, out),
            _ => {
                let target = match method {
                    Method::Subscribe | Method::Unsubscribe => {
                        params.decode::<UriIn>().ok().map(|p| p.uri)
                    }
                    Method::SetLoggingLevel => match params.decode::<LevelIn>() {
                        Ok(p) if p.level.parse::<LogLevel>().is_ok() => Some(p.level),
                        _ => {
                            let e = error(codes::INVALID_PARAMS, "not a logging level");
                            self.refuse(&id, &name, e, out);
                            return Event::Handled;
                        }
                    },
                    _ => None,
                };
                let wants_progress = meta.progress_token.is_some();
                self.inbound.insert(
                    id.clone(),
                    Inbound {
                        method,
                        progress_token: meta.progress_token,
                        log_level,
                        target,
                    },
                );
                Event::Request(ClientRequest {
                    id,
                    method,
                    params,
                    version,
                    wants_progress,
                    log_level,
                })
            }
        }
    }

    /// The version a request of a client with no legacy session is served under (its
    /// modern envelope), with its log level; `Err(None)` for a `ping` to answer as a
    /// legacy server does before `initialize`; `Err(Some(_))` for the error to answer.
    fn served_under(
        &mut self,
        method: Method,
        name: &str,
        meta: &Meta,
    ) -> Result<(ProtocolVersion, Option<LogLevel>), Option<RpcError>> {
        let protocol = self.config.protocol;
        let offered = ProtocolVersion::ALL
            .into_iter()
            .filter(|v| protocol.accepts(*v))
            .any(|v| gating::requirement(method, v) != Requirement::NotInVersion);
        if !offered {
            return Err(Some(not_found(name)));
        }
        let modern = protocol.modern_proposal().is_some();
        let legacy = protocol.legacy_proposal().is_some();
        let fresh = matches!(self.phase, Phase::Fresh);
        match () {
            _ if modern && meta.version.is_some() => self.envelope(meta).map_err(Some),
            _ if fresh && legacy && method == Method::Ping => Err(None),
            _ if modern => self.envelope(meta).map_err(Some),
            _ => Err(Some(error(
                codes::INVALID_REQUEST,
                "not initialized: a client sends initialize first",
            ))),
        }
    }

    /// The gating table, from the server's side: what it declared, in `version`.
    fn gate(&self, method: Method, version: ProtocolVersion) -> Result<(), RpcError> {
        let requirement = gating::requirement(method, version);
        if let Err(refusal) = gating::check(method, version, &self.config.capabilities) {
            let why = match refusal {
                crate::Refusal::NotInVersion { .. } => {
                    format!("{method} does not exist in protocol version {version}")
                }
                _ => format!(
                    "{method} needs `{}`, which this server does not declare",
                    requirement.describe()
                ),
            };
            return Err(error(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {why}"),
            ));
        }
        if let Requirement::Extension(extension @ Extension::Tasks) = requirement {
            let declared = self
                .phase
                .capabilities()
                .is_some_and(|c| c.has_extension(extension));
            if !declared && version.era() == Era::Modern {
                return Err(RpcError {
                    code: codes::MISSING_CLIENT_CAPABILITY,
                    message: format!("{method} needs the client to declare {}", extension.id()),
                    data: Some(json!({
                        "requiredCapabilities": {"extensions": {extension.id(): {}}}
                    })),
                });
            }
        }
        Ok(())
    }

    fn on_notification(&mut self, method: String, params: Payload) -> Event<W> {
        match ClientNotificationMethod::from_name(&method) {
            Some(ClientNotificationMethod::Initialized) => match self.phase.initialized() {
                true => Event::Initialized,
                false => Event::Handled,
            },
            Some(ClientNotificationMethod::Cancelled) => {
                let Ok(CancelledParams { request_id, reason }) = params.decode() else {
                    self.notices.push(ClientNotice::SkippedLine {
                        reason: "notifications/cancelled with malformed params".into(),
                    });
                    return Event::Handled;
                };
                if self.cancel_listen(&request_id) {
                    return Event::Interest(self.interest());
                }
                // A cancellation that crossed the answer (or names nothing) is
                // nothing to act on.
                match self.inbound.remove(&request_id) {
                    Some(_) => Event::Cancelled {
                        id: request_id,
                        reason,
                    },
                    None => Event::Handled,
                }
            }
            _ => Event::Notification { method, params },
        }
    }

    /// What the success of the client's request changes: a legacy subscription, the
    /// legacy log level.
    pub(super) fn on_success(&mut self, inbound: Inbound) {
        match (inbound.method, inbound.target) {
            (Method::Subscribe, Some(uri)) => {
                self.subscriptions.insert(uri);
            }
            (Method::Unsubscribe, Some(uri)) => {
                self.subscriptions.remove(&uri);
            }
            (Method::SetLoggingLevel, Some(level)) => self.log_level = level.parse().ok(),
            _ => {}
        }
    }
}

fn not_found(name: &str) -> RpcError {
    RpcError {
        code: codes::METHOD_NOT_FOUND,
        message: "Method not found".into(),
        data: Some(json!({ "method": name })),
    }
}
