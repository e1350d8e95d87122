//! What a server wrote to stderr, kept within bounds: its first lines, its last lines,
//! and the line that names its error.
//!
//! A server that dies at start says why near the top (Node's `Error: Cannot find
//! module …` is the fifth of fourteen lines) and a server that ran for hours says why
//! at the bottom; keeping only the last lines loses the first case, keeping everything
//! costs unbounded memory for a server that floods its stderr. [`StderrLog`] keeps
//! both ends, each bounded in lines and bytes, counts what falls between, and keeps
//! the line that names the error (by the rules of [`Cause`]) wherever it was:
//!
//! ```
//! use capable_core::internal::stderr::StderrLog;
//!
//! let mut log = StderrLog::new();
//! log.push("loading config".into());
//! log.push("Error: Cannot find module 'x'".into());
//! for n in 0..1000 {
//!     log.push(format!("retry {n}"));
//! }
//! assert_eq!(log.cause(), Some("Error: Cannot find module 'x'"));
//! let text = log.text();
//! assert!(text.starts_with("loading config\nError: Cannot find module 'x'\nretry 0\n"));
//! assert!(text.contains(" lines left out …\n"));
//! assert!(text.ends_with("retry 999"));
//! // The text keeps its cause findable, markers and all.
//! assert_eq!(capable_core::internal::stderr::cause_of(&text), Some("Error: Cannot find module 'x'"));
//! ```

mod cause;

use std::collections::VecDeque;

pub use cause::Cause;

/// A server's stderr, bounded: the first [`HEAD_LINES`] lines (at most [`HEAD_BYTES`]),
/// the last [`TAIL_LINES`] (at most [`TAIL_BYTES`]), each line cut to [`LINE_BYTES`],
/// how many lines fell between, and the line that names the error, kept even when it
/// fell between.
#[derive(Clone, Debug, Default)]
pub struct StderrLog {
    head: Vec<String>,
    head_bytes: usize,
    /// The head takes no more lines once one did not fit: it stays the first lines.
    head_closed: bool,
    tail: VecDeque<String>,
    tail_bytes: usize,
    /// How many lines were pushed in all.
    total: u64,
    cause: Cause,
}

/// Lines kept from the start.
pub const HEAD_LINES: usize = 40;
/// Bytes kept from the start.
pub const HEAD_BYTES: usize = 16 * 1024;
/// Lines kept from the end.
pub const TAIL_LINES: usize = 160;
/// Bytes kept from the end.
pub const TAIL_BYTES: usize = 48 * 1024;
/// The longest line kept: a longer one keeps its start.
pub const LINE_BYTES: usize = 8 * 1024;

/// How a marker line of [`StderrLog::text`] begins and ends.
const MARKER_START: &str = "… ";
const MARKER_END: &str = " left out …";

impl StderrLog {
    /// Nothing written yet.
    pub fn new() -> StderrLog {
        StderrLog::default()
    }

    /// The next line (without its newline); cut to [`LINE_BYTES`] at a character
    /// boundary.
    pub fn push(&mut self, mut line: String) {
        cut(&mut line, LINE_BYTES);
        self.cause.line(self.total, &line);
        self.total += 1;
        if !self.head_closed {
            let fits = self.head.len() < HEAD_LINES && self.head_bytes + line.len() <= HEAD_BYTES;
            if fits {
                self.head_bytes += line.len();
                self.head.push(line);
                return;
            }
            self.head_closed = true;
        }
        self.tail_bytes += line.len();
        self.tail.push_back(line);
        while self.tail.len() > TAIL_LINES || self.tail_bytes > TAIL_BYTES {
            match self.tail.pop_front() {
                Some(old) => self.tail_bytes -= old.len(),
                None => break,
            }
        }
    }

    /// How many lines were written in all.
    pub fn lines_written(&self) -> u64 {
        self.total
    }

    /// The line that names the error, if one did (by the rules of [`Cause`]).
    pub fn cause(&self) -> Option<&str> {
        self.cause.found().map(|(_, line)| line)
    }

