//! [`SharedStr`]: an immutable string that is cloned without copying.
//!
//! A `resources/read` result holds a few strings (a URI, a MIME type, the text or the
//! blob), and a host passes reads around: into a cache, to a watcher, to the screen.
//! As `String`s each of them would be an allocation of its own when the read is
//! decoded, and a copy each time the read is cloned. A [`SharedStr`] is a range of one
//! reference-counted text instead: the decoder copies the result's JSON once and every
//! string of the read is a range of it; a clone only counts a reference.
//!
//! It reads as a `&str` everywhere one is expected (it derefs to `str`), compares with
//! `str` and `String`, and serialises as a plain JSON string.
//!
//! ```
//! use capable_core::model::SharedStr;
//!
//! let uri = SharedStr::from("file:///notes.md");
//! let copy = uri.clone(); // no copy of the text
//! assert_eq!(copy, "file:///notes.md");
//! assert!(uri.ends_with(".md"));
//! let owned: String = uri.into();
//! assert_eq!(owned, "file:///notes.md");
//! ```

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, Range};
use std::sync::Arc;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// An immutable string shared by reference count: a range of a larger text (the JSON
/// of the message it was read from) or a whole one. The strings of one read share one
/// copy of its text, and a clone counts a reference instead of copying it; it derefs to
/// `str`, compares with `str` and `String`, and serialises as a JSON string.
#[derive(Clone)]
pub struct SharedStr {
    all: Arc<str>,
    /// The range of `all` this string is; on `char` boundaries.
    start: usize,
    end: usize,
}

impl SharedStr {
    /// The string `range` of `all`, sharing it; `None` if `range` is out of bounds or
    /// not on `char` boundaries.
    pub fn slice_of(all: &Arc<str>, range: Range<usize>) -> Option<SharedStr> {
        all.get(range.clone())?;
        Some(SharedStr {
            all: all.clone(),
            start: range.start,
            end: range.end,
        })
    }

    /// Whether `self` and `other` are ranges of the same text.
    #[cfg(test)]
    pub(crate) fn shares_text_with(&self, other: &SharedStr) -> bool {
        Arc::ptr_eq(&self.all, &other.all)
    }

    /// The string as a `&str`.
    pub fn as_str(&self) -> &str {
        // In bounds and on char boundaries: checked when the range was made.
        &self.all[self.start..self.end]
    }
}

impl Deref for SharedStr {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for SharedStr {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<[u8]> for SharedStr {
    fn as_ref(&self) -> &[u8] {
        self.as_str().as_bytes()
    }
}

impl Borrow<str> for SharedStr {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl Default for SharedStr {
    fn default() -> Self {
        SharedStr::from("")
    }
}

impl From<&str> for SharedStr {
    fn from(s: &str) -> Self {
        SharedStr {
            all: Arc::from(s),
            start: 0,
            end: s.len(),
        }
    }
}

impl From<String> for SharedStr {
    fn from(s: String) -> Self {
        let end = s.len();
        SharedStr {
            all: Arc::from(s),
            start: 0,
            end,
        }
    }
}

impl From<&String> for SharedStr {
    fn from(s: &String) -> Self {
        SharedStr::from(s.as_str())
    }
}

impl From<SharedStr> for String {
    fn from(s: SharedStr) -> Self {
        s.as_str().to_owned()
    }
}

impl fmt::Debug for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl PartialEq for SharedStr {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for SharedStr {}

impl PartialOrd for SharedStr {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SharedStr {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for SharedStr {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl PartialEq<str> for SharedStr {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SharedStr {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for SharedStr {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<SharedStr> for str {
    fn eq(&self, other: &SharedStr) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<SharedStr> for &str {
    fn eq(&self, other: &SharedStr) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<SharedStr> for String {
    fn eq(&self, other: &SharedStr) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Serialize for SharedStr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SharedStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor)
    }
}

/// Makes a [`SharedStr`] of a string, copying it once.
pub(super) struct StrVisitor;

impl Visitor<'_> for StrVisitor {
    type Value = SharedStr;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<SharedStr, E> {
        Ok(SharedStr::from(v))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<SharedStr, E> {
        Ok(SharedStr::from(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_reads_compares_and_serialises_as_its_text() {
        let all: Arc<str> = Arc::from("{\"uri\":\"a://é\"}");
        let s = SharedStr::slice_of(&all, 8..14).unwrap();
        assert_eq!(s, "a://é");
        assert_eq!(s.len(), 6);
        assert_eq!(format!("{s} {s:?}"), "a://é \"a://é\"");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"a://é\"");
        assert_eq!(s, SharedStr::from("a://é"));
        assert_eq!(String::from(s.clone()), "a://é");
        let back: SharedStr = serde_json::from_str("\"a:\\/\\/\\u00e9\"").unwrap();
        assert_eq!(back, s);
        // `s` shares the text (its clone, now dropped, did too); nothing else holds it.
        let twin = s.clone();
        assert_eq!(Arc::strong_count(&all), 3);
        drop((s, twin));
        assert_eq!(Arc::strong_count(&all), 1);
    }

    #[test]
    fn a_range_off_the_text_or_inside_a_char_is_refused() {
        let all: Arc<str> = Arc::from("aé");
        assert!(SharedStr::slice_of(&all, 0..2).is_none());
        assert!(SharedStr::slice_of(&all, 1..9).is_none());
        assert_eq!(SharedStr::slice_of(&all, 1..3).unwrap(), "é");
        assert_eq!(SharedStr::default(), "");
    }
}
