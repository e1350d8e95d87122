//! Who may talk to the listener. A local server that starts processes and holds tokens
//! is worth attacking from a web page (DNS rebinding; the MCP Inspector's
//! CVE-2025-49596), so every request passes, in order:
//!
//! 1. **`Host`**: on a loopback address, `127.0.0.1:PORT`, `localhost:PORT` or
//!    `[::1]:PORT` with the bound port, else `421` (a rebinding page sends its own
//!    name), or the `--public-url`'s name (what a proxy in front sends). Not checked
//!    when `--allow-remote` bound another address.
//! 2. **`Origin`**, when sent: the listener's own (`http://127.0.0.1:PORT`,
//!    `http://localhost:PORT`, `http://[::1]:PORT`) or one `--allow-origin` names, else
//!    `403` (the specification: servers MUST validate it). Any other loopback origin is
//!    refused too: a development server on `localhost:3000` may serve anyone's script.
//! 3. **The token**, when `--listen-token` gave one: `Authorization: Bearer TOKEN`
//!    (the scheme in any case, RFC 7235), compared in constant time, else `401`.
//!    (With `--auth-issuer` the token is an OAuth access token, judged after the gate:
//!    `identity.rs`.)
//! 4. **A POST's body is JSON**: `Content-Type: application/json` (parameters
//!    allowed), else `415`. A page may send `text/plain`, a form or multipart without
//!    asking first (no CORS preflight); the transport defines the body as JSON, so
//!    none of those is ever run.
//!
//! A browser asks before anything else (`OPTIONS`, a CORS preflight): an allowed
//! origin gets its grant, any other none. Answers to an allowed origin carry
//! `Access-Control-Allow-Origin` with it, and expose `Mcp-Session-Id`.
//!
//! The rules themselves (what a loopback name, the own origin, a bearer value and a
//! JSON body are) are the core's, shared with the inspector's gate
//! ([`capable::internal::http::loopback`]).

use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use capable::internal::http::loopback::{
    bearer, is_json, is_loopback_authority, is_loopback_origin, same_secret,
};

/// The listener's rules.
#[derive(Clone, Debug)]
pub struct Gate {
    /// The bound port, for the `Host` check; `None` when bound to a remote address.
    pub loopback_port: Option<u16>,
    /// The bearer token, if one is required.
    pub token: Option<String>,
    /// The origins `--allow-origin` named, as browsers send them (`scheme://host[:port]`,
    /// lower case, no trailing slash).
    pub origins: Vec<String>,
    /// The `host[:port]` of `--public-url` (lower case), a `Host` also taken: a proxy
    /// in front of a loopback listener sends the public name.
    pub public_host: Option<String>,
}

