//! Who may talk to the listener. A local server that starts processes and holds tokens
//! is worth attacking from a web page (DNS rebinding; the MCP Inspector's
//! CVE-2025-49596), so every request passes, in order:
//!
//! 1. **`Host`**: on a loopback address, `127.0.0.1:PORT`, `localhost:PORT` or
//!    `[::1]:PORT` with the bound port, else `421` (a rebinding page sends its own
//!    name). Not checked when `--allow-remote` bound another address.
//! 2. **`Origin`**, when sent: a loopback origin (any port: a local web host), else
//!    `403` (the specification: servers MUST validate it).
//! 3. **The token**, when `--listen-token` gave one: `Authorization: Bearer TOKEN`,
//!    compared in constant time, else `401`.

use axum::http::{header, HeaderMap, StatusCode};

use crate::secrets::same;

/// The listener's rules.
#[derive(Clone)]
pub struct Gate {
    /// The bound port, for the `Host` check; `None` when bound to a remote address.
    pub loopback_port: Option<u16>,
    /// The bearer token, if one is required.
    pub token: Option<String>,
}

const LOOPBACK: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

impl Gate {
    /// Whether a request with `headers` may pass; the status and why, if not.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), (StatusCode, &'static str)> {
        let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
        if let Some(port) = self.loopback_port {
            let host = text(header::HOST).unwrap_or("");
            let ok = LOOPBACK
                .iter()
                .any(|name| host.eq_ignore_ascii_case(&format!("{name}:{port}")));
            if !ok {
                return Err((
                    StatusCode::MISDIRECTED_REQUEST,
                    "capable bridge answers only to 127.0.0.1, localhost and [::1] on its own port",
                ));
            }
        }
        if let Some(origin) = text(header::ORIGIN) {
            let authority = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                .unwrap_or("");
            let name = match authority.rsplit_once(':') {
                Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
                _ => authority,
            };
            if !LOOPBACK.iter().any(|l| name.eq_ignore_ascii_case(l)) {
                return Err((
                    StatusCode::FORBIDDEN,
                    "capable bridge answers no web page of another origin",
                ));
            }
        }
        if let Some(token) = &self.token {
            let given = text(header::AUTHORIZATION)
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim);
            if !given.is_some_and(|g| same(g, token)) {
                return Err((
                    StatusCode::UNAUTHORIZED,
                    "capable bridge wants its bearer token",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        h
    }

    #[test]
    fn loopback_names_on_the_bound_port_local_origins_and_the_token_pass() {
        let gate = Gate {
            loopback_port: Some(8123),
            token: Some("s3cret".into()),
        };
        let good = [
            (header::HOST, "localhost:8123"),
            (header::ORIGIN, "http://127.0.0.1:6274"),
            (header::AUTHORIZATION, "Bearer s3cret"),
        ];
        assert!(gate.check(&headers(&good)).is_ok());
        let status =
            |pairs: &[(header::HeaderName, &str)]| gate.check(&headers(pairs)).unwrap_err().0;
        assert_eq!(
            status(&[(header::HOST, "evil.example:8123")]),
            StatusCode::MISDIRECTED_REQUEST
        );
        assert_eq!(
            status(&[(header::HOST, "127.0.0.1:9999")]),
            StatusCode::MISDIRECTED_REQUEST
        );
        assert_eq!(
            status(&[
                (header::HOST, "127.0.0.1:8123"),
                (header::ORIGIN, "http://evil.example")
            ]),
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            status(&[
                (header::HOST, "127.0.0.1:8123"),
                (header::AUTHORIZATION, "Bearer nope")
            ]),
            StatusCode::UNAUTHORIZED
        );
        let open = Gate {
            loopback_port: Some(8123),
            token: None,
        };
        assert!(open
            .check(&headers(&[(header::HOST, "[::1]:8123")]))
            .is_ok());
    }
}
