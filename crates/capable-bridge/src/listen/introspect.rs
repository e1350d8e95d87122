//! Opaque tokens asked of their issuer (RFC 7662; the decisions are the core's,
//! [`capable::internal::auth::introspection`]): the token POSTed to the issuer's
//! `introspection_endpoint`, authenticated as the gateway's own client, the answer
//! judged as a JWT's claims are. A token found good is remembered with the JWTs'
//! (by its hash, until it expires: one question per token, never per request); one
//! found bad is remembered for [`REFUSED_FOR`], so that the same bad token sent
//! again costs the issuer nothing. At most [`IN_FLIGHT`] questions are open at once,
//! each bounded by the fetch timeout and [`MAX_DOCUMENT`](super::identity::MAX_DOCUMENT)
//! bytes; callers past them wait their turn.

use std::sync::Mutex;

use capable::internal::auth::client::{AuthMethod, Registration, RegistrationSource};
use capable::internal::auth::introspection::{introspected, introspection_request};
use capable::internal::auth::resource::{Caller, ProtectedResource, Refusal};
use capable::internal::auth::verified::{Refused, TokenKey};
use tokio::sync::Semaphore;

use crate::IntrospectionClient;

/// How long (seconds) a token the issuer refused is refused again without asking.
pub const REFUSED_FOR: u64 = 60;

/// The most introspection requests open at once.
pub const IN_FLIGHT: usize = 8;

/// The most refused tokens remembered.
const MAX_REFUSED: usize = 10_000;

/// The gateway's questions to its issuer about opaque tokens.
pub struct Introspector {
    endpoint: String,
    client: Registration,
    refused: Mutex<Refused>,
    open: Semaphore,
}

impl Introspector {
    /// Asks at `endpoint` as `client` of `issuer`.
    pub fn new(endpoint: String, issuer: &str, client: &IntrospectionClient) -> Introspector {
        Introspector {
            endpoint,
            client: Registration {
                issuer: issuer.to_owned(),
                client_id: client.client_id.clone(),
                client_secret: Some(client.client_secret.clone()),
                auth_method: AuthMethod::ClientSecretBasic,
                redirect_uris: Vec::new(),
                grant_types: Vec::new(),
                scope: None,
                source: RegistrationSource::Static,
            },
            refused: Mutex::new(Refused::new(MAX_REFUSED, REFUSED_FOR)),
            open: Semaphore::new(IN_FLIGHT),
        }
    }

    /// Who `token` (whose hash is `key`) is, as the issuer says; or why not.
    pub async fn ask(
        &self,
        http: &reqwest::Client,
        resource: &ProtectedResource,
        token: &str,
        key: TokenKey,
        now: impl Fn() -> u64,
    ) -> Result<Caller, Refusal> {
        if let Some(refusal) = self.refused().get(&key, now()) {
            return Err(refusal);
        }
        let _turn = self
            .open
            .acquire()
            .await
            .map_err(|_| Refusal::Unavailable("the gateway is stopping".into()))?;
        let request = introspection_request(&self.endpoint, token, &self.client);
        let (status, body) = post(http, &request.url, &request.form, request.basic.as_deref())
            .await
            .map_err(Refusal::Unavailable)?;
        let now = now();
        let judged = introspected(resource, status, &body, now);
        if let Err(refusal @ (Refusal::Invalid(_) | Refusal::InsufficientScope(_))) = &judged {
            self.refused().insert(key, refusal.clone(), now);
        }
        judged
    }

    fn refused(&self) -> std::sync::MutexGuard<'_, Refused> {
        self.refused.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// POSTs `form` to `url` (with `basic` as its `Authorization`): the status and at most
/// `MAX_DOCUMENT` bytes of body. A failure names the endpoint, never the form (which
/// holds the token).
async fn post(
    http: &reqwest::Client,
    url: &str,
    form: &[(String, String)],
    basic: Option<&str>,
) -> Result<(u16, Vec<u8>), String> {
    let body: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let mut request = http
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(body);
    if let Some(basic) = basic {
        request = request.header("authorization", basic);
    }
    let response = request.send().await;
    let failed = |e: reqwest::Error| {
        format!(
            "the issuer's introspection endpoint {url}: {}",
            super::identity::describe(&e)
        )
    };
    super::identity::read_bounded(response.map_err(failed)?, url).await
}
