//! W3C trace context across the bridge: taken from the caller (`params._meta`'s
//! `traceparent` and `tracestate`, as MCP's conventions carry it; over HTTP the
//! `traceparent` header too), and handed upstream as the upstream call's own
//! (`_meta`, for every server).
//!
//! A header's context is moved into the body's `_meta` where the listener reads the
//! body, so the relay has one place to look; a `_meta` that has its own wins (it is
//! the request's, a header may be a whole batch's).

use bytes::Bytes;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TraceFlags};
use opentelemetry::Context;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::Value;

/// The longest `traceparent` taken (a version-00 one is 55 characters; a later
/// version may add to it).
const MAX_PARENT: usize = 256;
/// The longest `tracestate` taken (W3C: 32 members of at most 256 each; 512 is what a
/// propagator is asked to keep).
const MAX_STATE: usize = 512;

/// The context `traceparent` (and `tracestate`) name; the empty context when they name
/// none a W3C propagator accepts. Read straight from the two strings (no map).
pub fn parent(traceparent: &str, tracestate: Option<&str>) -> Context {
    if traceparent.len() > MAX_PARENT {
        return Context::new();
    }
    let carrier = Carrier {
        traceparent,
        tracestate: tracestate.filter(|s| s.len() <= MAX_STATE),
    };
    TraceContextPropagator::new().extract_with_context(&Context::new(), &carrier)
}

/// The two fields a W3C propagator reads.
struct Carrier<'a> {
    traceparent: &'a str,
    tracestate: Option<&'a str>,
}

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(self.traceparent),
            "tracestate" => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// The `traceparent` (and `tracestate`, when not empty) of the span of `cx`, written
/// as a W3C propagator writes them (version 00, the sampled flag); an empty
/// `traceparent` for a context of no valid span.
pub fn of(cx: &Context) -> (String, Option<String>) {
    let span = cx.span();
    let context = span.span_context();
    if !context.is_valid() {
        return (String::new(), None);
    }
    let flags = context.trace_flags() & TraceFlags::SAMPLED;
    let parent = format!(
        "00-{}-{}-{:02x}",
        context.trace_id(),
        context.span_id(),
        flags
    );
    let state = context.trace_state().header();
    (parent, (!state.is_empty()).then_some(state))
}

/// `body` with the HTTP request's `traceparent` (and `tracestate`) in the `_meta` of
/// each request in it that has none of its own; as it came when none needed it, or it
/// is not JSON the listener would take (the listener says why, as without traces).
pub fn into_body(body: Bytes, traceparent: &str, tracestate: Option<&str>) -> Bytes {
    let valid = |s: &str, max: usize| {
        s.len() <= max && s.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
    };
    if !valid(traceparent, MAX_PARENT) || body.len() > 64 << 20 {
        return body;
    }
    let tracestate = tracestate.filter(|s| valid(s, MAX_STATE));
    let Ok(mut message) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    let mut changed = false;
    let mut add = |request: &mut Value| {
        let Some(request) = request.as_object_mut() else {
            return;
        };
        if !request.contains_key("method") || !request.contains_key("id") {
            return;
        }
        let params = request
            .entry("params")
            .or_insert_with(|| Value::Object(Default::default()));
        let Some(params) = params.as_object_mut() else {
            return;
        };
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Default::default()));
        let Some(meta) = meta.as_object_mut() else {
            return;
        };
        if meta.contains_key("traceparent") {
            return;
        }
        meta.insert("traceparent".into(), traceparent.into());
        if let Some(state) = tracestate {
            meta.insert("tracestate".into(), state.into());
        }
        changed = true;
    };
    match &mut message {
        Value::Array(batch) => batch.iter_mut().for_each(&mut add),
        one => add(one),
    }
    match changed {
        true => serde_json::to_vec(&message).map_or(body, Bytes::from),
        false => body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn a_parent_is_read_and_written_back_as_it_came() {
        let cx = parent(PARENT, Some("k=v"));
        let span = cx.span().span_context().clone();
        assert!(span.is_valid() && span.is_remote());
        assert_eq!(
            span.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert_eq!(of(&cx), (PARENT.to_owned(), Some("k=v".to_owned())));
    }

    #[test]
    fn a_context_is_written_as_the_w3c_propagator_writes_it() {
        for (p, state) in [
            (PARENT, Some("k=v,a=b")),
            (PARENT.replace("-01", "-00").as_str(), None),
        ] {
            let cx = parent(p, state);
            let mut carrier = HashMap::new();
            TraceContextPropagator::new().inject_context(&cx, &mut carrier);
            let theirs = (
                carrier.remove("traceparent").unwrap_or_default(),
                carrier.remove("tracestate").filter(|s| !s.is_empty()),
            );
            assert_eq!(of(&cx), theirs);
        }
        assert_eq!(of(&Context::new()), (String::new(), None));
    }

    #[test]
    fn a_parent_that_is_not_w3c_is_none() {
        for bad in ["", "00-zz-b7ad6b7169203331-01", &"0".repeat(10_000)] {
            let cx = parent(bad, None);
            assert!(!cx.span().span_context().is_valid(), "{bad:.20}");
        }
    }

    #[test]
    fn a_header_goes_into_the_meta_of_requests_without_one() {
        let body = Bytes::from_static(
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"traceparent":"own"}}},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#,
        );
        let out: Value = serde_json::from_slice(&into_body(body, PARENT, None)).unwrap();
        assert_eq!(out[0]["params"]["_meta"]["traceparent"], PARENT);
        assert_eq!(out[1]["params"]["_meta"]["traceparent"], "own");
        assert!(
            out[2].get("params").is_none(),
            "a notification is left alone"
        );
    }

    #[test]
    fn a_body_that_is_no_json_is_left_as_it_came() {
        let body = Bytes::from_static(b"{not json");
        assert_eq!(into_body(body.clone(), PARENT, None), body);
    }
}
