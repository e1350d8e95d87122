//! `capable bridge --seal-key-file`: the key ring a gateway's replicas seal their legacy
//! sessions with, read and checked when the bridge starts.
//!
//! The keys are read and judged (a file that is missing, empty, not hex or base64, or
//! not 32 bytes stops the bridge before it serves, naming the flag); the listener then
//! seals every legacy session's state into its `Mcp-Session-Id`, so any replica given
//! the same keys continues it. The key's text is never repeated, in an error or
//! anywhere else.

use std::path::Path;

use capable::internal::seal::{KeyRing, SealKey};

use crate::exit::CliError;
use crate::flags::BridgeArgs;

/// The ring from `--seal-key-file` (or `CAPABLE_SEAL_KEY`) and `--seal-key-previous`;
/// `None` when no key was given.
pub fn ring(args: &BridgeArgs) -> Result<Option<KeyRing>, CliError> {
    let current = match (&args.seal_key_file, &args.seal_key) {
        (Some(path), _) => read("--seal-key-file", path)?,
        (None, Some(text)) => {
            SealKey::parse(text).map_err(|e| CliError::Usage(format!("CAPABLE_SEAL_KEY: {e}")))?
        }
        (None, None) if args.seal_key_previous.is_empty() => return Ok(None),
        (None, None) => {
            return Err(CliError::Usage(
                "--seal-key-previous needs a current key: --seal-key-file or CAPABLE_SEAL_KEY"
                    .into(),
            ));
        }
    };
    let previous = args
        .seal_key_previous
        .iter()
        .map(|path| read("--seal-key-previous", path))
        .collect::<Result<Vec<_>, _>>()?;
    KeyRing::try_new(current, previous)
        .map(Some)
        .map_err(|e| CliError::Usage(format!("--seal-key-previous: {e}")))
}

/// One key from a file, the error naming the flag and the file (never the contents).
fn read(flag: &str, path: &Path) -> Result<SealKey, CliError> {
    let shown = path.display();
    let text = std::fs::read(path).map_err(|e| CliError::Usage(format!("{flag} {shown}: {e}")))?;
    let text = std::str::from_utf8(&text).map_err(|_| {
        CliError::Usage(format!(
            "{flag} {shown}: the seal key is neither hex nor base64"
        ))
    })?;
    SealKey::parse(text).map_err(|e| CliError::Usage(format!("{flag} {shown}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::{Cli, Command};
    use clap::Parser;
    use std::path::PathBuf;

    /// A file of this test's own in the temporary directory, removed when dropped.
    struct KeyFile(PathBuf);

    impl KeyFile {
        fn new(name: &str, text: &str) -> KeyFile {
            let path =
                std::env::temp_dir().join(format!("capable-seal-{}-{name}", std::process::id()));
            std::fs::write(&path, text).unwrap();
            KeyFile(path)
        }
    }

    impl Drop for KeyFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn args(flags: &[&str]) -> BridgeArgs {
        let argv = ["capable", "bridge", "--listen", "127.0.0.1:0"]
            .iter()
            .chain(flags)
            .chain(&["--", "server"]);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Bridge(args) => *args,
            other => panic!("{other:?}"),
        }
    }

    fn path(file: &KeyFile) -> &str {
        file.0.to_str().unwrap()
    }

    #[test]
    fn the_keys_are_read_at_start_and_the_previous_one_kept() {
        let current = KeyFile::new("current", &format!("{}\n", "0f".repeat(32)));
        let previous = KeyFile::new("previous", "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n");
        assert!(ring(&args(&[])).unwrap().is_none());
        let ring = ring(&args(&[
            "--seal-key-file",
            path(&current),
            "--seal-key-previous",
            path(&previous),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(ring.current().id(), SealKey::from_bytes(&[0x0f; 32]).id());
        assert!(ring.find(SealKey::from_bytes(&[1; 32]).id()).is_some());
    }

    #[test]
    fn a_bad_key_stops_the_bridge_naming_the_flag_never_the_key() {
        let short = KeyFile::new("short", &"ab".repeat(16));
        let CliError::Usage(why) = ring(&args(&["--seal-key-file", path(&short)])).unwrap_err()
        else {
            panic!("not a usage error");
        };
        assert!(
            why.starts_with("--seal-key-file ") && why.contains("16 bytes"),
            "{why}"
        );
        assert!(!why.contains("abab"), "{why}");
        let missing = ring(&args(&["--seal-key-file", "/nonexistent/seal.key"])).unwrap_err();
        assert!(
            missing.to_string().contains("/nonexistent/seal.key"),
            "{missing}"
        );
        let good = KeyFile::new("good", &"0f".repeat(32));
        let bad_previous = ring(&args(&[
            "--seal-key-file",
            path(&good),
            "--seal-key-previous",
            path(&short),
        ]))
        .unwrap_err();
        assert!(
            bad_previous.to_string().contains("--seal-key-previous"),
            "{bad_previous}"
        );
        let alone = ring(&args(&["--seal-key-previous", path(&good)])).unwrap_err();
        assert!(alone.to_string().contains("needs a current key"), "{alone}");
    }
}
