//! Every file capable reads is bounded and must be a regular file: a config, the token
//! store, the tool cache, a private key, `--args @FILE`. A FIFO, a device, a directory,
//! a symlink loop or a file too large is refused at once (no hang, no memory growth),
//! with an error that names the file, exit 2, and nothing written.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{capable, capable_with, fixture, run_cached, run_in, CacheDir, Run};
use serde_json::json;

/// Refusals are decided from metadata: far quicker than this, and a FIFO would
/// otherwise hang until the deadline kills the run (the test then fails).
const QUICK: Duration = Duration::from_secs(10);

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// A directory holding one of each kind of file that must be refused.
struct Hostile {
    dir: CacheDir,
}

impl Hostile {
    fn new() -> Hostile {
        let dir = CacheDir::new();
        let d = &dir.0;
        mkfifo(&d.join("fifo"));
        std::fs::create_dir(d.join("directory")).unwrap();
        std::os::unix::fs::symlink(d.join("loop-b"), d.join("loop-a")).unwrap();
        std::os::unix::fs::symlink(d.join("loop-a"), d.join("loop-b")).unwrap();
        // Sparse: its size says 5 GiB, none of it is on disk.
        let big = std::fs::File::create(d.join("big")).unwrap();
        big.set_len(5 << 30).unwrap();
        Hostile { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.0.join(name).to_str().unwrap().to_owned()
    }

    /// Each hostile file, with what the error says it is.
    fn cases(&self) -> Vec<(String, &'static str)> {
        vec![
            ("/dev/zero".into(), "a character device"),
            (self.path("fifo"), "a FIFO"),
            (self.path("directory"), "a directory"),
            (self.path("loop-a"), "a loop of symbolic links"),
            (self.path("big"), "larger than"),
        ]
    }
}

#[track_caller]
fn refused(run: &Run, path: &str, what: &str) {
    run.expect_code(2);
    assert!(run.elapsed < QUICK, "{}: took {:?}", run.shown, run.elapsed);
    assert!(
        run.stderr.contains(path) && run.stderr.contains(what),
        "{}: the error should name {path} and say {what:?}\n{}",
        run.shown,
        run.stderr
    );
}

#[test]
fn a_config_that_is_no_regular_file_is_refused_at_once() {
    let hostile = Hostile::new();
    for (path, what) in hostile.cases() {
        let run = capable(&["inspect", "--config", &path, "--server", "x"], QUICK);
        refused(&run, &path, what);
        // The same in JSON, for scripts.
        let run = capable(&["servers", "--json", "--config", &path], QUICK);
        refused(&run, &path, what);
        assert_eq!(run.json()["error"]["kind"], "usage", "{}", run.stdout);
    }
}

#[test]
fn a_default_config_location_holding_a_fifo_is_refused_not_passed_over() {
    let dir = CacheDir::new();
    mkfifo(&dir.0.join(".mcp.json"));
    let run = run_in(common::bin(), &["servers"], &dir.0, QUICK);
    refused(&run, ".mcp.json", "a FIFO");
}

#[test]
fn args_from_a_file_are_read_and_a_hostile_one_refused() {
    let dir = CacheDir::new();
    let args = dir.0.join("args.json");
    std::fs::write(&args, json!({"message": "from a file"}).to_string()).unwrap();
    let at = format!("@{}", args.display());
    let run = capable_with(
        &["tools", "call", "echo", "--json", "--args", &at],
        &fixture("modern"),
        Duration::from_secs(30),
    );
    run.expect_code(0);
    assert!(run.stdout.contains("from a file"), "{}", run.stdout);

    let hostile = Hostile::new();
    for (path, what) in hostile.cases() {
        let at = format!("@{path}");
        let run = capable_with(
            &["tools", "call", "echo", "--args", &at],
            &fixture("modern"),
            QUICK,
        );
        refused(&run, &path, what);
        assert!(run.stderr.contains("--args"), "{}", run.stderr);
    }
    let run = capable_with(
        &["tools", "call", "echo", "--args", "@/nonexistent/args.json"],
        &fixture("modern"),
        QUICK,
    );
    refused(&run, "/nonexistent/args.json", "No such file");
}

/// A token store holding `bytes` with `mode`, in a directory of its own.
fn token_store(dir: &Path, mode: u32) -> PathBuf {
    let store = dir.join("credentials.json");
    std::fs::write(&store, br#"{"version":1,"tokens":[],"clients":[]}"#).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(mode)).unwrap();
    store
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_token_store_others_can_read_is_refused_and_left_as_it_was() {
    let dir = CacheDir::new();
    let store = token_store(&dir.0, 0o644);
    let s = store.to_str().unwrap();
    let before = std::fs::read(&store).unwrap();
    for args in [
        vec!["--token-store", s, "auth", "status"],
        vec![
            "--token-store",
            s,
            "auth",
            "logout",
            "--url",
            "http://127.0.0.1:1/mcp",
        ],
    ] {
        let run = capable(&args, QUICK);
        refused(&run, s, "mode 0644");
        assert!(run.stderr.contains("`chmod 600`"), "{}", run.stderr);
    }
    // Neither repaired nor rewritten, and no lock file beside it.
    let meta = std::fs::metadata(&store).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o644);
    assert_eq!(std::fs::read(&store).unwrap(), before);
    assert_eq!(listing(&dir.0), ["credentials.json"]);

    // The same store, private, is used.
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o600)).unwrap();
    capable(&["--token-store", s, "auth", "status"], QUICK).expect_code(0);
}

