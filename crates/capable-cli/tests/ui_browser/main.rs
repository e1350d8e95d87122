//! `capable ui` in a real browser: Debian's headless Chromium driven over WebDriver
//! (chromedriver), against one inspector over every fixture server and, unless
//! `CAPABLE_SKIP_PEERS=1`, real peers (server-everything). One inspector, one browser
//! session for every step — each a function of the module of its area — so the run
//! pays for one start of each. Each step waits on a condition in the page with a
//! deadline, never a fixed sleep; a screenshot of each panel is written under the
//! target directory (`ui-shots/`).
//!
//! Without chromium and chromedriver installed the test says so and passes, unless
//! `CAPABLE_REQUIRE_BROWSER=1` (CI sets it after installing them).

#[path = "../common/mod.rs"]
mod common;
#[path = "../ui_support/mod.rs"]
mod ui_support;

mod edges;
mod everything;
mod panels;
mod security;

use std::time::Instant;

use serde_json::{json, Value};
use ui_support::page::{driver, shots};
use ui_support::{fixture_entry, Ui};

/// The fixture servers: (name, `capable fixture` arguments).
const FIXTURES: &[(&str, &[&str])] = &[
    ("docs", &["--profile", "read-only"]),
    (
        "live",
        &["--profile", "subscribe", "--update-interval", "300ms"],
    ),
    ("liar", &["--profile", "lying-subscribe"]),
    ("tools", &["--profile", "no-resources"]),
    ("old", &["--profile", "unsupported-version"]),
    ("ask", &["--profile", "elicit"]),
    ("slow", &["--profile", "slow-progress"]),
    (
        "modern",
        &["--profile", "modern", "--update-interval", "300ms"],
    ),
    ("skills", &["--profile", "skills"]),
    ("weather", &["--profile", "app"]),
    ("grow", &["--profile", "tools-changed"]),
];

#[test]
fn the_inspector_in_a_real_browser() {
    let Some(driver) = driver() else { return };
    let started = Instant::now();
    let mut servers = serde_json::Map::new();
    for (name, args) in FIXTURES {
        servers.insert((*name).to_owned(), fixture_entry(args));
    }
    let peers = common::peers_wanted(&[everything::JS]);
    if peers {
        let js = common::workspace().join(everything::JS);
        servers.insert(
            "everything".into(),
            json!({"command": "node", "args": [js, "stdio"]}),
        );
    }
    let count = servers.len();
    let ui = Ui::with_config(&json!({ "mcpServers": Value::Object(servers) }));
    let browser = driver.browser(1280, 1000);
    let b = &browser;

    security::page_and_cookie_replay(b, &ui);
    panels::servers_and_overview(b, count);
    panels::resources_and_watches(b);
    panels::tools(b);
    panels::apps(b);
    security::view_calls_only_what_apps_may(b);
    panels::skills_log_audit_stderr(b);
    edges::app_view_in_dark_mode(b);
    edges::a_list_change_keeps_the_open_form(b);
    edges::elicitation_titles(b);
    edges::a_polling_watch_shows_it_runs(b);
    edges::the_overview_fits_600_px(b);
    edges::a_legacy_fallback_is_no_warning(b);
    if peers {
        everything::panels(b);
    }
    panels::nothing_from_elsewhere(b);
    panels::narrow_dark(b);

    eprintln!(
        "browser steps took {:?}; screenshots in {}",
        started.elapsed(),
        shots().display()
    );
}
