//! The grants a user approves, with the client identity they need: the
//! authorization code (browser, paste or headless, see `code.rs`) and the device
//! code (RFC 8628, polled as the core's [`DevicePoll`] says).
//!
//! The identity is the core's choice ([`choose`]); a dynamic registration is made
//! as a public client and, should the server refuse that, once more with the method
//! it lists ([`registration_retry`]). A kept registration the authorization server
//! refuses as a client (it restarted, or expired the client) is forgotten and made
//! again, once ([`forgotten::renew`]), and the flow starts over — in the same
//! command, without the user doing anything but authorizing.

use std::time::Instant;

use capable_core::internal::auth::authorize::{authorization_url, state_from_random};
use capable_core::internal::auth::client::{choose, Purpose};
use capable_core::internal::auth::device::{
    device_request, parse_device_authorization, DeviceOutcome, DevicePoll, DeviceStep,
};
use capable_core::internal::auth::forgotten::{self, ClientRefusal};
use capable_core::internal::auth::registration::{registered, registration_retry};
use capable_core::internal::auth::token::token_request;
use capable_core::internal::auth::{
    scope, CallbackError, Discovered, Grant, Identity, Pending, Pkce, Registration, Token,
    TokenError,
};
use reqwest::Url;

use super::client::{store_error, OAuthClient};
use super::keys::{random, SigningKey};
use super::wire::endpoint;
use super::{code, AuthError, HostRedirect, LoginMode};

/// How the authorization code is obtained: as the client's login mode says, or
/// through the host's own server.
#[derive(Clone, Copy)]
enum Code<'a> {
    Mode(LoginMode),
    Host(&'a HostRedirect),
}

/// How the authorization server refused the client, if `e` says so.
fn client_refusal(e: &AuthError) -> Option<ClientRefusal<'_>> {
    match e {
        AuthError::Token(TokenError::Refused { error, .. }) => Some(ClientRefusal::Token(error)),
        AuthError::AuthorizeRefused { status, error, .. } => Some(ClientRefusal::Authorize {
            status: *status,
            error: error.as_deref(),
        }),
        AuthError::Callback(CallbackError::Denied { error, .. }) => {
            Some(ClientRefusal::Callback(error))
        }
        _ => None,
    }
}

impl OAuthClient {
    /// The user's grant for the token: the device code when asked for and offered,
    /// else the authorization code.
    pub(super) async fn user_flow(
        &self,
        d: &Discovered,
        token_endpoint: &str,
        scopes: &[String],
        dpop: Option<&SigningKey>,
        via: Option<&HostRedirect>,
    ) -> Result<(Token, Registration), AuthError> {
        if let Some(via) = via {
            return self
                .code_flow(d, token_endpoint, scopes, dpop, Code::Host(via))
                .await;
        }
        let mut mode = self.config.mode;
        if mode == LoginMode::Never {
            return Err(AuthError::AuthorizationRequired {
                server: self.server.to_string(),
                why: super::Required::NoToken,
            });
        }
        if mode == LoginMode::Device {
            match &d.metadata.device_authorization_endpoint {
                Some(at) => return self.device_flow(d, at, token_endpoint, scopes, dpop).await,
                None => {
                    self.say(&format!(
                        "The authorization server {} offers no device authorization; log in by pasting the address the browser is sent to instead.",
                        d.issuer
                    ));
                    mode = LoginMode::Paste;
                }
            }
        }
        self.code_flow(d, token_endpoint, scopes, dpop, Code::Mode(mode))
            .await
    }

