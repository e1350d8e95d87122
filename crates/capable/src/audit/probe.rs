//! The probe and judge engine: send one request, validate the exact result received
//! against the named definition of the negotiated version's schema, and classify
//! whatever else came back.
//!
//! | answer | check | finding |
//! |---|---|---|
//! | a result valid under the definition | recorded by the caller | — |
//! | a result the schema rejects, or one the client could not decode | `violation` | [`MalformedResult`](FindingKind::MalformedResult) |
//! | -32601 for a declared capability | `violation` | [`MethodNotFound`](FindingKind::MethodNotFound); the method is marked broken |
//! | any other JSON-RPC error | `violation` | [`ErrorResponse`](FindingKind::ErrorResponse) |
//! | nothing in time, or the connection failed | `violation` | [`NoAnswer`](FindingKind::NoAnswer) |
//! | refused locally (nothing sent) | `skipped` | — |

use std::time::{Duration, SystemTime};

use serde_json::Value;

use capable_core::model::ListParams;
use capable_core::{Method, Params};

use super::recorder::Recorder;
use super::report::{Check, Finding, FindingKind, Outcome, ServerId};
use super::schema::Schema;
use crate::error::Error;
use crate::session::{RequestOptions, Session};

/// Why a probe did not produce a result.
pub(super) enum Failed {
    /// Recorded as a violation.
    Violation,
    /// Not sent: refused locally (e.g. marked broken after a violation).
    NotSent,
}

/// One audit in progress: the session probed, what was recorded, and the record so
/// far.
pub(super) struct Auditor<'s> {
    pub(super) session: &'s Session,
    pub(super) schema: Schema,
    pub(super) rec: Recorder,
    pub(super) checks: Vec<Check>,
    pub(super) findings: Vec<Finding>,
    /// How long a listen stream may take to be acknowledged.
    pub(super) ack_wait: Duration,
}

/// `""` for one, `"s"` otherwise.
pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl Auditor<'_> {
    /// Records a check.
    pub(super) fn check(
        &mut self,
        capability: &str,
        check: &str,
        method: Option<&str>,
        outcome: Outcome,
        detail: impl Into<String>,
    ) {
        self.checks.push(Check {
            capability: capability.into(),
            check: check.into(),
            method: method.map(Into::into),
            outcome,
            detail: detail.into(),
        });
    }

    /// Records a finding, with the server, the negotiated version and the time.
    pub(super) fn finding(
        &mut self,
        capability: &str,
        method: &str,
        kind: FindingKind,
        detail: String,
        request: Value,
        response: Value,
    ) {
        self.findings.push(Finding {
            capability: capability.into(),
            method: method.into(),
            kind,
            detail,
            request,
            response,
            server: ServerId::of(self.session.server_info()),
            protocol_version: self.session.protocol_version(),
            at: SystemTime::now(),
        });
    }

    /// Records a violation: its check and its finding.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn violation(
        &mut self,
        capability: &str,
        check: &str,
        method: &str,
        kind: FindingKind,
        detail: String,
        request: Value,
        response: Value,
    ) {
        self.check(
            capability,
            check,
            Some(method),
            Outcome::Violation,
            detail.clone(),
        );
        self.finding(capability, method, kind, detail, request, response);
    }

    /// One probe: send, then validate the exact result received against `def`.
    /// Failures are recorded (check + finding) here; the caller records success.
    pub(super) async fn probe<P: Params + ?Sized>(
        &mut self,
        capability: &str,
        check: &str,
        method: Method,
        params: &P,
        def: &'static str,
    ) -> Result<Value, Failed> {
        let since = self.rec.len();
        let answer = self
            .session
            .request::<Value, Value>(
                method,
                &params.to_value().unwrap_or_default(),
                RequestOptions::default(),
            )
            .await;
        self.judge(capability, check, method, since, answer, def)
    }

    /// Judges the answer to a request for `method` sent after the mark `since`.
    pub(super) fn judge(
        &mut self,
        capability: &str,
        check: &str,
        method: Method,
        since: usize,
        answer: Result<Value, Error>,
        def: &'static str,
    ) -> Result<Value, Failed> {
        let m = method.as_str();
        let (request, response) = self.rec.exchange(m, since);
        let (kind, detail, request, response) = match answer {
            Ok(result) => {
                // Validate the result exactly as received (fall back to the decoded one).
                let exact = response.get("result").cloned().unwrap_or(result);
                match self.schema.validate(def, &exact) {
                    Ok(()) => return Ok(exact),
                    Err(why) => (FindingKind::MalformedResult, why, request, response),
                }
            }
            Err(Error::Violation(v)) => (
                FindingKind::MethodNotFound,
                format!(
                    "declared `{}` but answered {} with -32601 (method not found)",
                    v.capability, v.method
                ),
                v.request.clone(),
                v.response.clone(),
            ),
            Err(Error::MalformedResult { detail, .. }) => {
                (FindingKind::MalformedResult, detail, request, response)
            }
            Err(Error::Rpc { error, .. }) => (
                FindingKind::ErrorResponse,
                format!(
                    "a read-only probe of a declared capability was answered with an error: {error}"
                ),
                request,
                response,
            ),
            Err(e @ Error::Timeout { .. }) => {
                (FindingKind::NoAnswer, e.to_string(), request, Value::Null)
            }
            Err(Error::Refused(r)) => {
                self.check(capability, check, Some(m), Outcome::Skipped, r.to_string());
                return Err(Failed::NotSent);
            }
            // The connection itself failed: nothing more can be probed.
            Err(e) => (FindingKind::NoAnswer, e.to_string(), request, Value::Null),
        };
        self.violation(capability, check, m, kind, detail, request, response);
        Err(Failed::Violation)
    }

    /// Every page of a list method, each validated; the items under `key`. `None` when
    /// a page failed (recorded).
    pub(super) async fn list_all(
        &mut self,
        capability: &str,
        check: &str,
        method: Method,
        def: &'static str,
        key: &str,
    ) -> Option<Vec<Value>> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0usize;
        loop {
            pages += 1;
            let page = self
                .probe(
                    capability,
                    check,
                    method,
                    &ListParams {
                        cursor: cursor.as_deref(),
                    },
                    def,
                )
                .await
                .ok()?;
            if let Some(list) = page.get(key).and_then(Value::as_array) {
                items.extend(list.iter().cloned());
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if pages < self.session.options().max_pages.max(1) => {
                    cursor = Some(next.to_owned())
                }
                Some(_) => {
                    self.check(
                        capability,
                        check,
                        Some(method.as_str()),
                        Outcome::Unverifiable,
                        format!("still paginating after {pages} pages; stopped"),
                    );
                    return Some(items);
                }
                None => break,
            }
        }
        let detail = format!(
            "{} item{} in {pages} page{}; every page valid",
            items.len(),
            plural(items.len()),
            plural(pages)
        );
        self.check(
            capability,
            check,
            Some(method.as_str()),
            Outcome::Ok,
            detail,
        );
        Some(items)
    }
}
