//! The server's own requests to its client: gated by what the client declared, each
//! with a fresh id, a waiter and a deadline.
//!
//! | method | the client must have declared | versions |
//! |---|---|---|
//! | `ping` | nothing | legacy |
//! | `roots/list` | `roots` | every |
//! | `sampling/createMessage` | `sampling` | every |
//! | `elicitation/create`, form mode | `elicitation` (form) | 2025-06-18 and later |
//! | `elicitation/create`, URL mode | `elicitation.url` | 2025-11-25 and later |
//!
//! A 2026-07-28 server sends no requests at all: the same questions go into an
//! `input_required` result and come back with the client's retry. [`client_allows`]
//! is the table for both: [`ServerConnection::request`] asks it of a legacy session;
//! a server asking a modern client asks it before putting a question in a result.
//!
//! Deadlines are kept as the client keeps its own (`connection/deadlines.rs`): a lower
//! bound in [`ServerConnection::poll_timeout`], every request past its deadline failed
//! and cancelled by [`ServerConnection::handle_timeout`].

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::capabilities::ClientCapabilities;
use crate::jsonrpc::{Params, Payload, RequestId, RpcError};
use crate::outbox::Outbox;
use crate::time;
use crate::version::{Era, ProtocolVersion};

use super::phase::Phase;
use super::{ClientNotice, Event, ServerConnection};

/// A server→client request method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServerMethod {
    /// `ping` (legacy).
    Ping,
    /// `roots/list`.
    ListRoots,
    /// `sampling/createMessage`.
    CreateMessage,
    /// `elicitation/create`.
    Elicit,
}

impl ServerMethod {
    /// Every server→client method.
    pub const ALL: [ServerMethod; 4] = [
        ServerMethod::Ping,
        ServerMethod::ListRoots,
        ServerMethod::CreateMessage,
        ServerMethod::Elicit,
    ];

    /// The method name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerMethod::Ping => "ping",
            ServerMethod::ListRoots => "roots/list",
            ServerMethod::CreateMessage => "sampling/createMessage",
            ServerMethod::Elicit => "elicitation/create",
        }
    }

    /// Looks a method up by its wire name.
    pub fn from_name(name: &str) -> Option<ServerMethod> {
        ServerMethod::ALL.into_iter().find(|m| m.as_str() == name)
    }
}

impl std::fmt::Display for ServerMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the server may not send a request. Nothing was written.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum NotAllowed {
    /// The method does not exist in the client's version (any request to a
    /// 2026-07-28 client; elicitation before 2025-06-18).
    #[error("{method} does not exist in protocol version {version}")]
    NotInVersion {
        /// The method.
        method: ServerMethod,
        /// The client's version.
        version: ProtocolVersion,
    },
    /// The client did not declare the capability the method needs.
    #[error(
        "{method} needs the client capability `{capability}`, which the client did not declare"
    )]
    NotDeclared {
        /// The method.
        method: ServerMethod,
        /// The capability.
        capability: &'static str,
    },
    /// The client has no session yet (or has not said `initialized`, and the request
    /// is not a `ping`).
    #[error("the client has not initialized a session yet")]
    NotReady,
    /// The connection is closed.
    #[error("the connection is closed")]
    Closed,
}

/// Whether a server may ask a client of `version` that declared `caps` with `method`
/// (`url_mode`: an elicitation in URL mode): the table of the module documentation.
pub fn client_allows(
    method: ServerMethod,
    version: ProtocolVersion,
    caps: &ClientCapabilities,
    url_mode: bool,
) -> Result<(), NotAllowed> {
    let not_declared = |capability| Err(NotAllowed::NotDeclared { method, capability });
    match method {
        ServerMethod::Ping if version.era() == Era::Modern => {
            Err(NotAllowed::NotInVersion { method, version })
        }
        ServerMethod::Ping => Ok(()),
        ServerMethod::ListRoots if !caps.roots => not_declared("roots"),
        ServerMethod::CreateMessage if !caps.sampling => not_declared("sampling"),
        ServerMethod::Elicit if !version.has_elicitation() => {
            Err(NotAllowed::NotInVersion { method, version })
        }
        ServerMethod::Elicit
            if url_mode && !(version.has_elicitation_modes() && caps.elicitation_url) =>
        {
            not_declared("elicitation.url")
        }
        ServerMethod::Elicit if !url_mode && !caps.elicitation_form => not_declared("elicitation"),
        _ => Ok(()),
    }
}

/// One of the server's requests in flight.
pub(super) struct Outbound<W> {
    method: ServerMethod,
    pub(super) waiter: W,
    started: Instant,
    at: Instant,
}

/// A request of the server's that got no answer in time; `notifications/cancelled`
/// was written for it.
#[derive(Debug)]
pub struct Expired<W> {
    /// Its id.
    pub id: i64,
    /// Its method.
    pub method: ServerMethod,
    /// The waiter it was sent with.
    pub waiter: W,
    /// How long it waited.
    pub after: Duration,
}

impl<W> ServerConnection<W> {
    /// Sends a request to the client at `now`, if [`client_allows`] it in the legacy
    /// session (a `ping` also while the session is initializing): a fresh id, one
    /// line, the waiter kept until the answer ([`Event::Response`]) or the deadline
    /// (`timeout`, else the configured one). When it is not sent nothing is written
    /// and the waiter is handed back.
    pub fn request<P: Params + ?Sized>(
        &mut self,
        method: ServerMethod,
        params: &P,
        timeout: Option<Duration>,
        waiter: W,
        now: Instant,
        out: &mut Outbox,
    ) -> Result<i64, (NotAllowed, W)> {
        self.request_about(method, params, None, timeout, waiter, now, out)
    }

