//! Everything the server sends once the connection is ready: answers routed to their
//! waiters by id, progress (which restarts the request's timeout), server requests
//! (answered here or handed to the host), and notifications (checked against what the
//! server declared).

use bytes::Bytes;

use serde_json::Value;

use crate::input_kind::InputKind;
use crate::jsonrpc::{self, codes, FramingError, Incoming, Payload, RequestId, RpcError};
use crate::method::Method;
use crate::model::{self, Empty, ProgressParams};
use crate::notice::Notice;
use crate::notification::{Notification, NotificationMethod};
use crate::outbox::Outbox;
use crate::time::Now;
use crate::version::Era;
use crate::violation::Violation;

use super::{Answered, Connection, Event, Pending, ResponseError};

impl<W> Connection<W> {
    /// Handles one message from the server, arrived at `now` (`now.wall` stamps any
    /// violation it reveals). After [`Connection::close`] every message is
    /// [`Event::Handled`] and nothing is written.
    pub fn handle(&mut self, msg: Incoming, now: Now, out: &mut Outbox) -> Event<W> {
        self.handle_on(msg, None, now, out)
    }

    /// [`handle`](Self::handle) for a message that came on the stream of the client's
    /// request `related` (`Some`: Streamable HTTP's POST stream of that request, by its
    /// id as sent; `None`: stdio, the standalone GET stream, HTTP+SSE): a server
    /// request there is about that request, and its [`Event::ServerRequest`] says so.
    pub fn handle_on(
        &mut self,
        msg: Incoming,
        related: Option<RequestId>,
        now: Now,
        out: &mut Outbox,
    ) -> Event<W> {
        if self.closed {
            return Event::Handled;
        }
        match msg {
            Incoming::Result { id, result } => match self.handle_result(&id, result, || now) {
                Some(answered) => Event::Response {
                    id: answered.id,
                    method: answered.method,
                    waiter: answered.waiter,
                    outcome: Ok(answered.result),
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
                    let bad_cursor = error.code == codes::INVALID_PARAMS
                        && p.cache_key
                            .as_ref()
                            .is_some_and(|k| k.params().contains("\"cursor\""));
                    if bad_cursor {
                        // An invalid cursor: every page of that list is suspect.
                        self.cache.invalidate(p.method);
                    }
                    let outcome = Err(self.classify_error(&p, error, &message, now));
                    self.spares.recycle(p.request);
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
                match self.on_server_request(id, method, params, out) {
                    Event::ServerRequest {
                        id,
                        kind,
                        method,
                        params,
                        ..
                    } => Event::ServerRequest {
                        id,
                        kind,
                        method,
                        params,
                        related,
                    },
                    other => other,
                }
            }
            Incoming::Notification { method, params } => self.on_notification(method, params, now),
        }
    }

    /// A success response to request `id` ([`Incoming::Result`] taken apart), arrived
    /// at the moment `now` gives: what [`Connection::handle`] makes an
    /// [`Event::Response`] of, without the event (the common message, routed with less
    /// to move). `None` when it answers no request in flight (a notice says so) or the
    /// connection is closed.
    ///
    /// Only an answer that is kept in the cache needs the moment it arrived, so `now`
    /// is asked only then: reading the clocks costs about as much as routing the
    /// answer.
    pub fn handle_result(
        &mut self,
        id: &RequestId,
        mut result: Payload,
        now: impl FnOnce() -> Now,
    ) -> Option<Answered<W>> {
        if self.closed {
            return None;
        }
        let (n, p) = self.take_pending(id)?;
        // Looked at here, so that the usual answer costs no call.
        if matches!(p.method, Method::Subscribe | Method::Unsubscribe) {
            self.on_success(&p);
        }
        self.spares.recycle(p.request);
        if let Some(key) = p.cache_key {
            self.cache.store_noting(key, &mut result, now());
        }
        Some(Answered {
            id: n,
            method: p.method,
            waiter: p.waiter,
            result,
        })
    }

    /// A legacy subscription starts (or ends) the moment its answer is routed: an
    /// update that follows in the same read is expected, never an undeclared one.
    fn on_success(&mut self, p: &Pending<W>) {
        let subscribing = match p.method {
            Method::Subscribe => true,
            Method::Unsubscribe => false,
            _ => return,
        };
        let uri = serde_json::from_slice::<serde_json::Value>(&p.request)
            .ok()
            .and_then(|r| r.pointer("/params/uri")?.as_str().map(str::to_owned));
        if let Some(uri) = uri {
            if subscribing {
                self.subscriptions.insert(uri);
            } else {
                self.subscriptions.remove(&uri);
            }
        }
    }

    /// A line that is not a usable message (`error` says why). When it names a request
    /// in flight — a response that is malformed, truncated or nested too deep to read
    /// — that request fails at once ([`ResponseError::Malformed`]); anything else is
    /// skipped with a notice.
    pub fn handle_unreadable(&mut self, line: &[u8], error: &jsonrpc::FramingError) -> Event<W> {
        if self.closed {
            return Event::Handled;
        }
        let pending = match jsonrpc::answered_id(line) {
            Some(RequestId::Number(n)) => self.pending.remove(n).map(|p| (n, p)),
            _ => None,
        };
        match pending {
            Some((id, p)) => {
                self.spares.recycle(p.request);
                Event::Response {
                    id,
                    method: p.method,
                    waiter: p.waiter,
                    outcome: Err(ResponseError::Malformed(error.to_string())),
                }
            }
            None => {
                self.notices.push(Notice::SkippedLine {
                    reason: error.to_string(),
                });
                Event::Handled
            }
        }
    }

    /// Whether the negotiated version lets the server send JSON-RPC batches.
    pub fn accepts_batches(&self) -> bool {
        self.negotiated.version.has_batches()
    }

    /// The messages of `line`, a JSON-RPC batch (what [`Incoming::parse_whole`] calls
    /// [`FramingError::Batch`]), each with how it reads, to be handed in one by one
    /// ([`Connection::handle`], [`Connection::handle_unreadable`]): parsed when the
    /// negotiated version lets a server send batches (2025-03-26), else refused as a
    /// batch, so that each answer in it fails the request it names instead of being
    /// taken. A batch that is no array of messages is skipped with a notice: nothing
    /// comes back.
    pub fn unbatch(&mut self, line: &Bytes) -> Vec<(Bytes, Result<Incoming, FramingError>)> {
        let Some(messages) = jsonrpc::split_batch(line) else {
            self.notices.push(Notice::SkippedLine {
                reason: "a JSON-RPC batch that is not an array of messages".into(),
            });
            return Vec::new();
        };
        let accepted = self.accepts_batches();
        messages
            .into_iter()
            .map(|message| {
                let parsed = match accepted {
                    true => Incoming::parse(message.clone()),
                    false => Err(FramingError::Batch),
                };
                (message, parsed)
            })
            .collect()
    }

    /// The request `id` answers, taken out of those in flight; an answer to none is
    /// noted. Inlined: the usual case is a lookup, the rest out of its way.
    #[inline]
    fn take_pending(&mut self, id: &RequestId) -> Option<(i64, Pending<W>)> {
        let n = match id {
            RequestId::Number(n) => *n,
            RequestId::String(_) => {
                self.note_unanswered(id, None);
                return None;
            }
        };
        match self.pending.remove(n) {
            Some(p) => Some((n, p)),
            None => {
                self.note_unanswered(id, Some(n));
                None
            }
        }
    }

    /// The notice for an answer to no request in flight: a late one to a number this
    /// connection sent (`Some`), else an unknown id.
    #[cold]
    fn note_unanswered(&mut self, id: &RequestId, number: Option<i64>) {
        let notice = match number {
            Some(n) if (0..self.next_id).contains(&n) => Notice::LateResponse { id: id.clone() },
            _ => Notice::UnknownResponseId { id: id.clone() },
        };
        self.notices.push(notice);
    }

    /// A -32601 to a method the server declared is a contract violation: recorded
    /// with both messages, and the method is never sent again in this session.
    fn classify_error(
        &mut self,
        p: &Pending<W>,
        error: RpcError,
        message: &[u8],
        now: Now,
    ) -> ResponseError {
        if error.code != codes::METHOD_NOT_FOUND {
            return ResponseError::Rpc(error);
        }
        let judged = Violation::judge(p.method, &p.request, message, &self.negotiated, now.wall);
        let Some(violation) = judged else {
            return ResponseError::Rpc(error);
        };
        self.mark_broken(p.method);
        self.violations.push(violation.clone());
        ResponseError::Violation(Box::new(violation))
    }

    fn on_server_request(
        &mut self,
        id: RequestId,
        method: String,
        params: Payload,
        out: &mut Outbox,
    ) -> Event<W> {
        if method == "ping" && self.negotiated.era() == Era::Legacy {
            out.write_result(&id, &Empty {});
            return Event::Handled;
        }
        if self.negotiated.era() == Era::Modern {
            // 2026-07-28: servers send no requests and clients send no responses;
            // input arrives as `input_required` results instead.
            self.notices
                .push(Notice::UnsupportedServerRequest { method });
            return Event::Handled;
        }
        // Only an elicitation's params matter here (its mode); the host reads them all.
        let head = if method == "elicitation/create" {
            params.decode_or_default::<Value>().unwrap_or_default()
        } else {
            Value::Null
        };
        let kind = match InputKind::of(&method, &head) {
            InputKind::Elicitation { .. } if !self.negotiated.version.has_elicitation() => {
                InputKind::Other
            }
            kind => kind,
        };
        match kind.check(&method, &self.config.capabilities) {
            Ok(()) => Event::ServerRequest {
                id,
                kind,
                method,
                params,
                related: None,
            },
            Err(error) => {
                out.write_error(&id, &error);
                if error.code == codes::METHOD_NOT_FOUND {
                    self.notices
                        .push(Notice::UnsupportedServerRequest { method });
                }
                Event::Handled
            }
        }
    }

    fn on_notification(&mut self, method: String, params: Payload, now: Now) -> Event<W> {
        let notification = match Notification::parse(&method, &params) {
            Notification::Progress(progress) => return self.on_progress(progress, now),
            Notification::Malformed {
                method: NotificationMethod::Progress,
                ..
            } => {
                self.notices.push(Notice::SkippedLine {
                    reason: "notifications/progress with malformed params".into(),
                });
                return Event::Handled;
            }
            notification => notification,
        };
        if notification.list_changed().is_some()
            || notification.method() == Some(NotificationMethod::ResourceUpdated)
        {
            let value = params.decode::<serde_json::Value>().unwrap_or_default();
            self.cache.on_notification(&method, &value);
        }
        if let Some((capability, flag)) = notification.method().and_then(|m| m.requirement()) {
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
            } else if let (Notification::ResourceUpdated { uri }, Era::Legacy, false) = (
                &notification,
                self.negotiated.era(),
                self.subscriptions_shared,
            ) {
                if !self
                    .subscriptions
                    .iter()
                    .any(|s| model::is_same_or_sub_resource(uri, s))
                {
                    self.notices
                        .push(Notice::UnexpectedUpdate { uri: uri.clone() });
                }
            }
        }
        self.route_listen(notification, method, params)
    }

    /// Progress for a request that asked for it restarts its timeout; any other is
    /// dropped with a notice.
    fn on_progress(&mut self, progress: ProgressParams, now: Now) -> Event<W> {
        match progress.progress_token.as_i64() {
            Some(id) if self.pending.get(id).is_some_and(|p| p.progress) => {
                self.extend_for_progress(id, now.instant);
                Event::Progress { id, progress }
            }
            _ => {
                self.notices.push(Notice::UnknownProgress {
                    token: progress.progress_token.to_string(),
                });
                Event::Handled
            }
        }
    }
}
