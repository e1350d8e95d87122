//! The device authorization grant (RFC 8628), for a machine with no browser and no
//! loopback the browser could reach (a session over SSH): the client asks the
//! authorization server's `device_authorization_endpoint` for a code
//! ([`device_request`], [`parse_device_authorization`]), shows the user where to
//! enter it (on any device), and polls the token endpoint until the user has
//! approved — as a machine with no clock of its own ([`DevicePoll`]).
//!
//! | token endpoint answer | what follows |
//! |---|---|
//! | a token | [`DeviceStep::Done`] with it |
//! | `authorization_pending` | the next poll, `interval` later |
//! | `slow_down` | the interval grows by 5 s, for this and every later poll (§3.5) |
//! | unreachable (the shell's transport failed) | the interval doubles, up to a minute (§3.5's backoff) |
//! | `access_denied`, `expired_token`, any other error | done: that refusal |
//! | no answer before `expires_in` | done: [`DeviceOutcome::Expired`] |
//!
//! The interval is the server's `interval` (5 s when it gives none), never less than
//! a second; the deadline is `expires_in` after the code was issued.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use capable_core::internal::auth::device::{parse_device_authorization, DevicePoll, DeviceStep};
//! use capable_core::internal::auth::TokenError;
//!
//! let answer = br#"{"device_code":"d","user_code":"WDJB-MJHT",
//!     "verification_uri":"https://as.test/device","expires_in":600,"interval":2}"#;
//! let code = parse_device_authorization("https://as.test/device/auth", 200, answer).unwrap();
//! let t0 = Instant::now();
//! let mut poll = DevicePoll::new(&code, t0);
//! assert_eq!(poll.poll_timeout(), Some(t0 + Duration::from_secs(2)));
//! poll.handle_timeout(t0 + Duration::from_secs(2));
//! assert_eq!(poll.poll(), Some(DeviceStep::Request));
//! let pending = TokenError::Refused {
//!     url: "u".into(), status: 400, error: "authorization_pending".into(), description: None,
//! };
//! poll.handle_answer(Err(pending), t0 + Duration::from_secs(2));
//! assert_eq!(poll.poll(), None);
//! assert_eq!(poll.poll_timeout(), Some(t0 + Duration::from_secs(4)));
//! ```

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use super::client::Registration;
use super::token::{authenticated, Grant, Token, TokenError, TokenRequest};

/// The interval when the server names none (RFC 8628 §3.2).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
/// How much `slow_down` adds (§3.5).
pub const SLOW_DOWN: Duration = Duration::from_secs(5);
/// The longest the backoff after unreachable polls grows to.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// What the device authorization endpoint answered (§3.2).
#[derive(Clone, PartialEq, Eq)]
pub struct DeviceAuthorization {
    /// The device code (a secret: it is exchanged for the token).
    pub device_code: String,
    /// The code the user enters.
    pub user_code: String,
    /// Where the user enters it.
    pub verification_uri: String,
    /// The same with the code filled in, when the server gives it.
    pub verification_uri_complete: Option<String>,
    /// How long the codes live.
    pub expires_in: Duration,
    /// How long to wait between polls.
    pub interval: Duration,
}

impl std::fmt::Debug for DeviceAuthorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceAuthorization")
            .field("user_code", &self.user_code)
            .field("verification_uri", &self.verification_uri)
            .field("expires_in", &self.expires_in)
            .field("interval", &self.interval)
            .finish_non_exhaustive()
    }
}

impl DeviceAuthorization {
    /// The grant that polls for the token.
    pub fn grant(&self) -> Grant {
        Grant::DeviceCode {
            device_code: self.device_code.clone(),
        }
    }
}

/// The device authorization request at `endpoint`, for `client`, asking for `scope`
/// on `resource` (the client authenticates as at the token endpoint, §3.1).
pub fn device_request(
    endpoint: &str,
    client: &Registration,
    resource: Option<&str>,
    scope: Option<&str>,
) -> TokenRequest {
    let mut form = Vec::new();
    if let Some(resource) = resource {
        form.push(("resource".to_owned(), resource.to_owned()));
    }
    if let Some(scope) = scope.filter(|s| !s.is_empty()) {
        form.push(("scope".to_owned(), scope.to_owned()));
    }
    authenticated(endpoint, form, Some(client))
}

