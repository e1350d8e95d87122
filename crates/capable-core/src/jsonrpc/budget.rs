//! How much a message may hold: its JSON values counted without parsing it, against a
//! budget that grows with the size limit, so that a decoded message costs a small
//! multiple of its bytes whatever its shape.

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
