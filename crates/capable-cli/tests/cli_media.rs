//! A result's images and audio, for people: `tools call` and `read` show each binary
//! item as one summary line (`[image/png, 4.1 KiB]`), never its base64; `--save DIR`
//! writes each to a file named after its kind and place, never overwriting one;
//! `--json` still prints the whole result. A server's broken base64 is said to be
//! broken. The fixture serves no image, so a scripted HTTP server does.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use common::scripted::{self, Script};
use common::{capable, CacheDir};
use serde_json::{json, Value};

const T: Duration = Duration::from_secs(30);

/// 4198 bytes of a "PNG": 4.1 KiB.
fn png() -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend((0..4190u32).map(|i| (i % 251) as u8));
    bytes
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A tool whose result holds text, an image, audio and an image whose base64 is broken.
fn media_server() -> capable_test_support::http_peer::faults::OwnRuntimePeer {
    let call = json!({"content": [
        {"type": "text", "text": "here is the chart"},
        {"type": "image", "mimeType": "image/png", "data": b64(&png())},
        {"type": "audio", "mimeType": "audio/wav", "data": b64(b"RIFF....WAVE")},
        {"type": "image", "mimeType": "image/png", "data": "%%% not base64 %%%"},
    ]});
    let contents = vec![json!({"uri": "img://logo", "mimeType": "image/png", "blob": b64(&png())})];
    scripted::start(Script {
        tools: vec![json!({"name": "chart", "inputSchema": {"type": "object"}})],
        call,
        contents,
    })
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A directory of its own for one test (removed with the guard).
fn save_dir(guard: &CacheDir) -> PathBuf {
    guard.0.join("saved")
}

#[test]
fn a_tool_s_image_and_audio_are_summarised_not_dumped() {
    let peer = media_server();
    let url = peer.url();
    let run = capable(&["tools", "call", "chart", "--url", &url], T);
    run.expect_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines[0], "here is the chart", "{}", run.stdout);
    assert_eq!(lines[1], "[image/png, 4.1 KiB]");
    assert_eq!(lines[2], "[audio/wav, 12 bytes]");
    assert!(
        lines[3].starts_with("[image/png, not valid base64"),
        "{}",
        lines[3]
    );
    assert!(!run.stdout.contains(&b64(&png())[..40]), "{}", run.stdout);

    // --json is the whole result, base64 and all.
    let json = capable(&["--json", "tools", "call", "chart", "--url", &url], T);
    json.expect_code(0);
    assert_eq!(json.json()["content"][1]["data"], b64(&png()));
}

#[test]
fn save_writes_each_item_to_a_fresh_file_and_never_overwrites() {
    let peer = media_server();
    let url = peer.url();
    let guard = CacheDir::new();
    let dir = save_dir(&guard);
    let dir_arg = dir.to_str().unwrap();
    let run = capable(
        &["tools", "call", "chart", "--save", dir_arg, "--url", &url],
        T,
    );
    run.expect_code(0);
    assert_eq!(files(&dir), ["audio-3.wav", "image-2.png"]);
    assert_eq!(std::fs::read(dir.join("image-2.png")).unwrap(), png());
    assert_eq!(
        std::fs::read(dir.join("audio-3.wav")).unwrap(),
        b"RIFF....WAVE"
    );
    let shown = format!(
        "[image/png, 4.1 KiB] saved to {}",
        dir.join("image-2.png").display()
    );
    assert!(run.stdout.contains(&shown), "{}", run.stdout);

    // Again, with a file of the user's in the way: nothing is overwritten.
    std::fs::write(dir.join("audio-3-2.wav"), b"mine").unwrap();
    let again = capable(
        &[
            "--json", "tools", "call", "chart", "--save", dir_arg, "--url", &url,
        ],
        T,
    );
    again.expect_code(0);
    assert_eq!(
        files(&dir),
        [
            "audio-3-2.wav",
            "audio-3-3.wav",
            "audio-3.wav",
            "image-2-2.png",
            "image-2.png"
        ]
    );
    assert_eq!(std::fs::read(dir.join("audio-3-2.wav")).unwrap(), b"mine");
    assert_eq!(std::fs::read(dir.join("image-2-2.png")).unwrap(), png());
    // --json: the document is unchanged, what was saved is said on stderr.
    assert_eq!(again.json()["content"][1]["data"], b64(&png()));
    assert!(again.stderr.contains("image-2-2.png"), "{}", again.stderr);
}

#[test]
fn a_save_directory_that_cannot_be_written_fails_after_the_output() {
    let peer = media_server();
    let guard = CacheDir::new();
    let blocker = guard.0.join("a-file");
    std::fs::write(&blocker, b"x").unwrap();
    let run = capable(
        &[
            "tools",
            "call",
            "chart",
            "--save",
            blocker.to_str().unwrap(),
            "--url",
            &peer.url(),
        ],
        T,
    );
    run.expect_code(2);
    assert!(
        run.stdout.contains("[image/png, 4.1 KiB] not saved"),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("--save"), "{}", run.stderr);
}

#[test]
fn a_read_blob_is_summarised_and_saved() {
    let peer = media_server();
    let url = peer.url();
    let guard = CacheDir::new();
    let dir = save_dir(&guard);
    let plain = capable(&["read", "img://logo", "--url", &url], T);
    plain.expect_code(0);
    assert!(
        plain.stdout.contains("\n[image/png, 4.1 KiB]\n"),
        "{}",
        plain.stdout
    );
    assert!(files(&dir).is_empty());

    let saved = capable(
        &[
            "read",
            "img://logo",
            "--save",
            dir.to_str().unwrap(),
            "--url",
            &url,
        ],
        T,
    );
    saved.expect_code(0);
    assert_eq!(files(&dir), ["image-1.png"]);
    assert_eq!(std::fs::read(dir.join("image-1.png")).unwrap(), png());

    let json = capable(&["--json", "read", "img://logo", "--url", &url], T);
    let contents: &Value = &json.expect_code(0).json()["contents"][0];
    assert_eq!(contents["blob"], b64(&png()));
}
