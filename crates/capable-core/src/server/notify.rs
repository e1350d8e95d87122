//! What a server may send its client, and where: the gating table the other way.
//!
//! | notification | legacy client | 2026-07-28 client |
//! |---|---|---|
//! | `notifications/{tools,prompts,resources}/list_changed` | the list's `listChanged` declared | declared, and to each listen stream that asked, tagged with its id |
//! | `notifications/resources/updated` | `resources.subscribe` declared, the URI (or one it is part of) subscribed | declared, to each listen stream whose `resourceSubscriptions` covers it |
//! | `notifications/message` | `logging` declared, at or above the level `logging/setLevel` asked for | declared, while a request that asked for that level is in flight (never on a listen stream) |
//! | `notifications/progress` | for a request in flight that gave a `progressToken` ([`ServerConnection::progress`]) | the same |
//! | `notifications/tasks/status` | 2025-11-25, `tasks` declared | — |
//! | `notifications/elicitation/complete` | 2025-11-25, the client declared URL elicitation | — |
//! | `notifications/cancelled`, `notifications/subscriptions/acknowledged` | the engine's own | the engine's own |
//! | a method the protocol does not define (a server's own) | as it is, where [`ServerConnection::set_custom_notifications`] lets it | the same |
//!
//! A listen stream's id already in the params (a notification relayed from a 2026-07-28
//! server) is dropped for a legacy client and replaced for a 2026-07-28 one. Anything
//! else is withheld, with the reason ([`Withheld`]); nothing is written.

use std::str::FromStr;

use serde_json::{json, Map, Value};

use crate::connection::SUBSCRIPTION_ID;
use crate::jsonrpc::RequestId;
use crate::model;
use crate::notification::{Notification, NotificationMethod};
use crate::outbox::Outbox;
use crate::version::{Era, ProtocolVersion};

use super::ServerConnection;

/// A logging level (RFC 5424's, as MCP names them), least severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `notice`.
    Notice,
    /// `warning`.
    Warning,
    /// `error`.
    Error,
    /// `critical`.
    Critical,
    /// `alert`.
    Alert,
    /// `emergency`.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

impl FromStr for LogLevel {
    type Err = ();

    fn from_str(s: &str) -> Result<LogLevel, ()> {
        LogLevel::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or(())
    }
}

/// Why a notification was not sent. Nothing was written.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Withheld {
    /// The client's era is not known yet: no `initialize`, no request.
    #[error("the client has not spoken yet (no initialize, no request)")]
    NotReady,
    /// The connection is closed.
    #[error("the connection is closed")]
    Closed,
    /// The server did not declare what the notification presupposes.
    #[error("{method} needs the server to declare `{needs}`, which it did not")]
    NotDeclared {
        /// The notification.
        method: String,
        /// What it needs.
        needs: String,
    },
    /// The notification does not exist for this client (its version, or what it
    /// declared).
    #[error("{method} is not for a client of protocol version {version}")]
    NotInVersion {
        /// The notification.
        method: String,
        /// The client's version.
        version: ProtocolVersion,
    },
    /// An update of a resource no subscription covers.
    #[error("no subscription covers {uri}")]
    NotSubscribed {
        /// The resource.
        uri: String,
    },
    /// No listen stream of the client asked for it.
    #[error("no listen stream asked for {method}")]
    NotListened {
        /// The notification.
        method: String,
    },
    /// It belongs to a request but names none, and the engine's clients cannot be
    /// told apart while several requests are in flight
    /// ([`ServerConnection::set_shared`](super::ServerConnection::set_shared)).
    #[error("{what} could be any of {requests} requests in flight, of clients that cannot be told apart")]
    Unattributable {
        /// What it is.
        what: &'static str,
        /// How many requests are in flight.
        requests: usize,
    },
    /// It belongs to a request, and none in flight asked for it (progress without a
    /// token, a log line no request asked for).
    #[error("no request in flight asked for {what}")]
    NoRequest {
        /// What was asked for.
        what: &'static str,
    },
    /// A log line below the level the client asked for.
    #[error("a {level} log line is below the level the client asked for")]
    BelowLevel {
        /// Its level.
        level: &'static str,
    },
    /// It is no method of the protocol's (a server's own), and the application did not
    /// let it pass
    /// ([`ServerConnection::set_custom_notifications`](super::ServerConnection::set_custom_notifications)).
    #[error("{method} is no notification of the protocol's, and none such is passed on")]
    Custom {
        /// The notification.
        method: String,
    },
    /// The engine writes it itself (a cancellation, a listen stream's acknowledgement).
    #[error("{method} is written by the engine itself")]
    EngineOnly {
        /// The notification.
        method: String,
    },
    /// Its params are not what the protocol says.
    #[error("{method} with malformed params: {detail}")]
    Malformed {
        /// The notification.
        method: String,
        /// What is wrong.
        detail: String,
    },
}

