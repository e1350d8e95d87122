//! How spans leave the bridge: a request hands its ended spans, as one record, to a
//! bounded queue (spans that find it full are dropped and counted, never waited for);
//! one thread of the exporter's own takes them in batches, encodes each batch as one OTLP request
//! (`encode.rs`) and sends it over HTTP/protobuf or gRPC to the collector the standard
//! variables name. Every span that never reached the collector is counted
//! (`capable_bridge_spans_dropped_total`).
//!
//! | variable | what |
//! |---|---|
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` | the collector (`/v1/traces` is added for HTTP); setting it turns traces on |
//! | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | the traces' URL itself; setting it turns traces on |
//! | `OTEL_EXPORTER_OTLP_PROTOCOL` (or `…_TRACES_PROTOCOL`) | `http/protobuf` (the default) or `grpc` |
//! | `OTEL_EXPORTER_OTLP_HEADERS` (or `…_TRACES_HEADERS`) | `key=value,…` sent with every export: secrets, never written anywhere |
//! | `OTEL_EXPORTER_OTLP_TIMEOUT` (or `…_TRACES_TIMEOUT`) | how long one export may take, in ms (10 s) |
//! | `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` | the batch: spans waiting at most (2048), how often a batch leaves (5 s), its size (512) |
//! | `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` | who the spans are from (`capable-bridge`) |
//! | `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG` | which requests are recorded (`sampler.rs`) |
//! | `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none` | no traces unless `--otlp` says so |
//!
//! A batch leaves when the delay is up, or as soon as a batch's worth waits. A batch
//! the collector refused, or that found no collector, is counted as dropped; a
//! collector that hangs holds up only the exporter's thread (each export gives up
//! after the timeout), while the queue fills and what comes after it is dropped.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes};
use tokio::sync::{oneshot, Notify};

use super::encode;
use super::span::Record;

/// The most records kept to be used again.
const POOL: usize = 1024;
/// How many a relay takes from them at a time.
const SPARE: usize = 16;
/// The spans waiting at most, unless `OTEL_BSP_MAX_QUEUE_SIZE` says otherwise.
const QUEUE: usize = 2048;
/// The most `OTEL_BSP_MAX_QUEUE_SIZE` may ask for.
const MAX_QUEUE: usize = 1 << 16;
/// A batch's spans at most, unless `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` says otherwise.
const BATCH: usize = 512;
/// How often a batch leaves, unless `OTEL_BSP_SCHEDULE_DELAY` says otherwise.
const DELAY: Duration = Duration::from_secs(5);
/// How long one export may take, unless `OTEL_EXPORTER_OTLP_TIMEOUT` says otherwise.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The longest delay or timeout taken (an hour).
const MAX_WAIT: u64 = 3_600_000;
/// The most headers taken from the variables.
const MAX_HEADERS: usize = 64;
/// The gRPC method a collector's trace receiver answers.
const EXPORT: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

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
    /// Ended spans queued (or about to be) and not yet taken for a batch: never more
    /// than the queue's size.
    waiting: AtomicUsize,
    /// Spans that never reached the collector.
    pub dropped: AtomicU64,
}

/// What a request and the exporter's thread share.
#[derive(Debug, Default)]
struct Shared {
    counts: Counts,
    /// Records sent, to be used again (boxes made on one thread and let go on another
    /// cost the allocator more than the rest of a span): at most `POOL`. Boxes, as
    /// they go through the queue and with the request.
    #[allow(clippy::vec_box)]
    pool: Mutex<Vec<Box<Record>>>,
    /// Wakes the thread: a batch's worth waits, or the bridge is stopping.
    wake: Notify,
    stop: AtomicBool,
}

/// The `key=value,…` pairs of a W3C-baggage-style variable, their values
/// percent-decoded; a pair without `=` is left out.
pub(crate) fn pairs(text: &str) -> impl Iterator<Item = (String, String)> + '_ {
    text.split(',').filter_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        let key = key.trim();
        let value = percent_encoding::percent_decode_str(value.trim()).decode_utf8_lossy();
        (!key.is_empty()).then(|| (key.to_owned(), value.into_owned()))
    })
}

/// Milliseconds from variable `name` (at most an hour), or `default`.
fn millis(var: &impl Fn(&str) -> Option<String>, name: &str, default: Duration) -> Duration {
    var(name)
        .and_then(|n| n.trim().parse::<u64>().ok())
        .map_or(default, |ms| Duration::from_millis(ms.min(MAX_WAIT)))
}

/// Where and how batches go, as the variables say.
enum Sender {
    Http {
        client: reqwest::Client,
        url: reqwest::Url,
        headers: reqwest::header::HeaderMap,
    },
    Grpc {
        endpoint: Box<tonic::transport::Endpoint>,
        metadata: tonic::metadata::MetadataMap,
    },
}

impl Sender {
    fn from_env(
        protocol: Protocol,
        var: &impl Fn(&str) -> Option<String>,
        timeout: Duration,
    ) -> Result<Sender, String> {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let traces = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        let base = set("OTEL_EXPORTER_OTLP_ENDPOINT");
        // The general headers, then the traces' own (the same key: theirs wins).
        let mut headers: Vec<(String, String)> = Vec::new();
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            for (key, value) in var(name).as_deref().map(pairs).into_iter().flatten() {
                headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&key));
                headers.push((key, value));
            }
        }
        headers.truncate(MAX_HEADERS);
        // An error names the variable and the header's name, never its value.
        let bad_header = |key: &str| {
            format!("OTEL_EXPORTER_OTLP_HEADERS: the header {key:?} cannot be sent as given")
        };
        match protocol {
            Protocol::HttpProtobuf => {
                let url = match (traces, base) {
                    (Some(url), _) => url,
                    (None, Some(base)) => {
                        format!("{}/v1/traces", base.trim().trim_end_matches('/'))
                    }
                    (None, None) => "http://localhost:4318/v1/traces".to_owned(),
                };
                let url = reqwest::Url::parse(url.trim())
                    .map_err(|e| format!("the OTLP endpoint is not a URL: {e}"))?;
                let mut map = reqwest::header::HeaderMap::new();
                for (key, value) in &headers {
                    let name = reqwest::header::HeaderName::from_bytes(key.as_bytes())
                        .map_err(|_| bad_header(key))?;
                    let value = reqwest::header::HeaderValue::from_str(value)
                        .map_err(|_| bad_header(key))?;
                    map.insert(name, value);
                }
                map.insert(
                    reqwest::header::CONTENT_TYPE,
                    reqwest::header::HeaderValue::from_static("application/x-protobuf"),
                );
                let client = reqwest::Client::builder()
                    .timeout(timeout)
                    .build()
                    .map_err(|e| format!("the OTLP exporter could not be set up: {e}"))?;
                Ok(Sender::Http {
                    client,
                    url,
                    headers: map,
                })
            }
            Protocol::Grpc => {
                let url = traces
                    .or(base)
                    .unwrap_or_else(|| "http://localhost:4317".to_owned());
                let endpoint = tonic::transport::Endpoint::from_shared(url.trim().to_owned())
                    .map_err(|e| format!("the OTLP endpoint is not a URL: {e}"))?
                    .timeout(timeout)
                    .connect_timeout(timeout);
                let mut metadata = tonic::metadata::MetadataMap::new();
                for (key, value) in &headers {
                    let name = tonic::metadata::MetadataKey::from_bytes(
                        key.to_ascii_lowercase().as_bytes(),
                    )
                    .map_err(|_| bad_header(key))?;
                    let value = value.parse().map_err(|_| bad_header(key))?;
                    metadata.insert(name, value);
                }
                Ok(Sender::Grpc {
                    endpoint: Box::new(endpoint),
                    metadata,
                })
            }
        }
    }
}

/// The sender, connected: on the exporter's thread.
enum Connected {
    Http {
        client: reqwest::Client,
        url: reqwest::Url,
        headers: reqwest::header::HeaderMap,
    },
    Grpc {
        client: tonic::client::Grpc<tonic::transport::Channel>,
        metadata: tonic::metadata::MetadataMap,
    },
}

impl Connected {
    /// Connects lazily (inside the exporter's runtime).
    fn new(sender: Sender) -> Connected {
        match sender {
            Sender::Http {
                client,
                url,
                headers,
            } => Connected::Http {
                client,
                url,
                headers,
            },
            Sender::Grpc { endpoint, metadata } => Connected::Grpc {
                client: tonic::client::Grpc::new(endpoint.connect_lazy()),
                metadata,
            },
        }
    }

    /// Sends one encoded request: whether the collector took it.
    async fn send(&mut self, body: Bytes, timeout: Duration) -> bool {
        let sent = async {
            match self {
                Connected::Http {
                    client,
                    url,
                    headers,
                } => {
                    let response = client
                        .post(url.clone())
                        .headers(headers.clone())
                        .body(body)
                        .send()
                        .await;
                    response.is_ok_and(|r| r.status().is_success())
                }
                Connected::Grpc { client, metadata } => {
                    if client.ready().await.is_err() {
                        return false;
                    }
                    let mut request = tonic::Request::new(body);
                    *request.metadata_mut() = metadata.clone();
                    let path = axum::http::uri::PathAndQuery::from_static(EXPORT);
                    client.unary(request, path, Raw).await.is_ok()
                }
            }
        };
        tokio::time::timeout(timeout, sent).await.unwrap_or(false)
    }
}

/// A gRPC codec for a message already encoded: sent as it is, the answer let go.
#[derive(Clone, Copy, Debug, Default)]
struct Raw;

impl tonic::codec::Codec for Raw {
    type Encode = Bytes;
    type Decode = ();
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl tonic::codec::Encoder for Raw {
    type Item = Bytes;
    type Error = tonic::Status;

    fn encode(
        &mut self,
        item: Bytes,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        dst.put(item);
        Ok(())
    }
}

impl tonic::codec::Decoder for Raw {
    type Item = ();
    type Error = tonic::Status;

    fn decode(
        &mut self,
        src: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<()>, tonic::Status> {
        src.advance(src.remaining());
        Ok(Some(()))
    }
}

/// The exporter: the queue's sending end, and what stops its thread.
#[derive(Debug)]
pub(crate) struct Exporter {
    queue: SyncSender<Box<Record>>,
    shared: Arc<Shared>,
    /// The spans waiting at most.
    cap: usize,
    batch: usize,
    /// Told when the thread has sent what it had, and stopped.
    done: Mutex<Option<oneshot::Receiver<()>>>,
}

/// What the exporter's thread is given.
struct Work {
    queue: Receiver<Box<Record>>,
    shared: Arc<Shared>,
    sender: Sender,
    resource: Vec<u8>,
    scope: Vec<u8>,
    batch: usize,
    delay: Duration,
    timeout: Duration,
    done: oneshot::Sender<()>,
}

impl Exporter {
    /// The exporter the variables configure, its thread started; `resource` and
    /// `scope` are their OTLP messages' bodies (`encode::resource`, `encode::scope`).
    pub fn start(
        protocol: Protocol,
        var: impl Fn(&str) -> Option<String>,
        resource: Vec<u8>,
        scope: Vec<u8>,
    ) -> Result<Exporter, String> {
        let timeout = match var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") {
            Some(_) => millis(&var, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", TIMEOUT),
            None => millis(&var, "OTEL_EXPORTER_OTLP_TIMEOUT", TIMEOUT),
        };
        let sender = Sender::from_env(protocol, &var, timeout)?;
        let count = |name: &str, default: usize| {
            var(name)
                .and_then(|n| n.trim().parse::<usize>().ok())
                .filter(|n| *n > 0)
                .unwrap_or(default)
        };
        let cap = count("OTEL_BSP_MAX_QUEUE_SIZE", QUEUE).min(MAX_QUEUE);
        let batch = count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", BATCH).min(cap);
        let delay = millis(&var, "OTEL_BSP_SCHEDULE_DELAY", DELAY);
        let (queue, taken) = sync_channel(cap);
        let shared = Arc::new(Shared::default());
        let (done, stopped) = oneshot::channel();
        let work = Work {
            queue: taken,
            shared: shared.clone(),
            sender,
            resource,
            scope,
            batch,
            delay,
            timeout,
            done,
        };
        std::thread::Builder::new()
            .name("capable-otlp".into())
            .spawn(move || work.run())
            .map_err(|e| format!("the OTLP exporter's thread could not start: {e}"))?;
        Ok(Exporter {
            queue,
            shared,
            cap,
            batch,
            done: Mutex::new(Some(stopped)),
        })
    }

    /// A record to fill: one sent before (taken into `spare` a few at a time, with one
    /// lock), or a new one.
    #[allow(clippy::vec_box)]
    pub fn record(&self, spare: &mut Vec<Box<Record>>) -> Box<Record> {
        if spare.is_empty() {
            if let Ok(mut pool) = self.shared.pool.lock() {
                let from = pool.len().saturating_sub(SPARE);
                spare.extend(pool.drain(from..));
            }
        }
        spare.pop().unwrap_or_default()
    }

    /// Queues a request's ended spans, or drops them (counted) when the queue has no
    /// room for them. The exporter's thread is woken only when a batch's worth waits.
    pub fn submit(&self, record: Box<Record>) {
        let counts = &self.shared.counts;
        let n = record.spans();
        // Room taken first: the channel (as many records as spans) never fills.
        let before = counts.waiting.fetch_add(n, Relaxed);
        if before + n > self.cap {
            counts.waiting.fetch_sub(n, Relaxed);
            counts.dropped.fetch_add(n as u64, Relaxed);
            return;
        }
        match self.queue.try_send(record) {
            Ok(()) => {
                if before < self.batch && before + n >= self.batch {
                    self.shared.wake.notify_one();
                }
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                counts.waiting.fetch_sub(n, Relaxed);
                counts.dropped.fetch_add(n as u64, Relaxed);
            }
        }
    }

    /// Spans that never reached the collector.
    pub fn dropped(&self) -> u64 {
        self.shared.counts.dropped.load(Relaxed)
    }

    /// What is waiting sent, for at most `within`; the thread stops.
    pub async fn shutdown(&self, within: Duration) {
        self.shared.stop.store(true, Relaxed);
        self.shared.wake.notify_one();
        let stopped = self.done.lock().ok().and_then(|mut d| d.take());
        if let Some(stopped) = stopped {
            let _ = tokio::time::timeout(within, stopped).await;
        }
    }
}

impl Work {
    /// The exporter's thread: a batch each time the delay is up or a batch's worth
    /// waits, until the bridge stops (then what waits is sent) or is gone.
    fn run(self) {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(self.export());
    }

    async fn export(self) {
        let Work {
            queue,
            shared,
            sender,
            resource,
            scope,
            batch,
            delay,
            timeout,
            done,
        } = self;
        let mut sender = Connected::new(sender);
        let mut records = Vec::with_capacity(batch.min(QUEUE));
        let mut buffers = encode::Buffers::default();
        let mut body = Vec::new();
        loop {
            // Until a batch's worth waits or the delay is up: a wake-up left over from
            // the last batch (its worth was reached while it was being sent) is not
            // one, or every other batch would leave short.
            let due = tokio::time::Instant::now() + delay;
            let stopping = loop {
                let stopping = shared.stop.load(Relaxed);
                if stopping || shared.counts.waiting.load(Relaxed) >= batch {
                    break stopping;
                }
                if tokio::time::timeout_at(due, shared.wake.notified())
                    .await
                    .is_err()
                {
                    break shared.stop.load(Relaxed);
                }
            };
            let mut gone = false;
            loop {
                records.clear();
                // Spans, a batch's worth at most (a record's two may go one over).
                let mut n = 0;
                while n < batch {
                    match queue.try_recv() {
                        Ok(record) => {
                            n += record.spans();
                            records.push(record);
                        }
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => {
                            gone = true;
                            break;
                        }
                    }
                }
                if n == 0 {
                    break;
                }
                let _ = shared
                    .counts
                    .waiting
                    .fetch_update(Relaxed, Relaxed, |w| Some(w.saturating_sub(n)));
                let at = encode::request(&resource, &scope, &records, &mut buffers, &mut body);
                // What the records hold let go here, the boxes kept for more.
                for record in &mut records {
                    record.clear();
                }
                if let Ok(mut pool) = shared.pool.lock() {
                    let room = POOL.saturating_sub(pool.len());
                    pool.extend(records.drain(..).take(room));
                }
                records.clear();
                let capacity = body.capacity();
                let whole = Bytes::from(std::mem::take(&mut body));
                if !sender.send(whole.slice(at..), timeout).await {
                    shared.counts.dropped.fetch_add(n as u64, Relaxed);
                }
                // The batch's buffer back once the HTTP client let go of it, for the
                // next one: a batch's worth allocated and let go each time costs the
                // allocator more than its size suggests (a large free tidies the heap).
                body = match whole.try_into_mut() {
                    Ok(mut kept) => {
                        kept.clear();
                        Vec::from(kept)
                    }
                    Err(_) => Vec::with_capacity(capacity),
                };
                // Another batch now only if a whole one waits (or the bridge stops):
                // what came in while this one was sent waits for its batch.
                let more = stopping || shared.counts.waiting.load(Relaxed) >= batch;
                if n < batch || !more {
                    break;
                }
            }
            if gone || stopping {
                break;
            }
        }
        let _ = done.send(());
    }
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

    #[test]
    fn the_endpoint_and_headers_are_the_variables() {
        let env = vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9/base/"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-team=blue,authorization=Bearer%20a",
            ),
            (
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                "Authorization=Bearer%20b",
            ),
        ]);
        let Ok(Sender::Http { url, headers, .. }) =
            Sender::from_env(Protocol::HttpProtobuf, &env, TIMEOUT)
        else {
            panic!("no HTTP sender");
        };
        assert_eq!(url.as_str(), "http://127.0.0.1:9/base/v1/traces");
        assert_eq!(headers["x-team"], "blue");
        assert_eq!(headers["authorization"], "Bearer b");
        assert_eq!(headers["content-type"], "application/x-protobuf");

        let secret = vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "bad header=s3cret%0A"),
        ]);
        for protocol in [Protocol::HttpProtobuf, Protocol::Grpc] {
            let Err(why) = Sender::from_env(protocol, &secret, TIMEOUT) else {
                panic!("a header that cannot be sent was taken");
            };
            assert!(
                why.contains("bad header") && !why.contains("s3cret"),
                "{why}"
            );
        }
    }
}
