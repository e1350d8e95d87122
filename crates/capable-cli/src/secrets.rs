//! Every secret the user gave capable — `--header` values, `--client-secret`, a URL's
//! userinfo and query, a config entry's headers, secret-looking `env` values and OAuth
//! secrets — kept for the life of the process, and cut out of everything capable
//! writes: stdout, stderr, `--trace`, logs, the audit report. A server that says one
//! back (an error body echoing the request, a crash report printing its environment)
//! is shown with `***` in its place. The rule for which values count is the core's
//! ([`capable::internal::secrets`]).

use std::borrow::Cow;
use std::sync::{LazyLock, RwLock};

use capable::internal::secrets::Secrets;

use capable::config::ServerTarget;

static KEPT: LazyLock<RwLock<Secrets>> = LazyLock::new(Default::default);

/// Adds secrets.
pub fn keep(add: impl FnOnce(&mut Secrets)) {
    let mut kept = KEPT.write().unwrap_or_else(|e| e.into_inner());
    add(&mut kept);
}

/// Every secret kept so far (for a part of capable that scrubs on its own, such as
/// the web inspector's answers).
pub fn kept() -> Secrets {
    KEPT.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Keeps the secrets of a server entry (or of `--url`).
pub fn keep_target(target: &ServerTarget) {
    keep(|s| match target {
        ServerTarget::Stdio(command) => {
            for (name, value) in &command.env {
                s.add_env(name, value);
            }
            for arg in &command.args {
                // `--token=…` style arguments and URLs with credentials.
                if let Some((name, value)) = arg.trim_start_matches('-').split_once('=') {
                    s.add_env(name, value);
                }
                s.add_url_text(arg);
            }
        }
        ServerTarget::Http {
            url,
            headers,
            oauth,
        } => {
            s.add_url_text(url);
            for (_, value) in headers {
                s.add_header_value(value);
            }
            if let Some(o) = oauth {
                for v in [&o.client_secret, &o.private_key_pem, &o.assertion]
                    .into_iter()
                    .flatten()
                {
                    s.add(v);
                }
                if let Some(idp) = &o.idp {
                    for v in [&idp.client_secret, &idp.id_token].into_iter().flatten() {
                        s.add(v);
                    }
                }
            }
        }
    });
}

/// `text` without any kept secret.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let kept = KEPT.read().unwrap_or_else(|e| e.into_inner());
    if kept.is_empty() {
        return Cow::Borrowed(text);
    }
    match kept.scrub(text) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(s) => Cow::Owned(s),
    }
}

/// [`scrub`] for bytes.
pub fn scrub_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    let kept = KEPT.read().unwrap_or_else(|e| e.into_inner());
    if kept.is_empty() {
        return Cow::Borrowed(bytes);
    }
    match kept.scrub_bytes(bytes) {
        Cow::Borrowed(_) => Cow::Borrowed(bytes),
        Cow::Owned(b) => Cow::Owned(b),
    }
}

/// Stderr for the log: each event is written once it is whole, scrubbed.
pub struct LogWriter(Vec<u8>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        use std::io::Write;
        let _ = std::io::stderr().lock().write_all(&scrub_bytes(&self.0));
    }
}

/// A [`LogWriter`] per log event.
pub fn log_writer() -> LogWriter {
    LogWriter(Vec::new())
}
