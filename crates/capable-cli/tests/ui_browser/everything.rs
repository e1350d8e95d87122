//! A real server in the page: server-everything (from `.ci/install-peers`) — a
//! resource template filled in, forms from real schemas, structured output beside
//! its schema check, a call run as a task and one cancelled with `tasks/cancel`, the
//! audit of a server that keeps its contract.

use std::time::Duration;

use crate::ui_support::page::{call_then_cancel, open, shots, WAIT};
use crate::ui_support::webdriver::Browser;

/// server-everything's script, from the peers.
pub const JS: &str =
    ".peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js";

/// Templates, forms, structured output, tasks, the audit.
pub fn panels(b: &Browser<'_>) {
    open(b, "everything", "overview");
    let info = b.text("[data-testid=server-name]", WAIT);
    assert!(info.contains("everything"), "{info}");

    // A resource template: its variable filled in, the URI expanded, the resource read.
    b.click("[data-testid=tab-resources]");
    let template =
        "[data-testid=template][data-template='demo://resource/dynamic/text/{resourceId}']";
    b.type_into(&format!("{template} input[name=resourceId]"), "7");
    b.click(&format!("{template} [data-testid=read]"));
    let read = b.text("[data-testid=read-result]", WAIT);
    assert!(read.contains("demo://resource/dynamic/text/7"), "{read}");
    b.wait_for("[data-testid=read-result] [data-testid=revision]", WAIT);

    // A form from a real schema: two numbers, sent as numbers.
    b.click("[data-testid=tab-tools]");
    b.click("[data-testid=tool][data-name=get-sum]");
    b.type_into("[data-testid=tool-form] input[name=a]", "2");
    b.type_into("[data-testid=tool-form] input[name=b]", "3.5");
    b.click("[data-testid=tool-form] [data-testid=call]");
    let sum = b.text("[data-testid=call-result] [data-testid=content-text]", WAIT);
    assert!(sum.contains("5.5"), "{sum}");

    // An enum as a select; the structured output beside its schema check.
    b.click("[data-testid=tool][data-name=get-structured-content]");
    b.click("[data-testid=tool-form] select[name=location] option[value='1']");
    b.click("[data-testid=tool-form] [data-testid=call]");
    b.wait_for("[data-testid=call-result] [data-testid=structured]", WAIT);
    let check = b.text(
        "[data-testid=call-result] [data-testid=output-check] h4",
        WAIT,
    );
    assert_eq!(check, "structuredContent matches the outputSchema");
    b.screenshot(&shots().join("everything-structured.png"));

    // A call run as a task: its statuses as they change, then its result; another
    // one cancelled with `tasks/cancel`.
    b.click("[data-testid=tool][data-name=simulate-research-query]");
    b.type_into("[data-testid=tool-form] input[name=topic]", "rust");
    b.click("[data-testid=tool-form] [data-testid=as-task]");
    b.click("[data-testid=tool-form] [data-testid=call]");
    b.wait_until(
        "a task status",
        "const s = document.querySelector('[data-testid=task-status]'); return s && / working/.test(s.textContent)",
        WAIT,
    );
    let report = b.text(
        "[data-testid=call-result] [data-testid=content-text]",
        Duration::from_secs(60),
    );
    assert!(report.contains("Research Report: rust"), "{report}");
    let last = b.text("[data-testid=task-status]", WAIT);
    assert!(last.contains(" completed"), "{last}");
    call_then_cancel(
        b,
        "the second task working",
        "const s = document.querySelector('[data-testid=task-status]'); return s && / working/.test(s.textContent)",
        "tasks/cancel",
    );

    // The audit of a server that keeps its contract.
    b.click("[data-testid=tab-audit]");
    b.click("[data-testid=run-audit]");
    let verdict = b.text(
        "[data-testid=audit-result] [data-testid=audit-verdict]",
        Duration::from_secs(60),
    );
    assert_eq!(verdict, "No contract violation.");
    b.screenshot(&shots().join("everything-audit.png"));
}
