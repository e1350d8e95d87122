//! The three ways to get an authorization code:
//!
//! - **browser**: a listener on the loopback (never all interfaces) receives the
//!   redirect; the system browser is opened on the authorization URL (honouring
//!   `$BROWSER`), and the URL is printed too in case it does not open. A redirect
//!   whose `state` is wrong is answered 400 and ignored; the first right one is
//!   answered and the listener closes. On a terminal, pasting the redirect URL works
//!   as well (for a browser on another machine); the end of that input (Ctrl-D) only
//!   ends the pasting, not the wait for the browser.
//! - **paste**: the URL is printed; the user pastes where the browser was sent.
//! - **headless**: the authorization URL is fetched without a browser, following its
//!   redirects (with the cookies they set, nothing else) until one goes to the
//!   redirect URI; for authorization servers that approve without a login page, and
//!   for tests.
//!
//! The redirect URI is `http://127.0.0.1:PORT/callback` on a free port (or the port
//! the client was registered with), or the host's own fixed one: a loopback `http`
//! URI is listened on at its host (both loopback addresses for `localhost`), port and
//! path; any other (an `https` page of a pre-registered client) cannot be received
//! here, and the browser login reads the pasted address instead.
//!
//! Before a person is asked to open the URL (browser, paste), it is fetched once as
//! the headless login's first step would be: an authorization endpoint that refuses
//! the request outright (an unknown client, a redirect URI it does not know) is
//! reported at once, with its words, instead of on a page nobody reads while the
//! login waits out its time; one that approves at once redirects straight back
//! with the code.
//!
//! A host with a server of its own (a web page on the loopback) receives the redirect
//! there instead ([`HostRedirect`](super::HostRedirect)): it shows the URL its own way
//! and hands back the redirect's query.
//!
//! Whichever way, the answer is validated by the core (`state`, RFC 9207 `iss`)
//! before its code is used.

use std::net::IpAddr;
use std::time::Duration;

use capable_core::internal::auth::authorize::{callback_params, is_redirect_to, validate_callback};
use capable_core::internal::auth::token::oauth_error;
use capable_core::internal::auth::{CallbackError, Pending};
use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::wire::{Answer, Wire};
use super::{AuthError, LoginMode};

/// The most redirects headless mode follows.
const MAX_HOPS: usize = 12;

/// Where the authorization server sends the answer, and what listens there.
pub(crate) struct Redirect {
    pub(crate) uri: String,
    listeners: Vec<TcpListener>,
}

fn cannot_listen(at: &str, e: std::io::Error) -> AuthError {
    AuthError::Config(format!(
        "cannot listen on {at} for the authorization redirect: {e}"
    ))
}

/// The loopback addresses a redirect host stands for (none: not a loopback host).
fn loopback(host: &url::Host<&str>) -> Vec<IpAddr> {
    match host {
        url::Host::Domain(d) if d.eq_ignore_ascii_case("localhost") => {
            vec![[127, 0, 0, 1].into(), std::net::Ipv6Addr::LOCALHOST.into()]
        }
        url::Host::Domain(_) => Vec::new(),
        url::Host::Ipv4(ip) if ip.is_loopback() => vec![(*ip).into()],
        url::Host::Ipv6(ip) if ip.is_loopback() => vec![(*ip).into()],
        _ => Vec::new(),
    }
}

impl Redirect {
    /// The host's own redirect URI, which its own server receives (nothing listens
    /// here).
    pub(crate) fn host(uri: &str) -> Redirect {
        Redirect {
            uri: uri.to_owned(),
            listeners: Vec::new(),
        }
    }
}

