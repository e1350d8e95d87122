//! `capable demo`: the scenario "open the current acceptance instructions" against
//! every fixture profile, each a real child process.
//!
//! For each profile it shows what the server declared, the next request the host
//! chose from that declaration alone (`resources/subscribe`, `resources/read`, or
//! none), the outcome, and every message the client actually sent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::{Error, Method, ServerCommand, Session, Tap, WatchEvent, WatchPolicy};
use capable_fixture::{Profile, MANUAL};
use serde_json::{json, Value};

use super::Context;
use crate::exit::CliError;
use crate::output;

/// What the host decided to do, from the declared capabilities alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// `resources.subscribe` declared: subscribe to keep the document current, and read.
    Subscribe,
    /// `resources` declared: read.
    Read,
    /// No `resources`: nothing to open.
    Nothing,
}

fn plan(s: &Session) -> Plan {
    if s.check(Method::Subscribe).is_ok() {
        Plan::Subscribe
    } else if s.check(Method::ReadResource).is_ok() {
        Plan::Read
    } else {
        Plan::Nothing
    }
}

fn sent_methods(log: &Mutex<Vec<String>>) -> Vec<String> {
    log.lock().map(|l| l.clone()).unwrap_or_default()
}

fn read_json(read: &capable::ResourceRead) -> Value {
    json!({
        "text": read.text(),
        "revision": read.revision().as_str(),
        "readAt": read.read_at_rfc3339(),
    })
}

async fn scenario(ctx: &Context, profile: Profile) -> Value {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "capable".into());
    let command = ServerCommand::new(
        exe,
        [
            "fixture",
            "--profile",
            profile.name(),
            "--update-interval",
            "300ms",
        ],
    );
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let log2 = log.clone();
    let mut options = ctx.options();
    options.config.timeouts.probe = Duration::from_secs(2);
    let user_tap = options.tap.take();
    options.tap = Some(Tap::new(move |dir, line| {
        if let Some(t) = &user_tap {
            t.call(dir, line);
        }
        if dir == capable::Direction::Sent {
            let v: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
            let what = match (v.get("method").and_then(Value::as_str), v.get("id")) {
                (Some(m), _) => m.to_owned(),
                (None, Some(id)) => format!("response to server request {id}"),
                _ => "?".into(),
            };
            if let Ok(mut l) = log2.lock() {
                l.push(what);
            }
        }
    }));
    let mut report = json!({"profile": profile.name()});
    let session = match capable::connect_stdio(&command, options).await {
        Ok(s) => s,
        Err(e) => {
            report["declared"] = Value::Null;
            report["plan"] = Value::Null;
            report["outcome"] = json!({"refused": e.to_string()});
            report["sent"] = json!(sent_methods(&log));
            return report;
        }
    };
    report["era"] = json!(session.era().as_str());
    report["protocolVersion"] = json!(session.protocol_version());
    report["declared"] = serde_json::to_value(session.capabilities()).unwrap_or_default();
    let plan = plan(&session);
    report["plan"] = match plan {
        Plan::Subscribe => json!("resources/subscribe"),
        Plan::Read => json!("resources/read"),
        Plan::Nothing => Value::Null,
    };
    report["outcome"] = match plan {
        Plan::Nothing => {
            json!({"nothing": "the server declared no resources, so the host planned no request"})
        }
        Plan::Read => match session.read_resource(MANUAL).await {
            Ok(read) => json!({"read": read_json(&read)}),
            Err(e) => json!({"error": e.to_string()}),
        },
        Plan::Subscribe => subscribe_then_read(&session).await,
    };
    session.close().await;
    report["sent"] = json!(sent_methods(&log));
    report
}

/// The demo's explicit re-read policy: used only if the server breaks the
/// subscription it declared.
const FALLBACK_POLL: Duration = Duration::from_millis(300);

