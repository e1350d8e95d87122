//! Where a JSON string ends, found and checked in one walk over its bytes.
//!
//! A string's text may hold any byte but three kinds: a quote (which ends it), a
//! backslash (which starts an escape), and a raw control byte below 0x20 (which JSON
//! forbids there). A reader that wants the string as it stands has to look at every
//! byte for all three; doing it in separate passes — one for the end, one for control
//! bytes over the whole text — reads the long strings (a resource's text) twice over
//! and the short ones (keys, URIs, MIME types) through set-up costs larger than they
//! are. Here the first bytes are looked at a word at a time for all three at once, and
//! only a longer string goes on to memchr's vector search for its end and a vector
//! check of what lies before it.
//!
//! UTF-8 is not this walk's business: the readers check it for the whole text they
//! copy, once.

use super::has_control_byte;

/// How far the word-at-a-time search goes before the vector search takes over: most
/// keys, URIs and MIME types end within it, and the vector search's set-up costs more
/// than the words do up to here.
const SHORT: usize = 32;

/// Where the first quote or backslash in `bytes` (the text of a string, after its
/// opening quote) is, provided no raw control byte comes before it: the end of the
/// string, or the start of its first escape. `None` when a control byte comes first or
/// there is neither (the string is not valid, or not complete).
/// Where the first quote or backslash in `bytes` (the text of a string, after its
/// opening quote) is, provided no raw control byte comes before it: the end of the
/// string, or the start of its first escape. `None` when a control byte comes first or
/// there is neither (the string is not valid, or not complete).
pub(crate) fn plain_string_end(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at < SHORT {
        let Some(word) = bytes.get(at..at + 8) else {
            let tail = bytes.get(at..)?;
            let stop = tail
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
            return (tail[stop] >= 0x20).then_some(at + stop);
        };
        let mut w = [0; 8];
        w.copy_from_slice(word);
        let stops = stops_in(u64::from_le_bytes(w));
        if stops != 0 {
            let stop = at + (stops.trailing_zeros() / 8) as usize;
            return (bytes[stop] >= 0x20).then_some(stop);
        }
        at += 8;
    }
    let rest = &bytes[at..];
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    (!has_control_byte(&rest[..end])).then_some(at + end)
}

/// The bytes of `w` (eight bytes, the first lowest) that are a quote, a backslash or
/// below 0x20, each marked by its top bit. A byte `x` of `w ^ c` is zero where `w`
/// holds `c`, and `x - 1` then borrows into its top bit where `x` had none; likewise
/// `x - 0x20` for a byte below 0x20. A borrow carries on into the bytes above, which
/// may mark one wrongly, but only above a byte that is marked rightly: the lowest mark
/// is always exact, and only the lowest is used.
fn stops_in(w: u64) -> u64 {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const SPACES: u64 = u64::from_le_bytes([0x20; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    const QUOTES: u64 = u64::from_le_bytes([b'"'; 8]);
    const BACKSLASHES: u64 = u64::from_le_bytes([b'\\'; 8]);
    let (q, s) = (w ^ QUOTES, w ^ BACKSLASHES);
    ((q.wrapping_sub(ONES) & !q) | (s.wrapping_sub(ONES) & !s) | (w.wrapping_sub(SPACES) & !w))
        & HIGHS
}

#[cfg(test)]
mod tests {
    use super::plain_string_end;
    use crate::mutate::Mutator;

    /// The same, a byte at a time.
    fn by_bytes(bytes: &[u8]) -> Option<usize> {
        let stop = bytes
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        (bytes[stop] >= 0x20).then_some(stop)
    }

    #[test]
    fn the_end_is_the_first_quote_or_backslash_after_no_control_byte() {
        assert_eq!(plain_string_end(b"abc\"def"), Some(3));
        assert_eq!(plain_string_end(b"ab\\\"c\""), Some(2));
        assert_eq!(plain_string_end(b"\""), Some(0));
        assert_eq!(plain_string_end(b""), None);
        assert_eq!(plain_string_end(b"abc"), None);
        assert_eq!(plain_string_end(b"a\tb\""), None);
        assert_eq!(plain_string_end(b"\x1f\""), None);
        // A control byte after the end is not the string's.
        assert_eq!(plain_string_end(b"ab\"\n"), Some(2));
        // Bytes of multi-byte characters are not stops.
        assert_eq!(plain_string_end("é✓🦀\"".as_bytes()), Some(9));
        assert_eq!(plain_string_end(b"\x7f\x80\xff\""), Some(3));
        // Past the words, in the vector search and its check.
        let mut long = vec![b'x'; 1000];
        long[700] = b'"';
        assert_eq!(plain_string_end(&long), Some(700));
        long[699] = b'\\';
        assert_eq!(plain_string_end(&long), Some(699));
        long[40] = 0x01;
        assert_eq!(plain_string_end(&long), None);
        long[40] = b'x';
        long[700] = b'\n';
        long[699] = b'x';
        assert_eq!(plain_string_end(&long), None);
    }

    /// Every length and every place of a stop, the word boundaries and the hand-over
    /// to the vector search included, against the byte-at-a-time search.
    #[test]
    fn the_searches_agree_with_a_byte_search() {
        let specials = [
            b'"', b'\\', 0x00, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0x9f, 0xa2, 0xdc, 0xff,
        ];
        let check = |bytes: &[u8]| {
            let want = by_bytes(bytes);
            assert_eq!(plain_string_end(bytes), want, "{bytes:?}");
        };
        let lengths = (0..=140).chain([191, 192, 193, 255, 256, 257, 1000]);
        for len in lengths {
            let places: Vec<usize> = if len <= 140 {
                (0..len).collect()
            } else {
                (0..len)
                    .step_by(7)
                    .chain(len.saturating_sub(70)..len)
                    .collect()
            };
            for &at in &places {
                for &special in &specials {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = special;
                    check(&bytes);
                    // With a quote somewhere after it, and before it.
                    for quote in [len - 1, at / 2] {
                        let mut with = bytes.clone();
                        with[quote] = b'"';
                        check(&with);
                    }
                }
            }
        }
        let mut m = Mutator::new(0x2545_f491_4f6c_dd1d);
        for _ in 0..20_000 {
            let len = m.below(400);
            let rare = 1 + m.below(200);
            let bytes: Vec<u8> = (0..len)
                .map(|_| match m.below(rare) {
                    0 => specials[m.below(specials.len())],
                    _ => b'a' + m.below(26) as u8,
                })
                .collect();
            check(&bytes);
        }
    }
}
