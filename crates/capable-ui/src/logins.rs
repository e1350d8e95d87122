//! OAuth logins started from the page, for an HTTP server refused for want of
//! authorization: the same flow as `capable auth login` (discovery, registration,
//! the authorization code with PKCE), the token kept in the same store — with the
//! redirect received by the inspector itself, on `GET /callback` (a
//! [`HostRedirect`]): the page shows the person the authorization URL, the
//! authorization server sends the browser back here, and the login waiting for that
//! `state` gets its query.
//!
//! A callback needs neither the cookie nor the page's secret — the authorization
//! server's redirect is a navigation from another site, which carries neither — but
//! only the `state` of a login in progress (32 random bytes the client made) gets
//! anything: anything else is answered 400 and changes nothing.

use std::sync::{Arc, Mutex};

use capable::auth::{AuthError, HostRedirect};

use capable::internal::http::loopback::same_secret as same;
use tokio::sync::oneshot;

/// The path the authorization server sends the browser back to.
pub const CALLBACK: &str = "/callback";
/// The most logins waiting at once (the oldest is given up).
const MAX_WAITING: usize = 16;

/// Each login waiting: its `state`, and where its redirect's query goes.
type Waiting = Vec<(String, oneshot::Sender<String>)>;

/// The logins waiting for their redirect, by `state`.
#[derive(Clone, Default)]
pub struct Logins {
    waiting: Arc<Mutex<Waiting>>,
}

/// What a callback came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Arrival {
    /// The login waiting for this `state` has its answer.
    Delivered,
    /// No login waits for it (a stale tab, or a forgery).
    Unknown,
}

impl Logins {
    /// The redirect of one login on the inspector at `port`: its URI, and what to do
    /// with the authorization URL — hand it to `shown` (the page shows it), then wait
    /// for the callback that carries its `state`.
    pub fn redirect(&self, port: u16, shown: oneshot::Sender<String>) -> HostRedirect {
        let this = self.clone();
        let shown = Arc::new(Mutex::new(Some(shown)));
        HostRedirect {
            uri: format!("http://127.0.0.1:{port}{CALLBACK}"),
            authorize: Arc::new(move |url| {
                let this = this.clone();
                let shown = shown.clone();
                Box::pin(async move {
                    let state = url
                        .query_pairs()
                        .find(|(k, _)| k == "state")
                        .map(|(_, v)| v.into_owned())
                        .ok_or_else(|| {
                            AuthError::Config("the authorization URL carries no state".into())
                        })?;
                    let (tx, rx) = oneshot::channel();
                    this.wait(state, tx);
                    if let Some(shown) = shown.lock().unwrap_or_else(|e| e.into_inner()).take() {
                        let _ = shown.send(url.to_string());
                    }
                    rx.await.map_err(|_| {
                        AuthError::Config("the login was given up for a newer one".into())
                    })
                })
            }),
        }
    }

    fn wait(&self, state: String, answer: oneshot::Sender<String>) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting.retain(|(_, tx)| !tx.is_closed());
        if waiting.len() == MAX_WAITING {
            waiting.remove(0);
        }
        waiting.push((state, answer));
    }

    /// A callback with `query` (`code=…&state=…`, or an error): to the login waiting
    /// for its state.
    pub fn arrived(&self, query: &str) -> Arrival {
        let state = url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned());
        let Some(state) = state else {
            return Arrival::Unknown;
        };
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        // Every waiting state compared in full: the time says nothing of a guess.
        let at =
            waiting.iter().enumerate().fold(
                None,
                |found, (i, (s, _))| if same(s, &state) { Some(i) } else { found },
            );
        let Some(at) = at else {
            return Arrival::Unknown;
        };
        let (_, answer) = waiting.remove(at);
        match answer.send(query.to_owned()) {
            Ok(()) => Arrival::Delivered,
            Err(_) => Arrival::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_callback_reaches_the_login_waiting_for_its_state_and_nothing_else() {
        let logins = Logins::default();
        let (shown_tx, shown) = oneshot::channel();
        let redirect = logins.redirect(4000, shown_tx);
        assert_eq!(redirect.uri, "http://127.0.0.1:4000/callback");
        let url: capable::transport::http::Url =
            "https://as.example/authorize?state=s1&client_id=c"
                .parse()
                .unwrap();
        let waiting = tokio::spawn((redirect.authorize)(url));
        assert!(shown.await.unwrap().contains("state=s1"));
        assert_eq!(logins.arrived("code=x&state=s2"), Arrival::Unknown);
        assert_eq!(logins.arrived("code=x"), Arrival::Unknown);
        assert_eq!(logins.arrived("code=c&state=s1"), Arrival::Delivered);
        assert_eq!(waiting.await.unwrap().unwrap(), "code=c&state=s1");
        assert_eq!(logins.arrived("code=c&state=s1"), Arrival::Unknown, "once");
    }
}