/// Why a request does not pass: its status, and the words.
pub type Refusal = (StatusCode, &'static str);

impl Gate {
    /// An origin as `--allow-origin` takes it: `scheme://host[:port]`, compared as
    /// browsers send it (lower case, no path, no trailing slash); `None` for anything
    /// else.
    pub fn origin(given: &str) -> Option<String> {
        let origin = given.trim().trim_end_matches('/').to_ascii_lowercase();
        let (scheme, authority) = origin.split_once("://")?;
        let good = matches!(scheme, "http" | "https")
            && !authority.is_empty()
            && !authority.contains(['/', '?', '#', '@', ' ']);
        good.then_some(origin)
    }

    /// Whether `origin` (as sent) is the listener's own or one allowed.
    fn allows(&self, origin: &str) -> bool {
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        let own = self
            .loopback_port
            .is_some_and(|port| is_loopback_origin(&origin, port));
        own || self.origins.contains(&origin)
    }

    /// Whether a request with `headers` may pass; the status and why, if not.
    pub fn check(&self, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
        self.check_host(headers)?;
        if let Some(origin) = headers.get(header::ORIGIN) {
            if !origin.to_str().is_ok_and(|o| self.allows(o)) {
                return Err((
                    StatusCode::FORBIDDEN,
                    "capable bridge answers no web page of an origin it was not told to allow \
                     (--allow-origin)",
                ));
            }
        }
        let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
        if let Some(token) = &self.token {
            let given = text(header::AUTHORIZATION).and_then(bearer);
            if !given.is_some_and(|g| same_secret(g, token)) {
                return Err((
                    StatusCode::UNAUTHORIZED,
                    "capable bridge wants its bearer token",
                ));
            }
        }
        if method == Method::POST && !is_json(text(header::CONTENT_TYPE)) {
            return Err((
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "capable bridge takes a POST's body as Content-Type: application/json only",
            ));
        }
        Ok(())
    }

    /// The first rule alone: `Host`.
    pub fn check_host(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(port) = self.loopback_port else {
            return Ok(());
        };
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
        let public = |host: &str| {
            self.public_host
                .as_deref()
                .is_some_and(|p| host.eq_ignore_ascii_case(p))
        };
        match host.is_some_and(|host| is_loopback_authority(host, port) || public(host)) {
            true => Ok(()),
            false => Err((
                StatusCode::MISDIRECTED_REQUEST,
                "capable bridge answers only to 127.0.0.1, localhost and [::1] on its own port",
            )),
        }
    }

    /// The answer to a CORS preflight (`OPTIONS`): a grant for an allowed origin, else
    /// `403` and none.
    pub fn preflight(
        &self,
        headers: &HeaderMap,
    ) -> Result<Vec<(header::HeaderName, HeaderValue)>, Refusal> {
        self.check_host(headers)?;
        let origin = headers.get(header::ORIGIN);
        let Some(origin) = origin.filter(|o| o.to_str().is_ok_and(|o| self.allows(o))) else {
            return Err((StatusCode::FORBIDDEN, "no CORS grant for this origin"));
        };
        let mut grant = self.grant(origin);
        grant.push((
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST, DELETE"),
        ));
        grant.push((
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(
                "authorization, content-type, accept, last-event-id, mcp-session-id, \
                 mcp-protocol-version, mcp-method, mcp-name",
            ),
        ));
        grant.push((
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        ));
        Ok(grant)
    }

    /// The CORS headers of an answer to a request from an allowed `origin` (the gate
    /// let it through).
    pub fn grant(&self, origin: &HeaderValue) -> Vec<(header::HeaderName, HeaderValue)> {
        vec![
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone()),
            (header::VARY, HeaderValue::from_static("origin")),
            (
                header::ACCESS_CONTROL_EXPOSE_HEADERS,
                HeaderValue::from_static("mcp-session-id, www-authenticate"),
            ),
        ]
    }
}

