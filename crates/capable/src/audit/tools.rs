//! `tools`: every page of `tools/list`, and each tool's `inputSchema` (and
//! `outputSchema`) checked to be a valid JSON Schema. Tools are never called: a call
//! may do anything.

use capable_core::{Capability, Method};

use super::probe::{plural, Auditor};
use super::report::{FindingKind, Outcome};

const SCHEMAS: &str = "each tool's input schema is a valid JSON Schema";

impl Auditor<'_> {
    /// Probes a server that declared `tools`.
    pub(super) async fn tools(&mut self) {
        if !self.session.capabilities().has(Capability::Tools) {
            return;
        }
        let Some(tools) = self
            .list_all(
                "tools",
                "list",
                Method::ListTools,
                "ListToolsResult",
                "tools",
            )
            .await
        else {
            return;
        };
        if tools.is_empty() {
            self.check("tools", SCHEMAS, None, Outcome::Skipped, "no tools listed");
            return;
        }
        let mut bad = Vec::new();
        for tool in &tools {
            let name = tool["name"].as_str().unwrap_or("?");
            for key in ["inputSchema", "outputSchema"] {
                let Some(schema) = tool.get(key) else {
                    continue;
                };
                if let Err(e) = jsonschema::meta::validate(schema) {
                    bad.push(format!("{name}.{key}: {e}"));
                }
            }
        }
        if bad.is_empty() {
            self.check(
                "tools",
                SCHEMAS,
                None,
                Outcome::Ok,
                format!(
                    "{} tool{}; tools are never called",
                    tools.len(),
                    plural(tools.len())
                ),
            );
        } else {
            let why = bad.join("; ");
            // The evidence: the (last) page exchange of the listing.
            let (request, response) = self.rec.exchange("tools/list", 0);
            self.check("tools", SCHEMAS, None, Outcome::Violation, why.clone());
            self.finding(
                "tools",
                "tools/list",
                FindingKind::InvalidToolSchema,
                why,
                request,
                response,
            );
        }
    }
}
