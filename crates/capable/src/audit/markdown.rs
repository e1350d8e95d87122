//! The audit's report in Markdown, for the server's author.

use super::{AuditNotice, AuditReport, FindingKind};

impl AuditReport {
    /// The report in Markdown, for the server's author: the verdict, every check in a
    /// table, and each violation with what to change and the exact request and
    /// response as evidence (`capable audit --report FILE` writes it).
    pub fn markdown(&self) -> String {
        let report = self;
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
            serde_json::to_string(&report.capabilities).unwrap_or_default(),
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
                    capable_core::internal::time::rfc3339(f.at),
                ));
            }
        }
        if !report.notices.is_empty() {
            out.push_str("\n## Notices (lower severity)\n\n");
            for n in &report.notices {
                let AuditNotice::UndeclaredNotification {
                    notification,
                    needs,
                } = n;
                out.push_str(&format!(
                    "- The server sent `{notification}` without declaring `{needs}`.\n"
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use capable_core::{Era, ProtocolVersion, ServerCapabilities};
    use serde_json::json;

    use super::*;
    use crate::audit::{Check, Finding, Outcome, ServerId};

    #[test]
    fn a_violation_is_told_with_what_to_change_and_both_messages() {
        let server = ServerId {
            name: "liar".into(),
            version: "1.0".into(),
        };
        let request = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe"});
        let response =
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "no"}});
        let report = AuditReport {
            server: server.clone(),
            era: Era::Legacy,
            protocol_version: ProtocolVersion::V2025_11_25,
            capabilities: ServerCapabilities::from_value(json!({"resources": {"subscribe": true}})),
            checks: vec![Check {
                capability: "resources.subscribe".into(),
                check: "subscribe | unsubscribe".into(),
                method: Some("resources/subscribe".into()),
                outcome: Outcome::Violation,
                detail: "answered -32601".into(),
            }],
            findings: vec![Finding {
                capability: "resources.subscribe".into(),
                method: "resources/subscribe".into(),
                kind: FindingKind::MethodNotFound,
                detail: "declared, then refused".into(),
                request,
                response,
                server,
                protocol_version: ProtocolVersion::V2025_11_25,
                at: SystemTime::UNIX_EPOCH,
            }],
            notices: Vec::new(),
        };
        let md = report.markdown();
        assert!(md.starts_with("# MCP contract audit: liar 1.0\n"), "{md}");
        assert!(
            md.contains("- Verdict: **1 contract violation(s)**"),
            "{md}"
        );
        assert!(
            md.contains("| `resources.subscribe` | subscribe \\| unsubscribe | `resources/subscribe` | violation |"),
            "a cell's bar is escaped: {md}"
        );
        assert!(
            md.contains(
                "Either implement `resources/subscribe` or stop declaring `resources.subscribe`"
            ),
            "{md}"
        );
        assert!(
            md.contains("\"code\": -32601"),
            "the response, exactly: {md}"
        );
        assert!(md.contains("at 1970-01-01T00:00:00.000Z."), "{md}");
        let clean = AuditReport {
            findings: Vec::new(),
            checks: Vec::new(),
            ..report
        };
        assert!(clean.markdown().contains("- Verdict: **clean**"));
    }
}
