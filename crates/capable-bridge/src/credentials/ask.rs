//! A session's servers of `user` credentials ([`UserServers`]), and what a caller
//! without a token of one is answered: the spec's `URLElicitationRequiredError`
//! (`-32042`) naming the gateway's login URL (`user.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use capable::config::{ConfigFile, Credentials, OAuthEntry, ServerTarget};
use capable::internal::auth::resource::Caller;
use capable::transport::http::Url;

use super::user::{Elicitation, Users};

/// The `user` servers of `config` a session of `caller` reaches, by name: their URL
/// and `oauth` entry.
pub struct UserServers {
    /// Where logins and tokens are kept.
    pub users: Arc<Users>,
    /// Whose session it is.
    pub caller: Arc<Caller>,
    /// The servers, by name.
    pub servers: HashMap<String, (Url, Option<OAuthEntry>)>,
}

impl UserServers {
    /// Those of `config`, for the caller of the task at hand (`None`: no `user`
    /// server, or nobody logs in).
    pub fn of(config: &ConfigFile, users: &Arc<Users>) -> Option<UserServers> {
        let servers: HashMap<String, (Url, Option<OAuthEntry>)> = config
            .servers
            .iter()
            .filter_map(|entry| {
                let Ok(ServerTarget::Http { url, oauth, .. }) = &entry.target else {
                    return None;
                };
                let policy = config.policies.get(&entry.name)?;
                if !matches!(policy.credentials, Some(Credentials::User)) {
                    return None;
                }
                let oauth = oauth.as_deref().cloned();
                Some((entry.name.clone(), (Url::parse(url).ok()?, oauth)))
            })
            .collect();
        if servers.is_empty() {
            return None;
        }
        Some(UserServers {
            users: users.clone(),
            caller: crate::audit::caller()?,
            servers,
        })
    }

    /// The `-32042` error of `method` asking the caller to log in to `server`, or
    /// why it cannot.
    pub async fn ask(&self, method: capable::internal::Method, server: &str) -> capable::Error {
        let Some((url, entry)) = self.servers.get(server) else {
            return crate::forward::answer_error(
                method,
                crate::forward::code::UNAVAILABLE,
                format!("{server} is not a server of the caller's own login"),
                None,
            );
        };
        match self.users.ask(&self.caller, url, entry.as_ref()).await {
            Ok(elicitation) => elicitation_required(method, server, &elicitation),
            Err(why) => crate::forward::answer_error(
                method,
                crate::forward::code::AUTHORIZATION_REQUIRED,
                format!("{server} needs the caller's own login, and none can be started: {why}"),
                Some(serde_json::json!({"server": server})),
            ),
        }
    }
}

/// The spec's `URLElicitationRequiredError` (2025-11-25): the caller must open
/// `elicitation.url` to log in to `server` before the request can go through.
fn elicitation_required(
    method: capable::internal::Method,
    server: &str,
    elicitation: &Elicitation,
) -> capable::Error {
    let message = format!("{server} needs you to log in to it: open the URL, then call again");
    let data = serde_json::json!({"elicitations": [{
        "mode": "url",
        "elicitationId": elicitation.id,
        "url": elicitation.url,
        "message": message,
    }]});
    crate::forward::answer_error(method, URL_ELICITATION_REQUIRED, message, Some(data))
}

/// `URLElicitationRequiredError`'s code.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;
