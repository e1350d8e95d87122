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
//! request costs one branch on an `Option`. On, a span is built and ended on the
//! request's task (a few allocations) and handed to a bounded queue: nothing waits for
//! the collector.

mod context;
mod export;

use std::borrow::Cow;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use capable::internal::auth::resource::Caller;
use capable::internal::jsonrpc::{Payload, RequestId};
use capable::internal::Method;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;

pub use context::into_body;
pub use export::Protocol;

use crate::audit::Audit;
use crate::forward::Forwarded;

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

/// The bridge's traces: where spans go, and how many never got there. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Traces {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    counts: Arc<export::Counts>,
}

impl Traces {
    /// The traces the environment asks for: on when `explicit` (`--otlp`), or when an
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` names a
    /// collector (unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`);
    /// `None` when off. Built inside the bridge's runtime (a gRPC exporter lives on it).
    /// An error says which variable is wrong; it never holds a header's value.
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
        let (processor, counts) = export::processor(protocol, &var)?;
        let mut resource = Resource::builder();
        if !set("OTEL_SERVICE_NAME") {
            resource = resource.with_service_name("capable-bridge");
        }
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource.build())
            .build();
        let tracer = provider.tracer("capable-bridge");
        Ok(Some(Traces {
            inner: Arc::new(Inner {
                provider,
                tracer,
                counts,
            }),
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
            headers
                .split(',')
                .filter_map(|pair| Some(pair.split_once('=')?.1.trim().to_owned()))
                .filter(|v| !v.is_empty())
                .collect::<Vec<_>>()
        })
        .collect()
    }

    /// Spans that never reached the collector: dropped while the queue was full, or in
    /// a batch the collector refused or never got.
    pub fn dropped(&self) -> u64 {
        self.inner.counts.dropped.load(Relaxed)
    }

    /// What is waiting sent, for at most `within`; off the runtime's thread.
    pub async fn shutdown(&self, within: Duration) {
        let inner = self.inner.clone();
        let flushed = tokio::task::spawn_blocking(move || {
            let _ = inner.provider.shutdown_with_timeout(within);
        });
        let _ = tokio::time::timeout(within + Duration::from_millis(100), flushed).await;
    }

    /// The span of a host's request (its parent: the caller's `traceparent` in
    /// `params._meta`, when there is one). Its attributes are built once, of what the
    /// relay already has (the method, the id, the version, the params' members), each
    /// a static or shared string: the upstream call's span takes the same ones.
    pub(crate) fn request(&self, request: Request<'_>) -> Traced {
        let read = request.params.trace_fields(request.method);
        let parent = match read.traceparent.as_deref() {
            Some(traceparent) => context::parent(traceparent, read.tracestate.as_deref()),
            None => Context::new(),
        };
        let method = request.method.as_str();
        let target = match request.method {
            Method::CallTool | Method::GetPrompt => read.name.as_deref(),
            _ => None,
        };
        let name: Cow<'static, str> = match target {
            Some(target) => format!("{method} {target}").into(),
            None => method.into(),
        };
        let mut attributes = Vec::with_capacity(12);
        attributes.push(KeyValue::new("mcp.method.name", method));
        let id = match request.id {
            RequestId::Number(n) => n.to_string(),
            RequestId::String(s) => s.clone(),
        };
        attributes.push(KeyValue::new("jsonrpc.request.id", id));
        attributes.push(KeyValue::new("mcp.protocol.version", request.version));
        let session = SESSION.try_with(|s| {
            s.as_ref()
                .map(|s| s.hashed.get_or_init(|| hashed(&s.id).into()).clone())
        });
        let transport = if session.is_ok() { "tcp" } else { "pipe" };
        attributes.push(KeyValue::new("network.transport", transport));
        if let Ok(Some(session)) = session {
            attributes.push(KeyValue::new("mcp.session.id", session));
        }
        match (request.method, read.name) {
            (Method::CallTool, Some(tool)) => {
                attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
                attributes.push(KeyValue::new("gen_ai.tool.name", tool));
            }
            (Method::GetPrompt, Some(prompt)) => {
                attributes.push(KeyValue::new("gen_ai.prompt.name", prompt));
            }
            _ => {}
        }
        if let Some(uri) = read.uri {
            attributes.push(KeyValue::new("mcp.resource.uri", uri));
        }
        if let Some(caller) = crate::audit::caller() {
            caller_attributes(&caller, &mut attributes);
        }
        if let Some(server) = request.server {
            attributes.push(KeyValue::new("capable.server", Arc::<str>::from(server)));
        }
        let tracer = &self.inner.tracer;
        let span = tracer
            .span_builder(name.clone())
            .with_kind(SpanKind::Server)
            .with_attributes(attributes.clone())
            .start_with_context(tracer, &parent);
        Traced {
            cx: parent.with_span(span),
            tracer: tracer.clone(),
            name,
            attributes,
            upstream: None,
            ended: false,
        }
    }
}

