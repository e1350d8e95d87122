//! A success response in the usual compact layout (`{"jsonrpc":"2.0","id":7,
//! "result":…}`), read off its shape: the id at its start, and where its result begins.
//! Nothing else of the line is read here; the one decode of the result
//! ([`Payload::decode`](crate::Payload::decode)) verifies the rest, and parses the whole
//! line when anything but the closing brace follows the result.

use std::ops::Range;

/// How a compact success response starts when its members come in the usual order
/// (`jsonrpc`, `id`, `result`), as most servers write them.
const RESULT_PREFIX: &[u8; 22] = b"{\"jsonrpc\":\"2.0\",\"id\":";
const RESULT_KEY: &[u8; 10] = b",\"result\":";

/// The integer id at the start of a line in the usual layout (`{"jsonrpc":"2.0","id":7…`),
/// whatever follows: how a message that cannot be parsed (truncated, too deep) may
/// still name the request it answers.
pub(crate) fn leading_id(line: &[u8]) -> Option<i64> {
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
