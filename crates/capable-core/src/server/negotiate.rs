//! The handshake from the server's side: a legacy `initialize`, `server/discover`, and
//! the `_meta` envelope every 2026-07-28 request carries.
//!
//! | the client sends | the engine answers |
//! |---|---|
//! | `initialize` proposing a legacy version the server offers | that version |
//! | `initialize` proposing any other | the latest legacy version it offers ([`choose_version`]) |
//! | `initialize` to a server that offers no legacy version | `-32602` naming the versions it speaks |
//! | a request whose `_meta` names a version the server offers | it is served under that version |
//! | … a version it does not offer | `-32022` with `data.supported` and `data.requested` |
//! | … no version, or no `clientCapabilities` | `-32602` |
//! | `server/discover` | `supportedVersions`, `capabilities`, `instructions`, `serverInfo` in `_meta`, `ttlMs` |

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::capabilities::ClientCapabilities;
use crate::config::ProtocolChoice;
use crate::jsonrpc::{codes, Incoming, Payload, RequestId, RpcError};
use crate::model::Implementation;
use crate::outbox::Outbox;
use crate::version::{Era, ProtocolVersion};

use super::notify::LogLevel;
use super::phase::{LegacyClient, ModernClient, Phase};
use super::{error, Event, ServerConnection};

/// The legacy version a server offering `offered` answers to an `initialize` that
/// proposed `requested`: the same when it offers it, else the latest legacy version it
/// offers (the specification's rule); `None` when it offers no legacy version at all.
pub fn choose_version(requested: &str, offered: ProtocolChoice) -> Option<ProtocolVersion> {
    let legacy = ProtocolVersion::of_era(Era::Legacy).filter(|v| offered.accepts(*v));
    match requested.parse::<ProtocolVersion>() {
        Ok(v) if v.era() == Era::Legacy && offered.accepts(v) => Some(v),
        _ => legacy.max(),
    }
}

/// What a client says about itself in its first message — `initialize`'s params, or a
/// 2026-07-28 request's envelope — for a server that must know it before it can
/// answer (a bridge connects to the server behind it declaring the same).
#[derive(Clone, Debug, PartialEq)]
pub struct Hello {
    /// The era the message belongs to.
    pub era: Era,
    /// The version it proposes (legacy) or carries (modern), when it is one capable
    /// knows.
    pub version: Option<ProtocolVersion>,
    /// What it declares, read by key.
    pub capabilities: ClientCapabilities,
    /// Who it says it is.
    pub client_info: Option<Implementation>,
}

impl Hello {
    /// The client's word about itself in `message`, when it carries one: an
    /// `initialize` request, or any request with the modern envelope.
    pub fn read(message: &Incoming) -> Option<Hello> {
        let Incoming::Request { method, params, .. } = message else {
            return None;
        };
        if method == "initialize" {
            let p: InitializeIn = params.decode().ok()?;
            return Some(Hello {
                era: Era::Legacy,
                version: p.protocol_version.parse().ok(),
                capabilities: ClientCapabilities::from_value(&p.capabilities),
                client_info: p.client_info,
            });
        }
        let meta = read_meta(params).ok()?;
        let version = meta.version.as_ref()?.as_str()?;
        Some(Hello {
            era: Era::Modern,
            version: version.parse().ok(),
            capabilities: ClientCapabilities::from_value(&meta.declared()?),
            client_info: meta.client_info_typed(),
        })
    }
}

/// `initialize` params, as a server reads them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeIn {
    protocol_version: String,
    #[serde(default)]
    capabilities: Value,
    #[serde(default)]
    client_info: Option<Implementation>,
}

/// The members of a request's `_meta` the engine reads (in either era: a legacy
/// request's `progressToken` too).
#[derive(Debug, Default, Deserialize)]
pub(super) struct Meta {
    #[serde(default, rename = "io.modelcontextprotocol/protocolVersion")]
    pub(super) version: Option<Value>,
    // The two below are kept as text: most requests repeat the last one's, which is
    // then not decoded again (see `ServerConnection::envelope`).
    #[serde(default, rename = "io.modelcontextprotocol/clientCapabilities")]
    capabilities: Option<Box<RawValue>>,
    #[serde(default, rename = "io.modelcontextprotocol/clientInfo")]
    client_info: Option<Box<RawValue>>,
    #[serde(default, rename = "io.modelcontextprotocol/logLevel")]
    pub(super) log_level: Option<String>,
    #[serde(default, rename = "progressToken")]
    pub(super) progress_token: Option<Value>,
}

