//! When the MCP server refuses a request for want of authorization, and what to do.
//!
//! [`classify`] reads a response's status and challenges:
//!
//! | answer | need |
//! |---|---|
//! | 401 with `error="use_dpop_nonce"` and a `DPoP-Nonce` | [`NeedKind::DpopNonce`] |
//! | 401 (any challenge, or none) | [`NeedKind::Unauthorized`] |
//! | 403 with `error="insufficient_scope"` | [`NeedKind::InsufficientScope`] |
//! | anything else | none: an HTTP failure like any other |
//!
//! **The replay rule**: the request that met the need is replayed once the shell has
//! acted on it, once per kind of need ([`Rounds`]): a request may go 401 → token →
//! 403 → step-up → success, or 401 → token → nonce → success, but a replay that meets
//! the same kind of refusal again fails with it (a nonce may rotate once more).
//!
//! [`remedy`] is what the shell's authorization layer does about a need, given the
//! token it holds: retry with a newer token another request already got, use the
//! server's nonce, refresh, authorize, step up to the union of scopes — or, for a
//! refusal that names no scope and leaves nothing new to ask for, step up once to the
//! scopes the metadata lists ([`Remedy::StepUpToListed`], decided by
//! [`scope::listed_step_up`] once the shell has the metadata) — or give up: for want
//! of scope with a [`ScopeRefusal`] that says what the token holds and what the
//! server said.

use super::challenge::{oauth_challenges, Challenge};
use super::scope;
use super::token::Token;

/// The kind of an authorization need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NeedKind {
    /// 401: no token, or one the server no longer accepts.
    Unauthorized,
    /// 403 `insufficient_scope`: a token with more scopes is needed.
    InsufficientScope,
    /// The server wants DPoP proofs to carry its nonce.
    DpopNonce,
}

/// A refusal the authorization layer may be able to answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthNeed {
    /// What kind.
    pub kind: NeedKind,
    /// The HTTP status.
    pub status: u16,
    /// The `Bearer` and `DPoP` challenges of `WWW-Authenticate`.
    pub challenges: Vec<Challenge>,
    /// The `DPoP-Nonce` header.
    pub dpop_nonce: Option<String>,
    /// The URL of the refused request.
    pub url: String,
}

impl AuthNeed {
    /// The first challenge's `resource_metadata`.
    pub fn resource_metadata(&self) -> Option<&str> {
        self.challenges
            .iter()
            .find_map(Challenge::resource_metadata)
    }

    /// The scopes the challenges name.
    pub fn scopes(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in self.challenges.iter().flat_map(Challenge::scopes) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    /// The first challenge's `error`.
    pub fn error(&self) -> Option<&str> {
        self.challenges.iter().find_map(Challenge::error)
    }

    /// The first challenge's `error_description`.
    pub fn description(&self) -> Option<&str> {
        self.challenges
            .iter()
            .find_map(|c| c.param("error_description"))
            .filter(|d| !d.is_empty())
    }

    /// Whether the server asked for DPoP (a `DPoP` challenge).
    pub fn wants_dpop(&self) -> bool {
        self.challenges.iter().any(|c| c.is("dpop"))
    }
}

/// The need in a response, if any (see the module documentation).
pub fn classify(
    status: u16,
    www_authenticate: &[String],
    dpop_nonce: Option<&str>,
    url: &str,
) -> Option<AuthNeed> {
    let challenges = oauth_challenges(www_authenticate);
    let error = challenges.iter().find_map(Challenge::error);
    let kind = match (status, error) {
        (401 | 400, Some("use_dpop_nonce")) if dpop_nonce.is_some() => NeedKind::DpopNonce,
        (401, _) => NeedKind::Unauthorized,
        (403, Some("insufficient_scope")) => NeedKind::InsufficientScope,
        _ => return None,
    };
    Some(AuthNeed {
        kind,
        status,
        challenges,
        dpop_nonce: dpop_nonce.map(str::to_owned),
        url: url.to_owned(),
    })
}

/// The needs one request has met, to replay it once per kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rounds {
    unauthorized: u8,
    scope: u8,
    nonce: u8,
}

impl Rounds {
    /// Whether a request that met `kind` may be replayed after the need is answered
    /// (and counts it).
    pub fn admit(&mut self, kind: NeedKind) -> bool {
        let (count, max) = match kind {
            NeedKind::Unauthorized => (&mut self.unauthorized, 1),
            NeedKind::InsufficientScope => (&mut self.scope, 1),
            NeedKind::DpopNonce => (&mut self.nonce, 2),
        };
        if *count >= max {
            return false;
        }
        *count += 1;
        true
    }
}

