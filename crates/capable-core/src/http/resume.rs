//! A legacy Streamable HTTP session resumed from its `Mcp-Session-Id` (see
//! [`Established::resumed`](crate::Established::resumed)): the policy is put where a
//! handshake would have left it — the session's id echoed, the negotiated version in
//! `MCP-Protocol-Version`, the `initialize` kept for renewal — and the standalone GET
//! stream is opened, as after `notifications/initialized`.
//!
//! If the server no longer holds the session, the first request that carries it gets
//! `404`, and the policy does what it does for any expired session: it replays the kept
//! `initialize`, says so ([`Notice::SessionRenewed`](crate::Notice::SessionRenewed)),
//! and sends the request again in the new session, once.

use super::headers::is_session_id;
use super::message::Message;
use super::{Action, HttpSession, Mode};
use crate::negotiation::Negotiated;
use crate::outbox::Outbox;

/// Why a session could not be resumed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// The id is empty or has a byte a header cannot carry (visible ASCII only).
    #[error("a session id must be visible ASCII")]
    SessionId,
    /// The policy already spoke to the server: a session is resumed before anything.
    #[error("a session is resumed before anything else is sent")]
    Started,
    /// `initialize` did not hold exactly one `initialize` request.
    #[error("the initialize to keep is not one initialize request")]
    Initialize,
    /// A 2026-07-28 version: that era has no session.
    #[error("a 2026-07-28 connection has no session to resume")]
    Modern,
}

impl HttpSession {
    /// Resumes session `session_id`, negotiated earlier as `negotiated`; `initialize`
    /// holds the `initialize` that began it (from
    /// [`Established::resumed`](crate::Established::resumed)), kept to start a new
    /// session if this one is gone. Returns the actions that open the standalone
    /// stream.
    pub fn resume_session(
        &mut self,
        session_id: &str,
        negotiated: &Negotiated,
        initialize: &Outbox,
    ) -> Result<Vec<Action>, ResumeError> {
        if !is_session_id(session_id) {
            return Err(ResumeError::SessionId);
        }
        if negotiated.era() != crate::Era::Legacy {
            return Err(ResumeError::Modern);
        }
        if self.mode != Mode::Unknown || self.next_exchange > 0 || self.closed {
            return Err(ResumeError::Started);
        }
        let mut messages = initialize.messages();
        let init = match (messages.next(), messages.next()) {
            (Some((what, line)), None) => Message::new(what, line),
            _ => return Err(ResumeError::Initialize),
        };
        if init
            .request()
            .is_none_or(|r| r.method != crate::method::Method::Initialize)
        {
            return Err(ResumeError::Initialize);
        }
        self.initialize = Some(init);
        self.mode = Mode::Streamable;
        self.session_id = Some(session_id.to_owned());
        self.negotiated(negotiated);
        Ok(self.open_standalone())
    }

    /// The `Mcp-Session-Id` the server gave (Streamable HTTP, legacy), if any: what a
    /// client that hands the session over keeps, to [`HttpSession::resume_session`] it.
    pub fn session_id(&self) -> Option<&str> {
        match self.mode {
            Mode::Streamable => self.session_id.as_deref(),
            _ => None,
        }
    }
}
