//! Text from a server, made safe to show a person.
//!
//! A server's names, messages, `instructions` and stderr may hold control characters:
//! an escape sequence can retitle or clear a terminal and print a fake verdict, a bare
//! carriage return can overwrite a line, a bidirectional override can make text read
//! other than it is. [`printable`] spells every such character out (`\u{1b}`), keeping
//! only newlines and tabs, so what is shown is exactly what was sent. JSON output needs
//! none of this: its encoder escapes control characters itself.

use std::borrow::Cow;

/// Whether `c` may reach a terminal as it is.
fn is_safe(c: char, newlines: bool) -> bool {
    match c {
        '\n' => newlines,
        '\t' => true,
        // C0 controls, DEL, C1 controls.
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => false,
        // Bidirectional embeddings, overrides and isolates; the BOM / zero-width no-break.
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}' => false,
        _ => true,
    }
}

/// `text` with every character that could act on a terminal spelled out as `\u{…}`;
/// with `newlines`, line breaks are kept (multi-line text such as a resource's
/// contents), else they are spelled out too (a one-line log entry).
pub fn printable(text: &str, newlines: bool) -> Cow<'_, str> {
    if text.chars().all(|c| is_safe(c, newlines)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_safe(c, newlines) {
            out.push(c);
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

/// A size as people write it: `64 MiB`, `512 KiB`, `1.5 MiB`, `900 bytes`.
pub fn size(bytes: usize) -> String {
    const UNITS: [(&str, usize); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, scale) in UNITS {
        if bytes >= scale {
            return if bytes.is_multiple_of(scale) {
                format!("{} {unit}", bytes / scale)
            } else {
                format!("{:.1} {unit}", bytes as f64 / scale as f64)
            };
        }
    }
    format!("{bytes} bytes")
}

/// Reads a size as people write it: `64MiB`, `512KiB`, `1GiB`, or a number of bytes
/// (`k`, `kb`, `m`, … are taken too). It must be positive and fit in memory.
///
/// ```
/// assert_eq!(capable_core::internal::text::parse_size("64KiB"), Ok(64 * 1024));
/// assert!(capable_core::internal::text::parse_size("0").is_err());
/// ```
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: usize = number
        .parse()
        .map_err(|_| format!("{s:?} is not a size (try 64MiB, 512KiB or a number of bytes)"))?;
    let factor: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => {
            return Err(format!(
                "{s:?}: unknown unit {other:?} (use KiB, MiB or GiB)"
            ))
        }
    };
    n.checked_mul(factor)
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("{s:?}: a size must be positive and fit in memory"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(64 << 20), "64 MiB");
        assert_eq!(size(1536 << 10), "1.5 MiB");
        assert_eq!(size(900), "900 bytes");
        assert_eq!(size(2 << 30), "2 GiB");
    }

    #[test]
    fn sizes_are_read_as_people_write_them() {
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("512kib").unwrap(), 512 << 10);
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert!(parse_size("0").is_err());
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5 parsecs").is_err());
    }

    #[test]
    fn escape_sequences_are_spelled_out_and_plain_text_is_untouched() {
        let fake = "\u{1b}]0;pwned\u{7}\u{1b}[2J\rall checks passed";
        let shown = printable(fake, true);
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\r'),
            "{shown}"
        );
        assert_eq!(
            shown,
            "\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{d}all checks passed"
        );
        assert!(matches!(
            printable("plain\ttext\nwith lines", true),
            Cow::Borrowed(_)
        ));
        assert_eq!(printable("a\nb", false), "a\\u{a}b");
        assert_eq!(
            printable("evil\u{202e}txt.exe", true),
            "evil\\u{202e}txt.exe"
        );
        assert_eq!(
            printable("caf\u{e9} \u{1f600}", true),
            "caf\u{e9} \u{1f600}"
        );
    }
}
