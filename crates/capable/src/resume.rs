//! Handing a legacy HTTP session over: what a client keeps of a session it connected
//! ([`Session::resumption`]) and another client — another process, on another machine —
//! resumes it from ([`ClientOptions::with_resume`], then [`connect_http`]), with no second
//! `initialize`. The server sees one session going on: what it keeps per session
//! (subscriptions, the log level, tasks) is still there.
//!
//! This is the door for a gateway of many replicas: the replica that dies held the
//! server's session; the one that continues re-attaches to it rather than opening a new
//! one. What a [`Resumption`] holds is what the handshake settled and the client needs to
//! go on — the session's id, the negotiated version, the server's `serverInfo` and
//! `capabilities` — and no secret (the server's `instructions` are not kept: a resumed
//! session has none). Only Streamable HTTP sessions of the legacy era resume: a stdio
//! server's session is its process, a 2026-07-28 connection has no session.
//!
//! A server that no longer holds the session answers the first request that carries it
//! with `404`: the client then starts a new session with the `initialize` the original
//! handshake sent (the same declaration), says so ([`Notice::SessionRenewed`], among the
//! session's events), and sends the request again — so a stale resumption costs one
//! round trip, never the request.
//!
//! [`Session::resumption`]: crate::Session::resumption
//! [`ClientOptions::with_resume`]: crate::ClientOptions::with_resume
//! [`connect_http`]: crate::connect_http
//! [`Notice::SessionRenewed`]: capable_core::Notice::SessionRenewed

use capable_core::{Established, Negotiated, Outbox, ProtocolVersion, ServerCapabilities};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;
use crate::transport::TransportError;

/// The most bytes of a session id a [`Resumption`] takes (a header's worth; servers
/// give UUIDs or 32 hex digits).
pub const MAX_SESSION_ID: usize = 256;

/// What another client needs to go on in a legacy HTTP session (see the module
/// documentation). Serialized with one-letter names, to be small where it is kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Resumption {
    /// The server's `Mcp-Session-Id`.
    #[serde(rename = "s")]
    pub session_id: String,
    /// The version negotiated in the session.
    #[serde(rename = "v")]
    pub version: String,
    /// The server's `serverInfo`.
    #[serde(rename = "i", default, skip_serializing_if = "Value::is_null")]
    pub server_info: Value,
    /// The server's `capabilities`.
    #[serde(rename = "c", default, skip_serializing_if = "Value::is_null")]
    pub capabilities: Value,
}

impl Resumption {
    /// What was negotiated, as the session had it; refused when the version is not a
    /// legacy one this library speaks, the id is too long, or the server's info does
    /// not read.
    pub(crate) fn negotiated(&self) -> Result<Negotiated, Error> {
        let refused = |why: &str| Error::Transport(TransportError::Broken(why.to_owned()));
        if self.session_id.len() > MAX_SESSION_ID {
            return Err(refused("the session id to resume is too long"));
        }
        let version: ProtocolVersion = self
            .version
            .parse()
            .map_err(|_| refused("the session to resume has an unknown version"))?;
        let server_info = match &self.server_info {
            Value::Null => Default::default(),
            info => serde_json::from_value(info.clone())
                .map_err(|_| refused("the session to resume has an unreadable serverInfo"))?,
        };
        Ok(Negotiated {
            version,
            server_info,
            capabilities: ServerCapabilities::from_value(self.capabilities.clone()),
            instructions: None,
            server_versions: Vec::new(),
        })
    }
}

/// The handshake's result, resumed: the connection as it was, and the `initialize` the
/// transport keeps for a renewal.
pub(crate) fn established(
    resumption: &Resumption,
    config: capable_core::ClientConfig,
) -> Result<(Established, Outbox), Error> {
    let negotiated = resumption.negotiated()?;
    let mut initialize = Outbox::new();
    let established =
        Established::resumed(config, negotiated, &mut initialize).ok_or_else(|| {
            Error::Transport(TransportError::Broken(
                "the session to resume is of a version this client does not accept, or of \
             2026-07-28 (no session)"
                    .into(),
            ))
        })?;
    Ok((established, initialize))
}
