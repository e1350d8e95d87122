//! A JSON value's text, checked once: what a relay sends on as it came, written as it
//! is and never checked again.

use serde_json::value::RawValue;

use super::write::Params;

/// A JSON value's text, checked as serde_json checks a `RawValue` — by
/// [`Payload::checked`](super::Payload::checked) (or
/// [`Payload::checked_with`](super::Payload::checked_with), which reads what it needs
/// of the value in the same pass), or taken from a `RawValue`. As [`Params`], its text
/// is copied into the line as it is.
///
/// ```
/// # use capable_core::internal::jsonrpc::{write_request, Payload, RequestId};
/// let params = Payload::from_json(br#"{"uri":"file:///a"}"#.to_vec());
/// let checked = params.checked().unwrap();
/// let mut line = Vec::new();
/// write_request(&mut line, &RequestId::Number(1), "resources/read", &checked);
/// assert_eq!(
///     String::from_utf8(line).unwrap(),
///     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\
///      \"params\":{\"uri\":\"file:///a\"}}\n"
/// );
/// assert!(Payload::from_json(b"{\"uri\":".to_vec()).checked().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked(pub(super) Box<str>);

impl Checked {
    /// The text (one JSON value).
    pub fn get(&self) -> &str {
        &self.0
    }

    /// The text made a text serde takes as JSON (checked once more: for what is not on
    /// a request's path, such as serializing it into another value).
    pub fn to_raw(&self) -> serde_json::Result<&RawValue> {
        serde_json::from_str(&self.0)
    }
}

impl From<Box<RawValue>> for Checked {
    /// Its text, as it is (not copied).
    fn from(raw: Box<RawValue>) -> Checked {
        Checked(raw.into())
    }
}

impl From<&RawValue> for Checked {
    fn from(raw: &RawValue) -> Checked {
        Checked(raw.get().into())
    }
}

impl Params for Checked {
    fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.0.as_bytes());
    }

    fn to_value(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::from_str(&self.0)
    }
}
