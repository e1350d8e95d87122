//! What an operator follows: every host request through the bridge as an
//! OpenTelemetry span, and its call to the server behind as a child span, exported over
//! OTLP (`export.rs`) with the W3C trace context taken from the caller and handed on
//! upstream (`context.rs`).
//!
//! Spans follow OpenTelemetry's semantic conventions for MCP:
//!
//! | span | kind | name | attributes |
//! |---|---|---|---|
//! | the host's request | server | `{method} {tool or prompt}` | `mcp.method.name`, `jsonrpc.request.id`, `mcp.protocol.version`, `mcp.session.id` (a hash of the listener's session id, never the id itself), `network.transport` (`pipe`, `tcp`), `gen_ai.tool.name` and `gen_ai.operation.name=execute_tool`, `gen_ai.prompt.name`, `mcp.resource.uri`; `enduser.id` and `capable.caller.client_id` when callers log in (`--auth-issuer`); `capable.outcome` (`ok`, `error`, `cancelled`, `refused`), `error.type`, `rpc.jsonrpc.error_code`, `capable.violation` (the contract violation, scrubbed of secrets) |
//! | its call upstream | client | the same | the same request's, and `capable.server` (the server it went to) |
//!
//! Off unless asked for (`--otlp`, or an `OTEL_EXPORTER_OTLP_ENDPOINT`): then a
//! request costs one branch on an `Option`. On, a request the sampler records
//! (`sampler.rs`: by default, unless its caller's `traceparent` says it is not
//! sampled) has its two spans recorded on its task as one record of the bridge's own
//! (`span.rs`: ids, times, its target copied in, the attributes its session's
//! requests of the method share as one `Arc` its relay keeps ([`Kept`]), its id and
//! outcome), boxed and handed to a bounded queue; the exporter's own thread encodes
//! them a batch at a time, sends them (`export.rs`) and puts the boxes back, cleared,
//! in a pool the relays take from: the spans allocate nothing per request (but a
//! caller's names, and a server's that many servers routed to), and nothing waits for
//! the collector. A request not recorded still hands its trace context on upstream.

mod context;
mod encode;
mod export;
mod sampler;
mod span;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use capable::internal::auth::resource::Caller;
use capable::internal::jsonrpc::{Payload, RequestId};
use capable::internal::Method;

pub use context::into_body;
pub(crate) use context::SpanContext;
pub use export::Protocol;

use crate::audit::Audit;
use crate::forward::Forwarded;
use sampler::Sampler;
use span::{Attribute, Record};

tokio::task_local! {
    /// The listener's session the task serves (a legacy one's id), or a 2026-07-28
    /// host's task (`None`); unset over stdio.
    static SESSION: Option<Session>;
}

/// A legacy session's id, and its hash once a span has shown it.
struct Session {
    id: Box<str>,
    hashed: std::sync::OnceLock<Arc<str>>,
}

/// Runs `work` as one task of the listener: its spans say `tcp`, and the session's
/// (hashed) id when it has one — hashed once, by the first span that shows it.
pub fn in_session<F: std::future::Future>(
    session: Option<&str>,
    work: F,
) -> impl std::future::Future<Output = F::Output> {
    let session = session.map(|id| Session {
        id: id.into(),
        hashed: std::sync::OnceLock::new(),
    });
    SESSION.scope(session, work)
}

/// The bridge's traces: which requests are recorded, where their spans go, and how
/// many never got there. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Traces {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    sampler: Sampler,
    exporter: export::Exporter,
}

/// The instrumentation scope the spans are under.
const SCOPE: &str = "capable-bridge";

