//! A scripted client of the server engine: what it sends, what the engine wrote back
//! (each line validated as a server message of the version spoken).

use std::time::Duration;

use capable_core::internal::server::{Event, ServerConfig, ServerConnection};
use capable_core::{Incoming, Outbox, ProtocolChoice, ProtocolVersion};
use capable_test_support::{assert_valid_result, take_from_server};
use serde_json::{json, Value};

use super::{MODERN, V};

/// A server and what it wrote, spoken to as `version`.
pub struct Scripted {
    pub server: ServerConnection<&'static str>,
    pub out: Outbox,
    pub version: ProtocolVersion,
}

pub fn server(capabilities: Value, protocol: ProtocolChoice) -> Scripted {
    let mut config = ServerConfig::new(
        capable_core::model::Implementation::new("scripted-server", "1.0"),
        capabilities,
    );
    config.protocol = protocol;
    config.instructions = Some("read docs://a".into());
    config.request_timeout = Duration::from_secs(5);
    Scripted {
        server: ServerConnection::new(config),
        out: Outbox::new(),
        version: V,
    }
}

pub fn message(v: Value) -> Incoming {
    Incoming::parse(v.to_string().into_bytes()).expect("a JSON-RPC message")
}

pub fn meta(version: &str) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "host", "version": "1"}})
}

impl Scripted {
    pub fn send(&mut self, v: Value) -> Event<&'static str> {
        self.server.handle(message(v), &mut self.out)
    }

    pub fn request(&mut self, id: i64, method: &str, params: Value) -> Event<&'static str> {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    }

    pub fn modern(&mut self, id: i64, method: &str, mut params: Value) -> Event<&'static str> {
        params["_meta"] = meta(MODERN.as_str());
        self.request(id, method, params)
    }

    pub fn written(&mut self) -> Vec<Value> {
        take_from_server(self.version, &mut self.out)
    }

    /// The one message written, which must be an error with `code`.
    #[track_caller]
    pub fn refused(&mut self, code: i64) -> Value {
        let written = self.written();
        assert_eq!(written.len(), 1, "{written:?}");
        assert_eq!(written[0]["error"]["code"], code, "{}", written[0]);
        written[0].clone()
    }

    pub fn initialize(version: &str, capabilities: Value, client: Value) -> Scripted {
        let mut s = server(capabilities, ProtocolChoice::Auto);
        s.request(
            1,
            "initialize",
            json!({"protocolVersion": version,
            "capabilities": client, "clientInfo": {"name": "host", "version": "1"}}),
        );
        s.version = version.parse().unwrap_or(V);
        let answer = s.written();
        assert_valid_result(s.version, "InitializeResult", &answer[0]);
        assert!(matches!(
            s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
            Event::Initialized
        ));
        s
    }
}
