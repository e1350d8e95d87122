//! A host's resource subscriptions, carried out at the many servers a relay serves as
//! one (`capable bridge --config`): each URI at the server that owns it, in that
//! server's era, and only where that server declared `resources.subscribe`.
//!
//! The relay routes each URI the host wants updates of (its [`Interest`]) to its
//! [`Owner`] and asks [`Fanout::plan`] for the [`Step`]s that bring the servers there:
//!
//! - a legacy server is sent `resources/subscribe` for each URI it newly holds for the
//!   host, `resources/unsubscribe` for each it no longer does;
//! - a 2026-07-28 server has one listen stream with all its URIs, opened again with the
//!   new set when it changes, ended when none is left;
//! - a URI that no server owns, or whose server did not declare `resources.subscribe`,
//!   is sent nowhere: it is [`Refused`], with why ([`check`] says so before a legacy
//!   host's `resources/subscribe` is answered).
//!
//! A legacy host's `resources/subscribe` (or `resources/unsubscribe`) is answered as
//! its server answered ([`wait_for`] says which step's outcome that is): a legacy
//! server's step that fails leaves the server holding what it held
//! ([`Fanout::failed`]); a 2026-07-28 server holds only what its acknowledgement
//! honours ([`Fanout::acknowledged`]: a URI left out is [`Refused::NotHonoured`]).
//!
//! A server that went down holds nothing any more ([`Fanout::forget`]): once it is back,
//! the next plan asks it again — the host is not asked. A server removed owns nothing
//! in the next plan, and is forgotten the same way. An update counts only from the
//! server that holds its URI ([`Fanout::holds`]): another server's is not the host's.
//!
//! ```
//! use capable_core::internal::server::fanout::{Fanout, Owner, Step};
//! use capable_core::{Era, ServerCapabilities};
//! use serde_json::json;
//!
//! let subscribes = ServerCapabilities::from_value(json!({"resources": {"subscribe": true}}));
//! let docs = Owner { server: "docs", era: Era::Legacy, capabilities: &subscribes };
//! let mut fanout = Fanout::default();
//! let plan = fanout.plan([("docs://a", Some(docs))]);
//! assert_eq!(plan.steps, [Step::Subscribe { server: "docs".into(), uri: "docs://a".into() }]);
//! // Asked once: the same interest again is nothing to do…
//! assert!(fanout.plan([("docs://a", Some(docs))]).steps.is_empty());
//! // …until the server restarts: then it is asked again.
//! fanout.forget("docs");
//! assert_eq!(fanout.plan([("docs://a", Some(docs))]).steps.len(), 1);
//! ```
//!
//! [`Interest`]: super::Interest

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::capabilities::{Capability, Flag, ServerCapabilities};
use crate::gating::ListenFilter;
use crate::model::is_same_or_sub_resource;
use crate::version::Era;

/// The server a URI routes to, as the relay knows it now.
#[derive(Clone, Copy, Debug)]
pub struct Owner<'a> {
    /// Its name.
    pub server: &'a str,
    /// The era it speaks.
    pub era: Era,
    /// What it declared.
    pub capabilities: &'a ServerCapabilities,
}

/// Why updates of a URI are asked of no server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refused {
    /// No server lists the URI, nor has a template it fits.
    NoServer {
        /// The URI.
        uri: String,
    },
    /// Its server did not declare `resources.subscribe`.
    NotDeclared {
        /// The URI.
        uri: String,
        /// The server that owns it.
        server: String,
    },
    /// Its 2026-07-28 server acknowledged the listen stream without it.
    NotHonoured {
        /// The URI.
        uri: String,
        /// The server that owns it.
        server: String,
    },
}

impl Refused {
    /// The URI refused.
    pub fn uri(&self) -> &str {
        match self {
            Refused::NoServer { uri }
            | Refused::NotDeclared { uri, .. }
            | Refused::NotHonoured { uri, .. } => uri,
        }
    }

