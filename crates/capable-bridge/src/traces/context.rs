//! W3C trace context across the bridge: taken from the caller (`params._meta`'s
//! `traceparent` and `tracestate`, as MCP's conventions carry it; over HTTP the
//! `traceparent` header too), and handed upstream as the upstream call's own
//! (`_meta`, for every server).
//!
//! A header's context is moved into the body's `_meta` where the listener reads the
//! body, so the relay has one place to look; a `_meta` that has its own wins (it is
//! the request's, a header may be a whole batch's).

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

/// The longest `traceparent` taken (a version-00 one is 55 characters; a later
/// version may add to it).
const MAX_PARENT: usize = 256;
/// The longest `tracestate` taken (W3C: 32 members of at most 256 each; 512 is what a
/// propagator is asked to keep).
const MAX_STATE: usize = 512;
/// The most `tracestate` members kept (W3C).
const MAX_MEMBERS: usize = 32;

/// A span's place in a trace, as W3C trace context carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SpanContext {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// The `sampled` flag: the caller records its trace.
    pub sampled: bool,
    /// The `tracestate`, as a W3C propagator writes it back (`None` when empty).
    pub state: Option<Arc<str>>,
}

impl SpanContext {
    /// Its `traceparent`: version 00, and the sampled flag.
    pub fn traceparent(&self) -> Traceparent {
        let mut out = [0; 55];
        self.write_traceparent(&mut out);
        Traceparent(out)
    }

    /// Its `traceparent`, written into `out` (where it goes: no copy).
    pub fn write_traceparent(&self, out: &mut [u8; 55]) {
        *out = *b"00-________________________________-________________-00";
        hex(&self.trace_id, out, 3);
        hex(&self.span_id, out, 36);
        if self.sampled {
            out[54] = b'1';
        }
    }
}

/// A version-00 `traceparent`, written on the stack.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Traceparent([u8; 55]);

