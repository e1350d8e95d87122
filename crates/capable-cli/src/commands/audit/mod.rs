//! `capable audit`: the library's audit ([`capable::audit`]) of the named server,
//! rendered: a table for people or the report as JSON, optionally a Markdown report
//! (`--report`). Exit 6 when there is a violation.

use std::path::Path;
use std::time::Duration;

use capable::audit::{self, AuditOptions, Recorder};

use super::Context;

mod report;

use crate::exit::CliError;
use crate::flags::ServerArgs;
use crate::output;
use report::human;

pub async fn run(ctx: &Context, report: Option<&Path>, args: &ServerArgs) -> Result<(), CliError> {
    let recorder = Recorder::new();
    let mut options = ctx.options();
    options.tap = Some(recorder.tap(options.tap.take()));
    let session = ctx.connect_with(args, options).await?;
    let mut audit_options = AuditOptions::default();
    audit_options.ack_wait = ctx.global.timeout.min(Duration::from_secs(5));
    let verdict = super::with_session(ctx, session, async |s| {
        Ok(audit::run(s, &recorder, &audit_options).await)
    })
    .await?;
    if ctx.global.json {
        output::json(&verdict)?;
    } else {
        output::print(&human(&verdict))?;
    }
    if let Some(path) = report {
        let text = verdict.markdown();
        std::fs::write(path, crate::secrets::scrub(&text).as_bytes()).map_err(|e| {
            CliError::Usage(format!(
                "cannot write the report to {}: {e}",
                path.display()
            ))
        })?;
    }
    let n = verdict.findings.len();
    if n > 0 {
        return Err(CliError::Violations(format!(
            "{n} contract violation{} by {}",
            if n == 1 { "" } else { "s" },
            verdict.server
        )));
    }
    Ok(())
}
