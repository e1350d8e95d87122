//! A legacy session resumed rather than negotiated: the door through which a client
//! that already holds a server's session — its `Mcp-Session-Id` and what its handshake
//! settled, kept by whoever made the handshake (a gateway replica that died, say) —
//! goes on in it without a second `initialize`.
//!
//! Nothing is sent: the server already answered `initialize` and got
//! `notifications/initialized` in that session. What the handshake would have sent is
//! written aside, so that the transport can start a new session with it if the server
//! says the old one is gone (Streamable HTTP's `404`).

use super::{Established, Negotiated};
use crate::config::ClientConfig;
use crate::jsonrpc::RequestId;
use crate::method::Method;
use crate::model::InitializeParams;
use crate::outbox::Outbox;
use crate::version::Era;

/// The first request id of a resumed session. The server may still hold requests of
/// the client that began the session (its ids counted up from 1), or of another that
/// resumed it too: a random start — a multiple of 2^16 below 2^48, so ids stay exact in
/// a JavaScript number — keeps a resumed client's ids apart from theirs.
fn first_id() -> i64 {
    let mut bytes = [0u8; 4];
    // Without randomness, a start well past what a first client counts to.
    let start = match getrandom::fill(&mut bytes) {
        Ok(()) => u32::from_le_bytes(bytes).max(1),
        Err(_) => 1,
    };
    i64::from(start) << 16
}

impl Established {
    /// A connection established earlier, under `negotiated`, resumed as it is: the
    /// client declares `config` as it did then. The `initialize` that began it (under
    /// id 0, as a handshake sends it) is written to `initialize`, not to be sent but
    /// kept by the transport, which replays it if the session turns out to be gone.
    /// Its own requests are numbered from a random start, never from 1.
    ///
    /// `None` for what cannot be resumed: a 2026-07-28 version (that era has no
    /// session), or one `config` does not accept.
    ///
    /// ```
    /// use capable_core::{ClientConfig, Established, Negotiated, Outbox, ProtocolVersion};
    /// use capable_core::ServerCapabilities;
    /// let negotiated = Negotiated {
    ///     version: ProtocolVersion::V2025_06_18,
    ///     server_info: Default::default(),
    ///     capabilities: ServerCapabilities::from_value(serde_json::json!({"tools": {}})),
    ///     instructions: None,
    ///     server_versions: Vec::new(),
    /// };
    /// let mut initialize = Outbox::new();
    /// let resumed = Established::resumed(ClientConfig::default(), negotiated, &mut initialize);
    /// assert!(resumed.is_some());
    /// assert_eq!(initialize.count(), 1);
    /// ```
    pub fn resumed(
        config: ClientConfig,
        negotiated: Negotiated,
        initialize: &mut Outbox,
    ) -> Option<Established> {
        let version = negotiated.version;
        if version.era() != Era::Legacy || !config.protocol.accepts(version) {
            return None;
        }
        let caps = config.capabilities.to_value(version);
        let params = InitializeParams {
            protocol_version: version.as_str(),
            capabilities: &caps,
            client_info: &config.client_info,
        };
        initialize.write_request(&RequestId::Number(0), Method::Initialize, &params);
        Some(Established {
            config,
            negotiated,
            next_id: first_id(),
            notices: Vec::new(),
            early_notifications: Vec::new(),
        })
    }
}
