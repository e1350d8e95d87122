//! Contract violations: a server declared a capability and then refused its method.
//!
//! This file holds the whole rule: when a `-32601` answer is a violation
//! ([`Violation::judge`]), what evidence is kept, and the one JSON shape the evidence
//! takes wherever it is shown (`--json`, `watch` events, the demo, the audit report).

use std::time::SystemTime;

use serde::ser::SerializeStruct;
use serde::Serialize;
use serde_json::Value;

use crate::gating::{self, ListenFilter, Requirement};
use crate::method::Method;
use crate::model::Implementation;
use crate::negotiation::Negotiated;
use crate::time;
use crate::version::ProtocolVersion;

/// Evidence that a server broke its own declaration: it declared `capability` and
/// answered `method` with -32601 (method not found).
///
/// The method is then marked broken for the rest of the session: capable never sends
/// it again, so there is no retry loop. A host may fall back only to an explicit
/// alternative (e.g. a re-read policy) or fail.
///
/// In JSON (its `Serialize`): `{capability, method, request, response, server: {name,
/// version}, protocolVersion, at}` with `at` in RFC 3339.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// The declared capability (`resources.subscribe`, `tools`, …).
    pub capability: String,
    /// The method the server refused.
    pub method: Method,
    /// The full JSON-RPC request as sent.
    pub request: Value,
    /// The full JSON-RPC response as received.
    pub response: Value,
    /// `serverInfo` of the server that broke the contract.
    pub server: Implementation,
    /// The negotiated protocol version.
    pub protocol_version: ProtocolVersion,
    /// When the refusal arrived.
    pub at: SystemTime,
}

impl Violation {
    /// Judges a `-32601` answer (`response`, exactly as received) to `request` (exactly
    /// as sent): a violation when the server declared what `method` needs — for
    /// `subscriptions/listen`, every filter field the request asked for — and the
    /// method is gated at all. A method that needs nothing, or that the server never
    /// declared (sent anyway in lenient mode), is a plain error: `None`.
    pub fn judge(
        method: Method,
        request: &[u8],
        response: &[u8],
        negotiated: &Negotiated,
        at: SystemTime,
    ) -> Option<Violation> {
        let (version, caps) = (negotiated.version, &negotiated.capabilities);
        let declared = match method {
            // `subscriptions/listen` is declared only through the filter fields it
            // asked for (sent in lenient mode, they may be undeclared).
            Method::Listen => listen_filter_of(request).is_some_and(|filter| {
                filter != ListenFilter::default()
                    && gating::check_listen(&filter, version, caps).is_ok()
            }),
            _ => gating::check(method, version, caps).is_ok(),
        };
        let requirement = gating::requirement(method, version);
        let gated = matches!(
            requirement,
            Requirement::Capability(_)
                | Requirement::Flag(..)
                | Requirement::ListenFilter
                | Requirement::Extension(_)
                | Requirement::Tasks(_)
        );
        (declared && gated).then(|| Violation {
            capability: requirement.describe(),
            method,
            request: serde_json::from_slice(request).unwrap_or(Value::Null),
            response: serde_json::from_slice(response).unwrap_or(Value::Null),
            server: negotiated.server_info.clone(),
            protocol_version: version,
            at,
        })
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "contract violation: {} {} declared `{}` but answered {} with method-not-found (-32601)",
            self.server.name, self.server.version, self.capability, self.method
        )
    }
}

impl Serialize for Violation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Server<'a> {
            name: &'a str,
            version: &'a str,
        }
        let mut st = s.serialize_struct("Violation", 7)?;
        st.serialize_field("capability", &self.capability)?;
        st.serialize_field("method", &self.method)?;
        st.serialize_field("request", &self.request)?;
        st.serialize_field("response", &self.response)?;
        st.serialize_field(
            "server",
            &Server {
                name: &self.server.name,
                version: &self.server.version,
            },
        )?;
        st.serialize_field("protocolVersion", &self.protocol_version)?;
        st.serialize_field("at", &time::rfc3339(self.at))?;
        st.end()
    }
}

/// The filter of a `subscriptions/listen` request, read back from the request as sent.
fn listen_filter_of(request: &[u8]) -> Option<ListenFilter> {
    let request: Value = serde_json::from_slice(request).ok()?;
    let fields = request.get("params")?.get("notifications")?;
    let flag = |key: &str| fields.get(key).and_then(Value::as_bool) == Some(true);
    Some(ListenFilter {
        tools_list_changed: flag("toolsListChanged"),
        prompts_list_changed: flag("promptsListChanged"),
        resources_list_changed: flag("resourcesListChanged"),
        resource_subscriptions: fields
            .get("resourceSubscriptions")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .unwrap_or_default(),
    })
}
