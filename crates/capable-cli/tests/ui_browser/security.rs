//! Item by item, who may do what: the page's secret (a cookie replayed from another
//! local port gets nothing of the API), MCP Apps' visibility (a view may not call
//! a tool meant for the model alone), and `capable bridge --listen` out of reach of a
//! page of another local port.

use crate::ui_support::page::{watch_csp, WAIT};
use crate::ui_support::webdriver::Browser;
use crate::ui_support::{http_status, OtherServer, Ui};

/// The printed URL: the page, its secret, the token gone from the address bar and
/// from the page; the cookie, replayed from another local port, gets nothing of the
/// API. From here on the page is watched for CSP violations.
pub fn page_and_cookie_replay(b: &Browser<'_>, ui: &Ui) {
    // The printed URL: the token is exchanged for the cookie and leaves the address bar.
    b.goto(&ui.url());
    b.wait_for("[data-testid=server][data-name=docs]", WAIT);
    assert_eq!(
        b.current_url(),
        format!("{}/", ui.base),
        "the token is gone from the URL"
    );
    b.wait_until(
        "the event stream is live",
        "return document.querySelector('[data-testid=live]').textContent === 'live'",
        WAIT,
    );
    // The browser sends the inspector's cookie to any web server on 127.0.0.1 it
    // visits (cookies ignore ports); replayed, it gets none of the API: that needs the
    // page's secret, which only the page's own script sends.
    let other = OtherServer::start();
    b.goto(&format!("http://127.0.0.1:{}/", other.port));
    let heard = other.next_request();
    let cookie = heard
        .iter()
        .find(|(n, _)| n == "cookie")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    assert!(
        cookie.contains(&format!("capable_ui_{}=", ui.port)),
        "the browser gave another port the cookie: {heard:?}"
    );
    let host = ui.host();
    let replayed = [
        ui.request(
            "GET",
            "/api/servers",
            &[("Host", &host), ("Cookie", &cookie)],
            "",
        ),
        ui.request(
            "POST",
            "/api/call",
            &[
                ("Host", &host),
                ("Cookie", &cookie),
                ("Origin", &ui.base),
                ("Content-Type", "application/json"),
            ],
            r#"{"server":"tools","tool":"echo","arguments":{"message":"replayed"}}"#,
        ),
    ];
    for answer in replayed {
        let said = answer.body.chars().take(200).collect::<String>();
        assert_eq!(answer.status, 401, "a replayed cookie: {said}");
    }
    let events = http_status(
        ("127.0.0.1", ui.port),
        "GET",
        "/api/events",
        &[("Host", &host), ("Cookie", &cookie)],
    );
    assert_eq!(events, 401, "a replayed cookie on the event stream");
    // Back in the same tab, the page goes on with its secret.
    back_to_the_inspector(b, ui);

    // Everything the page does from here on is watched for CSP violations.
    watch_csp(b);
    let page = b.execute(
        "return document.documentElement.outerHTML",
        serde_json::json!([]),
    );
    assert!(
        !page.as_str().unwrap().contains(&ui.token),
        "the token is not in the page"
    );
}

