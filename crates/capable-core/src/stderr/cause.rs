//! Which line of a server's stderr names its error.
//!
//! A server that dies at start usually says why in one line among many: Node's
//! `Error: Cannot find module 'x'` comes fifth of fourteen, under the loader's frame
//! and above its stack; Python's `ModuleNotFoundError: No module named 'x'` ends a
//! `Traceback`; Rust says `thread 'main' panicked at …`. [`Cause`] reads the lines in
//! order and keeps the **first** one that names an error, by rules strict enough that
//! a server's ordinary log lines do not match:
//!
//! | rule | matches | does not match |
//! |---|---|---|
//! | a line that starts with a name ending in `Error` or `Exception` (a capital first, dots allowed), then `:` | `Error: Cannot find module`, `TypeError: x`, `java.io.IOException: y`, `Uncaught Error: z` | `2024-05-01 Error: x` (not at the start), `ERROR: x`, `errors: 0`, `An Error: x` |
//! | a line that starts with `error:` or `error[CODE]:`, lower case (rustc, cargo, clap, deno) | `error: unexpected argument '--x'`, `error[E0432]: unresolved import` | `error count: 0`, `no error: fine`, `Error handling enabled` |
//! | `panicked at` (Rust) | `thread 'main' panicked at src/main.rs:3:5:` | |
//! | a line that starts with `panic: ` or `fatal error: ` (Go) | `panic: runtime error: index out of range` | `panicking is off` |
//! | `Traceback (most recent call last):` (Python) | the exception line that ends the traceback (the first line after it that is not indented), else the `Traceback` line itself | |
//!
//! Leading spaces are ignored except within a traceback, where they mark its frames.

/// Reads lines in order and keeps the first that names an error (see the module's
/// rules). Sans-IO: feed it lines with [`Cause::line`], ask with [`Cause::found`].
#[derive(Clone, Debug, Default)]
pub struct Cause {
    state: State,
}

#[derive(Clone, Debug, Default)]
enum State {
    /// Nothing found yet.
    #[default]
    Looking,
    /// Inside a Python traceback: its `Traceback` line (index, text), waiting for the
    /// exception line that ends it.
    Traceback(u64, String),
    /// Found, at this line index.
    Found(u64, String),
}

impl Cause {
    /// None yet.
    pub fn new() -> Cause {
        Cause::default()
    }

    /// The next line (its index among all the lines, from 0).
    pub fn line(&mut self, index: u64, line: &str) {
        match &self.state {
            State::Found(..) => {}
            State::Looking => {
                if line.trim_start().starts_with(TRACEBACK) {
                    self.state = State::Traceback(index, line.to_owned());
                } else if names_an_error(line) {
                    self.state = State::Found(index, line.to_owned());
                }
            }
            State::Traceback(..) => {
                let ends_it = !line.trim().is_empty()
                    && !line.starts_with([' ', '\t'])
                    && !line.starts_with(TRACEBACK);
                if ends_it {
                    self.state = State::Found(index, line.to_owned());
                }
            }
        }
    }

    /// The line that names the error and its index: the first found, or a traceback's
    /// `Traceback` line while its exception line has not come.
    pub fn found(&self) -> Option<(u64, &str)> {
        match &self.state {
            State::Looking => None,
            State::Traceback(i, line) | State::Found(i, line) => Some((*i, line)),
        }
    }
}

/// The first line of `text` that names an error (see the module's rules); lines for
/// which `skip` is true are passed over (the markers of a bounded log).
pub fn cause_in(text: &str, skip: impl Fn(&str) -> bool) -> Option<&str> {
    let mut cause = Cause::new();
    let lines: Vec<&str> = text.lines().filter(|l| !skip(l)).collect();
    for (i, line) in lines.iter().enumerate() {
        cause.line(i as u64, line);
        if matches!(cause.state, State::Found(..)) {
            break;
        }
    }
    let (i, _) = cause.found()?;
    lines.get(usize::try_from(i).ok()?).copied()
}

/// How Python begins a traceback.
const TRACEBACK: &str = "Traceback (most recent call last):";

/// Whether `line` names an error by one of the rules other than the traceback's.
fn names_an_error(line: &str) -> bool {
    let line = line.trim_start();
    if line.contains(" panicked at ") {
        return true;
    }
    if line.starts_with("panic: ") || line.starts_with("fatal error: ") {
        return true;
    }
    if line.starts_with("error:") || lowercase_error_with_code(line) {
        return true;
    }
    let line = line.strip_prefix("Uncaught ").unwrap_or(line);
    error_name_then_colon(line)
}

