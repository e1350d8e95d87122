//! `capable ui` in a real browser: Debian's headless Chromium driven over WebDriver
//! (chromedriver), against the inspector over fixture servers. Each step waits on a
//! condition in the page with a deadline, never a fixed sleep; a screenshot of each
//! is written under the target directory (`ui-shots/`).
//!
//! Without chromium and chromedriver installed the test says so and passes, unless
//! `CAPABLE_REQUIRE_BROWSER=1` (CI sets it after installing them).

mod ui_support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ui_support::webdriver::{Browser, Driver};
use ui_support::Ui;

const WAIT: Duration = Duration::from_secs(15);

fn shots() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-shots")
}

fn driver() -> Option<Driver> {
    let driver = Driver::start();
    if driver.is_none() {
        assert!(
            std::env::var_os("CAPABLE_REQUIRE_BROWSER").is_none(),
            "CAPABLE_REQUIRE_BROWSER is set but chromium or chromedriver is missing"
        );
        eprintln!("skipped: chromium and chromedriver are not installed (apt-get install chromium chromium-driver)");
    }
    driver
}

/// Selects a server in the list and one of its tabs.
fn open(b: &Browser<'_>, server: &str, tab: &str) {
    b.click(&format!("[data-testid=server][data-name='{server}']"));
    b.wait_until(
        "the server is selected and ready",
        &format!("const h = document.querySelector('[data-testid=server-head] h2'); return h && h.textContent === '{server}' && document.querySelector('[data-testid=state]').textContent === 'ready'"),
        WAIT,
    );
    b.click(&format!("[data-testid=tab-{tab}]"));
    b.wait_for(&format!("[data-testid=panel-{tab}]"), WAIT);
}

#[test]
fn the_inspector_in_a_real_browser() {
    let Some(driver) = driver() else { return };
    let started = Instant::now();
    let ui = Ui::with_fixtures(&[
        ("docs", &["--profile", "read-only"]),
        (
            "live",
            &["--profile", "subscribe", "--update-interval", "300ms"],
        ),
        ("liar", &["--profile", "lying-subscribe"]),
        ("tools", &["--profile", "no-resources"]),
        ("old", &["--profile", "unsupported-version"]),
    ]);
    let b = driver.browser(1280, 900);

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
    let page = b.execute(
        "return document.documentElement.outerHTML",
        serde_json::json!([]),
    );
    assert!(
        !page.as_str().unwrap().contains(&ui.token),
        "the token is not in the page"
    );

    // Servers: each with its state; a refused one says why.
    b.wait_until(
        "every server settled",
        "const s = [...document.querySelectorAll('[data-testid=server-state]')].map(e => e.textContent); return s.length === 5 && !s.includes('starting') && s.join(',')",
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
    open(&b, "live", "overview");
    let row = b.text("[data-testid=matrix] tr[data-capability=resources]", WAIT);
    assert!(row.contains("yes"), "{row}");
    let actions = b.text("[data-testid=actions]", WAIT);
    assert!(actions.contains("resources/subscribe"), "{actions}");
    b.screenshot(&shots().join("overview.png"));

    // Read a resource: its text, revision and read time.
    open(&b, "docs", "resources");
    b.click("[data-testid=resource][data-uri='docs://manual/current'] [data-testid=read]");
    b.wait_for("[data-testid=read-result] [data-testid=revision]", WAIT);
    let text = b.text("[data-testid=read-result] [data-testid=text]", WAIT);
    assert!(text.contains("Acceptance instructions"), "{text}");
    let at = b.text("[data-testid=read-result] [data-testid=read-at]", WAIT);
    assert!(at.ends_with('Z') && at.contains('T'), "RFC 3339: {at}");
    b.screenshot(&shots().join("read.png"));

    // Watch `subscribe`: mode subscribe, then the second revision as it arrives.
    open(&b, "live", "resources");
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

    // Watch `lying-subscribe`: the violation with both messages and the server, then
    // the fallback to polling.
    open(&b, "liar", "resources");
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

    // A tool form: the required field, the call, the result.
    open(&b, "tools", "tools");
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

    // The message log has both directions of that call, and filters by method.
    b.click("[data-testid=tab-log]");
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
    open(&b, "liar", "audit");
    b.click("[data-testid=run-audit]");
    let verdict = b.text(
        "[data-testid=audit-result] [data-testid=audit-verdict]",
        Duration::from_secs(30),
    );
    assert!(verdict.contains("contract violation"), "{verdict}");
    b.wait_for("[data-testid=audit-finding]", WAIT);
    b.wait_for("[data-testid=audit-download]", WAIT);
    b.screenshot(&shots().join("audit.png"));
    drop(b);

    // A narrow window still shows everything, one column.
    let narrow = driver.browser(420, 800);
    narrow.goto(&ui.url());
    narrow.wait_for("[data-testid=server][data-name=docs]", WAIT);
    narrow.screenshot(&shots().join("narrow.png"));
    drop(narrow);

    eprintln!(
        "browser steps took {:?}; screenshots in {}",
        started.elapsed(),
        shots().display()
    );
}
