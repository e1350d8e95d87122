//! The secrets a host was given, kept so they can be cut out of anything shown.
//!
//! A secret reaches a server in a header, a URL's userinfo or query, or a stdio
//! server's environment; a server may say it back (an error body that echoes the
//! request, a crash report that prints its configuration). [`Secrets`] holds the values
//! the host configured and [`Secrets::scrub`] replaces each in a text with `***`, so
//! that errors, logs and traces never repeat one.
//!
//! Which values count: every header value (and each word of it, so `Bearer abc…` also
//! hides `abc…` said alone), the URL's user name, password and query values, and the
//! environment variables whose name says secret (`TOKEN`, `KEY`, `SECRET`, `PASS`,
//! `AUTH`, `CREDENTIAL`, `COOKIE`, `SESSION`, `PRIVATE`) or whose value looks like a
//! random key. Values shorter than [`MIN_LEN`] are not kept: hiding every `1` or `on`
//! would garble the output and protect nothing.
//!
//! ```
//! use capable_core::internal::secrets::Secrets;
//! let mut secrets = Secrets::default();
//! secrets.add_header_value("Bearer s3cr3t-t0ken");
//! secrets.add_env("API_KEY", "k-123456");
//! assert_eq!(secrets.scrub("denied for s3cr3t-t0ken (k-123456)"), "denied for *** (***)");
//! ```

use std::borrow::Cow;

/// The shortest value kept as a secret.
pub const MIN_LEN: usize = 6;

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// Words that introduce a credential in a header value rather than being one.
const SCHEMES: [&str; 5] = ["bearer", "basic", "token", "dpop", "digest"];

/// Parts of an environment variable's name that say its value is a secret.
const SECRET_NAMES: [&str; 10] = [
    "TOKEN",
    "KEY",
    "SECRET",
    "PASS",
    "AUTH",
    "CREDENTIAL",
    "COOKIE",
    "SESSION",
    "PRIVATE",
    "PWD",
];

/// A set of secret values, longest first (so a secret that contains another is cut
/// whole).
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    values: Vec<String>,
}

impl Secrets {
    /// Keeps `value` as a secret (if it is long enough to be one).
    pub fn add(&mut self, value: &str) {
        let value = value.trim();
        if value.len() < MIN_LEN || self.values.iter().any(|v| v == value) {
            return;
        }
        self.values.push(value.to_owned());
        self.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    }

    /// Keeps a header's value, and each of its words but an auth scheme.
    pub fn add_header_value(&mut self, value: &str) {
        self.add(value);
        for word in value.split_whitespace() {
            if !SCHEMES.contains(&word.to_ascii_lowercase().as_str()) {
                self.add(word);
            }
        }
    }

    /// Keeps a URL's user name, password and query values (as written and decoded).
    pub fn add_url(&mut self, url: &url::Url) {
        for part in [Some(url.username()), url.password()].into_iter().flatten() {
            self.add(part);
            self.add(&percent_decoded(part));
        }
        for (_, value) in url.query_pairs() {
            self.add(&value);
        }
        for pair in url.query().unwrap_or("").split('&') {
            if let Some((_, raw)) = pair.split_once('=') {
                self.add(raw);
            }
        }
    }

    /// [`Secrets::add_url`] for a URL held as text (nothing when it is no URL).
    pub fn add_url_text(&mut self, url: &str) {
        if let Ok(u) = url::Url::parse(url) {
            self.add_url(&u);
        }
    }

    /// Keeps an environment variable's value when it is likely a secret: its name
    /// says so, or the value looks like a random key.
    pub fn add_env(&mut self, name: &str, value: &str) {
        let upper = name.to_ascii_uppercase();
        if SECRET_NAMES.iter().any(|s| upper.contains(s)) || looks_random(value) {
            self.add(value);
        }
    }

    /// Adds every secret of `other`.
    pub fn extend(&mut self, other: &Secrets) {
        for v in &other.values {
            self.add(v);
        }
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every kept secret replaced by [`MASK`]; borrowed when there is
    /// none in it.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.values {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), MASK));
            }
        }
        out
    }

    /// [`Secrets::scrub`] for bytes (a trace line, a report): text that is not
    /// UTF-8 is scrubbed where it is.
    pub fn scrub_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let mut out = Cow::Borrowed(bytes);
        for secret in &self.values {
            let finder = memchr::memmem::Finder::new(secret.as_bytes());
            if finder.find(&out).is_none() {
                continue;
            }
            let mut next = Vec::with_capacity(out.len());
            let mut rest: &[u8] = &out;
            while let Some(i) = finder.find(rest) {
                next.extend_from_slice(&rest[..i]);
                next.extend_from_slice(MASK.as_bytes());
                rest = &rest[i + secret.len()..];
            }
            next.extend_from_slice(rest);
            out = Cow::Owned(next);
        }
        out
    }
}

/// `%XX` escapes decoded (lossily: a secret is matched as text).
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A value of 16 characters or more, of letters and digits both, with no spaces or
/// slashes (not a path, not a sentence): an API key more likely than not.
fn looks_random(value: &str) -> bool {
    value.len() >= 16
        && !value.contains([' ', '/', '\\'])
        && value.bytes().any(|b| b.is_ascii_digit())
        && value.bytes().any(|b| b.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_and_their_words_are_kept_but_not_the_scheme() {
        let mut s = Secrets::default();
        s.add_header_value("Bearer abcdef123");
        assert_eq!(s.scrub("Bearer abcdef123"), "***");
        assert_eq!(
            s.scrub("token abcdef123 was refused"),
            "token *** was refused"
        );
        assert_eq!(s.scrub("use a Bearer token"), "use a Bearer token");
    }

    #[test]
    fn url_userinfo_and_query_values_are_kept() {
        let mut s = Secrets::default();
        s.add_url(
            &"http://alice1:pa%24%24word@h/mcp?api_key=k3y-value&v=2"
                .parse()
                .unwrap(),
        );
        assert_eq!(
            s.scrub("alice1 pa$$word pa%24%24word k3y-value v=2"),
            "*** *** *** *** v=2"
        );
    }

    #[test]
    fn only_secret_looking_environment_values_are_kept() {
        let mut s = Secrets::default();
        s.add_env("GITHUB_TOKEN", "ghp_short1");
        s.add_env("NODE_ENV", "production");
        s.add_env("CONFIG", "/home/user/config.json");
        s.add_env("OPAQUE", "a1b2c3d4e5f6g7h8i9");
        assert_eq!(
            s.scrub("ghp_short1 production /home/user/config.json a1b2c3d4e5f6g7h8i9"),
            "*** production /home/user/config.json ***"
        );
    }

    #[test]
    fn short_values_are_never_secrets_and_longer_ones_are_cut_whole() {
        let mut s = Secrets::default();
        s.add("on");
        s.add("secret");
        s.add("secret-and-more");
        assert_eq!(s.scrub("on secret-and-more secret"), "on *** ***");
        assert_eq!(&*s.scrub_bytes(b"x secret \xff y"), b"x *** \xff y");
    }
}
