//! The flows behind [`OAuthClient`]: discovery, the grants (authorization code,
//! client credentials, workload identity, enterprise-managed), the token request with
//! its client authentication and DPoP proof, and refresh under the store's lock.

use std::sync::Arc;

use capable_core::auth::authorize::{authorization_url, state_from_random};
use capable_core::auth::client::{choose, registered};
use capable_core::auth::token::{
    assertion_claims, issued_token, parse_token_response, token_request, CLIENT_ASSERTION_JWT,
};
use capable_core::auth::{
    jwt, scope, AuthMethod, AuthNeed, Discovered, Discovery, Grant, Identity, Next, Pending, Pkce,
    Registration, RegistrationSource, Token, TokenError, TokenRequest,
};
use reqwest::Url;

use super::client::{store_error, Current, OAuthClient};
use super::keys::{now_unix, random, random_id, SigningKey};
use super::store::{CredentialKey, StoredToken};
use super::wire::endpoint;
use super::{code, AuthError, DpopMode, Flow, LoginMode};

impl OAuthClient {
    pub(super) async fn discover(&self, need: Option<&AuthNeed>) -> Result<Discovered, AuthError> {
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
    pub(super) fn use_dpop(&self, d: &Discovered, need: Option<&AuthNeed>) -> bool {
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

    pub(super) async fn authorize(
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

    pub(super) fn save(&self, stored: StoredToken) -> Result<(), AuthError> {
        let store = self.config.store.as_ref();
        store
            .put_token(&stored)
            .map_err(|e| store_error(store, e))?;
        self.set_current(stored)
    }

    /// A pre-registered client, for the grants that need one.
    pub(super) fn static_client(&self, d: &Discovered) -> Result<Registration, AuthError> {
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
    pub(super) fn client_of(&self, stored: &StoredToken) -> Registration {
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
    pub(super) async fn refresh(&self, current: &Current) -> Result<bool, AuthError> {
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
    pub(super) async fn request_token(
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
    pub(super) async fn id_jag(
        &self,
        d: &Discovered,
        scopes: &[String],
    ) -> Result<String, AuthError> {
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
    pub(super) async fn code_flow(
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