/// What the authorization layer does about a need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Remedy {
    /// Another request already got a newer token: replay with it.
    Retry,
    /// Replay with DPoP proofs carrying this nonce.
    UseNonce(String),
    /// Refresh the token (and authorize if that fails).
    Refresh,
    /// Discover and authorize, asking for these scopes (from the challenge).
    Authorize {
        /// The challenge's scopes.
        scopes: Vec<String>,
    },
    /// Authorize again for the union of scopes.
    StepUp {
        /// The union.
        scopes: Vec<String>,
    },
    /// A 403 `insufficient_scope` that names no scope, and the token holds every scope
    /// asked for and configured: discover, then step up to
    /// [`scope::listed_step_up`]'s scopes — or, when that is `None`, the refusal stands.
    StepUpToListed(ScopeRefusal),
    /// A 403 `insufficient_scope` no step-up can answer: the refusal stands.
    ScopeExhausted(ScopeRefusal),
    /// Nothing to do: the refusal stands.
    GiveUp(String),
}

/// A refusal for want of scope that no step-up answers, in words that say what the
/// token holds and what the server said.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.words())]
pub struct ScopeRefusal {
    /// The scopes the challenge names (often none).
    pub challenged: Vec<String>,
    /// The scopes the token was asked for and granted.
    pub held: Vec<String>,
    /// The challenge's `error_description`.
    pub description: Option<String>,
    /// The step-up authorizations already made.
    pub step_ups: u32,
}

impl ScopeRefusal {
    fn words(&self) -> String {
        let said = self
            .description
            .as_ref()
            .map(|d| format!(" ({d:?})"))
            .unwrap_or_default();
        let held = if self.held.is_empty() {
            "no scope".to_owned()
        } else {
            self.held.join(" ")
        };
        if self.step_ups >= scope::MAX_STEP_UPS {
            return format!(
                "the server still refuses for insufficient scope{said} after {} step-up authorizations; the token holds {held}",
                self.step_ups
            );
        }
        let named = if self.challenged.is_empty() {
            "names no scope".to_owned()
        } else {
            format!("asks for {}", self.challenged.join(" "))
        };
        format!(
            "the server refuses the token for insufficient scope{said} and {named}; the token holds {held}, so there is nothing more to ask for unless the scope it needs is given"
        )
    }
}

