//! `capable audit`: checks every capability a server declared against what it does,
//! with safe read-only probes, and validates every result against the official JSON
//! schema of the negotiated protocol version.
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
//!
//! Each check ends `ok`, `violation`, `skipped` (nothing to probe with) or
//! `unverifiable`. Exit 6 when there is a violation.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::core::model::{CompleteArgument, CompleteParams, Empty, ListParams, UriParams};
use capable::core::Notice;
use capable::{
    Capability, Direction, Era, Error, Flag, ListenEvent, ListenFilter, Method, RequestOptions,
    Session, Tap,
};
use serde::Serialize;
use serde_json::{json, Value};

use super::Context;

mod report;
mod schema;

use crate::exit::CliError;
use crate::flags::ServerArgs;
use crate::output;
use report::{human, markdown};
use schema::Schema;

// ── the record of one audit ─────────────────────────────────────────────────────

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Ok,
    Violation,
    Skipped,
    Unverifiable,
}

#[derive(Clone, Debug, Serialize)]
struct Check {
    capability: String,
    check: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<String>,
    outcome: Outcome,
    detail: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Finding {
    capability: String,
    method: String,
    /// `method-not-found`, `malformed-result`, `error-response`, `no-answer`,
    /// `invalid-tool-schema`, `no-acknowledgement`.
    kind: &'static str,
    detail: String,
    request: Value,
    response: Value,
    server: Value,
    protocol_version: String,
    at: String,
}

/// Every message sent and received, to show exact evidence and validate the exact
/// results.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(Direction, Value)>>>);

impl Recorder {
    fn len(&self) -> usize {
        self.0.lock().map(|l| l.len()).unwrap_or(0)
    }

    /// The last request for `method` sent since `since`, and the response to it.
    fn exchange(&self, method: &str, since: usize) -> (Value, Value) {
        let Ok(log) = self.0.lock() else {
            return (Value::Null, Value::Null);
        };
        let tail = log.get(since..).unwrap_or_default();
        let request = tail
            .iter()
            .rev()
            .find(|(d, m)| *d == Direction::Sent && m["method"] == method && m.get("id").is_some())
            .map(|(_, m)| m.clone())
            .unwrap_or(Value::Null);
        let response = match request.get("id") {
            Some(id) => tail
                .iter()
                .find(|(d, m)| {
                    *d == Direction::Received
                        && m.get("method").is_none()
                        && m.get("id") == Some(id)
                })
                .map(|(_, m)| m.clone())
                .unwrap_or(Value::Null),
            None => Value::Null,
        };
        (request, response)
    }

    /// The first received message for `method` since `since`.
    fn received(&self, method: &str, since: usize) -> Option<Value> {
        let log = self.0.lock().ok()?;
        log.get(since..)?
            .iter()
            .find(|(d, m)| *d == Direction::Received && m["method"] == method)
            .map(|(_, m)| m.clone())
    }
}

/// Why a probe did not produce a result.
enum Failed {
    /// Recorded as a violation.
    Violation,
    /// Not sent: refused locally (e.g. marked broken after a violation).
    NotSent,
}

struct Auditor<'s> {
    session: &'s Session,
    schema: Schema,
    rec: Recorder,
    checks: Vec<Check>,
    findings: Vec<Finding>,
    /// How long a listen stream may take to be acknowledged.
    ack_wait: Duration,
}

