//! A session's report, to attach to a bug report: one self-contained HTML document
//! (its style inline, no script, nothing fetched: its own policy says so) with the
//! server as capable saw it — who it is, its era and version, the capability matrix
//! exactly as declared and what a host may call, every call the page made with its
//! timing and outcome as the JSON-RPC request it sent and the response it got, the
//! contract violations with both messages, the notices, the last audit with its
//! checks and evidence, and its stderr (its first lines and its last).
//!
//! Everything in it is text the server or the page chose, escaped; the run's secrets
//! are cut out of the whole of it, as out of every answer.

use std::fmt::Write;

use serde_json::Value;

/// The most of a JSON value shown (a larger one is cut, saying so).
const SHOWN: usize = 16 << 10;

/// `text` escaped for HTML text and attribute values.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A value's text: a string as it is, anything else as its JSON.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A JSON value, pretty, escaped, in a `<pre>`.
fn pre(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    if s.len() > SHOWN {
        let mut end = SHOWN;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push_str("\n… (cut)");
    }
    format!("<pre>{}</pre>", esc(&s))
}

fn yes_no(v: &Value) -> &'static str {
    match v.as_bool() {
        Some(true) => "<td class=yes>yes</td>",
        Some(false) => "<td class=no>no</td>",
        None => "<td></td>",
    }
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px;max-width:1100px;color:#1d1f21}\
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:3px 6px;border-bottom:1px solid #ddd;vertical-align:top}\
pre{background:#f2f3f4;padding:6px 8px;white-space:pre-wrap;word-break:break-word;max-height:400px;overflow:auto}\
.yes,.ok{color:#1d7a3a}.no{color:#666}.bad{color:#b3261e}.muted{color:#666}\
.violation{border:1px solid #b3261e;padding:6px 10px;margin:8px 0;border-radius:4px}";

/// The report of `server` (its entry of `GET /api/servers`), with the page's calls to
/// it (`history`) and its last audit (`capable audit --json`'s report), made at `at`.
pub fn html(server: &Value, history: &[Value], audit: Option<&Value>, at: &str) -> String {
    let name = text(&server["name"]);
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html><html lang=en><head><meta charset=utf-8>\
         <meta http-equiv=Content-Security-Policy content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <title>capable ui report: {n}</title><style>{STYLE}</style></head><body>\
         <h1>capable ui report: {n}</h1><p class=muted>Made {at} by capable {v}.</p>",
        n = esc(&name),
        at = esc(at),
        v = env!("CARGO_PKG_VERSION"),
    );
    server_section(&mut h, server);
    calls_section(&mut h, history);
    violations_section(&mut h, server);
    audit_section(&mut h, audit);
    let stderr = text(&server["stderr"]);
    if !stderr.is_empty() {
        let _ = write!(
            h,
            "<h2>stderr (its first lines and its last)</h2><pre>{}</pre>",
            esc(&stderr)
        );
    }
    h.push_str("</body></html>\n");
    h
}

fn server_section(h: &mut String, s: &Value) {
    let i = &s["inspect"];
    let info = &i["serverInfo"];
    let _ = write!(h, "<h2>Server</h2><table>");
    let mut row = |k: &str, v: String| {
        if !v.is_empty() {
            let _ = write!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
        }
    };
    row("target", text(&s["target"]));
    row("state", text(&s["state"]));
    row("reason", text(&s["reason"]));
    row("name", text(&info["name"]));
    row("version", text(&info["version"]));
    row("era", text(&i["era"]));
    row("protocol", text(&i["protocolVersion"]));
    row(
        "handshake",
        s["handshakeMs"]
            .as_u64()
            .map(|ms| format!("{ms} ms"))
            .unwrap_or_default(),
    );
    row(
        "connected",
        s["connection"]
            .as_array()
            .map(|a| a.iter().map(text).collect::<Vec<_>>().join("; "))
            .unwrap_or_default(),
    );
    h.push_str("</table>");
    let Some(matrix) = s["matrix"].as_array() else {
        return;
    };
    h.push_str("<h2>Capabilities as declared</h2><table><tr><th>capability</th><th>present</th><th>subscribe</th><th>listChanged</th></tr>");
    for m in matrix {
        let _ = write!(
            h,
            "<tr><td>{}</td>{}{}{}</tr>",
            esc(&text(&m["capability"])),
            yes_no(&m["present"]),
            yes_no(&m["subscribe"]),
            yes_no(&m["listChanged"])
        );
    }
    h.push_str("</table>");
    h.push_str(&pre(&i["capabilities"]));
    let actions: Vec<String> = i["actions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(text)
        .collect();
    let _ = write!(
        h,
        "<h2>A host may call</h2><p>{}</p><p class=muted>From the gating table: the negotiated version and these capabilities alone.</p>",
        esc(&actions.join(", "))
    );
}

fn calls_section(h: &mut String, history: &[Value]) {
    let _ = write!(h, "<h2>Calls ({})</h2>", history.len());
    if history.is_empty() {
        h.push_str("<p class=muted>None from the page.</p>");
        return;
    }
    h.push_str(
        "<table><tr><th>#</th><th>at</th><th>method</th><th>ms</th><th>outcome</th>\
         <th>request (sent)</th><th>response (received)</th></tr>",
    );
    for e in history {
        let class = if e["ok"] == true { "ok" } else { "bad" };
        let words = match e["error"].as_str() {
            Some(words) => format!(": {words}"),
            None => String::new(),
        };
        let _ = write!(
            h,
            "<tr data-outcome=\"{o}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class={class}>{o}{}</td><td>{}</td><td>{}</td></tr>",
            esc(&text(&e["n"])),
            esc(&text(&e["at"])),
            esc(&text(&e["method"])),
            esc(&text(&e["ms"])),
            esc(&words),
            pre(&e["request"]),
            pre(&e["response"]),
            o = esc(&text(&e["outcome"])),
        );
    }
    h.push_str("</table>");
}

fn violations_section(h: &mut String, s: &Value) {
    let violations = s["violations"].as_array().cloned().unwrap_or_default();
    let _ = write!(h, "<h2>Contract violations ({})</h2>", violations.len());
    for v in &violations {
        let _ = write!(
            h,
            "<div class=violation><p class=bad>declared <code>{}</code> but answered <code>{}</code> with -32601</p>\
             <p>request (sent)</p>{}<p>response (received)</p>{}</div>",
            esc(&text(&v["capability"])),
            esc(&text(&v["method"])),
            pre(&v["request"]),
            pre(&v["response"])
        );
    }
    let notices: Vec<String> = s["notices"]
        .as_array()
        .into_iter()
        .flatten()
        .map(text)
        .collect();
    if !notices.is_empty() {
        h.push_str("<h2>Notices</h2><ul>");
        for n in notices {
            let _ = write!(h, "<li>{}</li>", esc(&n));
        }
        h.push_str("</ul>");
    }
}

fn audit_section(h: &mut String, audit: Option<&Value>) {
    h.push_str("<h2>Audit</h2>");
    let Some(r) = audit else {
        h.push_str("<p class=muted>Not run in this session.</p>");
        return;
    };
    let findings = r["violations"].as_array().cloned().unwrap_or_default();
    let _ = write!(
        h,
        "<p class={}>{}</p><table><tr><th>capability</th><th>check</th><th>outcome</th><th>detail</th></tr>",
        if findings.is_empty() { "ok" } else { "bad" },
        if findings.is_empty() { "No contract violation.".to_owned() } else { format!("{} contract violation(s)", findings.len()) }
    );
    for c in r["checks"].as_array().into_iter().flatten() {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&text(&c["capability"])),
            esc(&text(&c["check"])),
            esc(&text(&c["outcome"])),
            esc(&text(&c["detail"]))
        );
    }
    h.push_str("</table>");
    for f in &findings {
        let _ = write!(
            h,
            "<div class=violation><p class=bad>{}: <code>{}</code> {}</p><p>{}</p>{}{}</div>",
            esc(&text(&f["kind"])),
            esc(&text(&f["capability"])),
            esc(&text(&f["method"])),
            esc(&text(&f["detail"])),
            pre(&f["request"]),
            pre(&f["response"])
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn everything_a_server_chose_is_text_and_nothing_is_fetched() {
        let server = json!({
            "name": "<b>x</b>", "target": "stdio: x", "state": "ready",
            "inspect": {"serverInfo": {"name": "<script>alert(1)</script>", "version": "1"},
                        "era": "legacy", "protocolVersion": "2025-11-25",
                        "capabilities": {"resources": {}}, "actions": ["resources/read"]},
            "matrix": [{"capability": "resources", "present": true, "subscribe": false, "listChanged": null}],
            "violations": [{"capability": "resources.subscribe", "method": "resources/subscribe",
                            "request": {"id": 1}, "response": {"error": {"code": -32601}}}],
            "stderr": "line\"<img src=x>"
        });
        let calls = [
            json!({"at": "t", "n": 1, "method": "tools/call", "ms": 3.5, "status": 200, "outcome": "cancelled",
                   "request": {"jsonrpc": "2.0", "method": "tools/call", "params": {"a": "<i>"}},
                   "response": {"none": "cancelled"}}),
        ];
        let page = html(&server, &calls, None, "now");
        assert!(!page.contains("<script>") && !page.contains("<img") && !page.contains("<b>x"));
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("default-src 'none'"));
        assert!(
            !page.contains("src=\"") && !page.contains("href="),
            "nothing to fetch"
        );
        assert!(page.contains("Contract violations (1)") && page.contains("Calls (1)"));
        assert!(page.contains("Not run in this session."));
        assert!(
            page.contains("<td class=bad>cancelled</td>"),
            "not a 200: {page}"
        );
        assert!(page.contains("&quot;jsonrpc&quot;: &quot;2.0&quot;"));
    }
}
