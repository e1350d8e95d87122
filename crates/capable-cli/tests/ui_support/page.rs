//! Steps the browser tests share: the driver, a server's tab opened, a call cancelled,
//! where the screenshots go.

use std::path::PathBuf;
use std::time::Duration;

use super::webdriver::{Browser, Driver};

/// How long a step may take.
pub const WAIT: Duration = Duration::from_secs(15);

/// Where the screenshots go.
pub fn shots() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-shots")
}

/// Chromium's WebDriver, or `None` (the test passes, saying so) when it is not
/// installed — unless `CAPABLE_REQUIRE_BROWSER` is set.
pub fn driver() -> Option<Driver> {
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
pub fn open(b: &Browser<'_>, server: &str, tab: &str) {
    b.click(&format!("[data-testid=server][data-name='{server}']"));
    b.wait_until(
        "the server is selected and ready",
        &format!("const h = document.querySelector('[data-testid=server-head] h2'); return h && h.textContent === '{server}' && document.querySelector('[data-testid=state]').textContent === 'ready'"),
        WAIT,
    );
    b.click(&format!("[data-testid=tab-{tab}]"));
    b.wait_for(&format!("[data-testid=panel-{tab}]"), WAIT);
}

/// Calls the open tool again, waits until `running` (a script) says the call is under
/// way, cancels it: the result says so, and the message log shows `sent` going out.
pub fn call_then_cancel(b: &Browser<'_>, what: &str, running: &str, sent: &str) {
    b.click("[data-testid=tool-form] [data-testid=call]");
    b.wait_until(what, running, WAIT);
    b.click("[data-testid=tool-form] [data-testid=cancel]");
    let cancelled = b.text("[data-testid=call-result]", WAIT);
    assert!(cancelled.contains("Cancelled"), "{cancelled}");
    b.click("[data-testid=tab-log]");
    b.wait_for(
        &format!("[data-testid=log-row][data-dir=sent][data-method='{sent}']"),
        WAIT,
    );
}

/// Watches the page, from now until it is loaded again, for violations of its
/// Content-Security-Policy (`window.__csp`).
pub fn watch_csp(b: &Browser<'_>) {
    b.execute(
        "window.__csp = []; document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI)); return true",
        serde_json::json!([]),
    );
}
