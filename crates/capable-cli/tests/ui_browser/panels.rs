//! The inspector's panels, each as a user meets it: servers and their states, the
//! overview, resources and watches, tools (forms, progress, cancel, requests for
//! input), MCP Apps views, skills, the message log, the audit, stderr, a narrow
//! window in dark mode.

use std::time::Duration;

use crate::ui_support::page::{call_then_cancel, open, shots, WAIT};
use crate::ui_support::webdriver::Browser;

/// Servers, each with its state (`count` of them, all settled); the overview.
pub fn servers_and_overview(b: &Browser<'_>, count: usize) {
    // Servers: each with its state; a refused one says why.
    b.wait_until(
        "every server settled",
        &"const s = [...document.querySelectorAll('[data-testid=server-state]')].map(e => e.textContent); return s.length === COUNT && !s.includes('starting') && s.join(',')".replace("COUNT", &count.to_string()),
        WAIT,
    );
    b.click("[data-testid=server][data-name=old]");
    let why = b.text("[data-testid=reason]", WAIT);
    assert!(
        why.contains("1999-01-01"),
        "the refusal names the version: {why}"
    );
    b.screenshot(&shots().join("servers-refused.png"));

    // Overview: the matrix exactly as declared and the allowed actions.
    open(b, "live", "overview");
    // The tabs answer the arrow keys, and the focus follows.
    b.type_into_keys("[data-testid=tab-overview]", "\u{E014}");
    b.wait_until(
        "the next tab is selected and focused",
        "const t = document.activeElement; return t && t.dataset.tab === 'resources' && t.getAttribute('aria-selected') === 'true'",
        WAIT,
    );
    b.click("[data-testid=tab-overview]");
    let row = b.text("[data-testid=matrix] tr[data-capability=resources]", WAIT);
    assert!(row.contains("yes"), "{row}");
    let actions = b.text("[data-testid=actions]", WAIT);
    assert!(actions.contains("resources/subscribe"), "{actions}");
    b.screenshot(&shots().join("overview.png"));
}

