//! Where a JSON string ends, found and checked in one walk over its bytes.
//!
//! A string's text may hold any byte but three kinds: a quote (which ends it), a
//! backslash (which starts an escape), and a raw control byte below 0x20 (which JSON
//! forbids there). A reader that wants the string as it stands has to look at every
//! byte for all three; doing it in separate passes — one for the end, one for control
//! bytes over the whole text — reads the long strings (a resource's text) twice over
//! and the short ones (keys, URIs, MIME types) through set-up costs larger than they
//! are. Here all three are looked for at once: on a CPU with AVX2 (nearly all x86-64
//! CPUs in use; chosen at run time), 64 bytes a step with vector instructions;
//! otherwise the first bytes a word at a time, and a longer string by memchr's vector
//! search for its end and a vector check of what lies before it.
//!
//! UTF-8 is not this walk's business: the readers check it for the whole text they
//! copy, once.

use super::scan::{has_control_byte, quotes_in};

/// How far the word-at-a-time search goes before the vector search takes over: most
/// keys, URIs and MIME types end within it, and the vector search's set-up costs more
/// than the words do up to here.
const SHORT: usize = 32;

/// Where the first quote or backslash in `bytes` (the text of a string, after its
/// opening quote) is, provided no raw control byte comes before it: the end of the
/// string, or the start of its first escape. `None` when a control byte comes first or
/// there is neither (the string is not valid, or not complete).
#[inline]
pub(crate) fn plain_string_end(bytes: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if bytes.len() >= avx2::BLOCK && std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above), all `avx2::plain_string_end`
        // asks of its caller.
        return unsafe { avx2::plain_string_end(bytes) };
    }
    by_words(bytes)
}

