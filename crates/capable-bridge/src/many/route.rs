//! Where a host request goes: the server a merged name names, the server that owns a
//! URI (the one that listed it, or whose template it fits), the server a completion's
//! reference names.

use std::sync::{Arc, Mutex};

use capable::host::{qualify, split, Host, ListKind};
use capable::internal::jsonrpc::codes;
use capable::internal::server::fanout;
use capable::internal::Method;
use capable::{Error, Session};
use serde_json::{json, Map, Value};

use super::{not_offered, Many};
use crate::forward::answer_error;

impl Many {
    /// The server a merged name in `member` names (as listed, `names.rs`; or
    /// `server/name`); the member becomes the name the server knows.
    pub(super) fn by_name(
        &self,
        method: Method,
        params: &mut Map<String, Value>,
        member: &str,
    ) -> Result<(String, Arc<Session>), Error> {
        let asked = params.get(member).and_then(Value::as_str).unwrap_or("");
        let tools = method == Method::CallTool;
        let routes = if tools {
            &self.tool_names
        } else {
            &self.prompt_names
        };
        let known = |asked: &str| {
            let routes = routes.lock().unwrap_or_else(|e| e.into_inner());
            routes.get(asked).cloned()
        };
        let found = match split(asked) {
            // The merged names of old (`server/name`) are still understood (no name
            // of now has a `/`).
            Some((server, name)) => Some((server.to_owned(), name.to_owned())),
            // Not listed yet (a 2026-07-28 host calls what it listed on another
            // connection): listed now, as the host would see it — what a list costs.
            None => known(asked).or_else(|| {
                match tools {
                    true => drop(self.tools()),
                    false => drop(self.prompts()),
                }
                known(asked)
            }),
        };
        let Some((server, name)) = found else {
            // A tool of a server that is not up (its start failed, its credentials
            // were refused) is never listed: the call is told why that server is not
            // there, not that the name means nothing.
            if let Some(down) = self.down_server_of(asked) {
                return Err(session_of(&self.host, method, &down)
                    .err()
                    .unwrap_or_else(|| {
                        not_offered(
                            method,
                            &format!("{asked:?} names nothing this bridge lists"),
                        )
                    }));
            }
            return Err(not_offered(
                method,
                &format!("{asked:?} names nothing this bridge lists"),
            ));
        };
        let pinned = match method {
            Method::CallTool => Some(ListKind::Tools),
            Method::GetPrompt => Some(ListKind::Prompts),
            _ => None,
        };
        let host_name = qualify(&server, &name);
        if pinned.is_some_and(|list| self.host.withheld(list, &host_name)) {
            return Err(not_offered(
                method,
                &format!("{asked:?} is withheld: its definition differs from the one pinned (or is new and held until accepted)"),
            ));
        }
        let session = self.session(method, &server)?;
        params.insert(member.into(), json!(name));
        Ok((server, session))
    }

    /// The server not up whose merged names `asked` would be one of (its name, then
    /// the separator).
    pub(super) fn down_server_of(&self, asked: &str) -> Option<String> {
        self.host
            .servers()
            .into_iter()
            .map(|s| s.name)
            .filter(|name| {
                asked
                    .strip_prefix(name.as_str())
                    .is_some_and(|rest| rest.starts_with(&self.separator))
            })
            .find(|name| self.host.session(name).is_err())
    }

    /// The name its server knows the tool a host calls `merged` by (as listed, or
    /// `server/name`), if the bridge knows it.
    pub fn own_tool_name(&self, merged: &str) -> Option<String> {
        if let Some((_, name)) = split(merged) {
            return Some(name.to_owned());
        }
        let routes = self.tool_names.lock().unwrap_or_else(|e| e.into_inner());
        routes.get(merged).map(|(_, name)| name.clone())
    }

    /// The server that owns `uri`: the one that listed it (the first, when two did),
    /// or whose template it fits (the longest prefix).
    pub fn owner_of(&self, uri: &str) -> Option<String> {
        owner_in(&self.host, &self.templates, uri)
    }

    /// Whether the host may listen for updates of a URI: its owner declared
    /// `resources.subscribe` (or is down, and is asked again when it is back). For
    /// the engine, which acknowledges a 2026-07-28 host's listen stream with these
    /// URIs alone ([`ServerConnection::set_subscribable`](capable::internal::server::ServerConnection::set_subscribable)).
    pub fn subscribable(&self) -> capable::internal::server::Subscribable {
        let (host, templates) = (self.host.clone(), self.templates.clone());
        Box::new(move |uri| {
            let Some(server) = owner_in(&host, &templates, uri) else {
                return false;
            };
            let Ok(session) = host.session(&server) else {
                return true;
            };
            let owner = fanout::Owner {
                server: &server,
                era: session.era(),
                capabilities: session.capabilities(),
            };
            fanout::check(uri, Some(&owner)).is_ok()
        })
    }

