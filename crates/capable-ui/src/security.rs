//! Who may talk to the inspector: only the browser the user opened with the printed
//! URL, only under a loopback name, only from the inspector's own page.
//!
//! A local web server is reachable by every page the user's browser opens, and a
//! server that starts processes is worth attacking (the MCP Inspector's
//! CVE-2025-49596 was exactly that). The gate below runs before every route,
//! the page itself included:
//!
//! 1. **`Host`** must be `127.0.0.1:PORT`, `localhost:PORT` or `[::1]:PORT` with the
//!    bound port, else `421 Misdirected Request`. A DNS-rebinding attack makes the
//!    browser send the attacker's host name here, so it stops there; a missing `Host`
//!    is refused too.
//! 2. **`Origin`**, when the browser sends one, must be the same loopback origin,
//!    else `403`. A request without `Origin` is not let through on that account
//!    alone: it still needs step 3.
//! 3. **The token.** The URL printed at start carries 32 random bytes
//!    (`/?token=…`). The first load exchanges it for an `HttpOnly; SameSite=Strict`
//!    cookie and redirects to `/` without it, so the token leaves the address bar and
//!    the history, and is never in the page (scripts cannot read the cookie). Every
//!    other request needs that cookie, or `Authorization: Bearer TOKEN` for scripts;
//!    without either: `401`.
//! 4. A command (`POST`) must be `Content-Type: application/json`, which a
//!    cross-origin form cannot send without a CORS preflight this server never
//!    grants.
//!
//! Every answer carries a strict Content-Security-Policy (`default-src 'self'`,
//! no framing), `nosniff`, `no-referrer` and `no-store`.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};

/// The cookie the token is exchanged for.
pub const COOKIE: &str = "capable_ui";

/// The secrets of one run: the printed token and the cookie it is exchanged for.
#[derive(Clone)]
pub struct Gate {
    port: u16,
    token: String,
    cookie: String,
}

/// Why a request was turned away.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// `Host` is not a loopback name with the bound port (DNS rebinding).
    Host,
    /// `Origin` is another site.
    Origin,
    /// Neither the cookie nor the token.
    Unauthenticated,
    /// A command that is not JSON.
    NotJson,
}

/// What the gate decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Go on to the route.
    Pass,
    /// The right token on the page's URL: set the cookie and go to `/`.
    Exchange,
    /// Refused.
    Refuse(Refusal),
}

/// 32 bytes from the operating system's CSPRNG, hex-encoded.
pub fn random_secret() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares without stopping at the first differing byte, so the time taken says
/// nothing about how much of a guess was right.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl Gate {
    /// A gate for a server bound to `port`, with fresh secrets.
    pub fn new(port: u16) -> Result<Gate, getrandom::Error> {
        Ok(Gate {
            port,
            token: random_secret()?,
            cookie: random_secret()?,
        })
    }

    /// The token printed with the URL.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The URL to open: the page, with the token to exchange.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/?token={}", self.port, self.token)
    }

    fn loopback(&self, authority: &str) -> bool {
        let port = self.port;
        [
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ]
        .iter()
        .any(|a| a.eq_ignore_ascii_case(authority))
    }

    /// Decides about one request (see the [module](self)).
    pub fn check(&self, method: &Method, path: &str, query: &str, headers: &HeaderMap) -> Verdict {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        if !host.is_some_and(|h| self.loopback(h)) {
            return Verdict::Refuse(Refusal::Host);
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let same_origin = origin
                .to_str()
                .ok()
                .and_then(|o| o.strip_prefix("http://"))
                .is_some_and(|authority| self.loopback(authority));
            if !same_origin {
                return Verdict::Refuse(Refusal::Origin);
            }
        }
        if method == Method::GET && path == "/" {
            let given = query
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .find(|(k, _)| *k == "token")
                .map(|(_, v)| v);
            if given.is_some_and(|t| same(t, &self.token)) {
                return Verdict::Exchange;
            }
        }
        if !self.authenticated(headers) {
            return Verdict::Refuse(Refusal::Unauthenticated);
        }
        if method == Method::POST {
            let json = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.trim().starts_with("application/json"));
            if !json {
                return Verdict::Refuse(Refusal::NotJson);
            }
        }
        Verdict::Pass
    }

    fn authenticated(&self, headers: &HeaderMap) -> bool {
        let cookie = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().split_once('='))
            .any(|(k, v)| k == COOKIE && same(v, &self.cookie));
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| same(t.trim(), &self.token));
        cookie || bearer
    }

    /// The answer to a first load with the token: the cookie, and `/` without it.
    pub fn exchange(&self) -> Response<Body> {
        let cookie = format!(
            "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
            self.cookie
        );
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::SEE_OTHER;
        let headers = response.headers_mut();
        headers.insert(header::LOCATION, HeaderValue::from_static("/"));
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            headers.insert(header::SET_COOKIE, value);
        }
        response
    }
}

