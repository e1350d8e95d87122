//! One file per command. Each connects through [`Context`], does its work with the
//! library, and hands values to [`crate::output`].

pub mod audit;
pub mod auth;
pub mod bench;
pub mod bridge;
pub mod bridge_seal;
pub mod bridge_store;
pub mod config_host;
pub mod demo;
pub mod inspect;
pub mod pins;
pub mod prompts;
pub mod read;
pub mod resources;
pub mod servers;
pub mod shell;
pub mod skills;
pub mod tasks;
pub mod tools;
pub mod tools_all;
pub mod tools_show;
pub mod ui;
pub mod watch;

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

use capable::auth::{
    AuthMethod, CredentialStore, DpopMode, FileStore, Flow, LoginMode, MemoryStore, OAuthClient,
    OAuthConfig,
};
use capable::file::FileKind;
use capable::{ClientOptions, GatePolicy, HttpConfig, ServerCommand, Session, Tap};
use serde_json::Value;

use crate::exit::CliError;
use crate::flags::{Global, LoginFlag, ServerArgs};
use capable::config::{self, OAuthEntry, ServerTarget};

/// What every server command needs: the global flags, and the signals that stop it.
pub struct Context {
    pub global: Global,
    pub signals: crate::signals::Signals,
}

impl Context {
    /// Client options from the global flags.
    pub fn options(&self) -> ClientOptions {
        let progress_cap = self
            .global
            .progress_cap
            .unwrap_or(self.global.timeout.saturating_mul(10));
        let mut options = ClientOptions::default()
            .with_request_timeout(self.global.timeout)
            .with_progress_cap(progress_cap)
            .with_protocol(self.global.protocol);
        if self.global.lenient {
            options.config.gate_policy = GatePolicy::Lenient;
        }
        options.handlers = crate::elicit::handlers(&self.global);
        options.max_message_size = self.global.max_message;
        options.max_pages = self.global.max_pages.max(1);
        options.max_list_items = self.global.max_items;
        if self.global.trace {
            options.tap = Some(Tap::new(|dir, line| {
                let arrow = match dir {
                    capable::Direction::Sent => '>',
                    capable::Direction::Received => '<',
                };
                let text = String::from_utf8_lossy(line);
                let shown = crate::output::one_line(&crate::secrets::scrub(&text), 4000);
                let _ = writeln!(std::io::stderr().lock(), "{arrow} {shown}");
            }));
        }
        options
    }

