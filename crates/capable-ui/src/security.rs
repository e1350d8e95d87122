//! Who may talk to the inspector: only the page the user opened with the printed
//! URL, only under a loopback name, only from the inspector's own origin.
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
//! 3. **The token and the page's secret.** The URL printed at start carries 32 random
//!    bytes (`/?token=…`). Loading it serves the page with an `HttpOnly;
//!    SameSite=Strict` cookie; the page's script takes the token out of the address
//!    bar at once and trades it (`POST /api/session`, the token as
//!    `Authorization: Bearer`) for a secret of its own, which it keeps in its tab's
//!    `sessionStorage` — never in the DOM, never in a URL — and sends as the
//!    `X-Capable-Page` header with every call of the API. The page and its files
//!    need the cookie; **every `/api/` route needs the cookie and the page's secret**
//!    (or the token as `Authorization: Bearer`, for scripts). Cookies ignore ports:
//!    the browser sends this one to every web server on 127.0.0.1, so one that
//!    replays it gets the page's files and nothing else (`401`). The secret is a
//!    header only a script of this origin can add, and a page of another port is
//!    another origin: it can neither read the secret nor send the header here
//!    without a CORS preflight this server never grants.
//! 4. A command (`POST`) must be `Content-Type: application/json`, which a
//!    cross-origin form cannot send without a CORS preflight either.
//!
//! One route answers without either: `GET /callback`, where an authorization server
//! sends the browser back after an OAuth login started from the page — only the
//! `state` of a login in progress gets anything there (see `logins.rs`).
//!
//! Every answer carries a strict Content-Security-Policy (`default-src 'self'`,
//! no framing), `nosniff`, `no-referrer` and `no-store`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use capable::internal::http::loopback;
// Compared without stopping at the first differing byte: the core's rule, shared with
// the bridge's listener.
use capable::internal::http::loopback::same_secret as same;

/// The cookie the page is served with is `capable_ui_PORT`: cookies ignore ports, so
/// two inspectors open in one browser would otherwise overwrite each other's.
const COOKIE: &str = "capable_ui";
/// The header that carries a page's secret.
pub const PAGE_HEADER: &str = "x-capable-page";
/// Where a page trades the token for its secret.
pub const SESSION_PATH: &str = "/api/session";
/// How many pages' secrets are kept (the oldest go first: a tab that old opens the
/// printed URL again).
const PAGES: usize = 64;

/// The secrets of one run: the printed token, the cookie, and each page's secret.
#[derive(Clone)]
pub struct Gate {
    port: u16,
    token: String,
    cookie: String,
    pages: Arc<Mutex<VecDeque<String>>>,
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
    /// An API call with the cookie but without the page's secret (a replayed cookie).
    NoPageSecret,
    /// A command that is not JSON.
    NotJson,
}

/// What the gate decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Go on to the route.
    Pass,
    /// The right token on the page's URL: serve the page with the cookie.
    Exchange,
    /// The token as a Bearer on `POST /api/session`: a new page's secret.
    NewPage,
    /// Refused.
    Refuse(Refusal),
}

