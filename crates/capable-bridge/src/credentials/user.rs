//! `user` credentials: the server's own OAuth login (authorization code and PKCE, the
//! client library's [`OAuthClient::login_via`]), done by the gateway on each caller's
//! behalf, and the tokens it got kept per caller ([`Users`]).
//!
//! A caller without a token of the server who calls one of its tools is asked to log
//! in at a URL of the gateway's own, `/oauth/start?login=ID` ([`Users::ask`]): by a
//! URL-mode elicitation when its host takes them (the call waits for the login), else
//! in the spec's `URLElicitationRequiredError` (`-32042`, `ask.rs`). Opening it (once: a second
//! open is refused) binds the login to that browser with a cookie of its own and
//! sends it on to the server's authorization endpoint; the redirect comes back to
//! `/oauth/callback`, where the login's `state` (random, single-use, expiring after
//! [`LOGIN_TTL`]) must come with that cookie: a callback replayed — by the caller, or by
//! anyone else's browser — is refused with an error page, and nothing is stored. The
//! client library checks the `state` and `iss` again and exchanges the code with the
//! PKCE verifier; the tokens go to the caller's own store.
//!
//! The tokens are refreshed by the connection when due (the client library, with the
//! refresh token). A token the server refuses, with no refresh that helps, fails the
//! call: the caller's grant of that server is dropped and the caller asked again, once
//! per call — never a loop. The caller's stores are kept in memory, at most
//! [`MAX_CALLERS`] callers (the one seen longest ago let go first); with a file
//! ([`Users::keep_in`], `kept.rs`), each token is also written there sealed, and read
//! back at start. Without one, a restart of the gateway asks every caller again.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use capable::auth::{
    AuthError, CredentialStore, HostRedirect, LoginMode, OAuthClient, OAuthConfig, RedirectFuture,
};
use capable::config::OAuthEntry;
use capable::internal::auth::resource::Caller;
use capable::transport::http::Url;
use tokio::sync::oneshot;

use super::kept::CallerStore;

/// How long a login may take from the URL given to the caller to the callback.
pub const LOGIN_TTL: Duration = Duration::from_secs(600);

/// The most callers whose tokens are kept at once.
pub const MAX_CALLERS: usize = 10_000;

/// The most logins under way at once (each expires after [`LOGIN_TTL`]).
const MAX_LOGINS: usize = 10_000;

/// How long the gateway waits for the authorization URL (the server's metadata, its
/// authorization server's, the client's registration) before answering the caller.
const URL_WAIT: Duration = Duration::from_secs(15);

/// How long a call to the server's authorization server may take.
const AS_TIMEOUT: Duration = Duration::from_secs(10);

/// The `_meta` key of a tool listed for a caller who must log in to its server first.
pub const AUTHORIZATION_META: &str = "capable/authorization";

/// What the callback page's wait for the code's exchange resolves to.
type Outcome = Result<(), String>;

/// The logins of the `user` servers and what they got, per caller (see the module
/// documentation).
#[derive(Default)]
pub struct Users {
    /// The gateway's redirect URI (`…/oauth/callback`), once the listener knows it.
    callback: OnceLock<String>,
    state: Mutex<State>,
    /// The file the tokens are kept in across restarts, sealed (none: memory only).
    kept: OnceLock<super::kept::Kept>,
    /// Told of every login that got a token.
    logged_in: tokio::sync::Notify,
}

#[derive(Default)]
struct State {
    /// A count of calls: when each caller was last seen.
    clock: u64,
    callers: HashMap<String, Grants>,
    /// The logins under way, by their `state`.
    logins: HashMap<String, Login>,
    /// A login's `state`, by the id of its start URL.
    starts: HashMap<String, String>,
    /// Writes the tokens to the file on every change, once there is one.
    flush: Arc<super::kept::Flush>,
    /// The tools each `user` server last listed (to a caller who had logged in), to
    /// show the callers who have not.
    tools: HashMap<String, Vec<serde_json::Value>>,
}

/// One caller's part.
struct Grants {
    used: u64,
    /// Its tokens (and dynamic registrations) of every `user` server.
    store: Arc<CallerStore>,
    /// The servers (URL) it logged in to since a connection last tried.
    fresh: HashSet<String>,
    /// Its login under way per server (URL): the start URL and the `state`.
    asking: HashMap<String, (String, String)>,
}

/// A login under way.
struct Login {
    caller: String,
    server: String,
    /// The id of its start URL.
    start: String,
    expires: Instant,
    /// The server's authorization URL.
    authorize: String,
    /// The cookie value its start set (`None`: not opened yet).
    nonce: Option<String>,
    /// Hands the callback's query to the flow, with where to say how it ended.
    reply: Option<oneshot::Sender<(String, oneshot::Sender<Outcome>)>>,
}