/// Read, watch (subscribe, listen, a violation then the fallback), disconnect and
/// connect.
pub fn resources_and_watches(b: &Browser<'_>) {
    // Read a resource: its text, revision and read time.
    open(b, "docs", "resources");
    b.click("[data-testid=resource][data-uri='docs://manual/current'] [data-testid=read]");
    b.wait_for("[data-testid=read-result] [data-testid=revision]", WAIT);
    let text = b.text("[data-testid=read-result] [data-testid=text]", WAIT);
    assert!(text.contains("Acceptance instructions"), "{text}");
    let at = b.text("[data-testid=read-result] [data-testid=read-at]", WAIT);
    assert!(at.ends_with('Z') && at.contains('T'), "RFC 3339: {at}");
    b.screenshot(&shots().join("read.png"));

    // Watch `subscribe`: mode subscribe, then the second revision as it arrives.
    open(b, "live", "resources");
    b.click("[data-testid=resource][data-uri='docs://manual/current'] [data-testid=watch]");
    b.wait_for(
        "[data-testid=watch-card] [data-testid=mode-line][data-mode=subscribe]",
        WAIT,
    );
    b.wait_for(
        "[data-testid=watch-card] [data-testid=watch-revision][data-n='2']",
        WAIT,
    );
    b.screenshot(&shots().join("watch-subscribe.png"));
    b.click("[data-testid=watch-card] [data-testid=unwatch]");
    b.wait_for("[data-testid=watch-card] [data-testid=watch-end]", WAIT);

    // A modern server's subscription is a listen stream.
    open(b, "modern", "resources");
    b.click("[data-testid=resource][data-uri='docs://manual/current'] [data-testid=watch]");
    b.wait_for(
        "[data-testid=watch-card] [data-testid=mode-line][data-mode=listen]",
        WAIT,
    );
    b.wait_for(
        "[data-testid=watch-card] [data-testid=watch-revision][data-n='2']",
        WAIT,
    );
    b.click("[data-testid=watch-card] [data-testid=unwatch]");

    // Disconnect ends the session; connect starts it again.
    open(b, "docs", "overview");
    b.click("[data-testid=disconnect]");
    b.wait_until(
        "docs disconnected",
        "return document.querySelector('[data-testid=server][data-name=docs] [data-testid=server-state]').textContent === 'disconnected'",
        WAIT,
    );
    b.click("[data-testid=connect]");
    b.wait_until(
        "docs ready again",
        "return document.querySelector('[data-testid=server][data-name=docs] [data-testid=server-state]').textContent === 'ready'",
        WAIT,
    );

    // Watch `lying-subscribe`: the violation with both messages and the server, then
    // the fallback to polling.
    open(b, "liar", "resources");
    b.type_into("[data-testid=poll-ms]", "300");
    b.click("[data-testid=resource][data-uri='docs://manual/current'] [data-testid=watch]");
    let violation = "[data-testid=watch-card] [data-testid=violation]";
    let request = b.text(
        &format!("{violation} [data-testid=violation-request]"),
        WAIT,
    );
    assert!(request.contains("resources/subscribe"), "{request}");
    let response = b.text(
        &format!("{violation} [data-testid=violation-response]"),
        WAIT,
    );
    assert!(response.contains("-32601"), "{response}");
    let card = b.text(violation, WAIT);
    assert!(
        card.contains("capable-fixture/lying-subscribe 0.1.0"),
        "the server's name and version: {card}"
    );
    b.wait_for(
        "[data-testid=watch-card] [data-testid=mode-line][data-mode=poll]",
        WAIT,
    );
    b.wait_for(
        "[data-testid=watch-card] [data-testid=watch-revision]",
        WAIT,
    );
    let order = b.execute(
        "return [...document.querySelectorAll('[data-testid=watch-card] .list > *')].map(e => e.dataset.testid + ':' + (e.dataset.mode || ''))",
        serde_json::json!([]),
    );
    let order: Vec<&str> = order
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    let at = |what: &str| order.iter().position(|o| *o == what).unwrap_or(usize::MAX);
    assert!(
        at("mode-line:subscribe") < at("violation:") && at("violation:") < at("mode-line:poll"),
        "subscribe, the violation, then the fallback: {order:?}"
    );
    b.screenshot(&shots().join("watch-violation.png"));
}

/// A tool form, the form of every kind of field, progress, cancel, a request for
/// input answered in the page.
pub fn tools(b: &Browser<'_>) {
    // A tool form: the required field, the call, the result.
    open(b, "tools", "tools");
    b.click("[data-testid=tool][data-name=echo]");
    b.click("[data-testid=tool-form] [data-testid=call]");
    let problem = b.text("[data-testid=form-errors]", WAIT);
    assert!(
        problem.contains("message"),
        "a required field left empty is caught: {problem}"
    );
    b.type_into(
        "[data-testid=tool-form] input[name=message]",
        "hello from the browser",
    );
    b.click("[data-testid=tool-form] [data-testid=call]");
    let result = b.text("[data-testid=call-result] [data-testid=content-text]", WAIT);
    assert_eq!(result, "hello from the browser");
    b.screenshot(&shots().join("tool-call.png"));

    // The schema form covers every kind of field it claims, and sends what was typed
    // as the JSON types the schema asks for (the form module, in this page).
    form_of_every_kind(b);

    // Progress as it comes, kept with the result.
    open(b, "slow", "tools");
    b.click("[data-testid=tool][data-name=echo]");
    b.type_into("[data-testid=tool-form] input[name=message]", "slowly");
    b.click("[data-testid=tool-form] [data-testid=call]");
    b.wait_until(
        "a progress bar that advances",
        "const p = document.querySelector('[data-testid=tool-form] progress'); return p && p.value >= 1 && p.max === 7",
        WAIT,
    );
    let progress = b.text("[data-testid=final-progress]", WAIT);
    assert_eq!(progress, "progress 7 / 7");
    assert_eq!(
        b.text("[data-testid=call-result] [data-testid=content-text]", WAIT),
        "slowly"
    );
    // Cancel: the call stops and the server is told (`notifications/cancelled`).
    call_then_cancel(
        b,
        "the second call in progress",
        "const p = document.querySelector('[data-testid=tool-form] progress'); return p && p.value >= 1",
        "notifications/cancelled",
    );

    // A server's request for input is a form in the page; the answer goes back.
    open(b, "ask", "tools");
    b.click("[data-testid=tool][data-name=confirm]");
    b.click("[data-testid=tool-form] [data-testid=call]");
    let message = b.text(
        "[data-testid=elicitation] [data-testid=elicitation-message]",
        WAIT,
    );
    assert_eq!(message, "Confirm the acceptance run?");
    b.type_into("[data-testid=elicitation] input[name=note]", "ship it");
    b.click("[data-testid=elicitation] [data-testid=elicit-accept]");
    let answered = b.text("[data-testid=call-result] [data-testid=content-text]", WAIT);
    assert!(
        answered.contains("action=accept")
            && answered.contains("ship it")
            && answered.contains("\"approve\":true"),
        "the form's values, the default included, reached the server: {answered}"
    );
    b.wait_until(
        "the request's form is gone",
        "return document.querySelectorAll('[data-testid=elicitation]').length === 0",
        WAIT,
    );
    b.screenshot(&shots().join("elicitation-answered.png"));
}

