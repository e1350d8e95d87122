//! What the client sends: the bytes of every message it writes and, beside each, what
//! that message is, as the writer knew it.
//!
//! The handshake and the connection write each message as one line (`…\n`) at the end
//! of an [`Outbox`] and note it there as an [`Outgoing`]: a request with its id, method,
//! protocol version and target, `notifications/initialized`, a cancellation with the
//! request it cancels, an answer to a server request. A transport that moves bytes
//! (stdio) sends [`Outbox::bytes`] as they are, in one write; one that decides per
//! message (HTTP: a POST each, headers chosen by method and target) reads each
//! message's record ([`Outbox::messages`]) instead of parsing the line back.
//!
//! ```
//! use capable_core::internal::outbox::{Outbox, Outgoing};
//! use capable_core::{Method, RequestId};
//!
//! let mut out = Outbox::new();
//! out.write_request(&RequestId::Number(1), Method::ListTools, &serde_json::json!({}));
//! out.write_cancelled(&RequestId::Number(1), "gone");
//! let kinds: Vec<_> = out.messages().map(|(what, _)| what).collect();
//! assert!(matches!(&kinds[0], Outgoing::Request(r) if r.method == Method::ListTools));
//! assert_eq!(kinds[1], Outgoing::Cancelled { id: RequestId::Number(1) });
//! assert!(out.bytes().ends_with(b"\n"));
//! ```

use std::ops::Range;

use serde::Serialize;
use serde_json::Value;

use crate::jsonrpc::{self, Params, RequestId, RpcError};
use crate::method::{ClientNotificationMethod, Method};
use crate::model::CancelledParams;
use crate::version::ProtocolVersion;

/// One message the client wrote, as it knew it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Outgoing {
    /// A request: it expects an answer.
    Request(OutgoingRequest),
    /// `notifications/initialized` (legacy, right after `initialize` was answered).
    Initialized,
    /// `notifications/cancelled` for the request `id`.
    Cancelled {
        /// The request it cancels.
        id: RequestId,
    },
    /// Any other notification.
    Notification {
        /// Its method.
        method: String,
    },
    /// An answer (a result or an error) to the peer's request `id`.
    Response {
        /// The peer's id.
        id: RequestId,
    },
    /// A server's notification that belongs to the client's request `request`:
    /// progress of it, a log line while it runs, an item of the `subscriptions/listen`
    /// stream it opened.
    Related {
        /// Its method.
        method: String,
        /// The client request it belongs to.
        request: RequestId,
    },
    /// A server's own request to its client (legacy `ping`, `roots/list`,
    /// `sampling/createMessage`, `elicitation/create`).
    ServerRequest {
        /// Its id.
        id: RequestId,
        /// Its method.
        method: crate::server::ServerMethod,
        /// The client's request it is about, when known (a question asked while that
        /// request runs): over HTTP it goes on that request's stream.
        related: Option<RequestId>,
    },
    /// An error answer without an id: the peer's line was no message whose id could be
    /// read (JSON-RPC's parse error, invalid request).
    Refused,
}

/// A request the client wrote.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OutgoingRequest {
    /// Its id.
    pub id: RequestId,
    /// Its method.
    pub method: Method,
    /// The protocol version its `_meta` carries: every modern request's; `None` for a
    /// legacy one.
    pub version: Option<ProtocolVersion>,
    /// What it targets (modern only): the tool of `tools/call`, the prompt of
    /// `prompts/get`, the URI of `resources/read`, the task of `tasks/get`,
    /// `tasks/update` and `tasks/cancel` (see [`Params::target`]).
    pub target: Option<Box<str>>,
    /// The arguments of a modern `tools/call`, as written.
    pub arguments: Option<Box<Value>>,
    /// Where its `params._meta` object lies in its line (modern).
    pub meta: Option<Range<usize>>,
}

impl OutgoingRequest {
    /// A request `id` for `method`, legacy (no version, no target).
    pub fn new(id: RequestId, method: Method) -> OutgoingRequest {
        OutgoingRequest {
            id,
            method,
            version: None,
            target: None,
            arguments: None,
            meta: None,
        }
    }
}

