//! The HTTP calls of an authorization: discovery GETs, registration, token requests,
//! the headless authorization GETs. One client of its own, with a timeout on every
//! call and no automatic redirects, that never carries the host's headers (nor the
//! MCP server's token) anywhere; every secret header is marked sensitive.

use std::time::Duration;

use capable_core::internal::auth::metadata::secure_enough;
use capable_core::internal::auth::TokenRequest;
use reqwest::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, COOKIE, LOCATION};
use reqwest::Url;
use serde_json::Value;

use super::AuthError;

/// The most bytes read of an authorization server's answer.
const LIMIT: usize = 1 << 20;

/// An answer, read whole.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
    pub(crate) location: Option<String>,
    pub(crate) dpop_nonce: Option<String>,
    pub(crate) cookies: Vec<String>,
}

/// The authorization HTTP client.
#[derive(Clone, Debug)]
pub(crate) struct Wire {
    client: reqwest::Client,
}

fn sensitive(value: &str) -> Option<HeaderValue> {
    let mut v = HeaderValue::from_str(value).ok()?;
    v.set_sensitive(true);
    Some(v)
}

impl Wire {
    pub(crate) fn new(timeout: Duration) -> Result<Wire, AuthError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(concat!("capable/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| AuthError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Wire { client })
    }

    async fn read(what: &str, url: &Url, r: reqwest::RequestBuilder) -> Result<Answer, AuthError> {
        let response = r.send().await.map_err(|e| AuthError::Unreachable {
            what: what.to_owned(),
            url: url.to_string(),
            detail: crate::transport::chain_of(&e),
        })?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let mut answer = Answer {
            status: response.status().as_u16(),
            location: header(LOCATION.as_str()),
            dpop_nonce: header("dpop-nonce"),
            cookies: response
                .headers()
                .get_all(reqwest::header::SET_COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .filter_map(|c| c.split(';').next())
                .map(|c| c.trim().to_owned())
                .collect(),
            body: Vec::new(),
        };
        let mut response = response;
        while let Some(chunk) = response.chunk().await.map_err(|e| AuthError::Unreachable {
            what: what.to_owned(),
            url: url.to_string(),
            detail: crate::transport::chain_of(&e),
        })? {
            if answer.body.len() + chunk.len() > LIMIT {
                break;
            }
            answer.body.extend_from_slice(&chunk);
        }
        Ok(answer)
    }

    /// GET a metadata document.
    pub(crate) async fn get_json(&self, url: &Url) -> Result<Answer, AuthError> {
        let r = self
            .client
            .get(url.clone())
            .header(ACCEPT, "application/json");
        Wire::read("fetching metadata", url, r).await
    }

    /// GET a page of the authorization flow (headless mode), with its cookies.
    pub(crate) async fn get_page(
        &self,
        url: &Url,
        cookies: &[String],
    ) -> Result<Answer, AuthError> {
        let mut r = self.client.get(url.clone());
        if !cookies.is_empty() {
            if let Some(v) = sensitive(&cookies.join("; ")) {
                r = r.header(COOKIE, v);
            }
        }
        Wire::read("authorizing", url, r).await
    }

    /// POST a JSON document (dynamic registration).
    pub(crate) async fn post_json(&self, url: &str, body: &Value) -> Result<Answer, AuthError> {
        let url = endpoint("the registration endpoint", url)?;
        let r = self
            .client
            .post(url.clone())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
        Wire::read("registering the client", &url, r).await
    }

    /// POST a token request, with a DPoP proof when given.
    pub(crate) async fn post_token(
        &self,
        request: &TokenRequest,
        dpop: Option<&str>,
    ) -> Result<Answer, AuthError> {
        let url = endpoint("the token endpoint", &request.url)?;
        let form: String = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(request.form.iter())
            .finish();
        let mut r = self
            .client
            .post(url.clone())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form);
        if let Some(basic) = request.basic.as_deref().and_then(sensitive) {
            r = r.header(AUTHORIZATION, basic);
        }
        if let Some(proof) = dpop.and_then(sensitive) {
            r = r.header("dpop", proof);
        }
        Wire::read("requesting a token", &url, r).await
    }
}

/// An authorization server endpoint, refused unless HTTPS (or loopback HTTP).
pub(crate) fn endpoint(what: &str, url: &str) -> Result<Url, AuthError> {
    let parsed = Url::parse(url).map_err(|e| {
        let shown = capable_core::internal::http::redact::redact_unparsed(url);
        AuthError::Config(format!("{what} {shown:?} is not a URL: {e}"))
    })?;
    if !secure_enough(&parsed) {
        return Err(AuthError::Config(format!(
            "{what} {url} is not HTTPS; capable sends credentials only over HTTPS (or to a loopback address)"
        )));
    }
    Ok(parsed)
}
