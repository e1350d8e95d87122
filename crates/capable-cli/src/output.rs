//! Printing: plain text for people, JSON for scripts. Commands build values; this
//! module only formats them.

use std::io::Write;

use capable::Violation;
use serde::Serialize;
use serde_json::Value;

/// A contract violation as evidence: the capability declared, both messages, the
/// server, the negotiated version, the time (the one JSON shape of
/// [`Violation`]'s `Serialize`).
pub fn violation(v: &Violation) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Prints `value` as pretty JSON on stdout.
pub fn json<T: Serialize + ?Sized>(value: &T) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, value);
    let _ = writeln!(out);
}

/// Prints `value` as one line of JSON on stdout (JSON lines), flushed at once.
pub fn json_line<T: Serialize + ?Sized>(value: &T) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, value);
    let _ = writeln!(out);
    let _ = out.flush();
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