/// MCP Apps' visibility: a tool for the model alone is refused to the view, before
/// anything is sent; a tool for apps alone is the view's to call, and stays out of
/// the tool list.
pub fn view_calls_only_what_apps_may(b: &Browser<'_>) {
    b.enter_frame("[data-testid=app-frame]");
    b.click("#modelonly");
    let refused = b.wait_until(
        "the model-only tool refused to the view",
        "const t = document.getElementById('called').textContent; return t.startsWith('purge-cache: error') && t",
        WAIT,
    );
    assert!(
        refused.as_str().unwrap().contains("not visible to apps"),
        "{refused}"
    );
    b.click("#apponly");
    b.wait_until(
        "the app-only tool called by the view",
        "return document.getElementById('called').textContent === 'refresh-view: refreshed'",
        WAIT,
    );
    b.leave_frame();
    // The app-only tool is not in the tool list; nothing named purge-cache went out,
    // refresh-view did.
    assert_eq!(
        b.all("[data-testid=tool]").len(),
        2,
        "weather and purge-cache, not refresh-view"
    );
    assert!(b
        .all("[data-testid=tool][data-name=refresh-view]")
        .is_empty());
    let hidden = b.text("[data-testid=app-only-tools]", WAIT);
    assert!(hidden.contains("refresh-view"), "{hidden}");
    b.click("[data-testid=tab-log]");
    let calls = b.wait_until(
        "the view's calls in the message log",
        "const r = [...document.querySelectorAll('[data-testid=log-row][data-dir=sent][data-method=\"tools/call\"] pre')].map(p => p.textContent); return r.some(t => t.includes('refresh-view')) && r",
        WAIT,
    );
    assert!(
        !calls.to_string().contains("purge-cache"),
        "the refused call was never sent: {calls}"
    );
}

/// A page served from another local port (a development server's, anyone's script)
/// posts to `capable bridge --listen` the ways a page may without asking first — a
/// simple request's `text/plain`, a form's types, `no-cors` — and with JSON, which
/// needs a CORS preflight the bridge never grants it: none of it starts a session,
/// so no server is started and nothing is called.
pub fn a_page_of_another_port_cannot_drive_the_bridge(b: &Browser<'_>, ui: &Ui) {
    let (bridge, port) = crate::listen_support::listening(&[], "no-resources");
    let other = OtherServer::start();
    b.goto(&format!("http://127.0.0.1:{}/", other.port));
    other.next_request();
    let script = r#"
        const url = arguments[0];
        const hello = JSON.stringify({jsonrpc: '2.0', id: 1, method: 'initialize', params: {
            protocolVersion: '2025-11-25', capabilities: {}, clientInfo: {name: 'page', version: '1'}}});
        window.__tries = [];
        const tried = (how) => (r) => window.__tries.push(how + ' ' + (r && r.type ? r.type : 'failed'));
        for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data']) {
            fetch(url, {method: 'POST', mode: 'no-cors', headers: {'Content-Type': type}, body: hello})
                .then(tried(type), tried(type));
        }
        fetch(url, {method: 'POST', headers: {'Content-Type': 'application/json',
            'Accept': 'application/json, text/event-stream'}, body: hello})
            .then(tried('json'), tried('json'));
    "#;
    b.execute(
        script,
        serde_json::json!([format!("http://127.0.0.1:{port}/mcp")]),
    );
    let tries = b.wait_until(
        "every request of the page's settled",
        "return window.__tries.length === 4 ? window.__tries : null",
        WAIT,
    );
    // The JSON one needed a preflight, which was refused: the page saw a failure.
    assert!(
        tries.as_array().unwrap().iter().any(|t| t == "json failed"),
        "{tries}"
    );
    // The gate refused them all before their bodies: no session, no server started.
    let started = bridge
        .audit()
        .into_iter()
        .filter(|l| l["event"] == "state" && l["state"] == "starting")
        .count();
    assert_eq!(
        started,
        0,
        "a page of another port started a session: {:?}",
        bridge.audit()
    );
    // The bridge itself is fine: a host of its own is served.
    assert!(!crate::listen_support::initialize(port).is_empty());
    // Back to the inspector, as the steps after this one want it, watched for CSP
    // violations again (the page was loaded anew).
    back_to_the_inspector(b, ui);
    watch_csp(b);
}

/// The inspector's page again, in the same tab (the page's secret kept), once its
/// event stream is live.
fn back_to_the_inspector(b: &Browser<'_>, ui: &Ui) {
    b.goto(&format!("{}/", ui.base));
    b.wait_until(
        "the event stream is live again",
        "return document.querySelector('[data-testid=live]').textContent === 'live'",
        WAIT,
    );
}
