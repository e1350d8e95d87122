//! Discovery, in the order the MCP specification gives, as a state machine: it says
//! which document to GET next ([`Discovery::step`]), the shell fetches it and hands
//! back the answer ([`Discovery::on_response`]), until the authorization server is
//! known ([`Next::Done`]) or discovery fails for a reason worth telling
//! ([`Next::Failed`]).
//!
//! 1. **Protected resource metadata** (RFC 9728): the `resource_metadata` URL of the
//!    challenge when there is one, then the path-based well-known URL
//!    (`/.well-known/oauth-protected-resource/<path>`), then the root one. Every
//!    candidate is tried: a 404, a 5xx, a non-JSON 200 are misses, not the end.
//! 2. Its `resource` must name the MCP server (same origin, path prefix): a mismatch
//!    ends discovery before any authorization request is made.
//! 3. **Authorization server metadata** for the first of its `authorization_servers`:
//!    for an issuer with a path, RFC 8414 with the path inserted, OpenID Connect with
//!    the path inserted, OpenID Connect with the path appended; without a path, RFC
//!    8414 then OpenID Connect. The document's `issuer` must equal the identifier it
//!    was found from, as a string (2026-07-28; RFC 8414 §3.3): one that differs is
//!    not used.
//! 4. **2025-03-26 fallback**, when there is no resource metadata at all: the MCP
//!    server's origin is the authorization server; its metadata at the origin's
//!    well-known URL is used even when its `issuer` differs (that revision had no
//!    such rule; a note says so, except for the origin written with its root slash,
//!    `http://host/`, which the SDKs' servers send and which names the same server),
//!    and without metadata the default endpoints `/authorize`, `/token` and
//!    `/register` at the origin.

use url::Url;

use super::metadata::{origin, resource_allowed, ResourceMetadata, ServerMetadata};

/// Where the authorization server's metadata came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetadataSource {
    /// Found through the protected resource metadata, issuer checked.
    ResourceMetadata,
    /// 2025-03-26: the metadata at the MCP server's origin.
    LegacyOrigin,
    /// 2025-03-26: no metadata; the default endpoints at the origin.
    Defaults,
    /// The host named the metadata document itself.
    Configured,
}

/// What discovery found.
#[derive(Clone, Debug, PartialEq)]
pub struct Discovered {
    /// The `resource` to ask tokens for (RFC 8707): the PRM's `resource` verbatim, or
    /// the MCP server's canonical URI when there is no PRM.
    pub resource: String,
    /// The protected resource metadata, when the server has one.
    pub resource_metadata: Option<ResourceMetadata>,
    /// The authorization server's issuer identifier, exactly as recorded: the one
    /// the callback's `iss` must equal and credentials are keyed by.
    pub issuer: String,
    /// Its metadata (synthesized from the defaults when it has none).
    pub metadata: ServerMetadata,
    /// Where the metadata came from.
    pub source: MetadataSource,
    /// What a careful user would want to know (a fallback taken, a mismatch forgiven).
    pub notes: Vec<String>,
}

/// Why discovery failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// The PRM names another resource: authorizing would get a token for it.
    #[error("the protected resource metadata at {metadata_url} names the resource {resource:?}, which is not the MCP server {server}; refusing to authorize")]
    ResourceMismatch {
        /// The server.
        server: String,
        /// What the PRM said.
        resource: String,
        /// Where the PRM was.
        metadata_url: String,
    },
    /// The PRM lists no authorization server.
    #[error("the protected resource metadata at {metadata_url} lists no authorization server")]
    NoAuthorizationServer {
        /// Where the PRM was.
        metadata_url: String,
    },
    /// No metadata document of the authorization server could be used.
    #[error("no usable metadata for the authorization server {issuer} (tried {}){}", tried.join(", "), mismatch.as_ref().map(|m| format!("; {m}")).unwrap_or_default())]
    NoServerMetadata {
        /// The issuer.
        issuer: String,
        /// The URLs tried.
        tried: Vec<String>,
        /// A document that was found but named another issuer.
        mismatch: Option<String>,
    },
    /// An identifier is not a URL that can be fetched.
    #[error("{what} {value:?} is not an http(s) URL")]
    BadUrl {
        /// What it is.
        what: &'static str,
        /// The value.
        value: String,
    },
}

/// What to do next.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// GET this URL (`Accept: application/json`) and hand back the answer.
    Fetch(Url),
    /// Discovery is over.
    Done(Box<Discovered>),
    /// Discovery failed.
    Failed(DiscoveryError),
}