#[derive(Deserialize)]
struct Answer {
    device_code: Option<String>,
    user_code: Option<String>,
    verification_uri: Option<String>,
    // Some servers (Google's) still say `verification_url`.
    verification_url: Option<String>,
    verification_uri_complete: Option<String>,
    expires_in: Option<Value>,
    interval: Option<Value>,
}

fn seconds(v: Option<Value>) -> Option<u64> {
    v.and_then(|v| {
        v.as_u64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
    })
}

/// The codes in the device authorization endpoint's answer.
pub fn parse_device_authorization(
    url: &str,
    status: u16,
    body: &[u8],
) -> Result<DeviceAuthorization, TokenError> {
    if let Some((error, description)) = super::token::oauth_error(body) {
        return Err(TokenError::Refused {
            url: url.to_owned(),
            status,
            error,
            description,
        });
    }
    let malformed = |detail: &str| TokenError::Malformed {
        url: url.to_owned(),
        status,
        detail: format!(": {detail}"),
    };
    if !(200..300).contains(&status) {
        return Err(TokenError::Malformed {
            url: url.to_owned(),
            status,
            detail: String::new(),
        });
    }
    let answer: Answer =
        serde_json::from_slice(body).map_err(|_| malformed("the answer is not JSON"))?;
    let device_code = answer
        .device_code
        .filter(|c| !c.is_empty())
        .ok_or_else(|| malformed("no device_code"))?;
    let user_code = answer
        .user_code
        .filter(|c| !c.is_empty())
        .ok_or_else(|| malformed("no user_code"))?;
    let verification_uri = answer
        .verification_uri
        .or(answer.verification_url)
        .ok_or_else(|| malformed("no verification_uri"))?;
    let expires_in = seconds(answer.expires_in).ok_or_else(|| malformed("no expires_in"))?;
    let interval = seconds(answer.interval)
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_INTERVAL)
        .max(Duration::from_secs(1));
    Ok(DeviceAuthorization {
        device_code,
        user_code,
        verification_uri,
        verification_uri_complete: answer.verification_uri_complete,
        expires_in: Duration::from_secs(expires_in),
        interval,
    })
}

/// What the shell is to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceStep {
    /// POST the device code grant to the token endpoint, then hand the answer to
    /// [`DevicePoll::handle_answer`] (or [`DevicePoll::handle_unreachable`]).
    Request,
    /// The wait is over.
    Done(DeviceOutcome),
}

/// How the wait ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceOutcome {
    /// The user approved: the token.
    Token(Box<Token>),
    /// The server refused (`access_denied`, `expired_token`, …).
    Refused(TokenError),
    /// The codes expired before the user approved.
    Expired(Duration),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    /// Waiting until the instant.
    Waiting(Instant),
    /// The request is due; [`DevicePoll::poll`] hands it out.
    Due,
    /// A request is out.
    Asking,
    /// Over.
    Done(DeviceOutcome),
    /// Over, and the outcome handed out.
    Finished,
}

/// Polling the token endpoint for the device code's token. See the module
/// documentation.
#[derive(Clone, Debug)]
pub struct DevicePoll {
    interval: Duration,
    deadline: Instant,
    lifetime: Duration,
    backoff: Duration,
    state: State,
}

impl DevicePoll {
    /// Polling for `code`, issued at `now`.
    pub fn new(code: &DeviceAuthorization, now: Instant) -> DevicePoll {
        DevicePoll {
            interval: code.interval,
            deadline: now + code.expires_in,
            lifetime: code.expires_in,
            backoff: code.interval,
            state: State::Waiting(now + code.interval),
        }
    }

