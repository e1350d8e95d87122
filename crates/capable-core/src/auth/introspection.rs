//! Opaque access tokens, as a protected resource reads them: token introspection
//! (RFC 7662). A token that is not a JWT means nothing to the gateway; only its issuer
//! can say whose it is. The gateway asks (an authenticated form POST of the token to
//! the issuer's `introspection_endpoint`), and judges the answer as it judges a JWT's
//! claims ([`ProtectedResource::accept`]): the issuer, the audience (this gateway),
//! the expiry, the subject, the scopes. One rule for both forms.
//!
//! What RFC 7662 leaves optional is read as a careful resource must:
//!
//! - `active` must be `true`; anything else (revoked, expired, unknown, or a token
//!   of another kind) is `invalid_token`, and the issuer's reasons are not guessed at;
//! - `token_type`, when given, must be a bearer access token (a refresh token is no
//!   access token), and none bound to a key (`cnf`: DPoP, mutual TLS), whose proof
//!   this gateway does not check;
//! - `iss`, when left out, is the issuer asked; `sub`, when left out, is the client's
//!   (`client_id`: a client credentials token acts for its client, as RFC 9068 §2.2
//!   has it for JWTs);
//! - the audience is required, as for a JWT: a token the issuer minted for another
//!   resource must not open this one;
//! - `exp`, when left out, lets the answer be remembered for
//!   [`WITHOUT_EXPIRY`] seconds at most, so that a revocation is seen again soon.
//!
//! A failure of the issuer itself (no answer, a status other than 200, a body that is
//! not a JSON object) is not the caller's fault: [`Refusal::Unavailable`], answered
//! `503` and not remembered.

use serde_json::Value;

use super::client::Registration;
use super::client_auth::{authenticated, TokenRequest};
use super::resource::{invalid, Caller, ProtectedResource, Refusal};

/// How long (seconds) an active token whose answer names no expiry is taken.
pub const WITHOUT_EXPIRY: u64 = 60;

/// The introspection request for `token` at `endpoint`, authenticated as `client`
/// (the gateway's own registration at the issuer).
pub fn introspection_request(endpoint: &str, token: &str, client: &Registration) -> TokenRequest {
    let form = vec![
        ("token".to_owned(), token.to_owned()),
        ("token_type_hint".to_owned(), "access_token".to_owned()),
    ];
    authenticated(endpoint, form, Some(client))
}

