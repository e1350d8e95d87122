//! The revision of a resource read: which version of the content the host saw.
//!
//! A server may mark its content (`annotations.lastModified`); capable shows that
//! marker when present. Otherwise the revision is a digest of the contents
//! (`sha256:…`), so two reads of the same content give the same revision and any
//! change gives another.

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::model::ResourceContents;

/// Which version of a resource's content a read saw. In JSON it is one string: the
/// server's marker or `sha256:…`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Revision {
    /// The server's own marker (`annotations.lastModified`).
    LastModified(String),
    /// A digest of the contents: `sha256:<hex>`.
    Digest(String),
}

impl Revision {
    /// The revision of a set of contents.
    pub fn of(contents: &[ResourceContents]) -> Revision {
        let marker = contents
            .iter()
            .filter_map(|c| c.annotations.as_ref()?.get("lastModified")?.as_str())
            .max();
        match marker {
            Some(m) => Revision::LastModified(m.to_owned()),
            None => Revision::Digest(digest(contents)),
        }
    }

    /// The revision as one string (`2025-01-12T15:00:58Z` or `sha256:…`).
    pub fn as_str(&self) -> &str {
        match self {
            Revision::LastModified(s) | Revision::Digest(s) => s,
        }
    }
}

impl Serialize for Revision {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Revision::LastModified(s) => write!(f, "lastModified {s}"),
            Revision::Digest(s) => f.write_str(s),
        }
    }
}

fn digest(contents: &[ResourceContents]) -> String {
    let mut h = Sha256::new();
    let mut field = |tag: u8, bytes: &[u8]| {
        h.update([tag]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    for c in contents {
        field(b'u', c.uri.as_bytes());
        if let Some(m) = &c.mime_type {
            field(b'm', m.as_bytes());
        }
        if let Some(t) = &c.text {
            field(b't', t.as_bytes());
        }
        if let Some(b) = &c.blob {
            field(b'b', b.as_bytes());
        }
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in h.finalize() {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(uri: &str, t: &str) -> ResourceContents {
        ResourceContents {
            uri: uri.into(),
            mime_type: Some("text/plain".into()),
            text: Some(t.into()),
            blob: None,
            annotations: None,
            meta: None,
        }
    }

    #[test]
    fn same_content_same_revision_changed_content_another() {
        let a = Revision::of(&[text("x://a", "one")]);
        assert_eq!(a, Revision::of(&[text("x://a", "one")]));
        assert_ne!(a, Revision::of(&[text("x://a", "two")]));
        assert!(a.as_str().starts_with("sha256:") && a.as_str().len() == 71);
    }

    #[test]
    fn the_servers_marker_wins() {
        let mut c = text("x://a", "one");
        c.annotations = Some(json!({"lastModified": "2026-01-02T03:04:05Z"}));
        assert_eq!(
            Revision::of(&[c]),
            Revision::LastModified("2026-01-02T03:04:05Z".into())
        );
    }
}
