//! Names the commit `capable --version` was built from, as `CAPABLE_COMMIT`:
//!
//! 1. a package from crates.io: the commit cargo recorded when it was packaged
//!    (`.cargo_vcs_info.json`, beside this file);
//! 2. a git checkout: `git rev-parse HEAD`, when git is installed and this crate is
//!    tracked there (never the commit of some repository the sources merely sit in);
//! 3. otherwise `unknown`.
//!
//! The first twelve hex digits, as `git log --abbrev=12` shows them.

use std::path::Path;
use std::process::Command;

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&dir);
    // Without a line of this kind, cargo would run this again on any change in the crate.
    println!("cargo:rerun-if-changed=build.rs");
    let vcs_info = dir.join(".cargo_vcs_info.json");
    let commit = packaged(&vcs_info)
        .or_else(|| checked_out(dir))
        .map(|sha| sha[..12].to_owned())
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=CAPABLE_COMMIT={commit}");
}

/// The commit in `.cargo_vcs_info.json` (`{"git": {"sha1": "…"}, …}`).
fn packaged(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    println!("cargo:rerun-if-changed={}", path.display());
    let after = text.split_once("\"sha1\"")?.1;
    let sha = after.split('"').nth(1)?;
    hex_sha(sha)
}

/// HEAD of the git work tree this crate is tracked in, and what to watch so that a
/// new commit builds again.
fn checked_out(dir: &Path) -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    // Tracked here: this crate is part of the checkout, not an unpacked copy inside one.
    git(&["ls-files", "--error-unmatch", "Cargo.toml"])?;
    let sha = hex_sha(&git(&["rev-parse", "HEAD"])?)?;
    // HEAD, the branch it names, and the packed refs: whichever moves on a commit.
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])?];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.extend(git(&["rev-parse", "--git-path", &branch]));
    }
    watched.extend(git(&["rev-parse", "--git-path", "packed-refs"]));
    for path in watched {
        let path = dir.join(path);
        // A path that does not exist would make every build run this again.
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    Some(sha)
}

fn hex_sha(s: &str) -> Option<String> {
    (s.len() >= 12 && s.bytes().all(|b| b.is_ascii_hexdigit())).then(|| s.to_owned())
}