impl<W> ServerConnection<W> {
    /// Sends `notification` (whose params are `params`, as the application or the
    /// server behind a bridge has them) if the table above lets it go, where it goes:
    /// plain to a legacy client, tagged with each listen stream's id to a 2026-07-28
    /// one. A stream id already in `params._meta` is replaced.
    pub fn notify(
        &mut self,
        notification: &Notification,
        params: &Value,
        out: &mut Outbox,
    ) -> Result<(), Withheld> {
        let version = match (&self.phase, self.phase.version()) {
            (super::Phase::Closed, _) => return Err(Withheld::Closed),
            (_, None) => return Err(Withheld::NotReady),
            (_, Some(version)) => version,
        };
        let name = notification.name().to_owned();
        let Some(method) = notification.method() else {
            // Not the protocol's: a server's own, passed as it is where it may be.
            if !self.custom.as_ref().is_some_and(|allow| allow(&name)) {
                return Err(Withheld::Custom { method: name });
            }
            out.write_notification(&name, Some(params));
            return Ok(());
        };
        if let Notification::Malformed { detail, .. } = notification {
            return Err(Withheld::Malformed {
                method: name,
                detail: detail.clone(),
            });
        }
        self.declared(method)?;
        let era = version.era();
        match notification {
            Notification::Cancelled { .. }
            | Notification::SubscriptionsAcknowledged { .. }
            | Notification::Progress(_) => Err(Withheld::EngineOnly { method: name }),
            Notification::Message(log) => {
                let level = log
                    .level
                    .parse::<LogLevel>()
                    .map_err(|()| Withheld::Malformed {
                        method: name.clone(),
                        detail: format!("{:?} is not a logging level", log.level),
                    })?;
                self.log(level, params, out)
            }
            _ if method.list_changed().is_some()
                || method == NotificationMethod::ResourceUpdated =>
            {
                match era {
                    Era::Legacy => {
                        if let Notification::ResourceUpdated { uri } = notification {
                            self.subscribed(uri)?;
                        }
                        out.write_notification(&name, Some(&*untag(params)));
                        Ok(())
                    }
                    Era::Modern => self.tell_listeners(notification, params, out),
                }
            }
            Notification::TaskStatus(_) if version.has_core_tasks() => {
                out.write_notification(&name, Some(params));
                Ok(())
            }
            Notification::ElicitationComplete { .. }
                if version.has_elicitation_modes()
                    && era == Era::Legacy
                    && self.phase.capabilities().is_some_and(|c| c.elicitation_url) =>
            {
                out.write_notification(&name, Some(params));
                Ok(())
            }
            _ => Err(Withheld::NotInVersion {
                method: name,
                version,
            }),
        }
    }

    /// Whether the server declared what `method` presupposes (the table of
    /// [`NotificationMethod::requirement`]; 2025-11-25 task statuses need `tasks`).
    fn declared(&self, method: NotificationMethod) -> Result<(), Withheld> {
        let caps = &self.config.capabilities;
        let needs = match method.requirement() {
            Some((capability, None)) if !caps.has(capability) => capability.key().to_owned(),
            Some((capability, Some(flag))) if !caps.has_flag(capability, flag) => {
                format!("{}.{}", capability.key(), flag.key())
            }
            None if method == NotificationMethod::TaskStatus && !caps.legacy_tasks().present => {
                "tasks".to_owned()
            }
            _ => return Ok(()),
        };
        Err(Withheld::NotDeclared {
            method: method.as_str().to_owned(),
            needs,
        })
    }

    /// A legacy update of `uri` goes out only under a subscription that covers it.
    /// Kept upstream ([`ServerConnection::keep_state_upstream`]): the server's
    /// own record gates it.
    fn subscribed(&self, uri: &str) -> Result<(), Withheld> {
        match self.state_upstream
            || self
                .subscriptions
                .iter()
                .any(|s| model::is_same_or_sub_resource(uri, s))
        {
            true => Ok(()),
            false => Err(Withheld::NotSubscribed {
                uri: uri.to_owned(),
            }),
        }
    }

