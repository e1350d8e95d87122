//! [`OAuthClient`]: one server's authorization state, one flow at a time.
//!
//! A connection asks three things of it: the headers of a request to the server's
//! origin ([`OAuthClient::headers`]: the token, and a fresh DPoP proof when the token is
//! bound), to refresh before a request when the token is about to expire
//! ([`OAuthClient::prepare`]), and to act on a refusal ([`OAuthClient::resolve`], with
//! the core's [`remedy`]). Flows are serialised by one lock, so requests that meet a
//! 401 together cause one authorization; the others notice the newer token and replay.
//! Refreshing holds the store's lock across reload → refresh → save.
//!
//! Where the flow needs the user and the host said never to ask
//! ([`LoginMode::Never`](super::LoginMode::Never)), a refusal ends at once with
//! [`AuthError::AuthorizationRequired`], saying why no token could be used: none is
//! stored, or the stored one was refused and could not be refreshed, or the server
//! wants more scope.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use capable_core::internal::auth::need::remedy;
use capable_core::internal::auth::{jwt, scope, AuthNeed, Remedy};
use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION};
use reqwest::Url;

use super::flows::Refreshed;
use super::keys::{now_unix, random_id, SigningKey};
use super::store::StoredToken;
use super::wire::Wire;
use super::{AuthError, Flow, LoginMode, OAuthConfig, Required};

/// What `capable auth login` came to.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Login {
    /// A token was obtained and stored.
    Authorized(TokenInfo),
    /// The server answered without asking for authorization: nothing to log in to.
    NotRequired,
}

/// A stored token as `status` shows it (no secret).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TokenInfo {
    /// The MCP server.
    pub server: String,
    /// The resource it is for.
    pub resource: String,
    /// The authorization server that issued it.
    pub issuer: String,
    /// The client it was issued to.
    pub client_id: String,
    /// `Bearer` or `DPoP`.
    pub token_type: String,
    /// The scope granted.
    pub scope: Option<String>,
    /// When it expires (seconds since the Unix epoch).
    pub expires_at: Option<u64>,
    /// Whether it can be refreshed.
    pub refreshable: bool,
    /// Where it is kept.
    pub store: String,
}

pub(super) struct Current {
    pub(super) stored: StoredToken,
    pub(super) key: Option<Arc<SigningKey>>,
    pub(super) generation: u64,
}

/// OAuth for one MCP server. See the module documentation.
pub struct OAuthClient {
    pub(super) server: Url,
    pub(super) config: OAuthConfig,
    pub(super) wire: Wire,
    pub(super) flow: tokio::sync::Mutex<bool>,
    pub(super) current: Mutex<Option<Arc<Current>>>,
    pub(super) generation: AtomicU64,
    pub(super) step_ups: AtomicU32,
    pub(super) rs_nonce: Mutex<Option<String>>,
    /// Whether a refusal is being acted on (the handshake's clock stops meanwhile:
    /// the user may be logging in).
    pub(super) busy: tokio::sync::watch::Sender<bool>,
    /// Every secret this client held (tokens, client secrets): scrubbed from any text
    /// a server sends back.
    pub(super) secrets: Mutex<Vec<String>>,
    /// Who hears of this client's refreshes ([`OAuthClient::observe`]).
    pub(super) observer: std::sync::OnceLock<TokenObserver>,
}

/// What an [`OAuthClient`] tells an observer of its tokens' lives
/// ([`OAuthClient::observe`]): never a token, only what happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenEvent {
    /// A token was refreshed at the authorization server (a refresh token spent for a
    /// new access token).
    Refreshed,
    /// A refresh was tried and failed: refused (a spent or revoked refresh token, a
    /// client the server forgot) or unreachable.
    RefreshFailed,
}

type TokenObserver = Box<dyn Fn(TokenEvent) + Send + Sync>;

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("server", &self.server.as_str())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

pub(super) fn store_error(store: &dyn super::CredentialStore, e: std::io::Error) -> AuthError {
    if let Some(refused) = crate::file::Refused::within(&e) {
        return AuthError::StoreRefused(refused.clone());
    }
    AuthError::Store {
        store: store.describe(),
        detail: e.to_string(),
    }
}

