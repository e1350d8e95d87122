//! A collector for the traces' tests: a loopback OTLP/HTTP receiver (`POST
//! /v1/traces`, protobuf) that decodes every export with the official OTLP protobuf
//! definitions (`opentelemetry-proto`) and keeps its spans; the same over gRPC
//! (`grpc.rs`: the generated `TraceService` on tonic); or one that takes the
//! connection and never answers (a collector that hangs).
#![allow(dead_code)]

mod grpc;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// A span as the collector got it, with its attributes as text.
#[derive(Clone, Debug)]
pub struct Got {
    pub name: String,
    pub kind: i32,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    pub attributes: Vec<(String, String)>,
}

impl Got {
    /// The attribute `key`, as text.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// `SPAN_KIND_SERVER`, `SPAN_KIND_CLIENT`.
pub const SERVER: i32 = 2;
pub const CLIENT: i32 = 3;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn got(span: Span) -> Got {
    let attributes = span
        .attributes
        .into_iter()
        .map(|kv| {
            let value = match kv.value.and_then(|v| v.value) {
                Some(Any::StringValue(s)) => s,
                Some(Any::IntValue(i)) => i.to_string(),
                Some(Any::BoolValue(b)) => b.to_string(),
                Some(Any::DoubleValue(d)) => d.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key, value)
        })
        .collect();
    Got {
        name: span.name,
        kind: span.kind,
        trace_id: hex(&span.trace_id),
        span_id: hex(&span.span_id),
        parent_span_id: hex(&span.parent_span_id),
        attributes,
    }
}

/// Every span of an export.
fn spans_of(request: ExportTraceServiceRequest) -> impl Iterator<Item = Got> {
    request
        .resource_spans
        .into_iter()
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans)
        .map(got)
}

/// A collector on a loopback port.
pub struct Collector {
    pub port: u16,
    spans: Arc<Mutex<Vec<Got>>>,
    /// The raw requests' header blocks (to check what the exporter sent).
    pub headers: Arc<Mutex<Vec<String>>>,
}

impl Collector {
    /// One that answers every export `200`, keeping its spans.
    pub fn start() -> Collector {
        Collector::serve(false)
    }

    /// One that receives OTLP/gRPC (`TraceService/Export`), keeping every span.
    pub fn grpc() -> Collector {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let port = grpc::serve(spans.clone());
        Collector {
            port,
            spans,
            headers: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// One that takes every connection and never reads or answers.
    pub fn hanging() -> Collector {
        Collector::serve(true)
    }

    fn serve(hang: bool) -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the collector");
        let port = listener.local_addr().unwrap().port();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let headers = Arc::new(Mutex::new(Vec::new()));
        let (kept, kept_headers) = (spans.clone(), headers.clone());
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().map_while(Result::ok) {
                if hang {
                    held.push(stream);
                    continue;
                }
                let (kept, kept_headers) = (kept.clone(), kept_headers.clone());
                std::thread::spawn(move || {
                    let _ = receive(stream, &kept, &kept_headers);
                });
            }
        });
        Collector {
            port,
            spans,
            headers,
        }
    }

    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` for it.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/v1/traces", self.port)
    }

    /// `OTEL_EXPORTER_OTLP_ENDPOINT` for it (gRPC names no path).
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The spans got so far.
    pub fn spans(&self) -> Vec<Got> {
        self.spans.lock().unwrap().clone()
    }

    /// The spans once `done` says yes of them (within 20 s).
    #[track_caller]
    pub fn spans_until(&self, done: impl Fn(&[Got]) -> bool) -> Vec<Got> {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            assert!(Instant::now() < until, "the collector got only {spans:#?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Serves one connection's exports (HTTP/1.1, kept alive).
fn receive(
    stream: TcpStream,
    spans: &Mutex<Vec<Got>>,
    headers: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let mut head = String::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            head.push_str(&line);
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        headers.lock().unwrap().push(head);
        let request = ExportTraceServiceRequest::decode(body.as_slice())
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        spans.lock().unwrap().extend(spans_of(request));
        writer.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n",
        )?;
    }
}
