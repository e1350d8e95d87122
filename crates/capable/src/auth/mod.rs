//! OAuth 2.1 authorization for HTTP servers: the I/O of what the core's
//! [`capable_core::internal::auth`] decides.
//!
//! An [`OAuthClient`] stands for one MCP server. Given to a connection
//! ([`HttpConfig::oauth`](crate::HttpConfig::oauth)), it presents the stored token on
//! every request to the server's origin (never anywhere else), refreshes it a minute
//! before it expires, and answers a 401 or 403 `insufficient_scope` on any request —
//! at connect time or mid-session, on a message or the long-lived GET stream — by
//! refreshing, authorizing or stepping up; the refused request is then replayed once.
//! A host may also use it on its own: [`OAuthClient::login`] (or
//! [`OAuthClient::login_via`], the redirect received by the host's own server),
//! [`OAuthClient::status`], [`OAuthClient::logout`], [`OAuthClient::access_token`].
//!
//! ```no_run
//! # async fn f() -> Result<(), capable::Error> {
//! use std::sync::Arc;
//! use capable::auth::{FileStore, LoginMode, OAuthClient, OAuthConfig};
//! use capable::{connect_http, ClientOptions, HttpConfig};
//!
//! let url: capable::transport::http::Url = "https://mcp.example.com/mcp".parse().unwrap();
//! let mut oauth = OAuthConfig::new(Arc::new(FileStore::new("/home/me/.config/app/credentials.json")));
//! oauth.mode = LoginMode::Browser;
//! let mut config = HttpConfig::new(url.clone());
//! config.oauth = Some(Arc::new(OAuthClient::new(url, oauth)?));
//! let session = connect_http(config, ClientOptions::default()).await?;
//! # session.close().await; Ok(()) }
//! ```
//!
//! | file | concern |
//! |---|---|
//! | `mod.rs` | configuration, errors |
//! | `client.rs` | [`OAuthClient`]: its state, what a connection and a host ask of it |
//! | `flows.rs` | discovery, the grants, token requests, refresh |
//! | `login.rs` | the grants a user approves: the code flow, the device flow |
//! | `code.rs` | the three ways to get an authorization code |
//! | `store.rs` | [`CredentialStore`], [`FileStore`], [`MemoryStore`] |
//! | `wire.rs` | the authorization server's HTTP calls |
//! | `keys.rs` | ES256 keys, signatures, randomness, the wall clock |
//!
//! Secrets — tokens, refresh tokens, client secrets, codes, verifiers, keys — are
//! never logged, never in an error message, never in a URL, and every header that
//! carries one is marked sensitive.

mod client;
mod code;
mod flows;
mod keys;
mod login;
pub mod store;
mod wire;

use std::sync::Arc;
use std::time::Duration;

// The core's OAuth types this module's API names, re-exported as part of it.
pub use capable_core::internal::auth::registration::RegistrationError;
pub use capable_core::internal::auth::{
    AuthMethod, CallbackError, ClientSettings, DiscoveryError, Registration, RegistrationSource,
    ScopeRefusal, Token, TokenError,
};
pub use client::{Login, OAuthClient, TokenEvent, TokenInfo};
pub use store::{CredentialKey, CredentialStore, FileStore, MemoryStore, StoredToken};

/// How an authorization code is obtained when one is needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoginMode {
    /// A loopback listener and the system browser (the URL is printed too).
    Browser,
    /// Print the URL; the user pastes the address the browser was sent to.
    Paste,
    /// Fetch the authorization URL without a browser, following its redirects.
    Headless,
    /// The device authorization grant (RFC 8628): print a code the user enters on
    /// any device, and poll for the token (no browser here, no loopback listener).
    /// Used where the authorization server advertises a
    /// `device_authorization_endpoint`; elsewhere the paste login stands in.
    Device,
    /// Never ask: without a usable token, fail with
    /// [`AuthError::AuthorizationRequired`].
    Never,
}

