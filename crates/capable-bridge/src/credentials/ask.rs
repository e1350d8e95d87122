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
    /// The host speaks 2026-07-28, where `-32042` is no more: it gets the bridge's
    /// own `-32010` with the URL instead.
    pub modern: bool,
    /// Asks the host (a legacy one that declared `elicitation.url`) a URL-mode
    /// elicitation, as the server it names.
    pub elicit: Option<capable::input::Handler>,
}

impl UserServers {
    /// Those of `config`, for the caller of the task at hand (`None`: no `user`
    /// server, or nobody logs in).
    pub fn of(config: &ConfigFile, users: &Arc<Users>, modern: bool) -> Option<UserServers> {
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
            modern,
            elicit: None,
        })
    }

    /// The same, the host asked to log in by URL-mode elicitations with `elicit`.
    pub fn elicited_by(mut self, elicit: Option<capable::input::Handler>) -> UserServers {
        self.elicit = elicit;
        self
    }

    /// Asks the host to log in to `server` by a URL-mode elicitation (when it takes
    /// them) and waits up to `within` for the login: whether the caller logged in.
    /// `Err`: the host cannot be asked so, or the login cannot start (answered as
    /// [`UserServers::ask`] says instead).
    pub async fn elicit(&self, server: &str, within: std::time::Duration) -> Result<bool, ()> {
        let (Some(elicit), Some((url, entry))) = (&self.elicit, self.servers.get(server)) else {
            return Err(());
        };
        let elicitation = self
            .users
            .ask(&self.caller, url, entry.as_ref())
            .await
            .map_err(|_| ())?;
        let message = format!("{server} needs you to log in to it: open the URL");
        let params = serde_json::json!({"mode": "url", "elicitationId": elicitation.id,
            "url": elicitation.url, "message": message});
        let asked = crate::upstream::asked_by(elicit, server);
        let answer = asked(params).await.map_err(|_| ())?;
        if answer.get("action").and_then(serde_json::Value::as_str) != Some("accept") {
            return Ok(false);
        }
        Ok(self.users.wait_login(&self.caller, url, within).await)
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
            Ok(elicitation) => elicitation_required(method, server, &elicitation, self.modern),
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
/// `elicitation.url` to log in to `server` before the request can go through. A
/// 2026-07-28 host (`modern`), for which that error is no more, gets the bridge's own
/// authorization-required error (`-32010`) with the same data, the URL in its
/// message too.
fn elicitation_required(
    method: capable::internal::Method,
    server: &str,
    elicitation: &Elicitation,
    modern: bool,
) -> capable::Error {
    let message = match modern {
        false => format!("{server} needs you to log in to it: open the URL, then call again"),
        true => format!(
            "{server} needs you to log in to it: open {}, then call again",
            elicitation.url
        ),
    };
    let code = match modern {
        false => URL_ELICITATION_REQUIRED,
        true => crate::forward::code::AUTHORIZATION_REQUIRED,
    };
    let data = serde_json::json!({"elicitations": [{
        "mode": "url",
        "elicitationId": elicitation.id,
        "url": elicitation.url,
        "message": message,
    }]});
    crate::forward::answer_error(method, code, message, Some(data))
}

/// `URLElicitationRequiredError`'s code.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;