#[derive(Clone, Debug)]
enum Stage {
    Resource {
        candidates: Vec<Url>,
    },
    Server {
        prm: Option<(ResourceMetadata, String)>,
        issuer: String,
        candidates: Vec<Url>,
        legacy: bool,
        mismatch: Option<String>,
    },
    Over,
}

/// The discovery state machine. See the module documentation.
#[derive(Clone, Debug)]
pub struct Discovery {
    server: Url,
    stage: Stage,
    /// The URL whose answer is awaited.
    asked: Option<Url>,
    tried: Vec<String>,
    notes: Vec<String>,
    result: Option<Next>,
}

/// The well-known URL `suffix` for `url`, with its path inserted after it
/// (`https://h/.well-known/<suffix>/<path>`), or at the root when `path` is false.
fn well_known(url: &Url, suffix: &str, with_path: bool) -> Url {
    let mut u = url.clone();
    u.set_query(None);
    u.set_fragment(None);
    let path = url.path().trim_end_matches('/');
    if with_path && !path.is_empty() {
        u.set_path(&format!("/.well-known/{suffix}{path}"));
    } else {
        u.set_path(&format!("/.well-known/{suffix}"));
    }
    u
}

/// The metadata URLs of an issuer, in the order the specification gives.
pub fn server_metadata_candidates(issuer: &Url) -> Vec<Url> {
    let has_path = !issuer.path().trim_end_matches('/').is_empty();
    if has_path {
        let mut appended = issuer.clone();
        appended.set_query(None);
        appended.set_fragment(None);
        let path = issuer.path().trim_end_matches('/').to_owned();
        appended.set_path(&format!("{path}/.well-known/openid-configuration"));
        vec![
            well_known(issuer, "oauth-authorization-server", true),
            well_known(issuer, "openid-configuration", true),
            appended,
        ]
    } else {
        vec![
            well_known(issuer, "oauth-authorization-server", false),
            well_known(issuer, "openid-configuration", false),
        ]
    }
}

/// The PRM URLs for an MCP server: the challenge's, then path-based, then root.
pub fn resource_metadata_candidates(server: &Url, from_challenge: Option<&Url>) -> Vec<Url> {
    let mut out: Vec<Url> = from_challenge.into_iter().cloned().collect();
    for u in [
        well_known(server, "oauth-protected-resource", true),
        well_known(server, "oauth-protected-resource", false),
    ] {
        if !out.contains(&u) {
            out.push(u);
        }
    }
    out
}

fn http_url(s: &str) -> Option<Url> {
    Url::parse(s)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
}

impl Discovery {
    /// Discovery for the MCP server at `server`, from the `resource_metadata` URL of
    /// its challenge when it gave one.
    pub fn new(server: Url, resource_metadata: Option<&str>) -> Discovery {
        let mut notes = Vec::new();
        let hinted = resource_metadata.and_then(|s| {
            let parsed = http_url(s);
            if parsed.is_none() {
                notes.push(format!(
                    "the challenge's resource_metadata {s:?} is not an http(s) URL; using the well-known locations"
                ));
            }
            parsed
        });
        let candidates = resource_metadata_candidates(&server, hinted.as_ref());
        Discovery {
            server,
            stage: Stage::Resource { candidates },
            asked: None,
            tried: Vec::new(),
            notes,
            result: None,
        }
    }

    /// Discovery of an authorization server the host named (its issuer identifier):
    /// no resource metadata is read.
    pub fn for_issuer(server: Url, issuer: &str) -> Discovery {
        let mut d = Discovery::new(server, None);
        d.start_server(None, issuer.to_owned(), false);
        d
    }

    /// What to do next.
    pub fn step(&mut self) -> Next {
        if let Some(result) = self.result.clone() {
            return result;
        }
        let candidate = match &mut self.stage {
            Stage::Resource { candidates } | Stage::Server { candidates, .. } => {
                (!candidates.is_empty()).then(|| candidates.remove(0))
            }
            Stage::Over => None,
        };
        match candidate {
            Some(url) => {
                self.tried.push(url.to_string());
                self.asked = Some(url.clone());
                Next::Fetch(url)
            }
            None => {
                let exhausted = self.exhausted();
                match exhausted {
                    Some(result) => {
                        self.result = Some(result.clone());
                        result
                    }
                    None => self.step(),
                }
            }
        }
    }