impl Meta {
    fn client_info_typed(&self) -> Option<Implementation> {
        self.client_info
            .as_ref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }

    /// The client's `clientCapabilities`, decoded.
    fn declared(&self) -> Option<Value> {
        let raw = self.capabilities.as_ref()?;
        serde_json::from_str(raw.get()).ok()
    }
}

/// The envelope members of a 2026-07-28 client's latest request that its phase was
/// built from, as text.
#[derive(Debug)]
pub(super) struct Seen {
    version: ProtocolVersion,
    capabilities: Box<RawValue>,
    client_info: Option<Box<RawValue>>,
}

impl Seen {
    fn repeated_by(&self, version: ProtocolVersion, meta: &Meta) -> bool {
        fn text(raw: &Option<Box<RawValue>>) -> Option<&str> {
            raw.as_ref().map(|r| r.get())
        }
        self.version == version
            && text(&meta.capabilities) == Some(self.capabilities.get())
            && text(&meta.client_info) == text(&self.client_info)
    }
}

#[derive(Deserialize)]
struct WithMeta {
    #[serde(default, rename = "_meta")]
    meta: Option<Meta>,
}

/// A request's `_meta` (empty when it has none); an error for params that are no
/// object.
pub(super) fn read_meta(params: &Payload) -> Result<Meta, serde_json::Error> {
    if params.is_absent() {
        return Ok(Meta::default());
    }
    params
        .decode::<Option<WithMeta>>()
        .map(|p| p.and_then(|p| p.meta).unwrap_or_default())
}

/// The versions of `era` a server offering `offered` speaks, as strings.
pub(super) fn offered(offered: ProtocolChoice, era: Era) -> Vec<&'static str> {
    ProtocolVersion::of_era(era)
        .filter(|v| offered.accepts(*v))
        .map(ProtocolVersion::as_str)
        .collect()
}

impl<W> ServerConnection<W> {
    /// Answers `initialize` (see the module documentation).
    pub(super) fn on_initialize(
        &mut self,
        id: RequestId,
        params: &Payload,
        out: &mut Outbox,
    ) -> Event<W> {
        if !matches!(self.phase, Phase::Fresh) {
            let e = error(codes::INVALID_REQUEST, "initialize was answered already");
            self.refuse(&id, "initialize", e, out);
            return Event::Handled;
        }
        let p = match params.decode::<InitializeIn>() {
            Ok(p) => p,
            Err(e) => {
                let e = error(codes::INVALID_PARAMS, format!("invalid initialize: {e}"));
                self.refuse(&id, "initialize", e, out);
                return Event::Handled;
            }
        };
        let Some(version) = choose_version(&p.protocol_version, self.config.protocol) else {
            let e = RpcError {
                code: codes::INVALID_PARAMS,
                message: "Unsupported protocol version: this server speaks 2026-07-28 only".into(),
                data: Some(json!({
                    "supported": offered(self.config.protocol, Era::Modern),
                    "requested": p.protocol_version,
                })),
            };
            self.refuse(&id, "initialize", e, out);
            return Event::Handled;
        };
        let mut result = json!({
            "protocolVersion": version.as_str(),
            "capabilities": self.config.capabilities.for_version(version),
            "serverInfo": self.config.server_info,
        });
        if let Some(instructions) = &self.config.instructions {
            result["instructions"] = json!(instructions);
        }
        out.write_result(&id, &result);
        self.phase = Phase::Initializing(LegacyClient {
            version,
            capabilities: ClientCapabilities::from_value(&p.capabilities),
            declared: p.capabilities,
            client_info: p.client_info.unwrap_or_default(),
        });
        Event::Handled
    }

