//! A server as the person may take it elsewhere: its `mcpServers` entry (the shape of
//! every MCP host's config, and of capable's) and the `capable` command that reaches
//! it. Secret values come out as everything the page gets does: `***` in their place
//! (the router cuts the run's secrets out of the answer).

use capable::config::{OAuthEntry, ServerTarget};
use serde_json::{json, Map, Value};

/// The `mcpServers` entry of `target`.
pub fn entry(target: &ServerTarget) -> Value {
    match target {
        ServerTarget::Stdio(c) => {
            let mut e = json!({"command": c.program, "args": c.args});
            if !c.env.is_empty() {
                e["env"] = json!(c.env);
            }
            if let Some(cwd) = &c.cwd {
                e["cwd"] = json!(cwd.display().to_string());
            }
            e
        }
        ServerTarget::Http {
            url,
            headers,
            oauth,
        } => {
            let mut e = json!({"type": "http", "url": url});
            if !headers.is_empty() {
                let headers: Map<String, Value> =
                    headers.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
                e["headers"] = Value::Object(headers);
            }
            if let Some(o) = oauth.as_deref().map(oauth_entry).filter(|o| !o.is_empty()) {
                e["oauth"] = Value::Object(o);
            }
            e
        }
    }
}

/// The settings of an `oauth` object that say who the client is and what it asks for
/// (a file path or a key stays in the config it came from).
fn oauth_entry(o: &OAuthEntry) -> Map<String, Value> {
    let mut m = Map::new();
    let mut put = |k: &str, v: Option<&String>| {
        if let Some(v) = v {
            m.insert(k.into(), json!(v));
        }
    };
    put("clientId", o.client_id.as_ref());
    put("clientSecret", o.client_secret.as_ref());
    put("clientMetadataUrl", o.client_metadata_url.as_ref());
    put("redirectUri", o.redirect_uri.as_ref());
    put("issuer", o.issuer.as_ref());
    if !o.scopes.is_empty() {
        m.insert("scopes".into(), json!(o.scopes));
    }
    if let Some(port) = o.callback_port {
        m.insert("callbackPort".into(), json!(port));
    }
    m
}

/// `capable inspect` of `target` as one shell command line (any other subcommand
/// takes the same server). A stdio server's environment goes before it, with
/// `--inherit-env` so that it reaches the server.
pub fn command(target: &ServerTarget) -> String {
    let mut words: Vec<String> = Vec::new();
    match target {
        ServerTarget::Stdio(c) => {
            words.extend(c.env.iter().map(|(k, v)| format!("{k}={}", quote(v))));
            words.push("capable".into());
            if !c.env.is_empty() {
                words.push("--inherit-env".into());
            }
            words.extend(["inspect".into(), "--".into(), quote(&c.program)]);
            words.extend(c.args.iter().map(|a| quote(a)));
        }
        ServerTarget::Http {
            url,
            headers,
            oauth,
        } => {
            words.extend([
                "capable".into(),
                "inspect".into(),
                "--url".into(),
                quote(url),
            ]);
            for (k, v) in headers {
                words.push("--header".into());
                words.push(quote(&format!("{k}: {v}")));
            }
            if let Some(o) = oauth {
                if let Some(id) = &o.client_id {
                    words.extend(["--client-id".into(), quote(id)]);
                }
                for s in &o.scopes {
                    words.extend(["--scope".into(), quote(s)]);
                }
            }
        }
    }
    words.join(" ")
}

/// `word` as the shell reads it back: as it is when it holds nothing the shell
/// treats specially, else in single quotes.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use capable::ServerCommand;

    use super::*;

    #[test]
    fn a_stdio_server_is_its_entry_and_a_command_line_the_shell_reads_back() {
        let mut c = ServerCommand::new("node", ["server.js", "--name=it's mine"]);
        c.env.insert("API_TOKEN".into(), "t0k".into());
        let target = ServerTarget::Stdio(c);
        assert_eq!(
            entry(&target),
            json!({"command": "node", "args": ["server.js", "--name=it's mine"], "env": {"API_TOKEN": "t0k"}})
        );
        assert_eq!(
            command(&target),
            r"API_TOKEN=t0k capable --inherit-env inspect -- node server.js '--name=it'\''s mine'"
        );
    }

    #[test]
    fn an_http_server_keeps_its_headers_and_who_its_client_is() {
        let target = ServerTarget::Http {
            url: "https://mcp.example/mcp".into(),
            headers: vec![("X-Team".into(), "blue".into())],
            oauth: Some(Box::new(OAuthEntry {
                client_id: Some("app".into()),
                scopes: vec!["mcp:tools".into()],
                ..OAuthEntry::default()
            })),
        };
        assert_eq!(
            entry(&target),
            json!({"type": "http", "url": "https://mcp.example/mcp", "headers": {"X-Team": "blue"},
                   "oauth": {"clientId": "app", "scopes": ["mcp:tools"]}})
        );
        assert_eq!(
            command(&target),
            "capable inspect --url https://mcp.example/mcp --header 'X-Team: blue' --client-id app --scope mcp:tools"
        );
    }
}
