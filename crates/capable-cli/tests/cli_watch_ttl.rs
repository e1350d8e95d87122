//! A poll policy never re-reads a 2026-07-28 resource sooner than its `ttlMs` says the
//! content stays fresh.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{bin, fixture};

#[test]
fn polling_a_modern_server_waits_for_the_reads_ttl() {
    // The modern-read-only fixture declares `resources: {}` and answers with
    // `ttlMs: 1000`; the host asks to poll every 100 ms.
    let mut args = vec![
        "--trace".to_owned(),
        "watch".into(),
        "docs://manual/current".into(),
        "--poll".into(),
        "100ms".into(),
        "--json".into(),
        "--".into(),
    ];
    args.extend(fixture("modern-read-only"));
    let mut child = Command::new(bin())
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(3200));
    let _ = child.kill();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let _ = child.wait();
    let reads = stderr
        .lines()
        .filter(|l| l.starts_with('>') && l.contains("\"resources/read\""))
        .count();
    // At 100 ms there would be ~30 reads; the ttl allows one now and one per second.
    assert!(
        (2..=5).contains(&reads),
        "{reads} reads in 3.2 s:\n{stderr}"
    );
}
