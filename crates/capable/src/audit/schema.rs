//! The official MCP JSON schemas, embedded, and validation of a result against a named
//! definition of the negotiated version's schema.
//!
//! One schema per [`ProtocolVersion`], matched exhaustively: a new revision does not
//! compile until its schema is embedded here.

use std::collections::HashMap;

use capable_core::ProtocolVersion;
use jsonschema::Validator;
use serde_json::{json, Value};

fn schema_text(version: ProtocolVersion) -> &'static str {
    match version {
        ProtocolVersion::V2024_11_05 => {
            include_str!("../../schemas/2024-11-05/schema.json")
        }
        ProtocolVersion::V2025_03_26 => {
            include_str!("../../schemas/2025-03-26/schema.json")
        }
        ProtocolVersion::V2025_06_18 => {
            include_str!("../../schemas/2025-06-18/schema.json")
        }
        ProtocolVersion::V2025_11_25 => {
            include_str!("../../schemas/2025-11-25/schema.json")
        }
        ProtocolVersion::V2026_07_28 => {
            include_str!("../../schemas/2026-07-28/schema.json")
        }
    }
}

/// Validators for named definitions of one protocol revision, compiled on first use.
pub(super) struct Schema {
    document: Value,
    defs_key: &'static str,
    compiled: HashMap<&'static str, Option<Validator>>,
}

impl Schema {
    pub(super) fn new(version: ProtocolVersion) -> Schema {
        let document: Value = serde_json::from_str(schema_text(version)).unwrap_or(Value::Null);
        let defs_key = if document.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        Schema {
            document,
            defs_key,
            compiled: HashMap::new(),
        }
    }

    pub(super) fn has(&self, name: &str) -> bool {
        self.document
            .get(self.defs_key)
            .and_then(|d| d.get(name))
            .is_some()
    }

    /// `Ok` when `instance` is a valid `name`; the first errors otherwise. A definition
    /// this revision does not have validates nothing.
    pub(super) fn validate(&mut self, name: &'static str, instance: &Value) -> Result<(), String> {
        if !self.compiled.contains_key(name) {
            let validator = self.has(name).then(|| {
                // The whole document (so every `#/…` reference resolves), its root
                // constrained to the one definition.
                let mut schema = self.document.clone();
                if let Some(obj) = schema.as_object_mut() {
                    obj.insert(
                        "allOf".into(),
                        json!([{ "$ref": format!("#/{}/{name}", self.defs_key) }]),
                    );
                }
                jsonschema::options().build(&schema).ok()
            });
            self.compiled.insert(name, validator.flatten());
        }
        let Some(Some(validator)) = self.compiled.get(name) else {
            return Ok(());
        };
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .take(5)
            .map(|e| {
                let at = e.instance_path.to_string();
                let at = if at.is_empty() { "/".into() } else { at };
                format!("{at}: {e}")
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!("not a valid {name}: {}", errors.join("; ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capable_core::Era;

    #[test]
    fn every_schema_is_embedded_and_validates() {
        for version in ProtocolVersion::ALL {
            let mut schema = Schema::new(version);
            assert!(schema.has("ReadResourceResult"), "{version}");
            let mut good = json!({"contents": [{"uri": "a://b", "text": "x"}]});
            if version.era() == Era::Modern {
                // 2026-07-28 results are cacheable: these three are required.
                good["resultType"] = json!("complete");
                good["ttlMs"] = json!(0);
                good["cacheScope"] = json!("private");
            }
            let ok = schema.validate("ReadResourceResult", &good);
            assert!(ok.is_ok(), "{version}: {ok:?}");
            let bad = schema.validate("ReadResourceResult", &json!({"contents": "nope"}));
            assert!(bad.is_err(), "{version}");
        }
    }

    /// A definition a probe names and a version lacks validates nothing, silently; so
    /// each must exist where it is used, and compile (a compiled one rejects `null`).
    #[test]
    fn every_definition_the_probes_name_compiles() {
        let both = [
            "EmptyResult",
            "ListResourcesResult",
            "ListResourceTemplatesResult",
            "ReadResourceResult",
            "ListToolsResult",
            "ListPromptsResult",
            "CompleteResult",
        ];
        for version in ProtocolVersion::ALL {
            let mut schema = Schema::new(version);
            let era: &[&'static str] = match version.era() {
                Era::Legacy => &["InitializeResult"],
                Era::Modern => &["DiscoverResult", "SubscriptionsAcknowledgedNotification"],
            };
            for &name in both.iter().chain(era) {
                assert!(schema.has(name), "{version} has no {name}");
                assert!(
                    schema.validate(name, &Value::Null).is_err(),
                    "{version}: {name} did not compile"
                );
            }
        }
    }
}
