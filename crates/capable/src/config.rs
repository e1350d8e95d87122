//! Reading the MCP config files people already have.
//!
//! Two shapes are understood: `{"mcpServers": {NAME: {...}}}` (Claude Desktop, Claude
//! Code's `.mcp.json`, Cursor, the MCP Inspector) and VS Code's `{"servers": {NAME:
//! {...}}}`. A stdio entry has `command`, `args`, `env` and optionally `cwd`; `${VAR}`
//! and `${VAR:-default}` are expanded from the environment in every string.
//!
//! An HTTP entry may carry `oauth` settings (every key optional):
//!
//! ```json
//! {"mcpServers": {"remote": {"url": "https://mcp.example/mcp", "oauth": {
//!   "clientId": "…", "clientSecret": "${SECRET}", "clientMetadataUrl": "https://app.example/client.json",
//!   "scopes": ["mcp:read"], "callbackPort": 8976, "issuer": "https://auth.example",
//!   "redirectUri": "http://localhost:8080/oauth/callback", "tokenEndpointAuthMethod": "client_secret_post",
//!   "authorizationParams": {"audience": "https://api.example"}, "sendResource": false,
//!   "grant": "authorization_code | client_credentials | workload_identity | enterprise",
//!   "privateKeyFile": "key.pem", "assertionFile": "workload.jwt", "dpop": "auto | always | never",
//!   "idp": {"tokenEndpoint": "…", "clientId": "…", "clientSecret": "…", "idTokenFile": "id.jwt"}}}}}
//! ```
//!
//! `privateKeyPem`, `assertion` and `idp.idToken` give the same values inline.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use capable::ServerCommand;

use crate::file::{self, FileError, FileKind};

mod access;
mod credentials;
mod policy;
mod store;

pub use access::{Access, GatewayPolicy, RateLimit, Rule};
pub use credentials::{Credentials, ExchangeIdp};
pub use policy::ServerPolicy;
pub use store::{PasswordFrom, StoreConfig, WhenDown};

/// A configured server: a stdio command or an HTTP endpoint.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerTarget {
    /// Started as a child process.
    Stdio(ServerCommand),
    /// Reached over HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// OAuth settings.
        oauth: Option<Box<OAuthEntry>>,
    },
}

/// The `oauth` object of an HTTP entry (values expanded).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OAuthEntry {
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret.
    pub client_secret: Option<String>,
    /// A client ID metadata document URL.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The loopback port of the redirect URI.
    pub callback_port: Option<u16>,
    /// The whole redirect URI, for a client registered with a fixed one.
    pub redirect_uri: Option<String>,
    /// `client_secret_basic`, `client_secret_post`, `none` or `private_key_jwt`.
    pub token_endpoint_auth_method: Option<String>,
    /// Extra authorization request parameters (`{"audience": "…"}`).
    #[serde(default)]
    pub authorization_params: BTreeMap<String, String>,
    /// `false` leaves the RFC 8707 `resource` parameter out.
    pub send_resource: Option<bool>,
    /// The authorization server's issuer (skips the protected resource metadata).
    pub issuer: Option<String>,
    /// `authorization_code` (default), `client_credentials`, `workload_identity`,
    /// `enterprise`.
    pub grant: Option<String>,
    /// A PKCS#8 PEM key for `private_key_jwt`, inline or from a file.
    pub private_key_pem: Option<String>,
    /// The key's file.
    pub private_key_file: Option<String>,
    /// A workload identity JWT, inline or from a file.
    pub assertion: Option<String>,
    /// The JWT's file.
    pub assertion_file: Option<String>,
    /// `auto`, `always`, `never`.
    pub dpop: Option<String>,
    /// Enterprise-managed authorization: the identity provider.
    pub idp: Option<IdpEntry>,
}

/// The identity provider of enterprise-managed authorization.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IdpEntry {
    /// Its token endpoint.
    pub token_endpoint: String,
    /// The client id there.
    pub client_id: String,
    /// Its secret.
    pub client_secret: Option<String>,
    /// The user's ID token, inline or from a file.
    pub id_token: Option<String>,
    /// The token's file.
    pub id_token_file: Option<String>,
}

