//! A payload kept raw in the line it came in, decoded once into the type the waiting
//! caller expects.

use std::ops::Range;

use bytes::Bytes;
use serde::de::{DeserializeOwned, DeserializeSeed};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::checked::Checked;
use super::incoming::{FramingError, Incoming, Shape};
use crate::json::has_control_byte;

/// One received line, kept whole, with the place of its payload.
///
/// The line's bytes are shared, never copied, with whoever handles the message (a
/// transport hands out lines as slices of its read buffer); the payload (`result` of a
/// response, `params` of a request or notification) is a range into them. Decoded
/// types own their data, so a payload is meant to be decoded and dropped, not kept.
#[derive(Clone, Debug)]
pub struct Payload {
    pub(super) line: Bytes,
    pub(super) range: Range<usize>,
    pub(super) found: Found,
    /// The result's `resultType`, when something already read it (the cache, reading
    /// its hints on arrival): [`Payload::result_type`] then need not walk it again.
    pub(super) noted: Noted,
}

/// What is known of a result's `resultType` before anyone asks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Noted {
    /// Nothing: it is read when asked for.
    #[default]
    Unknown,
    /// Absent (or `null`).
    Absent,
    /// `"complete"`.
    Complete,
}

/// How a payload's range was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// By parsing the whole message: the range is exactly the value.
    ByParse,
    /// Read off the line's shape without parsing it (see [`Incoming::parse`]): the
    /// value starts at the range's start and the range runs to the envelope's closing
    /// brace; the one parse that decodes the value verifies the rest.
    ByShape,
}

impl Payload {
    /// The payload's raw JSON text.
    pub fn json(&self) -> &str {
        let range = match self.found {
            Found::ByParse => self.range.clone(),
            Found::ByShape => match exact_result_range(&self.line) {
                Ok(range) => range,
                Err(_) => return "null",
            },
        };
        // A parsed range was cut from a `&RawValue` that serde_json validated as UTF-8.
        std::str::from_utf8(&self.line[range]).unwrap_or("null")
    }

    /// Whether the payload's raw text contains `needle`: a cheap pre-check before a
    /// decode (it may look a little past the value, never at less than all of it).
    ///
    /// A short payload (most results) is searched by a plain loop: building a
    /// `memmem` searcher, or starting a vector search at each candidate, costs more
    /// than the whole loop there.
    pub fn mentions(&self, needle: &str) -> bool {
        const SHORT: usize = 256;
        let (hay, needle) = (&self.line[self.range.clone()], needle.as_bytes());
        let Some(&first) = needle.first() else {
            return true;
        };
        let last = needle[needle.len() - 1];
        if hay.len() > SHORT {
            return memchr::memmem::find(hay, needle).is_some();
        }
        let Some(starts) = hay.len().checked_sub(needle.len()) else {
            return false;
        };
        // The first and last bytes rule out nearly every place before a comparison.
        hay[..=starts].iter().enumerate().any(|(at, &b)| {
            b == first && hay[at + needle.len() - 1] == last && hay[at..].starts_with(needle)
        })
    }

    /// The payload's bytes as found: exactly the value when parsed, else the value
    /// and whatever follows it up to the envelope's closing brace.
    #[inline]
    pub(crate) fn raw(&self) -> &[u8] {
        &self.line[self.range.clone()]
    }

    /// The whole message this payload came in.
    pub fn message(&self) -> &[u8] {
        &self.line
    }