    /// The client identity for `purpose`, and whether it was registered just now.
    async fn identify(
        &self,
        d: &Discovered,
        kept: Option<&Registration>,
        purpose: Purpose<'_>,
    ) -> Result<(Registration, bool), AuthError> {
        let store = self.config.store.as_ref();
        match choose(&self.config.client, &d.issuer, &d.metadata, kept, purpose) {
            Identity::Ready(r) => Ok((r, false)),
            Identity::Unavailable(why) => Err(AuthError::NoClient(why)),
            Identity::Register { endpoint: at, body } => {
                let mut body = body;
                let mut answer = self.wire.post_json(&at, &body).await?;
                if let Some(again) =
                    registration_retry(&body, &d.metadata, answer.status, &answer.body)
                {
                    body = again;
                    answer = self.wire.post_json(&at, &body).await?;
                }
                let r = registered(
                    &d.issuer,
                    &at,
                    &d.metadata,
                    &body,
                    answer.status,
                    &answer.body,
                )?;
                self.remember_secret(r.client_secret.as_deref());
                store
                    .put_registration(&r)
                    .map_err(|e| store_error(store, e))?;
                Ok((r, true))
            }
        }
    }

    /// Runs `attempt` with the client identity, and once more with a new
    /// registration should the server have forgotten a kept one.
    async fn with_client<F>(
        &self,
        d: &Discovered,
        purpose: Purpose<'_>,
        attempt: impl Fn(Registration) -> F,
    ) -> Result<(Token, Registration), AuthError>
    where
        F: std::future::Future<Output = Result<(Token, Registration), AuthError>>,
    {
        let store = self.config.store.as_ref();
        let mut kept = store
            .registration(&d.issuer)
            .map_err(|e| store_error(store, e))?;
        loop {
            let (client, fresh) = self.identify(d, kept.as_ref(), purpose).await?;
            match attempt(client.clone()).await {
                Ok(got) => return Ok(got),
                Err(e)
                    if client_refusal(&e).is_some_and(|r| forgotten::renew(&client, fresh, r)) =>
                {
                    self.say(&format!(
                        "The authorization server no longer knows the client {} ({}); registering again.",
                        client.client_id,
                        self.scrub(&e.to_string())
                    ));
                    store
                        .remove_registration(&d.issuer)
                        .map_err(|e| store_error(store, e))?;
                    kept = None;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The authorization code flow: identity, the user's authorization, the code.
    async fn code_flow(
        &self,
        d: &Discovered,
        token_endpoint: &str,
        scopes: &[String],
        dpop: Option<&SigningKey>,
        how: Code<'_>,
    ) -> Result<(Token, Registration), AuthError> {
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
        let kept_port = store
            .registration(&d.issuer)
            .map_err(|e| store_error(store, e))?
            .and_then(|r| r.redirect_uris.first().and_then(|u| Url::parse(u).ok()))
            .and_then(|u| u.port());
        let configured = self.config.redirect_uri.as_deref();
        let redirect = match (how, configured, self.config.callback_port) {
            (Code::Host(via), _, _) => code::Redirect::host(&via.uri),
            (Code::Mode(mode), None, None) => match code::redirect(mode, None, kept_port).await {
                Ok(r) => r,
                Err(_) => code::redirect(mode, None, None).await?,
            },
            (Code::Mode(mode), configured, port) => code::redirect(mode, configured, port).await?,
        };
        let (redirect, authorize_at) = (&redirect, &authorize_at);
        let purpose = Purpose {
            redirect_uri: Some(&redirect.uri),
            scopes,
        };
        self.with_client(d, purpose, |client| async move {
            let pending = Pending {
                state: state_from_random(random()),
                pkce: Pkce::from_random(random()),
                issuer: d.issuer.clone(),
                iss_required: d.metadata.iss_required(),
                redirect_uri: redirect.uri.clone(),
                scope: scope::join(scopes),
            };
            let url = authorization_url(
                authorize_at,
                &client.client_id,
                self.resource(d),
                &pending,
                &self.config.authorization_params,
            )
            .map_err(AuthError::Config)?;
            let say = |m: &str| self.say(m);
            let within = self.config.login_timeout;
            let code = match how {
                Code::Mode(mode) => {
                    code::obtain(mode, redirect, &url, &pending, &self.wire, &say, within).await?
                }
                Code::Host(via) => {
                    code::obtain_via(via, &url, &pending, &self.wire, within).await?
                }
            };
            let grant = Grant::AuthorizationCode {
                code,
                verifier: pending.pkce.verifier.clone(),
                redirect_uri: pending.redirect_uri.clone(),
            };
            let request = token_request(
                token_endpoint,
                &grant,
                Some(&client),
                self.resource(d),
                None,
            );
            let mut client = client;
            let token = self
                .request_token(
                    d,
                    request,
                    &mut client,
                    dpop,
                    pending.scope.as_deref(),
                    None,
                )
                .await?;
            Ok((token, client))
        })
        .await
    }

    /// The device authorization grant (RFC 8628): the code shown to the user, then
    /// the token endpoint polled until the user approves on another device.
    async fn device_flow(
        &self,
        d: &Discovered,
        device_at: &str,
        token_endpoint: &str,
        scopes: &[String],
        dpop: Option<&SigningKey>,
    ) -> Result<(Token, Registration), AuthError> {
        endpoint("the device authorization endpoint", device_at)?;
        let scope = scope::join(scopes);
        let scope = scope.as_deref();
        let within = self.config.login_timeout;
        let purpose = Purpose {
            redirect_uri: None,
            scopes,
        };
        let wait = self.with_client(d, purpose, |client| async move {
            let request = device_request(device_at, &client, self.resource(d), scope);
            let request = self.with_assertion(d, request, &client)?;
            let answer = self.wire.post_token(&request, None).await?;
            let codes = parse_device_authorization(device_at, answer.status, &answer.body)?;
            self.say(&match &codes.verification_uri_complete {
                Some(complete) => format!(
                    "To authorize capable, open this URL on any device:\n\n  {complete}\n\nand check that it shows the code {}.",
                    codes.user_code
                ),
                None => format!(
                    "To authorize capable, open this URL on any device:\n\n  {}\n\nand enter the code {}",
                    codes.verification_uri, codes.user_code
                ),
            });
            let grant = codes.grant();
            let mut client = client;
            let mut request = token_request(
                token_endpoint,
                &grant,
                Some(&client),
                self.resource(d),
                None,
            );
            let mut poll = DevicePoll::new(&codes, Instant::now());
            loop {
                while let Some(step) = poll.poll() {
                    match step {
                        DeviceStep::Request => {
                            let method = client.auth_method;
                            let answer = self
                                .request_token(d, request.clone(), &mut client, dpop, scope, None)
                                .await;
                            if client.auth_method != method {
                                request = request.authenticated_as(&client);
                            }
                            match answer {
                                Ok(t) => poll.handle_answer(Ok(t), Instant::now()),
                                Err(AuthError::Token(e)) => {
                                    poll.handle_answer(Err(e), Instant::now())
                                }
                                Err(AuthError::Unreachable { detail, .. }) => {
                                    tracing::debug!("polling for the device's token: {detail}");
                                    poll.handle_unreachable(Instant::now());
                                }
                                Err(e) => return Err(e),
                            }
                        }
                        DeviceStep::Done(DeviceOutcome::Token(t)) => return Ok((*t, client)),
                        DeviceStep::Done(DeviceOutcome::Refused(e)) => return Err(e.into()),
                        DeviceStep::Done(DeviceOutcome::Expired(after)) => {
                            return Err(AuthError::TimedOut { after })
                        }
                    }
                }
                let Some(at) = poll.poll_timeout() else {
                    return Err(AuthError::Refused(
                        "the device authorization ended without a token".into(),
                    ));
                };
                tokio::time::sleep_until(at.into()).await;
                poll.handle_timeout(Instant::now());
            }
        });
        tokio::time::timeout(within, wait)
            .await
            .map_err(|_| AuthError::TimedOut { after: within })?
    }
}