/// Follows the document through the watch machinery: the server's subscription when
/// it keeps its word (the first revision, then a re-read on its update), else the
/// violation and the explicit fallback to re-reading (the first revision).
async fn subscribe_then_read(s: &Session) -> Value {
    let mut watch = match s.watch(MANUAL, WatchPolicy::poll(FALLBACK_POLL)) {
        Ok(w) => w,
        Err(e) => return json!({"error": e.to_string()}),
    };
    let mut modes = Vec::new();
    let mut violation = None;
    let mut first = None;
    let mut changed = Value::Null;
    let outcome = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match watch.next().await? {
                WatchEvent::Mode { mode, .. } => modes.push(mode.as_str()),
                WatchEvent::Violation(v) => violation = Some(v),
                WatchEvent::Revision(read) if first.is_none() => {
                    first = Some(read_json(&read));
                    // After a violation the fallback's first read is the answer.
                    if violation.is_some() {
                        return Ok(());
                    }
                }
                WatchEvent::Revision(read) => {
                    changed = read_json(&read);
                    return Ok::<(), Error>(());
                }
            }
        }
    })
    .await;
    let closed = watch.close().await;
    if let Ok(Err(e)) = outcome {
        return json!({"error": e.to_string()});
    }
    let _ = closed;
    let read = first.unwrap_or_else(|| json!({"error": "no revision within 5 s"}));
    match violation {
        None => json!({"subscribed": true, "modes": modes, "read": read, "afterUpdate": changed}),
        Some(v) => {
            // The refused method is never sent again in this session.
            let again = s.check(Method::Subscribe).err().map(|r| r.to_string());
            json!({
                "violation": output::violation(&v),
                "retry": again,
                "modes": modes,
                "fallback": format!(
                    "the host's explicit re-read policy (every {}): watch falls back to polling; reading never depended on subscribe",
                    capable::internal::time::humanize(FALLBACK_POLL)
                ),
                "read": read,
            })
        }
    }
}

pub async fn run(ctx: &Context) -> Result<(), CliError> {
    let mut reports = Vec::new();
    for profile in Profile::DEMO {
        let report = scenario(ctx, profile).await;
        if !ctx.global.json {
            output::print(&human(&report))?;
        }
        reports.push(report);
    }
    if ctx.global.json {
        output::json(&reports)?;
    }
    Ok(())
}

fn human(r: &Value) -> String {
    let mut out = String::new();
    let name = r["profile"].as_str().unwrap_or("?");
    out.push_str(&format!(
        "── {name} {}\n",
        "─".repeat(60usize.saturating_sub(name.len()))
    ));
    out.push_str(
        "user asks   \"open the current acceptance instructions\" (docs://manual/current)\n",
    );
    match &r["declared"] {
        Value::Null => out.push_str("declared    (no answer accepted)\n"),
        d => out.push_str(&format!(
            "declared    {d}  [{} {}]\n",
            r["protocolVersion"].as_str().unwrap_or(""),
            r["era"].as_str().unwrap_or("")
        )),
    }
    out.push_str(&format!(
        "host chose  {}\n",
        r["plan"].as_str().unwrap_or("none")
    ));
    let o = &r["outcome"];
    let show_read = |out: &mut String, label: &str, read: &Value| {
        if let Some(err) = read.get("error").and_then(Value::as_str) {
            out.push_str(&format!("{label}error: {err}\n"));
            return;
        }
        out.push_str(&format!(
            "{label}\"{}\"\n            revision {}  read at {}\n",
            output::one_line(read["text"].as_str().unwrap_or(""), 70),
            read["revision"].as_str().unwrap_or(""),
            read["readAt"].as_str().unwrap_or("")
        ));
    };
    if let Some(refused) = o.get("refused").and_then(Value::as_str) {
        out.push_str(&format!("outcome     refused: {refused}\n"));
    } else if let Some(nothing) = o.get("nothing").and_then(Value::as_str) {
        out.push_str(&format!("outcome     {nothing}\n"));
    } else if let Some(v) = o.get("violation") {
        out.push_str(&format!(
            "outcome     CONTRACT VIOLATION: {} {} declared `{}` but answered {} with -32601\n",
            v["server"]["name"].as_str().unwrap_or(""),
            v["server"]["version"].as_str().unwrap_or(""),
            v["capability"].as_str().unwrap_or(""),
            v["method"].as_str().unwrap_or("")
        ));
        out.push_str(&format!("            request  {}\n", v["request"]));
        out.push_str(&format!("            response {}\n", v["response"]));
        if let Some(again) = o["retry"].as_str() {
            out.push_str(&format!("            no retry: {again}\n"));
        }
        out.push_str(&format!(
            "fallback    {}\n",
            o["fallback"].as_str().unwrap_or("")
        ));
        if let Some(modes) = o["modes"].as_array() {
            let modes: Vec<&str> = modes.iter().filter_map(Value::as_str).collect();
            out.push_str(&format!("watch mode  {}\n", modes.join(" → ")));
        }
        show_read(&mut out, "            ", &o["read"]);
    } else if o.get("subscribed").is_some() {
        show_read(&mut out, "outcome     subscribed, then read ", &o["read"]);
        if !o["afterUpdate"].is_null() {
            show_read(
                &mut out,
                "update      server said it changed; re-read ",
                &o["afterUpdate"],
            );
        }
    } else if let Some(read) = o.get("read") {
        show_read(&mut out, "outcome     ", read);
    } else if let Some(err) = o.get("error").and_then(Value::as_str) {
        out.push_str(&format!("outcome     error: {err}\n"));
    }
    let sent: Vec<&str> = r["sent"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    out.push_str(&format!("sent        {}\n\n", sent.join(" → ")));
    out
}