/// What a request targets, read off its params (see [`Params::target`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Target {
    /// The tool, prompt, resource URI or task it names.
    pub name: Option<Box<str>>,
    /// A tool call's arguments.
    pub arguments: Option<Box<Value>>,
}

impl Target {
    /// The target of `method`'s request whose params are `params`.
    pub fn of_value(method: Method, params: Value) -> Target {
        let Value::Object(mut params) = params else {
            return Target::default();
        };
        let name = method
            .target_member()
            .and_then(|member| params.get(member)?.as_str())
            .map(Box::from);
        let arguments = match method {
            Method::CallTool => params.remove("arguments").map(Box::new),
            _ => None,
        };
        Target { name, arguments }
    }
}

/// The client's outgoing bytes, with a record of each message in them. Reads as its
/// bytes ([`std::ops::Deref`] to `[u8]`).
#[derive(Clone, Debug, Default)]
pub struct Outbox {
    bytes: Vec<u8>,
    /// Each message, with the end of its line (its newline included) in `bytes`.
    messages: Vec<(usize, Note)>,
    /// The records [`Note::Full`] points at, in order.
    full: Vec<Outgoing>,
}

/// A message's record as kept: the usual messages (a legacy request, a cancellation,
/// `notifications/initialized`) as plain values, which cost nothing to keep and drop;
/// any other as an [`Outgoing`] of its own.
#[derive(Clone, Copy, Debug)]
enum Note {
    Request {
        id: i64,
        method: Method,
    },
    Cancelled {
        id: i64,
    },
    Initialized,
    /// `full[_]`.
    Full(usize),
}

impl Outbox {
    /// An empty outbox.
    pub fn new() -> Outbox {
        Outbox::default()
    }