impl Traces {
    /// The traces the environment asks for: on when `explicit` (`--otlp`), or when an
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` names a
    /// collector (unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`);
    /// `None` when off. The exporter runs on a thread of its own. An error says which
    /// variable is wrong; it never holds a header's value.
    pub fn from_env(explicit: bool) -> Result<Option<Traces>, String> {
        Traces::from_vars(explicit, |name| std::env::var(name).ok())
    }

    /// [`Traces::from_env`], with the variables `var` gives.
    pub fn from_vars(
        explicit: bool,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Traces>, String> {
        let set = |name: &str| var(name).is_some_and(|v| !v.trim().is_empty());
        let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim() == "true")
            || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim() == "none");
        let named = set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        if !explicit && (disabled || !named) {
            return Ok(None);
        }
        let protocol = Protocol::from_env(&var)?;
        let sampler = Sampler::from_env(&var)?;
        let resource = encode::resource(&resource(&var));
        let exporter = export::Exporter::start(protocol, &var, resource, encode::scope(SCOPE))?;
        Ok(Some(Traces {
            inner: Arc::new(Inner { sampler, exporter }),
        }))
    }

    /// The values of the exporter's headers (`OTEL_EXPORTER_OTLP_HEADERS`,
    /// `…_TRACES_HEADERS`): secrets, to scrub from anything the bridge writes.
    pub fn header_values(var: impl Fn(&str) -> Option<String>) -> Vec<String> {
        [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ]
        .iter()
        .filter_map(|name| var(name))
        .flat_map(|headers| {
            let mut values = Vec::new();
            for pair in headers.split(',') {
                let Some((_, raw)) = pair.split_once('=') else {
                    continue;
                };
                let raw = raw.trim();
                // As written, and as sent (percent-decoded) when that differs.
                let sent = percent_encoding::percent_decode_str(raw).decode_utf8_lossy();
                if sent != raw && !sent.is_empty() {
                    values.push(sent.into_owned());
                }
                if !raw.is_empty() {
                    values.push(raw.to_owned());
                }
            }
            values
        })
        .collect()
    }

    /// Spans that never reached the collector: dropped while the queue was full, or in
    /// a batch the collector refused or never got.
    pub fn dropped(&self) -> u64 {
        self.inner.exporter.dropped()
    }

    /// What is waiting sent, for at most `within`.
    pub async fn shutdown(&self, within: Duration) {
        self.inner.exporter.shutdown(within).await;
    }

    /// The span of a host's request (its parent: the caller's `traceparent` in
    /// `params._meta`, when there is one), recorded when the sampler says so. Its
    /// attributes are built once, of what the relay already has (the method, the id,
    /// the version, the params' members), each a static or shared string: the
    /// upstream call's span takes the same ones.
    pub(crate) fn request(&self, mut request: Request<'_>, kept: &mut Kept) -> Traced {
        // Params without `_meta` name no parent: their target was read as the relay
        // checked them.
        let plain = request.params.is_plain();
        let mut read = match plain {
            true => TraceFields::default(),
            false => request.params.trace_fields(request.method),
        };
        let parent = read
            .traceparent
            .as_deref()
            .and_then(|traceparent| context::parent(traceparent, read.tracestate.as_deref()));
        let trace_id = match &parent {
            Some(parent) => parent.trace_id,
            None => kept.trace_id(),
        };
        let sampled = self.inner.sampler.sampled(&trace_id, parent.as_ref());
        let context = SpanContext {
            trace_id,
            span_id: kept.span_id(),
            sampled,
            state: parent.as_ref().and_then(|p| p.state.clone()),
        };
        let child = kept.span_id();
        let record = sampled.then(|| {
            if plain {
                read = TraceFields::target(request.method, request.target.take());
            }
            let mut record = self.inner.exporter.record(&mut kept.spare);
            record.trace_id = trace_id;
            record.span_id = context.span_id;
            record.parent = parent.as_ref().map(|p| p.span_id);
            record.trace_state = context.state.clone();
            recorded(&request, read, kept, &mut record);
            record.start = span::now();
            record
        });
        Traced {
            traces: self.clone(),
            context,
            child,
            record,
            tool_call: matches!(request.method, Method::CallTool | Method::TaskResult),
            ended: false,
        }
    }
}

/// The resource the spans are from: `service.name` (`OTEL_SERVICE_NAME`, or
/// `OTEL_RESOURCE_ATTRIBUTES`'s, or `capable-bridge`), `OTEL_RESOURCE_ATTRIBUTES`'s
/// others, and the telemetry SDK's.
fn resource(var: &impl Fn(&str) -> Option<String>) -> Vec<Attribute> {
    let mut named: Vec<(String, String)> = var("OTEL_RESOURCE_ATTRIBUTES")
        .as_deref()
        .map(|text| export::pairs(text).take(128).collect())
        .unwrap_or_default();
    if let Some(service) = var("OTEL_SERVICE_NAME").filter(|s| !s.trim().is_empty()) {
        named.retain(|(k, _)| k != "service.name");
        named.push(("service.name".to_owned(), service.trim().to_owned()));
    }
    let mut attributes = Vec::new();
    if !named.iter().any(|(k, _)| k == "service.name") {
        attributes.push(Attribute::text("service.name", "capable-bridge"));
    }
    for (key, value) in named {
        // A key the resource holds for the process's life: leaked once, at start.
        let key: &'static str = Box::leak(key.into_boxed_str());
        attributes.push(Attribute::text(key, value));
    }
    attributes.push(Attribute::text("telemetry.sdk.name", "capable"));
    attributes.push(Attribute::text("telemetry.sdk.language", "rust"));
    attributes.push(Attribute::text(
        "telemetry.sdk.version",
        env!("CARGO_PKG_VERSION"),
    ));
    attributes
}