    /// The interval between polls now.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// When [`DevicePoll::handle_timeout`] is to be called next (`None`: nothing to
    /// wait for, [`DevicePoll::poll`] has the next step).
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Waiting(at) => Some(at.min(self.deadline)),
            State::Asking => Some(self.deadline),
            _ => None,
        }
    }

    /// The clock reached `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        match self.state {
            _ if matches!(self.state, State::Done(_) | State::Finished) => {}
            _ if now >= self.deadline => {
                self.state = State::Done(DeviceOutcome::Expired(self.lifetime));
            }
            State::Waiting(at) if now >= at => self.state = State::Due,
            _ => {}
        }
    }

    /// The next step, once.
    pub fn poll(&mut self) -> Option<DeviceStep> {
        match std::mem::replace(&mut self.state, State::Finished) {
            State::Due => {
                self.state = State::Asking;
                Some(DeviceStep::Request)
            }
            State::Done(outcome) => Some(DeviceStep::Done(outcome)),
            other => {
                self.state = other;
                None
            }
        }
    }

    /// The token endpoint's answer to the request, read at `now`.
    pub fn handle_answer(&mut self, answer: Result<Token, TokenError>, now: Instant) {
        if self.state != State::Asking {
            return;
        }
        self.backoff = self.interval;
        self.state = match answer {
            Ok(token) => State::Done(DeviceOutcome::Token(Box::new(token))),
            Err(e) => match e.code() {
                Some("authorization_pending") => State::Waiting(now + self.interval),
                Some("slow_down") => {
                    self.interval += SLOW_DOWN;
                    self.backoff = self.interval;
                    State::Waiting(now + self.interval)
                }
                _ => State::Done(DeviceOutcome::Refused(e)),
            },
        };
        self.handle_timeout(now);
    }

    /// The request could not reach the token endpoint at `now`: the next one waits
    /// twice as long as the last wait, up to [`MAX_BACKOFF`].
    pub fn handle_unreachable(&mut self, now: Instant) {
        if self.state != State::Asking {
            return;
        }
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF).max(self.interval);
        self.state = State::Waiting(now + self.backoff);
        self.handle_timeout(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::client::{AuthMethod, RegistrationSource};
    use crate::auth::token::token_request;

    fn code(interval: Option<u64>, expires_in: u64) -> DeviceAuthorization {
        let mut body = serde_json::json!({
            "device_code": "dev-secret", "user_code": "ABCD-EFGH",
            "verification_uri": "https://as.test/device",
            "verification_uri_complete": "https://as.test/device?user_code=ABCD-EFGH",
            "expires_in": expires_in,
        });
        if let Some(i) = interval {
            body["interval"] = i.into();
        }
        parse_device_authorization("u", 200, body.to_string().as_bytes()).unwrap()
    }

    fn refused(error: &str) -> TokenError {
        TokenError::Refused {
            url: "u".into(),
            status: 400,
            error: error.into(),
            description: None,
        }
    }

    fn token() -> Token {
        Token {
            access_token: "a".into(),
            token_type: "Bearer".into(),
            refresh_token: None,
            expires_at: None,
            scope: None,
            requested_scope: None,
            received_at: 0,
        }
    }

    /// Runs the poll to its next request (or end) on the fake clock; returns when.
    fn next(poll: &mut DevicePoll) -> (Instant, Option<DeviceStep>) {
        let at = poll.poll_timeout().expect("a timer");
        poll.handle_timeout(at);
        (at, poll.poll())
    }

    #[test]
    fn the_answer_is_read_with_the_rfc_defaults() {
        let c = code(None, 600);
        assert_eq!(c.interval, DEFAULT_INTERVAL);
        assert_eq!(c.expires_in, Duration::from_secs(600));
        assert!(!format!("{c:?}").contains("dev-secret"));
        assert_eq!(code(Some(0), 600).interval, Duration::from_secs(1));
        let google = br#"{"device_code":"d","user_code":"u","verification_url":"https://g.test/device","expires_in":"1800","interval":"5"}"#;
        let g = parse_device_authorization("u", 200, google).unwrap();
        assert_eq!(g.verification_uri, "https://g.test/device");
        assert!(parse_device_authorization("u", 200, br#"{"user_code":"u"}"#).is_err());
        let e = parse_device_authorization(
            "u",
            400,
            br#"{"error":"unauthorized_client","error_description":"device flow off"}"#,
        )
        .unwrap_err();
        assert_eq!(e.code(), Some("unauthorized_client"));
    }

    #[test]
    fn the_request_names_the_client_the_scope_and_the_resource_but_no_grant() {
        let client = Registration {
            issuer: "i".into(),
            client_id: "c".into(),
            client_secret: None,
            auth_method: AuthMethod::None,
            redirect_uris: vec![],
            grant_types: vec![],
            scope: None,
            source: RegistrationSource::Dynamic,
        };
        let r = device_request(
            "https://as.test/device/auth",
            &client,
            Some("https://mcp.test/mcp"),
            Some("a b"),
        );
        let names: Vec<&str> = r.form.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["resource", "scope", "client_id"]);
        let grant = token_request("t", &code(None, 60).grant(), Some(&client), None, None);
        assert_eq!(
            grant.form[0],
            ("grant_type".into(), crate::auth::client::DEVICE_CODE.into())
        );
        assert_eq!(grant.form[1], ("device_code".into(), "dev-secret".into()));
    }

    #[test]
    fn pending_waits_the_interval_slow_down_adds_five_seconds_for_good() {
        let t0 = Instant::now();
        let mut poll = DevicePoll::new(&code(Some(2), 600), t0);
        assert_eq!(poll.poll(), None, "nothing before the first interval");
        let (at, step) = next(&mut poll);
        assert_eq!(
            (at, step),
            (t0 + Duration::from_secs(2), Some(DeviceStep::Request))
        );
        assert_eq!(poll.poll(), None, "one request at a time");
        poll.handle_answer(Err(refused("authorization_pending")), at);
        let (at, step) = next(&mut poll);
        assert_eq!(
            (at, step),
            (t0 + Duration::from_secs(4), Some(DeviceStep::Request))
        );
        poll.handle_answer(Err(refused("slow_down")), at);
        assert_eq!(poll.interval(), Duration::from_secs(7));
        let (at, _) = next(&mut poll);
        assert_eq!(at, t0 + Duration::from_secs(11));
        poll.handle_answer(Err(refused("authorization_pending")), at);
        let (at, _) = next(&mut poll);
        assert_eq!(at, t0 + Duration::from_secs(18), "slow_down lasts");
        poll.handle_answer(Ok(token()), at);
        assert!(matches!(
            poll.poll(),
            Some(DeviceStep::Done(DeviceOutcome::Token(_)))
        ));
        assert_eq!((poll.poll(), poll.poll_timeout()), (None, None));
    }

    #[test]
    fn a_refusal_ends_it_and_so_does_the_codes_expiry() {
        let t0 = Instant::now();
        let mut denied = DevicePoll::new(&code(Some(1), 60), t0);
        let (at, _) = next(&mut denied);
        denied.handle_answer(Err(refused("access_denied")), at);
        assert!(matches!(
            denied.poll(),
            Some(DeviceStep::Done(DeviceOutcome::Refused(e))) if e.code() == Some("access_denied")
        ));
        // Expiry: the last poll would come after the deadline, which ends the wait.
        let mut late = DevicePoll::new(&code(Some(4), 10), t0);
        let (at, _) = next(&mut late);
        late.handle_answer(Err(refused("authorization_pending")), at);
        let (at, _) = next(&mut late);
        late.handle_answer(Err(refused("authorization_pending")), at);
        assert_eq!(late.poll_timeout(), Some(t0 + Duration::from_secs(10)));
        let (at, step) = next(&mut late);
        assert_eq!(at, t0 + Duration::from_secs(10));
        assert_eq!(
            step,
            Some(DeviceStep::Done(DeviceOutcome::Expired(
                Duration::from_secs(10)
            )))
        );
    }

    #[test]
    fn an_unreachable_token_endpoint_backs_off() {
        let t0 = Instant::now();
        let mut poll = DevicePoll::new(&code(Some(5), 600), t0);
        let (at, _) = next(&mut poll);
        poll.handle_unreachable(at);
        let (at2, _) = next(&mut poll);
        assert_eq!(at2 - at, Duration::from_secs(10));
        poll.handle_unreachable(at2);
        let (at3, _) = next(&mut poll);
        assert_eq!(at3 - at2, Duration::from_secs(20));
        poll.handle_answer(Err(refused("authorization_pending")), at3);
        let (at4, _) = next(&mut poll);
        assert_eq!(at4 - at3, Duration::from_secs(5), "back to the interval");
    }
}
