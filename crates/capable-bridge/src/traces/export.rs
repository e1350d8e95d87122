//! How spans leave the bridge: the OTLP exporter the standard variables name, behind
//! the SDK's batch processor (its own thread), behind a bound of our own that drops a
//! span rather than let it wait — and counts every span that never reached the
//! collector (`capable_bridge_spans_dropped_total`).
//!
//! | variable | what |
//! |---|---|
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` | the collector (`/v1/traces` is added for HTTP); setting it turns traces on |
//! | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | the traces' URL itself; setting it turns traces on |
//! | `OTEL_EXPORTER_OTLP_PROTOCOL` (or `…_TRACES_PROTOCOL`) | `http/protobuf` (the default) or `grpc` |
//! | `OTEL_EXPORTER_OTLP_HEADERS` (or `…_TRACES_HEADERS`) | `key=value,…` sent with every export: secrets, never written anywhere |
//! | `OTEL_EXPORTER_OTLP_TIMEOUT` | how long one export may take (10 s) |
//! | `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` | the batch: spans waiting at most (2048), how often a batch leaves (5 s), its size (512) |
//! | `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` | who the spans are from (`capable-bridge`) |
//! | `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none` | no traces unless `--otlp` says so |
//!
//! A request only ever hands its ended span to a bounded queue: when the queue is full
//! (a collector slow or down, the batch not gone yet) the span is dropped and
//! counted. A batch the collector refused, or that found no collector, is counted too.
//! No export happens on a request's task.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Span, SpanData, SpanExporter, SpanProcessor,
};
use opentelemetry_sdk::Resource;

/// The spans waiting at most, unless `OTEL_BSP_MAX_QUEUE_SIZE` says otherwise.
const QUEUE: usize = 2048;
/// The most `OTEL_BSP_MAX_QUEUE_SIZE` may ask for.
const MAX_QUEUE: usize = 1 << 16;

/// The OTLP protocols an exporter speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf`: a POST of the protobuf message to `…/v1/traces`.
    HttpProtobuf,
    /// `grpc`: the collector's `TraceService/Export`.
    Grpc,
}

impl Protocol {
    /// The protocol `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` (or
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`) names, `http/protobuf` when neither is set.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Protocol, String> {
        let named = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
        match named.as_deref().map(str::trim) {
            None | Some("" | "http/protobuf") => Ok(Protocol::HttpProtobuf),
            Some("grpc") => Ok(Protocol::Grpc),
            Some(other) => Err(format!(
                "OTEL_EXPORTER_OTLP_PROTOCOL={other:?} is not one capable speaks: \
                 give http/protobuf or grpc"
            )),
        }
    }
}

/// The counts the exporter keeps: spans waiting, and spans lost.
#[derive(Debug, Default)]
pub struct Counts {
    /// Ended spans handed to the batch and not yet sent.
    waiting: AtomicUsize,
    /// Spans that never reached the collector.
    pub dropped: AtomicU64,
}

/// The batch processor, behind a bound it never reaches: a span past `cap` waiting is
/// dropped here (counted), so the batch's own queue is never full and a request never
/// waits.
#[derive(Debug)]
pub struct Bounded {
    inner: BatchSpanProcessor,
    counts: Arc<Counts>,
    cap: usize,
}

impl SpanProcessor for Bounded {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        let admitted = self
            .counts
            .waiting
            .fetch_update(Relaxed, Relaxed, |n| (n < self.cap).then_some(n + 1));
        match admitted {
            Ok(_) => self.inner.on_end(span),
            Err(_) => {
                self.counts.dropped.fetch_add(1, Relaxed);
            }
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The exporter, counting: a batch leaves the waiting spans as it is taken, and is
/// counted dropped when it did not arrive.
#[derive(Debug)]
struct Counting<E> {
    inner: E,
    counts: Arc<Counts>,
}

impl<E: SpanExporter> SpanExporter for Counting<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        let _ = self
            .counts
            .waiting
            .fetch_update(Relaxed, Relaxed, |w| Some(w.saturating_sub(n)));
        let sent = self.inner.export(batch).await;
        if sent.is_err() {
            self.counts.dropped.fetch_add(n as u64, Relaxed);
        }
        sent
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The bounded batch in front of the OTLP exporter of `protocol`, configured by the
/// standard variables. Built inside the bridge's runtime (the gRPC client lives on it).
pub fn processor(
    protocol: Protocol,
    var: impl Fn(&str) -> Option<String>,
) -> Result<(Bounded, Arc<Counts>), String> {
    let built = match protocol {
        Protocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build(),
        Protocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .build(),
    };
    // The builder's error names what was wrong, never a header's value.
    let exporter = built.map_err(|e| format!("the OTLP exporter could not be set up: {e}"))?;
    let cap = var("OTEL_BSP_MAX_QUEUE_SIZE")
        .and_then(|n| n.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(QUEUE)
        .min(MAX_QUEUE);
    let counts = Arc::new(Counts::default());
    let exporter = Counting {
        inner: exporter,
        counts: counts.clone(),
    };
    // The other OTEL_BSP_* are read by the builder's defaults.
    let config = BatchConfigBuilder::default()
        .with_max_queue_size(cap)
        .build();
    let inner = BatchSpanProcessor::builder(exporter)
        .with_batch_config(config)
        .build();
    let bounded = Bounded {
        inner,
        counts: counts.clone(),
        cap,
    };
    Ok((bounded, counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_protocol_is_http_unless_grpc_is_named() {
        assert_eq!(Protocol::from_env(vars(&[])), Ok(Protocol::HttpProtobuf));
        let grpc = vars(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
        assert_eq!(Protocol::from_env(grpc), Ok(Protocol::Grpc));
        // The traces' own variable wins over the general one.
        let both = vars(&[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
        ]);
        assert_eq!(Protocol::from_env(both), Ok(Protocol::HttpProtobuf));
        let json = vars(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]);
        assert!(Protocol::from_env(json).is_err());
    }
}
