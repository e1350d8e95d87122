//! The counts as a scrape reads them: prometheus-client's registry, with the bridge's
//! atomics as one collector, written in the Prometheus text format (0.0.4). Series
//! that never counted anything are left out (a label set appears with its first
//! count), so a scrape is as long as what happened, never the product of every label.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use capable::internal::Method;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::{Metrics, CALLERS, EVENTS, KINDS, METHODS, OUTCOMES, REFUSALS, STATES};

/// The metrics of a bridge, ready to be written for a scrape.
pub struct Exposition {
    registry: Registry,
}

/// The `Content-Type` of what [`Exposition::text`] writes.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

impl Exposition {
    /// `metrics`, under the prefix `capable_bridge`.
    pub fn new(metrics: Arc<Metrics>) -> Exposition {
        let mut registry = Registry::with_prefix("capable_bridge");
        registry.register_collector(Box::new(metrics));
        Exposition { registry }
    }

    /// Every metric, as text.
    pub fn text(&self) -> String {
        let mut text = String::new();
        // Writing to a String fails only if a value cannot be written, which a
        // number and a known label cannot.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry);
        text
    }
}

/// The label of method slot `i`.
fn method_label(i: usize) -> &'static str {
    Method::ALL.get(i).map_or("other", |m| m.as_str())
}