    /// The kept lines as text: the first lines, then `… N lines left out …` where some
    /// fell between (the cause, when it fell there, kept in its place between two
    /// such markers), then the last lines.
    pub fn text(&self) -> String {
        let mut out: Vec<String> = self.head.clone();
        let head_end = self.head.len() as u64;
        let tail_start = self.total - self.tail.len() as u64;
        match self.cause.found() {
            Some((at, line)) if at >= head_end && at < tail_start => {
                out.extend(marker(at - head_end));
                out.push(line.to_owned());
                out.extend(marker(tail_start - at - 1));
            }
            _ => out.extend(marker(tail_start - head_end)),
        }
        out.extend(self.tail.iter().cloned());
        out.join("\n")
    }
}

/// The marker for `n` lines left out, when there are any.
fn marker(n: u64) -> Option<String> {
    match n {
        0 => None,
        1 => Some(format!("{MARKER_START}1 line{MARKER_END}")),
        n => Some(format!("{MARKER_START}{n} lines{MARKER_END}")),
    }
}

/// Whether `line` is a marker of [`StderrLog::text`].
fn is_marker(line: &str) -> bool {
    line.starts_with(MARKER_START) && line.ends_with(MARKER_END)
}

/// The line of a server's stderr (as [`StderrLog::text`] gives it, or any text) that
/// names its error, by the rules of [`Cause`].
pub fn cause_of(text: &str) -> Option<&str> {
    cause::cause_in(text, is_marker)
}

/// `line` cut to at most `max` bytes, at a character boundary.
fn cut(line: &mut String, max: usize) {
    if line.len() > max {
        let mut at = max;
        while !line.is_char_boundary(at) {
            at -= 1;
        }
        line.truncate(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(lines: impl IntoIterator<Item = String>) -> StderrLog {
        let mut log = StderrLog::new();
        for line in lines {
            log.push(line);
        }
        log
    }

    #[test]
    fn a_short_stderr_is_kept_whole() {
        let log = log_of(cause::tests::NODE.lines().map(str::to_owned));
        assert_eq!(log.text(), cause::tests::NODE);
        assert_eq!(log.lines_written(), 14);
        assert_eq!(
            log.cause(),
            Some("Error: Cannot find module '/srv/mcp/dist/index.js'")
        );
    }

    #[test]
    fn a_long_stderr_keeps_its_first_and_last_lines_and_says_how_many_fell_between() {
        let log = log_of((0..1000).map(|n| format!("line {n}")));
        let text = log.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), HEAD_LINES + 1 + TAIL_LINES);
        assert_eq!(lines[0], "line 0");
        assert_eq!(lines[HEAD_LINES - 1], format!("line {}", HEAD_LINES - 1));
        let left_out = 1000 - HEAD_LINES - TAIL_LINES;
        assert_eq!(lines[HEAD_LINES], format!("… {left_out} lines left out …"));
        assert_eq!(lines[HEAD_LINES + 1], format!("line {}", 1000 - TAIL_LINES));
        assert_eq!(lines.last(), Some(&"line 999"));
        assert_eq!(log.cause(), None);
        assert_eq!(cause_of(&text), None);
    }

    #[test]
    fn a_cause_that_fell_between_is_kept_in_its_place() {
        let mut lines: Vec<String> = (0..500).map(|n| format!("line {n}")).collect();
        lines[100] = "Error: the reason".into();
        let log = log_of(lines);
        let text = log.text();
        let shown: Vec<&str> = text.lines().collect();
        let before = 100 - HEAD_LINES;
        let after = 500 - TAIL_LINES - 101;
        assert_eq!(
            shown[HEAD_LINES..HEAD_LINES + 3],
            [
                format!("… {before} lines left out …"),
                "Error: the reason".to_owned(),
                format!("… {after} lines left out …"),
            ]
        );
        assert_eq!(cause_of(&text), Some("Error: the reason"));
    }

    #[test]
    fn a_flood_is_bounded_in_bytes_whatever_its_lines() {
        let mut log = StderrLog::new();
        for _ in 0..10_000 {
            log.push("é".repeat(LINE_BYTES));
        }
        let text = log.text();
        assert!(
            text.len() <= HEAD_BYTES + TAIL_BYTES + LINE_BYTES + 200,
            "{} bytes kept",
            text.len()
        );
        assert!(text.lines().all(|l| l.len() <= LINE_BYTES));
        assert_eq!(log.lines_written(), 10_000);
        // One line left out reads as one.
        let log = log_of((0..=(HEAD_LINES + TAIL_LINES)).map(|n| n.to_string()));
        assert!(log.text().contains("\n… 1 line left out …\n"));
    }
}
