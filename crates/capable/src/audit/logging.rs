//! `logging`: one `logging/setLevel` (legacy). 2026-07-28 has no such method: the
//! level travels in each request's `_meta`, so there is nothing to probe.

use capable_core::{Capability, Era, Method};
use serde::Serialize;

use super::probe::Auditor;
use super::report::Outcome;

impl Auditor<'_> {
    /// Probes a server that declared `logging`.
    pub(super) async fn logging(&mut self) {
        if !self.session.capabilities().has(Capability::Logging) {
            return;
        }
        if self.session.era() == Era::Modern {
            self.check(
                "logging",
                "setLevel",
                None,
                Outcome::Skipped,
                "2026-07-28 has no logging/setLevel (the level travels in each request's _meta)",
            );
            return;
        }
        #[derive(Serialize)]
        struct Level {
            level: &'static str,
        }
        if self
            .probe(
                "logging",
                "setLevel",
                Method::SetLoggingLevel,
                &Level { level: "warning" },
                "EmptyResult",
            )
            .await
            .is_ok()
        {
            self.check(
                "logging",
                "setLevel",
                Some("logging/setLevel"),
                Outcome::Ok,
                "level set to warning",
            );
        }
    }
}
