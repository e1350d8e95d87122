//! The other side of OAuth: capable as a protected resource (the bridge as a team's
//! gateway), every decision sans-IO. The shell fetches the issuer's metadata and keys
//! and checks signatures; what is acceptable and what to answer is decided here.
//!
//! 1. The resource is named by its public URL (`--public-url`), the audience its
//!    tokens must carry (RFC 8707), and trusts one issuer (`--auth-issuer`).
//! 2. It publishes Protected Resource Metadata (RFC 9728, [`ProtectedResource::metadata`])
//!    at `/.well-known/oauth-protected-resource` followed by its path
//!    ([`ProtectedResource::metadata_path`]): a client that meets its `401` finds the
//!    issuer there and logs in with no gateway-specific step.
//! 3. A request's `Authorization: Bearer` value ([`bearer`]) is first looked at
//!    ([`form`], `access_token.rs`): a JWT whose header says `typ: at+jwt` (RFC 9068) and an asymmetric
//!    algorithm is verified by the shell against the issuer's keys; `alg: none`, an
//!    HMAC algorithm (a public key used as a shared secret), an ID token, an oversized
//!    value are refused before any key is looked at.
//! 4. Its claims, once the signature holds, are judged ([`ProtectedResource::accept`]):
//!    the issuer exactly, this resource among the audiences, not expired, not before
//!    its time, a subject, every required scope. What passes is a [`Caller`].
//! 5. What does not is a [`Refusal`]: `401` with `WWW-Authenticate: Bearer
//!    resource_metadata="…"` (and `error="invalid_token"` for a token that was
//!    presented), or `403` `insufficient_scope` naming the scopes wanted
//!    ([`ProtectedResource::challenge`]). No refusal ever carries the token.
//!
//! The clock is the shell's to give: seconds since the Unix epoch, as tokens count.

use serde_json::{json, Value};
use url::Url;

pub use super::access_token::{form, Form, JwtHeader, ALGORITHMS};
use super::metadata::{origin, secure_enough};

/// The longest bearer value taken, in bytes: JWT access tokens are a kilobyte or two;
/// anything far larger is refused before it is decoded.
pub const MAX_TOKEN: usize = 8 * 1024;

/// How far the resource's clock and the issuer's may disagree, in seconds (`exp`,
/// `nbf`).
pub const LEEWAY: u64 = 30;

/// A protected resource: its identifier, the issuer it trusts, the scopes every
/// request needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtectedResource {
    resource: String,
    issuer: String,
    scopes: Vec<String>,
    metadata_path: String,
    metadata_url: String,
    groups_claim: Option<String>,
}

/// Why a resource cannot be set up as given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// The public URL is not an absolute https URL (or http to a loopback host)
    /// without a query or fragment.
    #[error("--public-url {0}: the gateway's identifier must be an https URL (http only on a loopback host), with no query or fragment")]
    PublicUrl(String),
    /// The issuer is not an https URL (or http to a loopback host).
    #[error("--auth-issuer {0}: an issuer identifier is an https URL (http only on a loopback host), with no query or fragment")]
    Issuer(String),
    /// A required scope is empty or holds a space or a quote.
    #[error("--auth-scope {0:?}: a scope is one word with no quote or backslash")]
    Scope(String),
}

/// Why a request is refused, and so what it is answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No bearer token at all: `401`, the challenge alone.
    Missing,
    /// A token that is not acceptable (malformed, badly signed, expired, for another
    /// resource or issuer): `401`, `invalid_token`, and why — never the token itself.
    Invalid(String),
    /// A good token without these scopes: `403`, `insufficient_scope`.
    InsufficientScope(Vec<String>),
    /// Whether the token is good cannot be known now: its issuer did not answer as it
    /// must (introspection failed). `503`, no challenge: the token may well be good.
    Unavailable(String),
}