    /// The server that owns the URI, if one does.
    pub fn server(&self) -> Option<&str> {
        match self {
            Refused::NoServer { .. } => None,
            Refused::NotDeclared { server, .. } | Refused::NotHonoured { server, .. } => {
                Some(server)
            }
        }
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::NoServer { uri } => {
                write!(f, "no server of this bridge offers {uri}")
            }
            Refused::NotDeclared { uri, server } => write!(
                f,
                "server {server:?} offers {uri} but did not declare resources.subscribe: \
                 its updates cannot be subscribed to"
            ),
            Refused::NotHonoured { uri, server } => write!(
                f,
                "server {server:?} acknowledged its listen stream without {uri}: \
                 it does not send its updates"
            ),
        }
    }
}

/// Whether updates of `uri` may be asked of `owner` (the gating table's rule: only of a
/// server that declared `resources.subscribe`).
pub fn check(uri: &str, owner: Option<&Owner<'_>>) -> Result<(), Refused> {
    match owner {
        None => Err(Refused::NoServer {
            uri: uri.to_owned(),
        }),
        Some(o)
            if !o
                .capabilities
                .has_flag(Capability::Resources, Flag::Subscribe) =>
        {
            Err(Refused::NotDeclared {
                uri: uri.to_owned(),
                server: o.server.to_owned(),
            })
        }
        Some(_) => Ok(()),
    }
}

/// What to ask of one server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// `resources/subscribe` to a legacy server.
    Subscribe {
        /// The server.
        server: String,
        /// The URI.
        uri: String,
    },
    /// `resources/unsubscribe` to a legacy server.
    Unsubscribe {
        /// The server.
        server: String,
        /// The URI.
        uri: String,
    },
    /// A 2026-07-28 server's listen stream, (re)opened with this filter; the stream it
    /// had before, if any, ends.
    Listen {
        /// The server.
        server: String,
        /// The URIs, as a filter.
        filter: ListenFilter,
    },
    /// A 2026-07-28 server's listen stream ends: none of its URIs is wanted.
    StopListening {
        /// The server.
        server: String,
    },
}

/// What a host's `resources/subscribe` or `resources/unsubscribe` is answered after.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wait {
    /// Nothing was asked of its server (it holds the URI already, or no longer): at
    /// once.
    Nothing,
    /// The legacy server's answer to this step: its success, or its error.
    Step(Step),
    /// The acknowledgement of this 2026-07-28 server's listen stream, opened anew: a
    /// subscribe succeeds if it honours the URI.
    Acknowledged {
        /// The server.
        server: String,
    },
}

/// What a host's (un)subscribe of `uri`, whose owner is `server`, waits for among the
/// `steps` planned for it.
pub fn wait_for(steps: &[Step], server: &str, uri: &str) -> Wait {
    for step in steps {
        match step {
            Step::Subscribe { server: s, uri: u } | Step::Unsubscribe { server: s, uri: u }
                if s == server && u == uri =>
            {
                return Wait::Step(step.clone());
            }
            Step::Listen { server: s, .. } if s == server => {
                return Wait::Acknowledged { server: s.clone() };
            }
            _ => {}
        }
    }
    Wait::Nothing
}

/// What [`Fanout::plan`] decided.
#[derive(Debug, Default)]
pub struct Plan {
    /// What to ask of the servers, server by server in name order.
    pub steps: Vec<Step>,
    /// The URIs asked of no server, and why.
    pub refused: Vec<Refused>,
}

/// What each server holds for the host (see the module documentation).
#[derive(Debug, Default)]
pub struct Fanout {
    held: BTreeMap<String, Held>,
}

#[derive(Debug)]
struct Held {
    era: Era,
    uris: BTreeSet<String>,
}

