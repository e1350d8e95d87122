//! OAuth 2.1 authorization for HTTP servers: the I/O of what the core's
//! [`capable_core::auth`] decides.
//!
//! An [`OAuthClient`] stands for one MCP server. Given to a connection
//! ([`HttpConfig::oauth`](crate::HttpConfig::oauth)), it presents the stored token on
//! every request to the server's origin (never anywhere else), refreshes it a minute
//! before it expires, and answers a 401 or 403 `insufficient_scope` on any request —
//! at connect time or mid-session, on a message or the long-lived GET stream — by
//! refreshing, authorizing or stepping up; the refused request is then replayed once.
//! A host may also use it on its own: [`OAuthClient::login`], [`OAuthClient::status`],
//! [`OAuthClient::logout`], [`OAuthClient::access_token`].
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
pub mod store;
mod wire;

use std::sync::Arc;
use std::time::Duration;

pub use capable_core::auth::{AuthMethod, ClientSettings};
pub use client::{OAuthClient, TokenInfo};
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

/// How an [`OAuthClient`] authorizes.
#[derive(Clone)]
pub struct OAuthConfig {
    /// Pre-registered client id and secret, or a client ID metadata document URL.
    pub client: ClientSettings,
    /// Scopes to ask for (joined with the server's challenge).
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
            .field("dpop", &self.dpop)
            .field("store", &self.store.describe())
            .finish_non_exhaustive()
    }
}

/// Why authorization failed. No variant carries a secret.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The server needs authorization and no login is possible here.
    #[error(
        "{server} requires authorization, and there is no stored token and no way to log in here"
    )]
    AuthorizationRequired {
        /// The MCP server.
        server: String,
    },
    /// Discovery failed.
    #[error(transparent)]
    Discovery(#[from] capable_core::auth::DiscoveryError),
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
    Registration(#[from] capable_core::auth::client::RegistrationError),
    /// The authorization answer was refused.
    #[error(transparent)]
    Callback(#[from] capable_core::auth::CallbackError),
    /// A token request failed.
    #[error(transparent)]
    Token(#[from] capable_core::auth::TokenError),
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
    /// The user did not authorize in time.
    #[error("no authorization within {}", capable_core::time::humanize(*after))]
    TimedOut {
        /// How long it waited.
        after: Duration,
    },
    /// The server's refusal stands (a step-up that would ask for nothing new, too
    /// many step-ups).
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

impl AuthError {
    /// Whether the failure is only that no token is at hand and no login is possible.
    pub fn is_authorization_required(&self) -> bool {
        matches!(self, AuthError::AuthorizationRequired { .. })
    }

    /// The same error with `scrub` applied to every text a server chose (an error
    /// description, a detail): a hostile server may echo a secret it was sent.
    pub(crate) fn scrubbed(self, scrub: &dyn Fn(&str) -> String) -> AuthError {
        use capable_core::auth::{CallbackError, TokenError};
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
            AuthError::Refused(s) => AuthError::Refused(scrub(&s)),
            AuthError::Config(s) => AuthError::Config(scrub(&s)),
            AuthError::NoClient(s) => AuthError::NoClient(scrub(&s)),
            other => other,
        }
    }
}
