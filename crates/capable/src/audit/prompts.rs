//! `prompts`: every page of `prompts/list`. Prompts are listed, never got.

use capable_core::{Capability, Method};
use serde_json::Value;

use super::probe::Auditor;

impl Auditor<'_> {
    /// Probes a server that declared `prompts`; the prompts listed (to complete an
    /// argument of), none otherwise.
    pub(super) async fn prompts(&mut self) -> Vec<Value> {
        if !self.session.capabilities().has(Capability::Prompts) {
            return Vec::new();
        }
        self.list_all(
            "prompts",
            "list",
            Method::ListPrompts,
            "ListPromptsResult",
            "prompts",
        )
        .await
        .unwrap_or_default()
    }
}
