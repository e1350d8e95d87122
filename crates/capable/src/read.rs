//! A resource read as the host sees it: contents, revision, and when.

use std::time::SystemTime;

use capable_core::model::{ReadResourceResult, ResourceContents};
use capable_core::Revision;
use serde::Serialize;

/// The outcome of `resources/read`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRead {
    /// The URI that was read.
    pub uri: String,
    /// When the answer arrived (RFC 3339, UTC, in JSON).
    #[serde(serialize_with = "serialize_time")]
    pub read_at: SystemTime,
    /// Which version of the content this is.
    pub revision: Revision,
    /// The contents.
    pub contents: Vec<ResourceContents>,
    /// Modern: how long the content stays fresh, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<f64>,
    /// Modern: `public` or `private`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
}

impl ResourceRead {
    pub(crate) fn new(uri: &str, result: ReadResourceResult, read_at: SystemTime) -> Self {
        ResourceRead {
            uri: uri.to_owned(),
            read_at,
            revision: Revision::of(&result.contents),
            contents: result.contents,
            ttl_ms: result.ttl_ms,
            cache_scope: result.cache_scope,
        }
    }

    /// `read_at` as RFC 3339 UTC (`2026-11-29T22:04:05.123Z`).
    pub fn read_at_rfc3339(&self) -> String {
        rfc3339(self.read_at)
    }

    /// All text contents joined (blobs left out).
    pub fn text(&self) -> String {
        self.contents
            .iter()
            .filter_map(|c| c.text.as_deref())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Formats a time as RFC 3339 UTC with milliseconds.
pub fn rfc3339(t: SystemTime) -> String {
    let t = time::OffsetDateTime::from(t);
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    t.format(&fmt)
        .unwrap_or_else(|_| "1970-01-01T00:00:00.000Z".into())
}

fn serialize_time<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(*t))
}
