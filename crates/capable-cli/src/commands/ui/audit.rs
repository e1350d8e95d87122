//! The audit from the page: a session of its own (the audit judges every message from
//! the handshake on, and its probes must not disturb the session the page shows),
//! every message of it in the message log tagged `audit`, closed when done.

use capable::audit::{self, AuditOptions, AuditReport, Recorder};
use capable::config::ServerTarget;

use super::servers::Servers;
use crate::exit::CliError;

/// Audits server `name`: `capable audit --json`'s report and its Markdown.
pub async fn run(
    servers: &Servers,
    name: &str,
    target: &ServerTarget,
) -> Result<(AuditReport, String), CliError> {
    let recorder = Recorder::new();
    let mut options = servers.options_for(name, Some("audit"));
    options.tap = Some(recorder.tap(options.tap.take()));
    // Connected as the page's own sessions are: bounded, authorized the same way.
    let session = capable::host::connect(target, options, None, servers.oauth()).await?;
    let mut audit_options = AuditOptions::default();
    audit_options.ack_wait = servers.timeout().min(std::time::Duration::from_secs(5));
    let report = audit::run(&session, &recorder, &audit_options).await;
    session.close().await;
    let markdown = crate::secrets::scrub(&report.markdown()).into_owned();
    Ok((report, markdown))
}
