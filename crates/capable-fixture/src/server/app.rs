//! The `app` profile: a tool that comes with an MCP Apps view. `weather` answers a
//! city's sky (text, a `resource_link` to the view, structured content) and names
//! `ui://weather/view` in its `_meta.ui.resourceUri`; that resource is an HTML page
//! (`text/html;profile=mcp-app`) that speaks the host↔app bridge: `ui/initialize`
//! (it takes the host's theme and style variables, and follows their changes), then
//! it shows the tool input and result the host sends, and its buttons call tools
//! through the host: `weather` again, `refresh-view` (`visibility: ["app"]`, for the
//! view alone) and `purge-cache` (`visibility: ["model"]`, which no host may let a
//! view call). Two more ask the host to open a link (`ui/open-link`): one to a web
//! page on 127.0.0.1, one to a `javascript:` URL no host should open; one logs a
//! line far wider than any page.

use std::sync::Arc;

use capable_core::internal::jsonrpc::RequestId;
use serde_json::{json, Value};

use super::{Fixture, Profile};

/// The view's URI.
pub const VIEW: &str = "ui://weather/view";

/// The view: plain HTML and an inline script, as an app server would serve it.
const HTML: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>weather</title>
<style>
/* No background of its own: the host's canvas shows through, in the theme it gave. */
body { color: var(--color-text-primary, CanvasText); font-family: var(--font-sans, sans-serif); margin: 8px; }
</style></head>
<body>
<h1 id="title">Weather</h1>
<p id="status">waiting for the host</p>
<button id="again" type="button">Ask for Oslo</button>
<button id="apponly" type="button">Refresh (app only)</button>
<button id="modelonly" type="button">Purge (model only)</button>
<button id="link" type="button">Open the forecast</button>
<button id="badlink" type="button">Open a script</button>
<button id="longlog" type="button">Log a long line</button>
<p id="linked"></p>
<p id="called"></p>
<script>
let next = 1;
const pending = {};
function request(method, params) {
  const id = next++;
  parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
  return new Promise((resolve) => { pending[id] = resolve; });
}
function notify(method, params) {
  parent.postMessage({ jsonrpc: "2.0", method, params }, "*");
}
// The host's theme and style variables, as MCP Apps hands them over.
function apply(context) {
  if (!context) return;
  if (context.theme) {
    document.documentElement.style.colorScheme = context.theme;
    document.body.dataset.theme = context.theme;
  }
  const vars = (context.styles && context.styles.variables) || {};
  for (const [name, value] of Object.entries(vars)) {
    if (value) document.documentElement.style.setProperty(name, value);
  }
}
const text = (r) => (r && r.content && r.content[0] && r.content[0].text) || "";
window.addEventListener("message", (e) => {
  const m = e.data;
  if (!m || m.jsonrpc !== "2.0") return;
  if (m.id !== undefined && pending[m.id]) { pending[m.id](m); delete pending[m.id]; return; }
  if (m.method === "ui/notifications/tool-input") {
    document.getElementById("title").textContent = "Weather for " + m.params.arguments.city;
  }
  if (m.method === "ui/notifications/tool-result") {
    document.getElementById("status").textContent = "result: " + text(m.params);
  }
  if (m.method === "ui/notifications/host-context-changed") apply(m.params);
});
request("ui/initialize", { protocolVersion: "2026-01-26", appInfo: { name: "weather-view", version: "1.0.0" }, appCapabilities: {} })
  .then((answer) => {
    document.body.dataset.host = answer.result ? answer.result.hostInfo.name : "none";
    if (answer.result) apply(answer.result.hostContext);
    notify("ui/notifications/initialized", {});
  });
const openLink = (url) => request("ui/open-link", { url }).then((answer) => {
  const r = answer.result;
  document.getElementById("linked").textContent = "link: " + (r ? (r.isError ? "not opened" : "opened") : "error " + answer.error.message);
});
const call = (name, args) => request("tools/call", { name, arguments: args }).then((answer) => {
  document.getElementById("called").textContent = name + ": " + (answer.result ? text(answer.result) : "error " + answer.error.message);
});
document.getElementById("link").addEventListener("click", () => openLink("http://127.0.0.1:9/forecast?city=Oslo"));
document.getElementById("badlink").addEventListener("click", () => openLink("javascript:alert(1)"));
document.getElementById("apponly").addEventListener("click", () => call("refresh-view", {}));
document.getElementById("modelonly").addEventListener("click", () => call("purge-cache", {}));
document.getElementById("longlog").addEventListener("click", () => {
  notify("notifications/message", { level: "info", logger: "weather-view", data: "a long line " + "x".repeat(4000) });
});
document.getElementById("again").addEventListener("click", () => {
  request("tools/call", { name: "weather", arguments: { city: "Oslo" } }).then((answer) => {
    document.getElementById("status").textContent = "again: " + (answer.result ? text(answer.result) : "error " + answer.error.message);
  });
});
</script>
</body></html>
"#;

/// Handles what this profile does; `true` when the request is answered.
pub(super) fn handle(f: &Arc<Fixture>, id: &RequestId, method: &str, params: &Value) -> bool {
    if f.profile != Profile::App {
        return false;
    }
    match method {
        "tools/list" => f.result(
            id,
            &json!({"tools": [{
                "name": "weather",
                "description": "The sky over a city, with a view.",
                "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                "outputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "sky": {"type": "string"}}, "required": ["city", "sky"]},
                "_meta": {"ui": {"resourceUri": VIEW}}
            }, {
                "name": "refresh-view",
                "description": "Refreshes the weather view (the view's own button).",
                "inputSchema": {"type": "object"},
                "_meta": {"ui": {"resourceUri": VIEW, "visibility": ["app"]}}
            }, {
                "name": "purge-cache",
                "description": "Forgets every forecast (for the agent alone).",
                "inputSchema": {"type": "object"},
                "_meta": {"ui": {"visibility": ["model"]}}
            }]}),
        ),
        "tools/call" if params.get("name").and_then(Value::as_str) == Some("refresh-view") => {
            f.result(id, &json!({"content": [{"type": "text", "text": "refreshed"}]}))
        }
        "tools/call" if params.get("name").and_then(Value::as_str) == Some("purge-cache") => {
            f.result(id, &json!({"content": [{"type": "text", "text": "purged"}]}))
        }
        "tools/call" => {
            let city = params
                .pointer("/arguments/city")
                .and_then(Value::as_str)
                .unwrap_or("nowhere");
            f.result(
                id,
                &json!({
                    "content": [
                        {"type": "text", "text": format!("Sunny in {city}")},
                        {"type": "resource_link", "uri": VIEW, "name": "weather-view",
                         "title": "The weather view", "mimeType": "text/html;profile=mcp-app",
                         "description": "The view that shows this result."}
                    ],
                    "structuredContent": {"city": city, "sky": "sunny"}
                }),
            );
        }
        "resources/list" => f.result(
            id,
            &json!({"resources": [{"uri": VIEW, "name": "weather-view", "mimeType": "text/html;profile=mcp-app"}]}),
        ),
        "resources/templates/list" => f.result(id, &json!({"resourceTemplates": []})),
        "resources/read" if params.get("uri").and_then(Value::as_str) == Some(VIEW) => f.result(
            id,
            &json!({"contents": [{
                "uri": VIEW,
                "mimeType": "text/html;profile=mcp-app",
                "text": HTML,
                "_meta": {"ui": {"csp": {"connectDomains": [], "resourceDomains": []}, "prefersBorder": true}}
            }]}),
        ),
        _ => return false,
    }
    true
}
