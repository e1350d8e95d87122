//! The audit's verdict for people: a table on the terminal and a Markdown report a
//! server author can act on. Both are made from the `--json` verdict.

use serde_json::Value;

use crate::output;

fn rows(v: &Value, key: &str) -> Vec<Value> {
    v[key].as_array().cloned().unwrap_or_default()
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

pub(super) fn human(v: &Value) -> String {
    let mut out = format!(
        "audit of {} {} — protocol {} ({} era)\ndeclared {}\n\n",
        s(&v["server"], "name"),
        s(&v["server"], "version"),
        s(v, "protocolVersion"),
        s(v, "era"),
        v["capabilities"]
    );
    let mut table = output::Table::new(&["CAPABILITY", "CHECK", "OUTCOME", "DETAIL"]);
    let checks = rows(v, "checks");
    for c in &checks {
        table.row(vec![
            s(c, "capability").into(),
            s(c, "check").into(),
            s(c, "outcome").into(),
            output::one_line(s(c, "detail"), 110),
        ]);
    }
    out.push_str(&table.render());
    let count = |o: &str| checks.iter().filter(|c| c["outcome"] == o).count();
    out.push_str(&format!(
        "\n{} checks: {} ok, {} violation, {} skipped, {} unverifiable\n",
        checks.len(),
        count("ok"),
        count("violation"),
        count("skipped"),
        count("unverifiable")
    ));
    let findings = rows(v, "violations");
    if !findings.is_empty() {
        out.push_str("\nCONTRACT VIOLATIONS\n");
        for (i, f) in findings.iter().enumerate() {
            out.push_str(&format!(
                "{}. `{}` {} ({}): {}\n   request  {}\n   response {}\n",
                i + 1,
                s(f, "capability"),
                s(f, "method"),
                s(f, "kind"),
                s(f, "detail"),
                output::one_line(&f["request"].to_string(), 400),
                output::one_line(&f["response"].to_string(), 400),
            ));
        }
    }
    let notices = rows(v, "notices");
    if !notices.is_empty() {
        out.push_str("\nNOTICES (lower severity)\n");
        for n in &notices {
            out.push_str(&format!(
                "- sent {} without declaring `{}`\n",
                s(n, "notification"),
                s(n, "needs")
            ));
        }
    }
    out
}

pub(super) fn markdown(v: &Value) -> String {
    let server = format!("{} {}", s(&v["server"], "name"), s(&v["server"], "version"));
    let findings = rows(v, "violations");
    let mut out = format!(
        "# MCP contract audit: {server}\n\n\
         - Protocol version: `{}` ({} era)\n\
         - Declared capabilities: `{}`\n\
         - Verdict: **{}**\n\n\
         Every declared capability was checked with safe, read-only probes (tools are never\n\
         called) and every result was validated against the official JSON schema of the\n\
         negotiated protocol version.\n\n## Checks\n\n\
         | capability | check | method | outcome | detail |\n|---|---|---|---|---|\n",
        s(v, "protocolVersion"),
        s(v, "era"),
        v["capabilities"],
        if findings.is_empty() {
            "clean".to_owned()
        } else {
            format!("{} contract violation(s)", findings.len())
        }
    );
    let cell = |t: &str| t.replace('|', "\\|").replace('\n', " ");
    for c in rows(v, "checks") {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            cell(s(&c, "capability")),
            cell(s(&c, "check")),
            c["method"]
                .as_str()
                .map(|m| format!("`{m}`"))
                .unwrap_or_default(),
            s(&c, "outcome"),
            cell(s(&c, "detail"))
        ));
    }
    if !findings.is_empty() {
        out.push_str("\n## Violations\n");
        for (i, f) in findings.iter().enumerate() {
            let fix = match s(f, "kind") {
                "method-not-found" => format!(
                    "Either implement `{}` or stop declaring `{}` in your capabilities: clients act on the declaration.",
                    s(f, "method"),
                    s(f, "capability")
                ),
                "malformed-result" => "Make the result match the schema of the negotiated protocol version.".to_owned(),
                "invalid-tool-schema" => "Fix the tool schemas so they are valid JSON Schema documents.".to_owned(),
                "no-acknowledgement" => "Send `notifications/subscriptions/acknowledged` as the first message of every listen stream.".to_owned(),
                _ => "Answer read-only probes of declared capabilities with a result.".to_owned(),
            };
            out.push_str(&format!(
                "\n### {}. `{}` — `{}` ({})\n\n{}\n\n**What to change:** {fix}\n\nRequest sent (exact):\n\n```json\n{}\n```\n\nResponse received (exact):\n\n```json\n{}\n```\n\nServer `{server}`, protocol `{}`, at {}.\n",
                i + 1,
                s(f, "capability"),
                s(f, "method"),
                s(f, "kind"),
                s(f, "detail"),
                serde_json::to_string_pretty(&f["request"]).unwrap_or_default(),
                serde_json::to_string_pretty(&f["response"]).unwrap_or_default(),
                s(f, "protocolVersion"),
                s(f, "at"),
            ));
        }
    }
    let notices = rows(v, "notices");
    if !notices.is_empty() {
        out.push_str("\n## Notices (lower severity)\n\n");
        for n in notices {
            out.push_str(&format!(
                "- The server sent `{}` without declaring `{}`.\n",
                s(&n, "notification"),
                s(&n, "needs")
            ));
        }
    }
    out
}
