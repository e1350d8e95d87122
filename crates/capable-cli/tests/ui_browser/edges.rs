//! The rough edges a new user met, each as they met it: an app view in dark mode, a
//! tool list that changes under an open form, an elicitation's titled choices, a
//! watch that fell back to polling, a 600 px window, the app's message log, a legacy
//! server's normal fallback, and a `resource_link` in a result.

use serde_json::json;

use crate::ui_support::page::{open, shots, WAIT};
use crate::ui_support::webdriver::Browser;

/// Whether the page is no wider than its window (nothing pushed it sideways).
fn fits(b: &Browser<'_>) -> bool {
    b.execute(
        "const d = document.documentElement; return d.scrollWidth <= d.clientWidth",
        json!([]),
    ) == json!(true)
}

/// In dark mode an app view told the theme is dark is drawn dark, and told again when
/// the theme changes; its result's `resource_link` reads the resource it names; its
/// message log shows each payload, and a long line it logs does not widen the page.
pub fn app_view_in_dark_mode(b: &Browser<'_>) {
    b.prefer_dark(true);
    open(b, "weather", "tools");
    b.click("[data-testid=tool][data-name=weather]");
    b.type_into("[data-testid=tool-form] input[name=city]", "Oslo");
    b.click("[data-testid=tool-form] [data-testid=call]");
    b.enter_frame("[data-testid=app-frame]");
    b.wait_until(
        "the view took the dark theme",
        "return document.body.dataset.theme === 'dark' && document.getElementById('title').textContent === 'Weather for Oslo'",
        WAIT,
    );
    b.leave_frame();
    let dark = b.brightness("[data-testid=app-frame]");
    assert!(dark < 80.0, "the frame is dark in dark mode: {dark}");
    b.scroll_to("[data-testid=call-result]");
    b.screenshot(&shots().join("app-dark.png"));
    b.prefer_dark(false);
    b.enter_frame("[data-testid=app-frame]");
    b.wait_until(
        "the view told of the light theme",
        "return document.body.dataset.theme === 'light'",
        WAIT,
    );
    b.leave_frame();
    let light = b.brightness("[data-testid=app-frame]");
    assert!(light > 180.0, "the frame is light again: {light}");

    // A resource_link is the resource it names, read on its server when asked.
    let link = "[data-testid=resource-link][data-uri='ui://weather/view']";
    let shown = b.text(link, WAIT);
    assert!(shown.contains("The weather view"), "{shown}");
    b.click(&format!("{link} [data-testid=read-link]"));
    let read = b.text(&format!("{link} [data-testid=read-result]"), WAIT);
    assert!(read.contains("ui://weather/view"), "{read}");
    b.wait_for(&format!("{link} [data-testid=revision]"), WAIT);

    // The bridge's messages with their payloads; a long line wraps.
    b.enter_frame("[data-testid=app-frame]");
    b.click("#longlog");
    b.leave_frame();
    b.click("[data-testid=app-messages] summary");
    let entry = "[data-testid=app-log-entry][data-method='notifications/message']";
    b.click(&format!("{entry} summary"));
    let payload = b.text(&format!("{entry} pre"), WAIT);
    assert!(payload.contains("a long line xxxx"), "{payload}");
    let init = b.execute(
        "return document.querySelector(\"[data-testid=app-log-entry][data-method='ui/initialize'] pre\").textContent",
        json!([]),
    );
    assert!(init.to_string().contains("appInfo"), "{init}");
    assert!(fits(b), "a long logged line does not widen the page");
    b.scroll_to("[data-testid=app]");
    b.screenshot(&shots().join("app-messages.png"));
}

