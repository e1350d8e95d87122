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

mod beyond;
mod edges;
mod everything;
mod inspector;
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
    ("hang", &["--profile", "hang"]),
];

/// The OAuth peer: oidc-provider guarding a TypeScript SDK server
/// (`tests/peers/oidc_guarded.mjs`).
const OIDC: &[&str] = &[
    ".peers/oidc/node_modules/oidc-provider/package.json",
    ".peers/npm/node_modules/@modelcontextprotocol/sdk/package.json",
    common::oauth::NODE22,
];

#[test]
fn the_inspector_in_a_real_browser() {
    let Some(driver) = driver() else { return };
    let started = Instant::now();
    let mut servers = serde_json::Map::new();
    for (name, args) in FIXTURES {
        servers.insert((*name).to_owned(), fixture_entry(args));
    }
    let peers = common::peers_wanted(&[everything::JS]) && common::peers_wanted(OIDC);
    // Started before the inspector, so that it finds the authorization server up.
    let guarded = peers.then(inspector::guarded);
    if let Some(g) = &guarded {
        // From the workspace, so that the page (and its screenshots) names the script
        // as the peers install it.
        let cwd = common::workspace();
        servers.insert(
            "everything".into(),
            json!({"command": "node", "args": [everything::JS, "stdio"], "cwd": cwd}),
        );
        servers.insert("guarded".into(), json!({"url": g.mcp}));
    }
    let count = servers.len();
    let ui = Ui::with_config_and(&json!({ "mcpServers": Value::Object(servers) }), &[]);
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
    inspector::history_and_replay(b);
    inspector::a_request_past_its_timeout_is_cancelled(b);
    inspector::export_as_an_entry_and_a_command(b);
    inspector::no_completion_or_log_level_where_none_is_declared(b);
    beyond::a_diff_between_two_revisions(b);
    beyond::a_report_of_the_session(b, &ui);
    if peers {
        everything::panels(b);
        inspector::sampling_answered_in_the_page(b);
        inspector::roots_edited_in_the_page(b);
        inspector::completions_as_you_type(b);
        inspector::the_log_level(b);
        inspector::an_oauth_login_from_the_page(b, &ui);
    }
    panels::nothing_from_elsewhere(b);
    panels::narrow_dark(b);

    eprintln!(
        "browser steps took {:?}; screenshots in {}",
        started.elapsed(),
        shots().display()
    );
}