    /// The answer to the last [`Next::Fetch`]: its status and body. A transport
    /// failure is `status` 0.
    pub fn on_response(&mut self, status: u16, body: &[u8]) {
        let Some(asked) = self.asked.take() else {
            return;
        };
        let ok = (200..300).contains(&status);
        match std::mem::replace(&mut self.stage, Stage::Over) {
            Stage::Resource { candidates } => {
                let prm = ok
                    .then(|| serde_json::from_slice::<ResourceMetadata>(body).ok())
                    .flatten();
                match prm {
                    Some(prm) => self.found_resource(prm, asked),
                    None => self.stage = Stage::Resource { candidates },
                }
            }
            Stage::Server {
                prm,
                issuer,
                candidates,
                legacy,
                mut mismatch,
            } => {
                let metadata = ok
                    .then(|| serde_json::from_slice::<ServerMetadata>(body).ok())
                    .flatten();
                if let Some(metadata) = metadata {
                    match metadata.issuer.as_deref() {
                        Some(found) if found == issuer => {
                            return self.done(prm, issuer, metadata, source(legacy));
                        }
                        Some(found) if legacy && found.strip_suffix('/') == Some(&issuer) => {
                            // The origin with its root slash: the same server.
                            let recorded = found.to_owned();
                            return self.done(prm, recorded, metadata, source(legacy));
                        }
                        Some(found) if legacy => {
                            self.notes.push(format!(
                                "the authorization server metadata at {asked} names the issuer {found:?}, not {issuer:?}; accepted on the 2025-03-26 fallback, which had no such rule"
                            ));
                            let recorded = found.to_owned();
                            return self.done(prm, recorded, metadata, source(legacy));
                        }
                        Some(found) => {
                            mismatch = Some(format!(
                                "{asked} names the issuer {found:?}, not {issuer:?}, and is not used"
                            ));
                        }
                        None => {
                            self.notes.push(format!(
                                "the authorization server metadata at {asked} has no issuer; assuming {issuer:?}"
                            ));
                            return self.done(prm, issuer, metadata, source(legacy));
                        }
                    }
                }
                self.stage = Stage::Server {
                    prm,
                    issuer,
                    candidates,
                    legacy,
                    mismatch,
                };
            }
            Stage::Over => {}
        }
    }

    fn found_resource(&mut self, prm: ResourceMetadata, at: Url) {
        if !resource_allowed(&self.server, &prm.resource) {
            self.result = Some(Next::Failed(DiscoveryError::ResourceMismatch {
                server: self.server.to_string(),
                resource: prm.resource.clone(),
                metadata_url: at.to_string(),
            }));
            return;
        }
        let Some(issuer) = prm.authorization_servers.first().cloned() else {
            self.result = Some(Next::Failed(DiscoveryError::NoAuthorizationServer {
                metadata_url: at.to_string(),
            }));
            return;
        };
        if prm.authorization_servers.len() > 1 {
            self.notes.push(format!(
                "the server trusts {} authorization servers; using the first, {issuer}",
                prm.authorization_servers.len()
            ));
        }
        self.start_server(Some((prm, at.to_string())), issuer, false);
    }

    fn start_server(
        &mut self,
        prm: Option<(ResourceMetadata, String)>,
        issuer: String,
        legacy: bool,
    ) {
        let Some(url) = http_url(&issuer) else {
            self.result = Some(Next::Failed(DiscoveryError::BadUrl {
                what: "the authorization server",
                value: issuer,
            }));
            return;
        };
        let candidates = server_metadata_candidates(&url);
        self.stage = Stage::Server {
            prm,
            issuer,
            candidates,
            legacy,
            mismatch: None,
        };
    }