    /// The server the user named: a command after `--`, `--url URL`, or `--server NAME`.
    pub fn target(&self, args: &ServerArgs) -> Result<ServerTarget, CliError> {
        let given = [
            self.global.server.is_some(),
            self.global.url.is_some(),
            !args.command.is_empty(),
        ];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err(CliError::Usage(
                "give one server: a command after `--`, --url URL, or --server NAME".into(),
            ));
        }
        if let Some(name) = &self.global.server {
            let target = config::find_server(name, self.global.config.as_deref())?;
            crate::secrets::keep_target(&target);
            return Ok(target);
        }
        if let Some(url) = &self.global.url {
            let target = ServerTarget::Http {
                url: url.clone(),
                headers: Vec::new(),
                oauth: None,
            };
            crate::secrets::keep_target(&target);
            return Ok(target);
        }
        match args.command.split_first() {
            Some((program, rest)) => Ok(ServerTarget::Stdio(ServerCommand::new(
                program.clone(),
                rest.iter().cloned(),
            ))),
            None => Err(CliError::Usage(
                "no server: give a stdio command after `--` (capable inspect -- node server.js), --url URL or --server NAME"
                    .into(),
            )),
        }
    }

    /// The on-disk cache of the server the user named (see [`crate::disk_cache`]).
    pub fn cache(&self, args: &ServerArgs) -> Result<crate::disk_cache::ServerCache, CliError> {
        use crate::disk_cache::{ServerCache, Use};
        let mode = match (self.global.no_cache, self.global.refresh) {
            (true, _) => Use::Off,
            (false, true) => Use::Refresh,
            (false, false) => Use::Normal,
        };
        Ok(ServerCache::new(
            &self.target(args)?,
            &self.global.headers,
            mode,
        ))
    }

    /// Connects to the server the user named. A signal during the handshake stops it
    /// (the half-started server's process group is killed as the transport is dropped).
    pub async fn connect(&self, args: &ServerArgs) -> Result<Session, CliError> {
        self.connect_with(args, self.options()).await
    }

    /// Connects with options the command adjusted (e.g. an extra tap).
    pub async fn connect_with(
        &self,
        args: &ServerArgs,
        options: ClientOptions,
    ) -> Result<Session, CliError> {
        tokio::select! {
            connected = self.connect_target(args, options) => connected,
            signal = self.signals.received() => Err(CliError::Interrupted(signal)),
        }
    }

    async fn connect_target(
        &self,
        args: &ServerArgs,
        options: ClientOptions,
    ) -> Result<Session, CliError> {
        match self.target(args)? {
            ServerTarget::Stdio(mut command) => {
                command.inherit_env = self.global.inherit_env;
                Ok(capable::connect_stdio(&command, options).await?)
            }
            ServerTarget::Http {
                url,
                headers,
                oauth,
            } => {
                let parsed = reqwest_url(&url)?;
                let mut config = HttpConfig::new(parsed.clone());
                config.headers = headers;
                config.headers.extend(self.global.headers.iter().cloned());
                if !config.has_own_authorization() {
                    let mode = self.login_mode(false);
                    config.oauth = Some(Arc::new(self.oauth(&parsed, oauth.as_deref(), mode)?));
                }
                Ok(capable::connect_http(config, options).await?)
            }
        }
    }

    /// How to log in: `--login`, where `auto` is the browser on a terminal, the device
    /// grant on a remote terminal with no browser of its own, and nothing elsewhere
    /// (`explicit`: the user ran `capable auth login`).
    pub fn login_mode(&self, explicit: bool) -> LoginMode {
        let terminal =
            std::io::stderr().is_terminal() && (explicit || std::io::stdin().is_terminal());
        match self.global.auth.login {
            LoginFlag::Auto if terminal && remote_without_browser(&|k| std::env::var_os(k)) => {
                LoginMode::Device
            }
            LoginFlag::Auto if terminal => LoginMode::Browser,
            LoginFlag::Auto | LoginFlag::Never => LoginMode::Never,
            LoginFlag::Browser => LoginMode::Browser,
            LoginFlag::Paste => LoginMode::Paste,
            LoginFlag::Headless => LoginMode::Headless,
            LoginFlag::Device => LoginMode::Device,
        }
    }

    /// Where tokens are kept: `--token-store`, else the user's config directory.
    pub fn token_store(&self) -> Arc<dyn CredentialStore> {
        if let Some(path) = &self.global.auth.token_store {
            return Arc::new(FileStore::new(path.clone()));
        }
        match config::config_home() {
            Some(dir) => Arc::new(FileStore::new(dir.join("capable").join("credentials.json"))),
            None => Arc::new(MemoryStore::new()),
        }
    }

    /// OAuth for the server at `url`, from its config entry and the flags (flags win).
    pub fn oauth(
        &self,
        url: &capable::transport::http::Url,
        entry: Option<&OAuthEntry>,
        mode: LoginMode,
    ) -> Result<OAuthClient, CliError> {
        let flags = &self.global.auth;
        let entry = entry.cloned().unwrap_or_default();
        let mut config = OAuthConfig::new(self.token_store());
        config.mode = mode;
        config.client.client_id = flags.client_id.clone().or(entry.client_id);
        config.client.client_secret = flags.client_secret.clone().or(entry.client_secret);
        config.client.metadata_url = flags
            .client_metadata_url
            .clone()
            .or(entry.client_metadata_url);
        config.scopes = if flags.scopes.is_empty() {
            entry.scopes
        } else {
            flags.scopes.clone()
        };
        config.callback_port = flags.callback_port.or(entry.callback_port);
        config.redirect_uri = flags.redirect_uri.clone().or(entry.redirect_uri);
        if config.callback_port.is_some() && config.redirect_uri.is_some() {
            return Err(CliError::Usage(
                "give the redirect's port (callbackPort, --callback-port) or the whole redirect URI (redirectUri, --redirect-uri), not both".into(),
            ));
        }
        let method = match flags.token_endpoint_auth_method.as_deref() {
            Some("basic") => Some("client_secret_basic".to_owned()),
            Some("post") => Some("client_secret_post".to_owned()),
            given => given.map(str::to_owned),
        }
        .or(entry.token_endpoint_auth_method);
        config.client.auth_method = match method.as_deref() {
            None => None,
            Some(m) => Some(AuthMethod::parse(m).ok_or_else(|| {
                CliError::Usage(format!(
                    "oauth.tokenEndpointAuthMethod must be client_secret_basic, client_secret_post, none or private_key_jwt, not {m:?}"
                ))
            })?),
        };
        config.authorization_params = entry.authorization_params.into_iter().collect();
        capable::internal::auth::authorize::check_extra_params(&config.authorization_params)
            .map_err(|e| CliError::Usage(format!("oauth.authorizationParams: {e}")))?;
        config.send_resource = entry.send_resource.unwrap_or(true);
        config.issuer = entry.issuer;
        config.timeout = self.global.timeout.min(std::time::Duration::from_secs(60));
        config.private_key_pem = read_inline_or_file(
            entry.private_key_pem,
            entry.private_key_file.as_deref(),
            "privateKeyFile",
        )?;
        config.dpop = match entry.dpop.as_deref() {
            None | Some("auto") => DpopMode::Auto,
            Some("always") => DpopMode::Always,
            Some("never") => DpopMode::Never,
            Some(other) => {
                return Err(CliError::Usage(format!(
                    "oauth.dpop must be auto, always or never, not {other:?}"
                )))
            }
        };
        config.flow = match entry.grant.as_deref() {
            None | Some("authorization_code") => Flow::AuthorizationCode,
            Some("client_credentials") => Flow::ClientCredentials,
            Some("workload_identity") => Flow::WorkloadIdentity {
                assertion: read_inline_or_file(entry.assertion, entry.assertion_file.as_deref(), "assertionFile")?
                    .ok_or_else(|| CliError::Usage("oauth.grant workload_identity needs `assertion` or `assertionFile`".into()))?
                    .trim()
                    .to_owned(),
            },
            Some("enterprise") => {
                let idp = entry.idp.ok_or_else(|| CliError::Usage("oauth.grant enterprise needs `idp`".into()))?;
                Flow::Enterprise {
                    id_token: read_inline_or_file(idp.id_token, idp.id_token_file.as_deref(), "idp.idTokenFile")?
                        .ok_or_else(|| CliError::Usage("oauth.idp needs `idToken` or `idTokenFile`".into()))?
                        .trim()
                        .to_owned(),
                    idp_token_endpoint: idp.token_endpoint,
                    idp_client_id: idp.client_id,
                    idp_client_secret: idp.client_secret,
                    access_token: false,
                }
            }
            Some(other) => return Err(CliError::Usage(format!(
                "oauth.grant must be authorization_code, client_credentials, workload_identity or enterprise, not {other:?}"
            ))),
        };
        config.prompt = Some(Arc::new(|message: &str| {
            let _ = writeln!(
                std::io::stderr().lock(),
                "{}",
                crate::secrets::scrub(message)
            );
        }));
        Ok(OAuthClient::new(url.clone(), config)?)
    }

    /// OAuth for the HTTP servers of a host (`servers`, `tools --all`, `ui`): the same
    /// clients and token store as a single server's, but never a login of their own —
    /// a host checks many servers at once, so each uses the token `capable auth login`
    /// stored (refreshed when due) or is refused with its 401.
    pub fn host_oauth(&self) -> capable::host::OAuthProvider {
        let ctx = Context {
            global: self.global.clone(),
            signals: self.signals.clone(),
        };
        capable::host::OAuthProvider::new(move |url, entry| {
            match ctx.oauth(url, entry, LoginMode::Never) {
                Ok(client) => Ok(Some(Arc::new(client))),
                Err(CliError::Client(e)) => Err(e),
                Err(e) => Err(capable::Error::InvalidOptions(e.to_string())),
            }
        })
    }

    /// The HTTP server the user named, with its OAuth settings.
    pub fn http_target(
        &self,
    ) -> Result<(capable::transport::http::Url, Option<OAuthEntry>), CliError> {
        match self.target(&ServerArgs::default())? {
            ServerTarget::Http { url, oauth, .. } => Ok((reqwest_url(&url)?, oauth.map(|o| *o))),
            ServerTarget::Stdio(_) => Err(CliError::Usage(
                "authorization is for HTTP servers: give --url URL or --server NAME of an HTTP entry".into(),
            )),
        }
    }
}