fn sensitive(value: &str) -> Option<HeaderValue> {
    let mut v = HeaderValue::from_str(value).ok()?;
    v.set_sensitive(true);
    Some(v)
}

impl OAuthClient {
    /// OAuth for the MCP server at `server`.
    pub fn new(server: Url, config: OAuthConfig) -> Result<OAuthClient, AuthError> {
        let wire = Wire::new(config.timeout)?;
        Ok(OAuthClient {
            server,
            config,
            wire,
            flow: tokio::sync::Mutex::new(false),
            current: Mutex::new(None),
            generation: AtomicU64::new(1),
            step_ups: AtomicU32::new(0),
            rs_nonce: Mutex::new(None),
            busy: tokio::sync::watch::channel(false).0,
            secrets: Mutex::new(Vec::new()),
            observer: std::sync::OnceLock::new(),
        })
    }

    /// Tells `observer` of each refresh of this client's tokens, as it ends (a
    /// gateway's metrics count them). One observer per client: `false`, and nothing
    /// changed, when it has one already.
    pub fn observe(&self, observer: impl Fn(TokenEvent) + Send + Sync + 'static) -> bool {
        self.observer.set(Box::new(observer)).is_ok()
    }

    /// Tells the observer, if any, of `event`.
    pub(super) fn told(&self, event: TokenEvent) {
        if let Some(observer) = self.observer.get() {
            observer(event);
        }
    }

    /// The MCP server.
    pub fn server(&self) -> &Url {
        &self.server
    }

    pub(super) fn say(&self, message: &str) {
        match &self.config.prompt {
            Some(p) => p(message),
            None => tracing::info!("{message}"),
        }
    }

    pub(super) fn current(&self) -> Option<Arc<Current>> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(super) fn remember_secret(&self, secret: Option<&str>) {
        if let Some(s) = secret.filter(|s| s.len() >= 4) {
            let mut all = self.secrets.lock().unwrap_or_else(|e| e.into_inner());
            if !all.iter().any(|x| x == s) {
                all.push(s.to_owned());
            }
        }
    }

