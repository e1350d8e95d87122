//! Who is calling (`--auth-issuer`, `--public-url`): the listener as an OAuth 2.1
//! protected resource. The decisions are the core's
//! ([`capable::internal::auth::resource`], [`capable::internal::auth::verified`]); this is
//! their shell:
//!
//! - at start, the issuer's metadata is discovered (RFC 8414, then OpenID Connect, its
//!   `issuer` checked) and its keys fetched from `jwks_uri`; either failing stops the
//!   bridge before it listens, saying why;
//! - a request's token is looked up by its SHA-256 among the tokens already verified
//!   (the hot path: a hash and a map lookup, until the token expires); a new one has
//!   its signature checked against the key its `kid` names, then its claims judged;
//! - a `kid` not among the keys fetches them again (the issuer rotated), at most once
//!   per [`REFETCH`] whatever callers send, each fetch bounded by the timeout and
//!   [`MAX_DOCUMENT`] bytes.
//!
//! Opaque tokens are asked of the issuer (RFC 7662, [`super::introspect`]) when the
//! gateway has a client of its own there ([`ListenAuth::introspection`]); without
//! one they are refused as `invalid_token`, saying so. An issuer that publishes no
//! keys but introspects has its JWTs introspected too.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use capable::internal::auth::resource::{bearer, form, Caller, Form, ProtectedResource, Refusal};
use capable::internal::auth::verified::{KeyRefetch, TokenKey, Verified};
use capable::internal::auth::{Discovery, Next};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::gate::Gate;
use super::introspect::Introspector;
use crate::audit::Audit;
use crate::{BridgeError, ListenAuth};

/// How often, at most, an unknown `kid` fetches the issuer's keys again.
pub const REFETCH: Duration = Duration::from_secs(30);

/// The largest metadata or key set read from the issuer.
pub const MAX_DOCUMENT: usize = 1 << 20;

/// The most keys kept of one key set.
const MAX_KEYS: usize = 64;

/// One of the issuer's keys.
struct Key {
    kid: Option<String>,
    /// The algorithm the key set says it is for, if it says.
    alg: Option<String>,
    decoding: DecodingKey,
}

/// The listener's knowledge of its callers: the resource, the issuer's keys, the
/// tokens verified.
pub struct Identity {
    resource: ProtectedResource,
    http: reqwest::Client,
    /// Where the issuer's keys are (`None`: it publishes none; its tokens are
    /// introspected).
    jwks_uri: Option<String>,
    keys: RwLock<Vec<Key>>,
    introspector: Option<Introspector>,
    refetch: Mutex<KeyRefetch>,
    verified: Mutex<Verified>,
    started: Instant,
}