impl Fanout {
    /// The steps from what the servers hold to `wanted`: every URI the host wants
    /// updates of now, each with its owner (`None`: no server owns it). Afterwards the
    /// servers are taken to hold what the steps ask.
    pub fn plan<'a>(
        &mut self,
        wanted: impl IntoIterator<Item = (&'a str, Option<Owner<'a>>)>,
    ) -> Plan {
        let mut plan = Plan::default();
        let mut next: BTreeMap<String, Held> = BTreeMap::new();
        for (uri, owner) in wanted {
            if let Err(refused) = check(uri, owner.as_ref()) {
                plan.refused.push(refused);
                continue;
            }
            let Some(owner) = owner else { continue };
            next.entry(owner.server.to_owned())
                .or_insert_with(|| Held {
                    era: owner.era,
                    uris: BTreeSet::new(),
                })
                .uris
                .insert(uri.to_owned());
        }
        let servers: BTreeSet<String> = self.held.keys().chain(next.keys()).cloned().collect();
        for server in servers {
            let before = self.held.get(&server);
            let after = next.get(&server);
            if before.map(|h| &h.uris) == after.map(|h| &h.uris) {
                continue;
            }
            let era = after.or(before).map_or(Era::Legacy, |h| h.era);
            let none = BTreeSet::new();
            let (was, now) = (
                before.map_or(&none, |h| &h.uris),
                after.map_or(&none, |h| &h.uris),
            );
            match era {
                Era::Legacy => {
                    for uri in now.difference(was) {
                        plan.steps.push(Step::Subscribe {
                            server: server.clone(),
                            uri: uri.clone(),
                        });
                    }
                    for uri in was.difference(now) {
                        plan.steps.push(Step::Unsubscribe {
                            server: server.clone(),
                            uri: uri.clone(),
                        });
                    }
                }
                Era::Modern if now.is_empty() => plan.steps.push(Step::StopListening { server }),
                Era::Modern => plan.steps.push(Step::Listen {
                    server,
                    filter: ListenFilter {
                        resource_subscriptions: now.iter().cloned().collect(),
                        ..ListenFilter::default()
                    },
                }),
            }
        }
        self.held = next;
        plan
    }

    /// `server` went down (or was removed): it holds nothing now, and nothing is to be
    /// undone there.
    pub fn forget(&mut self, server: &str) {
        self.held.remove(server);
    }

    /// A legacy server's `step` failed: it holds what it held before the step.
    pub fn failed(&mut self, step: &Step) {
        match step {
            Step::Subscribe { server, uri } => {
                if let Some(held) = self.held.get_mut(server) {
                    held.uris.remove(uri);
                    if held.uris.is_empty() {
                        self.held.remove(server);
                    }
                }
            }
            Step::Unsubscribe { server, uri } => {
                self.held
                    .entry(server.clone())
                    .or_insert_with(|| Held {
                        era: Era::Legacy,
                        uris: BTreeSet::new(),
                    })
                    .uris
                    .insert(uri.clone());
            }
            _ => {}
        }
    }

    /// A 2026-07-28 server acknowledged its listen stream with `honoured` (the
    /// `notifications` it honours): it holds those of its URIs alone; the others are
    /// returned, refused.
    pub fn acknowledged(&mut self, server: &str, honoured: &serde_json::Value) -> Vec<Refused> {
        let Some(held) = self.held.get_mut(server) else {
            return Vec::new();
        };
        // A set: a host may hold many URIs at one server, and each is looked up.
        let listed: std::collections::HashSet<&str> = honoured
            .get("resourceSubscriptions")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_str)
            .collect();
        let is_honoured = |uri: &str| listed.contains(uri);
        let (kept, left): (BTreeSet<String>, BTreeSet<String>) = std::mem::take(&mut held.uris)
            .into_iter()
            .partition(|uri| is_honoured(uri));
        held.uris = kept;
        left.into_iter()
            .map(|uri| Refused::NotHonoured {
                uri,
                server: server.to_owned(),
            })
            .collect()
    }

    /// Whether an update of `uri` from `server` is one the host asked for through it
    /// (the URI, or a sub-resource of one, that server holds).
    pub fn holds(&self, server: &str, uri: &str) -> bool {
        self.held
            .get(server)
            .is_some_and(|h| h.uris.iter().any(|s| is_same_or_sub_resource(uri, s)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn caps(value: serde_json::Value) -> ServerCapabilities {
        ServerCapabilities::from_value(value)
    }

    fn owner<'a>(server: &'a str, era: Era, capabilities: &'a ServerCapabilities) -> Owner<'a> {
        Owner {
            server,
            era,
            capabilities,
        }
    }

    fn subscribe(server: &str, uri: &str) -> Step {
        Step::Subscribe {
            server: server.into(),
            uri: uri.into(),
        }
    }

    fn unsubscribe(server: &str, uri: &str) -> Step {
        Step::Unsubscribe {
            server: server.into(),
            uri: uri.into(),
        }
    }

    fn listen(server: &str, uris: &[&str]) -> Step {
        Step::Listen {
            server: server.into(),
            filter: ListenFilter {
                resource_subscriptions: uris.iter().map(|u| u.to_string()).collect(),
                ..ListenFilter::default()
            },
        }
    }

    #[test]
    fn each_uri_goes_to_its_server_in_its_era() {
        let yes = caps(json!({"resources": {"subscribe": true}}));
        let a = owner("a", Era::Legacy, &yes);
        let m = owner("m", Era::Modern, &yes);
        let mut fanout = Fanout::default();
        let plan = fanout.plan([("a://1", Some(a)), ("m://1", Some(m)), ("m://2", Some(m))]);
        assert_eq!(
            plan.steps,
            [subscribe("a", "a://1"), listen("m", &["m://1", "m://2"])]
        );
        assert!(plan.refused.is_empty());
        // One of m's URIs is no longer wanted: its stream is opened again with the
        // other; a's is unsubscribed when it goes.
        let plan = fanout.plan([("m://2", Some(m))]);
        assert_eq!(
            plan.steps,
            [unsubscribe("a", "a://1"), listen("m", &["m://2"])]
        );
        let plan = fanout.plan([]);
        assert_eq!(plan.steps, [Step::StopListening { server: "m".into() }]);
        assert!(fanout.plan([]).steps.is_empty());
    }

    #[test]
    fn a_server_that_did_not_declare_subscribe_is_asked_nothing() {
        let no = caps(json!({"resources": {"listChanged": true}}));
        let docs = owner("docs", Era::Legacy, &no);
        let mut fanout = Fanout::default();
        let plan = fanout.plan([("docs://a", Some(docs)), ("x://b", None)]);
        assert!(plan.steps.is_empty());
        assert_eq!(
            plan.refused,
            [
                Refused::NotDeclared {
                    uri: "docs://a".into(),
                    server: "docs".into()
                },
                Refused::NoServer {
                    uri: "x://b".into()
                }
            ]
        );
        let why = plan.refused[0].to_string();
        assert!(
            why.contains("\"docs\"") && why.contains("resources.subscribe"),
            "{why}"
        );
        assert!(!fanout.holds("docs", "docs://a"));
    }

    #[test]
    fn a_restarted_server_is_asked_again_and_a_removed_one_is_not_asked_to_undo() {
        let yes = caps(json!({"resources": {"subscribe": true}}));
        let a = owner("a", Era::Legacy, &yes);
        let mut fanout = Fanout::default();
        fanout.plan([("a://1", Some(a))]);
        // Down: forgotten; while it is down it owns nothing, and nothing is sent.
        fanout.forget("a");
        assert!(fanout.plan([("a://1", None)]).steps.is_empty());
        // Back: asked again.
        assert_eq!(
            fanout.plan([("a://1", Some(a))]).steps,
            [subscribe("a", "a://1")]
        );
        // Back with another declaration: what it no longer declares is refused.
        let no = caps(json!({"resources": {}}));
        fanout.forget("a");
        let plan = fanout.plan([(
            "a://1",
            Some(Owner {
                capabilities: &no,
                ..a
            }),
        )]);
        assert!(plan.steps.is_empty());
        assert_eq!(plan.refused.len(), 1);
    }

    #[test]
    fn an_update_counts_only_from_the_server_that_holds_its_uri() {
        let yes = caps(json!({"resources": {"subscribe": true}}));
        let a = owner("a", Era::Legacy, &yes);
        let mut fanout = Fanout::default();
        fanout.plan([("docs://dir/", Some(a))]);
        assert!(fanout.holds("a", "docs://dir/"));
        assert!(fanout.holds("a", "docs://dir/page"));
        assert!(!fanout.holds("b", "docs://dir/page"));
        assert!(!fanout.holds("a", "docs://other"));
    }

    #[test]
    fn a_hosts_request_waits_for_the_step_that_carries_its_uri() {
        let steps = [subscribe("a", "a://1"), listen("m", &["m://1"])];
        assert_eq!(
            wait_for(&steps, "a", "a://1"),
            Wait::Step(subscribe("a", "a://1"))
        );
        assert_eq!(
            wait_for(&steps, "m", "m://1"),
            Wait::Acknowledged { server: "m".into() }
        );
        // An unsubscribe at m: its stream opened anew without the URI.
        assert_eq!(
            wait_for(&steps, "m", "m://2"),
            Wait::Acknowledged { server: "m".into() }
        );
        assert_eq!(wait_for(&steps, "a", "a://2"), Wait::Nothing);
        let stop = [Step::StopListening { server: "m".into() }];
        assert_eq!(wait_for(&stop, "m", "m://1"), Wait::Nothing);
    }

    #[test]
    fn a_failed_step_leaves_the_server_holding_what_it_held() {
        let yes = caps(json!({"resources": {"subscribe": true}}));
        let a = owner("a", Era::Legacy, &yes);
        let mut fanout = Fanout::default();
        let plan = fanout.plan([("a://1", Some(a))]);
        fanout.failed(&plan.steps[0]);
        assert!(!fanout.holds("a", "a://1"));
        // The host was refused: it does not want the URI, and nothing is to undo.
        assert!(fanout.plan([]).steps.is_empty());
        // A failed unsubscribe: still held, asked again when the host lets it go.
        fanout.plan([("a://1", Some(a))]);
        let plan = fanout.plan([]);
        assert_eq!(plan.steps, [unsubscribe("a", "a://1")]);
        fanout.failed(&plan.steps[0]);
        assert!(fanout.holds("a", "a://1"));
        assert_eq!(fanout.plan([]).steps, [unsubscribe("a", "a://1")]);
    }

    #[test]
    fn a_2026_server_holds_what_its_acknowledgement_honours() {
        let yes = caps(json!({"resources": {"subscribe": true}}));
        let m = owner("m", Era::Modern, &yes);
        let mut fanout = Fanout::default();
        fanout.plan([("m://1", Some(m)), ("m://2", Some(m))]);
        let refused = fanout.acknowledged("m", &json!({"resourceSubscriptions": ["m://1"]}));
        assert_eq!(
            refused,
            [Refused::NotHonoured {
                uri: "m://2".into(),
                server: "m".into()
            }]
        );
        assert!(refused[0].to_string().contains("without m://2"));
        assert!(fanout.holds("m", "m://1") && !fanout.holds("m", "m://2"));
        // The host refused m://2 keeps m://1: the stream stays as it is.
        assert!(fanout.plan([("m://1", Some(m))]).steps.is_empty());
        // An acknowledgement of a server that holds nothing refuses nothing.
        assert!(fanout.acknowledged("x", &json!({})).is_empty());
    }
}
