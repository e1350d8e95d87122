//! What the bridge saw that the host did not: every contract violation of the server
//! behind, every notice (of the server, or of the host), every notification withheld
//! and every change of the server's state, as one JSON line each — on stderr always
//! (a host shows a server's stderr in its log), and in `--audit-log FILE` too.
//!
//! ```text
//! {"time":"2026-…Z","event":"violation","server":"docs","method":"resources/subscribe",…}
//! {"time":"2026-…Z","event":"notice","side":"server","server":"docs","notice":"server sent … without declaring …"}
//! {"time":"2026-…Z","event":"withheld","server":"docs","method":"notifications/tools/list_changed","why":"…"}
//! {"time":"2026-…Z","event":"state","server":"docs","state":"ready","era":"legacy","protocolVersion":"2025-11-25"}
//! ```
//!
//! Lines are scrubbed of every secret capable was given, as every output is. Lines that
//! repeat are summarised under a flood (`audit_limit.rs`): a `suppressed` line says how
//! many of a kind were held back, and when the first and last came; violations are
//! always written.

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use capable::internal::secrets::Secrets;

use capable::internal::server::ClientNotice;
use capable::internal::{Notice, Violation};
use serde_json::{json, Map, Value};

use super::audit_limit::{Held, Limiter};
use super::metrics::Metrics;
use crate::{BridgeError, Hints};
use capable::internal::auth::resource::Caller;
use capable::internal::jsonrpc::Payload;
use capable::internal::Method;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use std::time::Instant;

use crate::forward::Forwarded;

tokio::task_local! {
    /// Whose requests the task serves (`--auth-issuer`): every line it writes names
    /// the caller.
    static CALLER: Option<Arc<Caller>>;
}

/// Runs `work` as `caller`'s: the audit lines it writes name them (`caller`: `iss`,
/// `sub`, `clientId`; never the token).
pub async fn as_caller<F: std::future::Future>(caller: Option<Arc<Caller>>, work: F) -> F::Output {
    CALLER.scope(caller, work).await
}

/// The caller whose requests the task at hand serves (`None`: nobody logs in, or the
/// task serves no caller's requests).
pub fn caller() -> Option<Arc<Caller>> {
    CALLER.try_with(Clone::clone).ok().flatten()
}

/// The class of the caller the task at hand serves, for the metrics' `caller` label
/// (no copy of the caller taken).
pub fn caller_class() -> crate::metrics::CallerClass {
    let class = |c: &Option<Arc<Caller>>| crate::metrics::CallerClass::of(c.as_deref());
    CALLER
        .try_with(class)
        .unwrap_or(crate::metrics::CallerClass::Anonymous)
}

/// The tool a verified caller calls (`params`' name), when the request is a
/// `tools/call` and the task serves a caller: its answer is audited as
/// [`called`] says. `None` otherwise, at the cost of a look at the task.
pub fn calling(method: Method, params: &Forwarded) -> Option<String> {
    if method != Method::CallTool || caller().is_none() {
        return None;
    }
    Some(params.name().unwrap_or_default())
}

/// `answer` of the call of a tool (from [`calling`]) at a server, with a `called`
/// line when it ends: who called what, and what the server did (`ok`, `toolError`,
/// the JSON-RPC error's code, or the failure's kind), and how long it took.
pub fn called(
    call: Option<(String, &str)>,
    audit: &Arc<Audit>,
    answer: BoxFuture<'static, Result<Payload, capable::Error>>,
) -> BoxFuture<'static, Result<Payload, capable::Error>> {
    // `tool` is the server's own name of it (`Servers::own_tool_name`), as the
    // `denied` lines name it.
    let Some((tool, server)) = call else {
        return answer;
    };
    let (audit, server, started) = (audit.clone(), server.to_owned(), Instant::now());
    answer
        .inspect(move |answer| {
            let outcome = match answer {
                Ok(result) if result.mentions("\"isError\":true") => "toolError".to_owned(),
                Ok(_) => "ok".to_owned(),
                Err(capable::Error::Rpc { error, .. }) => format!("error {}", error.code),
                Err(e) => e.kind().as_str().to_owned(),
            };
            let ms = started.elapsed().as_millis() as u64;
            audit.record(
                "called",
                json!({"server": server, "method": Method::CallTool.as_str(), "name": tool,
                    "outcome": outcome, "ms": ms}),
            );
        })
        .boxed()
}

