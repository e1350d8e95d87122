//! The policy in force, swapped by a reload: [`Live`] stands in the bridge's place of
//! its policy, and hands each request the one in force when it came.
//!
//! A request reads it once ([`Policy::current`]: one atomic load), at the point where
//! its server is known; from then on it answers to that policy to its end — its
//! result and its count-out go to the policy that let it in, even when a reload swapped
//! another in meanwhile. Nothing is locked on the way.

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use capable::internal::auth::resource::Caller;
use capable::internal::jsonrpc::Payload;
use capable::internal::Method;
use serde_json::{Map, Value};

use crate::policy::{Policy, Verdict};

/// No policy: everything as the servers have it (it looks at nothing).
struct Open;

impl Policy for Open {
    fn inspects(&self, _server: &str, _method: Method) -> bool {
        false
    }
}

/// The policy in force now, swapped whole by a reload.
pub struct Live {
    now: ArcSwap<Arc<dyn Policy>>,
}

impl Live {
    /// In force at first: `policy` (none: everything passes).
    pub fn new(policy: Option<Arc<dyn Policy>>) -> Live {
        Live {
            now: ArcSwap::from_pointee(policy.unwrap_or_else(|| Arc::new(Open))),
        }
    }

    /// `policy` in force from the next request on.
    pub fn swap(&self, policy: Option<Arc<dyn Policy>>) {
        self.now
            .store(Arc::new(policy.unwrap_or_else(|| Arc::new(Open))));
    }

    fn now(&self) -> Arc<dyn Policy> {
        Arc::clone(&self.now.load())
    }
}

impl Policy for Live {
    fn current(&self) -> Option<Arc<dyn Policy>> {
        Some(self.now())
    }

    fn inspects(&self, server: &str, method: Method) -> bool {
        self.now().inspects(server, method)
    }

    fn on_list(&self, server: &str, method: Method, item: &Value, caller: Option<&Caller>) -> bool {
        self.now().on_list(server, method, item, caller)
    }

    fn on_request(
        &self,
        server: &str,
        method: Method,
        params: &mut Map<String, Value>,
        caller: Option<&Caller>,
    ) -> Verdict {
        self.now().on_request(server, method, params, caller)
    }

    fn on_end(&self, server: &str, method: Method, caller: Option<&Caller>) {
        self.now().on_end(server, method, caller);
    }

    fn on_result(&self, server: &str, method: Method, result: Payload) -> Payload {
        self.now().on_result(server, method, result)
    }

    fn request_timeout(&self, server: &str) -> Option<Duration> {
        self.now().request_timeout(server)
    }

    fn wants_callers(&self) -> Option<String> {
        self.now().wants_callers()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Deny;
    impl Policy for Deny {
        fn on_request(
            &self,
            _: &str,
            _: Method,
            _: &mut Map<String, Value>,
            _: Option<&Caller>,
        ) -> Verdict {
            Verdict::Deny("no".into())
        }
    }

    #[test]
    fn a_request_answers_to_the_policy_it_came_under_and_the_next_to_the_new_one() {
        let live = Live::new(None);
        let before = live.current().unwrap();
        assert!(
            !before.inspects("a", Method::CallTool),
            "none: nothing looked at"
        );
        live.swap(Some(Arc::new(Deny)));
        // The request that came before the swap still holds the old policy.
        assert!(!before.inspects("a", Method::CallTool));
        let after = live.current().unwrap();
        let mut params = Map::new();
        let verdict = after.on_request("a", Method::CallTool, &mut params, None);
        assert_eq!(verdict, Verdict::Deny("no".into()));
        live.swap(None);
        assert!(!live.inspects("a", Method::CallTool));
    }
}