impl Traceparent {
    pub fn as_str(&self) -> &str {
        // Only ASCII is ever written.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl std::fmt::Debug for Traceparent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

impl PartialEq<&str> for Traceparent {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// `bytes` as lowercase hex digits, into `out` from `at` (one bounds check, not one
/// a byte).
fn hex<const N: usize>(bytes: &[u8; N], out: &mut [u8; 55], at: usize) {
    let Some(digits) = out.get_mut(at..at + 2 * N) else {
        return;
    };
    for (i, &b) in bytes.iter().enumerate() {
        let [high, low] = HEX[usize::from(b)];
        digits[2 * i] = high;
        digits[2 * i + 1] = low;
    }
}

/// Each byte's two lowercase hex digits.
const HEX: [[u8; 2]; 256] = {
    let digits = b"0123456789abcdef";
    let mut table = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = [digits[i >> 4], digits[i & 15]];
        i += 1;
    }
    table
};

/// `N` bytes of exactly `2 N` lowercase hex digits, not all zero.
fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let text = text.as_bytes();
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    (out != [0; N]).then_some(out)
}

/// The caller's context `traceparent` (and `tracestate`) name; `None` when they name
/// none W3C trace context accepts (a `tracestate` that is not valid is left out, as a
/// W3C propagator leaves it).
pub(crate) fn parent(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    if traceparent.len() > MAX_PARENT {
        return None;
    }
    let mut parts = traceparent.trim().split('-');
    let version = parts.next()?;
    if version.len() != 2 || has_upper(version) {
        return None;
    }
    let version = u8::from_str_radix(version, 16).ok()?;
    if version == 0xff {
        return None;
    }
    let trace_id = unhex::<16>(parts.next()?)?;
    let span_id = unhex::<8>(parts.next()?)?;
    let flags = parts.next()?;
    if flags.len() != 2 || has_upper(flags) {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    // Version 00 has exactly four parts; a later one may add to them.
    if version == 0 && parts.next().is_some() {
        return None;
    }
    let state = tracestate
        .filter(|s| s.len() <= MAX_STATE)
        .and_then(state)
        .map(Arc::from);
    Some(SpanContext {
        trace_id,
        span_id,
        sampled: flags & 1 == 1,
        state,
    })
}

fn has_upper(text: &str) -> bool {
    text.bytes().any(|b| b.is_ascii_uppercase())
}

/// A `tracestate` as a W3C propagator keeps it: its members (at most 32) trimmed and
/// joined by `,`; `None` when it is empty or a member is not valid.
fn state(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    for member in text.split_terminator(',').take(MAX_MEMBERS) {
        let member = member.trim_matches([' ', '\t']);
        if member.is_empty() {
            continue;
        }
        let (key, value) = member.split_once('=')?;
        if !valid_key(key) || value.len() > 256 || value.contains(['=', ',']) {
            return None;
        }
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(member);
    }
    (!out.is_empty()).then_some(out)
}

/// A `tracestate` key: lowercase letters, digits and `_-*/`, one `@` before a vendor
/// of at most 14 characters.
fn valid_key(key: &str) -> bool {
    let bytes = key.as_bytes();
    let Some(first) = bytes.first() else {
        return false;
    };
    if key.len() > 256 || !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
        return false;
    }
    let allowed = |b: u8| {
        b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'*' | b'/')
    };
    match key.split_once('@') {
        None => bytes.iter().all(|b| allowed(*b)),
        Some((tenant, vendor)) => {
            tenant.bytes().all(allowed)
                && vendor.len() <= 14
                && vendor
                    .bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                && vendor.bytes().all(allowed)
        }
    }
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
        let cx = parent(PARENT, Some("k=v")).unwrap();
        assert_eq!(cx.trace_id[..2], [0x0a, 0xf7]);
        assert_eq!(cx.span_id[7], 0x31);
        assert!(cx.sampled);
        assert_eq!(cx.traceparent(), PARENT);
        assert_eq!(cx.state.as_deref(), Some("k=v"));
    }

    /// What OpenTelemetry's own W3C propagator reads of `traceparent` and
    /// `tracestate`: the `traceparent` and `tracestate` it would write back.
    fn theirs(traceparent: &str, tracestate: Option<&str>) -> Option<(String, Option<String>)> {
        use opentelemetry::propagation::TextMapPropagator;
        use opentelemetry::trace::TraceContextExt;
        use opentelemetry_sdk::propagation::TraceContextPropagator;
        let mut carrier = HashMap::new();
        carrier.insert("traceparent".to_owned(), traceparent.to_owned());
        if let Some(state) = tracestate {
            carrier.insert("tracestate".to_owned(), state.to_owned());
        }
        let cx = TraceContextPropagator::new().extract(&carrier);
        if !cx.span().span_context().is_valid() {
            return None;
        }
        let mut out = HashMap::new();
        TraceContextPropagator::new().inject_context(&cx, &mut out);
        Some((
            out.remove("traceparent").unwrap_or_default(),
            out.remove("tracestate").filter(|s| !s.is_empty()),
        ))
    }

    #[test]
    fn a_context_is_read_and_written_as_the_w3c_propagator_does() {
        let upper = PARENT.replace("0af7", "0AF7");
        let zeros = format!("00-{}-b7ad6b7169203331-01", "0".repeat(32));
        let later = format!("01-{}-00-extra", &PARENT[3..52]);
        let cases: &[(&str, Option<&str>)] = &[
            (PARENT, Some("k=v,a=b")),
            (PARENT, Some(" k=v , ,a@b=c\t")),
            (PARENT, Some("K=v")),
            (PARENT, Some("k=v=w")),
            (PARENT, Some("nokey")),
            (&PARENT.replace("-01", "-00"), None),
            (&PARENT.replace("-01", "-03"), None),
            (&later, None),
            (&format!("{PARENT}-more"), None),
            (&format!("ff{}", &PARENT[2..]), None),
            (&upper, None),
            (&zeros, None),
            ("", None),
            ("00-zz-b7ad6b7169203331-01", None),
        ];
        for (p, state) in cases {
            let ours = parent(p, *state).map(|cx| {
                let state = cx.state.as_deref().map(str::to_owned);
                (cx.traceparent().as_str().to_owned(), state)
            });
            assert_eq!(ours, theirs(p, *state), "{p} {state:?}");
        }
    }

    #[test]
    fn a_parent_that_is_not_w3c_is_none() {
        for bad in ["", "00-zz-b7ad6b7169203331-01", &"0".repeat(10_000)] {
            assert!(parent(bad, None).is_none(), "{bad:.20}");
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