/// Which grant gets tokens.
#[derive(Clone, PartialEq, Eq)]
pub enum Flow {
    /// Authorization code with PKCE, the user authorizing (the default).
    AuthorizationCode,
    /// The client's own credentials (`client_secret_basic`/`_post` or
    /// `private_key_jwt` with [`OAuthConfig::private_key_pem`]).
    ClientCredentials,
    /// Workload identity: a JWT from the platform, exchanged by the JWT bearer grant
    /// (RFC 7523) once; a refusal is final.
    WorkloadIdentity {
        /// The workload's JWT.
        assertion: String,
    },
    /// Enterprise-managed authorization: the user's ID token is exchanged at the
    /// identity provider for an ID-JAG (RFC 8693), which the authorization server
    /// exchanges for an access token (RFC 7523).
    Enterprise {
        /// The identity provider's token endpoint.
        idp_token_endpoint: String,
        /// The client id at the identity provider.
        idp_client_id: String,
        /// Its secret, if it has one.
        idp_client_secret: Option<String>,
        /// The user's ID token.
        id_token: String,
        /// `id_token` is the user's access token at the identity provider instead (a
        /// gateway exchanging the token its caller presented).
        access_token: bool,
    },
}

impl std::fmt::Debug for Flow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Flow::AuthorizationCode => "AuthorizationCode",
            Flow::ClientCredentials => "ClientCredentials",
            Flow::WorkloadIdentity { .. } => "WorkloadIdentity",
            Flow::Enterprise { .. } => "Enterprise",
        })
    }
}

/// When tokens are bound to a DPoP key (RFC 9449).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DpopMode {
    /// When the authorization server issues DPoP tokens with ES256 proofs and the
    /// MCP server asks for them (a `DPoP` challenge, or DPoP in its metadata).
    #[default]
    Auto,
    /// Whenever the authorization server supports ES256 proofs.
    Always,
    /// Never.
    Never,
}

/// Shows the user a message (the authorization URL, what to paste).
pub type Prompt = Arc<dyn Fn(&str) + Send + Sync>;

/// What [`HostRedirect::authorize`] answers: the query string the redirect brought
/// (`code=…&state=…`, or an `error=…`), or why there is none.
pub type RedirectFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, AuthError>> + Send>>;

/// A redirect the host receives on a server of its own (a web page on the loopback,
/// like `capable ui`): it names the redirect URI, shows the person the authorization
/// URL in its own way, and hands back what the redirect brought. See
/// [`OAuthClient::login_via`]. The answer is validated as any other (`state`, RFC 9207
/// `iss`) before its code is used.
#[derive(Clone)]
pub struct HostRedirect {
    /// The redirect URI, on the host's own server (a loopback `http` URI, such as
    /// `http://127.0.0.1:PORT/callback`); it is registered with the client.
    pub uri: String,
    /// Shows the person the authorization URL (whose `state` names the login), and
    /// resolves to the redirect's query once it came; bounded by
    /// [`OAuthConfig::login_timeout`].
    pub authorize: Arc<dyn Fn(reqwest::Url) -> RedirectFuture + Send + Sync>,
}

impl std::fmt::Debug for HostRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostRedirect")
            .field("uri", &self.uri)
            .finish_non_exhaustive()
    }
}

/// How an [`OAuthClient`] authorizes.
#[derive(Clone)]
pub struct OAuthConfig {
    /// Pre-registered client id and secret, or a client ID metadata document URL.
    pub client: ClientSettings,
    /// Scopes to ask for, added to what the server names (its challenge, else its
    /// protected resource metadata's `scopes_supported`), and to a step-up's union.
    pub scopes: Vec<String>,
    /// Which grant.
    pub flow: Flow,
    /// The PKCS#8 PEM key of `private_key_jwt` client authentication (ES256).
    pub private_key_pem: Option<String>,
    /// How to get an authorization code.
    pub mode: LoginMode,
    /// The loopback port of the redirect URI (default: the one the client was
    /// registered with, else any free port).
    pub callback_port: Option<u16>,
    /// The whole redirect URI, for a client registered with a fixed one
    /// (`http://localhost:8080/oauth/callback`): a loopback `http` URI is listened
    /// on at its host, port and path; any other is only pasted back.
    pub redirect_uri: Option<String>,
    /// Extra parameters of the authorization request a provider wants (Auth0's
    /// `audience`, Google's `access_type=offline` and `prompt=consent`). The flow's
    /// own parameters cannot be given ([`capable_core::internal::auth::authorize::RESERVED`]).
    pub authorization_params: Vec<(String, String)>,
    /// Whether to send the RFC 8707 `resource` parameter (default: yes, as MCP
    /// requires); off for an authorization server that rejects it.
    pub send_resource: bool,
    /// DPoP.
    pub dpop: DpopMode,
    /// The authorization server's issuer, when the host knows better than discovery.
    pub issuer: Option<String>,
    /// Where credentials are kept.
    pub store: Arc<dyn CredentialStore>,
    /// The longest any authorization server call may take. Default 30 s.
    pub timeout: Duration,
    /// The longest the user may take to authorize. Default 5 min.
    pub login_timeout: Duration,
    /// Shows the user what to do (default: the log at info level).
    pub prompt: Option<Prompt>,
}