/// A secret given inline or in a file.
fn read_inline_or_file(
    inline: Option<String>,
    file: Option<&str>,
    what: &str,
) -> Result<Option<String>, CliError> {
    match (inline, file) {
        (Some(v), _) => Ok(Some(v)),
        (None, Some(path)) => {
            read_file(Path::new(path), FileKind::Secret, &format!("oauth.{what}")).map(Some)
        }
        (None, None) => Ok(None),
    }
}

fn reqwest_url(url: &str) -> Result<capable::transport::http::Url, CliError> {
    let parsed = capable::transport::http::Url::parse(url).map_err(|e| {
        let shown = capable::internal::http::redact::redact_unparsed(url);
        CliError::Usage(format!("{shown:?} is not a URL: {e}"))
    })?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed),
        other => Err(CliError::Usage(format!(
            "{:?}: the scheme must be http or https, not {other}",
            capable::internal::http::redact::redact(&parsed)
        ))),
    }
}

/// Reads a file the user named, as text, within its kind's bounds
/// ([`capable::file`]); `what` names it in errors (`--args`, `oauth.privateKeyFile`).
pub fn read_file(path: &Path, kind: FileKind, what: &str) -> Result<String, CliError> {
    capable::file::read_to_string(path, kind).map_err(|error| CliError::File {
        what: what.to_owned(),
        error,
    })
}