/// An MCP Apps view: in its sandbox, given the call's input and result, calling its
/// tool through the host, its links offered to the person; no cookie, no API.
pub fn apps(b: &Browser<'_>) {
    // MCP Apps: the tool's ui:// view in a sandboxed iframe, given the call's input and
    // result over the bridge; its own tools/call goes through the host; it cannot
    // reach the inspector's cookie or API.
    open(b, "weather", "tools");
    b.click("[data-testid=tool][data-name=weather]");
    b.type_into("[data-testid=tool-form] input[name=city]", "Paris");
    b.click("[data-testid=tool-form] [data-testid=call]");
    let sandbox = b.wait_until(
        "the view's frame",
        "const f = document.querySelector('[data-testid=app-frame]'); return f && f.getAttribute('sandbox')",
        WAIT,
    );
    assert_eq!(sandbox, "allow-scripts");
    b.enter_frame("[data-testid=app-frame]");
    b.wait_until(
        "the view got the input and the result",
        "return document.getElementById('title').textContent === 'Weather for Paris' && document.getElementById('status').textContent === 'result: Sunny in Paris' && document.body.dataset.host === 'capable ui'",
        WAIT,
    );
    b.click("#again");
    b.wait_until(
        "the view's own call, through the host",
        "return document.getElementById('status').textContent === 'again: Sunny in Oslo'",
        WAIT,
    );
    // Links: a script URL is refused at once; a web link is offered in the page, and
    // opened only when the person says so.
    b.click("#badlink");
    b.wait_until(
        "the script link refused without asking",
        "return document.getElementById('linked').textContent === 'link: not opened'",
        WAIT,
    );
    let clear_link = "document.getElementById('linked').textContent = ''; return true";
    b.execute(clear_link, serde_json::json!([]));
    b.click("#link");
    b.leave_frame();
    let offered = b.text("[data-testid=app-link-url]", WAIT);
    assert_eq!(offered, "http://127.0.0.1:9/forecast?city=Oslo");
    b.click("[data-testid=app-link-dismiss]");
    b.enter_frame("[data-testid=app-frame]");
    b.wait_until(
        "a declined link is not opened",
        "return document.getElementById('linked').textContent === 'link: not opened'",
        WAIT,
    );
    b.execute(clear_link, serde_json::json!([]));
    b.click("#link");
    b.leave_frame();
    let windows = b.window_count();
    b.click("[data-testid=app-link-open]");
    b.wait_for_windows(windows + 1);
    b.enter_frame("[data-testid=app-frame]");
    b.wait_until(
        "the view hears that its link was opened",
        "return document.getElementById('linked').textContent === 'link: opened'",
        WAIT,
    );
    let cookie = b.execute(
        "try { return 'read: ' + document.cookie } catch (e) { return 'no access' }",
        serde_json::json!([]),
    );
    assert_eq!(cookie, "no access", "an opaque origin has no cookie");
    let reached = b.execute(
        "return fetch('/api/servers').then(r => 'reached ' + r.status, () => 'blocked')",
        serde_json::json!([]),
    );
    assert_eq!(
        reached, "blocked",
        "the view cannot call the inspector's API"
    );
    b.leave_frame();
    b.screenshot(&shots().join("app.png"));
}

