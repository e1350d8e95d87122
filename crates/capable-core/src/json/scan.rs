//! The two byte searches every reader here starts from: whether a text holds a raw
//! control byte (JSON allows one only as whitespace between tokens), and where the
//! quotes and backslashes of eight bytes are.

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
