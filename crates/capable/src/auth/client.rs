//! [`OAuthClient`]: the flows carried out, one at a time per server.
//!
//! A connection asks three things of it: the headers of a request to the server's
//! origin ([`OAuthClient::headers`]: the token, and a fresh DPoP proof when the token is
//! bound), to refresh before a request when the token is about to expire
//! ([`OAuthClient::prepare`]), and to act on a refusal ([`OAuthClient::resolve`], with
//! the core's [`remedy`]). Flows are serialised by one lock, so requests that meet a
//! 401 together cause one authorization; the others notice the newer token and replay.
//! Refreshing holds the store's lock across reload → refresh → save.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use capable_core::auth::authorize::{authorization_url, state_from_random};
use capable_core::auth::client::{choose, registered};
use capable_core::auth::need::remedy;
use capable_core::auth::token::{
    assertion_claims, issued_token, parse_token_response, token_request, CLIENT_ASSERTION_JWT,
};
use capable_core::auth::{
    jwt, scope, AuthMethod, AuthNeed, Discovered, Discovery, Grant, Identity, Next, Pending, Pkce,
    Registration, RegistrationSource, Remedy, Token, TokenError, TokenRequest,
};
use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION};
use reqwest::Url;

use super::keys::{now_unix, random, random_id, SigningKey};
use super::store::{CredentialKey, StoredToken};
use super::wire::{endpoint, Wire};
use super::{code, AuthError, DpopMode, Flow, LoginMode, OAuthConfig};

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

struct Current {
    stored: StoredToken,
    key: Option<Arc<SigningKey>>,
    generation: u64,
}