/// Skills, the message log, the audit, stderr followed live.
pub fn skills_log_audit_stderr(b: &Browser<'_>) {
    // Skills: a faithful one loads verified, with its file; a tampered one is refused.
    open(b, "skills", "skills");
    b.click("[data-testid=list-skills]");
    let pdf = "[data-testid=skill][data-name=pdf-processing]";
    b.click(&format!("{pdf} [data-testid=load-skill]"));
    b.wait_for(&format!("{pdf} [data-testid=skill-verified]"), WAIT);
    let body = b.text(&format!("{pdf} [data-testid=skill-text]"), WAIT);
    assert_eq!(body, "Use the forms in references/FORMS.md.");
    b.click(&format!("{pdf} button[data-file='references/FORMS.md']"));
    b.wait_until(
        "the supporting file, verified",
        "const t = document.querySelector('[data-testid=skill][data-name=pdf-processing] [data-testid=skill-text]'); return t && t.textContent.startsWith('Fill the fields')",
        WAIT,
    );
    let tampered = "[data-testid=skill][data-name=tampered]";
    b.click(&format!("{tampered} [data-testid=load-skill]"));
    let refused = b.text(&format!("{tampered} [data-testid=skill-refused]"), WAIT);
    assert!(refused.contains("refused as tampered"), "{refused}");
    assert!(
        b.all(&format!("{tampered} [data-testid=skill-text]"))
            .is_empty(),
        "nothing of a tampered skill is shown"
    );
    b.screenshot(&shots().join("skills.png"));

    // The message log has both directions of a call, and filters by method.
    open(b, "tools", "log");
    b.wait_for(
        "[data-testid=log-row][data-dir=sent][data-method='tools/call']",
        WAIT,
    );
    b.wait_for(
        "[data-testid=log-row][data-dir=received][data-method='tools/call →']",
        WAIT,
    );
    b.type_into("[data-testid=log-method]", "tools/call");
    b.wait_until(
        "only tools/call rows",
        "const r = [...document.querySelectorAll('[data-testid=log-row]')]; return r.length >= 2 && r.every(e => e.dataset.method.startsWith('tools/call'))",
        WAIT,
    );

    // The audit: a violation with its evidence, and the Markdown to download.
    open(b, "liar", "audit");
    b.click("[data-testid=run-audit]");
    let verdict = b.text(
        "[data-testid=audit-result] [data-testid=audit-verdict]",
        Duration::from_secs(30),
    );
    assert!(verdict.contains("contract violation"), "{verdict}");
    b.wait_for("[data-testid=audit-finding]", WAIT);
    b.click("[data-testid=audit-download]");
    b.screenshot(&shots().join("audit.png"));

    // The server's stderr, followed live: a line it writes while its panel is open
    // shows up there, with no refresh by hand.
    open(b, "tools", "stderr");
    b.execute(
        "import('/dom.js').then(m => m.post('/api/call', {server: 'tools', tool: 'echo', arguments: {message: 'a live stderr line'}, call: 'stderr-live', task: false})); return true",
        serde_json::json!([]),
    );
    b.wait_until(
        "the line shows in the open stderr panel",
        "return document.querySelector('[data-testid=stderr]').textContent.includes('capable fixture: echo a live stderr line')",
        WAIT,
    );
    b.screenshot(&shots().join("stderr.png"));
}

/// Nothing the page did broke its Content-Security-Policy, and it asked nothing of
/// any other origin.
pub fn nothing_from_elsewhere(b: &Browser<'_>) {
    // Nothing the page did broke its Content-Security-Policy, and it asked nothing of
    // any other origin (no CDN, no font, no analytics).
    let violations = b.execute("return window.__csp", serde_json::json!([]));
    assert_eq!(violations, serde_json::json!([]), "CSP violations");
    let foreign = b.execute(
        "return performance.getEntriesByType('resource').map(e => e.name).filter(u => !u.startsWith(location.origin + '/'))",
        serde_json::json!([]),
    );
    assert_eq!(foreign, serde_json::json!([]), "requests to other origins");
}