/// What `args` say of who may call, checked before anything listens: a remote address
/// only with `--allow-remote` and a token (or an issuer), one kind of token, none
/// empty; the origins `--allow-origin` names, as browsers send them.
pub fn checked(args: &crate::ListenConfig) -> Result<Vec<String>, crate::BridgeError> {
    use crate::BridgeError;
    let addr = args.addr;
    let loopback = addr.ip().is_loopback();
    if !loopback && !args.allow_remote {
        return Err(BridgeError::Config(format!(
            "--listen {addr} is not a loopback address: pass --allow-remote (and --listen-token) to serve other machines"
        )));
    }
    if !loopback && args.token.is_none() && args.auth.is_none() {
        return Err(BridgeError::Config("--allow-remote needs --listen-token or --auth-issuer: the listener must not be open to anyone who can reach it".into()));
    }
    if args.token.is_some() && args.auth.is_some() {
        return Err(BridgeError::Config(
            "--listen-token and --auth-issuer both want the Authorization header: give one".into(),
        ));
    }
    if let Some(token) = &args.token {
        if token.trim().is_empty() {
            return Err(BridgeError::Config(
                "--listen-token is empty: every request would be refused; give a token, or none"
                    .into(),
            ));
        }
    }
    let mut origins = Vec::new();
    for given in &args.allow_origins {
        match Gate::origin(given) {
            Some(origin) => origins.push(origin),
            None => {
                return Err(BridgeError::Config(format!(
                    "--allow-origin {given}: an origin is scheme://host[:port] (http or https), \
                     as a browser sends it"
                )))
            }
        }
    }
    Ok(origins)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        h
    }

    fn gate(token: Option<&str>, origins: &[&str]) -> Gate {
        Gate {
            loopback_port: Some(8123),
            token: token.map(str::to_owned),
            origins: origins.iter().filter_map(|o| Gate::origin(o)).collect(),
            public_host: Some("gw.example.com".into()),
        }
    }

    const JSON: (header::HeaderName, &str) = (header::CONTENT_TYPE, "application/json");

    #[test]
    fn loopback_names_on_the_bound_port_allowed_origins_and_the_token_pass() {
        let gate = gate(Some("s3cret"), &["http://localhost:6274/"]);
        let good = [
            (header::HOST, "localhost:8123"),
            (header::ORIGIN, "http://localhost:6274"),
            (header::AUTHORIZATION, "bearer s3cret"),
            (header::CONTENT_TYPE, "application/json; charset=utf-8"),
        ];
        assert!(gate.check(&Method::POST, &headers(&good)).is_ok());
        let own = [
            (header::HOST, "127.0.0.1:8123"),
            (header::ORIGIN, "http://127.0.0.1:8123"),
            (header::AUTHORIZATION, "BEARER  s3cret"),
            JSON,
        ];
        assert!(gate.check(&Method::POST, &headers(&own)).is_ok());
        let status = |pairs: &[(header::HeaderName, &str)]| {
            gate.check(&Method::POST, &headers(pairs)).unwrap_err().0
        };
        assert_eq!(
            status(&[(header::HOST, "evil.example:8123")]),
            StatusCode::MISDIRECTED_REQUEST
        );
        assert_eq!(
            status(&[(header::HOST, "127.0.0.1:9999")]),
            StatusCode::MISDIRECTED_REQUEST
        );
        // The public URL's name, as a proxy in front sends it; no other name.
        let public = [(header::HOST, "GW.example.com"), JSON];
        assert!(
            gate.check(&Method::POST, &headers(&public)).is_err(),
            "no token"
        );
        let public = [
            public[0].clone(),
            (header::AUTHORIZATION, "Bearer s3cret"),
            JSON,
        ];
        assert!(gate.check(&Method::POST, &headers(&public)).is_ok());
        assert_eq!(
            status(&[(header::HOST, "gw.example.com.evil:8123")]),
            StatusCode::MISDIRECTED_REQUEST
        );
        for origin in ["http://evil.example", "http://localhost:3000", "null"] {
            let h = [(header::HOST, "127.0.0.1:8123"), (header::ORIGIN, origin)];
            assert_eq!(status(&h), StatusCode::FORBIDDEN, "{origin}");
        }
        assert_eq!(
            status(&[
                (header::HOST, "127.0.0.1:8123"),
                (header::AUTHORIZATION, "Bearer nope")
            ]),
            StatusCode::UNAUTHORIZED
        );
    }

    #[test]
    fn a_post_that_is_not_json_is_415_whatever_a_page_may_send_without_asking() {
        let gate = gate(None, &[]);
        let host = (header::HOST, "127.0.0.1:8123");
        for kind in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
        ] {
            let h = headers(&[host.clone(), (header::CONTENT_TYPE, kind)]);
            let refused = gate.check(&Method::POST, &h).unwrap_err().0;
            assert_eq!(refused, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{kind}");
        }
        let none = headers(std::slice::from_ref(&host));
        assert_eq!(
            gate.check(&Method::POST, &none).unwrap_err().0,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        // A GET or DELETE has no body.
        assert!(gate.check(&Method::GET, &none).is_ok());
    }

    #[test]
    fn a_preflight_is_granted_to_an_allowed_origin_only() {
        let gate = gate(None, &["https://app.example.com"]);
        let host = (header::HOST, "localhost:8123");
        let asked =
            |origin: &str| gate.preflight(&headers(&[host.clone(), (header::ORIGIN, origin)]));
        let grant = asked("https://app.example.com").unwrap();
        assert!(grant
            .iter()
            .any(|(n, v)| *n == header::ACCESS_CONTROL_ALLOW_ORIGIN
                && v == "https://app.example.com"));
        assert!(asked("http://localhost:3000").is_err());
        assert!(gate
            .preflight(&headers(std::slice::from_ref(&host)))
            .is_err());
        assert_eq!(Gate::origin("ftp://x"), None);
        assert_eq!(Gate::origin("http://a.example/path"), None);
        assert_eq!(
            Gate::origin("HTTP://Localhost:6274/").as_deref(),
            Some("http://localhost:6274")
        );
    }
}
