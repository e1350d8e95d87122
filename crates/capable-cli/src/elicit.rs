//! Answering a server's requests for input from the command line: `--elicitation`
//! for scripts, a prompt on a terminal, `--root` for roots. Sampling is never offered:
//! a command line has no model to sample from.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use capable::input::{Handler, InputHandlers};
use capable::{ElicitationPolicy, Root, Roots};
use serde_json::{json, Map, Value};

use crate::flags::{ElicitationFlag, Global};

/// The handlers the global flags ask for.
pub fn handlers(global: &Global) -> InputHandlers {
    let elicitation = match global.elicitation {
        Some(ElicitationFlag::AcceptDefaults) => Some(InputHandlers::elicitation_by_policy(
            ElicitationPolicy::AcceptDefaults,
        )),
        Some(ElicitationFlag::Decline) => Some(InputHandlers::elicitation_by_policy(
            ElicitationPolicy::Decline,
        )),
        Some(ElicitationFlag::Cancel) => Some(InputHandlers::elicitation_by_policy(
            ElicitationPolicy::Cancel,
        )),
        None if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() => {
            Some(terminal())
        }
        None => None,
    };
    let roots = (!global.roots.is_empty())
        .then(|| Roots::new(global.roots.iter().map(|p| root(p)).collect()));
    InputHandlers {
        elicitation,
        elicitation_url: false,
        sampling: None,
        roots,
        list_roots: None,
    }
}

fn root(path: &std::path::Path) -> Root {
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    Root {
        uri: format!("file://{}", abs.display()),
        name: abs.file_name().map(|n| n.to_string_lossy().into_owned()),
    }
}

/// Asks the person at the terminal, field by field (each read and checked as
/// `elicit_form` says: choices listed and nothing else taken, formats and bounds
/// checked, a required field asked again until given).
fn terminal() -> Handler {
    Arc::new(|params: Value| {
        Box::pin(async move {
            let answer = tokio::task::spawn_blocking(move || ask(&params))
                .await
                .unwrap_or_else(|_| json!({"action": "cancel"}));
            Ok(answer)
        })
    })
}

fn ask(params: &Value) -> Value {
    let mut err = std::io::stderr().lock();
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = String::new();
    let mut read = |prompt: &str, err: &mut std::io::StderrLock<'_>| -> Option<String> {
        let _ = write!(err, "{}", crate::secrets::scrub(prompt));
        let _ = err.flush();
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim().to_owned()),
        }
    };
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("The server asks for input");
    let _ = writeln!(err, "\nthe server asks: {message}");
    let empty = json!({});
    let schema = params.get("requestedSchema").unwrap_or(&empty);
    let mut content = Map::new();
    for field in crate::elicit_form::fields(schema) {
        loop {
            let Some(text) = read(&field.prompt(), &mut err) else {
                return json!({"action": "cancel"});
            };
            if text.is_empty() {
                match field.default() {
                    Some(d) => {
                        content.insert(field.name.to_owned(), d.clone());
                    }
                    None if field.required => {
                        let _ = writeln!(err, "  required; try again");
                        continue;
                    }
                    None => {}
                }
                break;
            }
            match field.read(&text) {
                Ok(v) => {
                    content.insert(field.name.to_owned(), v);
                    break;
                }
                Err(why) => {
                    let why = crate::secrets::scrub(&why);
                    let _ = writeln!(err, "  {why}; try again");
                }
            }
        }
    }
    match read("  send? [Y]es / [n]o (decline) / [c]ancel: ", &mut err).as_deref() {
        Some("" | "y" | "Y" | "yes") => json!({"action": "accept", "content": content}),
        Some("n" | "N" | "no") => json!({"action": "decline"}),
        _ => json!({"action": "cancel"}),
    }
}