/// `enduser.id` (the subject) and the client the token was issued to.
fn caller_attributes(caller: &Caller, attributes: &mut Vec<KeyValue>) {
    let subject = Arc::<str>::from(caller.subject.as_str());
    attributes.push(KeyValue::new("enduser.id", subject));
    if let Some(client) = &caller.client_id {
        let client = Arc::<str>::from(client.as_str());
        attributes.push(KeyValue::new("capable.caller.client_id", client));
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
    /// The one server behind (many: known once routed).
    pub server: Option<&'a str>,
}

/// A host request's span, open until [`Traced::end`] (or dropped: the host gave up).
pub(crate) struct Traced {
    cx: Context,
    tracer: SdkTracer,
    name: Cow<'static, str>,
    attributes: Vec<KeyValue>,
    upstream: Option<Context>,
    ended: bool,
}

impl Traced {
    /// The params `params` with the upstream call's own context in `_meta`, its
    /// child span started now.
    pub fn upstream(&mut self, params: Forwarded) -> Forwarded {
        let span = self
            .tracer
            .span_builder(self.name.clone())
            .with_kind(SpanKind::Client)
            .with_attributes(std::mem::take(&mut self.attributes))
            .start_with_context(&self.tracer, &self.cx);
        let cx = self.cx.with_span(span);
        let (parent, state) = context::of(&cx);
        self.upstream = Some(cx);
        params.with_trace(&parent, state.as_deref())
    }

    /// The server the request went to (many: once routed).
    pub fn server(&self, server: &str) {
        let server = KeyValue::new("capable.server", Arc::<str>::from(server));
        self.cx.span().set_attribute(server.clone());
        if let Some(upstream) = &self.upstream {
            upstream.span().set_attribute(server);
        }
    }

    /// The policy refused it before it was sent.
    pub fn refused(mut self) {
        self.close("refused", &[KeyValue::new("error.type", "refused")]);
    }

    /// Ended with `answer`; the upstream call with it.
    pub fn end(mut self, answer: &Result<Payload, capable::Error>, audit: &Audit) {
        let mut attributes = Vec::new();
        let outcome = match answer {
            Ok(result) => {
                if result.mentions("\"isError\":true") {
                    attributes.push(KeyValue::new("error.type", "tool_error"));
                }
                "ok"
            }
            Err(e) => {
                match e {
                    capable::Error::Rpc { error, .. } => {
                        attributes.push(KeyValue::new("rpc.jsonrpc.error_code", error.code));
                        attributes.push(KeyValue::new("error.type", error.code.to_string()));
                    }
                    capable::Error::Violation(_) => {
                        let text = audit.scrub(&e.to_string()).into_owned();
                        attributes.push(KeyValue::new("capable.violation", text));
                        attributes.push(KeyValue::new("error.type", "violation"));
                    }
                    other => {
                        attributes.push(KeyValue::new("error.type", other.kind().as_str()));
                    }
                }
                "error"
            }
        };
        self.close(outcome, &attributes);
    }

    fn close(&mut self, outcome: &'static str, attributes: &[KeyValue]) {
        self.ended = true;
        let contexts = self.upstream.take().into_iter().chain([self.cx.clone()]);
        for cx in contexts {
            let span = cx.span();
            span.set_attribute(KeyValue::new("capable.outcome", outcome));
            for a in attributes {
                span.set_attribute(a.clone());
            }
            if outcome != "ok" {
                span.set_status(Status::error(outcome));
            }
            span.end();
        }
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        if !self.ended {
            self.close("cancelled", &[KeyValue::new("error.type", "cancelled")]);
        }
    }
}

/// What a span reads of a request's params (only when traces are on): shared, as the
/// two spans' attributes keep them.
#[derive(Default)]
pub(crate) struct TraceFields {
    pub name: Option<Arc<str>>,
    pub uri: Option<Arc<str>>,
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
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
    }

    #[test]
    fn a_session_id_is_never_shown_as_it_is() {
        let shown = hashed("0123456789abcdef0123456789abcdef");
        assert_eq!(shown.len(), 16);
        assert!(!"0123456789abcdef0123456789abcdef".contains(&shown));
    }
}
