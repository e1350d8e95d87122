//! Dynamic client registration (RFC 7591): the request a native application makes,
//! and the registration in the server's answer.
//!
//! A native application is a public client (RFC 8252 §8.4): the request asks for
//! `none`, unless the host chose a method. A server may answer with another method
//! (and a secret), which is then used; one that refuses a public client outright
//! ([`registration_retry`]) is asked once more for the secret method it lists. The
//! request names the scopes the flow will ask for and those the server lists, and
//! the answer is kept with its grant types and scopes, so a registration is reused
//! only for what it was made for ([`choose`](super::client::choose)).

use serde::Deserialize;
use serde_json::{json, Value};

use super::client::{
    auth_method, AuthMethod, ClientSettings, Purpose, Registration, RegistrationSource,
};
use super::metadata::ServerMetadata;

/// The RFC 7591 request of a native application (SEP-837: `application_type`): a
/// public client unless the host chose a method, for the purpose's grant (the
/// authorization code with its redirect URI, or the device grant without one), with
/// refresh tokens either way, and for the scopes it asks for and those the server
/// lists (a server may refuse a client any scope it did not register: the Python
/// SDK's answers `invalid_scope` otherwise).
pub fn registration_request(
    settings: &ClientSettings,
    metadata: &ServerMetadata,
    purpose: Purpose<'_>,
) -> Value {
    let method = settings.auth_method.unwrap_or(AuthMethod::None);
    let response_types = match purpose.redirect_uri {
        Some(_) => vec!["code"],
        None => vec![],
    };
    let mut body = json!({
        "client_name": if settings.client_name.is_empty() { "capable" } else { settings.client_name.as_str() },
        "redirect_uris": purpose.redirect_uri.into_iter().collect::<Vec<_>>(),
        "grant_types": [purpose.grant(), "refresh_token"],
        "response_types": response_types,
        "token_endpoint_auth_method": method.as_str(),
        "application_type": "native",
    });
    let listed = metadata.scopes_supported.clone().unwrap_or_default();
    let mut scopes = purpose.scopes.to_vec();
    scopes.extend(listed.into_iter().filter(|s| !purpose.scopes.contains(s)));
    if let Some(scope) = super::scope::join(&scopes) {
        body["scope"] = scope.into();
    }
    body
}

/// The request to make after the server refused `request` with `status` and `body`:
/// a public client's registration refused for its metadata (RFC 7591 §3.2.2
/// `invalid_client_metadata`) by a server that does not list `none` asks again for
/// the secret method it lists (`client_secret_basic` first). `None`: the refusal
/// stands.
pub fn registration_retry(
    request: &Value,
    metadata: &ServerMetadata,
    status: u16,
    body: &[u8],
) -> Option<Value> {
    let asked = request.get("token_endpoint_auth_method")?.as_str()?;
    let refused = status == 400
        && super::token::oauth_error(body).is_some_and(|(e, _)| e == "invalid_client_metadata");
    if asked != "none" || !refused || metadata.supports_auth_method("none") {
        return None;
    }
    let method = [AuthMethod::ClientSecretBasic, AuthMethod::ClientSecretPost]
        .into_iter()
        .find(|m| metadata.supports_auth_method(m.as_str()))?;
    let mut again = request.clone();
    again["token_endpoint_auth_method"] = method.as_str().into();
    Some(again)
}

/// Why a registration answer cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("dynamic client registration at {endpoint} failed: {detail}")]
pub struct RegistrationError {
    /// The endpoint.
    pub endpoint: String,
    /// What was wrong.
    pub detail: String,
}

#[derive(Deserialize)]
struct RegistrationAnswer {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    redirect_uris: Option<Vec<String>>,
    #[serde(default)]
    grant_types: Option<Vec<String>>,
    #[serde(default)]
    scope: Option<String>,
}

