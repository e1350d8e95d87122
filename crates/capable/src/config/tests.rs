//! The config reader on the shapes hosts write.

use super::*;

fn env(var: &str) -> Option<String> {
    match var {
        "HOME" => Some("/home/u".into()),
        "TOKEN" => Some("t0k".into()),
        _ => None,
    }
}

#[test]
fn reads_the_mcp_servers_shape_with_expansion() {
    let text = r#"{"mcpServers":{"docs":{"command":"node","args":["${HOME}/srv.js","--port=${PORT:-7}"],"env":{"API_TOKEN":"${TOKEN}"}}}}"#;
    let ServerTarget::Stdio(cmd) = server_from_text(text, "docs", ".mcp.json", &env).unwrap()
    else {
        panic!("not stdio")
    };
    assert_eq!(cmd.program, "node");
    assert_eq!(cmd.args, ["/home/u/srv.js", "--port=7"]);
    assert_eq!(cmd.env["API_TOKEN"], "t0k");
}

#[test]
fn an_entry_that_is_no_object_is_refused_both_ways() {
    let text = r#"{"mcpServers":{"a":["node","x.js"],"b":{"command":"node"}}}"#;
    let one = server_from_text(text, "a", "f.json", &env).unwrap_err();
    assert!(one.to_string().contains("an entry is an object"), "{one}");
    let file = ConfigFile::from_text(text, "f.json", &env).unwrap();
    assert_eq!(file.servers[0].target.as_ref().err(), Some(&one));
    assert!(file.servers[1].target.is_ok());
}

#[test]
fn reads_the_vscode_servers_shape() {
    let text = r#"{"servers":{"py":{"type":"stdio","command":"python3","args":["s.py"]}}}"#;
    let ServerTarget::Stdio(cmd) = server_from_text(text, "py", "mcp.json", &env).unwrap() else {
        panic!("not stdio")
    };
    assert_eq!(cmd.display(), "python3 s.py");
}

#[test]
fn reads_http_entries_with_headers() {
    let text = r#"{"mcpServers":{"remote":{"type":"http","url":"https://mcp.example/mcp","headers":{"Authorization":"Bearer ${TOKEN}"}}}}"#;
    assert_eq!(
        server_from_text(text, "remote", "f.json", &env).unwrap(),
        ServerTarget::Http {
            url: "https://mcp.example/mcp".into(),
            headers: vec![("Authorization".into(), "Bearer t0k".into())],
            oauth: None,
        }
    );
    let sse = r#"{"servers":{"old":{"type":"sse","url":"http://127.0.0.1:9/sse"}}}"#;
    assert!(matches!(
        server_from_text(sse, "old", "f.json", &env).unwrap(),
        ServerTarget::Http { .. }
    ));
}

#[test]
fn reads_oauth_settings_with_expansion() {
    let text = r#"{"mcpServers":{"r":{"url":"https://m/mcp","oauth":{"clientId":"c","clientSecret":"${TOKEN}","scopes":["a","b"],"callbackPort":8976,"redirectUri":"http://localhost:9/cb","tokenEndpointAuthMethod":"client_secret_post","authorizationParams":{"audience":"${HOME}/api"},"sendResource":false,"idp":{"tokenEndpoint":"https://idp/token","clientId":"i","idTokenFile":"${HOME}/id"}}}}}"#;
    let ServerTarget::Http { oauth: Some(o), .. } = server_from_text(text, "r", "f", &env).unwrap()
    else {
        panic!("no oauth")
    };
    assert_eq!(o.client_secret.as_deref(), Some("t0k"));
    assert_eq!(o.scopes, ["a", "b"]);
    assert_eq!(o.callback_port, Some(8976));
    assert_eq!(o.redirect_uri.as_deref(), Some("http://localhost:9/cb"));
    assert_eq!(
        o.token_endpoint_auth_method.as_deref(),
        Some("client_secret_post")
    );
    assert_eq!(o.authorization_params["audience"], "/home/u/api");
    assert_eq!(o.send_resource, Some(false));
    assert_eq!(o.idp.unwrap().id_token_file.as_deref(), Some("/home/u/id"));
    let typo = r#"{"mcpServers":{"r":{"url":"https://m/mcp","oauth":{"clientID":"c"}}}}"#;
    assert!(
        server_from_text(typo, "r", "f", &env).is_err(),
        "unknown keys are refused"
    );
}

#[test]
fn says_what_is_missing() {
    let text = r#"{"mcpServers":{"a":{"command":"x"},"b":{"command":"${NOPE}"}}}"#;
    let err = server_from_text(text, "c", "f.json", &env).unwrap_err();
    assert!(
        err.to_string()
            .contains("has no server named \"c\"; it has: a, b"),
        "{err}"
    );
    let err = server_from_text(text, "b", "f.json", &env).unwrap_err();
    assert!(err.to_string().contains("${NOPE}"), "{err}");
}

#[test]
fn an_unterminated_placeholder_is_kept_verbatim() {
    assert_eq!(expand_vars("a ${B", &env).unwrap(), "a ${B");
}

#[test]
fn a_whole_file_keeps_every_entry_in_order_broken_ones_with_their_error() {
    let text = r#"{"servers":{"b":{"command":"x"},"a":{"command":"${NOPE}"},"c":{"url":"http://127.0.0.1:9/mcp"}}}"#;
    let file = ConfigFile::from_text(text, "f.json", &env).unwrap();
    let names: Vec<&str> = file.servers.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["b", "a", "c"]);
    assert!(matches!(
        &file.servers[1].target,
        Err(ConfigError::UnsetVariable { var, .. }) if var == "NOPE"
    ));
    assert!(matches!(
        file.servers[2].target,
        Ok(ServerTarget::Http { .. })
    ));
    let err = ConfigFile::from_text("[]", "f.json", &env).unwrap_err();
    assert!(
        err.to_string()
            .contains("neither `mcpServers` nor `servers`"),
        "{err}"
    );
}