/// `enduser.id` (the subject) and the client the token was issued to.
fn caller_attributes(caller: &Caller, attributes: &mut Vec<Attribute>) {
    let subject = Arc::<str>::from(caller.subject.as_str());
    attributes.push(Attribute::text("enduser.id", subject));
    if let Some(client) = &caller.client_id {
        let client = Arc::<str>::from(client.as_str());
        attributes.push(Attribute::text("capable.caller.client_id", client));
    }
}

/// A session id as a span shows it: the first 16 hex digits of its SHA-256 (the id
/// itself lets whoever reads it into the session).
fn hashed(id: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(id.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// What a request's span says of it.
pub(crate) struct Request<'a> {
    pub method: Method,
    pub id: &'a RequestId,
    pub version: &'static str,
    /// Its params as they go upstream (`_meta` read for the caller's context).
    pub params: &'a Forwarded,
    /// Of params without `_meta` ([`Forwarded::Plain`]): their target, read as the
    /// relay checked them ([`crate::forward::upstream_params`]).
    pub target: Option<Cow<'a, str>>,
    /// The one server behind, its name shared (many: known once routed).
    pub server: Option<&'a Arc<str>>,
}

/// What a recorded request's spans share, onto `record`: their name, the attributes
/// of its session and method (kept), its target and its own.
fn recorded(request: &Request<'_>, read: TraceFields<'_>, kept: &mut Kept, record: &mut Record) {
    record.method = request.method.as_str();
    let (key, text) = match (request.method, read.name, read.uri) {
        (Method::CallTool, Some(tool), _) => (Some("gen_ai.tool.name"), Some(tool)),
        (Method::GetPrompt, Some(prompt), _) => (Some("gen_ai.prompt.name"), Some(prompt)),
        (_, _, Some(uri)) => (Some("mcp.resource.uri"), Some(uri)),
        _ => (None, None),
    };
    let target = &mut record.target;
    target.key = key;
    target.names = matches!(request.method, Method::CallTool | Method::GetPrompt) && key.is_some();
    if let Some(text) = text {
        target.text.extend_from_slice(text.as_bytes());
    }
    let tool = request.method == Method::CallTool && key.is_some();
    record.shared = Some(kept.shared(request, tool));
    record.id = Some(match request.id {
        RequestId::Number(n) => span::Value::Decimal(*n),
        RequestId::String(s) => span::Value::Text(s.clone().into()),
    });
    if let Some(caller) = crate::audit::caller() {
        caller_attributes(&caller, &mut record.more);
    }
}

/// The most runs of shared attributes a relay keeps (a host's methods, each with and
/// without a tool's name, a few servers): past it, the oldest is let go.
const KEPT: usize = 16;

/// What a relay keeps for its requests' spans. The attributes a host's requests of
/// one method share — `mcp.method.name`, `mcp.protocol.version`, `network.transport`,
/// `mcp.session.id`, `gen_ai.operation.name`, `capable.server` — built once: a request
/// takes an `Arc` of them (and the exporter, seeing the same `Arc` again, copies their
/// encoding instead of encoding them again). A generator of ids of its own (seeded
/// from the thread's), and records to fill taken from the exporter's a few at a time.
#[derive(Debug)]
pub(crate) struct Kept {
    runs: Vec<(RunKey, Arc<[Attribute]>)>,
    /// The next to let go once `KEPT` are kept.
    next: usize,
    rng: fastrand::Rng,
    /// Boxes, as they go to the exporter and come back.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<Record>>,
}

impl Default for Kept {
    fn default() -> Kept {
        Kept {
            runs: Vec::new(),
            next: 0,
            rng: fastrand::Rng::new(),
            spare: Vec::new(),
        }
    }
}

/// What a run of shared attributes depends on, besides the session (one relay's).
#[derive(Debug)]
struct RunKey {
    method: Method,
    version: &'static str,
    tool: bool,
    server: Option<Arc<str>>,
}

impl RunKey {
    fn is(&self, request: &Request<'_>, tool: bool) -> bool {
        self.method == request.method
            && self.tool == tool
            && self.version == request.version
            && match (&self.server, request.server) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
    }
}

impl Kept {
    /// A span id: 8 random bytes, not all zero (the generator's whole range, its one
    /// zero made 1: a range it had to map would cost a multiplication an id).
    fn span_id(&mut self) -> [u8; 8] {
        self.rng.u64(..).max(1).to_be_bytes()
    }

    /// A trace id: 16 random bytes, not all zero (as [`Kept::span_id`]).
    fn trace_id(&mut self) -> [u8; 16] {
        self.rng.u128(..).max(1).to_be_bytes()
    }

    /// The shared attributes of `request` (`tool`: a tool call naming its tool).
    fn shared(&mut self, request: &Request<'_>, tool: bool) -> Arc<[Attribute]> {
        if let Some((_, run)) = self.runs.iter().find(|(key, _)| key.is(request, tool)) {
            return run.clone();
        }
        let method = request.method.as_str();
        let mut attributes = Vec::with_capacity(6);
        attributes.push(Attribute::text("mcp.method.name", method));
        attributes.push(Attribute::text("mcp.protocol.version", request.version));
        let session = SESSION.try_with(|s| {
            s.as_ref()
                .map(|s| s.hashed.get_or_init(|| hashed(&s.id).into()).clone())
        });
        let transport = if session.is_ok() { "tcp" } else { "pipe" };
        attributes.push(Attribute::text("network.transport", transport));
        if let Ok(Some(session)) = session {
            attributes.push(Attribute::text("mcp.session.id", session));
        }
        if tool {
            attributes.push(Attribute::text("gen_ai.operation.name", "execute_tool"));
        }
        if let Some(server) = request.server {
            attributes.push(Attribute::text("capable.server", server.clone()));
        }
        let run: Arc<[Attribute]> = attributes.into();
        let key = RunKey {
            method: request.method,
            version: request.version,
            tool,
            server: request.server.cloned(),
        };
        if self.runs.len() < KEPT {
            self.runs.push((key, run.clone()));
        } else {
            self.runs[self.next] = (key, run.clone());
            self.next = (self.next + 1) % KEPT;
        }
        run
    }
}

/// A host request's span, open until [`Traced::end`] (or dropped: the host gave up).
/// One not recorded (the sampler said no) still hands its context on upstream. A
/// recorded one is its record, boxed from the start: it moves with the request as a
/// pointer, and goes to the exporter as one.
pub(crate) struct Traced {
    traces: Traces,
    /// The request span's own context.
    context: SpanContext,
    /// The upstream call's span id.
    child: [u8; 8],
    record: Option<Box<Record>>,
    /// A `tools/call` (or a task's result): its result may say `isError`.
    tool_call: bool,
    ended: bool,
}

impl Traced {
    /// The params `params` with the upstream call's own context in `_meta`, its
    /// child span started now.
    pub fn upstream(&mut self, params: Forwarded) -> Forwarded {
        let child = SpanContext {
            span_id: self.child,
            ..self.context.clone()
        };
        if let Some(record) = &mut self.record {
            record.upstream = Some((child.span_id, span::now()));
        }
        params.with_trace(&child)
    }

    /// The server the request went to (many: once routed).
    pub fn server(&mut self, server: &str) {
        if let Some(record) = &mut self.record {
            let server = Arc::<str>::from(server);
            record.more.push(Attribute::text("capable.server", server));
        }
    }

    /// The policy refused it before it was sent.
    pub fn refused(mut self) {
        self.close("refused", vec![Attribute::text("error.type", "refused")]);
    }

    /// Ended with `answer`; the upstream call with it.
    pub fn end(mut self, answer: &Result<Payload, capable::Error>, audit: &Audit) {
        if self.record.is_none() {
            self.ended = true;
            return;
        }
        let mut attributes = Vec::new();
        let outcome = match answer {
            Ok(result) => {
                // Only a tool's result says `isError` (a search of the whole
                // result, saved for every other method).
                if self.tool_call && result.mentions("\"isError\":true") {
                    attributes.push(Attribute::text("error.type", "tool_error"));
                }
                "ok"
            }
            Err(e) => {
                match e {
                    capable::Error::Rpc { error, .. } => {
                        let code = error.code;
                        attributes.push(Attribute::int("rpc.jsonrpc.error_code", code));
                        attributes.push(Attribute::text("error.type", code.to_string()));
                    }
                    capable::Error::Violation(_) => {
                        let text = audit.scrub(&e.to_string()).into_owned();
                        attributes.push(Attribute::text("capable.violation", text));
                        attributes.push(Attribute::text("error.type", "violation"));
                    }
                    other => {
                        attributes.push(Attribute::text("error.type", other.kind().as_str()));
                    }
                }
                "error"
            }
        };
        self.close(outcome, attributes);
    }

    /// Both spans ended now with `outcome` and `extra` attributes, and queued as one
    /// record.
    fn close(&mut self, outcome: &'static str, extra: Vec<Attribute>) {
        self.ended = true;
        let Some(mut record) = self.record.take() else {
            return;
        };
        record.end = span::now();
        record.more.extend(extra);
        record.outcome = outcome;
        record.error = (outcome != "ok").then_some(outcome);
        self.traces.inner.exporter.submit(record);
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        if !self.ended {
            self.close(
                "cancelled",
                vec![Attribute::text("error.type", "cancelled")],
            );
        }
    }
}

/// What a span reads of a request's params (only when traces are on): borrowed from
/// their text where it can be.
#[derive(Default)]
pub(crate) struct TraceFields<'a> {
    pub name: Option<Cow<'a, str>>,
    pub uri: Option<Cow<'a, str>>,
    pub traceparent: Option<Cow<'a, str>>,
    pub tracestate: Option<Cow<'a, str>>,
}

