//! The lifecycle: the handshake result as it was received, and `ping` (legacy).

use capable_core::model::Empty;
use capable_core::{Era, Method};

use super::probe::Auditor;
use super::report::{FindingKind, Outcome};

const LIFECYCLE: &str = "(lifecycle)";

impl Auditor<'_> {
    /// Validates the recorded handshake result (`initialize` or `server/discover`),
    /// then pings a legacy server. `false` when no handshake was recorded: without the
    /// exact messages nothing can be judged.
    pub(super) async fn lifecycle(&mut self) -> bool {
        if !self.handshake() {
            return false;
        }
        if self.session.era() == Era::Legacy
            && self
                .probe(LIFECYCLE, "ping", Method::Ping, &Empty {}, "EmptyResult")
                .await
                .is_ok()
        {
            self.check(LIFECYCLE, "ping", Some("ping"), Outcome::Ok, "answered {}");
        }
        true
    }

    /// `false` when there was no recorded handshake to judge.
    fn handshake(&mut self) -> bool {
        let (method, def) = match self.session.era() {
            Era::Legacy => ("initialize", "InitializeResult"),
            Era::Modern => ("server/discover", "DiscoverResult"),
        };
        let (request, response) = self.rec.exchange(method, 0);
        let Some(result) = response.get("result") else {
            // The session is open, so the handshake was answered: the recorder was not
            // on the wire. Nothing to judge, and no reason to blame the server.
            self.check(
                LIFECYCLE,
                "handshake",
                Some(method),
                Outcome::Unverifiable,
                format!(
                    "no {method} result was recorded: install the audit's Recorder::tap in \
                     the options the session is connected with"
                ),
            );
            return false;
        };
        match self.schema.validate(def, result) {
            Ok(()) => self.check(
                LIFECYCLE,
                "handshake",
                Some(method),
                Outcome::Ok,
                format!(
                    "{} negotiated; result valid",
                    self.session.protocol_version()
                ),
            ),
            Err(why) => self.violation(
                LIFECYCLE,
                "handshake",
                method,
                FindingKind::MalformedResult,
                why,
                request,
                response,
            ),
        }
        true
    }
}
