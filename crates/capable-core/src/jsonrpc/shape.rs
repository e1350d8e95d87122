//! The fast path: a success response in the usual compact layout
//! (`{"jsonrpc":"2.0","id":7,"result":…}`) is routed by the id read off its start, and
//! its result is left to the one decode that also verifies it.

use std::ops::Range;

use super::incoming::{FramingError, Incoming, Shape};

/// Whether `bytes` holds a byte below 0x20 (JSON allows one only as whitespace between
/// tokens). Kept as 64 running minimums, which compile to vector instructions; the
/// last block overlaps the one before it, so there is no byte-by-byte tail. The
/// decode that follows reads every byte anyway.
pub(crate) fn has_control_byte(bytes: &[u8]) -> bool {
    const BLOCK: usize = 64;
    if bytes.len() < BLOCK {
        return bytes.iter().any(|&b| b < 0x20);
    }
    let mut lowest = [u8::MAX; BLOCK];
    let mut fold = |block: &[u8]| {
        for (low, &b) in lowest.iter_mut().zip(block) {
            *low = (*low).min(b);
        }
    };
    let mut blocks = bytes.chunks_exact(BLOCK);
    for block in &mut blocks {
        fold(block);
    }
    if !blocks.remainder().is_empty() {
        fold(&bytes[bytes.len() - BLOCK..]);
    }
    lowest.iter().any(|&low| low < 0x20)
}

/// The bytes of `w` (eight bytes, the first lowest) that are a quote or a backslash,
/// each marked by its top bit. A byte `x` of `w ^ c` is zero where `w` holds `c`, and
/// `x - 1` then borrows into its top bit where `x` had none. A borrow carries on into
/// the bytes above, which may mark one wrongly, but only above a byte that is marked
/// rightly: the lowest mark is always exact, and only the lowest is used.
#[inline(always)]
pub(crate) fn quotes_in(w: u64) -> u64 {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    const QUOTES: u64 = u64::from_le_bytes([b'"'; 8]);
    const BACKSLASHES: u64 = u64::from_le_bytes([b'\\'; 8]);
    let (q, s) = (w ^ QUOTES, w ^ BACKSLASHES);
    ((q.wrapping_sub(ONES) & !q) | (s.wrapping_sub(ONES) & !s)) & HIGHS
}

/// Where the first `"` or `\\` in `bytes` is. Keys, URIs and MIME types end within a
/// few bytes: the first 32 are searched a word at a time (sooner than a vector search
/// is set up), the rest with memchr's.
pub(crate) fn find_quote(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at < 32 {
        let Some(word) = bytes.get(at..at + 8) else {
            let tail = bytes.get(at..)?;
            return Some(at + tail.iter().position(|&b| b == b'"' || b == b'\\')?);
        };
        let mut w = [0; 8];
        w.copy_from_slice(word);
        let found = quotes_in(u64::from_le_bytes(w));
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    Some(at + memchr::memchr2(b'"', b'\\', &bytes[at..])?)
}

/// How a compact success response starts when its members come in the usual order
/// (`jsonrpc`, `id`, `result`), as most servers write them.
const RESULT_PREFIX: &[u8; 22] = b"{\"jsonrpc\":\"2.0\",\"id\":";
const RESULT_KEY: &[u8; 10] = b",\"result\":";

/// The integer id at the start of a line in the usual layout (`{"jsonrpc":"2.0","id":7…`),
/// whatever follows: how a message that cannot be parsed (truncated, too deep) may
/// still name the request it answers.
pub(super) fn leading_id(line: &[u8]) -> Option<i64> {
    let (id, after) = id_after_prefix(line)?;
    matches!(after.first(), Some(b',' | b'}')).then_some(id)
}

/// The integer id right after [`RESULT_PREFIX`], and the bytes after its digits.
///
/// Prefix and keys are compared as arrays of their fixed length, which compile to a
/// few word compares instead of calls to `memcmp`; the digits are read and added up
/// in one walk.
#[inline]
fn id_after_prefix(line: &[u8]) -> Option<(i64, &[u8])> {
    let (prefix, rest) = line.split_first_chunk::<22>()?;
    if prefix != RESULT_PREFIX {
        return None;
    }
    let mut id = 0i64;
    let mut digits = 0;
    while let Some(&b) = rest.get(digits) {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        // At most 18 digits always fit an i64; a longer id is refused.
        if digits == 18 {
            return None;
        }
        id = id * 10 + i64::from(digit);
        digits += 1;
    }
    // JSON forbids leading zeros.
    if digits == 0 || (digits > 1 && rest[0] == b'0') {
        return None;
    }
    Some((id, &rest[digits..]))
}

/// Reads a success response off the line's shape without parsing it: the integer id
/// right after the prefix, and the result from after `"result":` to the line's closing
/// brace. `None` for any other shape (the message is then parsed whole).
pub(crate) fn result_by_shape(line: &[u8]) -> Option<(i64, Range<usize>)> {
    let (id, after) = id_after_prefix(line)?;
    let (key, value) = after.split_first_chunk::<10>()?;
    if key != RESULT_KEY {
        return None;
    }
    let start = line.len() - value.len();
    let close = line.iter().rposition(|b| !b.is_ascii_whitespace())?;
    (line[close] == b'}' && close > start).then_some((id, start..close))
}

/// The exact range of a success response's `result`, from a full parse.
pub(super) fn exact_result_range(line: &[u8]) -> Result<Range<usize>, serde_json::Error> {
    use serde::de::Error as _;
    match Incoming::parse_shape(line) {
        Ok(Shape::Result { range, .. }) => Ok(range),
        Ok(_) => Err(serde_json::Error::custom("not a success response")),
        Err(FramingError::NotJson(e)) => Err(e),
        Err(e) => Err(serde_json::Error::custom(e)),
    }
}

/// How many JSON values a message holds, counted without parsing it: the value
/// separators and openers outside strings. What a message costs in memory once decoded
/// grows with this count, not with its bytes (`[0,0,0,…]` is tens of bytes per byte).
pub fn count_values(line: &[u8]) -> usize {
    let mut count = 1usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in line {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b',' | b'[' | b'{' | b':' => count += 1,
            _ => {}
        }
    }
    count
}

/// The most JSON values a message may hold when the largest message accepted is
/// `max_message_size` bytes: one per 8 bytes of that, but never fewer than a million.
/// A decoded message then costs a small multiple of the byte limit, whatever its shape.
pub fn value_budget(max_message_size: usize) -> usize {
    (max_message_size / 8).max(1 << 20)
}

/// Whether `line` stays within the value budget; lines up to a megabyte always do (no
/// scan is spent on them).
pub fn within_value_budget(line: &[u8], max_message_size: usize) -> Result<(), usize> {
    if line.len() <= 1 << 20 {
        return Ok(());
    }
    let values = count_values(line);
    if values > value_budget(max_message_size) {
        return Err(values);
    }
    Ok(())
}