impl Identity {
    /// The identity of `auth`: the issuer's metadata and keys fetched.
    pub async fn discover(auth: &ListenAuth) -> Result<Identity, BridgeError> {
        let issuer = auth.issuer.clone();
        let failed = |why: String| BridgeError::Issuer {
            issuer: issuer.clone(),
            why,
        };
        if jsonwebtoken::crypto::CryptoProvider::try_get_default().is_none() {
            return Err(failed("no signature verification is built in".into()));
        }
        let resource = ProtectedResource::new(&auth.public_url, &auth.issuer, auth.scopes.clone())
            .map_err(|e| BridgeError::Config(e.to_string()))?
            .with_groups_claim(auth.groups_claim.clone());
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(auth.fetch_timeout)
            .connect_timeout(auth.fetch_timeout)
            .user_agent(concat!("capable-bridge/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| failed(format!("cannot build the HTTP client: {e}")))?;
        let url = url::Url::parse(&auth.issuer).map_err(|e| failed(e.to_string()))?;
        let mut discovery = Discovery::for_issuer(url, &auth.issuer);
        let mut unreachable = None;
        let metadata = loop {
            match discovery.step() {
                Next::Fetch(url) => match fetch(&http, url.as_str()).await {
                    Ok((status, body)) => discovery.on_response(status, &body),
                    Err(why) => {
                        unreachable = Some(why);
                        discovery.on_response(0, b"");
                    }
                },
                Next::Done(found) => break found.metadata,
                Next::Failed(e) => {
                    let why = match unreachable {
                        Some(why) => format!("{e}; the last fetch failed: {why}"),
                        None => e.to_string(),
                    };
                    return Err(failed(why));
                }
            }
        };
        let introspector = match (&auth.introspection, metadata.introspection_endpoint) {
            (Some(client), Some(endpoint)) => {
                Some(Introspector::new(endpoint, &auth.issuer, client))
            }
            (Some(_), None) => return Err(failed(
                "its metadata names no introspection_endpoint: opaque tokens cannot be asked about"
                    .into(),
            )),
            (None, _) => None,
        };
        if metadata.jwks_uri.is_none() && introspector.is_none() {
            return Err(failed(
                "its metadata names no jwks_uri: its tokens cannot be verified (give the gateway a client there to introspect them)".into(),
            ));
        }
        let identity = Identity {
            resource,
            http,
            jwks_uri: metadata.jwks_uri,
            keys: RwLock::new(Vec::new()),
            introspector,
            refetch: Mutex::new(KeyRefetch::new(REFETCH.as_millis() as u64, 0)),
            verified: Mutex::new(Verified::new(auth.max_tokens)),
            started: Instant::now(),
        };
        let Some(jwks_uri) = &identity.jwks_uri else {
            return Ok(identity);
        };
        let keys = identity.fetch_keys(jwks_uri).await.map_err(failed)?;
        if keys.is_empty() {
            return Err(failed(format!(
                "{jwks_uri} holds no key this gateway can verify with"
            )));
        }
        *identity.keys.write().unwrap_or_else(|e| e.into_inner()) = keys;
        Ok(identity)
    }

    /// The resource.
    pub fn resource(&self) -> &ProtectedResource {
        &self.resource
    }

    /// Who sends a request with this `Authorization` value, or why it is refused.
    pub async fn check(&self, authorization: Option<&str>) -> Result<Arc<Caller>, Refusal> {
        let token = bearer(authorization)?;
        let key = TokenKey::of(token);
        let now = unix_now();
        if let Some(caller) = self.verified().get(&key, now) {
            return Ok(caller);
        }
        let form = form(token)?;
        let header = match (form, &self.jwks_uri, &self.introspector) {
            (Form::Jwt(header), Some(_), _) => header,
            (_, _, Some(introspector)) => {
                let caller = introspector
                    .ask(&self.http, &self.resource, token, key, unix_now)
                    .await?;
                let caller = Arc::new(caller);
                self.verified().insert(key, caller.clone(), unix_now());
                return Ok(caller);
            }
            (_, _, None) => {
                return Err(Refusal::Invalid(
                    "this gateway takes JWT access tokens (RFC 9068); an opaque token needs introspection, for which it has no client at the issuer"
                        .into(),
                ))
            }
        };
        let alg: Algorithm = header
            .alg
            .parse()
            .map_err(|_| Refusal::Invalid("the token's algorithm is not supported".into()))?;
        let mut claims = self.verify(token, alg, header.kid.as_deref());
        if claims.is_none() && header.kid.is_some() && !self.knows(header.kid.as_deref()) {
            // A key not seen yet: the issuer may have rotated. Fetched again at most
            // once per REFETCH, whatever callers send.
            let due = self
                .refetch
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .may(self.started.elapsed().as_millis() as u64);
            if let (true, Some(jwks_uri)) = (due, &self.jwks_uri) {
                if let Ok(keys) = self.fetch_keys(jwks_uri).await {
                    if !keys.is_empty() {
                        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = keys;
                    }
                }
                claims = self.verify(token, alg, header.kid.as_deref());
            }
        }
        let Some(claims) = claims else {
            return Err(Refusal::Invalid(match self.knows(header.kid.as_deref()) {
                true => "the token's signature does not verify with the issuer's key".into(),
                false => "the token is signed with a key the issuer does not publish".into(),
            }));
        };
        let caller = Arc::new(self.resource.accept(&claims, now)?);
        self.verified().insert(key, caller.clone(), now);
        Ok(caller)
    }

    fn verified(&self) -> std::sync::MutexGuard<'_, Verified> {
        self.verified.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a key of this `kid` is known (any key, for a token that names none).
    fn knows(&self, kid: Option<&str>) -> bool {
        let keys = self.keys.read().unwrap_or_else(|e| e.into_inner());
        keys.iter()
            .any(|k| kid.is_none() || k.kid.as_deref() == kid)
    }

    /// The claims of `token` if a key the issuer publishes for `kid` signed it.
    fn verify(&self, token: &str, alg: Algorithm, kid: Option<&str>) -> Option<Value> {
        let mut validation = Validation::new(alg);
        // Time, audience and issuer are judged by the core, after the signature.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        let keys = self.keys.read().unwrap_or_else(|e| e.into_inner());
        let alg_name = format!("{alg:?}");
        keys.iter()
            .filter(|k| kid.is_none() || k.kid.as_deref() == kid)
            .filter(|k| k.alg.as_ref().is_none_or(|a| *a == alg_name))
            .find_map(|k| jsonwebtoken::decode::<Value>(token, &k.decoding, &validation).ok())
            .map(|data| data.claims)
    }

    /// The issuer's keys, as published now: the asymmetric signing keys of its set.
    async fn fetch_keys(&self, jwks_uri: &str) -> Result<Vec<Key>, String> {
        let (status, body) = fetch(&self.http, jwks_uri).await?;
        if !(200..300).contains(&status) {
            return Err(format!("{jwks_uri} answered {status}"));
        }
        let set: Value = serde_json::from_slice(&body)
            .map_err(|_| format!("{jwks_uri} is not a JSON key set"))?;
        let listed = set
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{jwks_uri} is not a key set (no keys)"))?;
        let keys = listed
            .iter()
            .filter(|k| k.get("use").and_then(Value::as_str) != Some("enc"))
            .filter(|k| k.get("kty").and_then(Value::as_str) != Some("oct"))
            .filter_map(|k| {
                let jwk: Jwk = serde_json::from_value(k.clone()).ok()?;
                Some(Key {
                    kid: k.get("kid").and_then(Value::as_str).map(str::to_owned),
                    alg: k.get("alg").and_then(Value::as_str).map(str::to_owned),
                    decoding: DecodingKey::from_jwk(&jwk).ok()?,
                })
            })
            .take(MAX_KEYS)
            .collect();
        Ok(keys)
    }
}

/// `router` serving the resource's metadata (RFC 9728) where clients look for it: under
/// the resource's path, and at the root (the fallback clients try next). Any page may
/// read it (it is public, and browser clients fetch it across origins); only `Host` is
/// checked, as for every request.
pub fn routes<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    resource: &ProtectedResource,
    gate: &Gate,
) -> Router<S> {
    let document = resource.metadata().to_string();
    let serve = {
        let gate = gate.clone();
        move |headers: HeaderMap| {
            let (gate, document) = (gate.clone(), document.clone());
            async move {
                if let Err(refused) = gate.check_host(&headers) {
                    return refused.into_response();
                }
                let headers = [
                    (header::CONTENT_TYPE, "application/json"),
                    (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
                    (header::CACHE_CONTROL, "max-age=300"),
                ];
                (StatusCode::OK, headers, document).into_response()
            }
        }
    };
    let root = "/.well-known/oauth-protected-resource";
    let mut router = router.route(resource.metadata_path(), get(serve.clone()));
    if resource.metadata_path() != root {
        router = router.route(root, get(serve));
    }
    router
}

/// The caller of a request with `headers`, or the answer that refuses it: `401` with
/// the challenge, or `403` `insufficient_scope`; audited (why, never the token).
pub async fn caller(
    identity: &Identity,
    headers: &HeaderMap,
    audit: &Audit,
) -> Result<Arc<Caller>, Response> {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let refusal = match identity.check(authorization).await {
        Ok(caller) => return Ok(caller),
        Err(refusal) => refusal,
    };
    if refusal != Refusal::Missing {
        audit.record(
            "refused",
            serde_json::json!({"status": refusal.status(), "error": refusal.error(),
                "why": refusal.description()}),
        );
    }
    let challenge = identity.resource.challenge(&refusal);
    let mut response = (
        StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::UNAUTHORIZED),
        [(header::CONTENT_TYPE, "application/json")],
        refusal.body().to_string(),
    )
        .into_response();
    // An issuer that could not say is no fault of the token: no challenge then.
    let challenged = matches!(refusal.status(), 401 | 403);
    if let (true, Ok(value)) = (challenged, HeaderValue::from_str(&challenge)) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    Err(response)
}

/// GETs `url` as JSON: its status and at most [`MAX_DOCUMENT`] bytes of body.
async fn fetch(http: &reqwest::Client, url: &str) -> Result<(u16, Vec<u8>), String> {
    let response = http
        .get(url)
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|e| format!("{url}: {}", describe(&e)))?;
    read_bounded(response, url).await
}