    /// The server that owns `uri`, and its session.
    pub(super) fn by_uri(
        &self,
        method: Method,
        uri: &str,
    ) -> Result<(String, Arc<Session>), Error> {
        match self.owner_of(uri) {
            Some(server) => Ok((server.clone(), self.session(method, &server)?)),
            None => Err(answer_error(
                method,
                codes::INVALID_PARAMS,
                format!("no server of this bridge offers {uri}"),
                Some(json!({"uri": uri})),
            )),
        }
    }

    /// `completion/complete`: routed by its reference (a `server/prompt`, or a URI).
    pub(super) fn completion(
        &self,
        params: &mut Map<String, Value>,
    ) -> Result<(String, Arc<Session>), Error> {
        let method = Method::Complete;
        let Some(Value::Object(reference)) = params.get_mut("ref") else {
            return Err(not_offered(method, "no ref"));
        };
        if let Some(uri) = reference
            .get("uri")
            .and_then(Value::as_str)
            .map(str::to_owned)
        {
            return self.by_uri(method, &uri);
        }
        self.by_name(method, reference, "name")
    }

    /// `server`'s session, while it is up.
    pub fn ready(&self, server: &str) -> Option<Arc<Session>> {
        self.host.session(server).ok()
    }

    fn session(&self, method: Method, server: &str) -> Result<Arc<Session>, Error> {
        session_of(&self.host, method, server)
    }
}

/// The ready session of `server`, or the error a request of `method` gets for it.
fn session_of(host: &Host, method: Method, server: &str) -> Result<Arc<Session>, Error> {
    host.session(server).map_err(|e| {
        let data = Some(json!({"server": server}));
        answer_error(
            method,
            crate::forward::code::UNAVAILABLE,
            e.to_string(),
            data,
        )
    })
}

/// The server of `host` that owns `uri` (see [`Many::owner_of`]).
fn owner_in(host: &Host, templates: &Mutex<Vec<(String, String)>>, uri: &str) -> Option<String> {
    let listed = host
        .resources()
        .into_iter()
        .find(|r| r.resource.uri == uri)
        .map(|r| r.server);
    listed.or_else(|| {
        let templates = templates.lock().unwrap_or_else(|e| e.into_inner());
        by_template(&templates, uri)
    })
}

/// The server whose template `uri` fits best: the longest literal prefix before the
/// template's first variable — one that names a whole scheme (`docs://`, `file:`), so
/// that a template such as `h{rest}` is no catch-all over every `https://` URI of
/// another server's.
fn by_template(templates: &[(String, String)], uri: &str) -> Option<String> {
    templates
        .iter()
        .filter(|(prefix, _)| prefix.contains(':') && uri.starts_with(prefix.as_str()))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, server)| server.clone())
}

/// After the servers' templates were learnt (`templates`), the server of `host` that
/// owns `uri` and its session: a read by template before the host listed any.
pub(super) fn by_uri_learnt(
    host: &Host,
    templates: &Mutex<Vec<(String, String)>>,
    method: Method,
    uri: &str,
) -> Result<(String, Arc<Session>), Error> {
    let unknown = || {
        answer_error(
            method,
            codes::INVALID_PARAMS,
            format!("no server of this bridge offers {uri}"),
            Some(json!({"uri": uri})),
        )
    };
    let server = owner_in(host, templates, uri).ok_or_else(unknown)?;
    let session = session_of(host, method, &server)?;
    Ok((server, session))
}

#[cfg(test)]
mod tests {
    use super::by_template;

    #[test]
    fn a_uri_goes_to_the_most_specific_template_and_never_to_a_catch_all() {
        let templates = [
            ("h".to_owned(), "greedy".to_owned()),
            ("https://".to_owned(), "web".to_owned()),
            ("https://api.example.com/".to_owned(), "api".to_owned()),
            ("docs://".to_owned(), "docs".to_owned()),
        ];
        let owner = |uri| by_template(&templates, uri);
        assert_eq!(owner("https://api.example.com/v1").as_deref(), Some("api"));
        assert_eq!(owner("https://else.example.com/").as_deref(), Some("web"));
        assert_eq!(owner("docs://manual").as_deref(), Some("docs"));
        // `h{rest}` names no scheme: it takes nothing, not even `hello:x`.
        assert_eq!(owner("hello:x"), None);
        let greedy_only = [("h".to_owned(), "greedy".to_owned())];
        assert_eq!(by_template(&greedy_only, "https://a.example/"), None);
    }
}