/// Where audit lines go, and the words of what hosts are told: scrubbed of every
/// secret, with the embedding application's hints.
pub struct Audit {
    file: Option<Mutex<std::fs::File>>,
    limiter: Mutex<Limiter>,
    /// Grown by a reload whose config brings new ones.
    secrets: arc_swap::ArcSwap<Secrets>,
    hints: Option<Hints>,
    /// Every line is counted here too (before a flood is summarised).
    metrics: Arc<Metrics>,
    /// Where every request's span goes, when traces are on.
    traces: Option<crate::Traces>,
}

impl Audit {
    /// Lines to stderr, and appended to `path` when given (created if missing); every
    /// one scrubbed of `secrets`, and counted in `metrics`.
    pub fn open(
        path: Option<&Path>,
        secrets: Secrets,
        hints: Option<Hints>,
        metrics: Arc<Metrics>,
    ) -> Result<Audit, BridgeError> {
        let file = match path {
            Some(path) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|error| BridgeError::AuditLog {
                        path: path.to_owned(),
                        error,
                    })?,
            )),
            None => None,
        };
        Ok(Audit {
            file,
            limiter: Mutex::new(Limiter::default()),
            secrets: arc_swap::ArcSwap::from_pointee(secrets),
            hints,
            metrics,
            traces: None,
        })
    }

    /// Cuts `more` out of every line from now on too (a reloaded config's secrets).
    pub fn add_secrets(&self, more: &Secrets) {
        self.secrets.rcu(|now| {
            let mut all = Secrets::clone(now);
            all.extend(more);
            all
        });
    }

    /// The audit of a bridge whose requests are traced to `traces`.
    pub fn with_traces(mut self, traces: Option<crate::Traces>) -> Audit {
        self.traces = traces;
        self
    }

    /// Where every request's span goes (`None`: traces are off).
    pub fn traces(&self) -> Option<&crate::Traces> {
        self.traces.as_ref()
    }

    /// The bridge's metrics, which the audit's events count into.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// `text` with every secret cut out (`***`).
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.secrets.load().scrub(text)
    }

    /// What the embedding application would have its user do about `error`.
    pub fn hint(&self, error: &capable::Error) -> Option<String> {
        self.hints.as_ref().and_then(|hints| hints(error))
    }

    /// Writes one line: `event` and `members`, stamped with the time — unless a flood
    /// of its kind is being held back (never evidence: a violation, a changed
    /// definition).
    pub fn record(&self, event: &str, members: Value) {
        self.metrics.event(event);
        if event != "violation" && event != "definition_changed" {
            let part = |name: &str| members.get(name).and_then(Value::as_str).unwrap_or("");
            let kind = format!(
                "{event} {} {}{}",
                part("server"),
                part("method"),
                part("side")
            );
            let now = (std::time::Instant::now(), std::time::SystemTime::now());
            let (write, passed) = self
                .limiter
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .judge(&kind, now.0, now.1);
            if let Some(held) = passed {
                self.held(&kind, &held);
            }
            if !write {
                return;
            }
        }
        self.write(event, members);
    }

    /// Writes what floods held back in windows that have passed (`all`: everything
    /// held, as the bridge stops).
    pub fn flush(&self, all: bool) {
        let due = self
            .limiter
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .due(std::time::Instant::now(), all);
        for (kind, held) in due {
            self.held(&kind, &held);
        }
    }

    /// The `suppressed` line of what was held back of `kind`.
    fn held(&self, kind: &str, held: &Held) {
        let time = capable::internal::time::rfc3339;
        self.write(
            "suppressed",
            json!({"of": kind.trim_end(), "count": held.count,
                "first": time(held.first), "last": time(held.last)}),
        );
    }

    /// Writes one line whatever floods are held back (the bridge's last word).
    pub fn always(&self, event: &str, members: Value) {
        self.write(event, members);
    }

    /// Writes one line as it is.
    fn write(&self, event: &str, members: Value) {
        let mut line = Map::new();
        line.insert(
            "time".into(),
            capable::internal::time::rfc3339(std::time::SystemTime::now()).into(),
        );
        line.insert("event".into(), event.into());
        if let Ok(Some(caller)) = CALLER.try_with(|c| c.as_ref().map(|c| c.audit())) {
            line.insert("caller".into(), caller);
        }
        if let Value::Object(members) = members {
            line.extend(members);
        }
        let text = serde_json::to_string(&Value::Object(line)).unwrap_or_default();
        let mut text = self.secrets.load().scrub(&text).into_owned();
        text.push('\n');
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
        if let Some(file) = &self.file {
            let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
            let _ = file.write_all(text.as_bytes()).and_then(|()| file.flush());
        }
    }

    /// A contract violation of server `server`, with its evidence.
    pub fn violation(&self, server: &str, v: &Violation) {
        let mut members = match serde_json::to_value(v).unwrap_or(Value::Null) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        members.insert("server".into(), server.into());
        self.metrics.violation(server, v.method);
        self.record("violation", Value::Object(members));
    }

    /// What a host's pins said, if `event` is theirs: a definition that differs from
    /// its pin (both definitions, the server's version, whether it was withheld —
    /// evidence, as a violation is), one held, pins that could not be saved. Whether
    /// it was.
    pub fn pins(&self, event: &capable::host::HostEvent) -> bool {
        use capable::host::HostEvent;
        match event {
            HostEvent::DefinitionChanged {
                server,
                server_version,
                change,
                withheld,
            } => self.record(
                "definition_changed",
                json!({"server": server, "serverVersion": server_version, "kind": change.kind,
                    "name": change.name, "pinned": change.pinned, "now": change.now,
                    "withheld": withheld}),
            ),
            HostEvent::DefinitionHeld { server, kind, name } => self.record(
                "definition_held",
                json!({"server": server, "kind": kind, "name": name}),
            ),
            HostEvent::PinsUnsaved { server, error } => {
                self.record("pins_unsaved", json!({"server": server, "error": error}))
            }
            _ => return false,
        }
        true
    }

    /// An answer of server `server` to `method` that breaks the protocol (not JSON, not
    /// the shape the method's result has), and what is wrong with it.
    pub fn malformed(&self, server: &str, method: &str, what: &str) {
        self.record(
            "malformed",
            json!({"server": server, "method": method, "what": what}),
        );
    }

    /// A notice of the session with server `server`.
    pub fn server_notice(&self, server: &str, notice: &Notice) {
        let level = match notice.is_informational() {
            true => "info",
            false => "warning",
        };
        self.metrics.notice(true, level == "warning");
        self.record(
            "notice",
            json!({"side": "server", "server": server, "level": level, "notice": notice.to_string()}),
        );
    }

    /// A notice of the host's side (a request the bridge refused, a line it skipped).
    pub fn host_notice(&self, notice: &ClientNotice) {
        self.metrics.notice(false, true);
        self.record(
            "notice",
            json!({"side": "host", "level": "warning", "notice": notice.to_string()}),
        );
    }

    /// Something of the host's side the bridge let go, at `level` (`info`,
    /// `warning`): what became of a 2026-07-28 host's `input_required` round (an answer
    /// ignored, a round it never came back to), a message that revision does not take.
    pub fn host_round(&self, level: &str, notice: &str) {
        self.metrics.notice(false, level == "warning");
        self.record(
            "notice",
            json!({"side": "host", "level": level, "notice": notice}),
        );
    }

    /// A notification of server `server` the host was not given, and why.
    pub fn withheld(&self, server: &str, method: &str, why: &dyn std::fmt::Display) {
        self.record(
            "withheld",
            json!({"server": server, "method": method, "why": why.to_string()}),
        );
    }

    /// Server `server` entered `state` (`members` say more).
    pub fn state(&self, server: &str, state: &str, members: Value) {
        self.metrics.state(server, state);
        let mut line = json!({"server": server, "state": state});
        if let (Value::Object(line), Value::Object(more)) = (&mut line, members) {
            line.extend(more);
        }
        self.record("state", line);
    }
}
