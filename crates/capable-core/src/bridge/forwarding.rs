//! What goes to a server with a host's request, by the eras of both sides: how the
//! request is sent ([`forwarding`]), and how the log level the host asks for reaches
//! each server ([`tell_log_level`]).
//!
//! | the host | the server | the bridge |
//! |---|---|---|
//! | 2026-07-28 | legacy (or one of many) | a call's, prompt's or read's params kept for the retry of a round it may get (its retry must repeat them) |
//! | 2026-07-28 | any | the server's `input_required` passed to the host as it came: the host answers the questions itself and retries |
//! | legacy | any | the session answers the server's `input_required` itself, asking the host |
//!
//! | the server | the log level the host asks for |
//! |---|---|
//! | 2026-07-28 | in every later request (`_meta`), whether it changed or not |
//! | legacy, `logging/setLevel` declared | `logging/setLevel` when it changes (and again after a restart, [`Relay::forget_log_level`](super::Relay::forget_log_level)) |
//! | legacy, not declared | nothing |

use crate::input_rounds::may_ask_for_input;
use crate::{Era, Method};

/// How a host request goes to the server ([`forwarding`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Forwarding {
    /// The host's params are kept for the retry of a round the request may get.
    pub keep_params: bool,
    /// The server's `input_required` result goes to the host as it came.
    pub pass_input_required: bool,
}

/// How host request `method` goes to the server: the host speaks `host` (`None`: not
/// known yet); `legacy_behind` says the server may be a legacy one (the one server
/// behind is, or it is one of many, not known until the request is routed).
pub fn forwarding(host: Option<Era>, legacy_behind: bool, method: Method) -> Forwarding {
    let modern_host = host == Some(Era::Modern);
    Forwarding {
        keep_params: modern_host && legacy_behind && may_ask_for_input(method),
        pass_input_required: modern_host,
    }
}

/// How a server hears of the host's log level ([`tell_log_level`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tell {
    /// The level goes in every later request: set it on the session.
    InEveryRequest,
    /// `logging/setLevel` to the server.
    SetLevel,
    /// Nothing.
    Nothing,
}

/// How a server of `era` hears of the level the host asked for: `changed` (from
/// [`Relay::log_level`](super::Relay::log_level)), `declared` whether the server takes
/// `logging/setLevel`.
pub fn tell_log_level(changed: bool, era: Era, declared: bool) -> Tell {
    match era {
        Era::Modern => Tell::InEveryRequest,
        Era::Legacy if changed && declared => Tell::SetLevel,
        Era::Legacy => Tell::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_2026_07_28_hosts_requests_that_may_get_rounds_keep_their_params() {
        let modern = Some(Era::Modern);
        let keeps = |host, legacy, method| forwarding(host, legacy, method).keep_params;
        for method in [Method::CallTool, Method::GetPrompt, Method::ReadResource] {
            assert!(keeps(modern, true, method), "{method:?}");
            assert!(
                !keeps(modern, false, method),
                "a 2026-07-28 server rounds itself"
            );
            assert!(
                !keeps(Some(Era::Legacy), true, method),
                "a legacy host is asked"
            );
            assert!(!keeps(None, true, method));
        }
        assert!(
            !keeps(modern, true, Method::ListTools),
            "a list is asked nothing"
        );
    }

    #[test]
    fn only_a_2026_07_28_host_gets_the_servers_input_required_as_it_came() {
        for legacy in [true, false] {
            let pass = |host| forwarding(host, legacy, Method::CallTool).pass_input_required;
            assert!(pass(Some(Era::Modern)));
            assert!(!pass(Some(Era::Legacy)));
            assert!(!pass(None));
        }
    }

    #[test]
    fn a_legacy_server_is_told_the_log_level_when_it_changes_a_2026_07_28_one_always() {
        for (changed, declared) in [(true, true), (true, false), (false, true), (false, false)] {
            assert_eq!(
                tell_log_level(changed, Era::Modern, declared),
                Tell::InEveryRequest
            );
        }
        assert_eq!(tell_log_level(true, Era::Legacy, true), Tell::SetLevel);
        assert_eq!(tell_log_level(false, Era::Legacy, true), Tell::Nothing);
        assert_eq!(tell_log_level(true, Era::Legacy, false), Tell::Nothing);
    }
}
