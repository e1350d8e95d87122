//! The merged view: the tools, resources and prompts of every ready server, under
//! names that cannot collide, each keeping where it came from.
//!
//! **The naming rule.** An entry of server `S` named `N` (a tool's or prompt's name, a
//! resource's URI) is `S/N` in the host. A server's name may not contain `/` (nor be
//! empty, nor hold control characters): the host refuses such a name when it is added.
//! So the first `/` of a host name always ends the server's name, whatever `N`
//! contains (`docs/docs://manual/current`, `git/log/oneline`), and two entries share a
//! host name only if they share both server and name — which one server's list cannot
//! produce twice with a different meaning. [`qualify`] builds a host name, [`split`]
//! takes one apart.
//!
//! **Freshness.** A server's lists are read when it becomes ready (every kind it
//! declares, each as the gating table allows), dropped when it goes down, and read
//! again on reconnect. Between the two, a `notifications/…/list_changed` refreshes
//! that one list of that one server — only when the server declared `listChanged` for
//! it (a legacy notification, or a modern `subscriptions/listen` stream); an
//! undeclared one is a notice and changes nothing.

use capable_core::model::{Prompt, Resource, Tool};
use capable_core::{Capability, Method, Notification};
use serde::Serialize;

use crate::error::Error;
use crate::session::Session;

/// What separates a server's name from an entry's name in the host.
pub const SEPARATOR: char = '/';

/// The host name of entry `name` of server `server`: `server/name`.
///
/// ```
/// use capable::host::{qualify, split};
/// let name = qualify("docs", "docs://manual/current");
/// assert_eq!(name, "docs/docs://manual/current");
/// assert_eq!(split(&name), Some(("docs", "docs://manual/current")));
/// ```
pub fn qualify(server: &str, name: &str) -> String {
    let mut qualified = String::with_capacity(server.len() + 1 + name.len());
    qualified.push_str(server);
    qualified.push(SEPARATOR);
    qualified.push_str(name);
    qualified
}

/// A host name taken apart at its first `/`: the server's name and the entry's name,
/// both non-empty. `None` for a name that names no server.
pub fn split(qualified: &str) -> Option<(&str, &str)> {
    let (server, name) = qualified.split_once(SEPARATOR)?;
    (!server.is_empty() && !name.is_empty()).then_some((server, name))
}

/// Why `name` cannot name a server in a host, if it cannot.
pub(crate) fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        Err("a server's name may not be empty")
    } else if name.contains(SEPARATOR) {
        Err("a server's name may not contain `/`, which separates it from a tool's name")
    } else if name.chars().any(char::is_control) {
        Err("a server's name may not contain control characters")
    } else {
        Ok(())
    }
}

/// One of the lists a server may offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `resources/list`.
    Resources,
    /// `prompts/list`.
    Prompts,
}

impl ListKind {
    /// Every kind, in the host's order.
    pub const ALL: [ListKind; 3] = [ListKind::Tools, ListKind::Resources, ListKind::Prompts];

    /// The list's method.
    pub fn method(self) -> Method {
        match self {
            ListKind::Tools => Method::ListTools,
            ListKind::Resources => Method::ListResources,
            ListKind::Prompts => Method::ListPrompts,
        }
    }

    /// The capability that offers it.
    pub fn capability(self) -> Capability {
        match self {
            ListKind::Tools => Capability::Tools,
            ListKind::Resources => Capability::Resources,
            ListKind::Prompts => Capability::Prompts,
        }
    }

    /// `tools`, `resources` or `prompts`.
    pub fn name(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Resources => "resources",
            ListKind::Prompts => "prompts",
        }
    }

    /// The list a `notifications/…/list_changed` names.
    pub fn of_notification(notification: &Notification) -> Option<ListKind> {
        Some(match notification {
            Notification::ToolsListChanged => ListKind::Tools,
            Notification::ResourcesListChanged => ListKind::Resources,
            Notification::PromptsListChanged => ListKind::Prompts,
            _ => return None,
        })
    }
}

impl std::fmt::Display for ListKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A tool in the host's merged view.
#[derive(Clone, Debug, Serialize)]
pub struct HostTool {
    /// The server that offers it.
    pub server: String,
    /// Its host name, `server/tool` (see [`qualify`]).
    pub name: String,
    /// The tool as the server listed it.
    pub tool: Tool,
}

/// A resource in the host's merged view.
#[derive(Clone, Debug, Serialize)]
pub struct HostResource {
    /// The server that offers it.
    pub server: String,
    /// Its host name, `server/uri`.
    pub name: String,
    /// The resource as the server listed it.
    pub resource: Resource,
}