#[test]
fn a_token_store_that_is_no_regular_file_is_refused_without_a_lock_file() {
    let hostile = Hostile::new();
    for (path, what) in hostile.cases() {
        let run = capable(&["--token-store", &path, "auth", "status"], QUICK);
        refused(&run, &path, what);
    }
    let run = capable(
        &[
            "--token-store",
            &hostile.path("fifo"),
            "auth",
            "logout",
            "--url",
            "http://127.0.0.1:1/mcp",
        ],
        QUICK,
    );
    refused(&run, &hostile.path("fifo"), "a FIFO");
    assert!(!hostile.dir.0.join("fifo.lock").exists());
}

#[test]
fn a_private_key_file_that_is_no_regular_file_is_refused_before_connecting() {
    let hostile = Hostile::new();
    for (path, what) in hostile.cases() {
        let config = hostile.dir.0.join("mcp.json");
        let entry = json!({"url": "http://127.0.0.1:1/mcp", "oauth": {
            "grant": "client_credentials", "clientId": "c", "privateKeyFile": path}});
        std::fs::write(
            &config,
            json!({"mcpServers": {"remote": entry}}).to_string(),
        )
        .unwrap();
        let run = capable(
            &[
                "tools",
                "--config",
                config.to_str().unwrap(),
                "--server",
                "remote",
            ],
            QUICK,
        );
        refused(&run, &path, what);
        assert!(
            run.stderr.contains("oauth.privateKeyFile"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn a_tool_cache_that_is_no_regular_file_is_refused_and_no_cache_goes_around_it() {
    let cache = CacheDir::new();
    let call = [
        "tools",
        "call",
        "echo",
        "--args",
        r#"{"message":"hi"}"#,
        "--",
    ];
    let server = fixture("modern");
    let args: Vec<&str> = call
        .iter()
        .copied()
        .chain(server.iter().map(String::as_str))
        .collect();
    let dir = common::workspace();
    let first = run_cached(common::bin(), &args, &dir, &cache, Duration::from_secs(30));
    first.expect_code(0);
    // The modern fixture's list stays fresh for a second: it was kept.
    let kept: Vec<PathBuf> = std::fs::read_dir(cache.0.join("capable"))
        .expect("a cache directory")
        .map(|e| e.unwrap().path().join("tools.json"))
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    std::fs::remove_file(&kept[0]).unwrap();
    mkfifo(&kept[0]);
    let run = run_cached(common::bin(), &args, &dir, &cache, QUICK);
    refused(&run, kept[0].to_str().unwrap(), "a FIFO");
    assert!(run.stderr.contains("--no-cache"), "{}", run.stderr);

    let mut around = vec!["--no-cache"];
    around.extend(&args);
    run_cached(
        common::bin(),
        &around,
        &dir,
        &cache,
        Duration::from_secs(30),
    )
    .expect_code(0);
}
