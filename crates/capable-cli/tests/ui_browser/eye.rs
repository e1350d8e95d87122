//! Results where the eye is: tabs of what a server did not declare are marked; a
//! read's result is scrolled into view; tool chips say what each tool is (title,
//! description, annotations) and a search box narrows them; a stopped watch's card
//! can be removed, and a page that goes stops the watches it started; a root can be
//! a plain path, as `capable --root PATH` takes it.

use serde_json::json;

use crate::ui_support::page::{open, shots, watch_csp, WAIT};
use crate::ui_support::webdriver::Browser;
use crate::ui_support::Ui;

/// A server without resources: its Resources tab is marked, its Tools tab is not.
pub fn undeclared_tabs_are_marked(b: &Browser<'_>) {
    open(b, "tools", "overview");
    b.wait_for("[data-testid=tab-resources][data-declared=false]", WAIT);
    assert!(b
        .all("[data-testid=tab-tools][data-declared=false]")
        .is_empty());
    let title = b.execute(
        "return document.querySelector('[data-testid=tab-resources]').title",
        json!([]),
    );
    assert_eq!(title, "tools declared no resources");
}

/// Stopped, a watch's card goes with Remove; a page that goes (here: reloaded) stops
/// the watches it started, so none polls on for no one.
pub fn watches_removed_and_stopped_with_their_page(b: &Browser<'_>, ui: &Ui) {
    open(b, "docs", "resources");
    let watch = "[data-testid=resource][data-uri='docs://manual/current'] [data-testid=watch]";
    b.click(watch);
    let card = "[data-testid=watch-card]:not(:has([data-testid=watch-end]))";
    b.wait_for(&format!("{card} [data-testid=unwatch]"), WAIT);
    let first = b.execute(
        &format!("return document.querySelector(\"{card}\").dataset.watch"),
        json!([]),
    );
    b.click(&format!("{card} [data-testid=unwatch]"));
    let stopped = format!(
        "[data-testid=watch-card][data-watch='{}']",
        first.as_str().unwrap()
    );
    b.click(&format!("{stopped} [data-testid=remove-watch]"));
    b.wait_until(
        "the stopped card is gone",
        &format!("return !document.querySelector(\"{stopped}\")"),
        WAIT,
    );

    // Another watch, left running, and the page reloaded: it ends.
    b.click(watch);
    b.wait_for(&format!("{card} [data-testid=unwatch]"), WAIT);
    let running = b.execute(
        &format!("return document.querySelector(\"{card}\").dataset.watch"),
        json!([]),
    );
    b.goto(&format!("{}/", ui.base));
    b.wait_until(
        "the page is live again",
        "return document.querySelector('[data-testid=live]').textContent === 'live'",
        WAIT,
    );
    watch_csp(b);
    open(b, "docs", "resources");
    b.wait_for(
        &format!(
            "[data-testid=watch-card][data-watch='{}'] [data-testid=watch-end]",
            running.as_str().unwrap()
        ),
        WAIT,
    );
}

/// A plain path is a root, made the `file://` URI of its absolute form.
pub fn a_root_as_a_plain_path(b: &Browser<'_>) {
    open(b, "docs", "roots");
    b.click("[data-testid=add-root]");
    b.type_into(
        "[data-testid=root]:last-child [data-testid=root-uri]",
        "/tmp",
    );
    b.click("[data-testid=save-roots]");
    b.wait_for("[data-testid=roots-saved]", WAIT);
    let uris = b.execute(
        "return [...document.querySelectorAll('[data-testid=root-uri]')].map(i => i.value)",
        json!([]),
    );
    let tmp = std::fs::canonicalize("/tmp").unwrap();
    assert!(
        uris.as_array()
            .unwrap()
            .contains(&json!(format!("file://{}", tmp.display()))),
        "{uris}"
    );
}

/// server-everything's tools as chips: title, description, the annotations' hints; a
/// search narrows them. A read's result in view, below a long list.
pub fn chips_search_and_a_read_in_view(b: &Browser<'_>) {
    open(b, "everything", "tools");
    let echo = "[data-testid=tool][data-name=echo]";
    assert_eq!(
        b.text(&format!("{echo} [data-testid=chip-title]"), WAIT),
        "Echo Tool"
    );
    let description = b.text(&format!("{echo} [data-testid=chip-description]"), WAIT);
    assert_eq!(description, "Echoes back the input string");
    let hints = b.text(&format!("{echo} [data-testid=chip-hints]"), WAIT);
    assert!(
        hints.contains("read-only")
            && hints.contains("idempotent")
            && hints.contains("closed world"),
        "{hints}"
    );
    b.type_into("[data-testid=tools-search]", "echoes back");
    let shown = b.execute(
        "return [...document.querySelectorAll('[data-testid=tool]')].filter(t => !t.hidden).map(t => t.dataset.name)",
        json!([]),
    );
    assert_eq!(shown, json!(["echo"]));
    b.screenshot(&shots().join("tool-chips.png"));
    b.type_into("[data-testid=tools-search]", "");

    b.resize(1280, 520);
    open(b, "everything", "resources");
    b.click("[data-testid=resource] [data-testid=read]");
    b.wait_for("[data-testid=read-result]", WAIT);
    let seen = b.wait_until(
        "the read's result is in view",
        "const r = document.querySelector('[data-testid=read-result]').getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0",
        WAIT,
    );
    assert_eq!(seen, true);
    b.resize(1280, 1000);
}