impl OAuthEntry {
    fn expand(
        mut self,
        expand: &dyn Fn(&str) -> Result<String, ConfigError>,
    ) -> Result<Self, ConfigError> {
        let each = |v: &mut Option<String>| -> Result<(), ConfigError> {
            if let Some(s) = v.as_mut() {
                *s = expand(s)?;
            }
            Ok(())
        };
        for v in [
            &mut self.client_id,
            &mut self.client_secret,
            &mut self.client_metadata_url,
            &mut self.issuer,
            &mut self.redirect_uri,
            &mut self.token_endpoint_auth_method,
            &mut self.grant,
            &mut self.private_key_pem,
            &mut self.private_key_file,
            &mut self.assertion,
            &mut self.assertion_file,
            &mut self.dpop,
        ] {
            each(v)?;
        }
        for s in &mut self.scopes {
            *s = expand(s)?;
        }
        for v in self.authorization_params.values_mut() {
            *v = expand(v)?;
        }
        if let Some(idp) = self.idp.as_mut() {
            idp.token_endpoint = expand(&idp.token_endpoint)?;
            idp.client_id = expand(&idp.client_id)?;
            for v in [
                &mut idp.client_secret,
                &mut idp.id_token,
                &mut idp.id_token_file,
            ] {
                each(v)?;
            }
        }
        Ok(self)
    }
}
use serde::Deserialize;
use serde_json::Value;

/// Why a configured server could not be found or used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No config file was given and none was found.
    #[error("no MCP config file found; looked in: {}", looked.join(", "))]
    NoFile {
        /// Where it looked.
        looked: Vec<String>,
    },
    /// The file is not one capable reads (a FIFO, a device, a directory, a symlink
    /// loop, larger than a config may be): nothing of it was read.
    #[error("cannot read the config {0}")]
    Refused(file::Refused),
    /// The file could not be read or parsed.
    #[error("cannot read {path}: {detail}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        detail: String,
    },
    /// The file has no server by that name.
    #[error("{path} has no server named {name:?}; it has: {}", if known.is_empty() { "none".to_string() } else { known.join(", ") })]
    UnknownServer {
        /// The file.
        path: String,
        /// The name asked for.
        name: String,
        /// The names it has.
        known: Vec<String>,
    },
    /// A `${VAR}` with no value and no default.
    #[error("{path}: server {name:?} uses ${{{var}}}, which is not set")]
    UnsetVariable {
        /// The file.
        path: String,
        /// The server.
        name: String,
        /// The variable.
        var: String,
    },
    /// The entry is not a stdio server this build can start.
    #[error("{path}: server {name:?} {detail}")]
    Unsupported {
        /// The file.
        path: String,
        /// The server.
        name: String,
        /// What is missing.
        detail: String,
    },
}

#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    oauth: Option<OAuthEntry>,
}

/// The user's config directory (`$XDG_CONFIG_HOME`, else `~/.config`).
pub fn config_home() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
}

/// The files searched when `--config` is not given, in order.
pub fn default_locations() -> Vec<PathBuf> {
    let mut paths = vec![
        PathBuf::from(".mcp.json"),
        PathBuf::from(".vscode/mcp.json"),
    ];
    if let Some(dir) = config_home() {
        paths.push(dir.join("capable").join("mcp.json"));
    }
    paths
}

/// Finds server `name` in `file`, or in the default locations.
pub fn find_server(name: &str, file: Option<&Path>) -> Result<ServerTarget, ConfigError> {
    let (text, shown) = read(file)?;
    server_from_text(&text, name, &shown, &|var| std::env::var(var).ok())
}

/// The config file to read: `file`, or the first of [`default_locations`] that
/// exists (whatever it is: a FIFO or a directory there is refused, not passed over).
/// Its text and its path as shown in errors.
fn read(file: Option<&Path>) -> Result<(String, String), ConfigError> {
    let path = match file {
        Some(p) => p.to_path_buf(),
        None => {
            let candidates = default_locations();
            match candidates.iter().find(|p| p.symlink_metadata().is_ok()) {
                Some(p) => p.clone(),
                None => {
                    return Err(ConfigError::NoFile {
                        looked: candidates.iter().map(|p| p.display().to_string()).collect(),
                    })
                }
            }
        }
    };
    let shown = path.display().to_string();
    let text = file::read_to_string(&path, FileKind::Config).map_err(|e| match e {
        FileError::Refused(refused) => ConfigError::Refused(refused),
        FileError::Io { source, .. } => ConfigError::Unreadable {
            path: shown.clone(),
            detail: source.to_string(),
        },
    })?;
    Ok((text, shown))
}

