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

#[path = "../bridge_support/mod.rs"]
mod bridge_support;
#[path = "../common/mod.rs"]
mod common;
#[path = "../listen_support/mod.rs"]
mod listen_support;
#[path = "../ui_support/mod.rs"]
mod ui_support;

mod beyond;
mod edges;
mod everything;
mod eye;
mod forms;
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

/// Runs one step, saying how long it took (the run's time is CI's).
fn step(name: &str, run: impl FnOnce()) {
    let started = Instant::now();
    run();
    eprintln!("{name}: {:?}", started.elapsed());
}

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
    // The Python SDK's server: its tools' schemas are Pydantic's.
    let python = common::peers_wanted(&[common::servers::PYTHON]);
    if python {
        servers.insert(
            "python".into(),
            json!({"command": common::servers::path(common::servers::PYTHON),
                   "args": [common::servers::path("tests/peers/python_server.py")]}),
        );
    }
    // A server whose `echo` was pinned as it first described it, and now describes
    // otherwise: the pins are written by `capable tools --all` over a config of it alone.
    let pins = ui_support::tempdir::Dir::new("ui-pins");
    let first = pins.path().join("first.json");
    let before = json!({"command": common::bin(), "args": ["fixture", "--profile", "no-resources"],
        "env": {"CAPABLE_FIXTURE_ECHO_DESCRIPTION": beyond::PINNED}});
    std::fs::write(
        &first,
        json!({"mcpServers": {"pinned": before}}).to_string(),
    )
    .unwrap();
    let first = first.to_string_lossy().into_owned();
    let wait = std::time::Duration::from_secs(60);
    common::capable(&["tools", "--all", "--config", &first], wait).expect_code(0);
    let mut pinned = fixture_entry(&["--profile", "no-resources"]);
    let lock = pins.path().join("first.pins.json");
    let lock = lock.to_string_lossy().into_owned();
    pinned["env"] = json!({"CAPABLE_FIXTURE_ECHO_DESCRIPTION": beyond::CHANGED});
    servers.insert("pinned".into(), pinned);

    let count = servers.len();
    let ui = Ui::with_config_and(
        &json!({ "mcpServers": Value::Object(servers) }),
        &["--pins", &lock],
    );
    let browser = driver.browser(1280, 1000);
    let b = &browser;
    eprintln!("started: {:?}", started.elapsed());

    step("security::page_and_cookie_replay", || {
        security::page_and_cookie_replay(b, &ui)
    });
    // (Before any watch: it leaves the page and comes back.)
    step(
        "security::a_page_of_another_port_cannot_drive_the_bridge",
        || security::a_page_of_another_port_cannot_drive_the_bridge(b, &ui),
    );
    step("panels::servers_and_overview", || {
        panels::servers_and_overview(b, count)
    });
    step("panels::resources_and_watches", || {
        panels::resources_and_watches(b)
    });
    step("panels::tools", || panels::tools(b));
    step("panels::apps", || panels::apps(b));
    step("security::view_calls_only_what_apps_may", || {
        security::view_calls_only_what_apps_may(b)
    });
    step("panels::skills_log_audit_stderr", || {
        panels::skills_log_audit_stderr(b)
    });
    step("edges::app_view_in_dark_mode", || {
        edges::app_view_in_dark_mode(b)
    });
    step("edges::a_list_change_keeps_the_open_form", || {
        edges::a_list_change_keeps_the_open_form(b)
    });
    step("edges::elicitation_titles", || edges::elicitation_titles(b));
    step("edges::a_polling_watch_shows_it_runs", || {
        edges::a_polling_watch_shows_it_runs(b)
    });
    step("edges::the_overview_fits_600_px", || {
        edges::the_overview_fits_600_px(b)
    });
    step("edges::a_legacy_fallback_is_no_warning", || {
        edges::a_legacy_fallback_is_no_warning(b)
    });
    step("inspector::history_and_replay", || {
        inspector::history_and_replay(b)
    });
    step("inspector::a_request_past_its_timeout_is_cancelled", || {
        inspector::a_request_past_its_timeout_is_cancelled(b)
    });
    step("inspector::export_as_an_entry_and_a_command", || {
        inspector::export_as_an_entry_and_a_command(b)
    });
    step(
        "inspector::no_completion_or_log_level_where_none_is_declared",
        || inspector::no_completion_or_log_level_where_none_is_declared(b),
    );
    step("beyond::a_diff_between_two_revisions", || {
        beyond::a_diff_between_two_revisions(b)
    });
    step("beyond::a_report_of_the_session", || {
        beyond::a_report_of_the_session(b, &ui)
    });
    step(
        "beyond::a_changed_definition_held_back_until_accepted",
        || beyond::a_changed_definition_held_back_until_accepted(b, &ui),
    );
    if peers {
        step("everything::panels", || everything::panels(b));
        step("inspector::sampling_answered_in_the_page", || {
            inspector::sampling_answered_in_the_page(b)
        });
        step("inspector::roots_edited_in_the_page", || {
            inspector::roots_edited_in_the_page(b)
        });
        step("inspector::completions_as_you_type", || {
            inspector::completions_as_you_type(b)
        });
        step("inspector::the_log_level", || inspector::the_log_level(b));
        step("inspector::an_oauth_login_from_the_page", || {
            inspector::an_oauth_login_from_the_page(b, &ui)
        });
    }
    step("eye::undeclared_tabs_are_marked", || {
        eye::undeclared_tabs_are_marked(b)
    });
    step("eye::a_root_as_a_plain_path", || {
        eye::a_root_as_a_plain_path(b)
    });
    step("eye::watches_removed_and_stopped_with_their_page", || {
        eye::watches_removed_and_stopped_with_their_page(b, &ui)
    });
    if peers {
        step("eye::chips_search_and_a_read_in_view", || {
            eye::chips_search_and_a_read_in_view(b)
        });
    }
    if python {
        step("forms::nested_forms_from_pydantic", || {
            forms::nested_forms_from_pydantic(b)
        });
    }
    step("panels::nothing_from_elsewhere", || {
        panels::nothing_from_elsewhere(b)
    });
    step("panels::narrow_dark", || panels::narrow_dark(b));

    eprintln!(
        "browser steps took {:?}; screenshots in {}",
        started.elapsed(),
        shots().display()
    );
}