impl Refusal {
    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::Missing | Refusal::Invalid(_) => 401,
            Refusal::InsufficientScope(_) => 403,
            Refusal::Unavailable(_) => 503,
        }
    }

    /// The OAuth error code (RFC 6750 §3.1); none when no token was presented.
    pub fn error(&self) -> Option<&'static str> {
        match self {
            Refusal::Missing => None,
            Refusal::Invalid(_) => Some("invalid_token"),
            Refusal::InsufficientScope(_) => Some("insufficient_scope"),
            Refusal::Unavailable(_) => Some("temporarily_unavailable"),
        }
    }

    /// What went wrong, for a person.
    pub fn description(&self) -> String {
        match self {
            Refusal::Missing => "this gateway wants an OAuth access token (Authorization: Bearer); its protected resource metadata names the issuer".into(),
            Refusal::Invalid(why) | Refusal::Unavailable(why) => why.clone(),
            Refusal::InsufficientScope(missing) => {
                format!("the token lacks the scope {}", missing.join(" "))
            }
        }
    }

    /// The JSON body of the answer.
    pub fn body(&self) -> Value {
        json!({"error": self.error().unwrap_or("unauthorized"), "error_description": self.description()})
    }
}

/// Who is calling: what a verified token says of its bearer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The issuer.
    pub issuer: String,
    /// The subject (`sub`): the user, or the client acting for itself.
    pub subject: String,
    /// The client the token was issued to (`client_id`), when it says.
    pub client_id: Option<String>,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// The groups (or roles) the token's groups claim puts the caller in, sorted, at
    /// most [`MAX_GROUPS`](super::access::MAX_GROUPS)
    /// ([`ProtectedResource::with_groups_claim`]; none without one).
    pub groups: Vec<String>,
    /// When the token expires (seconds since the Unix epoch).
    pub expires_at: u64,
}

impl Caller {
    /// The identity sessions are bound to: issuer and subject, each after its length,
    /// so that no two different pairs (nor a pair and what follows it) read the same.
    pub fn key(&self) -> String {
        let (iss, sub) = (&self.issuer, &self.subject);
        format!("{}:{iss}{}:{sub}", iss.len(), sub.len())
    }

    /// The caller as the audit names it (`iss`, `sub`, `clientId`).
    pub fn audit(&self) -> Value {
        let mut line = json!({"iss": self.issuer, "sub": self.subject});
        if let Some(client) = &self.client_id {
            line["clientId"] = client.as_str().into();
        }
        line
    }
}

/// The bearer token of an `Authorization` value (the scheme in any case, RFC 7235);
/// [`Refusal::Missing`] without one, [`Refusal::Invalid`] when it is longer than
/// [`MAX_TOKEN`].
pub fn bearer(authorization: Option<&str>) -> Result<&str, Refusal> {
    let token = authorization
        .and_then(crate::http::loopback::bearer)
        .ok_or(Refusal::Missing)?;
    if token.len() > MAX_TOKEN {
        return Err(invalid(
            "the token is larger than any access token this gateway takes",
        ));
    }
    Ok(token)
}

pub(super) fn invalid(why: &str) -> Refusal {
    Refusal::Invalid(why.to_owned())
}

/// A URL the way an identifier must be: http(s), secure enough, no query or fragment.
fn identifier(given: &str) -> Option<Url> {
    let url = Url::parse(given).ok()?;
    (secure_enough(&url) && url.query().is_none() && url.fragment().is_none()).then_some(url)
}

impl ProtectedResource {
    /// The resource `public_url` (kept as written, the audience tokens must name),
    /// trusting `issuer`, every request needing `scopes`.
    pub fn new(
        public_url: &str,
        issuer: &str,
        scopes: Vec<String>,
    ) -> Result<ProtectedResource, ResourceError> {
        let url =
            identifier(public_url).ok_or_else(|| ResourceError::PublicUrl(public_url.into()))?;
        identifier(issuer).ok_or_else(|| ResourceError::Issuer(issuer.into()))?;
        if let Some(bad) = scopes
            .iter()
            .find(|s| s.is_empty() || s.contains([' ', '"', '\\']))
        {
            return Err(ResourceError::Scope(bad.clone()));
        }
        let path = url.path().trim_end_matches('/');
        let metadata_path = format!("/.well-known/oauth-protected-resource{path}");
        let metadata_url = format!("{}{metadata_path}", origin(&url));
        Ok(ProtectedResource {
            resource: public_url.to_owned(),
            issuer: issuer.to_owned(),
            scopes,
            metadata_path,
            metadata_url,
            groups_claim: None,
        })
    }