    /// Decodes the payload into the one type the caller expects.
    ///
    /// A payload found by shape is decoded in place. Should anything but the
    /// envelope's closing brace follow the value, the whole message is parsed after
    /// all and the value decoded from its exact place: a valid message is never
    /// refused for its layout, and an invalid one is refused with the parse's error.
    ///
    /// A payload found by shape that holds a raw control byte or is not UTF-8 also
    /// goes through the full parse first, which refuses either inside a string —
    /// including strings the decode would skip (members the type does not name),
    /// which serde_json does not check on its own. A parsed payload has had that
    /// check.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        let raw = &self.line[self.range.clone()];
        if self.found == Found::ByParse {
            return serde_json::from_slice(raw);
        }
        if !has_control_byte(raw) && simdutf8::basic::from_utf8(raw).is_ok() {
            let mut de = serde_json::Deserializer::from_slice(raw);
            let value = T::deserialize(&mut de)?;
            if de.end().is_ok() {
                return Ok(value);
            }
        }
        serde_json::from_slice(&self.line[exact_result_range(&self.line)?])
    }

    /// The payload as one JSON value, checked but not decoded: what a relay passes on
    /// as it came (a bridge's answer to its own client). A payload read off its shape
    /// is checked with the same rules as [`Payload::decode`] (UTF-8, no raw control
    /// byte, one value and then only the envelope's closing brace), else the whole
    /// message is parsed for its exact place; one parsed whole is checked again, as
    /// serde_json checks any `RawValue`.
    pub fn raw_value(&self) -> Result<&RawValue, serde_json::Error> {
        let raw = &self.line[self.range.clone()];
        if self.found == Found::ByShape
            && !has_control_byte(raw)
            && simdutf8::basic::from_utf8(raw).is_ok()
        {
            let mut de = serde_json::Deserializer::from_slice(raw);
            if let Ok(value) = <&RawValue>::deserialize(&mut de) {
                if de.end().is_ok() {
                    return Ok(value);
                }
            }
        }
        let range = match self.found {
            Found::ByParse => self.range.clone(),
            Found::ByShape => exact_result_range(&self.line)?,
        };
        serde_json::from_slice(&self.line[range])
    }

    /// The payload as one JSON value's text, checked as [`Payload::raw_value`] checks
    /// it, owned: what a relay sends on as it came.
    pub fn checked(&self) -> Result<Checked, serde_json::Error> {
        self.raw_value().map(Checked::from)
    }

    /// [`Payload::checked`], with what `seed` reads of the value in the same pass: a
    /// relay that needs one member of params it sends on (a request's target, for its
    /// span) reads it as it checks them, in one pass instead of two. serde_json checks
    /// every byte a seed reads, and a seed that succeeds has read the whole value (a
    /// map or list it left unread fails at its end), skipped members included, so the
    /// text is checked as `raw_value` checks it. A payload the fast pass refuses
    /// (`seed` failing included) is checked as `raw_value` does, and `seed` reads
    /// the value from there.
    pub fn checked_with<'a, S>(&'a self, seed: S) -> Result<(Checked, S::Value), serde_json::Error>
    where
        S: DeserializeSeed<'a> + Copy,
    {
        // Read off its shape: checked as `raw_value` checks it. Parsed whole (its range
        // exact, every string in it already read and refused with a raw control byte):
        // read in place too.
        let raw = &self.line[self.range.clone()];
        if self.found == Found::ByParse || !has_control_byte(raw) {
            if let Ok(text) = simdutf8::basic::from_utf8(raw) {
                let mut de = serde_json::Deserializer::from_str(text);
                if let Ok(value) = seed.deserialize(&mut de) {
                    if de.end().is_ok() {
                        // The value alone, as a `RawValue` is: without the whitespace
                        // around it (no value ends or starts with any).
                        let json_space = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
                        return Ok((Checked(text.trim_matches(json_space).into()), value));
                    }
                }
            }
        }
        let raw = self.raw_value()?;
        let value = seed.deserialize(raw)?;
        Ok((Checked::from(raw), value))
    }

    /// The result's `resultType` (2026-07-28; `None` when absent), decoded alone. A
    /// result without the member's name (or a backslash) anywhere in it is not
    /// decoded at all.
    pub fn result_type(&self) -> Result<Option<String>, serde_json::Error> {
        #[derive(serde::Deserialize)]
        struct Probe {
            #[serde(default, rename = "resultType")]
            result_type: Option<String>,
        }
        match self.noted {
            Noted::Absent => return Ok(None),
            Noted::Complete => return Ok(Some("complete".into())),
            // Without the name, and without a backslash (a key may spell it with
            // escapes), the member is not there.
            Noted::Unknown if !self.mentions("\"resultType\"") && !self.mentions("\\") => {
                return Ok(None)
            }
            Noted::Unknown => {}
        }
        self.decode::<Probe>().map(|p| p.result_type)
    }

    /// Notes the `resultType` read off this result by someone who walked it already
    /// (the cache), for [`Payload::result_type`]; any other value is left to be read.
    pub(crate) fn note_result_type(&mut self, result_type: Option<&str>) {
        self.noted = match result_type {
            None => Noted::Absent,
            Some("complete") => Noted::Complete,
            Some(_) => Noted::Unknown,
        };
    }

    /// An empty-object payload, for messages that carry none.
    pub(super) fn empty(line: Bytes) -> Self {
        Payload::parsed(line, 0..0)
    }

    pub(super) fn parsed(line: Bytes, range: Range<usize>) -> Self {
        Payload {
            line,
            range,
            found: Found::ByParse,
            noted: Noted::Unknown,
        }
    }

    /// A payload that is the whole of `json` (a value kept elsewhere, such as a
    /// cache on disk). The text is checked when it is decoded, as any payload's is.
    pub fn from_json(json: impl Into<Bytes>) -> Self {
        let line: Bytes = json.into();
        let len = line.len();
        Payload::parsed(line, 0..len)
    }

    /// Whether the message had no payload at all.
    pub fn is_absent(&self) -> bool {
        self.range.is_empty()
    }

    /// Decodes the payload, treating an absent one as `{}`.
    pub fn decode_or_default<T: DeserializeOwned + Default>(&self) -> Result<T, serde_json::Error> {
        if self.is_absent() {
            Ok(T::default())
        } else {
            self.decode()
        }
    }
}

/// The exact range of a success response's `result`, from a full parse.
fn exact_result_range(line: &[u8]) -> Result<Range<usize>, serde_json::Error> {
    use serde::de::Error as _;
    match Incoming::parse_shape(line) {
        Ok(Shape::Result { range, .. }) => Ok(range),
        Ok(_) => Err(serde_json::Error::custom("not a success response")),
        Err(FramingError::NotJson(e)) => Err(e),
        Err(e) => Err(serde_json::Error::custom(e)),
    }
}