impl Auditor<'_> {
    fn check(
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

    fn server(&self) -> Value {
        let info = self.session.server_info();
        json!({"name": info.name, "version": info.version})
    }

    #[allow(clippy::too_many_arguments)]
    fn finding(
        &mut self,
        capability: &str,
        method: &str,
        kind: &'static str,
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
            server: self.server(),
            protocol_version: self.session.protocol_version().as_str().into(),
            at: capable::core::time::rfc3339(std::time::SystemTime::now()),
        });
    }

    /// One probe: send, then validate the exact result received against `def`.
    /// Failures are recorded (check + violation) here; the caller records success.
    async fn probe<P: Serialize + ?Sized>(
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
                &serde_json::to_value(params).unwrap_or_default(),
                RequestOptions::default(),
            )
            .await;
        self.judge(capability, check, method, since, answer, def)
    }

    fn judge(
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
        let fail = |me: &mut Self, kind: &'static str, detail: String, req: Value, resp: Value| {
            me.check(
                capability,
                check,
                Some(m),
                Outcome::Violation,
                detail.clone(),
            );
            me.finding(capability, m, kind, detail, req, resp);
            Err(Failed::Violation)
        };
        match answer {
            Ok(result) => {
                // Validate the result exactly as received (fall back to the decoded one).
                let exact = response.get("result").cloned().unwrap_or(result);
                match self.schema.validate(def, &exact) {
                    Ok(()) => Ok(exact),
                    Err(why) => fail(self, "malformed-result", why, request, response),
                }
            }
            Err(Error::Violation(v)) => fail(
                self,
                "method-not-found",
                format!(
                    "declared `{}` but answered {} with -32601 (method not found)",
                    v.capability, v.method
                ),
                v.request.clone(),
                v.response.clone(),
            ),
            Err(Error::MalformedResult { detail, .. }) => {
                fail(self, "malformed-result", detail, request, response)
            }
            Err(Error::Rpc { error, .. }) => fail(
                self,
                "error-response",
                format!("a read-only probe of a declared capability was answered with an error: {error}"),
                request,
                response,
            ),
            Err(e @ Error::Timeout { .. }) => fail(self, "no-answer", e.to_string(), request, Value::Null),
            Err(Error::Refused(r)) => {
                let why = r.to_string();
                self.check(capability, check, Some(m), Outcome::Skipped, why.clone());
                Err(Failed::NotSent)
            }
            Err(e) => {
                // The connection itself failed: nothing more can be probed.
                self.check(capability, check, Some(m), Outcome::Violation, e.to_string());
                self.finding(capability, m, "no-answer", e.to_string(), request, Value::Null);
                Err(Failed::Violation)
            }
        }
    }

    /// Every page of a list method, each validated.
    async fn list_all(
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
            if items.len() == 1 { "" } else { "s" },
            if pages == 1 { "" } else { "s" }
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

    fn list_changed(&mut self, capability: Capability, notification: &str) {
        if !self
            .session
            .capabilities()
            .has_flag(capability, Flag::ListChanged)
        {
            return;
        }
        let cap = format!("{}.listChanged", capability.key());
        match self.rec.received(notification, 0) {
            Some(_) => self.check(
                &cap,
                "list change notification",
                Some(notification),
                Outcome::Ok,
                "sent during the audit",
            ),
            None => self.check(
                &cap,
                "list change notification",
                Some(notification),
                Outcome::Unverifiable,
                "nothing changed during the audit, so no notification was due",
            ),
        }
    }

    async fn handshake(&mut self) {
        let (method, def) = match self.session.era() {
            Era::Legacy => ("initialize", "InitializeResult"),
            Era::Modern => ("server/discover", "DiscoverResult"),
        };
        let (_, response) = self.rec.exchange(method, 0);
        let result = response.get("result").cloned().unwrap_or(Value::Null);
        match self.schema.validate(def, &result) {
            Ok(()) => self.check(
                "(lifecycle)",
                "handshake",
                Some(method),
                Outcome::Ok,
                format!(
                    "{} negotiated; result valid",
                    self.session.protocol_version()
                ),
            ),
            Err(why) => {
                let (request, response) = self.rec.exchange(method, 0);
                self.check(
                    "(lifecycle)",
                    "handshake",
                    Some(method),
                    Outcome::Violation,
                    why.clone(),
                );
                self.finding(
                    "(lifecycle)",
                    method,
                    "malformed-result",
                    why,
                    request,
                    response,
                );
            }
        }
        if self.session.era() == Era::Legacy
            && self
                .probe(
                    "(lifecycle)",
                    "ping",
                    Method::Ping,
                    &Empty {},
                    "EmptyResult",
                )
                .await
                .is_ok()
        {
            self.check(
                "(lifecycle)",
                "ping",
                Some("ping"),
                Outcome::Ok,
                "answered {}",
            );
        }
    }

    async fn resources(&mut self) -> (Vec<Value>, Vec<Value>) {
        if !self.session.capabilities().has(Capability::Resources) {
            return (Vec::new(), Vec::new());
        }
        let listed = self
            .list_all(
                "resources",
                "list",
                Method::ListResources,
                "ListResourcesResult",
                "resources",
            )
            .await
            .unwrap_or_default();
        let templates = self
            .list_all(
                "resources",
                "templates/list",
                Method::ListResourceTemplates,
                "ListResourceTemplatesResult",
                "resourceTemplates",
            )
            .await
            .unwrap_or_default();
        let first = listed
            .first()
            .and_then(|r| r.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        match &first {
            None => self.check(
                "resources",
                "read the first listed resource",
                Some("resources/read"),
                Outcome::Skipped,
                "no resource listed to read",
            ),
            Some(uri) => {
                if let Ok(result) = self
                    .probe(
                        "resources",
                        "read the first listed resource",
                        Method::ReadResource,
                        &UriParams { uri },
                        "ReadResourceResult",
                    )
                    .await
                {
                    let n = result["contents"].as_array().map_or(0, Vec::len);
                    self.check(
                        "resources",
                        "read the first listed resource",
                        Some("resources/read"),
                        Outcome::Ok,
                        format!("{uri}: {n} content item{}", if n == 1 { "" } else { "s" }),
                    );
                }
            }
        }
        if self
            .session
            .capabilities()
            .has_flag(Capability::Resources, Flag::Subscribe)
        {
            match &first {
                None => self.check(
                    "resources.subscribe",
                    "subscribe",
                    None,
                    Outcome::Skipped,
                    "no resource listed to subscribe to",
                ),
                Some(uri) => match self.session.era() {
                    Era::Legacy => self.subscribe_legacy(uri).await,
                    Era::Modern => self.subscribe_modern(uri).await,
                },
            }
        }
        (listed, templates)
    }

    async fn subscribe_legacy(&mut self, uri: &str) {
        let cap = "resources.subscribe";
        let since = self.rec.len();
        let answer = self
            .session
            .subscribe(uri)
            .await
            .map(|()| Value::Object(Default::default()));
        if self
            .judge(
                cap,
                "subscribe",
                Method::Subscribe,
                since,
                answer,
                "EmptyResult",
            )
            .is_err()
        {
            self.check(
                cap,
                "unsubscribe",
                Some("resources/unsubscribe"),
                Outcome::Skipped,
                "no subscription to end",
            );
            return;
        }
        self.check(
            cap,
            "subscribe",
            Some("resources/subscribe"),
            Outcome::Ok,
            format!("subscribed to {uri}"),
        );
        let since = self.rec.len();
        let answer = self
            .session
            .unsubscribe(uri)
            .await
            .map(|()| Value::Object(Default::default()));
        if self
            .judge(
                cap,
                "unsubscribe",
                Method::Unsubscribe,
                since,
                answer,
                "EmptyResult",
            )
            .is_ok()
        {
            self.check(
                cap,
                "unsubscribe",
                Some("resources/unsubscribe"),
                Outcome::Ok,
                "subscription ended",
            );
        }
    }

    async fn subscribe_modern(&mut self, uri: &str) {
        let cap = "resources.subscribe";
        let check = "open and close a listen stream";
        let m = "subscriptions/listen";
        let filter = ListenFilter {
            resource_subscriptions: vec![uri.to_owned()],
            ..Default::default()
        };
        let since = self.rec.len();
        let mut listener = match self.session.listen(&filter).await {
            Ok(l) => l,
            Err(e) => {
                let _ = self.judge(cap, check, Method::Listen, since, Err(e), "EmptyResult");
                return;
            }
        };
        let ack = tokio::time::timeout(self.ack_wait, async {
            loop {
                match listener.recv().await {
                    Ok(Some(ListenEvent::Acknowledged(v))) => return Ok(Some(v)),
                    Ok(Some(_)) => continue,
                    Ok(None) => return Ok(None),
                    Err(e) => return Err(e),
                }
            }
        })
        .await;
        listener.close();
        let (request, _) = self.rec.exchange(m, since);
        match ack {
            Ok(Ok(Some(ack))) => {
                let message = self
                    .rec
                    .received("notifications/subscriptions/acknowledged", since)
                    .unwrap_or(Value::Null);
                let honoured = ack["resourceSubscriptions"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|u| u.as_str() == Some(uri)));
                match self.schema.validate("SubscriptionsAcknowledgedNotification", &message) {
                    Err(why) => {
                        self.check(cap, check, Some(m), Outcome::Violation, why.clone());
                        self.finding(cap, m, "malformed-result", why, request, message);
                    }
                    Ok(()) if honoured => self.check(
                        cap,
                        check,
                        Some(m),
                        Outcome::Ok,
                        format!("acknowledged resourceSubscriptions [{uri}], then closed"),
                    ),
                    Ok(()) => self.check(
                        cap,
                        check,
                        Some(m),
                        Outcome::Unverifiable,
                        format!("acknowledged without {uri} ({ack}); the server may refuse subscriptions per resource"),
                    ),
                }
            }
            Ok(Ok(None)) => {
                let why = "the server completed the listen request without acknowledging it first"
                    .to_owned();
                let (request, response) = self.rec.exchange(m, since);
                self.check(cap, check, Some(m), Outcome::Violation, why.clone());
                self.finding(cap, m, "no-acknowledgement", why, request, response);
            }
            Ok(Err(e)) => {
                let _ = self.judge(cap, check, Method::Listen, since, Err(e), "EmptyResult");
            }
            Err(_) => {
                let why = format!(
                    "no notifications/subscriptions/acknowledged within {}",
                    capable::core::time::humanize(self.ack_wait)
                );
                self.check(cap, check, Some(m), Outcome::Violation, why.clone());
                self.finding(cap, m, "no-acknowledgement", why, request, Value::Null);
            }
        }
    }

    async fn tools(&mut self) {
        if !self.session.capabilities().has(Capability::Tools) {
            return;
        }
        let Some(tools) = self
            .list_all(
                "tools",
                "list",
                Method::ListTools,
                "ListToolsResult",
                "tools",
            )
            .await
        else {
            return;
        };
        let check = "each tool's input schema is a valid JSON Schema";
        if tools.is_empty() {
            self.check("tools", check, None, Outcome::Skipped, "no tools listed");
            return;
        }
        let (request, response) = self.rec.exchange("tools/list", 0);
        let mut bad = Vec::new();
        for tool in &tools {
            let name = tool["name"].as_str().unwrap_or("?").to_owned();
            for key in ["inputSchema", "outputSchema"] {
                let Some(schema) = tool.get(key) else {
                    continue;
                };
                if let Err(e) = jsonschema::meta::validate(schema) {
                    bad.push(format!("{name}.{key}: {e}"));
                }
            }
        }
        if bad.is_empty() {
            self.check(
                "tools",
                check,
                None,
                Outcome::Ok,
                format!(
                    "{} tool{}; tools are never called",
                    tools.len(),
                    if tools.len() == 1 { "" } else { "s" }
                ),
            );
        } else {
            let why = bad.join("; ");
            self.check("tools", check, None, Outcome::Violation, why.clone());
            self.finding(
                "tools",
                "tools/list",
                "invalid-tool-schema",
                why,
                request,
                response,
            );
        }
    }

    async fn prompts(&mut self) -> Vec<Value> {
        if !self.session.capabilities().has(Capability::Prompts) {
            return Vec::new();
        }
        self.list_all(
            "prompts",
            "list",
            Method::ListPrompts,
            "ListPromptsResult",
            "prompts",
        )
        .await
        .unwrap_or_default()
    }

    async fn logging(&mut self) {
        if !self.session.capabilities().has(Capability::Logging) {
            return;
        }
        if self.session.era() == Era::Modern {
            self.check(
                "logging",
                "setLevel",
                None,
                Outcome::Skipped,
                "2026-07-28 has no logging/setLevel (the level travels in each request's _meta)",
            );
            return;
        }
        #[derive(Serialize)]
        struct Level {
            level: &'static str,
        }
        if self
            .probe(
                "logging",
                "setLevel",
                Method::SetLoggingLevel,
                &Level { level: "warning" },
                "EmptyResult",
            )
            .await
            .is_ok()
        {
            self.check(
                "logging",
                "setLevel",
                Some("logging/setLevel"),
                Outcome::Ok,
                "level set to warning",
            );
        }
    }

    async fn completions(&mut self, prompts: &[Value], templates: &[Value]) {
        if !self.session.capabilities().has(Capability::Completions) {
            return;
        }
        let check = "one completion request";
        let from_prompt = prompts.iter().find_map(|p| {
            let arg = p["arguments"].as_array()?.first()?["name"].as_str()?;
            Some((
                json!({"type": "ref/prompt", "name": p["name"]}),
                arg.to_owned(),
            ))
        });
        let from_template = || {
            templates.iter().find_map(|t| {
                let template = t["uriTemplate"].as_str()?;
                let var = template_variable(template)?;
                Some((json!({"type": "ref/resource", "uri": template}), var))
            })
        };
        let Some((reference, argument)) = from_prompt.or_else(from_template) else {
            self.check(
                "completions",
                check,
                None,
                Outcome::Skipped,
                "no prompt argument or template variable to complete",
            );
            return;
        };
        let params = CompleteParams {
            reference: &reference,
            argument: CompleteArgument {
                name: &argument,
                value: "",
            },
        };
        if let Ok(result) = self
            .probe(
                "completions",
                check,
                Method::Complete,
                &params,
                "CompleteResult",
            )
            .await
        {
            let n = result["completion"]["values"]
                .as_array()
                .map_or(0, Vec::len);
            self.check(
                "completions",
                check,
                Some("completion/complete"),
                Outcome::Ok,
                format!(
                    "{reference} argument {argument:?}: {n} value{}",
                    if n == 1 { "" } else { "s" }
                ),
            );
        }
    }

    fn others(&mut self) {
        let others: Vec<String> = self
            .session
            .capabilities()
            .other_keys()
            .map(str::to_owned)
            .collect();
        for key in others {
            self.check(
                &key,
                "declared",
                None,
                Outcome::Skipped,
                "capable has no read-only probe for this capability",
            );
        }
    }
}