/// Prepares the redirect for `mode`: the host's fixed `configured` URI, else
/// `http://127.0.0.1:PORT/callback` on `port` when given (0: any free port).
pub(crate) async fn redirect(
    mode: LoginMode,
    configured: Option<&str>,
    port: Option<u16>,
) -> Result<Redirect, AuthError> {
    if let Some(uri) = configured {
        return fixed(mode, uri).await;
    }
    let uri = |port: u16| format!("http://127.0.0.1:{port}/callback");
    let bind = |port: u16| async move {
        TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| cannot_listen(&format!("127.0.0.1:{port}"), e))
    };
    match (mode, port) {
        (LoginMode::Browser, _) => {
            let listener = bind(port.unwrap_or(0)).await?;
            let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
            Ok(Redirect {
                uri: uri(port),
                listeners: vec![listener],
            })
        }
        (_, Some(port)) if port != 0 => Ok(Redirect {
            uri: uri(port),
            listeners: Vec::new(),
        }),
        _ => {
            // Nothing listens: any free port makes a plausible loopback redirect.
            let probe = bind(0).await?;
            let port = probe.local_addr().map(|a| a.port()).unwrap_or(0);
            Ok(Redirect {
                uri: uri(port),
                listeners: Vec::new(),
            })
        }
    }
}

/// The host's fixed redirect URI, listened on when the browser login can.
async fn fixed(mode: LoginMode, uri: &str) -> Result<Redirect, AuthError> {
    let parsed = Url::parse(uri)
        .map_err(|e| AuthError::Config(format!("the redirect URI {uri:?} is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.fragment().is_some() {
        return Err(AuthError::Config(format!(
            "the redirect URI {uri:?} must be an http or https URL without a fragment"
        )));
    }
    let mut listeners = Vec::new();
    let addresses = match (parsed.scheme(), parsed.host()) {
        ("http", Some(host)) => loopback(&host),
        _ => Vec::new(),
    };
    if mode == LoginMode::Browser && !addresses.is_empty() {
        let port = parsed.port_or_known_default().unwrap_or(80);
        let mut failure = None;
        for ip in addresses {
            match TcpListener::bind((ip, port)).await {
                Ok(l) => listeners.push(l),
                Err(e) => failure = Some(cannot_listen(&format!("{ip}:{port}"), e)),
            }
        }
        if listeners.is_empty() {
            return Err(failure.unwrap_or_else(|| {
                AuthError::Config(format!("cannot listen for the redirect URI {uri}"))
            }));
        }
    }
    Ok(Redirect {
        uri: uri.to_owned(),
        listeners,
    })
}

/// Gets the code of the authorization at `url`, validated against `pending`.
pub(crate) async fn obtain(
    mode: LoginMode,
    redirect: &Redirect,
    url: &Url,
    pending: &Pending,
    wire: &Wire,
    say: &(dyn Fn(&str) + Send + Sync),
    within: Duration,
) -> Result<String, AuthError> {
    let work = async {
        if mode == LoginMode::Headless {
            return headless(url, pending, wire).await;
        }
        if let First::Code(code) = first_hop(url, pending, wire).await? {
            return Ok(code);
        }
        match (mode, redirect.listeners.is_empty()) {
            (LoginMode::Browser, false) => {
                say(&format!(
                    "Opening the browser to authorize capable. If it does not open, visit:\n\n  {url}\n"
                ));
                let to_open = url.to_string();
                tokio::task::spawn_blocking(move || {
                    if let Err(e) = webbrowser::open(&to_open) {
                        tracing::debug!("could not open a browser: {e}");
                    }
                });
                let paste = async {
                    use std::io::IsTerminal;
                    if std::io::stdin().is_terminal() {
                        pasted(pending, Eof::Wait).await
                    } else {
                        std::future::pending().await
                    }
                };
                tokio::select! {
                    r = listen(&redirect.listeners, pending) => r,
                    r = paste => r,
                }
            }
            (LoginMode::Browser | LoginMode::Paste, _) => {
                say(&format!(
                    "Open this URL in a browser to authorize capable:\n\n  {url}\n\nThen paste the address the browser is sent to (it starts with {}):",
                    pending.redirect_uri
                ));
                pasted(pending, Eof::Fail).await
            }
            _ => Err(AuthError::Config("interactive login is off".into())),
        }
    };
    tokio::time::timeout(within, work)
        .await
        .map_err(|_| AuthError::TimedOut { after: within })?
}

/// Gets the code of the authorization at `url` through the host's own server: after
/// the same first look as [`obtain`], the host shows the URL and brings back the
/// redirect's query, validated against `pending`.
pub(crate) async fn obtain_via(
    via: &super::HostRedirect,
    url: &Url,
    pending: &Pending,
    wire: &Wire,
    within: Duration,
) -> Result<String, AuthError> {
    let work = async {
        if let First::Code(code) = first_hop(url, pending, wire).await? {
            return Ok(code);
        }
        let query = (via.authorize)(url.clone()).await?;
        validate_callback(pending, &callback_params(&query)).map_err(callback)
    };
    tokio::time::timeout(within, work)
        .await
        .map_err(|_| AuthError::TimedOut { after: within })?
}

fn callback(e: CallbackError) -> AuthError {
    AuthError::Callback(e)
}

/// What the end of the pasted input means.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Eof {
    /// Nothing else can bring the answer: the login fails.
    Fail,
    /// The browser's redirect still can: only the pasting ends.
    Wait,
}

/// The lines of stdin, read on a thread of their own: a read cannot be cancelled,
/// and one waiting on a runtime's blocking thread would keep the process from
/// exiting once the browser's redirect has ended the login (this one ends with it).
fn stdin_lines() -> tokio::sync::mpsc::UnboundedReceiver<std::io::Result<String>> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::stdin().lock().lines() {
            let failed = line.is_err();
            if tx.send(line).is_err() || failed {
                return;
            }
        }
    });
    rx
}

