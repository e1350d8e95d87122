//! `resources`: every page of `resources/list` and `resources/templates/list`, a read
//! of the first listed resource, and (when `resources.subscribe` is declared) a
//! subscription to it.

use capable_core::model::UriParams;
use capable_core::{Capability, Era, Flag, Method};
use serde_json::Value;

use super::probe::{plural, Auditor};
use super::report::Outcome;

const READ: &str = "read the first listed resource";

impl Auditor<'_> {
    /// Probes a server that declared `resources`; the templates listed (to complete a
    /// template variable with), none otherwise.
    pub(super) async fn resources(&mut self) -> Vec<Value> {
        if !self.session.capabilities().has(Capability::Resources) {
            return Vec::new();
        }
        let listed = self
            .list_all(
                "resources",
                "list",
                Method::ListResources,
                "ListResourcesResult",
                "resources",
            )
            .await
            .unwrap_or_default();
        let templates = self
            .list_all(
                "resources",
                "templates/list",
                Method::ListResourceTemplates,
                "ListResourceTemplatesResult",
                "resourceTemplates",
            )
            .await
            .unwrap_or_default();
        let first = listed
            .first()
            .and_then(|r| r.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        match &first {
            None => self.check(
                "resources",
                READ,
                Some("resources/read"),
                Outcome::Skipped,
                "no resource listed to read",
            ),
            Some(uri) => self.read(uri).await,
        }
        if self
            .session
            .capabilities()
            .has_flag(Capability::Resources, Flag::Subscribe)
        {
            match &first {
                None => self.check(
                    "resources.subscribe",
                    "subscribe",
                    None,
                    Outcome::Skipped,
                    "no resource listed to subscribe to",
                ),
                Some(uri) => match self.session.era() {
                    Era::Legacy => self.subscribe_legacy(uri).await,
                    Era::Modern => self.subscribe_modern(uri).await,
                },
            }
        }
        templates
    }

    async fn read(&mut self, uri: &str) {
        if let Ok(result) = self
            .probe(
                "resources",
                READ,
                Method::ReadResource,
                &UriParams { uri },
                "ReadResourceResult",
            )
            .await
        {
            let n = result["contents"].as_array().map_or(0, Vec::len);
            self.check(
                "resources",
                READ,
                Some("resources/read"),
                Outcome::Ok,
                format!("{uri}: {n} content item{}", plural(n)),
            );
        }
    }
}
