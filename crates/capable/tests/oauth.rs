//! OAuth end to end against an in-test authorization server and MCP server (one
//! scripted peer on 127.0.0.1): refresh with rotating refresh tokens, a token expiring
//! or revoked mid-session, two clients sharing a store refreshing once, a 401 on the
//! long-lived GET stream, a step-up while that stream is open, a login slower than the
//! handshake's probe timeout (the clock stops while authorizing), a login through the
//! host's own server (its redirect URI, the person approving on the page it shows),
//! and no secret in any error, debug output or tapped message.

use capable_test_support::http_peer;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::auth::{FileStore, LoginMode, MemoryStore, OAuthClient, OAuthConfig, TokenEvent};
use capable::{ClientOptions, Error, HttpConfig, ProtocolChoice, Reconnect, Session, Tap};
use http_peer::{event, initialize_result, result, Peer, Reply, Seen};
use serde_json::{json, Value};

const SECRET: &str = "client-secret-do-not-print";

/// What the authorization server and the MCP server know.
#[derive(Default)]
struct World {
    base: String,
    /// Access tokens the MCP server accepts, with their scope.
    valid: Vec<(String, String)>,
    /// The refresh token that may be used (rotation: each use replaces it).
    refresh: Option<String>,
    issued: u32,
    refreshes: u32,
    reused_refresh: u32,
    authorizations: Vec<String>,
    /// Seconds each access token lives.
    expires_in: u64,
    /// `tools/call` needs this scope.
    call_scope: Option<String>,
    /// Its 403 names no scope, only a description (the Python SDK's shape).
    silent_scope: bool,
    /// Echo secrets in error bodies (the redaction test).
    hostile: bool,
    /// Accept no token at all (the redaction test).
    never_accept: bool,
    /// Answer `server/discover` (a 2026-07-28 server).
    modern: bool,
    /// How long the user takes to authorize.
    slow_authorize: Duration,
    /// The authorization endpoint shows a page (the person must approve: the query
    /// then carries `approved=1`) instead of redirecting back at once.
    asks: bool,
    /// The GET stream's events, fed by the test.
    stream: Option<tokio::sync::mpsc::UnboundedReceiver<String>>,
}

type Shared = Arc<Mutex<World>>;

fn reply_json(status: u16, v: Value) -> Reply {
    Reply::Json(status, vec![], v)
}

fn challenge(w: &World, status: u16, extra: &str) -> Reply {
    let header = format!(
        r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp"{extra}"#,
        w.base
    );
    Reply::Json(
        status,
        vec![("www-authenticate".into(), header)],
        json!({"error": "invalid_token"}),
    )
}

fn issue(w: &mut World, scope: &str) -> Value {
    w.issued += 1;
    let access = format!("access-{}-{scope}", w.issued);
    let refresh = format!("refresh-{}", w.issued);
    w.valid.push((access.clone(), scope.to_owned()));
    w.refresh = Some(refresh.clone());
    json!({"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
           "expires_in": w.expires_in, "scope": scope})
}

