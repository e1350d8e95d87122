//! Across the eras: which host requests the bridge answers itself instead of passing
//! them on, and in which form a server's result goes back ([`local`],
//! [`answer_form`]). The rest of the cross-era matrix is the engine's (what each
//! version is told) and the task bridge's ([`crate::task_bridge`]).
//!
//! | the host | behind | the request | the bridge |
//! |---|---|---|---|
//! | any | many servers | `resources/subscribe`, `resources/unsubscribe` | [`Local::Fanout`]: at the server that owns each URI |
//! | 2026-07-28 | any | a retry with `requestState` or `inputResponses` | [`Local::Round`]: the rounds' (a retry of the bridge's round, or answers to none) |
//! | legacy | a 2026-07-28 server | `resources/subscribe`, `resources/unsubscribe` | [`Local::Subscription`]: answered; a listen stream follows the host's interest |
//! | legacy | a 2026-07-28 server | `logging/setLevel` | [`Local::LogLevel`]: answered; the level goes in every later request's `_meta` |
//! | anything else | | | [`Local::Pass`] |

use crate::{Era, Method};

/// What the bridge does with a host's request before anything is sent ([`local`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Local {
    /// On to the server behind.
    Pass,
    /// Many servers' subscriptions: each URI at the server that owns it.
    Fanout,
    /// A 2026-07-28 host's retry of a round (or answers naming one): for the rounds.
    Round,
    /// A legacy host's subscription at a 2026-07-28 server, which has none: answered
    /// at once, its listen stream following what the host subscribed to.
    Subscription,
    /// A legacy host's log level for a 2026-07-28 server: answered at once, carried in
    /// the `_meta` of every later request.
    LogLevel,
}

/// What the bridge does with a host's request of `method`: the host speaks `host`
/// (`None`: not said yet), the one server behind `server` (`None`: many servers);
/// `names_a_round`: its params carry `requestState` or `inputResponses`.
pub fn local(host: Option<Era>, server: Option<Era>, method: Method, names_a_round: bool) -> Local {
    let subscription = matches!(method, Method::Subscribe | Method::Unsubscribe);
    if subscription && server.is_none() {
        return Local::Fanout;
    }
    match (host, server) {
        (Some(Era::Modern), _) if names_a_round => Local::Round,
        (Some(Era::Legacy), Some(Era::Modern)) if subscription => Local::Subscription,
        (Some(Era::Legacy), Some(Era::Modern)) if method == Method::SetLoggingLevel => {
            Local::LogLevel
        }
        _ => Local::Pass,
    }
}

/// Whether a server's result, in legacy form (`legacy_answer`: a legacy server's, or
/// one the bridge put in that form), is made a 2026-07-28 result for a host of `host`'s
/// era (`resultType`, caching hints): only for a 2026-07-28 host.
pub fn answer_form(legacy_answer: bool, host: Option<Era>) -> bool {
    legacy_answer && host == Some(Era::Modern)
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Option<Era> = Some(Era::Legacy);
    const M: Option<Era> = Some(Era::Modern);

    #[test]
    fn what_the_bridge_answers_itself_across_the_eras() {
        // Many servers: subscriptions at their owners, whatever the eras.
        for host in [L, M] {
            assert_eq!(local(host, None, Method::Subscribe, false), Local::Fanout);
            assert_eq!(local(host, None, Method::Unsubscribe, false), Local::Fanout);
            assert_eq!(local(host, None, Method::CallTool, false), Local::Pass);
        }
        // A legacy host before a 2026-07-28 server: what that server has no method for.
        assert_eq!(local(L, M, Method::Subscribe, false), Local::Subscription);
        assert_eq!(local(L, M, Method::SetLoggingLevel, false), Local::LogLevel);
        assert_eq!(local(L, M, Method::ReadResource, false), Local::Pass);
        // The same host before a legacy server: passed on (the server has them).
        assert_eq!(local(L, L, Method::Subscribe, false), Local::Pass);
        assert_eq!(local(L, L, Method::SetLoggingLevel, false), Local::Pass);
        // A 2026-07-28 host's retry is the rounds', before any server; a legacy
        // host's params naming one are just params.
        assert_eq!(local(M, L, Method::CallTool, true), Local::Round);
        assert_eq!(local(M, None, Method::CallTool, true), Local::Round);
        assert_eq!(local(L, L, Method::CallTool, true), Local::Pass);
        // Before the host said who it is: nothing of its own.
        assert_eq!(local(None, M, Method::Subscribe, false), Local::Pass);
    }

    #[test]
    fn only_a_2026_07_28_host_gets_a_legacy_result_made_modern() {
        assert!(answer_form(true, M));
        assert!(!answer_form(true, L));
        assert!(!answer_form(false, M));
        assert!(!answer_form(true, None));
    }
}