    /// Every message's bytes, one line each.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Each message's record with its line (without the newline), in the order
    /// written.
    pub fn messages(&self) -> impl ExactSizeIterator<Item = (Outgoing, &[u8])> + '_ {
        let mut start = 0;
        self.messages.iter().map(move |(end, note)| {
            let line = &self.bytes[start..end - 1];
            start = *end;
            (self.record(*note), line)
        })
    }

    fn record(&self, note: Note) -> Outgoing {
        match note {
            Note::Request { id, method } => {
                Outgoing::Request(OutgoingRequest::new(RequestId::Number(id), method))
            }
            Note::Cancelled { id } => Outgoing::Cancelled {
                id: RequestId::Number(id),
            },
            Note::Initialized => Outgoing::Initialized,
            Note::Full(at) => self.full[at].clone(),
        }
    }

    /// How many messages it holds.
    pub fn count(&self) -> usize {
        self.messages.len()
    }

    /// Empties it, keeping its room.
    #[inline]
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.messages.clear();
        self.full.clear();
    }

    /// Drops the first `n` bytes, which a transport has sent: whole lines, and their
    /// records with them. (A write that stops inside a line leaves that line's record:
    /// its rest is still to go.)
    #[inline]
    pub fn consume(&mut self, n: usize) {
        if n >= self.bytes.len() {
            return self.clear();
        }
        self.consume_part(n);
    }

    fn consume_part(&mut self, n: usize) {
        self.bytes.drain(..n);
        let sent = self.messages.partition_point(|(end, _)| *end <= n);
        let full = self.messages[..sent]
            .iter()
            .filter(|(_, note)| matches!(note, Note::Full(_)))
            .count();
        self.messages.drain(..sent);
        self.full.drain(..full);
        for (end, note) in &mut self.messages {
            *end -= n;
            if let Note::Full(at) = note {
                *at -= full;
            }
        }
    }

    /// Notes the message that was just written (its line ends the bytes).
    #[inline]
    fn noted(&mut self, note: Note) {
        self.messages.push((self.bytes.len(), note));
    }

    /// Notes the message that was just written, by its whole record.
    fn wrote(&mut self, what: Outgoing) {
        self.full.push(what);
        self.noted(Note::Full(self.full.len() - 1));
    }

    /// Writes a legacy request: [`jsonrpc::write_request`], noted.
    pub fn write_request<P: Params + ?Sized>(
        &mut self,
        id: &RequestId,
        method: Method,
        params: &P,
    ) {
        jsonrpc::write_method_request(&mut self.bytes, id, method, params);
        match id {
            RequestId::Number(id) => self.noted(Note::Request { id: *id, method }),
            other => self.wrote(Outgoing::Request(OutgoingRequest::new(
                other.clone(),
                method,
            ))),
        }
    }

    /// Writes a request whose params carry `_meta` made of `meta_members` (see
    /// [`jsonrpc::write_request_with_meta`]); modern when `version` is given, in which
    /// case its target is noted too.
    pub fn write_request_with_meta<P: Params + ?Sized>(
        &mut self,
        id: &RequestId,
        method: Method,
        params: &P,
        meta_members: &[u8],
        version: Option<ProtocolVersion>,
    ) {
        let start = self.bytes.len();
        let meta = jsonrpc::write_request_with_meta(
            &mut self.bytes,
            id,
            method.as_str(),
            params,
            meta_members,
        );
        if let (None, RequestId::Number(id)) = (version, id) {
            return self.noted(Note::Request { id: *id, method });
        }
        let mut request = OutgoingRequest::new(id.clone(), method);
        if version.is_some() {
            request.version = version;
            request.meta = Some(meta.start - start..meta.end - start);
            if method.target_member().is_some() {
                let target = params.target(method);
                request.target = target.name;
                request.arguments = target.arguments;
            }
        }
        self.wrote(Outgoing::Request(request));
    }

    /// Writes `notifications/initialized`.
    pub fn write_initialized(&mut self) {
        let method = ClientNotificationMethod::Initialized.as_str();
        jsonrpc::write_notification::<()>(&mut self.bytes, method, None);
        self.noted(Note::Initialized);
    }

    /// Writes `notifications/cancelled` for request `id`, saying `reason`.
    pub fn write_cancelled(&mut self, id: &RequestId, reason: &str) {
        let params = CancelledParams {
            request_id: id.clone(),
            reason: Some(reason.to_owned()),
        };
        let method = ClientNotificationMethod::Cancelled.as_str();
        jsonrpc::write_notification(&mut self.bytes, method, Some(&params));
        match id {
            RequestId::Number(id) => self.noted(Note::Cancelled { id: *id }),
            other => self.wrote(Outgoing::Cancelled { id: other.clone() }),
        }
    }

    /// Writes the notification `method` (any but the two above), with `params`
    /// unless `None`.
    pub fn write_notification<P: Serialize + ?Sized>(&mut self, method: &str, params: Option<&P>) {
        jsonrpc::write_notification(&mut self.bytes, method, params);
        self.wrote(Outgoing::Notification {
            method: method.to_owned(),
        });
    }

    /// Writes a server's notification `method` that belongs to the client's request
    /// `request` (see [`Outgoing::Related`]).
    pub fn write_related<P: Serialize + ?Sized>(
        &mut self,
        method: &str,
        params: Option<&P>,
        request: &RequestId,
    ) {
        jsonrpc::write_notification(&mut self.bytes, method, params);
        self.wrote(Outgoing::Related {
            method: method.to_owned(),
            request: request.clone(),
        });
    }

    /// Writes a server's request `id` to its client (about the client's request
    /// `related`, when known).
    pub fn write_server_request<P: Params + ?Sized>(
        &mut self,
        id: i64,
        method: crate::server::ServerMethod,
        params: &P,
        related: Option<&RequestId>,
    ) {
        let id = RequestId::Number(id);
        jsonrpc::write_request(&mut self.bytes, &id, method.as_str(), params);
        let related = related.cloned();
        self.wrote(Outgoing::ServerRequest {
            id,
            method,
            related,
        });
    }

    /// Answers server request `id` with `result`.
    pub fn write_result<R: Serialize + ?Sized>(&mut self, id: &RequestId, result: &R) {
        jsonrpc::write_result(&mut self.bytes, id, result);
        self.wrote(Outgoing::Response { id: id.clone() });
    }

    /// [`Outbox::write_result`] with the result written by `result` (one JSON value).
    pub(crate) fn write_result_with(&mut self, id: &RequestId, result: impl FnOnce(&mut Vec<u8>)) {
        jsonrpc::write::write_result_with(&mut self.bytes, id, result);
        self.wrote(Outgoing::Response { id: id.clone() });
    }

    /// Answers server request `id` with `error`.
    pub fn write_error(&mut self, id: &RequestId, error: &RpcError) {
        jsonrpc::write_error(&mut self.bytes, id, error);
        self.wrote(Outgoing::Response { id: id.clone() });
    }

    /// Answers a line whose id could not be read with `error` ([`jsonrpc::write_refusal`]).
    pub fn write_refusal(&mut self, error: &RpcError) {
        jsonrpc::write_refusal(&mut self.bytes, error);
        self.wrote(Outgoing::Refused);
    }
}