/// Why a start or callback is refused (the page says it; nothing else happens).
#[derive(Debug)]
pub struct Refused(pub &'static str);

/// What the caller is sent to log in: the URL-mode elicitation of `-32042`.
#[derive(Debug, Clone)]
pub struct Elicitation {
    /// The elicitation's id (the login's start id).
    pub id: String,
    /// The gateway's start URL.
    pub url: String,
}

impl Users {
    /// None kept yet.
    pub fn new() -> Users {
        Users::default()
    }

    /// The listener's base URL (the public URL's origin and path less its last
    /// segment): the redirect URI is `{base}oauth/callback`.
    pub fn set_base(&self, public_url: &str) {
        let Ok(mut url) = Url::parse(public_url) else {
            return;
        };
        url.set_query(None);
        url.set_fragment(None);
        let Ok(callback) = url.join("oauth/callback") else {
            return;
        };
        let _ = self.callback.set(callback.to_string());
    }

    /// Keeps the tokens in `kept` from now on, starting with those it holds: how many
    /// were read, and how many lines did not open.
    pub fn keep_in(self: &Arc<Self>, kept: super::kept::Kept) -> Result<(usize, usize), String> {
        let loaded = kept.load()?;
        let read = loaded.tokens.len();
        {
            let mut state = self.lock();
            for (caller, token) in loaded.tokens {
                let _ = state.caller(&caller).store.put_token(&token);
            }
        }
        let _ = self.kept.set(kept);
        // From now on every change of a caller's tokens (a refresh too) is written.
        let flush = self.lock().flush.clone();
        flush.to(self);
        Ok((read, loaded.skipped))
    }

    /// Writes every caller's tokens to the file, if there is one; why not, if it failed.
    pub(super) fn save(&self) -> Option<String> {
        let kept = self.kept.get()?;
        let all = || {
            let state = self.lock();
            let mut all = Vec::new();
            for (caller, grants) in &state.callers {
                for token in grants.store.all_tokens().unwrap_or_default() {
                    all.push((caller.clone(), token));
                }
            }
            all
        };
        kept.save(all).err()
    }

    /// Whether the gateway is reached over HTTPS (its cookies are `Secure` then).
    pub fn secure(&self) -> bool {
        self.callback.get().is_some_and(|c| c.starts_with("https:"))
    }

    /// The URL of the start of a login, at the gateway.
    fn start_url(&self, id: &str) -> Option<String> {
        let callback = self.callback.get()?;
        let base = callback.strip_suffix("callback")?;
        Some(format!("{base}start?login={id}"))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The store of `caller`'s tokens.
    fn store_of(&self, caller: &Caller) -> Arc<CallerStore> {
        let mut state = self.lock();
        state.caller(&caller.key()).store.clone()
    }

    /// The OAuth client of `caller` at the server `url` (its `oauth` entry's client,
    /// or one registered dynamically), never asking anyone: without a token, a
    /// connection fails as authorization required.
    pub fn client(
        &self,
        caller: &Caller,
        url: &Url,
        entry: Option<&OAuthEntry>,
    ) -> Result<OAuthClient, AuthError> {
        let mut config = OAuthConfig::new(self.store_of(caller));
        config.mode = LoginMode::Never;
        config.timeout = AS_TIMEOUT;
        config.login_timeout = LOGIN_TTL;
        config.redirect_uri = self.callback.get().cloned();
        config.client.client_name = "capable gateway".into();
        super::from_entry(&mut config, entry);
        OAuthClient::new(url.clone(), config)
    }

    /// Whether `caller` logged in to the server `url` since a connection last tried
    /// (then the connection is tried again; a second time asks the caller again).
    pub fn take_fresh(&self, caller: &Caller, url: &Url) -> bool {
        let mut state = self.lock();
        state.caller(&caller.key()).fresh.remove(url.as_str())
    }

    /// Waits up to `within` for `caller` to log in to the server `url`: whether it did
    /// (the login stays fresh, for [`Users::take_fresh`]).
    pub async fn wait_login(&self, caller: &Caller, url: &Url, within: Duration) -> bool {
        let key = caller.key();
        let waiting = async {
            loop {
                let told = self.logged_in.notified();
                tokio::pin!(told);
                told.as_mut().enable();
                if self.lock().caller(&key).fresh.contains(url.as_str()) {
                    return;
                }
                told.await;
            }
        };
        tokio::time::timeout(within, waiting).await.is_ok()
    }

    /// Drops `caller`'s tokens of the server `url` (the server refused them).
    pub fn forget(&self, caller: &Caller, url: &Url) -> Option<String> {
        let store = self.store_of(caller);
        if let Ok(tokens) = store.tokens_for(url.as_str()) {
            for token in tokens {
                let _ = store.remove_token(&token.key);
            }
        }
        self.save()
    }

    /// Keeps the tools `server` listed, for callers who have not logged in yet.
    pub fn saw_tools(&self, server: &str, tools: Vec<serde_json::Value>) {
        self.lock().tools.insert(server.to_owned(), tools);
    }

    /// The tools `server` last listed, if it ever did.
    pub fn tools_of(&self, server: &str) -> Vec<serde_json::Value> {
        self.lock().tools.get(server).cloned().unwrap_or_default()
    }

    /// A login of `caller` at the server `url`: the one under way, or a new one (the
    /// flow started, waiting for its callback); `Err` says why none can be had.
    pub async fn ask(
        self: &Arc<Self>,
        caller: &Caller,
        url: &Url,
        entry: Option<&OAuthEntry>,
    ) -> Result<Elicitation, String> {
        let key = caller.key();
        let server = url.to_string();
        {
            let mut state = self.lock();
            state.sweep();
            let under_way = state.caller(&key).asking.get(&server).cloned();
            if let Some((start, _)) = under_way {
                if let Some(url) = self.start_url(&start) {
                    return Ok(Elicitation { id: start, url });
                }
            }
        }
        let Some(redirect_uri) = self.callback.get().cloned() else {
            return Err("this gateway has no public URL to receive the login's redirect".into());
        };
        let client = self.client(caller, url, entry).map_err(|e| e.to_string())?;
        let (url_tx, url_rx) = oneshot::channel::<Result<Elicitation, String>>();
        let url_tx = Arc::new(Mutex::new(Some(url_tx)));
        let outcome: Arc<Mutex<Option<oneshot::Sender<Outcome>>>> = Arc::default();
        let authorize = {
            let (users, url_tx, outcome) = (self.clone(), url_tx.clone(), outcome.clone());
            let (key, server) = (key.clone(), server.clone());
            move |authorize: reqwest::Url| -> RedirectFuture {
                let (reply_tx, reply_rx) = oneshot::channel();
                let registered = users.register(&key, &server, authorize.as_str(), reply_tx);
                let sent = url_tx.lock().unwrap_or_else(|e| e.into_inner()).take();
                if let Some(sent) = sent {
                    let _ = sent.send(registered);
                }
                let outcome = outcome.clone();
                Box::pin(async move {
                    let (query, done) = reply_rx.await.map_err(|_| {
                        AuthError::Config("the login expired before its redirect came".into())
                    })?;
                    *outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(done);
                    Ok(query)
                })
            }
        };
        let redirect = HostRedirect {
            uri: redirect_uri,
            authorize: Arc::new(authorize),
        };
        let users = self.clone();
        tokio::spawn(async move {
            let result = client.login_via(&redirect).await;
            let mut said = result.as_ref().map(|_| ()).map_err(|e| e.to_string());
            users.finished(&key, &server, said.is_ok());
            if said.is_ok() {
                if let Some(why) = users.save() {
                    said = Err(format!("the token could not be kept: {why}"));
                }
            }
            // Failed before any URL was made: the caller is told why.
            let unsent = url_tx.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let (Some(unsent), Err(why)) = (unsent, &said) {
                let _ = unsent.send(Err(why.clone()));
            }
            let done = outcome.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(done) = done {
                let _ = done.send(said);
            }
        });
        match tokio::time::timeout(URL_WAIT, url_rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err("the login ended before it began".into()),
            Err(_) => Err(format!(
                "the server's authorization server did not answer within {URL_WAIT:?}"
            )),
        }
    }

    /// A login's authorization URL made: kept under its `state` for the callback.
    fn register(
        &self,
        caller: &str,
        server: &str,
        authorize: &str,
        reply: oneshot::Sender<(String, oneshot::Sender<Outcome>)>,
    ) -> Result<Elicitation, String> {
        let state_param = Url::parse(authorize)
            .ok()
            .and_then(|u| {
                u.query_pairs()
                    .find(|(k, _)| k == "state")
                    .map(|(_, v)| v.into_owned())
            })
            .ok_or("the authorization URL has no state")?;
        let id = crate::random_hex::<16>();
        let url = self.start_url(&id).ok_or("no public URL")?;
        let mut state = self.lock();
        state.sweep();
        if state.logins.len() >= MAX_LOGINS {
            return Err("too many logins are under way: try again later".into());
        }
        state.logins.insert(
            state_param.clone(),
            Login {
                caller: caller.to_owned(),
                server: server.to_owned(),
                start: id.clone(),
                expires: Instant::now() + LOGIN_TTL,
                authorize: authorize.to_owned(),
                nonce: None,
                reply: Some(reply),
            },
        );
        state.starts.insert(id.clone(), state_param.clone());
        state
            .caller(caller)
            .asking
            .insert(server.to_owned(), (id.clone(), state_param));
        Ok(Elicitation { id, url })
    }

    /// A login ended (`granted`: with a token stored).
    fn finished(&self, caller: &str, server: &str, granted: bool) {
        let mut state = self.lock();
        let grants = state.caller(caller);
        let asked = grants.asking.remove(server);
        if granted {
            grants.fresh.insert(server.to_owned());
        }
        if let Some((start, state_param)) = asked {
            state.starts.remove(&start);
            state.logins.remove(&state_param);
        }
        drop(state);
        if granted {
            self.logged_in.notify_waiters();
        }
    }

    /// The start URL opened (`id`): the server's authorization URL, and the cookie
    /// (name, value) that binds the login to this browser. Once only.
    pub fn start(&self, id: &str) -> Result<(String, String, String), Refused> {
        let mut state = self.lock();
        state.sweep();
        let state_param = state.starts.get(id).cloned().ok_or(Refused(
            "This login link is unknown or has expired. Call the tool again for a new one.",
        ))?;
        let login = state.logins.get_mut(&state_param).ok_or(Refused(
            "This login has expired. Call the tool again for a new one.",
        ))?;
        if login.nonce.is_some() {
            return Err(Refused(
                "This login link was already opened. Call the tool again for a new one.",
            ));
        }
        let nonce = crate::random_hex::<16>();
        login.nonce = Some(nonce.clone());
        Ok((login.authorize.clone(), cookie_name(&login.start), nonce))
    }

    /// The redirect came back with `query`, `cookies` the browser's `Cookie` header:
    /// when its `state` is a login under way, opened in this browser, the query goes to
    /// the flow (once), and the answer resolves to how the login ended.
    pub fn callback(
        &self,
        query: &str,
        cookies: Option<&str>,
    ) -> Result<oneshot::Receiver<Outcome>, Refused> {
        let state_param = url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
            .ok_or(Refused("This is no answer of a login (it has no state)."))?;
        let mut state = self.lock();
        state.sweep();
        let unknown = Refused("This login is unknown, was already used, or has expired.");
        let login = state.logins.get(&state_param).ok_or(unknown)?;
        let sent = cookie(cookies, &cookie_name(&login.start));
        let ours = match (&login.nonce, sent) {
            (Some(nonce), Some(sent)) => {
                capable::internal::http::loopback::same_secret(sent, nonce)
            }
            _ => false,
        };
        if !ours {
            return Err(Refused(
                "This login was not started in this browser: nothing was stored.",
            ));
        }
        let Some(mut login) = state.logins.remove(&state_param) else {
            return Err(Refused(
                "This login is unknown, was already used, or has expired.",
            ));
        };
        state.starts.remove(&login.start);
        let (done_tx, done_rx) = oneshot::channel();
        let sent = login
            .reply
            .take()
            .is_some_and(|reply| reply.send((query.to_owned(), done_tx)).is_ok());
        match sent {
            true => Ok(done_rx),
            false => Err(Refused(
                "This login has ended. Call the tool again for a new one.",
            )),
        }
    }

    /// How many callers are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().callers.len()
    }
}

impl State {
    /// `key`'s part (made, if need be, letting go of the caller seen longest ago when
    /// full).
    fn caller(&mut self, key: &str) -> &mut Grants {
        self.clock += 1;
        let now = self.clock;
        if !self.callers.contains_key(key) && self.callers.len() >= MAX_CALLERS {
            let oldest = self
                .callers
                .iter()
                .min_by_key(|(_, g)| g.used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                self.callers.remove(&oldest);
            }
        }
        let grants = self
            .callers
            .entry(key.to_owned())
            .or_insert_with(|| Grants {
                used: now,
                store: Arc::new(CallerStore::new(self.flush.clone())),
                fresh: HashSet::new(),
                asking: HashMap::new(),
            });
        grants.used = now;
        grants
    }

    /// Lets the expired logins go.
    fn sweep(&mut self) {
        let now = Instant::now();
        let expired: Vec<String> = self
            .logins
            .iter()
            .filter(|(_, l)| l.expires <= now)
            .map(|(s, _)| s.clone())
            .collect();
        for state_param in expired {
            if let Some(login) = self.logins.remove(&state_param) {
                self.starts.remove(&login.start);
                if let Some(grants) = self.callers.get_mut(&login.caller) {
                    grants.asking.remove(&login.server);
                }
            }
        }
    }
}

/// The cookie that binds the login of start id `start` to a browser.
fn cookie_name(start: &str) -> String {
    format!("capable_login_{start}")
}

/// The value of cookie `name` in a `Cookie` header.
fn cookie<'a>(header: Option<&'a str>, name: &str) -> Option<&'a str> {
    header?.split(';').find_map(|pair| {
        let (n, v) = pair.trim().split_once('=')?;
        (n == name).then_some(v)
    })
}

#[cfg(test)]
#[path = "user_tests.rs"]
mod tests;
