//! The audit from the page: a session of its own (the audit judges every message from
//! the handshake on, and its probes must not disturb the session the page shows),
//! every message of it in the message log tagged `audit`, closed when done.

use capable::audit::{self, AuditOptions, AuditReport, Recorder};
use capable::config::ServerTarget;
use capable::{ClientOptions, HttpConfig, Session};

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
    let session = connect(target, options, servers.oauth()).await?;
    let mut audit_options = AuditOptions::default();
    audit_options.ack_wait = servers.timeout().min(std::time::Duration::from_secs(5));
    let report = audit::run(&session, &recorder, &audit_options).await;
    session.close().await;
    let markdown = crate::secrets::scrub(&crate::commands::audit::markdown(&report)).into_owned();
    Ok((report, markdown))
}

/// A session to `target`, authorized like the page's own (a token `capable auth
/// login` stored; no login from the page).
async fn connect(
    target: &ServerTarget,
    options: ClientOptions,
    oauth: Option<&capable::host::OAuthProvider>,
) -> Result<Session, CliError> {
    let bound = options
        .config
        .timeouts
        .request
        .saturating_add(options.config.timeouts.probe);
    let connecting = async {
        match target {
            ServerTarget::Stdio(command) => Ok(capable::connect_stdio(command, options).await?),
            ServerTarget::Http {
                url,
                headers,
                oauth: entry,
            } => {
                let parsed = capable::transport::http::Url::parse(url)
                    .map_err(|e| CliError::Usage(format!("not a URL: {e}")))?;
                let mut config = HttpConfig::new(parsed);
                config.headers = headers.clone();
                if let Some(provider) = oauth {
                    provider.authorize(&mut config, entry.as_deref())?;
                }
                Ok(capable::connect_http(config, options).await?)
            }
        }
    };
    tokio::time::timeout(bound, connecting)
        .await
        .unwrap_or_else(|_| {
            Err(CliError::Usage(
                "the server did not finish its handshake in time".into(),
            ))
        })
}