async fn pasted(pending: &Pending, eof: Eof) -> Result<String, AuthError> {
    let mut lines = stdin_lines();
    loop {
        let line = lines
            .recv()
            .await
            .transpose()
            .map_err(|e| AuthError::Config(format!("reading the pasted address: {e}")))?;
        let Some(line) = line else {
            return match eof {
                Eof::Fail => Err(AuthError::Config(
                    "no address was pasted (end of input)".into(),
                )),
                Eof::Wait => std::future::pending().await,
            };
        };
        if line.trim().is_empty() {
            continue;
        }
        return validate_callback(pending, &callback_params(&line)).map_err(callback);
    }
}

const PAGE_OK: &str = "<!doctype html><title>capable</title><p>Authorized. You can close this window and return to the terminal.</p>";
const PAGE_FAILED: &str =
    "<!doctype html><title>capable</title><p>Authorization failed; see the terminal.</p>";

/// The next connection on any of the listeners.
async fn accept(listeners: &[TcpListener]) -> std::io::Result<TcpStream> {
    let accepts = listeners.iter().map(|l| Box::pin(l.accept()));
    let (accepted, _, _) = futures_util::future::select_all(accepts).await;
    accepted.map(|(socket, _)| socket)
}

/// Serves the loopback redirect: one right answer, then the listeners close.
async fn listen(listeners: &[TcpListener], pending: &Pending) -> Result<String, AuthError> {
    let expected = Url::parse(&pending.redirect_uri)
        .map(|u| u.path().to_owned())
        .unwrap_or_default();
    loop {
        let mut socket = accept(listeners)
            .await
            .map_err(|e| AuthError::Config(format!("the redirect listener failed: {e}")))?;
        let mut buf = Vec::with_capacity(2048);
        let mut chunk = [0u8; 2048];
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
                let n = socket.read(&mut chunk).await?;
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            Ok::<_, std::io::Error>(())
        })
        .await;
        if !matches!(read, Ok(Ok(()))) {
            continue;
        }
        let text = String::from_utf8_lossy(&buf);
        let target = text
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or("");
        let path = target.split('?').next().unwrap_or("");
        if path != expected {
            respond(&mut socket, 404, "<p>Not found.</p>").await;
            continue;
        }
        let params = callback_params(target.split_once('?').map(|(_, q)| q).unwrap_or(""));
        match validate_callback(pending, &params) {
            Err(CallbackError::State) => {
                // Not the answer to our request (a stale tab, or a forgery): ignored.
                respond(
                    &mut socket,
                    400,
                    "<p>This answer does not belong to the pending authorization.</p>",
                )
                .await;
            }
            Ok(code) => {
                respond(&mut socket, 200, PAGE_OK).await;
                return Ok(code);
            }
            Err(e) => {
                respond(&mut socket, 400, PAGE_FAILED).await;
                return Err(callback(e));
            }
        }
    }
}

