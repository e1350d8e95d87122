//! MCP's headers as header values, made once per connection.
//!
//! The policy names each request's headers as text. Most of them repeat on every
//! request of a connection — `Accept`, `Content-Type`, `Mcp-Session-Id`,
//! `MCP-Protocol-Version`, `Mcp-Method` — and turning text into a header value copies
//! it into a buffer of its own. A value kept here is shared: each request's copy costs
//! a reference count, not an allocation. Values that vary per request (`Mcp-Name`,
//! `Mcp-Param-*`, `Last-Event-ID`) are made fresh each time; so is any value once the
//! cache is full, which bounds it however a server churns session ids.

use std::sync::Mutex;

use reqwest::header::{HeaderName, HeaderValue};

/// The headers whose values repeat from request to request.
const REPEATING: [&str; 5] = [
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
];

/// How many distinct values are kept at most.
const CAPACITY: usize = 32;

#[derive(Default)]
pub(super) struct HeaderCache {
    entries: Mutex<Vec<Entry>>,
}

struct Entry {
    name: HeaderName,
    value_text: String,
    value: HeaderValue,
}

impl HeaderCache {
    /// `name: value` as a header, or `None` when it cannot be sent (the policy only
    /// names headers that can).
    pub(super) fn header(&self, name: &str, value: &str) -> Option<(HeaderName, HeaderValue)> {
        if !REPEATING.contains(&name) {
            return fresh(name, value);
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = entries
            .iter()
            .find(|e| e.name.as_str() == name && e.value_text == value)
        {
            return Some((e.name.clone(), e.value.clone()));
        }
        let (name, value_made) = fresh(name, value)?;
        if entries.len() < CAPACITY {
            entries.push(Entry {
                name: name.clone(),
                value_text: value.to_owned(),
                value: value_made.clone(),
            });
        }
        Some((name, value_made))
    }
}

fn fresh(name: &str, value: &str) -> Option<(HeaderName, HeaderValue)> {
    let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
    let value = HeaderValue::from_bytes(value.as_bytes()).ok()?;
    Some((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeating_header_is_made_once_and_the_cache_stays_bounded() {
        let cache = HeaderCache::default();
        let (n, v) = cache.header("mcp-session-id", "abc").expect("a header");
        assert_eq!(
            (n.as_str(), v.to_str().ok()),
            ("mcp-session-id", Some("abc"))
        );
        cache.header("mcp-session-id", "abc");
        assert_eq!(cache.entries.lock().unwrap().len(), 1);
        // A header that varies per request is never kept.
        cache.header("mcp-name", "file:///a");
        assert_eq!(cache.entries.lock().unwrap().len(), 1);
        // A server that churns session ids fills the cache, no more.
        for i in 0..100 {
            let id = format!("session-{i}");
            let (_, v) = cache.header("mcp-session-id", &id).expect("a header");
            assert_eq!(v.to_str().ok(), Some(id.as_str()));
        }
        assert_eq!(cache.entries.lock().unwrap().len(), CAPACITY);
        // What cannot travel in a header is refused, not cached.
        assert!(cache.header("mcp-method", "a\nb").is_none());
    }
}
