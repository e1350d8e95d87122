//! A resource read as the host sees it: contents, revision, and when.

use std::sync::OnceLock;
use std::time::SystemTime;

use capable_core::model::{ResourceContents, SharedStr};
use capable_core::Revision;
use serde::ser::SerializeStruct;
use serde::Serialize;

/// The outcome of `resources/read`.
///
/// Its [revision](ResourceRead::revision) is worked out on first use and kept: a host
/// that never looks at it never pays for hashing the contents. It is kept boxed, so that
/// a read stays within 128 bytes: a value that size is moved (into its `Result`, out
/// of its future, to the host) by a few vector moves, a larger one by a call to
/// `memcpy`.
#[derive(Clone, Debug)]
pub struct ResourceRead {
    /// The URI that was read (sharing its text with the content of that URI, when the
    /// server answered with one).
    pub uri: SharedStr,
    /// When the answer arrived (RFC 3339, UTC, in JSON).
    pub read_at: SystemTime,
    /// The contents.
    pub contents: Vec<ResourceContents>,
    /// Modern: how long the content stays fresh, in milliseconds, as the server said
    /// (see [`ResourceRead::ttl`] for it as a bounded duration).
    pub ttl_ms: Option<f64>,
    /// Modern: `public` or `private`.
    pub cache_scope: Option<String>,
    revision: OnceLock<Box<Revision>>,
}

impl ResourceRead {
    /// The read of `uri` from the members of its result that a host keeps: its
    /// contents, `ttlMs` and `cacheScope`. They come one by one, not as the whole
    /// result (160 bytes, a call to `memcpy` to move), which the caller takes apart
    /// where the decode left it.
    #[inline]
    pub(crate) fn new(
        uri: &str,
        contents: Vec<ResourceContents>,
        ttl_ms: Option<f64>,
        cache_scope: Option<String>,
        read_at: SystemTime,
    ) -> Self {
        let uri = match contents.iter().find(|c| c.uri == uri) {
            Some(c) => c.uri.clone(),
            None => SharedStr::from(uri),
        };
        ResourceRead {
            uri,
            read_at,
            contents,
            ttl_ms,
            cache_scope,
            revision: OnceLock::new(),
        }
    }

    /// Which version of the content this is: the server's `lastModified` marker, else
    /// a digest of the contents (see [`Revision`]).
    pub fn revision(&self) -> &Revision {
        self.revision
            .get_or_init(|| Box::new(Revision::of(&self.contents)))
    }

    /// Modern: how long the content stays fresh, capped at
    /// [`MAX_TTL`](capable_core::internal::time::MAX_TTL); `None` without a positive `ttlMs`.
    pub fn ttl(&self) -> Option<std::time::Duration> {
        self.ttl_ms.and_then(capable_core::internal::time::ttl)
    }

    /// `read_at` as RFC 3339 UTC (`2026-11-29T22:04:05.123Z`).
    pub fn read_at_rfc3339(&self) -> String {
        capable_core::internal::time::rfc3339(self.read_at)
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

/// `{uri, readAt, revision, contents, ttlMs?, cacheScope?}`.
impl Serialize for ResourceRead {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ResourceRead", 6)?;
        st.serialize_field("uri", &self.uri)?;
        st.serialize_field("readAt", &self.read_at_rfc3339())?;
        st.serialize_field("revision", self.revision())?;
        st.serialize_field("contents", &self.contents)?;
        if let Some(ttl) = self.ttl_ms {
            st.serialize_field("ttlMs", &ttl)?;
        }
        if let Some(scope) = &self.cache_scope {
            st.serialize_field("cacheScope", scope)?;
        }
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Moved by vector moves, not by a call to `memcpy` (see the type's documentation).
    #[test]
    fn a_read_and_its_result_fit_in_128_bytes() {
        assert!(std::mem::size_of::<ResourceRead>() <= 128);
        assert!(std::mem::size_of::<Result<ResourceRead, crate::Error>>() <= 128);
    }

    #[test]
    fn the_revision_is_worked_out_once_and_kept() {
        let contents = vec![ResourceContents {
            uri: SharedStr::from("a://b"),
            mime_type: None,
            text: Some(SharedStr::from("hello")),
            blob: None,
            annotations: None,
            meta: None,
        }];
        let read = ResourceRead::new("a://b", contents, None, None, SystemTime::UNIX_EPOCH);
        let first: *const Revision = read.revision();
        assert!(std::ptr::eq(first, read.revision()));
        assert_eq!(*read.revision(), Revision::of(&read.contents));
        assert_eq!(read.clone().revision(), read.revision());
    }
}
