//! The audit's verdict for people on the terminal, a table made from the library's
//! [`AuditReport`] (its JSON form is the `--json` output, its
//! [Markdown](AuditReport::markdown) the `--report`).

use capable::audit::{AuditNotice, AuditReport, Outcome};

use crate::output;

/// The declared capabilities as one line of JSON.
fn declared(report: &AuditReport) -> String {
    serde_json::to_string(&report.capabilities).unwrap_or_default()
}

pub(super) fn human(report: &AuditReport) -> String {
    let mut out = format!(
        "audit of {} — protocol {} ({} era)\ndeclared {}\n\n",
        report.server,
        report.protocol_version,
        report.era,
        declared(report)
    );
    let mut table = output::Table::new(&["CAPABILITY", "CHECK", "OUTCOME", "DETAIL"]);
    for c in &report.checks {
        table.row(vec![
            c.capability.clone(),
            c.check.clone(),
            c.outcome.to_string(),
            output::one_line(&c.detail, 110),
        ]);
    }
    out.push_str(&table.render());
    out.push_str(&format!(
        "\n{} checks: {} ok, {} violation, {} skipped, {} unverifiable\n",
        report.checks.len(),
        report.count(Outcome::Ok),
        report.count(Outcome::Violation),
        report.count(Outcome::Skipped),
        report.count(Outcome::Unverifiable)
    ));
    if !report.findings.is_empty() {
        out.push_str("\nCONTRACT VIOLATIONS\n");
        for (i, f) in report.findings.iter().enumerate() {
            out.push_str(&format!(
                "{}. `{}` {} ({}): {}\n   request  {}\n   response {}\n",
                i + 1,
                f.capability,
                f.method,
                f.kind,
                f.detail,
                output::one_line(&f.request.to_string(), 400),
                output::one_line(&f.response.to_string(), 400),
            ));
        }
    }
    if !report.notices.is_empty() {
        out.push_str("\nNOTICES (lower severity)\n");
        for n in &report.notices {
            if let AuditNotice::UndeclaredNotification {
                notification,
                needs,
            } = n
            {
                out.push_str(&format!(
                    "- sent {notification} without declaring `{needs}`\n"
                ));
            }
        }
    }
    out
}
