//! Which scopes to ask for.
//!
//! - **First authorization**: the challenge's `scope` (authoritative; no relation to
//!   `scopes_supported` is assumed); else the PRM's `scopes_supported`; and the scopes
//!   the host configured added to either (they add, never replace: a token without
//!   what the server needs is refused on every request). Nothing at all: the `scope`
//!   parameter is omitted (the server's defaults apply). Never the authorization
//!   server's own list.
//! - `offline_access` is added only when the authorization server lists it (SEP-2207)
//!   and other scopes are asked for: alone it could narrow the grant to nothing useful.
//! - **Step-up** (403 `insufficient_scope`): the union of what was asked before, what
//!   the host configured and what the challenge names (SEP-2350), in order, without
//!   duplicates — a challenge that names no scope (the Python SDK's) still steps up
//!   to the configured scopes the token lacks; no step-up when that asks for nothing
//!   new ([`step_up`] returns `None`), so a server that keeps refusing cannot loop the
//!   client through authorizations.
//! - **A refusal that names no scope and leaves nothing new to ask for** (a
//!   2025-03-26-style server with no protected resource metadata, the Python SDK's in
//!   that mode, whose token came without scope): the scopes the metadata lists are
//!   asked for, once ([`listed_step_up`]) — the resource's `scopes_supported`, else the
//!   authorization server's own, as the Python SDK's client does. Once: the next
//!   token holds them, so the same refusal again asks for nothing new and stands.

use super::metadata::{ResourceMetadata, ServerMetadata};

/// How many step-up authorizations one request may cause.
pub const MAX_STEP_UPS: u32 = 2;

/// The scopes of a space-separated list.
pub fn split(scope: &str) -> Vec<String> {
    scope.split_whitespace().map(str::to_owned).collect()
}