    /// The current stage has no candidate left: what follows.
    fn exhausted(&mut self) -> Option<Next> {
        match std::mem::replace(&mut self.stage, Stage::Over) {
            Stage::Resource { .. } => {
                // No PRM anywhere: the 2025-03-26 rules, with the origin as the server.
                self.notes.push(format!(
                    "{} has no protected resource metadata; using its origin as the authorization server (2025-03-26)",
                    self.server
                ));
                let issuer = origin(&self.server);
                self.start_server(None, issuer, true);
                None
            }
            Stage::Server {
                prm,
                issuer,
                legacy: true,
                ..
            } => {
                self.notes.push(format!(
                    "no authorization server metadata at {issuer}; using the default endpoints /authorize, /token and /register"
                ));
                let metadata = ServerMetadata {
                    issuer: Some(issuer.clone()),
                    authorization_endpoint: Some(format!("{issuer}/authorize")),
                    token_endpoint: Some(format!("{issuer}/token")),
                    registration_endpoint: Some(format!("{issuer}/register")),
                    code_challenge_methods_supported: Some(vec!["S256".into()]),
                    response_types_supported: Some(vec!["code".into()]),
                    ..ServerMetadata::default()
                };
                self.done(prm, issuer, metadata, MetadataSource::Defaults);
                self.result.clone()
            }
            Stage::Server {
                issuer, mismatch, ..
            } => Some(Next::Failed(DiscoveryError::NoServerMetadata {
                issuer,
                tried: self.tried.clone(),
                mismatch,
            })),
            Stage::Over => self.result.clone(),
        }
    }

    fn done(
        &mut self,
        prm: Option<(ResourceMetadata, String)>,
        issuer: String,
        metadata: ServerMetadata,
        source: MetadataSource,
    ) {
        let resource = match &prm {
            Some((p, _)) => p.resource.clone(),
            None => super::metadata::canonical_resource(&self.server),
        };
        self.stage = Stage::Over;
        self.result = Some(Next::Done(Box::new(Discovered {
            resource,
            resource_metadata: prm.map(|(p, _)| p),
            issuer,
            metadata,
            source,
            notes: std::mem::take(&mut self.notes),
        })));
    }
}

fn source(legacy: bool) -> MetadataSource {
    if legacy {
        MetadataSource::LegacyOrigin
    } else {
        MetadataSource::ResourceMetadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    /// Runs discovery against `answers` (URL → body; any other URL is a 404).
    fn discover(server: &str, answers: &[(&str, &str)]) -> Next {
        let mut d = Discovery::new(u(server), None);
        loop {
            match d.step() {
                Next::Fetch(url) => match answers.iter().find(|(a, _)| *a == url.as_str()) {
                    Some((_, body)) => d.on_response(200, body.as_bytes()),
                    None => d.on_response(404, b""),
                },
                done => return done,
            }
        }
    }

    #[test]
    fn the_legacy_fallback_takes_the_origin_with_its_root_slash_without_a_note() {
        let slash = r#"{"issuer":"http://127.0.0.1:9/","authorization_endpoint":"http://127.0.0.1:9/authorize","token_endpoint":"http://127.0.0.1:9/token"}"#;
        let Next::Done(found) = discover(
            "http://127.0.0.1:9/mcp",
            &[(
                "http://127.0.0.1:9/.well-known/oauth-authorization-server",
                slash,
            )],
        ) else {
            panic!("discovery failed")
        };
        assert_eq!(found.issuer, "http://127.0.0.1:9/");
        assert_eq!(found.source, MetadataSource::LegacyOrigin);
        assert!(
            found.notes.iter().all(|n| !n.contains("names the issuer")),
            "{:?}",
            found.notes
        );
        // Another issuer is still accepted on that path, with a note.
        let other = slash.replace("http://127.0.0.1:9/\"", "http://127.0.0.1:9/oauth\"");
        let Next::Done(found) = discover(
            "http://127.0.0.1:9/mcp",
            &[(
                "http://127.0.0.1:9/.well-known/oauth-authorization-server",
                &other,
            )],
        ) else {
            panic!("discovery failed")
        };
        assert!(found.notes.iter().any(|n| n.contains("names the issuer")));
    }

    #[test]
    fn metadata_candidates_follow_the_specification() {
        let with_path: Vec<String> = server_metadata_candidates(&u("https://as.test/tenant1"))
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            with_path,
            [
                "https://as.test/.well-known/oauth-authorization-server/tenant1",
                "https://as.test/.well-known/openid-configuration/tenant1",
                "https://as.test/tenant1/.well-known/openid-configuration",
            ]
        );
        let root: Vec<String> = server_metadata_candidates(&u("https://as.test"))
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            root,
            [
                "https://as.test/.well-known/oauth-authorization-server",
                "https://as.test/.well-known/openid-configuration",
            ]
        );
        let prm: Vec<String> = resource_metadata_candidates(&u("https://mcp.test/a/mcp?x=1"), None)
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            prm,
            [
                "https://mcp.test/.well-known/oauth-protected-resource/a/mcp",
                "https://mcp.test/.well-known/oauth-protected-resource",
            ]
        );
    }
}