fn handle(world: &Shared, s: &Seen) -> Reply {
    let mut w = world.lock().unwrap();
    let path = s.path.split('?').next().unwrap_or("").to_owned();
    match (s.method.as_str(), path.as_str()) {
        ("GET", "/.well-known/oauth-protected-resource/mcp") => reply_json(
            200,
            json!({
            "resource": format!("{}/mcp", w.base), "authorization_servers": [w.base]}),
        ),
        ("GET", "/.well-known/oauth-authorization-server") => reply_json(
            200,
            json!({
            "issuer": w.base,
            "authorization_endpoint": format!("{}/authorize", w.base),
            "token_endpoint": format!("{}/token", w.base),
            "registration_endpoint": format!("{}/register", w.base),
            "code_challenge_methods_supported": ["S256"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
            "authorization_response_iss_parameter_supported": true}),
        ),
        ("POST", "/register") => reply_json(
            201,
            json!({"client_id": "client-1", "client_secret": SECRET,
            "token_endpoint_auth_method": "client_secret_post"}),
        ),
        ("GET", "/authorize") => {
            std::thread::sleep(w.slow_authorize);
            let q = s.query();
            if w.asks && !q.contains_key("approved") {
                return Reply::Status(200, vec![]);
            }
            w.authorizations
                .push(q.get("scope").cloned().unwrap_or_default());
            let location = format!(
                "{}?code=the-code&state={}&iss={}",
                q["redirect_uri"],
                q["state"],
                url::form_urlencoded::byte_serialize(w.base.as_bytes()).collect::<String>()
            );
            Reply::Status(302, vec![("location".into(), location)])
        }
        ("POST", "/token") => {
            let form = s.form();
            assert_eq!(form.get("client_secret").map(String::as_str), Some(SECRET));
            assert_eq!(form.get("resource"), Some(&format!("{}/mcp", w.base)));
            match form["grant_type"].as_str() {
                "authorization_code" => {
                    let scope = w.authorizations.last().cloned().unwrap_or_default();
                    reply_json(200, issue(&mut w, &scope))
                }
                "refresh_token" => {
                    w.refreshes += 1;
                    let presented = form["refresh_token"].clone();
                    if w.hostile {
                        let description =
                            format!("bad token {presented} for {}", form["client_secret"]);
                        return reply_json(
                            400,
                            json!({"error": "invalid_request", "error_description": description}),
                        );
                    }
                    if w.refresh.as_deref() != Some(presented.as_str()) {
                        w.reused_refresh += 1;
                        return reply_json(
                            400,
                            json!({"error": "invalid_grant", "error_description": "spent"}),
                        );
                    }
                    let scope = w.valid.last().map(|(_, s)| s.clone()).unwrap_or_default();
                    reply_json(200, issue(&mut w, &scope))
                }
                other => reply_json(
                    400,
                    json!({"error": "unsupported_grant_type", "error_description": other}),
                ),
            }
        }
        (_, "/mcp") => {
            let auth = s.header("authorization").unwrap_or("").to_owned();
            let token = auth.strip_prefix("Bearer ").unwrap_or("");
            let accepted = w
                .valid
                .iter()
                .find(|(t, _)| t == token)
                .cloned()
                .filter(|_| !w.never_accept);
            let Some((_, scope)) = accepted else {
                if w.hostile && !auth.is_empty() {
                    return Reply::Json(
                        401,
                        vec![("www-authenticate".into(), "Basic".into())],
                        json!({"error": format!("you sent {auth}")}),
                    );
                }
                return challenge(&w, 401, r#", scope="mcp""#);
            };
            let id = s.rpc_id().cloned().unwrap_or(Value::Null);
            match (s.method.as_str(), s.rpc_method()) {
                ("POST", Some("server/discover")) if w.modern => reply_json(
                    200,
                    capable_test_support::discover_result(&id, json!({"tools": {}})),
                ),
                ("POST", Some("initialize")) => Reply::Json(
                    200,
                    vec![("mcp-session-id".into(), "s1".into())],
                    initialize_result(&id, "2025-11-25", json!({"tools": {}})),
                ),
                ("POST", Some(m)) if m.starts_with("notifications/") => Reply::Status(202, vec![]),
                ("POST", Some("tools/list")) => reply_json(
                    200,
                    result(
                        &id,
                        json!({"tools": [
                    {"name": "t", "inputSchema": {"type": "object"}}]}),
                    ),
                ),
                ("POST", Some("tools/call")) => match &w.call_scope {
                    Some(needed) if !scope.split(' ').any(|s| s == needed) => {
                        let extra = if w.silent_scope {
                            format!(
                                r#", error="insufficient_scope", error_description="Required scope: {needed}""#
                            )
                        } else {
                            format!(r#", error="insufficient_scope", scope="{needed}""#)
                        };
                        challenge(&w, 403, &extra)
                    }
                    _ => reply_json(
                        200,
                        result(&id, json!({"content": [{"type": "text", "text": "ok"}]})),
                    ),
                },
                ("GET", _) => match w.stream.take() {
                    Some(rx) => Reply::Stream(rx),
                    None => Reply::Status(405, vec![]),
                },
                ("DELETE", _) => Reply::Status(200, vec![]),
                _ => reply_json(200, result(&id, json!({}))),
            }
        }
        _ => Reply::Status(404, vec![]),
    }
}

async fn world(setup: impl FnOnce(&mut World)) -> (Peer, Shared) {
    let shared: Shared = Arc::new(Mutex::new(World {
        expires_in: 3600,
        ..World::default()
    }));
    setup(&mut shared.lock().unwrap());
    let s2 = shared.clone();
    let peer = Peer::start("/mcp", move |seen| handle(&s2, seen)).await;
    shared.lock().unwrap().base = format!("http://127.0.0.1:{}", peer.port);
    (peer, shared)
}

fn oauth(peer: &Peer, store: Arc<dyn capable::auth::CredentialStore>) -> Arc<OAuthClient> {
    let mut config = OAuthConfig::new(store);
    config.mode = LoginMode::Headless;
    config.timeout = Duration::from_secs(5);
    Arc::new(OAuthClient::new(peer.url.parse().unwrap(), config).unwrap())
}

/// Observes `client`'s token events; the function says whether a second observer
/// could be set.
fn observed(client: &OAuthClient) -> (impl Fn() -> bool + '_, Arc<Mutex<Vec<TokenEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    assert!(client.observe(move |e| seen.lock().unwrap().push(e)));
    (move || client.observe(|_| {}), events)
}

async fn connect(peer: &Peer, oauth: Arc<OAuthClient>, tap: Option<Tap>) -> Result<Session, Error> {
    connect_as(peer, oauth, tap, ProtocolChoice::Legacy).await
}

async fn connect_as(
    peer: &Peer,
    oauth: Arc<OAuthClient>,
    tap: Option<Tap>,
    protocol: ProtocolChoice,
) -> Result<Session, Error> {
    let mut config = HttpConfig::new(peer.url.parse().unwrap());
    config.oauth = Some(oauth);
    config.reconnect = Reconnect {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(20),
        attempts: 3,
        reissues: 2,
        ..Reconnect::default()
    };
    let mut options = ClientOptions::default()
        .with_protocol(protocol)
        .with_probe_timeout(Duration::from_millis(300))
        .with_request_timeout(Duration::from_secs(10));
    options.tap = tap;
    tokio::time::timeout(
        Duration::from_secs(20),
        capable::connect_http(config, options),
    )
    .await
    .expect("connect in time")
}

/// The access tokens the MCP server was shown, in order (and none elsewhere).
fn presented(peer: &Peer) -> Vec<String> {
    let seen = peer.seen();
    for s in &seen {
        if !s.path.starts_with("/mcp") {
            assert!(
                s.header("authorization")
                    .is_none_or(|a| !a.contains("access-")),
                "a token went to {}",
                s.path
            );
        }
    }
    seen.iter()
        .filter(|s| s.path.starts_with("/mcp"))
        .filter_map(|s| s.header("authorization").map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_waits_for_a_login_that_takes_longer_than_its_timeout() {
    // The user takes 1 s to log in; the modern probe would give up after 300 ms.
    let (peer, w) = world(|w| {
        w.modern = true;
        w.slow_authorize = Duration::from_secs(1);
    })
    .await;
    let session = connect_as(
        &peer,
        oauth(&peer, Arc::new(MemoryStore::new())),
        None,
        ProtocolChoice::Auto,
    )
    .await
    .unwrap();
    assert_eq!(
        session.era(),
        capable::Era::Modern,
        "no fallback while authorizing"
    );
    assert!(peer.posts("initialize").is_empty());
    session.list_tools().await.unwrap();
    session.close().await;
    assert_eq!(w.lock().unwrap().authorizations.len(), 1);
}

/// The GETs of the MCP endpoint (its event stream).
fn mcp_gets(peer: &Peer) -> Vec<Seen> {
    peer.requests("GET")
        .into_iter()
        .filter(|s| s.path.starts_with("/mcp"))
        .collect()
}

#[tokio::test]
async fn a_token_expiring_mid_session_is_refreshed_with_rotation_before_each_use() {
    // Tokens that expire as they are issued: every request must refresh first.
    let (peer, w) = world(|w| w.expires_in = 0).await;
    let client = oauth(&peer, Arc::new(MemoryStore::new()));
    let (told, events) = observed(&client);
    let session = connect(&peer, client.clone(), None).await.unwrap();
    for _ in 0..3 {
        session.list_tools().await.unwrap();
    }
    session.close().await;
    let w = w.lock().unwrap();
    assert_eq!(w.authorizations.len(), 1, "one login");
    assert!(
        w.refreshes >= 3,
        "refreshed before the requests: {}",
        w.refreshes
    );
    // An observer hears of each refresh, and of nothing else (not the login).
    assert!(!told(), "one observer a client");
    let events = events.lock().unwrap();
    assert_eq!(events.len(), w.refreshes as usize, "{events:?}");
    assert!(events.iter().all(|e| *e == TokenEvent::Refreshed));
    assert_eq!(
        w.reused_refresh, 0,
        "a rotated refresh token is never used twice"
    );
    let tokens: HashSet<String> = presented(&peer).into_iter().collect();
    assert!(tokens.len() >= 3, "{tokens:?}");
}

#[tokio::test]
async fn a_token_revoked_mid_session_is_refreshed_on_401_and_the_request_replayed() {
    let (peer, w) = world(|_| {}).await;
    let session = connect(&peer, oauth(&peer, Arc::new(MemoryStore::new())), None)
        .await
        .unwrap();
    session.list_tools().await.unwrap();
    w.lock().unwrap().valid.clear();
    session.list_tools().await.unwrap();
    session.close().await;
    let w = w.lock().unwrap();
    assert_eq!((w.authorizations.len(), w.refreshes), (1, 1));
    assert_eq!(
        peer.posts("tools/list").len(),
        3,
        "the refused request was replayed once"
    );
}

#[tokio::test]
async fn two_clients_sharing_a_store_spend_a_rotating_refresh_token_once() {
    // The login's token expires as it is issued; the refreshed one lives 30 s (fresh:
    // a token just received is never refreshed at once).
    let (peer, w) = world(|w| w.expires_in = 0).await;
    let dir = std::env::temp_dir().join(format!("capable-oauth-shared-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("credentials.json");
    let first = oauth(&peer, Arc::new(FileStore::new(&path)));
    first.login().await.unwrap();
    w.lock().unwrap().expires_in = 30;
    // Two processes' worth of clients: their own memory, one file.
    let a = oauth(&peer, Arc::new(FileStore::new(&path)));
    let b = oauth(&peer, Arc::new(FileStore::new(&path)));
    let (ta, tb) = tokio::join!(a.access_token(), b.access_token());
    let (ta, tb) = (ta.unwrap(), tb.unwrap());
    let w = w.lock().unwrap();
    assert_eq!(
        w.reused_refresh, 0,
        "the second saw the first's token instead of refreshing"
    );
    assert_eq!(w.refreshes, 1);
    assert_eq!(ta, tb);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_401_on_the_long_lived_get_stream_refreshes_and_reopens_it() {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (peer, w) = world(|w| w.stream = Some(rx)).await;
    let session = connect(&peer, oauth(&peer, Arc::new(MemoryStore::new())), None)
        .await
        .unwrap();
    let mut notifications = session.notifications().unwrap();
    tx.send(event(
        None,
        &json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
    ))
    .unwrap();
    tokio::time::timeout(Duration::from_secs(5), notifications.recv())
        .await
        .unwrap()
        .unwrap();
    // The token is revoked and the stream ends: its reconnect meets a 401.
    let (tx2, rx2) = tokio::sync::mpsc::unbounded_channel();
    {
        let mut w = w.lock().unwrap();
        w.valid.clear();
        w.stream = Some(rx2);
    }
    drop(tx);
    tx2.send(event(
        None,
        &json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}),
    ))
    .unwrap();
    let n = tokio::time::timeout(Duration::from_secs(5), notifications.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n.method, "notifications/resources/list_changed");
    let gets: Vec<Seen> = mcp_gets(&peer);
    assert!(gets.len() >= 3, "opened, refused, reopened: {}", gets.len());
    assert_ne!(
        gets[0].header("authorization"),
        gets.last().unwrap().header("authorization")
    );
    session.close().await;
    assert_eq!(w.lock().unwrap().refreshes, 1);
}

#[tokio::test]
async fn step_up_while_the_stream_is_open_asks_for_the_union_and_replays_once() {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (peer, w) = world(|w| {
        w.stream = Some(rx);
        w.call_scope = Some("write".into());
    })
    .await;
    let session = connect(&peer, oauth(&peer, Arc::new(MemoryStore::new())), None)
        .await
        .unwrap();
    let mut notifications = session.notifications().unwrap();
    tx.send(event(
        None,
        &json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
    ))
    .unwrap();
    tokio::time::timeout(Duration::from_secs(5), notifications.recv())
        .await
        .unwrap()
        .unwrap();
    let called = session.call_tool("t", None).await.unwrap();
    assert_eq!(called.content[0]["text"], "ok");
    // The stream stayed open across the step-up and still delivers.
    tx.send(event(
        None,
        &json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}),
    ))
    .unwrap();
    let n = tokio::time::timeout(Duration::from_secs(5), notifications.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n.method, "notifications/prompts/list_changed");
    assert_eq!(mcp_gets(&peer).len(), 1, "the stream was not reopened");
    session.close().await;
    let w = w.lock().unwrap();
    assert_eq!(
        w.authorizations,
        ["mcp", "mcp write"],
        "the union of scopes"
    );
    assert_eq!(peer.posts("tools/call").len(), 2);
}

/// A 403 that names no scope (the Python SDK's): with the scope configured, the
/// stored token steps up to the union of its scopes and the configured ones; without,
/// the refusal stands, quoting the server and saying what the token holds.
#[tokio::test]
async fn a_refusal_naming_no_scope_steps_up_to_the_configured_scopes() {
    let (peer, w) = world(|w| {
        w.call_scope = Some("write".into());
        w.silent_scope = true;
    })
    .await;
    let store: Arc<dyn capable::auth::CredentialStore> = Arc::new(MemoryStore::new());
    let session = connect(&peer, oauth(&peer, store.clone()), None)
        .await
        .unwrap();
    let refused = session.call_tool("t", None).await.unwrap_err();
    let words = refused.to_string();
    assert!(words.contains("Required scope: write"), "{words}");
    assert!(
        words.contains("names no scope") && words.contains("holds mcp"),
        "{words}"
    );
    assert!(
        matches!(
            refused,
            Error::Auth(capable::auth::AuthError::InsufficientScope(_))
        ),
        "{refused:?}"
    );
    session.close().await;
    // The next run, with the scope configured, uses the stored token and steps up.
    let mut config = OAuthConfig::new(store);
    config.mode = LoginMode::Headless;
    config.scopes = vec!["write".into()];
    let client = Arc::new(OAuthClient::new(peer.url.parse().unwrap(), config).unwrap());
    let session = connect(&peer, client, None).await.unwrap();
    let called = session.call_tool("t", None).await.unwrap();
    assert_eq!(called.content[0]["text"], "ok");
    session.close().await;
    assert_eq!(w.lock().unwrap().authorizations, ["mcp", "mcp write"]);
}

#[tokio::test]
async fn no_secret_reaches_an_error_a_debug_output_or_the_tap() {
    let (peer, w) = world(|_| {}).await;
    let seen = Arc::new(Mutex::new(String::new()));
    let s2 = seen.clone();
    let tap = Tap::new(move |_, line| s2.lock().unwrap().push_str(&String::from_utf8_lossy(line)));
    let client = oauth(&peer, Arc::new(MemoryStore::new()));
    let session = connect(&peer, client.clone(), Some(tap)).await.unwrap();
    session.list_tools().await.unwrap();
    let token = w.lock().unwrap().valid[0].0.clone();
    let refresh = w.lock().unwrap().refresh.clone().unwrap();
    // The servers turn hostile: their errors echo what they were sent. A refresh
    // refused with the refresh token and the client secret in its description:
    {
        let mut w = w.lock().unwrap();
        w.hostile = true;
        w.valid.clear();
    }
    let refused = session.list_tools().await.unwrap_err();
    assert!(matches!(refused, Error::Auth(_)), "{refused}");
    assert!(refused.to_string().contains("[redacted]"), "{refused}");
    // A token that is never accepted, the refusal echoing the Authorization header:
    {
        let mut w = w.lock().unwrap();
        w.hostile = false;
        w.never_accept = true;
        w.refresh = None;
    }
    let echoed = session.list_tools().await.unwrap_err();
    assert!(
        matches!(echoed, Error::Http { status: 401, .. }),
        "{echoed}"
    );
    let mut outputs = vec![
        refused.to_string(),
        format!("{refused:?}"),
        echoed.to_string(),
        format!("{echoed:?}"),
    ];
    outputs.push(format!("{client:?}"));
    outputs.push(seen.lock().unwrap().clone());
    outputs.push(format!("{:?}", client.status().unwrap()));
    session.close().await;
    let w = w.lock().unwrap();
    let mut secrets: Vec<String> = w.valid.iter().map(|(t, _)| t.clone()).collect();
    secrets.extend([token, refresh, SECRET.to_owned()]);
    for out in &outputs {
        for secret in &secrets {
            assert!(!out.contains(secret.as_str()), "{secret:?} in {out}");
        }
    }
}

/// A host that receives the redirect on a server of its own logs in with its redirect
/// URI, whatever login mode its client was made with: the person approves on the page
/// the host shows (here: the URL fetched with the approval, its redirect's query
/// handed back), and the token is stored.
#[tokio::test]
async fn a_login_through_the_hosts_own_server_uses_its_redirect_and_stores_the_token() {
    let (peer, w) = world(|w| w.asks = true).await;
    let store = Arc::new(MemoryStore::new());
    let mut config = OAuthConfig::new(store.clone());
    config.mode = LoginMode::Never;
    config.timeout = Duration::from_secs(5);
    let client = OAuthClient::new(peer.url.parse().unwrap(), config).unwrap();
    let shown = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = shown.clone();
    let redirect = capable::auth::HostRedirect {
        uri: "http://127.0.0.1:9/callback".into(),
        authorize: Arc::new(move |url: reqwest::Url| {
            seen.lock().unwrap().push(url.to_string());
            Box::pin(async move {
                let approved = format!("{url}&approved=1");
                let answer = reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .unwrap()
                    .get(approved)
                    .send()
                    .await
                    .unwrap();
                let back = answer.headers()["location"].to_str().unwrap().to_owned();
                assert!(back.starts_with("http://127.0.0.1:9/callback?"), "{back}");
                Ok(back.split_once('?').unwrap().1.to_owned())
            })
        }),
    };
    let login = client.login_via(&redirect).await.unwrap();
    assert!(
        matches!(login, capable::auth::Login::Authorized(_)),
        "{login:?}"
    );
    let shown = shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 1, "the person was shown the URL once");
    assert!(
        shown[0].contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback"),
        "{}",
        shown[0]
    );
    use capable::auth::CredentialStore;
    assert_eq!(store.all_tokens().unwrap().len(), 1, "stored");
    assert_eq!(w.lock().unwrap().issued, 1);
}