/// 32 bytes from the operating system's CSPRNG, hex-encoded.
pub fn random_secret() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Gate {
    /// A gate for a server bound to `port`, with fresh secrets.
    pub fn new(port: u16) -> Result<Gate, getrandom::Error> {
        Ok(Gate {
            port,
            token: random_secret()?,
            cookie: random_secret()?,
            pages: Arc::default(),
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
        loopback::is_loopback_authority(authority, self.port)
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
                .is_ok_and(|o| loopback::is_loopback_origin(o, self.port));
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
        if method == Method::GET && path == crate::logins::CALLBACK {
            // An authorization server's redirect: a navigation from another site, with
            // neither the cookie nor the page's secret; only the `state` of a login in
            // progress gets anything there (`logins.rs`).
            return Verdict::Pass;
        }
        let bearer = self.bearer(headers);
        if !bearer && !self.has_cookie(headers) {
            return Verdict::Refuse(Refusal::Unauthenticated);
        }
        if method == Method::POST {
            let json = loopback::is_json(
                headers
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok()),
            );
            if !json {
                return Verdict::Refuse(Refusal::NotJson);
            }
        }
        if path == SESSION_PATH {
            // Only the token makes a page: a cookie, even with a page's secret, never.
            return match (method == Method::POST, bearer) {
                (true, true) => Verdict::NewPage,
                _ => Verdict::Refuse(Refusal::Unauthenticated),
            };
        }
        if path.starts_with("/api/") && !bearer && !self.has_page_secret(headers) {
            return Verdict::Refuse(Refusal::NoPageSecret);
        }
        Verdict::Pass
    }

    fn bearer(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(loopback::bearer)
            .is_some_and(|t| same(t, &self.token))
    }

    fn has_cookie(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().split_once('='))
            .any(|(k, v)| k == self.cookie_name() && same(v, &self.cookie))
    }

    fn cookie_name(&self) -> String {
        format!("{COOKIE}_{}", self.port)
    }

    fn has_page_secret(&self, headers: &HeaderMap) -> bool {
        let Some(given) = headers.get(PAGE_HEADER).and_then(|v| v.to_str().ok()) else {
            return false;
        };
        let pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        // Every kept secret is compared in full: the time says nothing of which.
        pages.iter().fold(false, |found, p| same(given, p) | found)
    }

    /// A new page's secret, kept among the last [`PAGES`]; `{"page": SECRET}`.
    pub fn new_page(&self) -> Response<Body> {
        let secret = match random_secret() {
            Ok(s) => s,
            Err(_) => {
                let mut response = Response::new(Body::from("no random numbers\n"));
                *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
                return response;
            }
        };
        {
            let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
            if pages.len() == PAGES {
                pages.pop_front();
            }
            pages.push_back(secret.clone());
        }
        let mut response = Response::new(Body::from(format!("{{\"page\":\"{secret}\"}}")));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }

    /// The cookie the page is served with, on the answer to a first load with the
    /// token.
    pub fn set_cookie(&self, response: &mut Response<Body>) {
        let cookie = format!(
            "{}={}; HttpOnly; SameSite=Strict; Path=/",
            self.cookie_name(),
            self.cookie
        );
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(header::SET_COOKIE, value);
        }
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
        Refusal::NoPageSecret => (
            StatusCode::UNAUTHORIZED,
            "the API answers the inspector's page only (its secret, not a cookie alone): open the URL capable ui printed\n",
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
        Verdict::Exchange => {
            let mut page = next.run(request).await;
            gate.set_cookie(&mut page);
            page
        }
        Verdict::NewPage => gate.new_page(),
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
            pages: Arc::new(Mutex::new(VecDeque::from(["p4ge".to_owned()]))),
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
            let h = headers(&[
                ("host", host),
                ("cookie", "capable_ui_4000=c00kie"),
                ("x-capable-page", "p4ge"),
            ]);
            assert_eq!(g.check(&Method::GET, "/api/servers", "", &h), Verdict::Pass);
        }
        for host in ["evil.example:4000", "127.0.0.1:4001", "127.0.0.1", ""] {
            let h = headers(&[("host", host), ("cookie", "capable_ui_4000=c00kie")]);
            assert_eq!(
                g.check(&Method::GET, "/", "", &h),
                Verdict::Refuse(Refusal::Host),
                "{host}"
            );
        }
        let h = headers(&[("cookie", "capable_ui_4000=c00kie")]);
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
                ("cookie", "capable_ui_4000=c00kie"),
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
        // The scheme in any case, as RFC 9110 has it (the bridge's rule, one home).
        for given in ["Bearer t0ken", "bearer t0ken", "BEARER  t0ken "] {
            let bearer = headers(&[("host", "localhost:4000"), ("authorization", given)]);
            assert_eq!(
                g.check(&Method::GET, "/api/servers", "", &bearer),
                Verdict::Pass,
                "{given}"
            );
        }
        // A command's body is JSON, not a JSON-looking type a page may send unasked.
        let seq = headers(&[
            ("host", "localhost:4000"),
            ("authorization", "Bearer t0ken"),
            ("content-type", "application/json-seq"),
        ]);
        assert_eq!(
            g.check(&Method::POST, "/api/servers", "", &seq),
            Verdict::Refuse(Refusal::NotJson)
        );
    }

    #[test]
    fn the_api_needs_the_pages_secret_beside_the_cookie() {
        let g = gate();
        let cookie = headers(&[
            ("host", "localhost:4000"),
            ("cookie", "capable_ui_4000=c00kie"),
        ]);
        assert_eq!(g.check(&Method::GET, "/app.js", "", &cookie), Verdict::Pass);
        for path in ["/api/servers", "/api/events"] {
            assert_eq!(
                g.check(&Method::GET, path, "", &cookie),
                Verdict::Refuse(Refusal::NoPageSecret),
                "a replayed cookie alone: {path}"
            );
        }
        let forged = headers(&[
            ("host", "localhost:4000"),
            ("cookie", "capable_ui_4000=c00kie"),
            ("x-capable-page", "p4gf"),
        ]);
        assert_eq!(
            g.check(&Method::GET, "/api/servers", "", &forged),
            Verdict::Refuse(Refusal::NoPageSecret)
        );
        let secret_alone = headers(&[("host", "localhost:4000"), ("x-capable-page", "p4ge")]);
        assert_eq!(
            g.check(&Method::GET, "/api/servers", "", &secret_alone),
            Verdict::Refuse(Refusal::Unauthenticated),
            "the secret without the cookie"
        );
    }

    #[test]
    fn only_the_token_makes_a_page_and_each_page_gets_its_own_secret() {
        let g = gate();
        let json = ("content-type", "application/json");
        let page = headers(&[
            ("host", "localhost:4000"),
            ("cookie", "capable_ui_4000=c00kie"),
            ("x-capable-page", "p4ge"),
            json,
        ]);
        assert_eq!(
            g.check(&Method::POST, SESSION_PATH, "", &page),
            Verdict::Refuse(Refusal::Unauthenticated)
        );
        let bearer = headers(&[
            ("host", "localhost:4000"),
            ("authorization", "Bearer t0ken"),
            json,
        ]);
        assert_eq!(
            g.check(&Method::POST, SESSION_PATH, "", &bearer),
            Verdict::NewPage
        );
        assert_eq!(g.new_page().status(), StatusCode::OK);
        g.new_page();
        let kept = g.pages.lock().unwrap().clone();
        assert_eq!(kept.len(), 3);
        assert_ne!(kept[1], kept[2], "each page its own");
        let newest = headers(&[
            ("host", "localhost:4000"),
            ("cookie", "capable_ui_4000=c00kie"),
            ("x-capable-page", kept.back().unwrap()),
        ]);
        assert_eq!(
            g.check(&Method::GET, "/api/servers", "", &newest),
            Verdict::Pass
        );
        for _ in 0..PAGES {
            g.new_page();
        }
        assert_eq!(
            g.check(&Method::GET, "/api/servers", "", &newest),
            Verdict::Refuse(Refusal::NoPageSecret),
            "the oldest secrets go"
        );
    }

    #[test]
    fn the_oauth_callback_needs_no_credential_but_a_loopback_host() {
        let g = gate();
        let bare = headers(&[("host", "127.0.0.1:4000")]);
        assert_eq!(
            g.check(&Method::GET, "/callback", "code=c&state=s", &bare),
            Verdict::Pass
        );
        assert_eq!(
            g.check(&Method::POST, "/callback", "", &bare),
            Verdict::Refuse(Refusal::Unauthenticated)
        );
        let rebound = headers(&[("host", "evil.example:4000")]);
        assert_eq!(
            g.check(&Method::GET, "/callback", "", &rebound),
            Verdict::Refuse(Refusal::Host)
        );
    }

    #[test]
    fn a_command_must_be_json() {
        let g = gate();
        let form = headers(&[
            ("host", "localhost:4000"),
            ("cookie", "other=1; capable_ui_4000=c00kie"),
            ("x-capable-page", "p4ge"),
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
