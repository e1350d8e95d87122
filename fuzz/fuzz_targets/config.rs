//! The MCP config file reader (`capable::config`, which the CLI uses too) on any text:
//! nothing panics, and what it returns holds together: an HTTP entry's headers pass
//! the header check; reading the whole file (`ConfigFile::from_text`) gives every
//! entry once, in order, each exactly as looking it up by name (`server_from_text`)
//! gives it, and a file that is no config fails both ways; text without a `${…}`
//! placeholder expands to itself. `parse_duration`, which reads the CLI's duration
//! flags, rides along.

#![no_main]

use capable::config::{expand_vars, server_from_text, ConfigFile, ServerTarget};
use capable_core::internal::http::redact::check_header;
use libfuzzer_sys::fuzz_target;

fn lookup(var: &str) -> Option<String> {
    match var {
        "HOME" => Some("/home/u".into()),
        "TOKEN" => Some("t0k".into()),
        "EMPTY" => Some(String::new()),
        "NESTED" => Some("${TOKEN}".into()),
        _ => None,
    }
}

fn check_target(target: &ServerTarget) {
    match target {
        ServerTarget::Http { headers, .. } => {
            for (k, v) in headers {
                assert!(
                    check_header(k, v).is_ok(),
                    "header {k:?} = {v:?} was accepted"
                );
                assert!(!v.contains('\r') && !v.contains('\n'));
            }
        }
        ServerTarget::Stdio(cmd) => {
            let _ = cmd.display();
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let _ = capable_core::internal::time::parse_duration(text);
    if let Ok(out) = expand_vars(text, &lookup) {
        // Expansion is one pass: a value is never expanded again.
        if !text.contains("${") {
            assert_eq!(out, text);
        }
    }
    // The server's name: one the document is likely to have.
    let names = ["docs", "a", "remote", "", "py"];
    let name = names[usize::from(pick) % names.len()];
    let one = server_from_text(text, name, "fuzz.json", &lookup);
    match &one {
        Ok(target) => check_target(target),
        Err(e) => {
            let _ = e.to_string();
        }
    }
    match ConfigFile::from_text(text, "fuzz.json", &lookup) {
        Ok(file) => {
            assert_eq!(file.path, "fuzz.json");
            for (i, entry) in file.servers.iter().enumerate() {
                assert!(
                    !file.servers[..i].iter().any(|e| e.name == entry.name),
                    "{:?} twice",
                    entry.name
                );
                if let Ok(target) = &entry.target {
                    check_target(target);
                }
                assert_eq!(
                    server_from_text(text, &entry.name, "fuzz.json", &lookup),
                    entry.target,
                    "entry {:?}",
                    entry.name
                );
            }
            if !file.servers.iter().any(|e| e.name == name) {
                assert!(one.is_err(), "{name:?} found by name only");
            }
        }
        Err(e) => {
            assert_eq!(one.as_ref().err(), Some(&e), "the file fails as a whole");
        }
    }
});