/// The remedy for `need`, given the token held now (`current`), whether the refused
/// request carried that very token, how many step-ups this session already made, and
/// the scopes the host configured.
pub fn remedy(
    need: &AuthNeed,
    current: Option<&Token>,
    sent_current: bool,
    step_ups: u32,
    configured: &[String],
) -> Remedy {
    if !sent_current && current.is_some() && need.kind != NeedKind::DpopNonce {
        return Remedy::Retry;
    }
    match need.kind {
        NeedKind::DpopNonce => match &need.dpop_nonce {
            Some(n) => Remedy::UseNonce(n.clone()),
            None => Remedy::GiveUp("the server asked for a DPoP nonce without giving one".into()),
        },
        NeedKind::Unauthorized => match current {
            Some(t) if t.refresh_token.is_some() => Remedy::Refresh,
            _ => Remedy::Authorize {
                scopes: need.scopes(),
            },
        },
        NeedKind::InsufficientScope => {
            let challenged = need.scopes();
            let held = current.map(Token::scopes).unwrap_or_default();
            let step_up = scope::step_up(&held, configured, &challenged);
            let nameless = challenged.is_empty();
            let refusal = ScopeRefusal {
                challenged,
                held,
                description: need.description().map(str::to_owned),
                step_ups,
            };
            match step_up {
                _ if step_ups >= scope::MAX_STEP_UPS => Remedy::ScopeExhausted(refusal),
                Some(scopes) => Remedy::StepUp { scopes },
                None if nameless => Remedy::StepUpToListed(refusal),
                None => Remedy::ScopeExhausted(refusal),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(scope: &str, refresh: bool) -> Token {
        Token {
            access_token: "a".into(),
            token_type: "Bearer".into(),
            refresh_token: refresh.then(|| "r".into()),
            expires_at: None,
            scope: Some(scope.into()),
            requested_scope: Some(scope.into()),
            received_at: 0,
        }
    }

    #[test]
    fn statuses_and_challenges_make_needs() {
        let h = |s: &str| vec![s.to_owned()];
        let n = classify(
            401,
            &h(r#"Bearer scope="a b", resource_metadata="https://m/x""#),
            None,
            "u",
        )
        .unwrap();
        assert_eq!(n.kind, NeedKind::Unauthorized);
        assert_eq!(n.scopes(), ["a", "b"]);
        assert_eq!(n.resource_metadata(), Some("https://m/x"));
        assert_eq!(
            classify(401, &[], None, "u").unwrap().kind,
            NeedKind::Unauthorized
        );
        let step = classify(
            403,
            &h(r#"Bearer error="insufficient_scope", scope="w""#),
            None,
            "u",
        )
        .unwrap();
        assert_eq!(step.kind, NeedKind::InsufficientScope);
        assert!(classify(403, &h("Bearer error=\"invalid_token\""), None, "u").is_none());
        assert!(classify(500, &[], None, "u").is_none());
        let nonce = classify(401, &h(r#"DPoP error="use_dpop_nonce""#), Some("n1"), "u").unwrap();
        assert_eq!(nonce.kind, NeedKind::DpopNonce);
        assert!(nonce.wants_dpop());
    }

    #[test]
    fn a_request_is_replayed_once_per_kind_of_need() {
        let mut r = Rounds::default();
        assert!(r.admit(NeedKind::Unauthorized));
        assert!(r.admit(NeedKind::InsufficientScope));
        assert!(r.admit(NeedKind::DpopNonce));
        assert!(r.admit(NeedKind::DpopNonce));
        assert!(!r.admit(NeedKind::DpopNonce));
        assert!(!r.admit(NeedKind::Unauthorized));
        assert!(!r.admit(NeedKind::InsufficientScope));
    }

    #[test]
    fn remedies() {
        let h = |s: &str| vec![s.to_owned()];
        let unauthorized = classify(401, &h(r#"Bearer scope="a""#), None, "u").unwrap();
        assert_eq!(
            remedy(&unauthorized, None, false, 0, &[]),
            Remedy::Authorize {
                scopes: vec!["a".into()]
            }
        );
        assert_eq!(
            remedy(&unauthorized, Some(&token("a", true)), true, 0, &[]),
            Remedy::Refresh
        );
        assert_eq!(
            remedy(&unauthorized, Some(&token("a", false)), true, 0, &[]),
            Remedy::Authorize {
                scopes: vec!["a".into()]
            }
        );
        assert_eq!(
            remedy(&unauthorized, Some(&token("a", false)), false, 0, &[]),
            Remedy::Retry
        );
        let more = classify(
            403,
            &h(r#"Bearer error="insufficient_scope", scope="w""#),
            None,
            "u",
        )
        .unwrap();
        assert_eq!(
            remedy(&more, Some(&token("a", false)), true, 0, &[]),
            Remedy::StepUp {
                scopes: vec!["a".into(), "w".into()]
            }
        );
        assert!(matches!(
            remedy(&more, Some(&token("a w", false)), true, 0, &[]),
            Remedy::ScopeExhausted(_)
        ));
        let Remedy::ScopeExhausted(limit) = remedy(&more, Some(&token("a", false)), true, 2, &[])
        else {
            panic!("a third step-up")
        };
        assert!(limit.to_string().contains("after 2 step-up"), "{limit}");
    }

    #[test]
    fn a_refusal_naming_no_scope_steps_up_to_the_configured_scopes_or_says_why_not() {
        let h = |s: &str| vec![s.to_owned()];
        // The Python SDK's 403: a description, no scope.
        let python = classify(
            403,
            &h(r#"Bearer error="insufficient_scope", error_description="Required scope: mcp:write""#),
            None,
            "u",
        )
        .unwrap();
        assert_eq!(
            remedy(
                &python,
                Some(&token("mcp:read", true)),
                true,
                0,
                &["mcp:write".into()]
            ),
            Remedy::StepUp {
                scopes: vec!["mcp:read".into(), "mcp:write".into()]
            }
        );
        // Nothing new from the challenge or the host: the listed scopes, once the
        // shell has the metadata (`scope::listed_step_up`).
        let Remedy::StepUpToListed(why) =
            remedy(&python, Some(&token("mcp:read", true)), true, 0, &[])
        else {
            panic!("the listed scopes are the last thing to ask for")
        };
        assert_eq!(why.held, ["mcp:read"]);
        // Past the bound, the refusal stands however it is worded.
        assert!(matches!(
            remedy(&python, Some(&token("mcp:read", true)), true, 2, &[]),
            Remedy::ScopeExhausted(_)
        ));
        let words = why.to_string();
        assert!(words.contains("Required scope: mcp:write"), "{words}");
        assert!(
            words.contains("names no scope") && words.contains("holds mcp:read"),
            "{words}"
        );
        assert!(!words.contains("already asked"), "{words}");
    }
}
