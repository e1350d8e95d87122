//! Auditing a server: every capability it declared checked against what it does, with
//! safe read-only probes, and every result validated against the official JSON schema
//! of the negotiated protocol version.
//!
//! A host connects a session with a [`Recorder`] on the wire, calls [`run`], and gets
//! an [`AuditReport`]: a [`Check`] per probe and a [`Finding`] per contract violation,
//! with the exact request and response as evidence. `capable audit` is this, rendered.
//!
//! ```no_run
//! # async fn demo() -> Result<(), capable::Error> {
//! use capable::audit::{self, AuditOptions, Outcome, Recorder};
//! use capable::{connect_stdio, ClientOptions, ServerCommand};
//!
//! let recorder = Recorder::new();
//! let mut options = ClientOptions::default();
//! options.tap = Some(recorder.tap(options.tap.take())); // keeps a tap already set
//! let server = ServerCommand::new("node", ["server.js"]);
//! let session = connect_stdio(&server, options).await?;
//! let report = audit::run(&session, &recorder, &AuditOptions::default()).await;
//! session.close().await;
//!
//! println!("{}: {} checks ok", report.server, report.count(Outcome::Ok));
//! for finding in &report.findings {
//!     println!("`{}` {} ({}): {}", finding.capability, finding.method, finding.kind, finding.detail);
//!     println!("  sent     {}", finding.request);
//!     println!("  received {}", finding.response);
//! }
//! if !report.is_clean() {
//!     std::process::exit(6);
//! }
//! # Ok(()) }
//! ```
//!
//! What is probed, for what was declared:
//!
//! | declared | probes |
//! |---|---|
//! | (handshake) | the `initialize` / `server/discover` result; `ping` (legacy) |
//! | `resources` | `resources/list` (every page), `resources/templates/list` (every page), `resources/read` of the first listed resource |
//! | `resources.subscribe` | legacy: `resources/subscribe` + `resources/unsubscribe` on a listed resource; modern: open and close a `subscriptions/listen` stream with `resourceSubscriptions` |
//! | `tools` | `tools/list` (every page); each tool's `inputSchema` (and `outputSchema`) is a valid JSON Schema. Tools are never called. |
//! | `prompts` | `prompts/list` (every page) |
//! | `logging` | `logging/setLevel` (legacy) |
//! | `completions` | one `completion/complete` for a prompt argument or a template variable |
//! | `*.listChanged` | unverifiable unless the server sent the notification during the audit |
//! | any other key | skipped: capable has no read-only probe for it |
//!
//! Each check ends [`Outcome::Ok`], [`Outcome::Violation`], [`Outcome::Skipped`]
//! (nothing to probe with) or [`Outcome::Unverifiable`]. Nothing undeclared is sent:
//! every probe passes the session's gating table like any other request. A method the
//! server answers with -32601 despite declaring it is marked broken for the session
//! (a [`FindingKind::MethodNotFound`] finding), so what depended on it is skipped, not
//! sent again.
//!
//! The audit runs on the caller's session and leaves it open. Tools are never called
//! and prompts never got; the only probes that touch the server's state are
//! `logging/setLevel` (to `warning`) and a subscription, which the audit ends.

mod completions;
mod lifecycle;
mod logging;
mod markdown;
mod probe;
mod prompts;
mod recorder;
mod report;
mod resources;
mod schema;
mod subscribe;
mod tools;
mod unprobed;

use std::time::Duration;

pub use recorder::Recorder;
pub use report::{AuditNotice, AuditReport, Check, Finding, FindingKind, Outcome, ServerId};

use crate::session::Session;
use probe::Auditor;
use schema::Schema;

/// How an audit runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditOptions {
    /// How long a `subscriptions/listen` stream (modern `resources.subscribe`) may take
    /// to be acknowledged before the check is a
    /// [`NoAcknowledgement`](FindingKind::NoAcknowledgement) violation. Default 5 s.
    pub ack_wait: Duration,
}

impl Default for AuditOptions {
    fn default() -> AuditOptions {
        AuditOptions {
            ack_wait: Duration::from_secs(5),
        }
    }
}

/// Audits the server of `session`: probes every declared capability and returns the
/// verdict.
///
/// `recorder` must be the one whose [`tap`](Recorder::tap) was installed in the
/// options `session` was connected with: the audit judges the exact messages, and
/// every finding's evidence is taken from its record. If it recorded no handshake, the
/// report has a single [`Outcome::Unverifiable`] handshake check saying so, and
/// nothing is probed.
///
/// Each request waits as long as the session's options allow. A server that stops
/// answering shows as [`FindingKind::NoAnswer`] findings, never as an error: the
/// report is always complete for what could be probed.
pub async fn run(session: &Session, recorder: &Recorder, options: &AuditOptions) -> AuditReport {
    let mut a = Auditor {
        session,
        schema: Schema::new(session.protocol_version()),
        rec: recorder.clone(),
        checks: Vec::new(),
        findings: Vec::new(),
        ack_wait: options.ack_wait,
    };
    if a.lifecycle().await {
        let templates = a.resources().await;
        a.tools().await;
        let prompts = a.prompts().await;
        a.logging().await;
        a.completions(&prompts, &templates).await;
        a.list_changed();
        a.others();
    }
    AuditReport {
        server: ServerId::of(session.server_info()),
        era: session.era(),
        protocol_version: session.protocol_version(),
        capabilities: session.capabilities().clone(),
        checks: a.checks,
        findings: a.findings,
        notices: session
            .notices()
            .into_iter()
            .filter_map(AuditNotice::from_notice)
            .collect(),
    }
}