/// The registration from the server's answer to the request `request` (the client
/// secret and auth method are kept: a refresh needs them).
pub fn registered(
    issuer: &str,
    endpoint: &str,
    metadata: &ServerMetadata,
    request: &Value,
    status: u16,
    body: &[u8],
) -> Result<Registration, RegistrationError> {
    let fail = |detail: String| RegistrationError {
        endpoint: endpoint.to_owned(),
        detail,
    };
    if !(200..300).contains(&status) {
        return Err(fail(format!(
            "HTTP {status}{}",
            super::token::error_summary(body)
        )));
    }
    let answer: RegistrationAnswer = serde_json::from_slice(body)
        .map_err(|e| fail(format!("the answer is not a registration: {e}")))?;
    let asked = request
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str);
    let named = answer.token_endpoint_auth_method.as_deref().or(asked);
    let method = auth_method(metadata, named, answer.client_secret.is_some());
    let strings = |name: &str| -> Vec<String> {
        request
            .get(name)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(Registration {
        issuer: issuer.to_owned(),
        client_id: answer.client_id,
        client_secret: answer.client_secret,
        auth_method: method,
        redirect_uris: answer
            .redirect_uris
            .unwrap_or_else(|| strings("redirect_uris")),
        grant_types: answer.grant_types.unwrap_or_else(|| strings("grant_types")),
        scope: answer.scope.or_else(|| {
            request
                .get("scope")
                .and_then(Value::as_str)
                .map(str::to_owned)
        }),
        source: RegistrationSource::Dynamic,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::client::{choose, Identity, AUTHORIZATION_CODE, DEVICE_CODE};
    use crate::auth::fixtures::{meta, purpose};

    #[test]
    fn the_registration_request_is_a_public_native_app_with_refresh_tokens() {
        let body = registration_request(
            &ClientSettings::default(),
            &meta(&[]),
            purpose(Some("http://127.0.0.1:1/cb")),
        );
        assert_eq!(body["application_type"], "native");
        assert_eq!(body["token_endpoint_auth_method"], "none");
        assert_eq!(
            body["grant_types"],
            json!(["authorization_code", "refresh_token"])
        );
        assert_eq!(body["response_types"], json!(["code"]));
        // The server answers with its own method and a secret: they are used.
        let r = registered(
            "https://as.test",
            "https://as.test/register",
            &meta(&["client_secret_post"]),
            &body,
            201,
            br#"{"client_id":"x","client_secret":"y","token_endpoint_auth_method":"client_secret_post"}"#,
        )
        .unwrap();
        assert_eq!(r.auth_method, AuthMethod::ClientSecretPost);
        assert_eq!(r.redirect_uris, ["http://127.0.0.1:1/cb"]);
        assert!(r.allows_grant(AUTHORIZATION_CODE) && !r.allows_grant(DEVICE_CODE));
        assert!(!format!("{r:?}").contains("\"y\""));
        assert!(registered(
            "i",
            "e",
            &meta(&[]),
            &body,
            400,
            br#"{"error":"invalid_client_metadata"}"#
        )
        .is_err());
        // The host's choice is asked for.
        let chosen = ClientSettings {
            auth_method: Some(AuthMethod::ClientSecretBasic),
            ..ClientSettings::default()
        };
        assert_eq!(
            registration_request(&chosen, &meta(&[]), purpose(Some("http://127.0.0.1:1/cb")))
                ["token_endpoint_auth_method"],
            "client_secret_basic"
        );
        // The device grant's registration names no redirect and no response type.
        let device = registration_request(&ClientSettings::default(), &meta(&[]), purpose(None));
        assert_eq!(device["grant_types"], json!([DEVICE_CODE, "refresh_token"]));
        assert_eq!(device["response_types"], json!([]));
        assert_eq!(device["redirect_uris"], json!([]));
    }

    #[test]
    fn a_server_that_refuses_a_public_client_is_asked_for_the_method_it_lists() {
        let body = registration_request(
            &ClientSettings::default(),
            &meta(&[]),
            purpose(Some("http://127.0.0.1:1/cb")),
        );
        let refused =
            br#"{"error":"invalid_client_metadata","error_description":"no public clients"}"#;
        let again =
            registration_retry(&body, &meta(&["client_secret_post"]), 400, refused).unwrap();
        assert_eq!(again["token_endpoint_auth_method"], "client_secret_post");
        assert_eq!(again["redirect_uris"], body["redirect_uris"]);
        let basic = registration_retry(
            &body,
            &meta(&["client_secret_post", "client_secret_basic"]),
            400,
            refused,
        )
        .unwrap();
        assert_eq!(basic["token_endpoint_auth_method"], "client_secret_basic");
        // Not asked again: the server lists `none` (another reason), another error,
        // a request that was not for a public client, a retry's own refusal.
        assert!(
            registration_retry(&body, &meta(&["none", "client_secret_post"]), 400, refused)
                .is_none()
        );
        assert!(registration_retry(
            &body,
            &meta(&["client_secret_post"]),
            400,
            br#"{"error":"invalid_redirect_uri"}"#
        )
        .is_none());
        assert!(registration_retry(&body, &meta(&["client_secret_post"]), 500, b"").is_none());
        assert!(registration_retry(&again, &meta(&["client_secret_post"]), 400, refused).is_none());
    }

    #[test]
    fn a_registration_names_its_scopes_and_is_reused_only_for_them() {
        let wanted = vec!["mcp:tools".to_owned()];
        let mut m = meta(&["none"]);
        m.scopes_supported = Some(vec!["mcp:tools".into(), "offline_access".into()]);
        let asks = Purpose {
            redirect_uri: Some("http://127.0.0.1:5/cb"),
            scopes: &wanted,
        };
        let Identity::Register { body, .. } = choose(
            &ClientSettings::default(),
            "https://as.test",
            &m,
            None,
            asks,
        ) else {
            panic!("a registration")
        };
        assert_eq!(body["scope"], "mcp:tools offline_access");
        let r = registered(
            "https://as.test",
            "e",
            &m,
            &body,
            201,
            br#"{"client_id":"c"}"#,
        )
        .unwrap();
        assert_eq!(r.scope.as_deref(), Some("mcp:tools offline_access"));
        assert!(matches!(
            choose(
                &ClientSettings::default(),
                "https://as.test",
                &m,
                Some(&r),
                asks
            ),
            Identity::Ready(_)
        ));
        // A step-up to a scope it was not registered for registers again.
        let more = vec!["mcp:tools".to_owned(), "mcp:admin".to_owned()];
        let step_up = Purpose {
            scopes: &more,
            ..asks
        };
        assert!(matches!(
            choose(
                &ClientSettings::default(),
                "https://as.test",
                &m,
                Some(&r),
                step_up
            ),
            Identity::Register { .. }
        ));
        // No scope anywhere: none is registered.
        let body = registration_request(&ClientSettings::default(), &meta(&[]), purpose(None));
        assert!(body.get("scope").is_none());
    }
}