impl<'a> TraceFields<'a> {
    /// Only the target of a `method` request (its member named by
    /// [`crate::forward::target_member`]).
    fn target(method: Method, target: Option<Cow<'a, str>>) -> TraceFields<'a> {
        match crate::forward::target_member(method) {
            Some("name") => TraceFields {
                name: target,
                ..TraceFields::default()
            },
            Some(_) => TraceFields {
                uri: target,
                ..TraceFields::default()
            },
            None => TraceFields::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_are_off_unless_asked_for() {
        let none = |_: &str| None;
        assert!(Traces::from_vars(false, none).unwrap().is_none());
        let disabled = |name: &str| match name {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://127.0.0.1:9".to_owned()),
            "OTEL_SDK_DISABLED" => Some("true".to_owned()),
            _ => None,
        };
        assert!(Traces::from_vars(false, disabled).unwrap().is_none());
    }

    #[test]
    fn header_values_are_the_secrets() {
        let headers = |name: &str| {
            (name == "OTEL_EXPORTER_OTLP_HEADERS")
                .then(|| "authorization=Bearer s3cret, x-team = blue".to_owned())
        };
        assert_eq!(
            Traces::header_values(headers),
            ["Bearer s3cret".to_owned(), "blue".to_owned()]
        );
        let encoded = |name: &str| {
            (name == "OTEL_EXPORTER_OTLP_TRACES_HEADERS").then(|| "authorization=a%20b".to_owned())
        };
        let values = Traces::header_values(encoded);
        assert!(values.contains(&"a b".to_owned()) && values.contains(&"a%20b".to_owned()));
    }

    #[test]
    fn the_resource_is_the_service_and_the_attributes_named() {
        let text = |a: &Attribute| match &a.value {
            span::Value::Text(t) => (a.key, t.as_str().to_owned()),
            span::Value::Int(i) | span::Value::Decimal(i) => (a.key, i.to_string()),
        };
        let plain: Vec<_> = resource(&|_: &str| None).iter().map(text).collect();
        assert_eq!(plain[0], ("service.name", "capable-bridge".to_owned()));
        let named = |name: &str| match name {
            "OTEL_RESOURCE_ATTRIBUTES" => {
                Some("deployment.environment=prod%20eu,service.name=theirs".to_owned())
            }
            "OTEL_SERVICE_NAME" => Some("gateway".to_owned()),
            _ => None,
        };
        let named: Vec<_> = resource(&named).iter().map(text).collect();
        assert!(named.contains(&("service.name", "gateway".to_owned())));
        assert!(named.contains(&("deployment.environment", "prod eu".to_owned())));
        assert!(!named
            .iter()
            .any(|(_, v)| v == "theirs" || v == "capable-bridge"));
    }

    #[test]
    fn a_session_id_is_never_shown_as_it_is() {
        let shown = hashed("0123456789abcdef0123456789abcdef");
        assert_eq!(shown.len(), 16);
        assert!(!"0123456789abcdef0123456789abcdef".contains(&shown));
    }
}
