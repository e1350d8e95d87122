//! The three ways to get an authorization code:
//!
//! - **browser**: a listener on `127.0.0.1` (never all interfaces) receives the
//!   redirect; the system browser is opened on the authorization URL (honouring
//!   `$BROWSER`), and the URL is printed too in case it does not open. A redirect
//!   whose `state` is wrong is answered 400 and ignored; the first right one is
//!   answered and the listener closes. On a terminal, pasting the redirect URL works
//!   as well (for a browser on another machine).
//! - **paste**: the URL is printed; the user pastes where the browser was sent.
//! - **headless**: the authorization URL is fetched without a browser, following its
//!   redirects (with the cookies they set, nothing else) until one goes to the
//!   redirect URI; for authorization servers that approve without a login page, and
//!   for tests.
//!
//! Whichever way, the answer is validated by the core (`state`, RFC 9207 `iss`)
//! before its code is used.

use std::time::Duration;

use capable_core::auth::authorize::{callback_params, is_redirect_to, validate_callback};
use capable_core::auth::{CallbackError, Pending};
use reqwest::Url;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use super::wire::Wire;
use super::{AuthError, LoginMode};

/// The most redirects headless mode follows.
const MAX_HOPS: usize = 12;

/// Where the authorization server sends the answer, and what listens there.
pub(crate) struct Redirect {
    pub(crate) uri: String,
    listener: Option<TcpListener>,
}

/// Prepares the redirect for `mode`, on `port` when given (0: any free port).
pub(crate) async fn redirect(mode: LoginMode, port: Option<u16>) -> Result<Redirect, AuthError> {
    let bind = |port: u16| async move {
        TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| {
            AuthError::Config(format!(
                "cannot listen on 127.0.0.1:{port} for the authorization redirect: {e}"
            ))
        })
    };
    let uri = |port: u16| format!("http://127.0.0.1:{port}/callback");
    match (mode, port) {
        (LoginMode::Browser, _) => {
            let listener = bind(port.unwrap_or(0)).await?;
            let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
            Ok(Redirect {
                uri: uri(port),
                listener: Some(listener),
            })
        }
        (_, Some(port)) if port != 0 => Ok(Redirect {
            uri: uri(port),
            listener: None,
        }),
        _ => {
            // Nothing listens: any free port makes a plausible loopback redirect.
            let probe = bind(0).await?;
            let port = probe.local_addr().map(|a| a.port()).unwrap_or(0);
            Ok(Redirect {
                uri: uri(port),
                listener: None,
            })
        }
    }
}

/// Gets the code of the authorization at `url`, validated against `pending`.
pub(crate) async fn obtain(
    mode: LoginMode,
    redirect: Redirect,
    url: &Url,
    pending: &Pending,
    wire: &Wire,
    say: &(dyn Fn(&str) + Send + Sync),
    within: Duration,
) -> Result<String, AuthError> {
    let work = async {
        match mode {
            LoginMode::Headless => headless(url, pending, wire).await,
            LoginMode::Paste => {
                say(&format!(
                    "Open this URL in a browser to authorize capable:\n\n  {url}\n\nThen paste the address the browser is sent to (it starts with {}):",
                    pending.redirect_uri
                ));
                pasted(pending).await
            }
            LoginMode::Browser => {
                let listener = redirect
                    .listener
                    .ok_or_else(|| AuthError::Config("the browser login has no listener".into()))?;
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
                        pasted(pending).await
                    } else {
                        std::future::pending().await
                    }
                };
                tokio::select! {
                    r = listen(listener, pending) => r,
                    r = paste => r,
                }
            }
            LoginMode::Never => Err(AuthError::Config("interactive login is off".into())),
        }
    };
    tokio::time::timeout(within, work)
        .await
        .map_err(|_| AuthError::TimedOut { after: within })?
}

fn callback(e: CallbackError) -> AuthError {
    AuthError::Callback(e)
}

async fn pasted(pending: &Pending) -> Result<String, AuthError> {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        let line = lines
            .next_line()
            .await
            .map_err(|e| AuthError::Config(format!("reading the pasted address: {e}")))?
            .ok_or_else(|| AuthError::Config("no address was pasted (end of input)".into()))?;
        if line.trim().is_empty() {
            continue;
        }
        return validate_callback(pending, &callback_params(&line)).map_err(callback);
    }
}

const PAGE_OK: &str = "<!doctype html><title>capable</title><p>Authorized. You can close this window and return to the terminal.</p>";
const PAGE_FAILED: &str =
    "<!doctype html><title>capable</title><p>Authorization failed; see the terminal.</p>";

/// Serves the loopback redirect: one right answer, then the listener closes.
async fn listen(listener: TcpListener, pending: &Pending) -> Result<String, AuthError> {
    loop {
        let (mut socket, _) = listener
            .accept()
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
        let expected = Url::parse(&pending.redirect_uri)
            .map(|u| u.path().to_owned())
            .unwrap_or_default();
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

async fn respond(socket: &mut tokio::net::TcpStream, status: u16, body: &str) {
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

/// Follows the authorization URL's redirects until one goes to the redirect URI.
async fn headless(url: &Url, pending: &Pending, wire: &Wire) -> Result<String, AuthError> {
    let mut at = url.clone();
    // Cookies by the host that set them, sent back to that host only.
    let mut cookies: Vec<(String, String)> = Vec::new();
    for _ in 0..MAX_HOPS {
        let host = at.host_str().unwrap_or("").to_owned();
        let mine: Vec<String> = cookies
            .iter()
            .filter(|(h, _)| *h == host)
            .map(|(_, c)| c.clone())
            .collect();
        let answer = wire.get_page(&at, &mine).await?;
        for c in answer.cookies {
            let name = c.split('=').next().unwrap_or("").to_owned();
            cookies.retain(|(h, old)| *h != host || old.split('=').next() != Some(name.as_str()));
            cookies.push((host.clone(), c));
        }
        let location = match (answer.status, answer.location) {
            (300..=399, Some(l)) => l,
            (status, _) => {
                return Err(AuthError::Headless {
                    url: at.to_string(),
                    status,
                })
            }
        };
        let next = at.join(&location).map_err(|_| AuthError::Headless {
            url: at.to_string(),
            status: answer.status,
        })?;
        if is_redirect_to(&next, &pending.redirect_uri) {
            let params: Vec<(String, String)> = next
                .query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            return validate_callback(pending, &params).map_err(callback);
        }
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