async fn respond(socket: &mut TcpStream, status: u16, body: &str) {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    let _ = socket.write_all(response.as_bytes()).await;
    let _ = socket.shutdown().await;
}

/// What the authorization endpoint's own answer led to.
enum First {
    /// It redirected straight back with the code.
    Code(String),
    /// It goes on (a login page, a redirect elsewhere): its answer.
    Onward(Answer),
}

/// Fetches the authorization URL once, without cookies: the endpoint's refusal of
/// the request itself (4xx, 5xx) is [`AuthError::AuthorizeRefused`] with its OAuth
/// error; a redirect back is validated (its code, or the error it carries).
async fn first_hop(url: &Url, pending: &Pending, wire: &Wire) -> Result<First, AuthError> {
    let answer = wire.get_page(url, &[]).await?;
    if answer.status >= 400 {
        let (error, description) = match oauth_error(&answer.body) {
            Some((e, d)) => (Some(e), d),
            None => (None, None),
        };
        let mut endpoint = url.clone();
        endpoint.set_query(None);
        return Err(AuthError::AuthorizeRefused {
            url: endpoint.to_string(),
            status: answer.status,
            error,
            description,
        });
    }
    if let Some(back) = redirected_back(url, &answer, pending) {
        return back.map(First::Code);
    }
    Ok(First::Onward(answer))
}

/// The validated answer, when `answer` (to a GET of `at`) redirects to the redirect
/// URI.
fn redirected_back(
    at: &Url,
    answer: &Answer,
    pending: &Pending,
) -> Option<Result<String, AuthError>> {
    if !(300..400).contains(&answer.status) {
        return None;
    }
    let next = at.join(answer.location.as_deref()?).ok()?;
    if !is_redirect_to(&next, &pending.redirect_uri) {
        return None;
    }
    let params: Vec<(String, String)> = next
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    Some(validate_callback(pending, &params).map_err(callback))
}

/// Follows the authorization URL's redirects until one goes to the redirect URI.
async fn headless(url: &Url, pending: &Pending, wire: &Wire) -> Result<String, AuthError> {
    let mut at = url.clone();
    // Cookies by the host that set them, sent back to that host only.
    let mut cookies: Vec<(String, String)> = Vec::new();
    let mut answer = match first_hop(url, pending, wire).await? {
        First::Code(code) => return Ok(code),
        First::Onward(answer) => answer,
    };
    for hop in 0..MAX_HOPS {
        if hop > 0 {
            let host = at.host_str().unwrap_or("").to_owned();
            let mine: Vec<String> = cookies
                .iter()
                .filter(|(h, _)| *h == host)
                .map(|(_, c)| c.clone())
                .collect();
            answer = wire.get_page(&at, &mine).await?;
            if let Some(back) = redirected_back(&at, &answer, pending) {
                return back;
            }
        }
        let host = at.host_str().unwrap_or("").to_owned();
        for c in std::mem::take(&mut answer.cookies) {
            let name = c.split('=').next().unwrap_or("").to_owned();
            cookies.retain(|(h, old)| *h != host || old.split('=').next() != Some(name.as_str()));
            cookies.push((host.clone(), c));
        }
        let stopped = || AuthError::Headless {
            url: at.to_string(),
            status: answer.status,
        };
        let next = match (answer.status, answer.location.as_deref()) {
            (300..=399, Some(l)) => at.join(l).map_err(|_| stopped())?,
            _ => return Err(stopped()),
        };
        if !matches!(next.scheme(), "http" | "https") {
            return Err(AuthError::Headless {
                url: next.to_string(),
                status: answer.status,
            });
        }
        at = next;
    }
    Err(AuthError::Headless {
        url: at.to_string(),
        status: 310,
    })
}