/// Judges the issuer's answer (`status`, `body`) to an introspection request, at
/// `now` (seconds since the Unix epoch): who is calling, or why not.
pub fn introspected(
    resource: &ProtectedResource,
    status: u16,
    body: &[u8],
    now: u64,
) -> Result<Caller, Refusal> {
    if status != 200 {
        return Err(Refusal::Unavailable(format!(
            "the issuer's introspection endpoint answered {status}"
        )));
    }
    let Ok(Value::Object(mut claims)) = serde_json::from_slice::<Value>(body) else {
        return Err(Refusal::Unavailable(
            "the issuer's introspection endpoint answered no JSON object".into(),
        ));
    };
    if claims.get("active") != Some(&Value::Bool(true)) {
        return Err(invalid(
            "the issuer says the token is not active (revoked, expired or unknown)",
        ));
    }
    match claims.get("token_type").map(|t| t.as_str().unwrap_or("")) {
        None => {}
        Some(t) if t.eq_ignore_ascii_case("bearer") || t == "access_token" => {}
        Some(_) => {
            return Err(invalid(
                "the issuer says the token is not a bearer access token",
            ))
        }
    }
    if claims.contains_key("cnf") {
        return Err(invalid(
            "the token is bound to a key (cnf) whose proof this gateway does not check",
        ));
    }
    if !claims.contains_key("iss") {
        claims.insert("iss".into(), Value::String(resource.issuer().to_owned()));
    }
    if !claims.contains_key("sub") {
        if let Some(client) = claims.get("client_id").cloned() {
            claims.insert("sub".into(), client);
        }
    }
    let latest = now.saturating_add(WITHOUT_EXPIRY);
    match claims.get("exp").and_then(Value::as_u64) {
        Some(_) => {}
        None => {
            claims.insert("exp".into(), Value::from(latest));
        }
    }
    resource.accept(&Value::Object(claims), now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::client::{AuthMethod, RegistrationSource};
    use serde_json::json;

    const NOW: u64 = 1_800_000_000;
    const ISSUER: &str = "https://id.example";
    const GATEWAY: &str = "https://gw.example/mcp";

    fn resource() -> ProtectedResource {
        ProtectedResource::new(GATEWAY, ISSUER, vec!["mcp:tools".into()]).unwrap()
    }

    fn judge(answer: Value) -> Result<Caller, Refusal> {
        introspected(&resource(), 200, answer.to_string().as_bytes(), NOW)
    }

    fn active(extra: Value) -> Value {
        let mut answer = json!({"active": true, "iss": ISSUER, "aud": GATEWAY, "sub": "alice",
            "client_id": "alice-app", "scope": "mcp:tools openid", "exp": NOW + 600,
            "token_type": "Bearer"});
        for (k, v) in extra.as_object().unwrap() {
            answer[k] = v.clone();
        }
        answer
    }

    #[test]
    fn an_active_token_for_this_gateway_is_its_caller_until_it_expires() {
        let caller = judge(active(json!({}))).unwrap();
        assert_eq!(caller.subject, "alice");
        assert_eq!(caller.client_id.as_deref(), Some("alice-app"));
        assert_eq!(caller.expires_at, NOW + 600);
        assert!(caller.scopes.contains(&"mcp:tools".to_owned()));
    }

    #[test]
    fn what_rfc_7662_leaves_out_is_filled_carefully() {
        let mut answer = active(json!({}));
        let claims = answer.as_object_mut().unwrap();
        for name in ["iss", "sub", "exp", "token_type"] {
            claims.remove(name);
        }
        let caller = judge(answer).unwrap();
        assert_eq!(caller.issuer, ISSUER, "the issuer asked");
        assert_eq!(caller.subject, "alice-app", "a client acting for itself");
        assert_eq!(
            caller.expires_at,
            NOW + WITHOUT_EXPIRY,
            "remembered briefly"
        );
    }

    #[test]
    fn inactive_foreign_or_lesser_tokens_are_refused_with_why() {
        let refused = |answer: Value| match judge(answer.clone()) {
            Err(r @ (Refusal::Invalid(_) | Refusal::InsufficientScope(_))) => r,
            other => panic!("{answer}: {other:?}"),
        };
        assert!(refused(json!({"active": false}))
            .description()
            .contains("not active"));
        assert!(refused(json!({"active": "true"}))
            .description()
            .contains("not active"));
        assert!(refused(active(json!({"token_type": "refresh_token"})))
            .description()
            .contains("not a bearer access token"));
        assert!(refused(active(json!({"cnf": {"jkt": "x"}})))
            .description()
            .contains("bound to a key"));
        assert!(refused(active(json!({"aud": "https://other.example/mcp"})))
            .description()
            .contains("another resource"));
        let mut no_audience = active(json!({}));
        no_audience.as_object_mut().unwrap().remove("aud");
        assert!(refused(no_audience)
            .description()
            .contains("another resource"));
        assert!(refused(active(json!({"iss": "https://evil.example"})))
            .description()
            .contains("another issuer"));
        assert!(refused(active(json!({"exp": NOW - 3600})))
            .description()
            .contains("expired"));
        assert_eq!(
            refused(active(json!({"scope": "openid"}))),
            Refusal::InsufficientScope(vec!["mcp:tools".into()])
        );
    }

    #[test]
    fn an_issuer_that_fails_is_unavailable_not_a_bad_token() {
        for (status, body) in [(500, "{}"), (401, "{}"), (200, "not json"), (200, "[1]")] {
            assert!(
                matches!(
                    introspected(&resource(), status, body.as_bytes(), NOW),
                    Err(Refusal::Unavailable(_))
                ),
                "{status} {body}"
            );
        }
    }

    #[test]
    fn the_request_carries_the_token_and_the_gateways_own_authentication() {
        let client = Registration {
            issuer: ISSUER.into(),
            client_id: "gateway".into(),
            client_secret: Some("s3cret".into()),
            auth_method: AuthMethod::ClientSecretBasic,
            redirect_uris: vec![],
            grant_types: vec![],
            scope: None,
            source: RegistrationSource::Static,
        };
        let request = introspection_request("https://id.example/introspect", "tok", &client);
        assert!(request.form.contains(&("token".into(), "tok".into())));
        assert!(request.basic.is_some());
        assert!(!format!("{request:?}").contains("s3cret"));
        assert!(!format!("{request:?}").contains("\"tok\""));
    }
}