/// A narrow window, in dark mode: one column, light text on a dark page.
pub fn narrow_dark(b: &Browser<'_>) {
    b.resize(420, 800);
    b.prefer_dark(true);
    b.wait_for("[data-testid=server][data-name=docs]", WAIT);
    let columns = b.execute(
        "const s = document.getElementById('servers').getBoundingClientRect(), m = document.getElementById('main').getBoundingClientRect(); return m.top >= s.bottom - 1",
        serde_json::json!([]),
    );
    assert_eq!(columns, true, "the server list sits above the details");
    let dark = b.execute(
        "const [r, g, b] = getComputedStyle(document.body).backgroundColor.match(/\\d+/g).map(Number); return (r + g + b) / 3 < 64",
        serde_json::json!([]),
    );
    assert_eq!(dark, true, "prefers-color-scheme: dark gives a dark page");
    b.screenshot(&shots().join("narrow-dark.png"));
    b.prefer_dark(false);
    b.resize(1280, 1000);
}

/// The form generator on a schema with every kind of field it covers: the values
/// typed, selected and added come back as the JSON the schema asks for; a decimal in
/// an integer field and a missing required field are caught before sending.
fn form_of_every_kind(b: &Browser<'_>) {
    let schema = serde_json::json!({
        "type": "object",
        "required": ["name", "count"],
        "properties": {
            "name": {"type": "string", "description": "who"},
            "count": {"type": "integer", "default": 2},
            "ratio": {"type": "number"},
            "on": {"type": "boolean"},
            "color": {"enum": ["red", "green"]},
            "size": {"oneOf": [{"const": "s", "title": "small"}, {"const": "l", "title": "large"}]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "nested": {"type": "object", "properties": {"depth": {"type": "integer"}}},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "raw": {"$ref": "#/$defs/thing"}
        },
        "$defs": {"thing": {"type": "object"}}
    });
    let made = b.execute(
        "return import('/form.js').then(m => { const f = m.schemaForm(arguments[0]); window.__lab = f; \
         const lab = document.createElement('form'); lab.id = 'lab'; lab.appendChild(f.el); document.body.prepend(lab); return true; })",
        serde_json::json!([schema]),
    );
    assert_eq!(made, true);
    let read = "return JSON.stringify(window.__lab.read())";
    let missing = b.execute(read, serde_json::json!([]));
    assert!(
        missing.as_str().unwrap().contains("required: name"),
        "{missing}"
    );
    b.type_into("#lab input[name=name]", "Ada");
    b.type_into("#lab input[name=count]", "2.5");
    let decimal = b.execute(read, serde_json::json!([]));
    assert!(
        decimal.as_str().unwrap().contains("count: not an integer"),
        "{decimal}"
    );
    b.type_into("#lab input[name=count]", "3");
    b.type_into("#lab input[name=ratio]", "0.5");
    b.click("#lab select[name=on] option[value=true]");
    b.click("#lab select[name=color] option[value='1']");
    b.click("#lab select[name=size] option[value='1']");
    b.click("#lab [data-testid=add-item]");
    b.type_into("#lab input[name='tags/0']", "x");
    b.type_into("#lab input[name='nested/depth']", "4");
    b.click("#lab input[aria-label='maybe is null']");
    b.type_into("#lab textarea[name=raw]", r#"{"a": 1}"#);
    let value: serde_json::Value =
        serde_json::from_str(b.execute(read, serde_json::json!([])).as_str().unwrap()).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"ok": true, "value": {
            "name": "Ada", "count": 3, "ratio": 0.5, "on": true, "color": "green", "size": "l",
            "tags": ["x"], "nested": {"depth": 4}, "maybe": null, "raw": {"a": 1}
        }})
    );
    b.screenshot(&shots().join("form-of-every-kind.png"));
    b.execute(
        "document.getElementById('lab').remove()",
        serde_json::json!([]),
    );
}