/// The first variable of an RFC 6570 template (`docs://chapters/{number}` → `number`).
fn template_variable(template: &str) -> Option<String> {
    let start = template.find('{')?;
    let end = start + template[start..].find('}')?;
    let expr = template[start + 1..end].trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
    let name = expr.split([',', ':', '*']).next()?.trim();
    (!name.is_empty()).then(|| name.to_owned())
}

// ── the command ────────────────────────────────────────────────────────────────

pub async fn run(ctx: &Context, report: Option<&Path>, args: &ServerArgs) -> Result<(), CliError> {
    let rec = Recorder::default();
    let mut options = ctx.options();
    let user_tap = options.tap.take();
    let log = rec.clone();
    options.tap = Some(Tap::new(move |dir, line| {
        if let Some(t) = &user_tap {
            t.clone_call(dir, line);
        }
        if let Ok(v) = serde_json::from_slice::<Value>(line) {
            if let Ok(mut l) = log.0.lock() {
                l.push((dir, v));
            }
        }
    }));
    let session = ctx.connect_with(args, options).await?;
    let mut a = Auditor {
        session: &session,
        schema: Schema::new(session.protocol_version()),
        rec,
        checks: Vec::new(),
        findings: Vec::new(),
        ack_wait: ctx.global.timeout.min(Duration::from_secs(5)),
    };
    a.handshake().await;
    let (_, templates) = a.resources().await;
    a.tools().await;
    let prompts = a.prompts().await;
    a.logging().await;
    a.completions(&prompts, &templates).await;
    a.list_changed(
        Capability::Resources,
        "notifications/resources/list_changed",
    );
    a.list_changed(Capability::Tools, "notifications/tools/list_changed");
    a.list_changed(Capability::Prompts, "notifications/prompts/list_changed");
    a.others();
    let notices: Vec<Value> = session
        .notices()
        .into_iter()
        .filter_map(|n| match n {
            Notice::UndeclaredNotification { method, needs } => Some(json!({
                "severity": "notice",
                "kind": "undeclared-notification",
                "notification": method,
                "needs": needs,
            })),
            _ => None,
        })
        .collect();
    let info = session.server_info().clone();
    let verdict = json!({
        "server": {"name": info.name, "version": info.version},
        "era": session.era().as_str(),
        "protocolVersion": session.protocol_version().as_str(),
        "capabilities": session.capabilities(),
        "checks": a.checks,
        "violations": a.findings,
        "notices": notices,
    });
    let n = a.findings.len();
    drop(a);
    session.close().await;
    if ctx.global.json {
        output::json(&verdict);
    } else {
        print!("{}", human(&verdict));
    }
    if let Some(path) = report {
        std::fs::write(path, markdown(&verdict)).map_err(|e| {
            CliError::Usage(format!(
                "cannot write the report to {}: {e}",
                path.display()
            ))
        })?;
    }
    if n > 0 {
        return Err(CliError::Violations(format!(
            "{n} contract violation{} by {} {}",
            if n == 1 { "" } else { "s" },
            info.name,
            info.version
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_variables() {
        assert_eq!(
            template_variable("docs://chapters/{number}").as_deref(),
            Some("number")
        );
        assert_eq!(template_variable("x://{+path}/y").as_deref(), Some("path"));
        assert_eq!(template_variable("x://{a,b}").as_deref(), Some("a"));
        assert_eq!(template_variable("x://plain"), None);
    }
}
