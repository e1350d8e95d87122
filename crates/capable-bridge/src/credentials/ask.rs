//! A session's servers of `user` credentials ([`UserServers`]), and how a caller
//! without a token of one is asked to log in at the gateway's login URL (`user.rs`):
//!
//! | the host | asked by |
//! |---|---|
//! | 2025-11-25 that declared `elicitation.url` | `elicitation/create` (mode `url`, with an `elicitationId`) on its call's stream, the call waiting for the login; `notifications/elicitation/complete` with that id once it landed |
//! | 2026-07-28 that declared `elicitation.url` | an `input_required` result whose `inputRequests` hold the URL-mode `elicitation/create` (no id in that revision), its `requestState` opaque (the relay's rounds, `relay/rounds.rs`); its retry with the answer waits for the login and is then served |
//! | any other legacy one | the spec's `URLElicitationRequiredError` (`-32042`) with the URL |
//! | any other 2026-07-28 one | the bridge's authorization-required error (`-32010`) with the URL |

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
    /// Asks the host (one that declared `elicitation.url`) a URL-mode elicitation, as
    /// the server it names: a legacy host by a request, a 2026-07-28 one in a round.
    pub elicit: Option<capable::input::Handler>,
    /// Where the relay takes the bridge's own notifications for the host
    /// (`notifications/elicitation/complete`).
    pub tell: Option<crate::relay::Inbox>,
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
            tell: None,
        })
    }

    /// The same, the host asked to log in by URL-mode elicitations with `elicit`, and
    /// told of a login that landed through `tell`.
    pub fn elicited_by(
        mut self,
        elicit: Option<capable::input::Handler>,
        tell: Option<crate::relay::Inbox>,
    ) -> UserServers {
        self.elicit = elicit;
        self.tell = tell;
        self
    }

    /// Asks the host to log in to `server` by a URL-mode elicitation (when it takes
    /// them) and waits up to `within` for the login: whether the caller logged in. A
    /// legacy host is then told the elicitation is complete. `Err`: the host cannot be
    /// asked so, or the login cannot start (answered as [`UserServers::ask`] says
    /// instead).
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
        let mut params =
            serde_json::json!({"mode": "url", "url": elicitation.url, "message": message});
        // 2026-07-28 has no elicitation ids: its round's requestState stands for it.
        if !self.modern {
            params["elicitationId"] = elicitation.id.clone().into();
        }
        let asked = crate::upstream::asked_by(elicit, server);
        let answer = asked(params).await.map_err(|_| ())?;
        if answer.get("action").and_then(serde_json::Value::as_str) != Some("accept") {
            return Ok(false);
        }
        let landed = self.users.wait_login(&self.caller, url, within).await;
        if let (true, false, Some(tell)) = (landed, self.modern, &self.tell) {
            let kind = capable::internal::notification::Notification::ElicitationComplete {
                elicitation_id: elicitation.id.clone(),
            };
            let params = serde_json::json!({"elicitationId": elicitation.id});
            tell.send(crate::relay::Event::Tell(kind, params));
        }
        Ok(landed)
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