/// `error[E0432]: …`: `error[`, a code without spaces or brackets, `]:`.
fn lowercase_error_with_code(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("error[") else {
        return false;
    };
    match rest.split_once("]:") {
        Some((code, _)) => !code.is_empty() && !code.contains([' ', '[', ']']) && code.len() <= 16,
        None => false,
    }
}

/// `TypeError: …`, `java.io.IOException: …`: a dotted name whose last part starts
/// with a capital and ends in `Error` or `Exception`, right before a `:`.
fn error_name_then_colon(line: &str) -> bool {
    let Some((name, _)) = line.split_once(':') else {
        return false;
    };
    let Some(last) = name.rsplit('.').next() else {
        return false;
    };
    let well_formed = !name.is_empty()
        && name.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        });
    well_formed
        && last.starts_with(|c: char| c.is_ascii_uppercase())
        && (last.ends_with("Error") || last.ends_with("Exception"))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn first(text: &str) -> Option<&str> {
        cause_in(text, |_| false)
    }

    /// What Node prints when the script it was given requires a module that is not
    /// there: the error on line 5 of 14.
    pub(crate) const NODE: &str = "node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '/srv/mcp/dist/index.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:174:12)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.11.0";

    #[test]
    fn node_names_its_error_in_the_middle_of_its_trace() {
        assert_eq!(
            first(NODE),
            Some("Error: Cannot find module '/srv/mcp/dist/index.js'")
        );
    }

    #[test]
    fn a_python_traceback_is_named_by_the_exception_that_ends_it() {
        let text = "Starting server
Traceback (most recent call last):
  File \"/srv/server.py\", line 3, in <module>
    import fastmcp
ModuleNotFoundError: No module named 'fastmcp'";
        assert_eq!(
            first(text),
            Some("ModuleNotFoundError: No module named 'fastmcp'")
        );
        // Cut short: the traceback's first line is all there is.
        let cut = "Traceback (most recent call last):\n  File \"x.py\", line 1";
        assert_eq!(first(cut), Some("Traceback (most recent call last):"));
        // An exception with a name of its own ends it too.
        let interrupted =
            "Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyboardInterrupt";
        assert_eq!(first(interrupted), Some("KeyboardInterrupt"));
    }

    #[test]
    fn rust_go_and_command_line_errors_are_named() {
        for line in [
            "thread 'main' panicked at src/main.rs:3:5:",
            "panic: runtime error: index out of range [3] with length 2",
            "fatal error: all goroutines are asleep - deadlock!",
            "error: unexpected argument '--stdio' found",
            "error[E0432]: unresolved import `foo`",
            "TypeError: Cannot read properties of undefined (reading 'x')",
            "Uncaught Error: boom",
            "java.lang.IllegalStateException: no config",
            "  Error: indented",
        ] {
            let text = format!("starting\n{line}\nbye");
            assert_eq!(first(&text), Some(line), "{line}");
        }
    }

    #[test]
    fn ordinary_log_lines_name_no_error() {
        for line in [
            "INFO: server started, 0 errors",
            "2024-05-01T10:00:00Z Error: later in the line",
            "[error] something went wrong",
            "ERROR: shouting is not the rule",
            "error count: 0",
            "errors: none",
            "no error: all fine",
            "Error handling is enabled",
            "An Error: is not a name",
            "Errors: 0",
            "panicking is off",
            "MyErrorCount: 3",
            "error[]: empty code",
            "Error Error: two words",
        ] {
            assert_eq!(first(line), None, "{line}");
        }
    }

    #[test]
    fn the_first_error_is_kept_and_skipped_lines_are_passed_over() {
        let text = "Error: first\nTypeError: second";
        assert_eq!(first(text), Some("Error: first"));
        let mut cause = Cause::new();
        cause.line(0, "fine");
        cause.line(7, "Error: at seven");
        cause.line(8, "Error: at eight");
        assert_eq!(cause.found(), Some((7, "Error: at seven")));
        // A marker between a traceback and its exception is no exception.
        let text = "Traceback (most recent call last):\n… 3 lines left out …\nValueError: x";
        assert_eq!(
            cause_in(text, |l| l.starts_with('…')),
            Some("ValueError: x")
        );
    }
}