/// Parses a `--args` JSON object, given inline or as `@FILE`.
pub fn parse_args(text: &str) -> Result<serde_json::Map<String, Value>, CliError> {
    let read;
    let text = match text.strip_prefix('@') {
        Some(path) => {
            read = read_file(Path::new(path), FileKind::Arguments, "--args")?;
            &read
        }
        None => text,
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(CliError::Usage(format!(
            "--args must be a JSON object, not {other}"
        ))),
        Err(e) => Err(CliError::Usage(format!("--args is not valid JSON: {e}"))),
    }
}

/// Runs `work` on a connected session and closes it in order whatever happens — the
/// work's end, its failure, or a signal (which stops the work where it is).
pub async fn with_session<T>(
    ctx: &Context,
    session: Session,
    work: impl AsyncFnOnce(&Session) -> Result<T, CliError>,
) -> Result<T, CliError> {
    let result = tokio::select! {
        done = work(&session) => done,
        signal = ctx.signals.received() => Err(CliError::Interrupted(signal)),
    };
    session.close().await;
    result
}

/// Whether this is a remote login (SSH) with no display of its own: no X or Wayland
/// forwarding and no `$BROWSER`. A browser opened here could not be seen, and the
/// person's browser, on their own machine, cannot reach this machine's loopback
/// redirect; the device grant needs neither (the login falls back to pasting the
/// address where the authorization server offers no device grant).
fn remote_without_browser(env: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> bool {
    let set = |k: &str| env(k).is_some_and(|v| !v.is_empty());
    (set("SSH_CONNECTION") || set("SSH_TTY"))
        && !set("DISPLAY")
        && !set("WAYLAND_DISPLAY")
        && !set("BROWSER")
}

#[cfg(test)]
mod tests {
    use super::remote_without_browser;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<std::ffi::OsString> + 'a {
        move |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.into())
    }

    #[test]
    fn a_remote_terminal_without_a_display_or_browser_logs_in_by_device() {
        let ssh = ("SSH_CONNECTION", "10.0.0.2 52114 10.0.0.1 22");
        assert!(remote_without_browser(&env(&[ssh])));
        assert!(remote_without_browser(&env(&[("SSH_TTY", "/dev/pts/3")])));
        // Forwarded X or Wayland, or a browser named by the user: the browser login.
        assert!(!remote_without_browser(&env(&[
            ssh,
            ("DISPLAY", "localhost:10.0")
        ])));
        assert!(!remote_without_browser(&env(&[
            ssh,
            ("WAYLAND_DISPLAY", "wayland-0")
        ])));
        assert!(!remote_without_browser(&env(&[ssh, ("BROWSER", "w3m")])));
        // Not remote at all, or set but empty.
        assert!(!remote_without_browser(&env(&[])));
        assert!(!remote_without_browser(&env(&[("SSH_CONNECTION", "")])));
    }
}