    /// [`request`](Self::request), about the client's request `related` (a question
    /// asked while it runs): over HTTP it goes on that request's stream
    /// ([`Streams`](super::streams::Streams)), where a client that opened no
    /// standalone stream hears it.
    #[allow(clippy::too_many_arguments)]
    pub fn request_about<P: Params + ?Sized>(
        &mut self,
        method: ServerMethod,
        params: &P,
        related: Option<&RequestId>,
        timeout: Option<Duration>,
        waiter: W,
        now: Instant,
        out: &mut Outbox,
    ) -> Result<i64, (NotAllowed, W)> {
        let client = match &self.phase {
            Phase::Closed => return Err((NotAllowed::Closed, waiter)),
            Phase::Legacy(client) => client,
            Phase::Initializing(client) if method == ServerMethod::Ping => client,
            Phase::Modern(client) => {
                let version = client.version;
                return Err((NotAllowed::NotInVersion { method, version }, waiter));
            }
            Phase::Fresh | Phase::Initializing(_) => return Err((NotAllowed::NotReady, waiter)),
        };
        let url_mode = method == ServerMethod::Elicit
            && params
                .to_value()
                .is_ok_and(|p| p.get("mode").and_then(Value::as_str) == Some("url"));
        if let Err(why) = client_allows(method, client.version, &client.capabilities, url_mode) {
            return Err((why, waiter));
        }
        let id = self.next_id;
        self.next_id += 1;
        // A question about a request no longer in flight is about nothing.
        let related = related.filter(|r| self.inbound.contains_key(*r));
        out.write_server_request(id, method, params, related);
        let at = time::deadline(now, timeout.unwrap_or(self.config.request_timeout));
        if self.timer_at.is_none_or(|t| at < t) {
            self.timer_at = Some(at);
        }
        self.outbound.insert(
            id,
            Outbound {
                method,
                waiter,
                started: now,
                at,
            },
        );
        Ok(id)
    }

    /// Gives up on request `id` of the server's: forgets it and tells the client
    /// (`notifications/cancelled`). Returns its waiter if it was in flight.
    pub fn cancel(&mut self, id: i64, reason: &str, out: &mut Outbox) -> Option<W> {
        let o = self.outbound.remove(&id)?;
        out.write_cancelled(&RequestId::Number(id), reason);
        Some(o.waiter)
    }

    /// How many of the server's requests are in flight.
    pub fn requests_in_flight(&self) -> usize {
        self.outbound.len()
    }

    /// When [`ServerConnection::handle_timeout`] should be called next: no request of
    /// the server's times out before. `None` when none is in flight (or closed).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timer_at
    }

    /// The time is `now`: fails every request of the server's past its deadline,
    /// writing `notifications/cancelled` for each, and returns them. Calling it early
    /// changes nothing but the bound.
    pub fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) -> Vec<Expired<W>> {
        if self.phase.is_closed() || self.timer_at.is_none_or(|t| now < t) {
            return Vec::new();
        }
        let due: Vec<i64> = self
            .outbound
            .iter()
            .filter(|(_, o)| o.at <= now)
            .map(|(id, _)| *id)
            .collect();
        let mut expired = Vec::with_capacity(due.len());
        for id in due {
            if let Some(o) = self.outbound.remove(&id) {
                out.write_cancelled(&RequestId::Number(id), "timed out");
                expired.push(Expired {
                    id,
                    method: o.method,
                    waiter: o.waiter,
                    after: o.at.saturating_duration_since(o.started),
                });
            }
        }
        self.timer_at = self.outbound.values().map(|o| o.at).min();
        expired
    }

    /// The client's answer to request `id` of the server's.
    pub(super) fn on_response(
        &mut self,
        id: RequestId,
        outcome: Result<Payload, RpcError>,
    ) -> Event<W> {
        let found = match &id {
            RequestId::Number(n) => self.outbound.remove(n).map(|o| (*n, o)),
            RequestId::String(_) => None,
        };
        let Some((id, o)) = found else {
            self.notices.push(ClientNotice::UnknownResponse { id });
            return Event::Handled;
        };
        Event::Response {
            id,
            method: o.method,
            waiter: o.waiter,
            outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_must_have_declared_what_it_is_asked() {
        const V: ProtocolVersion = ProtocolVersion::V2025_11_25;
        let none = ClientCapabilities::default();
        let all = ClientCapabilities {
            roots: true,
            sampling: true,
            elicitation_form: true,
            elicitation_url: true,
            ..Default::default()
        };
        for method in ServerMethod::ALL {
            assert_eq!(ServerMethod::from_name(method.as_str()), Some(method));
            assert!(client_allows(method, V, &all, false).is_ok(), "{method}");
            let refused = client_allows(method, V, &none, false);
            assert_eq!(refused.is_err(), method != ServerMethod::Ping, "{method}");
        }
        let form_only = ClientCapabilities {
            elicitation_form: true,
            ..Default::default()
        };
        assert!(matches!(
            client_allows(ServerMethod::Elicit, V, &form_only, true),
            Err(NotAllowed::NotDeclared {
                capability: "elicitation.url",
                ..
            })
        ));
        let old = ProtocolVersion::V2025_03_26;
        assert!(matches!(
            client_allows(ServerMethod::Elicit, old, &all, false),
            Err(NotAllowed::NotInVersion { .. })
        ));
        let modern = ProtocolVersion::V2026_07_28;
        assert!(client_allows(ServerMethod::Ping, modern, &all, false).is_err());
        assert!(client_allows(ServerMethod::Elicit, modern, &all, true).is_ok());
    }
}
