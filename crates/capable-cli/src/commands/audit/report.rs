//! The audit's verdict for people: a table on the terminal and a Markdown report a
//! server author can act on. Both are made from the library's [`AuditReport`]; its
//! JSON form is the `--json` output.

use capable::audit::{AuditNotice, AuditReport, FindingKind, Outcome};

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

pub(crate) fn markdown(report: &AuditReport) -> String {
    let server = report.server.to_string();
    let findings = &report.findings;
    let mut out = format!(
        "# MCP contract audit: {server}\n\n\
         - Protocol version: `{}` ({} era)\n\
         - Declared capabilities: `{}`\n\
         - Verdict: **{}**\n\n\
         Every declared capability was checked with safe, read-only probes (tools are never\n\
         called) and every result was validated against the official JSON schema of the\n\
         negotiated protocol version.\n\n## Checks\n\n\
         | capability | check | method | outcome | detail |\n|---|---|---|---|---|\n",
        report.protocol_version,
        report.era,
        declared(report),
        if report.is_clean() {
            "clean".to_owned()
        } else {
            format!("{} contract violation(s)", findings.len())
        }
    );
    let cell = |t: &str| t.replace('|', "\\|").replace('\n', " ");
    for c in &report.checks {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            cell(&c.capability),
            cell(&c.check),
            c.method
                .as_deref()
                .map(|m| format!("`{m}`"))
                .unwrap_or_default(),
            c.outcome,
            cell(&c.detail)
        ));
    }
    if !findings.is_empty() {
        out.push_str("\n## Violations\n");
        for (i, f) in findings.iter().enumerate() {
            let fix = match f.kind {
                FindingKind::MethodNotFound => format!(
                    "Either implement `{}` or stop declaring `{}` in your capabilities: clients act on the declaration.",
                    f.method, f.capability
                ),
                FindingKind::MalformedResult => "Make the result match the schema of the negotiated protocol version.".to_owned(),
                FindingKind::InvalidToolSchema => "Fix the tool schemas so they are valid JSON Schema documents.".to_owned(),
                FindingKind::NoAcknowledgement => "Send `notifications/subscriptions/acknowledged` as the first message of every listen stream.".to_owned(),
                _ => "Answer read-only probes of declared capabilities with a result.".to_owned(),
            };
            out.push_str(&format!(
                "\n### {}. `{}` — `{}` ({})\n\n{}\n\n**What to change:** {fix}\n\nRequest sent (exact):\n\n```json\n{}\n```\n\nResponse received (exact):\n\n```json\n{}\n```\n\nServer `{server}`, protocol `{}`, at {}.\n",
                i + 1,
                f.capability,
                f.method,
                f.kind,
                f.detail,
                serde_json::to_string_pretty(&f.request).unwrap_or_default(),
                serde_json::to_string_pretty(&f.response).unwrap_or_default(),
                f.protocol_version,
                capable::core::time::rfc3339(f.at),
            ));
        }
    }
    if !report.notices.is_empty() {
        out.push_str("\n## Notices (lower severity)\n\n");
        for n in &report.notices {
            if let AuditNotice::UndeclaredNotification {
                notification,
                needs,
            } = n
            {
                out.push_str(&format!(
                    "- The server sent `{notification}` without declaring `{needs}`.\n"
                ));
            }
        }
    }
    out
}