/// Joins scopes with single spaces; `None` when there are none.
pub fn join(scopes: &[String]) -> Option<String> {
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(a.len() + b.len());
    for s in a.iter().chain(b) {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

/// The scopes of a first authorization (see the module documentation).
pub fn initial(
    configured: &[String],
    challenged: &[String],
    resource: Option<&ResourceMetadata>,
    server: &ServerMetadata,
) -> Vec<String> {
    let named = if !challenged.is_empty() {
        challenged.to_vec()
    } else {
        resource
            .and_then(|r| r.scopes_supported.clone())
            .unwrap_or_default()
    };
    let mut scopes = union(&named, configured);
    with_offline_access(&mut scopes, server);
    scopes
}

/// Adds `offline_access` when the server lists it and other scopes are asked for.
pub fn with_offline_access(scopes: &mut Vec<String>, server: &ServerMetadata) {
    let offline = "offline_access".to_owned();
    if !scopes.is_empty() && server.lists_scope(&offline) && !scopes.contains(&offline) {
        scopes.push(offline);
    }
}

/// The scopes of a step-up: `prior ∪ configured ∪ challenged`, or `None` when that
/// adds nothing to what was asked for already.
pub fn step_up(
    prior: &[String],
    configured: &[String],
    challenged: &[String],
) -> Option<Vec<String>> {
    let wanted = union(&union(prior, configured), challenged);
    (wanted.len() > prior.len()).then_some(wanted)
}

/// The scopes of a step-up after a refusal that named no scope and for which
/// [`step_up`] found nothing new: `prior ∪ configured ∪ listed`, where `listed` is the
/// resource's `scopes_supported`, else the authorization server's; `None` when that
/// adds nothing to `prior` (nothing is listed, or the token holds it all already).
pub fn listed_step_up(
    prior: &[String],
    configured: &[String],
    resource: Option<&ResourceMetadata>,
    server: &ServerMetadata,
) -> Option<Vec<String>> {
    let listed = resource
        .and_then(|r| r.scopes_supported.as_deref())
        .or(server.scopes_supported.as_deref())
        .unwrap_or_default();
    step_up(prior, configured, listed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn challenge_then_resource_metadata_then_nothing() {
        let prm = ResourceMetadata {
            scopes_supported: Some(v(&["mcp:basic", "mcp:read"])),
            ..ResourceMetadata::default()
        };
        let server = ServerMetadata {
            scopes_supported: Some(v(&["other"])),
            ..ServerMetadata::default()
        };
        assert_eq!(
            initial(&[], &v(&["mcp:basic"]), Some(&prm), &server),
            v(&["mcp:basic"])
        );
        assert_eq!(
            initial(&[], &[], Some(&prm), &server),
            v(&["mcp:basic", "mcp:read"])
        );
        assert!(initial(&[], &[], None, &server).is_empty());
        assert_eq!(
            initial(&v(&["x"]), &v(&["y", "x"]), Some(&prm), &server),
            v(&["y", "x"])
        );
        // Configured scopes add to the resource's list, never replace it.
        assert_eq!(
            initial(&v(&["mcp:write"]), &[], Some(&prm), &server),
            v(&["mcp:basic", "mcp:read", "mcp:write"])
        );
        assert_eq!(initial(&v(&["x"]), &[], None, &server), v(&["x"]));
    }

    #[test]
    fn offline_access_only_when_the_server_lists_it() {
        let lists = ServerMetadata {
            scopes_supported: Some(v(&["mcp:basic", "offline_access"])),
            ..ServerMetadata::default()
        };
        assert_eq!(
            initial(&[], &v(&["mcp:basic"]), None, &lists),
            v(&["mcp:basic", "offline_access"])
        );
        assert!(initial(&[], &[], None, &lists).is_empty());
        assert_eq!(
            initial(&[], &v(&["a"]), None, &ServerMetadata::default()),
            v(&["a"])
        );
    }

    #[test]
    fn step_up_is_the_union_and_never_a_loop() {
        assert_eq!(
            step_up(&v(&["mcp:basic"]), &[], &v(&["mcp:write"])),
            Some(v(&["mcp:basic", "mcp:write"]))
        );
        assert_eq!(step_up(&v(&["mcp:admin"]), &[], &v(&["mcp:admin"])), None);
        assert_eq!(step_up(&v(&["a"]), &[], &[]), None);
        // A challenge naming no scope steps up to the configured scopes the token lacks.
        assert_eq!(step_up(&v(&["a"]), &v(&["b"]), &[]), Some(v(&["a", "b"])));
        assert_eq!(step_up(&v(&["a", "b"]), &v(&["b"]), &[]), None);
        assert_eq!(
            step_up(&v(&["a"]), &v(&["c"]), &v(&["b"])),
            Some(v(&["a", "c", "b"]))
        );
    }

    #[test]
    fn a_refusal_naming_no_scope_asks_once_for_what_the_metadata_lists() {
        let server = ServerMetadata {
            scopes_supported: Some(v(&["mcp:tools"])),
            ..ServerMetadata::default()
        };
        // No protected resource metadata: the authorization server's list.
        assert_eq!(
            listed_step_up(&[], &[], None, &server),
            Some(v(&["mcp:tools"]))
        );
        // Once: a token that holds them asks for nothing new.
        assert_eq!(listed_step_up(&v(&["mcp:tools"]), &[], None, &server), None);
        // The prior and configured scopes are kept.
        assert_eq!(
            listed_step_up(&v(&["a"]), &v(&["b"]), None, &server),
            Some(v(&["a", "b", "mcp:tools"]))
        );
        // The resource's list comes first, as for a first authorization.
        let prm = ResourceMetadata {
            scopes_supported: Some(v(&["mcp:read"])),
            ..ResourceMetadata::default()
        };
        assert_eq!(
            listed_step_up(&[], &[], Some(&prm), &server),
            Some(v(&["mcp:read"]))
        );
        // Nothing listed anywhere: nothing to ask for.
        assert_eq!(
            listed_step_up(&[], &[], None, &ServerMetadata::default()),
            None
        );
    }
}
