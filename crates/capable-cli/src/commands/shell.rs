//! `capable completions SHELL` and `capable man DIR`: the shell's completion script and
//! the manual pages, made at run time from the same clap definitions that parse the
//! command line, so that neither can fall out of step with the flags (nothing
//! generated is kept in the repository).

use std::path::Path;

use clap::CommandFactory;

use crate::exit::CliError;
use crate::flags::Cli;
use crate::output;

/// Prints the completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<(), CliError> {
    output::raw(&script(shell))
}

fn script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "capable", &mut script);
    script
}

/// Writes `capable.1` and one page per subcommand into `dir`, and lists them on stdout.
pub fn man(dir: &Path) -> Result<(), CliError> {
    let failed = |e: std::io::Error| {
        CliError::Usage(format!(
            "cannot write the manual pages into {}: {e}",
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(failed)?;
    let mut written = String::new();
    for (name, page) in pages().map_err(failed)? {
        let path = dir.join(name);
        std::fs::write(&path, page).map_err(failed)?;
        written.push_str(&format!("{}\n", path.display()));
    }
    output::print(&written)
}

/// Every manual page, by file name: the command's, then each subcommand's at every
/// depth, as `man capable-tools-call` finds it.
fn pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut pages = Vec::new();
    add_pages(&built(), &mut pages)?;
    Ok(pages)
}

/// The command as the pages show it: global flags on every subcommand, each named in
/// full (`capable-tools-call`), no `help` subcommand (every page is the help).
fn built() -> clap::Command {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

fn add_pages(cmd: &clap::Command, pages: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(cmd.clone())
        .source(format!("capable {}", crate::flags::VERSION))
        .manual("capable");
    let mut page = Vec::new();
    man.render(&mut page)?;
    pages.push((man.get_filename(), page));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        add_pages(sub, pages)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command's full name (`capable tools call`) with its long flags, from the
    /// definitions themselves.
    fn commands() -> Vec<(String, Vec<String>)> {
        fn walk(cmd: &clap::Command, name: String, out: &mut Vec<(String, Vec<String>)>) {
            let flags = cmd
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| a.get_long().map(str::to_owned))
                .collect();
            out.push((name.clone(), flags));
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                walk(sub, format!("{name} {}", sub.get_name()), out);
            }
        }
        let mut out = Vec::new();
        walk(&built(), "capable".into(), &mut out);
        out
    }

    #[test]
    fn every_command_has_its_page_and_every_page_its_flags() {
        let pages = pages().unwrap();
        let commands = commands();
        assert!(commands.len() > 25, "{}", commands.len());
        assert_eq!(pages.len(), commands.len());
        for ((name, flags), (file, page)) in commands.iter().zip(&pages) {
            assert_eq!(file, &format!("{}.1", name.replace(' ', "-")));
            let page = String::from_utf8_lossy(page);
            assert!(
                page.contains(env!("CARGO_PKG_VERSION")),
                "{file} has no version"
            );
            for flag in flags {
                // roff writes each `-` as `\-`.
                let shown = format!("\\-\\-{}", flag.replace('-', "\\-"));
                assert!(page.contains(&shown), "{file} does not document --{flag}");
            }
        }
    }

    #[test]
    fn every_shell_completes_every_command_and_flag() {
        use clap::ValueEnum;
        let commands = commands();
        for shell in clap_complete::Shell::value_variants() {
            let script = String::from_utf8(script(*shell)).unwrap();
            let words: std::collections::HashSet<&str> = script
                .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
                .collect();
            for (name, flags) in &commands {
                let last = name.rsplit(' ').next().unwrap();
                assert!(words.contains(last), "{shell}: no {name}");
                for flag in flags {
                    // fish names a long flag `-l flag`; the others write `--flag`.
                    let written = match shell {
                        clap_complete::Shell::Fish => format!("-l {flag}"),
                        _ => format!("--{flag}"),
                    };
                    assert!(script.contains(&written), "{shell}: no --{flag} for {name}");
                }
            }
        }
    }
}
