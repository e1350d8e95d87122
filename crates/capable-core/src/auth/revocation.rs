//! Revoking a token at logout (RFC 7009): the request, authenticated as the client
//! that got the token, and the one retry a public client may need.

use super::client::Registration;
use super::token::{authenticated, TokenRequest};

/// The revocation request to send again after `request` was refused with `status`:
/// a public client's request refused as malformed (400) is sent once more with an
/// empty `client_secret`, which RFC 6749 §2.3.1 makes the same as none (the Python
/// SDK's revocation endpoint, FastMCP's too, requires the field). `None`: the refusal
/// stands.
pub fn revocation_retry(request: &TokenRequest, status: u16) -> Option<TokenRequest> {
    let named = |n: &str| request.form.iter().any(|(k, _)| k == n);
    let public = named("client_id") && request.basic.is_none() && !request.needs_assertion;
    if status != 400 || !public || named("client_secret") || named("client_assertion") {
        return None;
    }
    let mut again = request.clone();
    again.form.push(("client_secret".into(), String::new()));
    Some(again)
}

/// The RFC 7009 request revoking `token` at `endpoint`; `hint` is `refresh_token`
/// or `access_token`.
pub fn revocation_request(
    endpoint: &str,
    token: &str,
    hint: &str,
    client: &Registration,
) -> TokenRequest {
    let form = vec![
        ("token".to_owned(), token.to_owned()),
        ("token_type_hint".to_owned(), hint.to_owned()),
    ];
    authenticated(endpoint, form, Some(client))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::client::AuthMethod;
    use crate::auth::fixtures::client;

    #[test]
    fn a_revocation_names_the_token_and_a_public_client_may_retry_once() {
        let revoke = revocation_request(
            "u",
            "r-1",
            "refresh_token",
            &client(AuthMethod::ClientSecretPost),
        );
        assert_eq!(
            revoke.form,
            [
                ("token".to_owned(), "r-1".to_owned()),
                ("token_type_hint".to_owned(), "refresh_token".to_owned()),
                ("client_id".to_owned(), "id:1".to_owned()),
                ("client_secret".to_owned(), "s/2".to_owned())
            ]
        );
        assert!(revocation_retry(&revoke, 400).is_none(), "it has a secret");
        let public = revocation_request("u", "r-1", "refresh_token", &client(AuthMethod::None));
        let again = revocation_retry(&public, 400).unwrap();
        assert_eq!(
            again.form.last().unwrap(),
            &("client_secret".to_owned(), String::new())
        );
        assert!(revocation_retry(&again, 400).is_none(), "once");
        assert!(revocation_retry(&public, 401).is_none());
        let basic = revocation_request(
            "u",
            "r",
            "access_token",
            &client(AuthMethod::ClientSecretBasic),
        );
        assert!(revocation_retry(&basic, 400).is_none());
    }
}
