//! OAuth 2.1 authorization for MCP over HTTP, sans-IO: every decision of the flow the
//! 2025-03-26 … 2026-07-28 specifications describe, for the shell to carry out.
//!
//! The life of an authorization, in the order things happen:
//!
//! 1. A request meets a 401 (or a 403 `insufficient_scope`). The HTTP policy turns it
//!    into an [`AuthNeed`] ([`need::classify`]) and holds the request; [`need::remedy`]
//!    says what to do with the token at hand — retry, refresh, authorize, step up.
//! 2. [`Discovery`] says which metadata to GET, in the specification's order, and
//!    checks what comes back: the protected resource's `resource`, the authorization
//!    server's `issuer` ([`discovery`]).
//! 3. [`client::choose`] picks the client identity: pre-registered, a client ID
//!    metadata document, or a dynamic registration — made again once when the
//!    server has forgotten it ([`forgotten`]).
//! 4. [`authorize`] builds the authorization URL (PKCE S256, `state`, `resource`, the
//!    scopes of [`scope::initial`]) and validates the answer (`state`, RFC 9207 `iss`);
//!    or, with no browser at hand, [`device`] asks for a code the user enters
//!    elsewhere and polls for the token.
//! 5. [`token`] builds the token request for the grant and client authentication, and
//!    reads the answer into a [`Token`] that knows when to be refreshed; a
//!    pre-registered client refused as a client tries the other secret method the
//!    server lists, once ([`client::other_secret_method`]).
//! 6. The HTTP policy replays the held request, once ([`need::Rounds`]).
//!
//! | file | concern |
//! |---|---|
//! | `challenge.rs` | `WWW-Authenticate` parsing |
//! | `need.rs` | which refusals are needs, the replay rule, the remedy |
//! | `metadata.rs` | the two metadata documents, the `resource` check |
//! | `discovery.rs` | the discovery order as a state machine |
//! | `client.rs` | the client identity and the token endpoint auth method |
//! | `client_auth.rs` | a form POST authenticated as the client's method says |
//! | `registration.rs` | dynamic client registration: the request, the answer |
//! | `forgotten.rs` | when a registration the server forgot is made again |
//! | `scope.rs` | which scopes to ask for, step-up unions |
//! | `authorize.rs` | PKCE, the authorization URL, the callback's validation |
//! | `device.rs` | the device authorization grant and its polling (RFC 8628) |
//! | `token.rs` | token requests (every grant) and answers, expiry |
//! | `revocation.rs` | revoking tokens at logout (RFC 7009) |
//! | `jwt.rs` | JWT framing for client assertions and DPoP proofs |
//! | `access_token.rs` | a bearer token's form before its signature: JWT access token, or opaque |
//! | `resource.rs` | the other side: a protected resource's metadata, challenges, and which tokens it accepts |
//! | `access.rs` | a protected resource's rules: who a rule admits, the groups a token's claim names |
//! | `introspection.rs` | an opaque token's meaning, asked of its issuer (RFC 7662) and judged as a JWT's claims are |
//! | `verified.rs` | a protected resource's memory: verified tokens by hash, when keys may be fetched again |
//!
//! Randomness (PKCE verifiers, `state`, `jti`) and the clock (token expiry, in
//! seconds since the Unix epoch: tokens outlive the process) are the shell's to give.
//! Secrets never show in a `Debug` output.

pub mod access;
pub mod access_token;
pub mod authorize;
pub mod challenge;
pub mod client;
pub mod client_auth;
pub mod device;
pub mod discovery;
#[cfg(test)]
mod fixtures;
pub mod forgotten;
pub mod introspection;
pub mod jwt;
pub mod metadata;
pub mod need;
pub mod registration;
pub mod resource;
pub mod revocation;
pub mod scope;
pub mod token;
pub mod verified;

pub use authorize::{CallbackError, Pending, Pkce};
pub use challenge::Challenge;
pub use client::{AuthMethod, ClientSettings, Identity, Registration, RegistrationSource};
pub use discovery::{Discovered, Discovery, DiscoveryError, MetadataSource, Next};
pub use metadata::{ResourceMetadata, ServerMetadata};
pub use need::{AuthNeed, NeedKind, Remedy, Rounds, ScopeRefusal};
pub use token::{Grant, Token, TokenError, TokenRequest};