    /// The resource reading its callers' groups from the claim at `path` (dotted for
    /// a nested claim: `groups`, `roles`, `realm_access.roles`), once per token, when
    /// it is accepted ([`groups_in`](super::access::groups_in)).
    pub fn with_groups_claim(mut self, path: impl Into<String>) -> ProtectedResource {
        self.groups_claim = Some(path.into());
        self
    }

    /// The resource identifier, the audience.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The issuer trusted.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The path the metadata is served at.
    pub fn metadata_path(&self) -> &str {
        &self.metadata_path
    }

    /// Where clients find the metadata (the challenge's `resource_metadata`).
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// The Protected Resource Metadata document (RFC 9728 §2).
    pub fn metadata(&self) -> Value {
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "capable bridge",
        });
        if !self.scopes.is_empty() {
            doc["scopes_supported"] = json!(self.scopes);
        }
        doc
    }

    /// The `WWW-Authenticate` value of `refusal` (RFC 6750 §3, RFC 9728 §5.1).
    pub fn challenge(&self, refusal: &Refusal) -> String {
        let mut value = format!("Bearer resource_metadata=\"{}\"", self.metadata_url);
        if !self.scopes.is_empty() {
            value.push_str(&format!(", scope=\"{}\"", self.scopes.join(" ")));
        }
        if let Some(error) = refusal.error() {
            let said: String = refusal
                .description()
                .chars()
                .map(|c| {
                    if c == '"' || c == '\\' || c.is_control() {
                        '\''
                    } else {
                        c
                    }
                })
                .collect();
            value.push_str(&format!(
                ", error=\"{error}\", error_description=\"{said}\""
            ));
        }
        value
    }

    /// Whether the claims of a token whose signature held are acceptable at `now`;
    /// who is calling if so.
    pub fn accept(&self, claims: &Value, now: u64) -> Result<Caller, Refusal> {
        let text = |name: &str| claims.get(name).and_then(Value::as_str);
        let number = |name: &str| claims.get(name).and_then(Value::as_u64);
        if text("iss") != Some(self.issuer.as_str()) {
            return Err(invalid("the token was issued by another issuer"));
        }
        let audience = match claims.get("aud") {
            Some(Value::String(one)) => one == &self.resource,
            Some(Value::Array(many)) => many.iter().any(|a| a.as_str() == Some(&self.resource)),
            _ => false,
        };
        if !audience {
            return Err(invalid(
                "the token is for another resource (its audience is not this gateway)",
            ));
        }
        let Some(expires_at) = number("exp") else {
            return Err(invalid("the token has no expiry"));
        };
        if expires_at.saturating_add(LEEWAY) <= now {
            return Err(invalid("the token has expired"));
        }
        if number("nbf").is_some_and(|nbf| nbf > now.saturating_add(LEEWAY)) {
            return Err(invalid("the token is not valid yet"));
        }
        let Some(subject) = text("sub").filter(|s| !s.is_empty()) else {
            return Err(invalid("the token names no subject"));
        };
        let scopes: Vec<String> = match (claims.get("scope"), claims.get("scp")) {
            (Some(Value::String(s)), _) => s.split_whitespace().map(str::to_owned).collect(),
            (_, Some(Value::Array(list))) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        let missing: Vec<String> = self
            .scopes
            .iter()
            .filter(|wanted| !scopes.contains(wanted))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(Refusal::InsufficientScope(missing));
        }
        Ok(Caller {
            issuer: self.issuer.clone(),
            subject: subject.to_owned(),
            client_id: text("client_id").map(str::to_owned),
            scopes,
            groups: self
                .groups_claim
                .as_deref()
                .map(|path| super::access::groups_in(claims, path))
                .unwrap_or_default(),
            expires_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000;

    fn gateway(scopes: &[&str]) -> ProtectedResource {
        let scopes = scopes.iter().map(|s| s.to_string()).collect();
        ProtectedResource::new("https://gw.example/team/mcp", "https://id.example", scopes).unwrap()
    }

    fn claims() -> Value {
        json!({"iss": "https://id.example", "aud": "https://gw.example/team/mcp",
            "exp": NOW + 600, "iat": NOW, "sub": "alice", "client_id": "c1",
            "scope": "mcp:tools openid"})
    }

    #[test]
    fn the_metadata_sits_under_the_resource_path_and_names_the_issuer() {
        let g = gateway(&["mcp:tools"]);
        assert_eq!(
            g.metadata_path(),
            "/.well-known/oauth-protected-resource/team/mcp"
        );
        assert_eq!(
            g.metadata_url(),
            "https://gw.example/.well-known/oauth-protected-resource/team/mcp"
        );
        let doc = g.metadata();
        assert_eq!(doc["resource"], "https://gw.example/team/mcp");
        assert_eq!(doc["authorization_servers"], json!(["https://id.example"]));
        assert_eq!(doc["scopes_supported"], json!(["mcp:tools"]));
        assert!(gateway(&[]).metadata().get("scopes_supported").is_none());
        let root = ProtectedResource::new("http://127.0.0.1:8/", "http://127.0.0.1:9", vec![]);
        assert_eq!(
            root.unwrap().metadata_path(),
            "/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn identifiers_must_be_https_or_loopback_and_scopes_one_word() {
        let made = |url: &str, issuer: &str, scope: &str| {
            ProtectedResource::new(url, issuer, vec![scope.to_owned()])
        };
        let ok = "https://id.example";
        assert!(made("https://gw.example/mcp", ok, "a").is_ok());
        assert!(made("http://localhost:8080/mcp", "http://127.0.0.1:1", "a").is_ok());
        for bad in [
            "http://gw.example/mcp",
            "https://gw.example/mcp#x",
            "gw/mcp",
        ] {
            assert_eq!(
                made(bad, ok, "a"),
                Err(ResourceError::PublicUrl(bad.into()))
            );
        }
        assert!(matches!(
            made("https://gw.example/mcp", "http://id.example", "a"),
            Err(ResourceError::Issuer(_))
        ));
        for bad in ["", "a b", "a\"b"] {
            assert!(matches!(
                made("https://gw.example/mcp", ok, bad),
                Err(ResourceError::Scope(_))
            ));
        }
    }

    #[test]
    fn challenges_point_at_the_metadata_name_scopes_and_say_what_was_wrong() {
        let g = gateway(&["mcp:tools"]);
        let meta = "resource_metadata=\"https://gw.example/.well-known/oauth-protected-resource/team/mcp\"";
        assert_eq!(
            g.challenge(&Refusal::Missing),
            format!("Bearer {meta}, scope=\"mcp:tools\"")
        );
        let bad = g.challenge(&Refusal::Invalid("the \"token\" has expired".into()));
        assert!(bad.contains("error=\"invalid_token\""), "{bad}");
        assert!(
            bad.ends_with("error_description=\"the 'token' has expired\""),
            "{bad}"
        );
        let more = g.challenge(&Refusal::InsufficientScope(vec!["mcp:tools".into()]));
        assert!(
            more.contains("scope=\"mcp:tools\", error=\"insufficient_scope\""),
            "{more}"
        );
        assert_eq!(Refusal::InsufficientScope(vec![]).status(), 403);
        assert_eq!(Refusal::Missing.status(), 401);
        assert_eq!(
            gateway(&[]).challenge(&Refusal::Missing),
            format!("Bearer {meta}")
        );
        // What a client parses back.
        let parsed = crate::auth::challenge::parse(&more);
        assert_eq!(parsed[0].scopes(), vec!["mcp:tools".to_string()]);
        assert_eq!(parsed[0].error(), Some("insufficient_scope"));
    }

    #[test]
    fn a_bearer_value_is_needed_and_bounded() {
        assert_eq!(bearer(None), Err(Refusal::Missing));
        assert_eq!(bearer(Some("Basic abc")), Err(Refusal::Missing));
        assert_eq!(bearer(Some("bearer abc")), Ok("abc"));
        let huge = format!("Bearer {}", "a".repeat(MAX_TOKEN + 1));
        assert!(matches!(bearer(Some(&huge)), Err(Refusal::Invalid(_))));
    }

    #[test]
    fn good_claims_name_the_caller() {
        let caller = gateway(&["mcp:tools"]).accept(&claims(), NOW).unwrap();
        assert_eq!(caller.subject, "alice");
        assert_eq!(caller.client_id.as_deref(), Some("c1"));
        assert_eq!(caller.expires_at, NOW + 600);
        assert_eq!(
            caller.audit(),
            json!({"iss": "https://id.example", "sub": "alice", "clientId": "c1"})
        );
        let mut many = claims();
        many["aud"] = json!(["https://other.example", "https://gw.example/team/mcp"]);
        many["scope"] = Value::Null;
        many["scp"] = json!(["mcp:tools"]);
        assert!(gateway(&["mcp:tools"]).accept(&many, NOW).is_ok());
        // Within the leeway either way.
        assert!(gateway(&[])
            .accept(&claims(), NOW + 600 + LEEWAY - 1)
            .is_ok());
    }

    #[test]
    fn other_issuers_audiences_expired_early_or_subjectless_tokens_are_invalid() {
        let g = gateway(&[]);
        let with = |name: &str, value: Value| {
            let mut c = claims();
            c[name] = value;
            g.accept(&c, NOW)
        };
        let cases = [
            ("iss", json!("https://id.example/")),
            ("aud", json!("https://gw.example/team/mcp/")),
            ("aud", json!(["https://other.example"])),
            ("exp", json!(NOW - LEEWAY)),
            ("exp", Value::Null),
            ("exp", json!("soon")),
            ("nbf", json!(NOW + LEEWAY + 1)),
            ("sub", json!("")),
            ("sub", Value::Null),
        ];
        for (name, value) in cases {
            let refused = with(name, value.clone()).unwrap_err();
            assert!(matches!(refused, Refusal::Invalid(_)), "{name} {value}");
            assert_eq!(refused.status(), 401);
        }
    }

    #[test]
    fn a_token_without_a_required_scope_is_refused_naming_the_missing_one() {
        let g = gateway(&["mcp:tools", "mcp:admin"]);
        assert_eq!(
            g.accept(&claims(), NOW),
            Err(Refusal::InsufficientScope(vec!["mcp:admin".into()]))
        );
        let body = Refusal::InsufficientScope(vec!["mcp:admin".into()]).body();
        assert_eq!(body["error"], "insufficient_scope");
        assert!(body["error_description"]
            .as_str()
            .unwrap()
            .contains("mcp:admin"));
    }

    #[test]
    fn a_callers_groups_are_read_once_from_the_configured_claim() {
        let mut c = claims();
        c["org"] = json!({"roles": ["ops", "eng", 3]});
        assert!(gateway(&[]).accept(&c, NOW).unwrap().groups.is_empty());
        let g = gateway(&[]).with_groups_claim("org.roles");
        assert_eq!(g.accept(&c, NOW).unwrap().groups, ["eng", "ops"]);
        c["org"] = json!("not an object");
        assert!(g.accept(&c, NOW).unwrap().groups.is_empty());
    }

    #[test]
    fn callers_are_told_apart_by_issuer_and_subject() {
        let g = gateway(&[]);
        let alice = g.accept(&claims(), NOW).unwrap();
        let mut other = claims();
        other["sub"] = json!("bob");
        other["client_id"] = json!("c2");
        let bob = g.accept(&other, NOW).unwrap();
        assert_ne!(alice.key(), bob.key());
        other["sub"] = json!("alice");
        assert_eq!(g.accept(&other, NOW).unwrap().key(), alice.key());
        // A subject that spells another's key and more is still another.
        other["sub"] = json!("alice\nX");
        assert!(!g
            .accept(&other, NOW)
            .unwrap()
            .key()
            .starts_with(&alice.key()));
    }
}
