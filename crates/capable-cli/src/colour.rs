//! Colour: one decision for everything capable colours, which is clap's help, usage and
//! errors and the log lines on stderr. Nothing else is coloured: tables and text are
//! plain, a server's words are escaped (never obeyed), and `bench`'s progress bar has
//! no colour in its template.
//!
//! `--color always` and `--color never` decide. `auto`, the default, colours a terminal
//! unless `NO_COLOR` is set to anything but the empty string (no-color.org); the flag
//! wins over the variable.

use std::ffi::OsString;
use std::io::IsTerminal;

/// `--color` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorFlag {
    /// A terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    /// Always, even into a pipe or a file.
    Always,
    /// Never.
    Never,
}

impl ColorFlag {
    /// What the command line asks for, read before clap parses it so that clap's own
    /// help and errors follow it too: the last `--color WHEN` or `--color=WHEN` before
    /// `--`. Anything unreadable is `auto` here (clap then says what is wrong with it).
    pub fn from_args(args: &[OsString]) -> ColorFlag {
        let mut choice = ColorFlag::Auto;
        let mut args = args.iter().skip(1).map(|a| a.to_str().unwrap_or(""));
        while let Some(arg) = args.next() {
            let value = match arg {
                "--" => break,
                "--color" => args.next(),
                _ => arg.strip_prefix("--color="),
            };
            if let Some(value) = value {
                choice = clap::ValueEnum::from_str(value, false).unwrap_or(ColorFlag::Auto);
            }
        }
        choice
    }

    /// The choice for clap: `auto` stays clap's own (a terminal, per stream) unless
    /// NO_COLOR says no.
    pub fn for_clap(self) -> clap::ColorChoice {
        match self.resolve(no_color(), None) {
            Some(true) => clap::ColorChoice::Always,
            Some(false) => clap::ColorChoice::Never,
            None => clap::ColorChoice::Auto,
        }
    }

    /// Whether to colour what goes to stderr.
    pub fn stderr(self) -> bool {
        self.resolve(no_color(), Some(std::io::stderr().is_terminal()))
            .unwrap_or(false)
    }

    /// The rule: the flag, then NO_COLOR, then whether the stream is a terminal
    /// (`None`: not known here, left to the writer).
    fn resolve(self, no_color: bool, terminal: Option<bool>) -> Option<bool> {
        match self {
            ColorFlag::Always => Some(true),
            ColorFlag::Never => Some(false),
            ColorFlag::Auto if no_color => Some(false),
            ColorFlag::Auto => terminal,
        }
    }
}

/// Whether `NO_COLOR` asks for no colour (set, and not empty).
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<OsString> {
        line.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn the_flag_is_found_wherever_clap_would_take_it() {
        assert_eq!(
            ColorFlag::from_args(&args("capable inspect")),
            ColorFlag::Auto
        );
        assert_eq!(
            ColorFlag::from_args(&args("capable --color never inspect")),
            ColorFlag::Never
        );
        assert_eq!(
            ColorFlag::from_args(&args("capable inspect --color=always")),
            ColorFlag::Always
        );
        // The last one counts; the server's own arguments are not capable's.
        assert_eq!(
            ColorFlag::from_args(&args("capable --color never --color always read x")),
            ColorFlag::Always
        );
        assert_eq!(
            ColorFlag::from_args(&args("capable inspect -- server --color never")),
            ColorFlag::Auto
        );
        assert_eq!(
            ColorFlag::from_args(&args("capable --color sometimes")),
            ColorFlag::Auto
        );
    }

    #[test]
    fn the_flag_wins_then_no_color_then_the_terminal() {
        use ColorFlag::*;
        assert_eq!(Always.resolve(true, Some(false)), Some(true));
        assert_eq!(Never.resolve(false, Some(true)), Some(false));
        assert_eq!(Auto.resolve(true, Some(true)), Some(false));
        assert_eq!(Auto.resolve(false, Some(true)), Some(true));
        assert_eq!(Auto.resolve(false, Some(false)), Some(false));
        assert_eq!(Auto.resolve(false, None), None);
    }
}
