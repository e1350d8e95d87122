//! Printing: plain text for people, JSON for scripts. Commands build values; this
//! module only formats them.

use std::io::Write;

use capable::Violation;

use crate::exit::CliError;
use serde::Serialize;
use serde_json::Value;

/// A contract violation as evidence: the capability declared, both messages, the
/// server, the negotiated version, the time (the one JSON shape of
/// [`Violation`]'s `Serialize`).
pub fn violation(v: &Violation) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Writes `bytes` to stdout in one write and flushes. A stdout nobody reads any more
/// (`capable tools | head -1`) is [`CliError::OutputClosed`]: the command stops and
/// capable exits quietly, after closing the session in order.
fn write_stdout(bytes: &[u8]) -> Result<(), CliError> {
    let bytes = crate::secrets::scrub_bytes(bytes);
    let mut out = std::io::stdout().lock();
    let written = out.write_all(&bytes).and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(CliError::OutputClosed),
        // Any other failure to write (a full disk) is not worth failing the command.
        _ => Ok(()),
    }
}

/// Prints text for people on stdout, every character that could act on a terminal
/// spelled out (a server's words are shown exactly, never obeyed).
pub fn print(text: &str) -> Result<(), CliError> {
    write_stdout(capable::internal::text::printable(text, true).as_bytes())
}

/// Writes bytes the user asked for as they are (a file to redirect); on a terminal
/// they are shown as text for people instead, like [`print`].
pub fn raw(bytes: &[u8]) -> Result<(), CliError> {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() {
        return print(&String::from_utf8_lossy(bytes));
    }
    write_stdout(bytes)
}

/// Prints one line for people on stderr, in one write (errors, hints, progress).
pub fn eprint_line(text: &str) {
    let mut line =
        capable::internal::text::printable(&crate::secrets::scrub(text), true).into_owned();
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Prints `value` as pretty JSON on stdout.
pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<(), CliError> {
    let mut text = serde_json::to_vec_pretty(value).unwrap_or_default();
    text.push(b'\n');
    write_stdout(&text)
}

/// Prints `value` as one line of JSON on stdout (JSON lines), flushed at once.
pub fn json_line<T: Serialize + ?Sized>(value: &T) -> Result<(), CliError> {
    let mut text = serde_json::to_vec(value).unwrap_or_default();
    text.push(b'\n');
    write_stdout(&text)
}

/// A simple aligned table.
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with a header row.
    pub fn new(header: &[&str]) -> Self {
        Table {
            rows: vec![header.iter().map(|s| s.to_string()).collect()],
        }
    }

    /// How many rows there are, the header left out.
    pub fn len(&self) -> usize {
        self.rows.len() - 1
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as text, columns padded to their widest cell.
    pub fn render(&self) -> String {
        let cols = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..cols)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(widths[i] - cell.chars().count() + 2));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `yes`/`no`.
pub fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

/// Cuts a text to `max` characters for one-line display.
pub fn one_line(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}