/// The status of `response` (from `url`) and at most [`MAX_DOCUMENT`] bytes of its
/// body.
pub(super) async fn read_bounded(
    mut response: reqwest::Response,
    url: &str,
) -> Result<(u16, Vec<u8>), String> {
    let status = response.status().as_u16();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("{url}: {}", describe(&e)))?
    {
        if body.len() + chunk.len() > MAX_DOCUMENT {
            return Err(format!("{url}: larger than {MAX_DOCUMENT} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((status, body))
}

/// What a failed fetch was, in a few words.
pub(super) fn describe(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "no answer within the fetch timeout"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "the fetch failed"
    }
}

/// Seconds since the Unix epoch, as tokens count.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// An issuer on a loopback port: its metadata at the RFC 8414 place, and its key
    /// set answered by `jwks` (`None`: never answered).
    async fn issuer(jwks: Option<&'static str>) -> String {
        let set = jwks.map(str::to_owned);
        issuer_of(Arc::new(Mutex::new((set, 0)))).await
    }

    /// The same, its key set (and how many times it was fetched) in `jwks`.
    async fn issuer_of(jwks: Arc<Mutex<(Option<String>, usize)>>) -> String {
        let socket = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", socket.local_addr().unwrap());
        let metadata = serde_json::json!({"issuer": base, "jwks_uri": format!("{base}/jwks")});
        tokio::spawn(async move {
            loop {
                let Ok((mut conn, _)) = socket.accept().await else {
                    return;
                };
                let metadata = metadata.to_string();
                let jwks = jwks.clone();
                tokio::spawn(async move {
                    let mut head = vec![0; 4096];
                    let n = conn.read(&mut head).await.unwrap_or(0);
                    let head = String::from_utf8_lossy(&head[..n]).into_owned();
                    let body = if head.starts_with("GET /.well-known/oauth-authorization-server") {
                        metadata
                    } else if head.starts_with("GET /jwks") {
                        let set = {
                            let mut jwks = jwks.lock().unwrap();
                            jwks.1 += 1;
                            jwks.0.clone()
                        };
                        match set {
                            Some(set) => set,
                            None => return std::future::pending().await,
                        }
                    } else {
                        let _ = conn
                            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                            .await;
                        return;
                    };
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = conn.write_all(answer.as_bytes()).await;
                });
            }
        });
        base
    }

    fn auth(issuer: &str) -> ListenAuth {
        ListenAuth::new(issuer, "http://127.0.0.1:9/mcp")
    }

    #[tokio::test]
    async fn an_issuer_that_cannot_be_reached_stops_the_start_saying_so() {
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        let Err(BridgeError::Issuer { issuer, why }) = Identity::discover(&auth(&url)).await else {
            panic!("an unreachable issuer was taken");
        };
        assert_eq!(issuer, url);
        assert!(why.contains("cannot connect"), "{why}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_set_that_never_comes_is_given_up_after_the_fetch_timeout() {
        let url = issuer(None).await;
        let started = tokio::time::Instant::now();
        let Err(BridgeError::Issuer { why, .. }) = Identity::discover(&auth(&url)).await else {
            panic!("a hanging key set was waited for, or taken");
        };
        assert!(why.contains("no answer within the fetch timeout"), "{why}");
        assert!(started.elapsed() >= ListenAuth::new("", "").fetch_timeout);
    }

    #[tokio::test]
    async fn a_key_set_without_a_usable_key_is_refused() {
        let url = issuer(Some(r#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#)).await;
        let Err(BridgeError::Issuer { why, .. }) = Identity::discover(&auth(&url)).await else {
            panic!("a shared secret was taken as the issuer's key");
        };
        assert!(why.contains("no key this gateway can verify with"), "{why}");
    }

    /// A P-256 key: what signs (PKCS#8) and its public JWK under `kid`.
    fn key(kid: &str) -> (jsonwebtoken::EncodingKey, Value) {
        use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        use base64::Engine;
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).unwrap();
        let point = pair.public_key().as_ref().to_vec();
        let jwk = serde_json::json!({"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..])});
        (jsonwebtoken::EncodingKey::from_ec_der(pkcs8.as_ref()), jwk)
    }

    fn token(issuer: &str, kid: &str, key: &jsonwebtoken::EncodingKey, sub: &str) -> String {
        let mut header = jsonwebtoken::Header::new(Algorithm::ES256);
        header.typ = Some("at+jwt".into());
        header.kid = Some(kid.into());
        let claims = serde_json::json!({"iss": issuer, "aud": "http://127.0.0.1:9/mcp",
            "sub": sub, "exp": unix_now() + 600});
        jsonwebtoken::encode(&header, &claims, key).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_rotated_key_is_fetched_once_its_time_has_come_and_never_per_request() {
        let (k1, jwk1) = key("k1");
        let (k2, jwk2) = key("k2");
        let set = |keys: Vec<&Value>| Some(serde_json::json!({"keys": keys}).to_string());
        let jwks = Arc::new(Mutex::new((set(vec![&jwk1]), 0)));
        let url = issuer_of(jwks.clone()).await;
        let identity = Identity::discover(&auth(&url)).await.unwrap();
        let fetched = || jwks.lock().unwrap().1;
        assert_eq!(fetched(), 1);
        let first = token(&url, "k1", &k1, "alice");
        assert_eq!(
            identity
                .check(Some(&format!("Bearer {first}")))
                .await
                .unwrap()
                .subject,
            "alice"
        );
        // The issuer rotates to k2. Just fetched: a token of k2 waits for its time.
        jwks.lock().unwrap().0 = set(vec![&jwk1, &jwk2]);
        let rotated = format!("Bearer {}", token(&url, "k2", &k2, "bob"));
        let refused = identity.check(Some(&rotated)).await.unwrap_err();
        assert!(
            refused.description().contains("does not publish"),
            "{refused:?}"
        );
        assert_eq!(fetched(), 1);
        tokio::time::advance(REFETCH).await;
        assert_eq!(identity.check(Some(&rotated)).await.unwrap().subject, "bob");
        assert_eq!(fetched(), 2);
        // A flood of unknown kids fetches nothing more until the period has passed.
        for n in 0..50 {
            let forged = format!("Bearer {}", token(&url, &format!("forged-{n}"), &k2, "eve"));
            assert!(identity.check(Some(&forged)).await.is_err());
        }
        assert_eq!(fetched(), 2);
        // Verified tokens are remembered: no key is looked at again for them.
        jwks.lock().unwrap().0 = set(vec![]);
        tokio::time::advance(REFETCH).await;
        assert!(identity.check(Some(&rotated)).await.is_ok());
        assert_eq!(fetched(), 2);
    }
}
