//! What the listener reads of a request's headers, and the headers it adds.

use axum::http::{header, HeaderMap, HeaderValue};
use capable::internal::server::PostHeaders;

/// CORS headers as a header map.
pub(super) fn grant_headers(grant: Vec<(header::HeaderName, HeaderValue)>) -> HeaderMap {
    grant.into_iter().collect()
}

/// The headers [`judge_post_declared`] reads.
pub(super) fn post_headers(headers: &HeaderMap) -> PostHeaders<'_> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    PostHeaders {
        protocol_version: text("mcp-protocol-version"),
        method: text("mcp-method"),
        name: text("mcp-name"),
    }
}

/// The W3C `traceparent` (and `tracestate`) headers, when there is one.
pub(super) fn traceparent(headers: &HeaderMap) -> Option<(&str, Option<&str>)> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    Some((text("traceparent")?, text("tracestate")))
}

/// The `host[:port]` of the public URL, which a proxy in front may send as `Host`.
pub(super) fn public_authority(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}").to_ascii_lowercase(),
        None => host.to_ascii_lowercase(),
    })
}
