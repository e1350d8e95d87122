//! Binary items of a result — a tool's `image` and `audio` content, an embedded
//! resource's or a read's `blob` — for people: a summary line (`[image/png, 4.1 KiB]`)
//! instead of kilobytes of base64, and with `--save DIR` a file each.
//!
//! Nothing a server sends names a file: a saved item is called after its kind and its
//! position in the result (`image-1.png`, `audio-2.wav`, `binary-3.bin`), the
//! extension taken from a fixed table of MIME types (anything else is `.bin`). An
//! existing file is never overwritten: the next free name is taken (`image-1-2.png`).
//! A server's base64 may be invalid, or an item absurdly large: it is said so in the
//! summary, and nothing is written for it.

use std::borrow::Cow;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;
use serde_json::Value;

/// The largest item saved (decoded); a larger one is summarised, not written.
pub const MAX_SAVED: usize = 64 << 20;

/// How many names are tried before a crowded directory is given up on.
const MAX_NAMES: usize = 1000;

/// Standard base64, with or without its `=` padding (servers send both).
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// One binary item of a result.
#[derive(Clone, Copy, Debug)]
pub struct Binary<'a> {
    /// Its place among the result's contents, from 1.
    pub position: usize,
    /// `image`, `audio`, or `binary` (a blob of any other type).
    pub kind: &'static str,
    /// The MIME type the server gave, if any.
    pub mime: Option<&'a str>,
    /// The base64 text, as sent.
    pub data: &'a str,
}

impl<'a> Binary<'a> {
    /// The binary item a tool result's content block holds: `image`, `audio`, or an
    /// embedded `resource` with a `blob`. `None` for text and everything else.
    pub fn from_block(position: usize, block: &'a Value) -> Option<Binary<'a>> {
        let text = |v: &'a Value, key: &str| v.get(key).and_then(Value::as_str);
        match text(block, "type")? {
            kind @ ("image" | "audio") => Some(Binary {
                position,
                kind: if kind == "image" { "image" } else { "audio" },
                mime: text(block, "mimeType"),
                data: text(block, "data")?,
            }),
            "resource" => {
                let resource = block.get("resource")?;
                let blob = text(resource, "blob")?;
                Some(Binary::from_blob(
                    position,
                    text(resource, "mimeType"),
                    blob,
                ))
            }
            _ => None,
        }
    }

    /// A blob of a resource's contents, its kind told by its MIME type.
    pub fn from_blob(position: usize, mime: Option<&'a str>, data: &'a str) -> Binary<'a> {
        let kind = match mime.map(|m| m.trim().to_ascii_lowercase()) {
            Some(m) if m.starts_with("image/") => "image",
            Some(m) if m.starts_with("audio/") => "audio",
            _ => "binary",
        };
        Binary {
            position,
            kind,
            mime,
            data,
        }
    }

    /// The bytes, or why the base64 is not valid. Whitespace and line breaks inside
    /// it are ignored (some servers wrap it), padding may be left out.
    pub fn decode(&self) -> Result<Vec<u8>, String> {
        let data: Cow<'_, str> = if self.data.bytes().any(|b| b.is_ascii_whitespace()) {
            self.data
                .split_ascii_whitespace()
                .collect::<String>()
                .into()
        } else {
            self.data.into()
        };
        BASE64
            .decode(data.as_bytes())
            .map_err(|e| format!("not valid base64 ({e})"))
    }

    /// The MIME type as shown: the server's, in printable characters, or the kind.
    fn shown_type(&self) -> String {
        match self.mime.map(str::trim).filter(|m| !m.is_empty()) {
            Some(m) => crate::output::one_line(m, 60),
            None => format!("{} of no stated type", self.kind),
        }
    }
}

/// What became of one item: its summary line for people, without a line break.
#[derive(Debug)]
pub struct Shown {
    pub line: String,
    /// A failure to write (the directory is not writable): the command fails after
    /// printing its output.
    pub failed: Option<String>,
}

/// Summarises `item` (`[image/png, 4.1 KiB]`) and, with a directory, saves it there.
pub fn show(item: &Binary<'_>, save: Option<&Path>) -> Shown {
    let shown_type = item.shown_type();
    let bytes = match item.decode() {
        Ok(bytes) => bytes,
        Err(why) => {
            let chars = item.data.chars().count();
            return Shown {
                line: format!("[{shown_type}, {why}; {chars} characters, not shown]"),
                failed: None,
            };
        }
    };
    let summary = format!("[{shown_type}, {}]", size(bytes.len()));
    let Some(dir) = save else {
        return Shown {
            line: summary,
            failed: None,
        };
    };
    if bytes.len() > MAX_SAVED {
        return Shown {
            line: format!("{summary} not saved: larger than {}", size(MAX_SAVED)),
            failed: None,
        };
    }
    match write_fresh(dir, &stem(item), extension(item.mime), &bytes) {
        Ok(path) => Shown {
            line: format!("{summary} saved to {}", path.display()),
            failed: None,
        },
        Err(e) => Shown {
            line: format!("{summary} not saved: {e}"),
            failed: Some(e),
        },
    }
}