    /// A log line at `level`: legacy, at or above the level asked for; modern, with a
    /// request in flight that asked for it (the line belongs to that request).
    fn log(&mut self, level: LogLevel, params: &Value, out: &mut Outbox) -> Result<(), Withheld> {
        const METHOD: &str = NotificationMethod::Message.as_str();
        if self.phase.era() == Some(Era::Legacy) {
            // Kept upstream: the server filtered at the level asked of it.
            let wanted = self.log_level.filter(|_| !self.state_upstream);
            if wanted.is_some_and(|wanted| level < wanted) {
                return Err(Withheld::BelowLevel {
                    level: level.as_str(),
                });
            }
            out.write_notification(METHOD, Some(params));
            return Ok(());
        }
        if self.shared && self.inbound.len() > 1 {
            return Err(Withheld::Unattributable {
                what: "a log line",
                requests: self.inbound.len(),
            });
        }
        let asked = self
            .inbound
            .iter()
            .filter(|(_, r)| r.log_level.is_some_and(|wanted| level >= wanted))
            .map(|(id, _)| id)
            .next();
        match asked {
            Some(id) => {
                let id = id.clone();
                out.write_related(METHOD, Some(params), &id);
                Ok(())
            }
            None => Err(Withheld::NoRequest {
                what: "log lines at this level",
            }),
        }
    }

    /// A 2026-07-28 list change or update, to every listen stream that asked for it,
    /// each copy tagged with the stream's id.
    fn tell_listeners(
        &mut self,
        notification: &Notification,
        params: &Value,
        out: &mut Outbox,
    ) -> Result<(), Withheld> {
        let name = notification.name();
        let streams: Vec<RequestId> = self
            .listens
            .iter()
            .filter(|l| l.wants(notification))
            .map(|l| l.id.clone())
            .collect();
        if streams.is_empty() {
            return Err(Withheld::NotListened {
                method: name.to_owned(),
            });
        }
        for id in streams {
            let tagged = tag(params, &id);
            out.write_related(name, Some(&tagged), &id);
        }
        Ok(())
    }

    /// Progress of the client's request `id`, under the token it gave; withheld when
    /// it is not in flight or gave none. `message` is left out for versions before
    /// 2025-03-26, which do not define it.
    pub fn progress(
        &mut self,
        id: &RequestId,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
        out: &mut Outbox,
    ) -> Result<(), Withheld> {
        let Some(version) = self.phase.version() else {
            return Err(Withheld::NotReady);
        };
        let token = self
            .inbound
            .get(id)
            .and_then(|r| r.progress_token.as_ref())
            .ok_or(Withheld::NoRequest { what: "progress" })?;
        let mut params = json!({"progressToken": token, "progress": number(progress)});
        if let Some(total) = total {
            params["total"] = number(total);
        }
        if let Some(message) = message.filter(|_| version > ProtocolVersion::V2024_11_05) {
            params["message"] = json!(message);
        }
        out.write_related(NotificationMethod::Progress.as_str(), Some(&params), id);
        Ok(())
    }
}

/// A JSON number as JavaScript writes it: an integral value without a fraction (`7`,
/// not `7.0`), as a client that compares progress to integers expects.
fn number(n: f64) -> Value {
    const EXACT: f64 = (1u64 << 53) as f64;
    match n.fract() == 0.0 && n.abs() < EXACT {
        true => json!(n as i64),
        false => json!(n),
    }
}

/// `params` without a listen stream's id (a relayed 2026-07-28 notification, for a
/// legacy client, which has no streams): its `_meta` goes when nothing else is in it.
fn untag(params: &Value) -> std::borrow::Cow<'_, Value> {
    let tagged = params
        .get("_meta")
        .and_then(|m| m.get(SUBSCRIPTION_ID))
        .is_some();
    if !tagged {
        return std::borrow::Cow::Borrowed(params);
    }
    let mut params = params.clone();
    if let Some(Value::Object(meta)) = params.get_mut("_meta") {
        meta.remove(SUBSCRIPTION_ID);
        if meta.is_empty() {
            params.as_object_mut().map(|p| p.remove("_meta"));
        }
    }
    std::borrow::Cow::Owned(params)
}

/// `params` with `_meta[SUBSCRIPTION_ID]` set to `id` (its other members kept).
pub(super) fn tag(params: &Value, id: &RequestId) -> Value {
    let mut params = match params {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        meta.insert(SUBSCRIPTION_ID.to_owned(), json!(id));
    }
    Value::Object(params)
}
