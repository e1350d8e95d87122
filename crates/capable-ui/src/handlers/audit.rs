//! The audit from the page: a session of its own (the audit judges every message from
//! the handshake on, and its probes must not disturb the session the page shows),
//! every message of it in the message log tagged `audit`, closed when done.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use capable::audit::{self, AuditOptions, Recorder};
use serde_json::json;

use crate::error::ApiError;
use crate::extract::{Answer, Command, OnServer, Reply};
use crate::state::AppState;

/// The longest the audit waits for a listen stream's acknowledgement.
const ACK_WAIT: Duration = Duration::from_secs(5);

/// `POST /api/audit {server}`: `capable audit --json`'s report and its Markdown.
pub async fn run(State(app): State<Arc<AppState>>, Command(c): Command<OnServer>) -> Answer {
    let target = app.servers.target(&c.server)?;
    let recorder = Recorder::new();
    let mut options = app.servers.options_for(&c.server, Some("audit"));
    options.tap = Some(recorder.tap(options.tap.take()));
    // Connected as the page's own sessions are: bounded, authorized the same way.
    let session = capable::host::connect(&target, options, None, app.servers.oauth())
        .await
        .map_err(|e| ApiError::from(e).with_status(StatusCode::BAD_GATEWAY))?;
    let mut audit_options = AuditOptions::default();
    audit_options.ack_wait = app.timeout.min(ACK_WAIT);
    let report = audit::run(&session, &recorder, &audit_options).await;
    session.close().await;
    let markdown = report.markdown();
    let report = json!(report);
    app.audits
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(c.server, report.clone());
    Ok(Reply(json!({"report": report, "markdown": markdown})))
}