/// With `--json` the document stays the full result: each item is only saved, and
/// said so on stderr. Returns the first failure to write, if any.
pub fn save_quietly<'a>(items: impl IntoIterator<Item = Binary<'a>>, dir: &Path) -> Option<String> {
    let mut failed = None;
    for item in items {
        let shown = show(&item, Some(dir));
        crate::output::eprint_line(&format!("capable: {}", shown.line));
        failed = failed.or(shown.failed);
    }
    failed
}

/// The error a failure to save ends the command with, once its output is printed.
pub fn save_failed(why: String) -> crate::exit::CliError {
    crate::exit::CliError::Usage(format!("--save: {why}"))
}

/// A size for people: `512 bytes`, `4.1 KiB`, `2.3 MiB`.
pub fn size(bytes: usize) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    match bytes {
        1 => "1 byte".into(),
        n if n < 1024 => format!("{n} bytes"),
        n if n < 1 << 20 => format!("{:.1} KiB", b / KIB),
        n if n < 1 << 30 => format!("{:.1} MiB", b / (KIB * KIB)),
        _ => format!("{:.1} GiB", b / (KIB * KIB * KIB)),
    }
}

/// `image-1`: the kind and the position, nothing the server chose.
fn stem(item: &Binary<'_>) -> String {
    format!("{}-{}", item.kind, item.position)
}

/// The extension for a MIME type, from a fixed table (parameters such as
/// `; codecs=opus` ignored); `bin` for anything else.
pub fn extension(mime: Option<&str>) -> &'static str {
    let essence = mime
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "image/bmp" => "bmp",
        "image/tiff" => "tiff",
        "image/avif" => "avif",
        "image/x-icon" | "image/vnd.microsoft.icon" => "ico",
        "audio/wav" | "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => "wav",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/ogg" => "ogg",
        "audio/opus" => "opus",
        "audio/flac" | "audio/x-flac" => "flac",
        "audio/webm" => "webm",
        "audio/aac" => "aac",
        "audio/mp4" | "audio/x-m4a" => "m4a",
        "application/pdf" => "pdf",
        "application/zip" => "zip",
        "application/json" => "json",
        "text/plain" => "txt",
        _ => "bin",
    }
}

/// Writes `bytes` to `DIR/STEM.EXT`, or `DIR/STEM-2.EXT`, … when taken: a file is
/// only ever created, never opened for writing when it exists (a symlink planted
/// there included). `DIR` is created when missing. Returns the path written.
fn write_fresh(dir: &Path, stem: &str, ext: &str, bytes: &[u8]) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for n in 1..=MAX_NAMES {
        let name = match n {
            1 => format!("{stem}.{ext}"),
            n => format!("{stem}-{n}.{ext}"),
        };
        let path = dir.join(name);
        let mut file = match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create {}: {e}", path.display())),
        };
        return match file.write_all(bytes).and_then(|()| file.sync_all()) {
            Ok(()) => Ok(path),
            Err(e) => {
                // A partial file is worse than none.
                let _ = std::fs::remove_file(&path);
                Err(format!("cannot write {}: {e}", path.display()))
            }
        };
    }
    Err(format!(
        "{} already holds {stem}.{ext} and {} more like it",
        dir.display(),
        MAX_NAMES - 1
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(size(1), "1 byte");
        assert_eq!(size(512), "512 bytes");
        assert_eq!(size(4198), "4.1 KiB");
        assert_eq!(size(5 << 20), "5.0 MiB");
    }

    #[test]
    fn only_image_audio_and_blobs_are_binary() {
        let image = json!({"type": "image", "mimeType": "image/png", "data": "iVBORw=="});
        let b = Binary::from_block(1, &image).unwrap();
        assert_eq!((b.kind, b.mime), ("image", Some("image/png")));
        let blob = json!({"type": "resource", "resource": {"uri": "x://y", "mimeType": "audio/wav", "blob": "AAAA"}});
        assert_eq!(Binary::from_block(2, &blob).unwrap().kind, "audio");
        for other in [
            json!({"type": "text", "text": "hi"}),
            json!({"type": "resource", "resource": {"uri": "x://y", "text": "t"}}),
            json!({"type": "image"}),
            json!({"type": "image", "data": 3}),
            json!("not an object"),
        ] {
            assert!(Binary::from_block(1, &other).is_none(), "{other}");
        }
    }

    #[test]
    fn base64_is_read_with_or_without_padding_or_line_breaks_and_refused_when_broken() {
        let item = |data| Binary::from_blob(1, Some("image/png"), data);
        assert_eq!(item("aGk=").decode().unwrap(), b"hi");
        assert_eq!(item("aGk").decode().unwrap(), b"hi");
        assert_eq!(item("aG\nk=").decode().unwrap(), b"hi");
        let shown = show(&item("not base64!"), None);
        assert!(
            shown.line.starts_with("[image/png, not valid base64"),
            "{}",
            shown.line
        );
    }

    #[test]
    fn a_servers_type_never_names_a_file() {
        assert_eq!(extension(Some("image/png")), "png");
        assert_eq!(extension(Some("Audio/Ogg; codecs=opus")), "ogg");
        assert_eq!(extension(Some("image/../../etc/passwd")), "bin");
        assert_eq!(extension(None), "bin");
    }
}