/// OAuth for one MCP server. See the module documentation.
pub struct OAuthClient {
    server: Url,
    config: OAuthConfig,
    wire: Wire,
    flow: tokio::sync::Mutex<bool>,
    current: Mutex<Option<Arc<Current>>>,
    generation: AtomicU64,
    step_ups: AtomicU32,
    rs_nonce: Mutex<Option<String>>,
    /// Whether a refusal is being acted on (the handshake's clock stops meanwhile:
    /// the user may be logging in).
    busy: tokio::sync::watch::Sender<bool>,
    /// Every secret this client held (tokens, client secrets): scrubbed from any text
    /// a server sends back.
    secrets: Mutex<Vec<String>>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("server", &self.server.as_str())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn store_error(store: &dyn super::CredentialStore, e: std::io::Error) -> AuthError {
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
        })
    }

    /// The MCP server.
    pub fn server(&self) -> &Url {
        &self.server
    }

    fn say(&self, message: &str) {
        match &self.config.prompt {
            Some(p) => p(message),
            None => tracing::info!("{message}"),
        }
    }

    fn current(&self) -> Option<Arc<Current>> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn remember_secret(&self, secret: Option<&str>) {
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

    fn scrub_error(&self, e: AuthError) -> AuthError {
        e.scrubbed(&|t| self.scrub(t))
    }

    fn set_current(&self, stored: StoredToken) -> Result<(), AuthError> {
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
    fn ensure_loaded(&self, loaded: &mut bool) -> Result<(), AuthError> {
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
            if let Err(e) = self.refresh(&current).await {
                tracing::warn!("refreshing the token failed: {}", self.scrub_error(e));
            }
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
        match remedy(
            need,
            token,
            sent_current,
            self.step_ups.load(Ordering::Relaxed),
        ) {
            Remedy::Retry => Ok(()),
            Remedy::UseNonce(nonce) => {
                *self.rs_nonce.lock().unwrap_or_else(|e| e.into_inner()) = Some(nonce);
                Ok(())
            }
            Remedy::Refresh => {
                let current = current.expect("a refresh needs a token");
                let discovered = self.discover(Some(need)).await?;
                if discovered.issuer == current.stored.key.issuer && self.refresh(&current).await? {
                    return Ok(());
                }
                self.authorize(Some(need), Some(discovered), None).await
            }
            Remedy::Authorize { .. } => self.authorize(Some(need), None, None).await,
            Remedy::StepUp { scopes } => {
                self.step_ups.fetch_add(1, Ordering::Relaxed);
                self.authorize(Some(need), None, Some(scopes)).await
            }
            Remedy::GiveUp(why) => Err(AuthError::Refused(why)),
        }
    }

    /// Authorizes now, whatever is stored (`capable auth login`): the server is asked
    /// once without a token for its challenge, then discovery and the flow.
    pub async fn login(&self) -> Result<TokenInfo, AuthError> {
        let mut loaded = self.flow.lock().await;
        *loaded = true;
        let need = self.probe().await;
        self.authorize(need.as_ref(), None, None)
            .await
            .map_err(|e| self.scrub_error(e))?;
        let current = self
            .current()
            .ok_or_else(|| AuthError::Refused("no token was obtained".into()))?;
        Ok(self.info(&current.stored))
    }

    /// The stored token, refreshed if it is about to expire (`capable auth token`).
    pub async fn access_token(&self) -> Result<String, AuthError> {
        self.prepare().await;
        match self.current() {
            Some(c) if !c.stored.token.expired(now_unix()) => {
                Ok(c.stored.token.access_token.clone())
            }
            _ => Err(AuthError::AuthorizationRequired {
                server: self.server.to_string(),
            }),
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

    /// Removes every token stored for the server (revoking refresh tokens where the
    /// authorization server offers revocation is left to its expiry); how many.
    pub async fn logout(&self) -> Result<usize, AuthError> {
        let _flow = self.flow.lock().await;
        let store = self.config.store.clone();
        let _lock = self.store_lock().await?;
        let tokens = store
            .tokens_for(self.server.as_str())
            .map_err(|e| store_error(store.as_ref(), e))?;
        for t in &tokens {
            store
                .remove_token(&t.key)
                .map_err(|e| store_error(store.as_ref(), e))?;
        }
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Ok(tokens.len())
    }

    fn info(&self, t: &StoredToken) -> TokenInfo {
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

    async fn store_lock(&self) -> Result<super::store::StoreLock, AuthError> {
        let store = self.config.store.clone();
        tokio::task::spawn_blocking(move || {
            store.lock().map_err(|e| store_error(store.as_ref(), e))
        })
        .await
        .map_err(|e| AuthError::Config(format!("the store lock task failed: {e}")))?
    }

    /// The server's challenge to a request without a token (an `initialize`).
    async fn probe(&self) -> Option<AuthNeed> {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "capable", "version": env!("CARGO_PKG_VERSION")}}});
        let answer = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(self.config.timeout)
            .build()
            .ok()?
            .post(self.server.clone())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .ok()?;
        let challenges: Vec<String> = answer
            .headers()
            .get_all(reqwest::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect();
        capable_core::auth::need::classify(
            answer.status().as_u16(),
            &challenges,
            None,
            self.server.as_str(),
        )
    }

    async fn discover(&self, need: Option<&AuthNeed>) -> Result<Discovered, AuthError> {
        let mut discovery = match &self.config.issuer {
            Some(issuer) => Discovery::for_issuer(self.server.clone(), issuer),
            None => Discovery::new(
                self.server.clone(),
                need.and_then(AuthNeed::resource_metadata),
            ),
        };
        loop {
            match discovery.step() {
                Next::Fetch(url) => match self.wire.get_json(&url).await {
                    Ok(answer) => discovery.on_response(answer.status, &answer.body),
                    Err(e) => {
                        tracing::debug!("{e}");
                        discovery.on_response(0, b"");
                    }
                },
                Next::Done(found) => {
                    for note in &found.notes {
                        tracing::warn!("{note}");
                    }
                    return Ok(*found);
                }
                Next::Failed(e) => return Err(e.into()),
            }
        }
    }

    /// Whether the token should be DPoP-bound.
    fn use_dpop(&self, d: &Discovered, need: Option<&AuthNeed>) -> bool {
        let server = d.metadata.supports_dpop_es256();
        let asked = need.is_some_and(AuthNeed::wants_dpop)
            || d.resource_metadata.as_ref().is_some_and(|r| {
                r.dpop_bound_access_tokens_required == Some(true)
                    || r.dpop_signing_alg_values_supported.is_some()
            });
        match self.config.dpop {
            DpopMode::Never => false,
            DpopMode::Always => server,
            DpopMode::Auto => server && asked,
        }
    }

    async fn authorize(
        &self,
        need: Option<&AuthNeed>,
        discovered: Option<Discovered>,
        step_up: Option<Vec<String>>,
    ) -> Result<(), AuthError> {
        let d = match discovered {
            Some(d) => d,
            None => self.discover(need).await?,
        };
        let challenged = need.map(AuthNeed::scopes).unwrap_or_default();
        let mut scopes = match step_up {
            Some(s) => s,
            None => scope::initial(
                &self.config.scopes,
                &challenged,
                d.resource_metadata.as_ref(),
                &d.metadata,
            ),
        };
        let key = match self.use_dpop(&d, need) {
            true => Some(Arc::new(SigningKey::generate()?)),
            false => None,
        };
        let token_endpoint = d.metadata.token_endpoint.clone().ok_or_else(|| {
            AuthError::Config(format!(
                "the authorization server {} names no token endpoint",
                d.issuer
            ))
        })?;
        let (token, client) = match &self.config.flow {
            Flow::AuthorizationCode => {
                scope::with_offline_access(&mut scopes, &d.metadata);
                self.code_flow(&d, &token_endpoint, &scopes, key.as_deref())
                    .await?
            }
            flow => {
                let client = self.static_client(&d)?;
                let grant = match flow {
                    Flow::ClientCredentials => Grant::ClientCredentials,
                    Flow::WorkloadIdentity { assertion } => Grant::JwtBearer {
                        assertion: assertion.clone(),
                    },
                    Flow::Enterprise { .. } => Grant::JwtBearer {
                        assertion: self.id_jag(&d, &scopes).await?,
                    },
                    Flow::AuthorizationCode => unreachable!(),
                };
                let scope = scope::join(&scopes);
                let request = token_request(
                    &token_endpoint,
                    &grant,
                    Some(&client),
                    Some(&d.resource),
                    scope.as_deref(),
                );
                let token = self
                    .request_token(&d, request, &client, key.as_deref(), scope.as_deref(), None)
                    .await?;
                (token, client)
            }
        };
        let stored = StoredToken {
            key: CredentialKey {
                resource: d.resource.clone(),
                issuer: d.issuer.clone(),
            },
            server: self.server.to_string(),
            client_id: client.client_id.clone(),
            token,
            dpop_key: key.map(|k| k.to_stored()),
            token_endpoint: Some(token_endpoint),
        };
        self.save(stored)
    }

    fn save(&self, stored: StoredToken) -> Result<(), AuthError> {
        let store = self.config.store.as_ref();
        store
            .put_token(&stored)
            .map_err(|e| store_error(store, e))?;
        self.set_current(stored)
    }

    /// A pre-registered client, for the grants that need one.
    fn static_client(&self, d: &Discovered) -> Result<Registration, AuthError> {
        let settings = &self.config.client;
        let Some(client_id) = &settings.client_id else {
            return Err(AuthError::NoClient(format!(
                "the {:?} flow needs a pre-registered client id",
                self.config.flow
            )));
        };
        let auth_method = if self.config.private_key_pem.is_some() {
            AuthMethod::PrivateKeyJwt
        } else {
            settings.auth_method.unwrap_or_else(|| {
                capable_core::auth::client::auth_method(
                    &d.metadata,
                    None,
                    settings.client_secret.is_some(),
                )
            })
        };
        Ok(Registration {
            issuer: d.issuer.clone(),
            client_id: client_id.clone(),
            client_secret: settings.client_secret.clone(),
            auth_method,
            redirect_uris: Vec::new(),
            source: RegistrationSource::Static,
        })
    }

    /// The client that got `stored`, for refreshing it.
    fn client_of(&self, stored: &StoredToken) -> Registration {
        let settings = &self.config.client;
        if settings.client_id.as_deref() == Some(stored.client_id.as_str()) {
            let metadata = Default::default();
            let method = settings.auth_method.unwrap_or_else(|| {
                capable_core::auth::client::auth_method(
                    &metadata,
                    None,
                    settings.client_secret.is_some(),
                )
            });
            return Registration {
                issuer: stored.key.issuer.clone(),
                client_id: stored.client_id.clone(),
                client_secret: settings.client_secret.clone(),
                auth_method: method,
                redirect_uris: Vec::new(),
                source: RegistrationSource::Static,
            };
        }
        let store = self.config.store.as_ref();
        match store.registration(&stored.key.issuer) {
            Ok(Some(r)) if r.client_id == stored.client_id => r,
            _ => Registration {
                issuer: stored.key.issuer.clone(),
                client_id: stored.client_id.clone(),
                client_secret: None,
                auth_method: AuthMethod::None,
                redirect_uris: Vec::new(),
                source: RegistrationSource::MetadataDocument,
            },
        }
    }

    /// Refreshes `current` under the store's lock: a newer token another process
    /// stored is taken as is. `false` when the refresh token is spent.
    async fn refresh(&self, current: &Current) -> Result<bool, AuthError> {
        let _lock = self.store_lock().await?;
        let store = self.config.store.as_ref();
        let latest = store
            .token(&current.stored.key)
            .map_err(|e| store_error(store, e))?
            .unwrap_or_else(|| current.stored.clone());
        let now = now_unix();
        if latest.token.access_token != current.stored.token.access_token
            && !latest.token.expired(now)
        {
            self.set_current(latest)?;
            return Ok(true);
        }
        let (Some(refresh_token), Some(endpoint)) = (
            latest.token.refresh_token.clone(),
            latest.token_endpoint.clone(),
        ) else {
            return Ok(false);
        };
        let client = self.client_of(&latest);
        self.remember_secret(client.client_secret.as_deref());
        let key = match &latest.dpop_key {
            Some(k) => Some(SigningKey::from_stored(k)?),
            None => None,
        };
        let grant = Grant::RefreshToken { refresh_token };
        let request = token_request(
            &endpoint,
            &grant,
            Some(&client),
            Some(&latest.key.resource),
            None,
        );
        let d = Discovered {
            resource: latest.key.resource.clone(),
            resource_metadata: None,
            issuer: latest.key.issuer.clone(),
            metadata: Default::default(),
            source: capable_core::auth::MetadataSource::Configured,
            notes: Vec::new(),
        };
        match self
            .request_token(
                &d,
                request,
                &client,
                key.as_ref(),
                None,
                Some(&latest.token),
            )
            .await
        {
            Ok(token) => {
                let stored = StoredToken { token, ..latest };
                self.save(stored)?;
                Ok(true)
            }
            Err(AuthError::Token(e))
                if matches!(e.code(), Some("invalid_grant" | "invalid_token")) =>
            {
                // Spent or revoked: forget it, so the next run authorizes at once.
                let mut spent = latest;
                spent.token.refresh_token = None;
                store.put_token(&spent).map_err(|e| store_error(store, e))?;
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// POSTs a token request (signing the client assertion, adding a DPoP proof and
    /// retrying once with the server's nonce).
    async fn request_token(
        &self,
        d: &Discovered,
        request: TokenRequest,
        client: &Registration,
        dpop: Option<&SigningKey>,
        scope: Option<&str>,
        previous: Option<&Token>,
    ) -> Result<Token, AuthError> {
        let url = endpoint("the token endpoint", &request.url)?;
        let mut nonce: Option<String> = None;
        for attempt in 0..2 {
            let mut request = request.clone();
            if request.needs_assertion {
                let pem = self.config.private_key_pem.as_deref().ok_or_else(|| {
                    AuthError::Config("private_key_jwt needs a private key".into())
                })?;
                let key = SigningKey::from_pem(pem)?;
                let claims =
                    assertion_claims(&client.client_id, &d.issuer, now_unix(), &random_id());
                let assertion = key.sign(&jwt::es256_header("JWT"), &claims)?;
                request
                    .form
                    .push(("client_assertion_type".into(), CLIENT_ASSERTION_JWT.into()));
                request.form.push(("client_assertion".into(), assertion));
            }
            let proof = match dpop {
                Some(key) => {
                    let (h, c) = jwt::dpop_proof(
                        key.public(),
                        "POST",
                        &url,
                        now_unix(),
                        &random_id(),
                        None,
                        nonce.as_deref(),
                    );
                    Some(key.sign(&h, &c)?)
                }
                None => None,
            };
            let answer = self.wire.post_token(&request, proof.as_deref()).await?;
            match parse_token_response(
                &request.url,
                answer.status,
                &answer.body,
                now_unix(),
                scope,
                previous,
            ) {
                Err(TokenError::Refused { ref error, .. })
                    if error == "use_dpop_nonce"
                        && attempt == 0
                        && dpop.is_some()
                        && answer.dpop_nonce.is_some() =>
                {
                    nonce = answer.dpop_nonce;
                }
                other => return other.map_err(AuthError::from),
            }
        }
        Err(AuthError::Refused(
            "the token endpoint kept asking for a new DPoP nonce".into(),
        ))
    }

    /// Enterprise-managed authorization's first step: the ID token for an ID-JAG.
    async fn id_jag(&self, d: &Discovered, scopes: &[String]) -> Result<String, AuthError> {
        let Flow::Enterprise {
            idp_token_endpoint,
            idp_client_id,
            idp_client_secret,
            id_token,
        } = &self.config.flow
        else {
            return Err(AuthError::Config("not an enterprise flow".into()));
        };
        let idp = Registration {
            issuer: idp_token_endpoint.clone(),
            client_id: idp_client_id.clone(),
            client_secret: idp_client_secret.clone(),
            auth_method: if idp_client_secret.is_some() {
                AuthMethod::ClientSecretPost
            } else {
                AuthMethod::None
            },
            redirect_uris: Vec::new(),
            source: RegistrationSource::Static,
        };
        let grant = Grant::IdJagExchange {
            id_token: id_token.clone(),
            audience: d.issuer.clone(),
        };
        let scope = scope::join(scopes);
        let request = token_request(
            idp_token_endpoint,
            &grant,
            Some(&idp),
            Some(&d.resource),
            scope.as_deref(),
        );
        endpoint("the identity provider's token endpoint", idp_token_endpoint)?;
        let answer = self.wire.post_token(&request, None).await?;
        Ok(issued_token(
            idp_token_endpoint,
            answer.status,
            &answer.body,
        )?)
    }

    /// The authorization code flow: identity, the user's authorization, the code.
    async fn code_flow(
        &self,
        d: &Discovered,
        token_endpoint: &str,
        scopes: &[String],
        dpop: Option<&SigningKey>,
    ) -> Result<(Token, Registration), AuthError> {
        let mode = self.config.mode;
        if mode == LoginMode::Never {
            return Err(AuthError::AuthorizationRequired {
                server: self.server.to_string(),
            });
        }
        if !d.metadata.supports_s256() {
            return Err(AuthError::NoPkce {
                issuer: d.issuer.clone(),
            });
        }
        let authorize_at = d.metadata.authorization_endpoint.clone().ok_or_else(|| {
            AuthError::Config(format!(
                "the authorization server {} names no authorization endpoint",
                d.issuer
            ))
        })?;
        endpoint("the authorization endpoint", &authorize_at)?;
        let store = self.config.store.as_ref();
        let kept = store
            .registration(&d.issuer)
            .map_err(|e| store_error(store, e))?;
        let kept_port = kept
            .as_ref()
            .and_then(|r| r.redirect_uris.first())
            .and_then(|u| Url::parse(u).ok())
            .and_then(|u| u.port());
        let redirect = match self.config.callback_port {
            Some(port) => code::redirect(mode, Some(port)).await?,
            None => match code::redirect(mode, kept_port).await {
                Ok(r) => r,
                Err(_) => code::redirect(mode, None).await?,
            },
        };
        let client = match choose(
            &self.config.client,
            &d.issuer,
            &d.metadata,
            kept.as_ref(),
            Some(&redirect.uri),
        ) {
            Identity::Ready(r) => r,
            Identity::Unavailable(why) => return Err(AuthError::NoClient(why)),
            Identity::Register { endpoint: at, body } => {
                let answer = self.wire.post_json(&at, &body).await?;
                let r = registered(
                    &d.issuer,
                    &at,
                    &d.metadata,
                    &body,
                    answer.status,
                    &answer.body,
                )?;
                store
                    .put_registration(&r)
                    .map_err(|e| store_error(store, e))?;
                r
            }
        };
        let pending = Pending {
            state: state_from_random(random()),
            pkce: Pkce::from_random(random()),
            issuer: d.issuer.clone(),
            iss_required: d.metadata.iss_required(),
            redirect_uri: redirect.uri.clone(),
            scope: scope::join(scopes),
        };
        let url = authorization_url(&authorize_at, &client.client_id, &d.resource, &pending)
            .map_err(AuthError::Config)?;
        let say = |m: &str| self.say(m);
        let code = code::obtain(
            mode,
            redirect,
            &url,
            &pending,
            &self.wire,
            &say,
            self.config.login_timeout,
        )
        .await?;
        let grant = Grant::AuthorizationCode {
            code,
            verifier: pending.pkce.verifier.clone(),
            redirect_uri: pending.redirect_uri.clone(),
        };
        let request = token_request(
            token_endpoint,
            &grant,
            Some(&client),
            Some(&d.resource),
            None,
        );
        let token = self
            .request_token(d, request, &client, dpop, pending.scope.as_deref(), None)
            .await?;
        Ok((token, client))
    }
}