/// The server entries of a config document, in the file's order.
fn servers_of(text: &str, path: &str) -> Result<serde_json::Map<String, Value>, ConfigError> {
    let doc: Value = serde_json::from_str(text).map_err(|e| ConfigError::Unreadable {
        path: path.into(),
        detail: e.to_string(),
    })?;
    let servers = doc
        .get("mcpServers")
        .or_else(|| doc.get("servers"))
        .and_then(Value::as_object);
    let Some(servers) = servers else {
        return Err(ConfigError::Unreadable {
            path: path.into(),
            detail: "neither `mcpServers` nor `servers` is an object".into(),
        });
    };
    Ok(servers.clone())
}

/// The `gateway` section of a config document: a mistake in it makes the file
/// unreadable (its rules and limits are never silently dropped).
fn gateway_of(text: &str, path: &str) -> Result<GatewayPolicy, ConfigError> {
    let doc: Value = serde_json::from_str(text).map_err(|e| ConfigError::Unreadable {
        path: path.into(),
        detail: e.to_string(),
    })?;
    access::gateway(&doc).map_err(|detail| ConfigError::Unreadable {
        path: path.into(),
        detail,
    })
}

/// Finds server `name` in a config document (`lookup` resolves `${VAR}`).
pub fn server_from_text(
    text: &str,
    name: &str,
    path: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerTarget, ConfigError> {
    let servers = servers_of(text, path)?;
    let Some(raw) = servers.get(name) else {
        return Err(ConfigError::UnknownServer {
            path: path.into(),
            name: name.into(),
            known: servers.keys().cloned().collect(),
        });
    };
    entry_with_policy(name, raw, path, lookup).map(|(target, _)| target)
}

/// One entry of a config document and the policy it sets: an entry whose policy
/// fields are malformed is as broken as one without `command` or `url`, whether the
/// whole file is read or the entry is looked up by name.
fn entry_with_policy(
    name: &str,
    raw: &Value,
    path: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(ServerTarget, Option<ServerPolicy>), ConfigError> {
    let target = entry_target(name, raw, path, lookup)?;
    let unsupported = |detail| ConfigError::Unsupported {
        path: path.into(),
        name: name.into(),
        detail,
    };
    let mut policy = policy::read(raw).map_err(unsupported)?;
    let per_replica = policy.as_ref().and_then(|p| p.per_replica);
    if per_replica.is_some() && matches!(target, ServerTarget::Http { .. }) {
        return Err(unsupported(
            "has `perReplica`, which is for servers the gateway runs (every replica reaches \
             the same HTTP server)"
                .into(),
        ));
    }
    if let Some(credentials) = policy.as_mut().and_then(|p| p.credentials.take()) {
        if matches!(target, ServerTarget::Stdio(_)) {
            return Err(unsupported(
                "has `credentials`, which are for HTTP servers (a command gets none)".into(),
            ));
        }
        let expand = |s: &str| {
            expand_vars(s, lookup).map_err(|var| ConfigError::UnsetVariable {
                path: path.into(),
                name: name.into(),
                var,
            })
        };
        let credentials = credentials.expand(&expand)?;
        if let Some(policy) = policy.as_mut() {
            policy.credentials = Some(credentials);
        }
    }
    Ok((target, policy))
}

/// One entry of a config document as a server to start or reach.
fn entry_target(
    name: &str,
    raw: &Value,
    path: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerTarget, ConfigError> {
    // An entry is an object: serde would read a struct from an array too, field by
    // field, and `["node"]` would start `node`.
    if !raw.is_object() {
        return Err(ConfigError::Unreadable {
            path: path.into(),
            detail: format!("server {name:?}: an entry is an object, not {raw}"),
        });
    }
    let entry: Entry =
        serde_json::from_value(raw.clone()).map_err(|e| ConfigError::Unreadable {
            path: path.into(),
            detail: format!("server {name:?}: {e}"),
        })?;
    let expand = |s: &str| {
        expand_vars(s, lookup).map_err(|var| ConfigError::UnsetVariable {
            path: path.into(),
            name: name.into(),
            var,
        })
    };
    let http_kind = matches!(
        entry.kind.as_deref(),
        Some("http" | "sse" | "streamable-http" | "streamableHttp")
    );
    if let (Some(url), true) = (&entry.url, entry.command.is_none() || http_kind) {
        return Ok(ServerTarget::Http {
            url: expand(url)?,
            headers: entry
                .headers
                .iter()
                .map(|(k, v)| {
                    let v = expand(v)?;
                    capable::internal::http::redact::check_header(k, &v).map_err(|detail| {
                        ConfigError::Unsupported {
                            path: path.into(),
                            name: name.into(),
                            detail,
                        }
                    })?;
                    Ok((k.clone(), v))
                })
                .collect::<Result<_, ConfigError>>()?,
            oauth: entry
                .oauth
                .clone()
                .map(|o| o.expand(&expand).map(Box::new))
                .transpose()?,
        });
    }
    let Some(command) = entry.command.as_deref() else {
        return Err(ConfigError::Unsupported {
            path: path.into(),
            name: name.into(),
            detail: "has neither `command` nor `url`".into(),
        });
    };
    Ok(ServerTarget::Stdio(ServerCommand {
        program: expand(command)?,
        args: entry
            .args
            .iter()
            .map(|a| expand(a))
            .collect::<Result<_, _>>()?,
        env: entry
            .env
            .iter()
            .map(|(k, v)| Ok((k.clone(), expand(v)?)))
            .collect::<Result<_, ConfigError>>()?,
        cwd: entry
            .cwd
            .as_deref()
            .map(expand)
            .transpose()?
            .map(PathBuf::from),
        inherit_env: false,
    }))
}

/// Expands `${VAR}` and `${VAR:-default}`; returns the name of an unset variable.
pub fn expand_vars(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        match lookup(var).or_else(|| default.map(str::to_owned)) {
            Some(value) => out.push_str(&value),
            None => return Err(var.to_owned()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A whole config file: every server it names, each usable or not. A broken entry
/// (an unset `${VAR}`, neither `command` nor `url`) is kept with its error, next to
/// the others: one bad line never hides the rest of a file.
///
/// ```
/// use capable::config::{ConfigFile, ServerTarget};
///
/// let text = r#"{"mcpServers": {
///     "docs": {"command": "node", "args": ["docs.js"]},
///     "remote": {"type": "http", "url": "https://mcp.example/mcp"},
///     "broken": {"args": ["no command"]}
/// }}"#;
/// let file = ConfigFile::from_text(text, ".mcp.json", &|_| None).unwrap();
/// let names: Vec<&str> = file.servers.iter().map(|e| e.name.as_str()).collect();
/// assert_eq!(names, ["docs", "remote", "broken"]);
/// assert!(matches!(file.servers[1].target, Ok(ServerTarget::Http { .. })));
/// assert!(file.servers[2].target.is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigFile {
    /// The file, as shown in errors.
    pub path: String,
    /// Its servers, in the file's order.
    pub servers: Vec<ConfigEntry>,
    /// What a host that serves them as one (`capable bridge --config`) applies to each,
    /// by server name: the entries' `disabled`, `allowTools`, `denyTools`, `timeout`
    /// and `outputBudget`, `access` and `rateLimit` (a server with none of them has none
    /// here).
    pub policies: BTreeMap<String, ServerPolicy>,
    /// The file's `gateway` section: where callers' groups are read from, each caller's
    /// limit across every server.
    pub gateway: GatewayPolicy,
}

/// One server of a [`ConfigFile`].
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigEntry {
    /// Its name (the key in `mcpServers` or `servers`).
    pub name: String,
    /// What to start or reach, or why the entry cannot be used.
    pub target: Result<ServerTarget, ConfigError>,
}

impl ConfigFile {
    /// Reads `file`, or the first of [`default_locations`] that exists, expanding
    /// `${VAR}` from the environment. Fails only when there is no file or it is no
    /// config at all; a broken entry is kept with its error.
    pub fn load(file: Option<&Path>) -> Result<ConfigFile, ConfigError> {
        let (text, shown) = read(file)?;
        ConfigFile::from_text(&text, &shown, &|var| std::env::var(var).ok())
    }

    /// Reads a config document (`lookup` resolves `${VAR}`); `path` names it in errors.
    pub fn from_text(
        text: &str,
        path: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ConfigFile, ConfigError> {
        let raw = servers_of(text, path)?;
        let gateway = gateway_of(text, path)?;
        let mut policies = BTreeMap::new();
        let servers = raw
            .iter()
            .map(|(name, raw)| {
                let target = entry_with_policy(name, raw, path, lookup).map(|(target, policy)| {
                    if let Some(policy) = policy {
                        policies.insert(name.clone(), policy);
                    }
                    target
                });
                ConfigEntry {
                    name: name.clone(),
                    target,
                }
            })
            .collect();
        Ok(ConfigFile {
            path: path.into(),
            policies,
            servers,
            gateway,
        })
    }
}

#[cfg(test)]
mod tests;