impl OAuthConfig {
    /// The defaults: authorization code, browser login, DPoP when asked for.
    pub fn new(store: Arc<dyn CredentialStore>) -> OAuthConfig {
        OAuthConfig {
            client: ClientSettings {
                client_name: "capable".into(),
                ..ClientSettings::default()
            },
            scopes: Vec::new(),
            flow: Flow::AuthorizationCode,
            private_key_pem: None,
            mode: LoginMode::Browser,
            callback_port: None,
            redirect_uri: None,
            authorization_params: Vec::new(),
            send_resource: true,
            dpop: DpopMode::Auto,
            issuer: None,
            store,
            timeout: Duration::from_secs(30),
            login_timeout: Duration::from_secs(300),
            prompt: None,
        }
    }
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client.client_id)
            .field("client_metadata_url", &self.client.metadata_url)
            .field("scopes", &self.scopes)
            .field("flow", &self.flow)
            .field("mode", &self.mode)
            .field("callback_port", &self.callback_port)
            .field("redirect_uri", &self.redirect_uri)
            .field(
                "authorization_params",
                &self
                    .authorization_params
                    .iter()
                    .map(|(n, _)| n)
                    .collect::<Vec<_>>(),
            )
            .field("send_resource", &self.send_resource)
            .field("dpop", &self.dpop)
            .field("store", &self.store.describe())
            .finish_non_exhaustive()
    }
}

/// Why no usable token is at hand (see [`AuthError::AuthorizationRequired`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Required {
    /// The server asked for authorization, and no token is stored for it.
    NoToken,
    /// The token was asked for without contacting the server, and none is stored.
    NotStored,
    /// The stored token was refused or has expired, and it could not be refreshed
    /// (why, when the authorization server said).
    Refused(Option<String>),
    /// The server wants a token with these scopes.
    MoreScope(Vec<String>),
}

