//! MCP Apps: a tool that names a `ui://` resource in `_meta.ui.resourceUri` gets its
//! view rendered in the page, in a sandboxed iframe.
//!
//! `POST /api/app {server, uri}` reads the resource (through the gating table, like
//! any read), keeps its HTML under a random id, and the page frames `GET /app/ID`.
//! That document is served with a Content-Security-Policy of its own, made from the
//! resource's `_meta.ui.csp` (the extension's `connectDomains` and `resourceDomains`,
//! nothing else: no other origin is reachable), and the `sandbox allow-scripts`
//! directive, which the iframe's `sandbox` attribute repeats: the view runs in an
//! opaque origin, so it can neither read the inspector's cookie nor call its API (its
//! requests carry `Origin: null`, which the gate refuses). It talks to the host only
//! through `postMessage`: the bridge (`ui/initialize`, the tool's input and result,
//! `tools/call` and `resources/read` on its own server) lives in the page.

use std::collections::VecDeque;
use std::sync::Mutex;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, Response, StatusCode};
use base64::Engine;
use serde_json::{json, Value};

use super::api::{client, ok, usage, with_session, Shared};

/// How many views are kept to be framed (the oldest go first).
const KEPT: usize = 32;
/// The largest view served.
const MAX_HTML: usize = 4 << 20;

/// One view, ready to be framed.
struct View {
    id: String,
    html: String,
    csp: String,
}

/// The views read so far.
#[derive(Default)]
pub struct Apps {
    views: Mutex<VecDeque<View>>,
}

impl Apps {
    fn keep(&self, view: View) {
        let mut views = self.views.lock().unwrap_or_else(|e| e.into_inner());
        if views.len() == KEPT {
            views.pop_front();
        }
        views.push_back(view);
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
fn policy(meta_csp: &Value) -> String {
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

/// `POST /api/app {server, uri}`: the view read and kept; `{id, uri, csp}`.
pub async fn read(State(app): Shared, bytes: Bytes) -> Response<Body> {
    with_session(&app, &bytes, async |c, session| {
        let uri = match c.str("uri") {
            Ok(u) if u.starts_with("ui://") => u.to_owned(),
            Ok(u) => return usage(format!("{u:?} is not a ui:// resource")),
            Err(m) => return usage(m),
        };
        let read = match session.read_resource(&uri).await {
            Ok(r) => r,
            Err(e) => return client(e),
        };
        let Some(content) = read.contents.first() else {
            return usage(format!("{uri} has no contents"));
        };
        let html = match (&content.text, &content.blob) {
            (Some(text), _) => text.to_string(),
            (None, Some(blob)) => match base64::engine::general_purpose::STANDARD.decode(blob) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(_) => return usage(format!("{uri}: its blob is not base64")),
            },
            (None, None) => return usage(format!("{uri} is empty")),
        };
        let html_mime = content
            .mime_type
            .as_deref()
            .is_some_and(|m| m.starts_with("text/html"));
        if !html_mime || html.len() > MAX_HTML {
            return usage(format!(
                "{uri} is not an HTML view of at most {MAX_HTML} bytes"
            ));
        }
        let meta_csp = content
            .meta
            .as_ref()
            .and_then(|m| m.pointer("/ui/csp"))
            .cloned()
            .unwrap_or(Value::Null);
        let id = match super::security::random_secret() {
            Ok(id) => id,
            Err(e) => return usage(format!("no random id for the view: {e}")),
        };
        let csp = policy(&meta_csp);
        app.apps.keep(View {
            id: id.clone(),
            html,
            csp: csp.clone(),
        });
        ok(json!({"id": id, "uri": uri, "csp": csp}))
    })
    .await
}

/// `GET /app/ID`: the view, under its own policy (framed by the page only).
pub async fn frame(State(app): Shared, Path(id): Path<String>) -> Response<Body> {
    let views = app.apps.views.lock().unwrap_or_else(|e| e.into_inner());
    let Some(view) = views.iter().find(|v| v.id == id) else {
        let mut r = Response::new(Body::from("no such view\n"));
        *r.status_mut() = StatusCode::NOT_FOUND;
        return r;
    };
    let mut response = Response::new(Body::from(view.html.clone()));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(csp) = HeaderValue::from_str(&view.csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    headers.insert(
        header::X_FRAME_OPTIONS,
        HeaderValue::from_static("SAMEORIGIN"),
    );
    response
}

#[cfg(test)]
mod tests {
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