/// The answer to a refused request: a status and a sentence, nothing else.
pub fn refused(why: &Refusal) -> Response<Body> {
    let (status, text) = match why {
        Refusal::Host => (
            StatusCode::MISDIRECTED_REQUEST,
            "capable ui answers only to 127.0.0.1, localhost and [::1] on its own port\n",
        ),
        Refusal::Origin => (
            StatusCode::FORBIDDEN,
            "capable ui answers only to its own page\n",
        ),
        Refusal::Unauthenticated => (
            StatusCode::UNAUTHORIZED,
            "open the URL capable ui printed (it carries the token)\n",
        ),
        Refusal::NotJson => (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "commands are JSON (Content-Type: application/json)\n",
        ),
    };
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The headers every answer carries; an answer with a policy of its own (an MCP
/// Apps view, framed by the page) keeps it.
pub fn harden(headers: &mut HeaderMap) {
    let set = [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ];
    for (name, value) in set {
        headers
            .entry(name)
            .or_insert(HeaderValue::from_static(value));
    }
}

/// The gate as axum middleware.
pub async fn middleware(
    axum::extract::State(gate): axum::extract::State<Gate>,
    request: Request<Body>,
    next: axum::middleware::Next,
) -> Response<Body> {
    let uri = request.uri();
    let verdict = gate.check(
        request.method(),
        uri.path(),
        uri.query().unwrap_or(""),
        request.headers(),
    );
    let mut response = match verdict {
        Verdict::Pass => next.run(request).await,
        Verdict::Exchange => gate.exchange(),
        Verdict::Refuse(why) => refused(&why),
    };
    harden(response.headers_mut());
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate {
            port: 4000,
            token: "t0ken".into(),
            cookie: "c00kie".into(),
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn only_loopback_names_with_the_bound_port_pass() {
        let g = gate();
        for host in ["127.0.0.1:4000", "localhost:4000", "[::1]:4000"] {
            let h = headers(&[("host", host), ("cookie", "capable_ui=c00kie")]);
            assert_eq!(g.check(&Method::GET, "/api/servers", "", &h), Verdict::Pass);
        }
        for host in ["evil.example:4000", "127.0.0.1:4001", "127.0.0.1", ""] {
            let h = headers(&[("host", host), ("cookie", "capable_ui=c00kie")]);
            assert_eq!(
                g.check(&Method::GET, "/", "", &h),
                Verdict::Refuse(Refusal::Host),
                "{host}"
            );
        }
        let h = headers(&[("cookie", "capable_ui=c00kie")]);
        assert_eq!(
            g.check(&Method::GET, "/", "", &h),
            Verdict::Refuse(Refusal::Host)
        );
    }

    #[test]
    fn a_foreign_origin_is_refused_even_with_the_cookie() {
        let g = gate();
        for origin in [
            "http://evil.example",
            "null",
            "https://127.0.0.1:4000",
            "http://127.0.0.1:4001",
        ] {
            let h = headers(&[
                ("host", "127.0.0.1:4000"),
                ("origin", origin),
                ("cookie", "capable_ui=c00kie"),
            ]);
            assert_eq!(
                g.check(&Method::GET, "/api/servers", "", &h),
                Verdict::Refuse(Refusal::Origin),
                "{origin}"
            );
        }
    }

    #[test]
    fn the_token_is_exchanged_only_on_the_page_and_only_when_right() {
        let g = gate();
        let h = headers(&[("host", "localhost:4000")]);
        assert_eq!(
            g.check(&Method::GET, "/", "token=t0ken", &h),
            Verdict::Exchange
        );
        for (path, query) in [
            ("/", "token=t0kem"),
            ("/", "token="),
            ("/app.js", "token=t0ken"),
        ] {
            assert_eq!(
                g.check(&Method::GET, path, query, &h),
                Verdict::Refuse(Refusal::Unauthenticated),
                "{path}?{query}"
            );
        }
        let bearer = headers(&[
            ("host", "localhost:4000"),
            ("authorization", "Bearer t0ken"),
        ]);
        assert_eq!(
            g.check(&Method::GET, "/api/servers", "", &bearer),
            Verdict::Pass
        );
    }

    #[test]
    fn a_command_must_be_json() {
        let g = gate();
        let form = headers(&[
            ("host", "localhost:4000"),
            ("cookie", "other=1; capable_ui=c00kie"),
            ("content-type", "application/x-www-form-urlencoded"),
        ]);
        assert_eq!(
            g.check(&Method::POST, "/api/read", "", &form),
            Verdict::Refuse(Refusal::NotJson)
        );
    }

    #[test]
    fn secrets_are_long_random_and_distinct() {
        let (a, b) = (random_secret().unwrap(), random_secret().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