/// [`plain_string_end`] without vector instructions of its own: the first bytes a word
/// at a time, the rest by memchr's search for the end and a check of what lies before.
fn by_words(bytes: &[u8]) -> Option<usize> {
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
/// below 0x20, each marked by its top bit: [`quotes_in`]'s marks, and likewise those of
/// `x - 0x20` borrowing into the top bit of a byte `x` below 0x20 (the lowest mark is
/// exact, as there).
fn stops_in(w: u64) -> u64 {
    const SPACES: u64 = u64::from_le_bytes([0x20; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    quotes_in(w) | (w.wrapping_sub(SPACES) & !w & HIGHS)
}

/// The search 64 bytes at a time with AVX2, which nearly every x86-64 CPU in use has
/// (the crate is built for the baseline, SSE2, so it is chosen at run time): one pass
/// that looks for all three kinds of stop at once costs about three fifths of what
/// memchr's search for the end and a separate check for control bytes do together,
/// and a short string is done in one step.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
        _mm256_set1_epi8, _mm256_setr_epi8, _mm256_shuffle_epi8, _mm256_subs_epu8,
    };

    /// How many bytes one step looks at; the search needs at least this many.
    pub(super) const BLOCK: usize = 64;

    /// [`super::plain_string_end`], for `bytes` of at least [`BLOCK`] bytes.
    ///
    /// The first block is looked at on its own: most strings (keys, URIs, MIME types)
    /// end there. Then two blocks a step, with one test for both, until a pair holds a
    /// stop or fewer than two blocks are left; then one block a step, the last one
    /// overlapping the one before it (its bytes already looked at left out).
    ///
    /// # Safety
    ///
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn plain_string_end(bytes: &[u8]) -> Option<usize> {
        let (low, high) = halves(bytes.get(..BLOCK)?)?;
        if any(low, high) {
            return first_stop(bytes, 0, mask(low, high));
        }
        let mut at = BLOCK;
        for pair in bytes[BLOCK..].chunks_exact(2 * BLOCK) {
            let (block, next) = pair.split_at(BLOCK);
            let ((a, b), (c, d)) = (halves(block)?, halves(next)?);
            if any(_mm256_or_si256(a, b), _mm256_or_si256(c, d)) {
                break;
            }
            at += 2 * BLOCK;
        }
        let stops = loop {
            if let Some(block) = bytes.get(at..at + BLOCK) {
                let (low, high) = halves(block)?;
                if any(low, high) {
                    break mask(low, high);
                }
                at += BLOCK;
                continue;
            }
            let from = bytes.len().checked_sub(BLOCK)?;
            let seen = at.checked_sub(from)?;
            let (low, high) = halves(&bytes[from..])?;
            break mask(low, high).checked_shr(seen as u32)?;
        };
        first_stop(bytes, at, stops)
    }

    /// The stop `stops` marks first (bit `n` for the byte at `at + n`), when it is a
    /// quote or a backslash; `None` for a control byte, or no stop.
    fn first_stop(bytes: &[u8], at: usize, stops: u64) -> Option<usize> {
        if stops == 0 {
            return None;
        }
        let stop = at + stops.trailing_zeros() as usize;
        (*bytes.get(stop)? >= 0x20).then_some(stop)
    }

    /// Whether either vector marks a stop.
    #[target_feature(enable = "avx2")]
    fn any(low: __m256i, high: __m256i) -> bool {
        _mm256_movemask_epi8(_mm256_or_si256(low, high)) != 0
    }

    /// The stops among the 64 bytes of `block`, as two vectors (the first 32 bytes,
    /// then the next): a byte's top bit set marks a stop. `None` if `block` is not 64
    /// bytes long.
    #[target_feature(enable = "avx2")]
    fn halves(block: &[u8]) -> Option<(__m256i, __m256i)> {
        let (low, high) = block.split_first_chunk::<32>()?;
        let high = high.first_chunk::<32>()?;
        Some((stops(low), stops(high)))
    }

    /// The stops among 32 bytes.
    ///
    /// A quote or a backslash, found by one lookup and one compare: a shuffle looks
    /// each byte's low four bits up in a 16-byte table (a byte with its top bit set
    /// gets 0), and a byte is a stop where it equals what it looked up. The table
    /// holds the quote (0x22) at 2, the backslash (0x5c) at 12, and at every other
    /// place a value no byte with that low half can be: 1 at 0, 0 elsewhere.
    ///
    /// A byte below 0x20 is what a saturating `0x9f - byte` leaves with its top bit set
    /// (0x9f - 0x1f = 0x80; 0x9f - 0x20 = 0x7f; anything from 0x9f on gives 0).
    #[target_feature(enable = "avx2")]
    fn stops(bytes: &[u8; 32]) -> __m256i {
        // SAFETY: reads the 32 bytes `bytes` refers to; `loadu` needs no alignment.
        let v = unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) };
        // The same table in both 16-byte lanes: the shuffle looks up within a lane.
        let table = _mm256_setr_epi8(
            1, 0, 0x22, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x5c, 0, 0, 0, //
            1, 0, 0x22, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x5c, 0, 0, 0,
        );
        let quotes_or_backslashes = _mm256_cmpeq_epi8(_mm256_shuffle_epi8(table, v), v);
        let controls = _mm256_subs_epu8(_mm256_set1_epi8(0x9f_u8 as i8), v);
        _mm256_or_si256(quotes_or_backslashes, controls)
    }

    /// The marks of 64 bytes as bits, the first byte lowest.
    #[target_feature(enable = "avx2")]
    fn mask(low: __m256i, high: __m256i) -> u64 {
        let low = _mm256_movemask_epi8(low) as u32;
        let high = _mm256_movemask_epi8(high) as u32;
        u64::from(low) | u64::from(high) << 32
    }
}

#[cfg(test)]
mod tests {
    use super::super::agreement::Mutator;
    use super::{by_words, plain_string_end};

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
    /// to the vector search included, against the byte-at-a-time search: both the
    /// search this CPU runs and the one without vector instructions of its own.
    #[test]
    fn the_searches_agree_with_a_byte_search() {
        let specials = [
            b'"', b'\\', 0x00, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0x9f, 0xa2, 0xdc, 0xff,
        ];
        let check = |bytes: &[u8]| {
            let want = by_bytes(bytes);
            assert_eq!(plain_string_end(bytes), want, "{bytes:?}");
            assert_eq!(by_words(bytes), want, "{bytes:?}");
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