impl Collector for Metrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let slots = self.slots();
        let counter = MetricType::Counter;

        let mut e = encoder.encode_descriptor(
            "requests",
            "Host requests sent on to a server, by method, server, outcome and class of caller.",
            None,
            counter,
        )?;
        for (at, n) in self.requests.iter().enumerate() {
            let n = n.load(Relaxed);
            if n == 0 {
                continue;
            }
            let (at, caller) = (at / CALLERS.len(), at % CALLERS.len());
            let (method, rest) = (at / (slots * OUTCOMES.len()), at % (slots * OUTCOMES.len()));
            let (server, outcome) = (rest / OUTCOMES.len(), rest % OUTCOMES.len());
            let labels = [
                ("method", method_label(method)),
                ("server", self.server_label(server)),
                ("outcome", OUTCOMES[outcome]),
                ("caller", CALLERS[caller]),
            ];
            ConstCounter::new(n).encode(e.encode_family(&labels)?)?;
        }

        let mut e = encoder.encode_descriptor(
            "request_duration_seconds",
            "From sending a host request on to its answer, by method and server.",
            None,
            MetricType::Histogram,
        )?;
        for (at, h) in self.latency.iter().enumerate() {
            if h.count() == 0 {
                continue;
            }
            let labels = [
                ("method", method_label(at / slots)),
                ("server", self.server_label(at % slots)),
            ];
            h.encode(e.encode_family(&labels)?)?;
        }

        let e = encoder.encode_descriptor(
            "requests_in_flight",
            "Host requests sent on and not answered yet.",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(self.in_flight.load(Relaxed)).encode(e)?;

        let mut e = encoder.encode_descriptor(
            "sessions",
            "Host tasks running: legacy sessions, and 2026-07-28 declarations (modern).",
            None,
            MetricType::Gauge,
        )?;
        for (kind, n) in KINDS.iter().zip(&self.sessions) {
            let labels = [("kind", *kind)];
            ConstGauge::new(n.load(Relaxed)).encode(e.encode_family(&labels)?)?;
        }

        let mut e = encoder.encode_descriptor(
            "upstream_up",
            "1 unless the server's latest state is a down one, for each server the bridge needs.",
            None,
            MetricType::Gauge,
        )?;
        let down = self.down();
        for (i, name) in self.named_slots() {
            if !self.needed[i].load(Relaxed) {
                continue;
            }
            let up = i64::from(!down.iter().any(|(d, _)| *d == name));
            let labels = [("server", name)];
            ConstGauge::new(up).encode(e.encode_family(&labels)?)?;
        }

        let mut e = encoder.encode_descriptor(
            "upstream_state_changes",
            "States the servers entered, in every session.",
            None,
            counter,
        )?;
        for (at, n) in self.changes.iter().enumerate() {
            let n = n.load(Relaxed);
            if n > 0 {
                let labels = [
                    ("server", self.server_label(at / STATES.len())),
                    ("state", STATES[at % STATES.len()]),
                ];
                ConstCounter::new(n).encode(e.encode_family(&labels)?)?;
            }
        }

        let mut e = encoder.encode_descriptor(
            "upstream_restarts",
            "Restarts of a server scheduled after a crash or a failed start.",
            None,
            counter,
        )?;
        for (at, name) in self.named_slots() {
            let labels = [("server", name)];
            let n = self.restarts.get(at).map_or(0, |n| n.load(Relaxed));
            ConstCounter::new(n).encode(e.encode_family(&labels)?)?;
        }

        let mut e = encoder.encode_descriptor(
            "upstream_token_refreshes",
            "The bridge's tokens at a server refreshed (ok) or not (failed).",
            None,
            counter,
        )?;
        for (at, n) in self.refreshes.iter().enumerate() {
            let n = n.load(Relaxed);
            if n > 0 {
                let outcome = if at % 2 == 0 { "ok" } else { "failed" };
                let labels = [("server", self.server_label(at / 2)), ("outcome", outcome)];
                ConstCounter::new(n).encode(e.encode_family(&labels)?)?;
            }
        }

        let mut e = encoder.encode_descriptor(
            "violations",
            "Contract violations of the servers, by server and method.",
            None,
            counter,
        )?;
        for (at, n) in self.violations.iter().enumerate() {
            let n = n.load(Relaxed);
            if n > 0 {
                let labels = [
                    ("server", self.server_label(at / METHODS)),
                    ("method", method_label(at % METHODS)),
                ];
                ConstCounter::new(n).encode(e.encode_family(&labels)?)?;
            }
        }

        let mut e = encoder.encode_descriptor(
            "notices",
            "Notices of the servers' side and the hosts', by level.",
            None,
            counter,
        )?;
        for (at, n) in self.notices.iter().enumerate() {
            let side = ["server", "host"][at / 2];
            let level = ["info", "warning"][at % 2];
            let labels = [("side", side), ("level", level)];
            ConstCounter::new(n.load(Relaxed)).encode(e.encode_family(&labels)?)?;
        }

        let mut e = encoder.encode_descriptor(
            "audit_events",
            "Audit lines by event, counted before a flood is summarised.",
            None,
            counter,
        )?;
        for (event, n) in EVENTS.iter().zip(&self.events) {
            let n = n.load(Relaxed);
            if n > 0 {
                let labels = [("event", *event)];
                ConstCounter::new(n).encode(e.encode_family(&labels)?)?;
            }
        }

        let mut e = encoder.encode_descriptor(
            "refusals",
            "Requests turned away before any server saw them, by reason.",
            None,
            counter,
        )?;
        for (reason, n) in REFUSALS.iter().zip(&self.refusals) {
            let labels = [("reason", *reason)];
            ConstCounter::new(n.load(Relaxed)).encode(e.encode_family(&labels)?)?;
        }

        let mut e = encoder.encode_descriptor(
            "reloads",
            "The config read anew, by outcome: applied, or failed (the config in force stayed).",
            None,
            counter,
        )?;
        for (outcome, n) in ["applied", "failed"].iter().zip(&self.reloads) {
            let labels = [("outcome", *outcome)];
            ConstCounter::new(n.load(Relaxed)).encode(e.encode_family(&labels)?)?;
        }
        if let Some(traces) = &self.traces {
            let e = encoder.encode_descriptor(
                "spans_dropped",
                "Spans that never reached the OTLP collector: dropped while the queue was full, or in a batch it refused or never got.",
                None,
                counter,
            )?;
            ConstCounter::new(traces.dropped()).encode(e)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_names_what_was_counted_in_the_text_format() {
        let m = Arc::new(Metrics::new([("docs".into(), true)]));
        let docs = m.server(Some("docs"));
        m.sent(Method::CallTool, docs, super::super::CallerClass::Anonymous)
            .answered(true);
        m.sent(Method::CallTool, docs, super::super::CallerClass::Anonymous)
            .answered(true);
        m.state("docs", "restarting");
        m.token_refresh("docs", true);
        m.token_refresh("docs", true);
        m.token_refresh("docs", false);
        let text = Exposition::new(m).text();
        let has = |line: &str| text.lines().any(|l| l == line);
        assert!(
            has(
                r#"capable_bridge_requests_total{method="tools/call",server="docs",outcome="ok",caller="anonymous"} 2"#
            ),
            "{text}"
        );
        assert!(has(
            r#"capable_bridge_request_duration_seconds_count{method="tools/call",server="docs"} 2"#
        ));
        assert!(has(r#"capable_bridge_upstream_up{server="docs"} 0"#));
        assert!(has(
            r#"capable_bridge_upstream_restarts_total{server="docs"} 1"#
        ));
        assert!(has(
            r#"capable_bridge_upstream_token_refreshes_total{server="docs",outcome="ok"} 2"#
        ));
        assert!(has(
            r#"capable_bridge_upstream_token_refreshes_total{server="docs",outcome="failed"} 1"#
        ));
        assert!(has("# TYPE capable_bridge_requests_total counter"));
        // Nothing else was asked: no other method's series.
        assert!(!text.contains("tools/list"));
    }
}
