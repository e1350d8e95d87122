//! The flows behind [`OAuthClient`]: discovery, the grants that need no user (client
//! credentials, workload identity, enterprise-managed; the user's are in
//! `login.rs`), the token request with its client authentication and DPoP proof,
//! refresh under the store's lock, and revocation at logout.

use std::sync::Arc;

use capable_core::internal::auth::client::other_secret_method;
use capable_core::internal::auth::forgotten::{self, ClientRefusal};
use capable_core::internal::auth::revocation::{revocation_request, revocation_retry};
use capable_core::internal::auth::token::{
    assertion_claims, issued_token, parse_token_response, token_request, CLIENT_ASSERTION_JWT,
};
use capable_core::internal::auth::{
    jwt, scope, AuthMethod, AuthNeed, Discovered, Discovery, Grant, Next, Registration,
    RegistrationSource, Token, TokenError, TokenRequest,
};

use super::client::{store_error, Current, OAuthClient, TokenEvent};
use super::keys::{now_unix, random_id, SigningKey};
use super::store::{CredentialKey, StoredToken};
use super::wire::endpoint;
use super::{AuthError, DpopMode, Flow};

/// What a refresh came to.
pub(super) enum Refreshed {
    /// A newer token is at hand (refreshed, or another process's).
    Yes,
    /// No refresh is possible any more (why, in words): a login is needed.
    Spent(String),
}

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

    /// The `resource` to send (RFC 8707), unless the host leaves it out.
    pub(super) fn resource<'a>(&self, d: &'a Discovered) -> Option<&'a str> {
        self.config.send_resource.then_some(d.resource.as_str())
    }

    /// Authorizes for `need` (with what discovery found, when it ran already), with
    /// the scopes of a step-up when it is one; the user's grant through `via` when the
    /// host receives the redirect itself.
    pub(super) async fn authorize(
        &self,
        need: Option<&AuthNeed>,
        discovered: Option<Discovered>,
        step_up: Option<Vec<String>>,
        via: Option<&super::HostRedirect>,
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
                self.user_flow(&d, &token_endpoint, &scopes, key.as_deref(), via)
                    .await?
            }
            flow => {
                let mut client = self.static_client(&d)?;
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
                    self.resource(&d),
                    scope.as_deref(),
                );
                let token = self
                    .request_token(
                        &d,
                        request,
                        &mut client,
                        key.as_deref(),
                        scope.as_deref(),
                        None,
                    )
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
            client_auth: (client.source != RegistrationSource::Dynamic)
                .then_some(client.auth_method),
            revocation_endpoint: d.metadata.revocation_endpoint.clone(),
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
                capable_core::internal::auth::client::auth_method(
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
            grant_types: Vec::new(),
            scope: None,
            source: RegistrationSource::Static,
        })
    }

    /// The client that got `stored`, for refreshing and revoking it: the
    /// pre-registered one authenticating as it did then, the kept registration, or
    /// a public client of that id.
    pub(super) fn client_of(&self, stored: &StoredToken) -> Registration {
        let settings = &self.config.client;
        let client = |secret: Option<String>, auth_method, source| Registration {
            issuer: stored.key.issuer.clone(),
            client_id: stored.client_id.clone(),
            client_secret: secret,
            auth_method,
            redirect_uris: Vec::new(),
            grant_types: Vec::new(),
            scope: None,
            source,
        };
        if settings.client_id.as_deref() == Some(stored.client_id.as_str()) {
            let has_secret = settings.client_secret.is_some();
            let method = stored
                .client_auth
                .or(settings.auth_method)
                .unwrap_or_else(|| {
                    capable_core::internal::auth::client::auth_method(
                        &Default::default(),
                        None,
                        has_secret,
                    )
                });
            return client(
                settings.client_secret.clone(),
                method,
                RegistrationSource::Static,
            );
        }
        let store = self.config.store.as_ref();
        match store.registration(&stored.key.issuer) {
            Ok(Some(r)) if r.client_id == stored.client_id => r,
            _ => client(
                None,
                stored.client_auth.unwrap_or(AuthMethod::None),
                RegistrationSource::MetadataDocument,
            ),
        }
    }

    /// Refreshes `current` under the store's lock: a newer token another process
    /// stored is taken as is. A refresh token the server refuses (spent, revoked) is
    /// dropped; so is a registration it no longer knows, which the next
    /// authorization makes again.
    pub(super) async fn refresh(&self, current: &Current) -> Result<Refreshed, AuthError> {
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
            return Ok(Refreshed::Yes);
        }
        let (Some(refresh_token), Some(endpoint)) = (
            latest.token.refresh_token.clone(),
            latest.token_endpoint.clone(),
        ) else {
            return Ok(Refreshed::Spent("there is no refresh token".into()));
        };
        let mut client = self.client_of(&latest);
        self.remember_secret(client.client_secret.as_deref());
        let key = match &latest.dpop_key {
            Some(k) => Some(SigningKey::from_stored(k)?),
            None => None,
        };
        let grant = Grant::RefreshToken { refresh_token };
        let resource = self
            .config
            .send_resource
            .then_some(latest.key.resource.as_str());
        let request = token_request(&endpoint, &grant, Some(&client), resource, None);
        let d = Discovered {
            resource: latest.key.resource.clone(),
            resource_metadata: None,
            issuer: latest.key.issuer.clone(),
            metadata: Default::default(),
            source: capable_core::internal::auth::MetadataSource::Configured,
            notes: Vec::new(),
        };
        let refused = match self
            .request_token(
                &d,
                request,
                &mut client,
                key.as_ref(),
                None,
                Some(&latest.token),
            )
            .await
        {
            Ok(token) => {
                let stored = StoredToken {
                    token,
                    client_auth: latest.client_auth.map(|_| client.auth_method),
                    ..latest
                };
                self.told(TokenEvent::Refreshed);
                self.save(stored)?;
                return Ok(Refreshed::Yes);
            }
            Err(AuthError::Token(e @ TokenError::Refused { .. })) => {
                self.told(TokenEvent::RefreshFailed);
                e
            }
            Err(e) => {
                self.told(TokenEvent::RefreshFailed);
                return Err(e);
            }
        };
        let code = refused.code().unwrap_or("");
        let forgotten = forgotten::renew(&client, false, ClientRefusal::Token(code));
        if !forgotten && !matches!(code, "invalid_grant" | "invalid_token") {
            return Err(AuthError::Token(refused));
        }
        // Spent, revoked, or its client forgotten: forget it, so the next run
        // authorizes at once.
        let mut spent = latest;
        spent.token.refresh_token = None;
        store.put_token(&spent).map_err(|e| store_error(store, e))?;
        if forgotten {
            store
                .remove_registration(&spent.key.issuer)
                .map_err(|e| store_error(store, e))?;
            return Ok(Refreshed::Spent(format!(
                "the authorization server no longer knows the client {}: {refused}",
                client.client_id
            )));
        }
        Ok(Refreshed::Spent(format!(
            "the refresh token was refused: {refused}"
        )))
    }

    /// Revokes a stored token's refresh token and access token where its
    /// authorization server offers revocation; a failure is only logged.
    pub(super) async fn revoke(&self, stored: &StoredToken) {
        let Some(endpoint) = &stored.revocation_endpoint else {
            return;
        };
        let client = self.client_of(stored);
        self.remember_secret(client.client_secret.as_deref());
        let token = &stored.token;
        let tokens = [
            (token.refresh_token.as_deref(), "refresh_token"),
            (Some(token.access_token.as_str()), "access_token"),
        ];
        for (value, hint) in tokens {
            let Some(value) = value else { continue };
            let request = revocation_request(endpoint, value, hint, &client);
            let d = Discovered {
                resource: stored.key.resource.clone(),
                resource_metadata: None,
                issuer: stored.key.issuer.clone(),
                metadata: Default::default(),
                source: capable_core::internal::auth::MetadataSource::Configured,
                notes: Vec::new(),
            };
            let outcome = match self.with_assertion(&d, request, &client) {
                Ok(request) => match self.wire.post_token(&request, None).await {
                    Ok(answer) => match revocation_retry(&request, answer.status) {
                        Some(again) => self.wire.post_token(&again, None).await.map(|a| a.status),
                        None => Ok(answer.status),
                    },
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
            match outcome {
                Ok(200..=299) => {}
                Ok(status) => tracing::warn!(
                    "revoking the {hint} at {endpoint}: HTTP {status}; it is forgotten anyway"
                ),
                Err(e) => tracing::warn!(
                    "revoking the {hint}: {}; it is forgotten anyway",
                    self.scrub_error(e)
                ),
            }
        }
    }

    /// `request` with its `private_key_jwt` client assertion signed, when it needs one.
    pub(super) fn with_assertion(
        &self,
        d: &Discovered,
        mut request: TokenRequest,
        client: &Registration,
    ) -> Result<TokenRequest, AuthError> {
        if request.needs_assertion {
            let pem =
                self.config.private_key_pem.as_deref().ok_or_else(|| {
                    AuthError::Config("private_key_jwt needs a private key".into())
                })?;
            let key = SigningKey::from_pem(pem)?;
            let claims = assertion_claims(&client.client_id, &d.issuer, now_unix(), &random_id());
            let assertion = key.sign(&jwt::es256_header("JWT"), &claims)?;
            request
                .form
                .push(("client_assertion_type".into(), CLIENT_ASSERTION_JWT.into()));
            request.form.push(("client_assertion".into(), assertion));
            request.needs_assertion = false;
        }
        Ok(request)
    }

    /// POSTs a token request ([`OAuthClient::post_for_token`]); a pre-registered
    /// client refused as a client tries the other secret method the server lists,
    /// once (the core's [`other_secret_method`]), and `client` becomes the one that
    /// was not refused as a client, to be kept for refreshes.
    pub(super) async fn request_token(
        &self,
        d: &Discovered,
        request: TokenRequest,
        client: &mut Registration,
        dpop: Option<&SigningKey>,
        scope: Option<&str>,
        previous: Option<&Token>,
    ) -> Result<Token, AuthError> {
        let first = self
            .post_for_token(d, request.clone(), client, dpop, scope, previous)
            .await;
        let chosen = self.config.client.auth_method.is_some();
        let other = match &first {
            Err(AuthError::Token(TokenError::Refused { error, .. })) => {
                other_secret_method(client, &d.metadata, chosen, error)
            }
            _ => None,
        };
        let Some(method) = other else {
            return first;
        };
        tracing::debug!(
            "the token endpoint refused {} as a client; trying {}",
            client.auth_method.as_str(),
            method.as_str()
        );
        let again = Registration {
            auth_method: method,
            ..client.clone()
        };
        let request = request.authenticated_as(&again);
        let second = self
            .post_for_token(d, request, &again, dpop, scope, previous)
            .await;
        let refused_as_client = matches!(
            &second,
            Err(AuthError::Token(e)) if e.code() == Some("invalid_client")
        );
        if !refused_as_client {
            *client = again;
        }
        second
    }

    /// POSTs a token request (signing the client assertion, adding a DPoP proof and
    /// retrying once with the server's nonce).
    async fn post_for_token(
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
            let request = self.with_assertion(d, request.clone(), client)?;
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
            access_token,
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
            grant_types: Vec::new(),
            scope: None,
            source: RegistrationSource::Static,
        };
        let grant = Grant::IdJagExchange {
            id_token: id_token.clone(),
            audience: d.issuer.clone(),
            access_token: *access_token,
        };
        let scope = scope::join(scopes);
        let request = token_request(
            idp_token_endpoint,
            &grant,
            Some(&idp),
            self.resource(d),
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
}
