//! MCP Apps views: a tool that names a `ui://` resource in `_meta.ui.resourceUri` gets
//! its view rendered in the page, in a sandboxed iframe (`handlers/apps.rs`).
//!
//! `POST /api/app {server, uri}` reads the resource (through the gating table, like
//! any read), keeps its HTML under a random id, and the page frames `GET /app/ID`.
//! That document is served with a Content-Security-Policy of its own, made from the
//! resource's `_meta.ui.csp` (the extension's `connectDomains` and `resourceDomains`,
//! nothing else: no other origin is reachable), and the `sandbox allow-scripts`
//! directive, which the iframe's `sandbox` attribute repeats: the view runs in an
//! opaque origin, so it can neither read the inspector's cookie nor call its API (its
//! requests carry `Origin: null`, which the gate refuses). It talks to the host only
//! through `postMessage`: the bridge (`ui/initialize`, the tool's input and result)
//! lives in the page, which passes the view's own `tools/call` and `resources/read`
//! on with the view's id (`POST /api/app/call`, `/api/app/read`): they reach the
//! view's server only, and a tool whose MCP Apps `visibility` leaves the view out
//! (`["model"]`) is refused here, before anything is sent.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::Value;

/// How many views are kept to be framed (the oldest go first).
const KEPT: usize = 32;

/// One view, ready to be framed.
#[derive(Clone)]
pub struct View {
    /// Its random id, the path it is framed under (`/app/ID`).
    pub id: String,
    /// The server it came from, the only one its calls reach.
    pub server: String,
    /// The document.
    pub html: String,
    /// Its Content-Security-Policy ([`policy`]).
    pub csp: String,
}

/// The views read so far.
#[derive(Default)]
pub struct Views {
    views: Mutex<VecDeque<View>>,
}

impl Views {
    /// Keeps `view` to be framed.
    pub fn keep(&self, view: View) {
        let mut views = self.lock();
        if views.len() == KEPT {
            views.pop_front();
        }
        views.push_back(view);
    }

    /// View `id`, if it is still kept.
    pub fn get(&self, id: &str) -> Option<View> {
        self.lock().iter().find(|v| v.id == id).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<View>> {
        self.views.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A source the view's CSP may name: `https://host`, `wss://host:port`, with an
/// optional `*.` — anything else (a quote, a `;`, a keyword) is dropped.
fn source(s: &str) -> Option<&str> {
    let (scheme, rest) = s.split_once("://")?;
    let scheme_ok = matches!(scheme, "https" | "http" | "wss" | "ws");
    let host = rest.strip_prefix("*.").unwrap_or(rest);
    let rest_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '/'));
    (scheme_ok && rest_ok).then_some(s)
}

fn sources(csp: &Value, key: &str) -> String {
    csp.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(source)
        .map(|s| format!(" {s}"))
        .collect()
}

/// The view's policy: inline script and style (an app is one HTML document), the
/// declared domains only, and a sandbox with scripts and nothing else.
pub fn policy(meta_csp: &Value) -> String {
    let resources = sources(meta_csp, "resourceDomains");
    let connect = sources(meta_csp, "connectDomains");
    format!(
        "default-src 'none'; script-src 'unsafe-inline'{resources}; style-src 'unsafe-inline'{resources}; \
         img-src data:{resources}; font-src{resources}; media-src{resources}; connect-src{connect}; \
         frame-ancestors 'self'; base-uri 'none'; form-action 'none'; sandbox allow-scripts"
    )
    .replace("font-src;", "font-src 'none';")
    .replace("media-src;", "media-src 'none';")
    .replace("connect-src;", "connect-src 'none';")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_policy_names_only_well_formed_declared_domains() {
        let csp = policy(&json!({
            "connectDomains": ["https://api.example.com", "'unsafe-eval'", "https://x; script-src *"],
            "resourceDomains": ["https://*.cdn.example", "javascript:alert(1)"]
        }));
        assert!(
            csp.contains("connect-src https://api.example.com;"),
            "{csp}"
        );
        assert!(
            csp.contains("script-src 'unsafe-inline' https://*.cdn.example;"),
            "{csp}"
        );
        assert!(
            !csp.contains("unsafe-eval") && !csp.contains("javascript:"),
            "{csp}"
        );
        assert!(csp.ends_with("sandbox allow-scripts"), "{csp}");
        let none = policy(&Value::Null);
        assert!(
            none.contains("connect-src 'none';") && none.contains("font-src 'none';"),
            "{none}"
        );
    }
}
