//! Discovery driven by hand against scripted servers: each test is one shape of
//! deployment the conformance suite (and the field) has, and asserts the exact GETs in
//! order and what was found — or why not. No sockets.

use std::collections::HashMap;

use capable_core::internal::auth::{Discovered, Discovery, DiscoveryError, MetadataSource, Next};
use serde_json::{json, Value};

const MCP: &str = "http://localhost:3000/mcp";

/// Runs discovery against `docs` (URL → JSON; anything else is a 404) and returns the
/// URLs fetched and the outcome.
fn run(
    start: Discovery,
    docs: &HashMap<String, Value>,
) -> (Vec<String>, Result<Discovered, DiscoveryError>) {
    let mut d = start;
    let mut fetched = Vec::new();
    loop {
        match d.step() {
            Next::Fetch(url) => {
                fetched.push(url.to_string());
                match docs.get(url.as_str()) {
                    Some(doc) => d.on_response(200, doc.to_string().as_bytes()),
                    None => d.on_response(404, b"Not Found"),
                }
            }
            Next::Done(found) => return (fetched, Ok(*found)),
            Next::Failed(e) => return (fetched, Err(e)),
        }
        assert!(fetched.len() < 20, "discovery does not end: {fetched:?}");
    }
}

fn prm(resource: &str, issuer: &str) -> Value {
    json!({"resource": resource, "authorization_servers": [issuer]})
}

fn as_meta(issuer: &str) -> Value {
    json!({"issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
           "token_endpoint": format!("{issuer}/token"), "code_challenge_methods_supported": ["S256"]})
}

fn docs(pairs: &[(&str, Value)]) -> HashMap<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn start(hint: Option<&str>) -> Discovery {
    Discovery::new(MCP.parse().unwrap(), hint)
}

#[test]
fn the_challenge_url_is_used_and_nothing_else_is_probed() {
    let prm_url = "http://localhost:3000/.well-known/oauth-protected-resource/mcp";
    let d = docs(&[
        (prm_url, prm(MCP, "http://localhost:3001")),
        (
            "http://localhost:3001/.well-known/oauth-authorization-server",
            as_meta("http://localhost:3001"),
        ),
    ]);
    let (fetched, found) = run(start(Some(prm_url)), &d);
    assert_eq!(
        fetched,
        [
            prm_url,
            "http://localhost:3001/.well-known/oauth-authorization-server"
        ]
    );
    let found = found.unwrap();
    assert_eq!(found.resource, MCP);
    assert_eq!(found.issuer, "http://localhost:3001");
    assert_eq!(found.source, MetadataSource::ResourceMetadata);
}

#[test]
fn root_resource_metadata_and_a_tenant_issuer_with_the_path_inserted() {
    let d = docs(&[
        (
            "http://localhost:3000/.well-known/oauth-protected-resource",
            prm("http://localhost:3000", "http://localhost:3001/tenant1"),
        ),
        (
            "http://localhost:3001/.well-known/oauth-authorization-server/tenant1",
            as_meta("http://localhost:3001/tenant1"),
        ),
        // The trap: root metadata of another issuer.
        (
            "http://localhost:3001/.well-known/oauth-authorization-server",
            as_meta("http://localhost:3001"),
        ),
    ]);
    let (fetched, found) = run(start(None), &d);
    assert_eq!(
        fetched,
        [
            "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
            "http://localhost:3000/.well-known/oauth-protected-resource",
            "http://localhost:3001/.well-known/oauth-authorization-server/tenant1",
        ]
    );
    let found = found.unwrap();
    assert_eq!(
        found.resource, "http://localhost:3000",
        "the PRM's resource verbatim"
    );
    assert_eq!(found.issuer, "http://localhost:3001/tenant1");
}