    /// Answers `server/discover` (of a client of `version`).
    pub(super) fn on_discover(
        &mut self,
        id: &RequestId,
        version: ProtocolVersion,
        out: &mut Outbox,
    ) {
        let mut result = json!({
            "resultType": "complete",
            "supportedVersions": offered(self.config.protocol, Era::Modern),
            "capabilities": self.config.capabilities.for_version(version),
            "ttlMs": self.config.discover_ttl.as_millis() as u64,
            "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": self.config.server_info},
        });
        if let Some(instructions) = &self.config.instructions {
            result["instructions"] = json!(instructions);
        }
        out.write_result(id, &result);
    }

    /// The modern envelope of a request with `meta`: the version it is served under
    /// and its log level, the client's phase updated; or the error to answer with.
    pub(super) fn envelope(
        &mut self,
        meta: &Meta,
    ) -> Result<(ProtocolVersion, Option<LogLevel>), RpcError> {
        let supported = offered(self.config.protocol, Era::Modern);
        let Some(requested) = meta.version.as_ref() else {
            return Err(RpcError {
                code: codes::INVALID_PARAMS,
                message: "params._meta must carry io.modelcontextprotocol/protocolVersion \
                          (2026-07-28; a legacy client sends initialize first)"
                    .into(),
                data: Some(json!({ "supported": supported })),
            });
        };
        let version = requested
            .as_str()
            .and_then(|v| v.parse::<ProtocolVersion>().ok())
            .filter(|v| v.era() == Era::Modern && self.config.protocol.accepts(*v));
        let Some(version) = version else {
            return Err(RpcError {
                code: codes::UNSUPPORTED_PROTOCOL_VERSION,
                message: "Unsupported protocol version".into(),
                data: Some(json!({ "supported": supported, "requested": requested })),
            });
        };
        let Some(capabilities) = &meta.capabilities else {
            return Err(error(
                codes::INVALID_PARAMS,
                "params._meta must carry io.modelcontextprotocol/clientCapabilities",
            ));
        };
        let log_level = match meta.log_level.as_deref().map(str::parse::<LogLevel>) {
            Some(Err(())) => {
                return Err(error(
                    codes::INVALID_PARAMS,
                    "io.modelcontextprotocol/logLevel is not a logging level",
                ))
            }
            Some(Ok(level)) => Some(level),
            None => None,
        };
        // The same envelope as the last request's: the phase built from it stands.
        let same = matches!(&self.phase, Phase::Modern(_))
            && self
                .seen
                .as_ref()
                .is_some_and(|seen| seen.repeated_by(version, meta));
        if !same {
            let declared = meta.declared().unwrap_or_default();
            let client = ModernClient {
                version,
                capabilities: ClientCapabilities::from_value(&declared),
                declared,
                client_info: meta.client_info_typed(),
            };
            self.phase.modern(client);
            self.seen = Some(Seen {
                version,
                capabilities: capabilities.clone(),
                client_info: meta.client_info.clone(),
            });
        }
        Ok((version, log_level))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_version_when_offered_else_the_latest_legacy_one() {
        use ProtocolChoice::*;
        assert_eq!(
            choose_version("2025-03-26", Auto),
            Some(ProtocolVersion::V2025_03_26)
        );
        for other in ["2099-01-01", "2026-07-28", "", "2025-11-25 "] {
            assert_eq!(
                choose_version(other, Auto),
                Some(ProtocolVersion::LATEST_LEGACY),
                "{other:?}"
            );
        }
        let only = Exact(ProtocolVersion::V2025_06_18);
        assert_eq!(
            choose_version("2025-11-25", only),
            Some(ProtocolVersion::V2025_06_18)
        );
        assert_eq!(choose_version("2025-11-25", Modern), None);
    }

    #[test]
    fn hello_reads_initialize_and_the_modern_envelope() {
        let parse = |v: Value| Incoming::parse(v.to_string().into_bytes()).unwrap();
        let init = parse(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "host", "version": "2"}}}),
        );
        let hello = Hello::read(&init).expect("a hello");
        assert_eq!(hello.era, Era::Legacy);
        assert_eq!(hello.version, Some(ProtocolVersion::V2025_06_18));
        assert!(hello.capabilities.elicitation_form);
        assert_eq!(hello.client_info.unwrap().name, "host");

        let discover = parse(
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}}}),
        );
        let hello = Hello::read(&discover).expect("a hello");
        assert_eq!(
            (hello.era, hello.version),
            (Era::Modern, Some(ProtocolVersion::V2026_07_28))
        );
        assert!(hello.capabilities.sampling && hello.client_info.is_none());

        let bare = parse(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
        assert_eq!(Hello::read(&bare), None);
        let note = parse(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(Hello::read(&note), None);
    }
}