impl std::ops::Deref for Outbox {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl AsRef<[u8]> for Outbox {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outbox() -> Outbox {
        let mut out = Outbox::new();
        out.write_request(&RequestId::Number(7), Method::Ping, &serde_json::json!({}));
        out.write_initialized();
        out.write_result(&RequestId::String("s".into()), &serde_json::json!({}));
        out
    }

    #[test]
    fn each_record_stands_beside_its_line() {
        let out = outbox();
        let lines: Vec<&[u8]> = out.bytes().split(|b| *b == b'\n').collect();
        assert_eq!(out.count(), 3);
        for ((what, line), text) in out.messages().zip(&lines) {
            assert_eq!(line, *text, "{what:?}");
            let value: Value = serde_json::from_slice(line).expect("JSON");
            match what {
                Outgoing::Request(r) => assert_eq!(value["id"], 7, "{r:?}"),
                Outgoing::Initialized => {
                    assert_eq!(value["method"], "notifications/initialized")
                }
                Outgoing::Response { id } => assert_eq!(value["id"], serde_json::json!(id)),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn what_a_transport_sent_leaves_with_its_records() {
        let mut out = outbox();
        let first = out.messages().next().map(|(_, l)| l.len() + 1).unwrap();
        out.consume(first);
        let left: Vec<_> = out.messages().map(|(w, _)| w).collect();
        assert_eq!(left[0], Outgoing::Initialized);
        assert_eq!(left.len(), 2);
        assert!(out.bytes().starts_with(b"{\"jsonrpc\":\"2.0\",\"method\""));
        // Part of a line: its record stays, for what is left of it.
        out.consume(3);
        assert_eq!(out.count(), 2);
        let total = out.len();
        out.consume(total);
        assert!(out.is_empty() && out.count() == 0);
    }

    #[test]
    fn a_modern_request_notes_its_version_target_arguments_and_meta() {
        let mut out = Outbox::new();
        let params = serde_json::json!({"name": "echo", "arguments": {"m": "hi"}});
        let members = br#""io.modelcontextprotocol/protocolVersion":"2026-07-28""#;
        out.write_request_with_meta(
            &RequestId::Number(3),
            Method::CallTool,
            &params,
            members,
            Some(ProtocolVersion::V2026_07_28),
        );
        let (what, line) = out.messages().next().unwrap();
        let Outgoing::Request(r) = what else {
            panic!("{what:?}")
        };
        assert_eq!(r.target.as_deref(), Some("echo"));
        assert_eq!(
            r.arguments.as_deref(),
            Some(&serde_json::json!({"m": "hi"}))
        );
        let meta: Value = serde_json::from_slice(&line[r.meta.clone().unwrap()]).unwrap();
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        let whole: Value = serde_json::from_slice(line).unwrap();
        assert_eq!(whole["params"]["_meta"], meta);
    }
}
