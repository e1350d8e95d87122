//! The rules of a local server's gate, one home for every local server of capable (the
//! inspector's page, the bridge's listener): only a loopback name on the bound port
//! (`Host`, against DNS rebinding), only the server's own origin (or those it was told
//! to allow), a bearer token compared in constant time, a command's body as JSON only
//! (a cross-origin page cannot send that without a CORS preflight). Sans-IO: header
//! values in, verdicts out; the servers wrap them in their own answers.
//!
//! ```
//! use capable_core::internal::http::loopback::{bearer, is_json, is_loopback_authority, is_loopback_origin, same_secret};
//!
//! assert!(is_loopback_authority("LOCALHOST:8123", 8123));
//! assert!(!is_loopback_authority("localhost:8124", 8123));
//! assert!(!is_loopback_authority("evil.example:8123", 8123));
//! assert!(is_loopback_origin("http://[::1]:8123/", 8123));
//! assert!(!is_loopback_origin("http://localhost:3000", 8123));
//! assert_eq!(bearer("bearer  s3cret "), Some("s3cret"));
//! assert!(is_json(Some("application/json; charset=utf-8")));
//! assert!(!is_json(Some("text/plain")));
//! assert!(same_secret("s3cret", "s3cret") && !same_secret("s3cre", "s3cret"));
//! ```

/// The loopback names a local server answers to.
pub const NAMES: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// Whether `authority` (a `Host` header) is a loopback name with `port`, in any case.
pub fn is_loopback_authority(authority: &str, port: u16) -> bool {
    let Some((name, given)) = authority.rsplit_once(':') else {
        return false;
    };
    given.parse::<u16>().ok() == Some(port)
        && given.bytes().all(|b| b.is_ascii_digit())
        && NAMES.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// Whether `origin` (an `Origin` header, or one given to allow) is the local server's
/// own: `http://` a loopback name with `port` (a trailing `/` ignored, in any case).
/// Any other loopback origin is not: a development server on `localhost:3000` may serve
/// anyone's script.
pub fn is_loopback_origin(origin: &str, port: u16) -> bool {
    let origin = origin.trim().trim_end_matches('/');
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    scheme.eq_ignore_ascii_case("http") && is_loopback_authority(authority, port)
}

/// The token of an `Authorization: Bearer TOKEN` value, the scheme in any case.
pub fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Whether a `Content-Type` is JSON (`application/json`, with any parameters).
pub fn is_json(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|c| {
        c.split(';')
            .next()
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
    })
}

/// Whether a secret given is the secret kept, compared without stopping at the first
/// differing byte, so the time taken says nothing about how much of a guess was right.
pub fn same_secret(given: &str, kept: &str) -> bool {
    given.len() == kept.len()
        && given
            .bytes()
            .zip(kept.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_names_with_the_port_pass_whatever_their_case() {
        for host in [
            "127.0.0.1:4000",
            "localhost:4000",
            "LocalHost:4000",
            "[::1]:4000",
        ] {
            assert!(is_loopback_authority(host, 4000), "{host}");
        }
        for host in [
            "127.0.0.1",
            "127.0.0.1:4001",
            "127.0.0.1:04000x",
            "127.0.0.1:+4000",
            "0.0.0.0:4000",
            "evil.example:4000",
            "localhost.evil.example:4000",
            "[::1]",
            "",
            ":4000",
        ] {
            assert!(!is_loopback_authority(host, 4000), "{host}");
        }
    }

    #[test]
    fn the_own_origin_is_http_on_a_loopback_name_and_the_port() {
        assert!(is_loopback_origin("http://127.0.0.1:4000", 4000));
        assert!(is_loopback_origin("HTTP://LOCALHOST:4000/", 4000));
        for origin in [
            "https://localhost:4000",
            "http://localhost:4001",
            "http://localhost",
            "null",
            "http://evil.example:4000",
            "http://localhost:4000/path",
        ] {
            assert!(!is_loopback_origin(origin, 4000), "{origin}");
        }
    }

    #[test]
    fn bearer_and_json_as_clients_write_them() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("BEARER abc"), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer"), None);
        assert!(is_json(Some("Application/JSON")));
        for other in [
            None,
            Some("text/plain"),
            Some("application/json-seq"),
            Some("multipart/form-data"),
        ] {
            assert!(!is_json(other), "{other:?}");
        }
    }
}
