//! What many servers served as one declare (`capable bridge --config`): what they can
//! do together, never more.
//!
//! | a server behind declares | the one server declares |
//! |---|---|
//! | `tools`, `resources`, `prompts` | the same, always with `listChanged` (servers come, go and change their lists: the client is told) |
//! | `resources.subscribe` | `resources.subscribe` (a URI of a server without it is refused with why: [`fanout`](super::fanout)) |
//! | `logging`, `completions` | the same |
//! | anything else (experimental, extensions, tasks) | nothing: it is one server's, and not routed |
//!
//! ```
//! use capable_core::internal::server::merge::merged;
//! use capable_core::{Capability, Flag, ServerCapabilities};
//! use serde_json::json;
//!
//! let a = ServerCapabilities::from_value(json!({"tools": {}}));
//! let b = ServerCapabilities::from_value(json!({"resources": {"subscribe": true}}));
//! let one = merged([&a, &b]);
//! assert!(one.has_flag(Capability::Tools, Flag::ListChanged));
//! assert!(one.has_flag(Capability::Resources, Flag::Subscribe));
//! assert!(!one.has(Capability::Prompts));
//! ```

use serde_json::{json, Map, Value};

use crate::capabilities::{Capability, Flag, ServerCapabilities};

/// The declaration of servers served as one (see the module documentation).
pub fn merged<'a>(
    declared: impl IntoIterator<Item = &'a ServerCapabilities>,
) -> ServerCapabilities {
    let mut caps = Map::new();
    for declared in declared {
        for (capability, list) in [
            (Capability::Tools, true),
            (Capability::Resources, true),
            (Capability::Prompts, true),
            (Capability::Logging, false),
            (Capability::Completions, false),
        ] {
            if declared.has(capability) {
                let value = match list {
                    true => json!({"listChanged": true}),
                    false => json!({}),
                };
                caps.entry(capability.key()).or_insert(value);
            }
        }
        if declared.has_flag(Capability::Resources, Flag::Subscribe) {
            if let Some(resources) = caps.get_mut(Capability::Resources.key()) {
                resources["subscribe"] = json!(true);
            }
        }
    }
    ServerCapabilities::from_value(Value::Object(caps))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(value: Value) -> ServerCapabilities {
        ServerCapabilities::from_value(value)
    }

    #[test]
    fn what_the_servers_can_do_together_never_more() {
        let none = merged([]);
        assert_eq!(none, caps(json!({})));
        let read_only = caps(json!({"resources": {}, "experimental": {"x": {}}}));
        let subscribes = caps(json!({"resources": {"subscribe": true}, "logging": {}}));
        let tools = caps(json!({"tools": {}, "completions": {}}));
        assert_eq!(
            merged([&read_only, &tools]),
            caps(
                json!({"resources": {"listChanged": true}, "tools": {"listChanged": true},
                "completions": {}})
            )
        );
        // Subscriptions when one server takes them, whichever comes first.
        let with = caps(
            json!({"resources": {"listChanged": true, "subscribe": true},
            "logging": {}}),
        );
        assert_eq!(merged([&read_only, &subscribes]), with);
        assert_eq!(merged([&subscribes, &read_only]), with);
    }
}