/// A list change (the server added a tool) redraws the list, not the open form with
/// what was typed and its last result.
pub fn a_list_change_keeps_the_open_form(b: &Browser<'_>) {
    open(b, "grow", "tools");
    b.click("[data-testid=tool][data-name=grow]");
    b.click("[data-testid=tool-form] [data-testid=toggle-json]");
    b.type_into(
        "[data-testid=tool-form] [data-testid=json-args]",
        r#"{"note": "kept"}"#,
    );
    b.click("[data-testid=tool-form] [data-testid=call]");
    let result = b.text("[data-testid=call-result] [data-testid=content-text]", WAIT);
    assert_eq!(result, "added grown-1");
    b.wait_for("[data-testid=tool][data-name=grown-1]", WAIT);
    let kept = b.execute(
        "const r = document.querySelector('[data-testid=call-result] [data-testid=content-text]'); \
         const a = document.querySelector('[data-testid=tool-form] [data-testid=json-args]'); \
         return [r && r.textContent, a && a.value]",
        json!([]),
    );
    assert_eq!(kept, json!(["added grown-1", r#"{"note": "kept"}"#]));
}

/// An elicitation's titled multiple select is a checkbox per title, and a legacy enum
/// is labelled by its `enumNames`; the values chosen go back.
pub fn elicitation_titles(b: &Browser<'_>) {
    open(b, "ask", "tools");
    b.click("[data-testid=tool][data-name=confirm]");
    b.click("[data-testid=tool-form] [data-testid=call]");
    let card = "[data-testid=elicitation]";
    let labels = b.text(&format!("{card} [role=group]"), WAIT);
    assert!(
        labels.contains("Unit tests") && labels.contains("Browser tests"),
        "{labels}"
    );
    let beta = b.text(
        &format!("{card} select[name=channel] option[value='1']"),
        WAIT,
    );
    assert_eq!(beta, "Beta release");
    b.click(&format!(
        "{card} input[type=checkbox][name=checks][value='1']"
    ));
    b.click(&format!("{card} select[name=channel] option[value='1']"));
    // An email address that is none is caught in the page, and nothing is sent.
    b.type_into(&format!("{card} input[name=contact]"), "not-an-email");
    b.click(&format!("{card} [data-testid=elicit-accept]"));
    let said = b.text(&format!("{card} [data-testid=form-errors]"), WAIT);
    assert_eq!(said, "contact: not an email address");
    b.type_into(&format!("{card} input[name=contact]"), "me@example.org");
    b.screenshot(&shots().join("elicitation.png"));
    b.click(&format!("{card} [data-testid=elicit-accept]"));
    let answered = b.text("[data-testid=call-result] [data-testid=content-text]", WAIT);
    assert!(
        answered.contains(r#""checks":["browser"]"#)
            && answered.contains(r#""channel":"beta""#)
            && answered.contains(r#""contact":"me@example.org""#),
        "{answered}"
    );
}

/// A watch that fell back to polling shows that it still runs: its reads count up.
pub fn a_polling_watch_shows_it_runs(b: &Browser<'_>) {
    open(b, "liar", "resources");
    let reads = |b: &Browser<'_>| {
        b.wait_until(
            "the polling watch's reads",
            "const a = document.querySelector('[data-testid=watch-card] [data-testid=watch-alive]'); return a && !a.hidden && Number(a.dataset.reads)",
            WAIT,
        )
        .as_u64()
        .unwrap()
    };
    let first = reads(b);
    b.wait_until(
        "another read",
        &format!("return Number(document.querySelector('[data-testid=watch-card] [data-testid=watch-alive]').dataset.reads) > {first}"),
        WAIT,
    );
    let alive = b.text("[data-testid=watch-card] [data-testid=watch-alive]", WAIT);
    assert!(alive.starts_with("polling every 300 ms"), "{alive}");
    b.screenshot(&shots().join("watch-polling.png"));
}

/// In a window of 600 px, and at each width where the overview's two columns come or
/// go, the overview (its capability table included) fits.
pub fn the_overview_fits_600_px(b: &Browser<'_>) {
    open(b, "live", "overview");
    for width in [600, 640, 700, 760, 860, 920] {
        b.resize(width, 900);
        b.wait_for("[data-testid=matrix]", WAIT);
        let inside = b.execute(
            "const d = document.documentElement, t = document.querySelector('[data-testid=matrix]'); \
             return d.scrollWidth <= d.clientWidth && t.getBoundingClientRect().right <= t.closest('.card').getBoundingClientRect().right",
            json!([]),
        );
        assert_eq!(inside, json!(true), "the overview fits {width} px");
        if width == 600 {
            b.screenshot(&shots().join("overview-600.png"));
        }
    }
    b.resize(1280, 1000);
}

/// A legacy server's normal fallback is said beside its era, not as a warning.
pub fn a_legacy_fallback_is_no_warning(b: &Browser<'_>) {
    open(b, "docs", "overview");
    let how = b.text("[data-testid=connection]", WAIT);
    assert!(how.contains("falling back to initialize"), "{how}");
    assert!(
        b.all("[data-testid=notices]").is_empty(),
        "no warning card for a normal fallback"
    );
}
