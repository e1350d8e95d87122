//! capable in a shell: `--version` names the version and the commit, completion
//! scripts the shell accepts, manual pages for every subcommand, and colour only where
//! `--color` and NO_COLOR allow it — checked on a real terminal (a pseudo-terminal).

mod common;

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{bin, capable, CacheDir};

const T: Duration = Duration::from_secs(20);
const ESC: &str = "\x1b[";

#[test]
fn version_names_the_version_and_the_commit() {
    let run = capable(&["--version"], T);
    run.expect_code(0);
    // In a git checkout, the commit checked out; elsewhere (no git) "unknown".
    let commit = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout)[..12].to_owned())
        .unwrap_or_else(|| "unknown".into());
    assert_eq!(
        run.stdout.trim(),
        format!("capable {} (commit {commit})", env!("CARGO_PKG_VERSION"))
    );
    // Each subcommand says the same.
    let sub = capable(&["tools", "--version"], T);
    assert_eq!(
        sub.stdout.trim(),
        run.stdout.trim().replacen("capable", "capable-tools", 1)
    );
}

#[test]
fn the_bash_completion_script_is_valid_bash_and_every_shell_gets_one() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let run = capable(&["completions", shell], T);
        run.expect_code(0);
        assert!(run.stdout.contains("capable"), "{shell}: {}", run.stdout);
        assert!(
            run.stdout.contains("token-store"),
            "{shell} lacks a global flag"
        );
    }
    let script = capable(&["completions", "bash"], T).stdout;
    let dir = CacheDir::new();
    let file = dir.0.join("capable.bash");
    std::fs::write(&file, &script).unwrap();
    // Sourced in a real bash, it registers the completion for `capable`.
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("source {} && complete -p capable", file.display()))
        .output()
        .expect("bash");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("capable"));
    capable(&["completions", "tcsh"], T).expect_code(2);
}

#[test]
fn man_writes_one_page_per_subcommand() {
    let dir = CacheDir::new();
    let out = dir.0.join("man1");
    let run = capable(&["man", out.to_str().unwrap()], T);
    run.expect_code(0);
    for page in [
        "capable.1",
        "capable-tools-call.1",
        "capable-auth-login.1",
        "capable-completions.1",
    ] {
        let text =
            std::fs::read_to_string(out.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(
            text.starts_with(".ie") || text.contains(".TH"),
            "{page} is not roff"
        );
        assert!(
            run.stdout.contains(page),
            "{page} not listed: {}",
            run.stdout
        );
    }
    // Every page it lists is there, and nothing else.
    let listed = run.stdout.lines().count();
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), listed);
    // What man itself shows of one, where man-db's formatter is installed.
    if Command::new("groff").arg("--version").output().is_ok() {
        let shown = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww"])
            .arg(out.join("capable-tools-call.1"))
            .output()
            .expect("groff");
        let warnings = String::from_utf8_lossy(&shown.stderr);
        assert!(shown.status.success() && warnings.is_empty(), "{warnings}");
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(
            text.contains("capable-tools-call  -  Call a tool"),
            "{text}"
        );
    }
}

/// Runs capable with its stderr on a pseudo-terminal and returns what it wrote there.
fn on_a_terminal(args: &[&str], env: &[(&str, &str)]) -> String {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: two out-pointers to live ints; no name, termios or window size asked for.
    let r = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: openpty returned two fresh descriptors, each owned here once.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut child = Command::new(bin())
        .args(args)
        .env_remove("NO_COLOR")
        .env_remove("CAPABLE_LOG")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .expect("capable");
    let status = child.wait().expect("wait");
    assert!(status.code().is_some(), "{status}");
    // The child is gone, so is the terminal's other end: read until it says so (EIO).
    let mut out = Vec::new();
    let mut master = std::fs::File::from(master);
    let mut chunk = [0u8; 4096];
    while let Ok(n @ 1..) = master.read(&mut chunk) {
        out.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn colour_follows_the_flag_then_no_color_then_the_terminal() {
    // A usage error, which clap writes to stderr: coloured on a terminal by default.
    let bad = ["inspect", "--no-such-flag"];
    let with = |extra: &[&'static str]| -> Vec<&str> { extra.iter().copied().chain(bad).collect() };
    assert!(
        on_a_terminal(&bad, &[]).contains(ESC),
        "a terminal is coloured by default"
    );
    let no_color = on_a_terminal(&bad, &[("NO_COLOR", "1")]);
    assert!(
        !no_color.contains(ESC) && no_color.contains("--no-such-flag"),
        "{no_color:?}"
    );
    // An empty NO_COLOR asks for nothing.
    assert!(on_a_terminal(&bad, &[("NO_COLOR", "")]).contains(ESC));
    assert!(!on_a_terminal(&with(&["--color", "never"]), &[]).contains(ESC));
    // The flag wins over the variable.
    assert!(on_a_terminal(&with(&["--color=always"]), &[("NO_COLOR", "1")]).contains(ESC));
    // Into a pipe: plain, unless asked.
    let piped = capable(&bad, T);
    piped.expect_code(2);
    assert!(!piped.stderr.contains(ESC), "{:?}", piped.stderr);
    assert!(capable(&with(&["--color", "always"]), T)
        .stderr
        .contains(ESC));
}

#[test]
fn log_lines_are_coloured_by_the_same_rule() {
    // The garbage fixture writes lines that are no JSON-RPC: each is a logged warning.
    let read = |extra: &[&'static str]| -> Vec<String> {
        let mut args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        args.extend(["read".into(), "docs://manual/current".into(), "--".into()]);
        args.extend(common::fixture("garbage"));
        args
    };
    let warned = |stderr: &str| {
        stderr
            .lines()
            .any(|l| l.contains("WARN") && l.contains("not a JSON-RPC message"))
    };
    let args = read(&[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let terminal = on_a_terminal(&args, &[]);
    assert!(warned(&terminal) && terminal.contains(ESC), "{terminal:?}");
    let plain = on_a_terminal(&args, &[("NO_COLOR", "1")]);
    assert!(warned(&plain) && !plain.contains(ESC), "{plain:?}");
    let piped = capable(&args, T);
    assert!(
        warned(&piped.stderr) && !piped.stderr.contains(ESC),
        "{:?}",
        piped.stderr
    );
    let always = read(&["--color", "always"]);
    let always: Vec<&str> = always.iter().map(String::as_str).collect();
    let forced = capable(&always, T);
    assert!(
        warned(&forced.stderr) && forced.stderr.contains(ESC),
        "{:?}",
        forced.stderr
    );
}