    /// `text` with every secret this client held replaced by `[redacted]`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        self.remember_secret(self.config.client.client_secret.as_deref());
        let all = self.secrets.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = text.to_owned();
        for s in all.iter() {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "[redacted]");
            }
        }
        out
    }

    pub(super) fn scrub_error(&self, e: AuthError) -> AuthError {
        e.scrubbed(&|t| self.scrub(t))
    }

    pub(super) fn set_current(&self, stored: StoredToken) -> Result<(), AuthError> {
        self.remember_secret(Some(&stored.token.access_token));
        self.remember_secret(stored.token.refresh_token.as_deref());
        let key = match &stored.dpop_key {
            Some(k) => Some(Arc::new(SigningKey::from_stored(k)?)),
            None => None,
        };
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(Current {
            stored,
            key,
            generation,
        }));
        Ok(())
    }

    /// Loads the newest stored token for the server, once.
    pub(super) fn ensure_loaded(&self, loaded: &mut bool) -> Result<(), AuthError> {
        if std::mem::replace(loaded, true) {
            return Ok(());
        }
        let store = self.config.store.as_ref();
        let tokens = store
            .tokens_for(self.server.as_str())
            .map_err(|e| store_error(store, e))?;
        if let Some(newest) = tokens.into_iter().max_by_key(|t| t.token.received_at) {
            self.set_current(newest)?;
        }
        Ok(())
    }

    /// The headers of a request to the server's origin, and the generation of the
    /// token they carry (0: none).
    pub(crate) fn headers(&self, method: &str, url: &Url) -> (Vec<(HeaderName, HeaderValue)>, u64) {
        let Some(current) = self.current() else {
            return (Vec::new(), 0);
        };
        let token = &current.stored.token;
        let mut headers = Vec::new();
        let scheme = if token.is_dpop() { "DPoP" } else { "Bearer" };
        if let Some(v) = sensitive(&format!("{scheme} {}", token.access_token)) {
            headers.push((AUTHORIZATION, v));
        }
        if let (true, Some(key)) = (token.is_dpop(), &current.key) {
            let nonce = self
                .rs_nonce
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let (h, c) = jwt::dpop_proof(
                key.public(),
                method,
                url,
                now_unix(),
                &random_id(),
                Some(&token.access_token),
                nonce.as_deref(),
            );
            if let Some(proof) = key.sign(&h, &c).ok().as_deref().and_then(sensitive) {
                headers.push((HeaderName::from_static("dpop"), proof));
            }
        }
        (headers, current.generation)
    }

    /// Before a request: the stored token loaded, and refreshed when it is about to
    /// expire (a failed refresh is left to the 401 that follows).
    pub(crate) async fn prepare(&self) {
        let due = self
            .current()
            .map(|c| c.stored.token.needs_refresh(now_unix()));
        if due == Some(false) {
            return;
        }
        let mut loaded = self.flow.lock().await;
        if let Err(e) = self.ensure_loaded(&mut loaded) {
            tracing::warn!("{e}");
            return;
        }
        if let Some(current) = self
            .current()
            .filter(|c| c.stored.token.needs_refresh(now_unix()))
        {
            match self.refresh(&current).await {
                Ok(Refreshed::Yes) => {}
                Ok(Refreshed::Spent(why)) => {
                    tracing::warn!("refreshing the token failed: {}", self.scrub(&why))
                }
                Err(e) => tracing::warn!("refreshing the token failed: {}", self.scrub_error(e)),
            }
        }
    }

    /// Whether getting a token needs the user, who may not be asked here.
    fn may_not_ask(&self) -> bool {
        self.config.flow == Flow::AuthorizationCode && self.config.mode == LoginMode::Never
    }

    fn required(&self, why: Required) -> AuthError {
        AuthError::AuthorizationRequired {
            server: self.server.to_string(),
            why,
        }
    }

    /// Whether a refusal is being acted on, as it changes.
    pub(crate) fn busy(&self) -> tokio::sync::watch::Receiver<bool> {
        self.busy.subscribe()
    }

    /// Acts on a refusal met by a request that carried token generation `sent`.
    pub(crate) async fn resolve(&self, need: &AuthNeed, sent: u64) -> Result<(), AuthError> {
        let mut loaded = self.flow.lock().await;
        self.busy.send_replace(true);
        let outcome = self.resolve_locked(need, sent, &mut loaded).await;
        self.busy.send_replace(false);
        outcome.map_err(|e| self.scrub_error(e))
    }

    async fn resolve_locked(
        &self,
        need: &AuthNeed,
        sent: u64,
        loaded: &mut bool,
    ) -> Result<(), AuthError> {
        self.ensure_loaded(loaded)?;
        let current = self.current();
        let sent_current = current.as_ref().is_none_or(|c| c.generation == sent);
        let token = current.as_ref().map(|c| &c.stored.token);
        let step_ups = self.step_ups.load(Ordering::Relaxed);
        match remedy(need, token, sent_current, step_ups, &self.config.scopes) {
            Remedy::Retry => Ok(()),
            Remedy::UseNonce(nonce) => {
                *self.rs_nonce.lock().unwrap_or_else(|e| e.into_inner()) = Some(nonce);
                Ok(())
            }
            Remedy::Refresh => {
                let current = current.expect("a refresh needs a token");
                let discovered = self.discover(Some(need)).await?;
                let why = if discovered.issuer == current.stored.key.issuer {
                    match self.refresh(&current).await? {
                        Refreshed::Yes => return Ok(()),
                        Refreshed::Spent(why) => Some(why),
                    }
                } else {
                    Some(format!(
                        "the server now trusts the authorization server {}",
                        discovered.issuer
                    ))
                };
                if self.may_not_ask() {
                    return Err(self.required(Required::Refused(why)));
                }
                self.authorize(Some(need), Some(discovered), None, None)
                    .await
            }
            Remedy::Authorize { .. } if self.may_not_ask() => Err(self.required(match token {
                Some(_) => Required::Refused(Some("there is no refresh token".into())),
                None => Required::NoToken,
            })),
            Remedy::Authorize { .. } => self.authorize(Some(need), None, None, None).await,
            Remedy::StepUp { scopes } if self.may_not_ask() => {
                Err(self.required(Required::MoreScope(scopes)))
            }
            Remedy::StepUp { scopes } => {
                self.step_ups.fetch_add(1, Ordering::Relaxed);
                self.authorize(Some(need), None, Some(scopes), None).await
            }
            Remedy::StepUpToListed(why) => {
                let d = self.discover(Some(need)).await?;
                let listed = scope::listed_step_up(
                    &why.held,
                    &self.config.scopes,
                    d.resource_metadata.as_ref(),
                    &d.metadata,
                );
                match listed {
                    None => Err(AuthError::InsufficientScope(why)),
                    Some(scopes) if self.may_not_ask() => {
                        Err(self.required(Required::MoreScope(scopes)))
                    }
                    Some(scopes) => {
                        self.step_ups.fetch_add(1, Ordering::Relaxed);
                        self.authorize(Some(need), Some(d), Some(scopes), None)
                            .await
                    }
                }
            }
            Remedy::ScopeExhausted(why) => Err(AuthError::InsufficientScope(why)),
            Remedy::GiveUp(why) => Err(AuthError::Refused(why)),
        }
    }

    /// Authorizes now, whatever is stored (`capable auth login`): the server is asked
    /// once without a token for its challenge, then discovery and the flow. A server
    /// that answers without asking for authorization has nothing to log in to
    /// ([`Login::NotRequired`]), unless the host named the authorization server
    /// itself.
    pub async fn login(&self) -> Result<Login, AuthError> {
        self.login_with(None).await
    }

    /// [`OAuthClient::login`], the person authorizing through the host's own server:
    /// the authorization code flow with `redirect`'s URI, whatever
    /// [`LoginMode`](super::LoginMode) the client was made with (a host that never
    /// prompts on its own — [`LoginMode::Never`](super::LoginMode::Never) — logs in
    /// this way when the person asks). The token goes to the client's store.
    pub async fn login_via(&self, redirect: &super::HostRedirect) -> Result<Login, AuthError> {
        self.login_with(Some(redirect)).await
    }

    async fn login_with(&self, via: Option<&super::HostRedirect>) -> Result<Login, AuthError> {
        let mut loaded = self.flow.lock().await;
        *loaded = true;
        let need = match self.probe().await.map_err(|e| self.scrub_error(e))? {
            Probe::Needs(need) => Some(need),
            _ if self.config.issuer.is_some() => None,
            Probe::Open => return Ok(Login::NotRequired),
            Probe::Failed(status) => {
                return Err(AuthError::Refused(format!(
                    "{} answered HTTP {status} to a request without a token, without asking for authorization: there is nothing to log in to there (is the URL right?)",
                    self.server
                )))
            }
        };
        self.authorize(need.as_ref(), None, None, via)
            .await
            .map_err(|e| self.scrub_error(e))?;
        let current = self
            .current()
            .ok_or_else(|| AuthError::Refused("no token was obtained".into()))?;
        Ok(Login::Authorized(self.info(&current.stored)))
    }

    /// The stored token, refreshed if it is about to expire (`capable auth token`).
    pub async fn access_token(&self) -> Result<String, AuthError> {
        self.prepare().await;
        match self.current() {
            Some(c) if !c.stored.token.expired(now_unix()) => {
                Ok(c.stored.token.access_token.clone())
            }
            Some(_) => Err(self.required(Required::Refused(Some("it has expired".into())))),
            None => Err(self.required(Required::NotStored)),
        }
    }

    /// The tokens stored for the server.
    pub fn status(&self) -> Result<Vec<TokenInfo>, AuthError> {
        let store = self.config.store.as_ref();
        let tokens = store
            .tokens_for(self.server.as_str())
            .map_err(|e| store_error(store, e))?;
        Ok(tokens.iter().map(|t| self.info(t)).collect())
    }

    /// Logs out of the server: every token stored for it is revoked where the
    /// authorization server offers revocation (RFC 7009; a failure is only logged:
    /// the token is forgotten either way) and removed, and so is the dynamic client
    /// registration no other stored token uses. How many tokens were removed.
    pub async fn logout(&self) -> Result<usize, AuthError> {
        let _flow = self.flow.lock().await;
        let store = self.config.store.clone();
        let _lock = self.store_lock().await?;
        let fail = |e| store_error(store.as_ref(), e);
        let tokens = store.tokens_for(self.server.as_str()).map_err(fail)?;
        for t in &tokens {
            self.revoke(t).await;
            store.remove_token(&t.key).map_err(fail)?;
        }
        let remaining = store.all_tokens().map_err(fail)?;
        for t in &tokens {
            let kept = store.registration(&t.key.issuer).map_err(fail)?;
            let in_use = remaining
                .iter()
                .any(|r| r.key.issuer == t.key.issuer && r.client_id == t.client_id);
            if kept.is_some_and(|k| k.client_id == t.client_id) && !in_use {
                store.remove_registration(&t.key.issuer).map_err(fail)?;
            }
        }
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Ok(tokens.len())
    }

    pub(super) fn info(&self, t: &StoredToken) -> TokenInfo {
        TokenInfo {
            server: t.server.clone(),
            resource: t.key.resource.clone(),
            issuer: t.key.issuer.clone(),
            client_id: t.client_id.clone(),
            token_type: t.token.token_type.clone(),
            scope: t.token.scope.clone(),
            expires_at: t.token.expires_at,
            refreshable: t.token.refresh_token.is_some(),
            store: self.config.store.describe(),
        }
    }

    pub(super) async fn store_lock(&self) -> Result<super::store::StoreLock, AuthError> {
        let store = self.config.store.clone();
        tokio::task::spawn_blocking(move || {
            store.lock().map_err(|e| store_error(store.as_ref(), e))
        })
        .await
        .map_err(|e| AuthError::Config(format!("the store lock task failed: {e}")))?
    }

    /// Asks the server once without a token (an `initialize`) whether it wants
    /// authorization; a session it opened for that is closed again. A server that
    /// wants it answers 401 (or 403 for want of scope) before reading the request.
    pub(super) async fn probe(&self) -> Result<Probe, AuthError> {
        // The core's own first handshake request: a legacy `initialize`, which every
        // server of either era reads before it would answer anything else.
        let mut out = capable_core::Outbox::new();
        let config = capable_core::ClientConfig {
            era_hint: Some(capable_core::Era::Legacy),
            ..capable_core::ClientConfig::default()
        };
        capable_core::Negotiating::start(config, std::time::Instant::now(), &mut out);
        let body = out.messages().next().map(|(_, line)| line.to_vec());
        let unreachable = |e: reqwest::Error| AuthError::Unreachable {
            what: "asking the server whether it wants authorization".into(),
            url: self.server.to_string(),
            detail: crate::transport::chain_of(&e),
        };
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(self.config.timeout)
            .build()
            .map_err(unreachable)?;
        let answer = client
            .post(self.server.clone())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.unwrap_or_default())
            .send()
            .await
            .map_err(unreachable)?;
        let status = answer.status().as_u16();
        let challenges: Vec<String> = answer
            .headers()
            .get_all(reqwest::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect();
        if let Some(need) = capable_core::internal::auth::need::classify(
            status,
            &challenges,
            None,
            self.server.as_str(),
        ) {
            return Ok(Probe::Needs(need));
        }
        if matches!(status, 404 | 405 | 500..) {
            return Ok(Probe::Failed(status));
        }
        if let Some(session) = answer.headers().get("mcp-session-id").cloned() {
            let _ = client
                .delete(self.server.clone())
                .header("mcp-session-id", session)
                .send()
                .await;
        }
        Ok(Probe::Open)
    }
}

/// What a request without a token met.
pub(super) enum Probe {
    /// A refusal authorization answers.
    Needs(AuthNeed),
    /// An answer, or a refusal of the request itself: the server asks for no
    /// authorization.
    Open,
    /// No MCP server there (404, 405) or a failing one (5xx).
    Failed(u16),
}