/// Why authorization failed. No variant carries a secret.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The server needs authorization, no usable token is at hand, and no login is
    /// possible here.
    #[error("{}", required_words(server, why))]
    AuthorizationRequired {
        /// The MCP server.
        server: String,
        /// Why no token can be used.
        why: Required,
    },
    /// A 403 `insufficient_scope` no step-up can answer.
    #[error(transparent)]
    InsufficientScope(#[from] ScopeRefusal),
    /// The authorization endpoint refused the request itself (no redirect back).
    #[error("the authorization endpoint {url} refused the request (HTTP {status}){}", refusal_words(error.as_deref(), description.as_deref()))]
    AuthorizeRefused {
        /// The endpoint (without the request's query).
        url: String,
        /// Its status.
        status: u16,
        /// The OAuth `error` of its answer, when it gave one.
        error: Option<String>,
        /// The `error_description`.
        description: Option<String>,
    },
    /// Discovery failed.
    #[error(transparent)]
    Discovery(#[from] capable_core::internal::auth::DiscoveryError),
    /// The authorization server does not advertise PKCE with S256.
    #[error("the authorization server {issuer} does not advertise PKCE with S256 (code_challenge_methods_supported); refusing to authorize without it")]
    NoPkce {
        /// The issuer.
        issuer: String,
    },
    /// The client could not be identified to the authorization server.
    #[error("{0}")]
    NoClient(String),
    /// Dynamic registration failed.
    #[error(transparent)]
    Registration(#[from] capable_core::internal::auth::registration::RegistrationError),
    /// The authorization answer was refused.
    #[error(transparent)]
    Callback(#[from] capable_core::internal::auth::CallbackError),
    /// A token request failed.
    #[error(transparent)]
    Token(#[from] capable_core::internal::auth::TokenError),
    /// An authorization server could not be reached.
    #[error("{what}: {url}: {detail}")]
    Unreachable {
        /// What was being done.
        what: String,
        /// The URL.
        url: String,
        /// The HTTP client's error.
        detail: String,
    },
    /// Headless authorization met a page instead of a redirect.
    #[error("headless authorization stopped at {url} (HTTP {status}) instead of being redirected back; this authorization server needs a browser (try the browser or paste login)")]
    Headless {
        /// Where it stopped.
        url: String,
        /// The status there.
        status: u16,
    },
    /// The user did not authorize in time (or the device code expired first).
    #[error("no authorization within {}", capable_core::internal::time::humanize(*after))]
    TimedOut {
        /// How long it waited.
        after: Duration,
    },
    /// The server's refusal stands (a DPoP nonce it never gives, no token after a
    /// flow that should have given one).
    #[error("{0}")]
    Refused(String),
    /// The configuration cannot work.
    #[error("{0}")]
    Config(String),
    /// The credential store's file was refused for what it is (not a regular file, too
    /// large, open to others): nothing was read from it or written to it.
    #[error(transparent)]
    StoreRefused(crate::file::Refused),
    /// The credential store failed.
    #[error("the credential store {store}: {detail}")]
    Store {
        /// Which.
        store: String,
        /// Why.
        detail: String,
    },
}

fn required_words(server: &str, why: &Required) -> String {
    match why {
        Required::NoToken => {
            format!("{server} requires authorization, and no token is stored for it")
        }
        Required::NotStored => format!("no token is stored for {server}"),
        Required::Refused(detail) => format!(
            "{server} refused the stored token, and it could not be refreshed{}",
            detail
                .as_ref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        ),
        Required::MoreScope(scopes) => format!(
            "{server} wants a token with more scope ({}), which takes a new authorization",
            scopes.join(" ")
        ),
    }
}

fn refusal_words(error: Option<&str>, description: Option<&str>) -> String {
    match (error, description) {
        (Some(e), Some(d)) => format!(": {e} ({d})"),
        (Some(e), None) => format!(": {e}"),
        (None, _) => String::new(),
    }
}

impl AuthError {
    /// Whether the failure is only that no token is at hand and no login is possible.
    pub fn is_authorization_required(&self) -> bool {
        matches!(self, AuthError::AuthorizationRequired { .. })
    }

    /// The same error with `scrub` applied to every text a server chose (an error
    /// description, a detail): a hostile server may echo a secret it was sent.
    pub(crate) fn scrubbed(self, scrub: &dyn Fn(&str) -> String) -> AuthError {
        use capable_core::internal::auth::{CallbackError, TokenError};
        match self {
            AuthError::Token(TokenError::Refused {
                url,
                status,
                error,
                description,
            }) => AuthError::Token(TokenError::Refused {
                url,
                status,
                error: scrub(&error),
                description: description.map(|d| scrub(&d)),
            }),
            AuthError::Callback(CallbackError::Denied { error, description }) => {
                AuthError::Callback(CallbackError::Denied {
                    error: scrub(&error),
                    description: description.map(|d| scrub(&d)),
                })
            }
            AuthError::Registration(mut r) => {
                r.detail = scrub(&r.detail);
                AuthError::Registration(r)
            }
            AuthError::Unreachable { what, url, detail } => AuthError::Unreachable {
                what,
                url: scrub(&url),
                detail: scrub(&detail),
            },
            AuthError::Headless { url, status } => AuthError::Headless {
                url: scrub(&url),
                status,
            },
            AuthError::AuthorizeRefused {
                url,
                status,
                error,
                description,
            } => AuthError::AuthorizeRefused {
                url: scrub(&url),
                status,
                error: error.map(|e| scrub(&e)),
                description: description.map(|d| scrub(&d)),
            },
            AuthError::InsufficientScope(mut r) => {
                r.description = r.description.map(|d| scrub(&d));
                AuthError::InsufficientScope(r)
            }
            AuthError::AuthorizationRequired {
                server,
                why: Required::Refused(detail),
            } => AuthError::AuthorizationRequired {
                server,
                why: Required::Refused(detail.map(|d| scrub(&d))),
            },
            AuthError::Refused(s) => AuthError::Refused(scrub(&s)),
            AuthError::Config(s) => AuthError::Config(scrub(&s)),
            AuthError::NoClient(s) => AuthError::NoClient(scrub(&s)),
            other => other,
        }
    }
}