/// A prompt in the host's merged view.
#[derive(Clone, Debug, Serialize)]
pub struct HostPrompt {
    /// The server that offers it.
    pub server: String,
    /// Its host name, `server/prompt`.
    pub name: String,
    /// The prompt as the server listed it.
    pub prompt: Prompt,
}

/// The lists of one server's current session (`None`: not declared, or not read).
#[derive(Clone, Debug, Default)]
pub(crate) struct Lists {
    pub(crate) tools: Option<Vec<Tool>>,
    pub(crate) resources: Option<Vec<Resource>>,
    pub(crate) prompts: Option<Vec<Prompt>>,
    /// The tools the host's pins keep out of the merged view (by the server's name).
    pub(crate) withheld_tools: Vec<String>,
    /// The prompts likewise.
    pub(crate) withheld_prompts: Vec<String>,
}

/// One list as read from a server.
pub(crate) enum Fetched {
    Tools(Vec<Tool>),
    Resources(Vec<Resource>),
    Prompts(Vec<Prompt>),
}

impl Lists {
    pub(crate) fn count(&self, kind: ListKind) -> Option<usize> {
        match kind {
            ListKind::Tools => self.tools.as_ref().map(Vec::len),
            ListKind::Resources => self.resources.as_ref().map(Vec::len),
            ListKind::Prompts => self.prompts.as_ref().map(Vec::len),
        }
    }

    pub(crate) fn set(&mut self, fetched: Fetched) {
        match fetched {
            Fetched::Tools(t) => self.tools = Some(t),
            Fetched::Resources(r) => self.resources = Some(r),
            Fetched::Prompts(p) => self.prompts = Some(p),
        }
    }

    /// The names of `list` the host's pins keep out, as of its last reading.
    pub(crate) fn withhold(&mut self, list: ListKind, names: Vec<String>) {
        match list {
            ListKind::Tools => self.withheld_tools = names,
            ListKind::Prompts => self.withheld_prompts = names,
            ListKind::Resources => {}
        }
    }

    /// Whether `name` of `list` is kept out by the host's pins.
    pub(crate) fn is_withheld(&self, list: ListKind, name: &str) -> bool {
        match list {
            ListKind::Tools => self.withheld_tools.iter().any(|n| n == name),
            ListKind::Prompts => self.withheld_prompts.iter().any(|n| n == name),
            ListKind::Resources => false,
        }
    }

    pub(crate) fn kinds(&self) -> Vec<ListKind> {
        ListKind::ALL
            .into_iter()
            .filter(|k| self.count(*k).is_some())
            .collect()
    }

    pub(crate) fn tools_of(&self, server: &str, into: &mut Vec<HostTool>) {
        for tool in self.tools.iter().flatten() {
            into.push(HostTool {
                server: server.to_owned(),
                name: qualify(server, &tool.name),
                tool: tool.clone(),
            });
        }
    }

    pub(crate) fn resources_of(&self, server: &str, into: &mut Vec<HostResource>) {
        for resource in self.resources.iter().flatten() {
            into.push(HostResource {
                server: server.to_owned(),
                name: qualify(server, &resource.uri),
                resource: resource.clone(),
            });
        }
    }

    pub(crate) fn prompts_of(&self, server: &str, into: &mut Vec<HostPrompt>) {
        for prompt in self.prompts.iter().flatten() {
            into.push(HostPrompt {
                server: server.to_owned(),
                name: qualify(server, &prompt.name),
                prompt: prompt.clone(),
            });
        }
    }
}

/// Reads one list, every page; `None` when the gating table does not allow it (the
/// server did not declare the capability): nothing is sent then.
pub(crate) async fn fetch(session: &Session, kind: ListKind) -> Option<Result<Fetched, Error>> {
    session.check(kind.method()).ok()?;
    Some(match kind {
        ListKind::Tools => session.list_tools().await.map(Fetched::Tools),
        ListKind::Resources => session.list_resources().await.map(Fetched::Resources),
        ListKind::Prompts => session.list_prompts().await.map(Fetched::Prompts),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_name_splits_at_its_first_slash() {
        assert_eq!(split("git/log/oneline"), Some(("git", "log/oneline")));
        assert_eq!(split("docs/docs://a"), Some(("docs", "docs://a")));
        for bad in ["echo", "/echo", "docs/", ""] {
            assert_eq!(split(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn names_that_could_collide_are_refused() {
        assert!(check_name("docs").is_ok());
        assert!(check_name("my docs.v2").is_ok());
        for bad in ["", "a/b", "x\u{1b}[2J"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        // With `/` out of server names, distinct (server, name) pairs never share a
        // host name: "a" + "b/c" and "a/b" + "c" would, and "a/b" is refused.
        assert_eq!(qualify("a", "b/c"), "a/b/c");
        assert_eq!(split("a/b/c"), Some(("a", "b/c")));
    }
}
