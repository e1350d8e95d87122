//! Item by item, who may do what: the page's secret (a cookie replayed from another
//! local port gets nothing of the API) and MCP Apps' visibility (a view may not call
//! a tool meant for the model alone).

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
    b.goto(&format!("{}/", ui.base));
    b.wait_until(
        "the event stream is live again",
        "return document.querySelector('[data-testid=live]').textContent === 'live'",
        WAIT,
    );

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
