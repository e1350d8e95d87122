//! Forms from the schemas SDKs write: the Python SDK's `book` tool (Pydantic: a
//! `list[Traveller]` through `$ref` into `$defs`, `Leg | list[Leg]` as `anyOf`,
//! nullable fields, a `dict`, `date`/`date-time`/`email`/`uri` formats) gets fields,
//! not a JSON box — items added and removed, a choice of which kind, formats checked
//! before anything is sent — and the raw JSON is one click away.

use serde_json::json;

use crate::ui_support::page::{open, shots, WAIT};
use crate::ui_support::webdriver::Browser;

const FORM: &str = "[data-testid=tool-form]";

/// Types `text` into the form's field named `name`.
fn field(b: &Browser<'_>, name: &str, text: &str) {
    b.type_into(&format!("{FORM} [name='{name}']"), text);
}

/// What the form says is wrong after a call.
fn problem(b: &Browser<'_>) -> String {
    b.text(&format!("{FORM} [data-testid=form-errors]"), WAIT)
}

/// The Python SDK's `book`, a Pydantic schema, filled in as a form.
pub fn nested_forms_from_pydantic(b: &Browser<'_>) {
    open(b, "python", "tools");
    b.click("[data-testid=tool][data-name=book]");
    b.wait_for(&format!("{FORM} input[name=contact]"), WAIT);
    assert!(
        b.all(&format!("{FORM} [data-testid=json-args]")).is_empty(),
        "a form, not a JSON box"
    );
    // list[Traveller]: each traveller's fields, added and removed.
    b.click(&format!(
        "{FORM} [data-testid=add-item][data-for=travellers]"
    ));
    b.click(&format!(
        "{FORM} [data-testid=add-item][data-for=travellers]"
    ));
    assert_eq!(b.all(&format!("{FORM} [data-item=travellers]")).len(), 2);
    b.click(&format!(
        "{FORM} [data-item=travellers]:nth-child(2) [data-testid=remove-item]"
    ));
    assert_eq!(b.all(&format!("{FORM} [data-item=travellers]")).len(), 1);
    field(b, "travellers/0/name", "Ada");
    field(b, "travellers/0/born", "1815-13-10");
    // Literal["aisle", "window"] | None: a select, beside its null box.
    b.click(&format!(
        "{FORM} select[name='travellers/0/seat'] option[value='1']"
    ));
    field(b, "contact", "not-an-email");
    // Leg | list[Leg]: a choice of which; the first is one Leg's fields.
    let kinds = b.text(&format!("{FORM} select[data-choice=trip]"), WAIT);
    assert!(
        kinds.contains("Leg") && kinds.contains("list of Leg"),
        "{kinds}"
    );
    field(b, "trip/to", "Oslo");
    field(b, "trip/departs", "2027-01-02T10:00:00Z");
    // dict[str, str] | None: key and value rows.
    b.click(&format!("{FORM} [data-testid=add-item][data-for=notes]"));
    field(b, "notes/0/key", "meal");
    field(b, "notes/0/value", "vegetarian");
    field(b, "site", "not a uri");

    // Each format is checked in the page, in the order of the fields; nothing is sent.
    b.click(&format!("{FORM} [data-testid=call]"));
    let said = problem(b);
    assert!(said.contains("travellers/0/born: not a date"), "{said}");
    field(b, "travellers/0/born", "1815-12-10");
    b.click(&format!("{FORM} [data-testid=call]"));
    let said = problem(b);
    assert!(said.contains("contact: not an email address"), "{said}");
    field(b, "contact", "ada@example.org");
    b.click(&format!("{FORM} [data-testid=call]"));
    let said = problem(b);
    assert!(said.contains("site: not a URI"), "{said}");
    field(b, "site", "https://example.org/trip");
    b.screenshot(&shots().join("form-nested.png"));

    b.click(&format!("{FORM} [data-testid=call]"));
    let result = b.text("[data-testid=call-result] [data-testid=content-text]", WAIT);
    let sent: serde_json::Value =
        serde_json::from_str(result.strip_prefix("booked ").expect("booked")).unwrap();
    assert_eq!(
        sent,
        json!({
            "contact": "ada@example.org",
            "notes": {"meal": "vegetarian"},
            "site": "https://example.org/trip",
            "travellers": [{"name": "Ada", "born": "1815-12-10", "seat": "window"}],
            "trip": {"to": "Oslo", "departs": "2027-01-02T10:00:00Z"}
        })
    );

    // The raw JSON, one click away, holds what the form holds.
    b.click(&format!("{FORM} [data-testid=toggle-json]"));
    let raw = b.execute(
        "return JSON.parse(document.querySelector('[data-testid=tool-form] [data-testid=json-args]').value)",
        json!([]),
    );
    assert_eq!(raw["travellers"][0]["seat"], "window", "{raw}");
    assert_eq!(raw["trip"]["to"], "Oslo", "{raw}");
    b.click(&format!("{FORM} [data-testid=toggle-json]"));
}