#[test]
fn openid_configuration_with_the_path_appended_comes_last() {
    let custom = "http://localhost:3000/custom/metadata/location.json";
    let d = docs(&[
        (custom, prm(MCP, "http://localhost:3001/tenant1")),
        (
            "http://localhost:3001/tenant1/.well-known/openid-configuration",
            as_meta("http://localhost:3001/tenant1"),
        ),
    ]);
    let (fetched, found) = run(start(Some(custom)), &d);
    assert_eq!(
        &fetched[1..],
        [
            "http://localhost:3001/.well-known/oauth-authorization-server/tenant1",
            "http://localhost:3001/.well-known/openid-configuration/tenant1",
            "http://localhost:3001/tenant1/.well-known/openid-configuration",
        ]
    );
    assert!(found.is_ok());
}

#[test]
fn a_resource_for_another_server_ends_discovery_at_once() {
    let d = docs(&[(
        "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
        prm("https://evil.example.com/mcp", "http://localhost:3001"),
    )]);
    let (fetched, found) = run(start(None), &d);
    assert_eq!(fetched.len(), 1, "nothing after the mismatch: {fetched:?}");
    assert!(matches!(
        found,
        Err(DiscoveryError::ResourceMismatch { .. })
    ));
}

#[test]
fn metadata_naming_another_issuer_is_not_used() {
    let d = docs(&[
        (
            "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
            prm(MCP, "http://localhost:3001"),
        ),
        (
            "http://localhost:3001/.well-known/oauth-authorization-server",
            as_meta("https://attacker.example.com"),
        ),
    ]);
    let (_, found) = run(start(None), &d);
    let err = found.unwrap_err();
    assert!(
        matches!(
            err,
            DiscoveryError::NoServerMetadata {
                mismatch: Some(_),
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("attacker"), "{err}");
}

#[test]
fn without_resource_metadata_the_origin_is_the_server_and_its_issuer_is_forgiven() {
    let d = docs(&[(
        "http://localhost:3000/.well-known/oauth-authorization-server",
        as_meta("http://localhost:3000/oauth"),
    )]);
    let (fetched, found) = run(start(None), &d);
    assert_eq!(
        fetched[2],
        "http://localhost:3000/.well-known/oauth-authorization-server"
    );
    let found = found.unwrap();
    assert_eq!(found.source, MetadataSource::LegacyOrigin);
    // The recorded issuer is the one the metadata names: RFC 9207's `iss` is compared with it.
    assert_eq!(found.issuer, "http://localhost:3000/oauth");
    assert_eq!(found.resource, MCP);
    assert!(
        found.notes.iter().any(|n| n.contains("2025-03-26")),
        "{:?}",
        found.notes
    );
}

#[test]
fn without_any_metadata_the_default_endpoints() {
    let (fetched, found) = run(start(None), &HashMap::new());
    assert_eq!(fetched.len(), 4, "{fetched:?}");
    let found = found.unwrap();
    assert_eq!(found.source, MetadataSource::Defaults);
    assert_eq!(
        found.metadata.authorization_endpoint.as_deref(),
        Some("http://localhost:3000/authorize")
    );
    assert_eq!(
        found.metadata.token_endpoint.as_deref(),
        Some("http://localhost:3000/token")
    );
    assert_eq!(
        found.metadata.registration_endpoint.as_deref(),
        Some("http://localhost:3000/register")
    );
}

#[test]
fn a_non_json_answer_or_a_server_error_is_a_miss_not_the_end() {
    let mut d = start(None);
    let Next::Fetch(_) = d.step() else { panic!() };
    d.on_response(200, b"<html>hi</html>");
    let Next::Fetch(root) = d.step() else {
        panic!()
    };
    assert_eq!(
        root.as_str(),
        "http://localhost:3000/.well-known/oauth-protected-resource"
    );
    d.on_response(0, b"");
    let Next::Fetch(legacy) = d.step() else {
        panic!()
    };
    assert!(legacy
        .as_str()
        .ends_with("/.well-known/oauth-authorization-server"));
}
