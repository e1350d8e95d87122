//! The lifecycle as properties: whatever a server sends, in whatever order — answers
//! to the handshake in any version with any capabilities, refusals, responses with
//! unknown, repeated or string ids, notifications, requests, garbage, the end of the
//! stream — interleaved with whatever the host asks (any method, declared or not,
//! cancellations, answers to server requests) and with time passing on a made-up
//! clock, every line the client writes obeys the lifecycle:
//!
//! - before the handshake completes it writes only `server/discover` and `initialize`
//!   (and answers); `notifications/initialized` comes with readiness, and first;
//! - once ready it sends only methods the negotiated version and the server's declared
//!   capabilities allow (strict gating), read here from a table of the specification;
//! - no request id is ever used twice, and a cancellation names a request it sent;
//! - after a failed handshake (a refused version included) or a close, nothing.

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use capable_core::Outbox;
use capable_core::{
    Connection, Event, Incoming, Method, Negotiating, Now, ProtocolChoice, ProtocolVersion,
    RequestId, Step, Timing,
};
use capable_test_support::{config, now as wall, t0};
use proptest::prelude::*;
use serde_json::{json, Value};

/// What the server may declare: each capability absent, `{}`, or with its flags.
#[derive(Clone, Debug)]
struct Caps(Value);

fn caps() -> impl Strategy<Value = Caps> {
    let one = |flags: &'static [&'static str]| {
        prop_oneof![
            Just(None),
            Just(Some(json!({}))),
            Just(Some(json!(null))),
            proptest::sample::subsequence(flags.to_vec(), 0..=flags.len()).prop_map(|fs| {
                Some(Value::Object(
                    fs.into_iter()
                        .map(|f| (f.to_owned(), json!(true)))
                        .collect(),
                ))
            }),
            Just(Some(json!({"subscribe": "true", "listChanged": 1}))),
        ]
    };
    (
        one(&["subscribe", "listChanged"]),
        one(&["listChanged"]),
        one(&["listChanged"]),
        one(&[]),
        one(&[]),
    )
        .prop_map(|(r, t, p, l, c)| {
            let mut map = serde_json::Map::new();
            for (key, v) in [
                ("resources", r),
                ("tools", t),
                ("prompts", p),
                ("logging", l),
                ("completions", c),
            ] {
                if let Some(v) = v {
                    map.insert(key.into(), v);
                }
            }
            Caps(Value::Object(map))
        })
}

/// Which request an answer names.
#[derive(Clone, Debug)]
enum Id {
    /// The client's latest request.
    Latest,
    /// One of the client's requests so far (maybe answered already).
    Earlier(usize),
    /// One the client never sent.
    Unknown(i64),
    /// A string.
    Text,
}

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        4 => Just(Id::Latest),
        2 => any::<usize>().prop_map(Id::Earlier),
        1 => (-3i64..1000).prop_map(Id::Unknown),
        1 => Just(Id::Text),
    ]
}

const VERSIONS: [&str; 7] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
    "2024-10-07",
    "1.0",
];

const SERVER_METHODS: [&str; 9] = [
    "ping",
    "roots/list",
    "sampling/createMessage",
    "elicitation/create",
    "notifications/progress",
    "notifications/tools/list_changed",
    "notifications/resources/updated",
    "notifications/message",
    "notifications/cancelled",
];

/// One thing the server does.
#[derive(Clone, Debug)]
enum Server {
    InitializeResult {
        id: Id,
        version: usize,
        caps: Caps,
    },
    DiscoverResult {
        id: Id,
        versions: Vec<usize>,
        caps: Caps,
    },
    Error {
        id: Id,
        code: i64,
        supported: Vec<usize>,
    },
    Result {
        id: Id,
        result: Value,
    },
    Notification {
        method: usize,
        token: Id,
    },
    Request {
        id: i64,
        method: usize,
    },
    Garbage(Vec<u8>),
    Batch(Id),
}

fn server() -> impl Strategy<Value = Server> {
    let codes = prop_oneof![
        Just(-32601i64),
        Just(-32602),
        Just(-32600),
        Just(-32022),
        Just(-32603),
        Just(1)
    ];
    let versions = proptest::collection::vec(0..VERSIONS.len(), 0..3);
    prop_oneof![
        3 => (id(), 0..VERSIONS.len(), caps())
            .prop_map(|(id, version, caps)| Server::InitializeResult { id, version, caps }),
        2 => (id(), versions.clone(), caps())
            .prop_map(|(id, versions, caps)| Server::DiscoverResult { id, versions, caps }),
        2 => (id(), codes, versions).prop_map(|(id, code, supported)| Server::Error { id, code, supported }),
        3 => (id(), prop_oneof![Just(json!({})), Just(json!(null)), Just(json!({"tools": []}))])
            .prop_map(|(id, result)| Server::Result { id, result }),
        2 => (0..SERVER_METHODS.len(), id())
            .prop_map(|(method, token)| Server::Notification { method, token }),
        1 => (0i64..5, 0..4usize).prop_map(|(id, method)| Server::Request { id, method }),
        1 => proptest::collection::vec(any::<u8>(), 0..40).prop_map(Server::Garbage),
        1 => id().prop_map(Server::Batch),
    ]
}

/// One thing that happens.
#[derive(Clone, Debug)]
enum Action {
    Server(Server),
    /// The server answers the client's latest request as a well-behaved server would
    /// (the handshake: with the version proposed, or another legacy one).
    Answer {
        caps: Caps,
        proposed: bool,
        legacy: usize,
    },
    /// The host calls a method (any of them, declared or not).
    Call(usize),
    /// The host gives up on one of its requests.
    Cancel(usize),
    /// The host answers the server's latest request.
    Respond,
    /// Time passes (ms).
    Wait(u64),
    /// The host closes, or the server's stream ends.
    Close,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        8 => server().prop_map(Action::Server),
        6 => (caps(), any::<bool>(), 0..4usize)
            .prop_map(|(caps, proposed, legacy)| Action::Answer { caps, proposed, legacy }),
        5 => (0..Method::ALL.len()).prop_map(Action::Call),
        1 => any::<usize>().prop_map(Action::Cancel),
        1 => Just(Action::Respond),
        2 => prop_oneof![Just(10u64), Just(1_000), Just(3_500), Just(61_000), Just(700_000)]
            .prop_map(Action::Wait),
        1 => Just(Action::Close),
    ]
}

fn protocol() -> impl Strategy<Value = ProtocolChoice> {
    prop_oneof![
        Just(ProtocolChoice::Auto),
        Just(ProtocolChoice::Legacy),
        Just(ProtocolChoice::Modern),
        proptest::sample::select(ProtocolVersion::ALL.to_vec()).prop_map(ProtocolChoice::Exact),
    ]
}

/// The specification's table: may `method` be sent to a server that negotiated
/// `version` and declared `caps`?
fn allowed(method: &str, version: ProtocolVersion, caps: &Value) -> bool {
    let modern = version == ProtocolVersion::V2026_07_28;
    let has = |key: &str| caps.get(key).is_some();
    let flag = |key: &str, flag: &str| has(key) && caps[key][flag] == json!(true);
    match method {
        "ping" => !modern,
        "server/discover" | "subscriptions/listen" => modern,
        "resources/list" | "resources/templates/list" | "resources/read" => has("resources"),
        "resources/subscribe" | "resources/unsubscribe" => {
            !modern && flag("resources", "subscribe")
        }
        "tools/list" | "tools/call" => has("tools"),
        "prompts/list" | "prompts/get" => has("prompts"),
        "logging/setLevel" => !modern && has("logging"),
        "completion/complete" => version == ProtocolVersion::V2024_11_05 || has("completions"),
        _ => false,
    }
}

enum Phase {
    Negotiating(Box<Negotiating>),
    Ready(Box<Connection<usize>>),
    Over,
}

/// What the client wrote so far, and the rules every new line is checked against.
#[derive(Default)]
struct Wire {
    /// Every request id the client used, in order.
    ids: Vec<i64>,
    /// The latest request's method and `params.protocolVersion`.
    last_method: String,
    last_version: Option<String>,
    seen: HashSet<i64>,
    initialized: bool,
}

impl Wire {
    fn latest(&self) -> Value {
        self.ids.last().map_or(json!(0), |id| json!(id))
    }

    fn pick(&self, id: &Id) -> Value {
        match id {
            Id::Latest => self.latest(),
            Id::Earlier(i) if !self.ids.is_empty() => json!(self.ids[i % self.ids.len()]),
            Id::Earlier(_) => json!(0),
            Id::Unknown(n) => json!(n),
            Id::Text => json!("s-1"),
        }
    }

    /// Checks what one step wrote. `ready`: the negotiated version and capabilities,
    /// once the handshake is done.
    fn check(
        &mut self,
        out: &mut Outbox,
        ready: Option<(ProtocolVersion, &Value)>,
        became_ready: bool,
    ) {
        let lines: Vec<Value> = out
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("the client writes JSON"))
            .collect();
        out.clear();
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(line["jsonrpc"], "2.0", "{line}");
            let method = line["method"].as_str();
            let id = line.get("id");
            match (method, id) {
                // A request.
                (Some(method), Some(id)) => {
                    let n = id
                        .as_i64()
                        .unwrap_or_else(|| panic!("the client's ids are integers: {line}"));
                    assert!(self.seen.insert(n), "request id {n} used twice: {line}");
                    self.ids.push(n);
                    self.last_method = method.to_owned();
                    self.last_version = line["params"]["protocolVersion"]
                        .as_str()
                        .or(
                            line["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
                                .as_str(),
                        )
                        .map(str::to_owned);
                    match ready {
                        None => assert!(
                            method == "initialize" || method == "server/discover",
                            "{method} before the handshake completed"
                        ),
                        Some((version, caps)) => {
                            assert!(self.initialized || version.era() == capable_core::Era::Modern);
                            assert!(
                                allowed(method, version, caps),
                                "{method} sent to a server that negotiated {version} and declared {caps}"
                            );
                        }
                    }
                }
                // A notification.
                (Some(method), None) => match method {
                    "notifications/initialized" => {
                        assert!(became_ready && !self.initialized, "{line} out of place");
                        assert_eq!(i, 0, "initialized comes first");
                        self.initialized = true;
                    }
                    "notifications/cancelled" => {
                        let target = line["params"]["requestId"].as_i64().expect("an id");
                        assert!(
                            self.seen.contains(&target),
                            "cancelled {target}, never sent"
                        );
                    }
                    other => panic!("the client notified {other}"),
                },
                // An answer to the server.
                (None, Some(_)) => {
                    assert!(line.get("result").is_some() != line.get("error").is_some());
                }
                (None, None) => panic!("neither request, notification nor answer: {line}"),
            }
        }
    }
}

fn message(server: &Server, wire: &Wire) -> Vec<u8> {
    let v = match server {
        Server::InitializeResult { id, version, caps } => json!({"jsonrpc": "2.0",
            "id": wire.pick(id), "result": {"protocolVersion": VERSIONS[*version],
            "capabilities": caps.0, "serverInfo": {"name": "s", "version": "1"}}}),
        Server::DiscoverResult { id, versions, caps } => json!({"jsonrpc": "2.0",
            "id": wire.pick(id), "result": {"resultType": "complete",
            "supportedVersions": versions.iter().map(|v| VERSIONS[*v]).collect::<Vec<_>>(),
            "capabilities": caps.0,
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "m", "version": "2"}}}}),
        Server::Error {
            id,
            code,
            supported,
        } => json!({"jsonrpc": "2.0", "id": wire.pick(id),
            "error": {"code": code, "message": "scripted",
            "data": {"supported": supported.iter().map(|v| VERSIONS[*v]).collect::<Vec<_>>()}}}),
        Server::Result { id, result } => {
            json!({"jsonrpc": "2.0", "id": wire.pick(id), "result": result})
        }
        Server::Notification { method, token } => json!({"jsonrpc": "2.0",
            "method": SERVER_METHODS[*method], "params": {"progressToken": wire.pick(token),
            "progress": 1, "requestId": wire.pick(token), "uri": "a://b", "level": "info", "data": "x"}}),
        Server::Request { id, method } => json!({"jsonrpc": "2.0", "id": id,
            "method": SERVER_METHODS[*method], "params": {}}),
        Server::Garbage(bytes) => return bytes.clone(),
        Server::Batch(id) => json!([{"jsonrpc": "2.0", "id": wire.pick(id), "result": {}},
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": 1}}]),
    };
    serde_json::to_vec(&v).unwrap()
}

/// What a well-behaved server answers to the client's latest request.
fn answer(wire: &Wire, caps: &Caps, proposed: bool, legacy: usize) -> Server {
    match wire.last_method.as_str() {
        "server/discover" => Server::DiscoverResult {
            id: Id::Latest,
            versions: vec![4, legacy],
            caps: caps.clone(),
        },
        "initialize" => {
            let version = match (&wire.last_version, proposed) {
                (Some(v), true) => VERSIONS.iter().position(|x| x == v).unwrap_or(legacy),
                _ => legacy,
            };
            Server::InitializeResult {
                id: Id::Latest,
                version,
                caps: caps.clone(),
            }
        }
        _ => Server::Result {
            id: Id::Latest,
            result: json!({}),
        },
    }
}

fn params(method: Method) -> Value {
    match method {
        Method::Listen => json!({"filter": {"toolsListChanged": true}}),
        _ => json!({"uri": "a://b", "name": "n", "level": "info", "arguments": {},
            "ref": {"type": "ref/prompt", "name": "n"}, "argument": {"name": "a", "value": ""}}),
    }
}

fn run(protocol: ProtocolChoice, actions: &[Action]) {
    let mut clock: Instant = t0();
    let at = |clock: Instant| Now::new(clock, wall());
    let mut wire = Wire::default();
    let mut out = Outbox::new();
    let mut phase = Phase::Negotiating(Box::new(Negotiating::start(
        config(protocol),
        clock,
        &mut out,
    )));
    wire.check(&mut out, None, false);
    let mut server_request: Option<RequestId> = None;

    for action in actions {
        phase = match phase {
            Phase::Over => {
                // Nothing is alive to write anything: the core's types say so.
                break;
            }
            Phase::Negotiating(n) if matches!(action, Action::Close) => {
                // The host gave up, or the server's stream ended: the handshake state
                // is dropped, and with it anything that could write.
                drop(n);
                Phase::Over
            }
            Phase::Negotiating(n) => {
                let n = *n;
                let step = match action {
                    Action::Server(_) | Action::Answer { .. } => {
                        let line = match action {
                            Action::Answer {
                                caps,
                                proposed,
                                legacy,
                            } => message(&answer(&wire, caps, *proposed, *legacy), &wire),
                            Action::Server(s) => message(s, &wire),
                            _ => unreachable!(),
                        };
                        match Incoming::parse(line.clone()) {
                            Ok(msg) => n.handle(msg, clock, &mut out),
                            Err(e) => n.handle_unreadable(&line, &e, clock, &mut out),
                        }
                    }
                    Action::Wait(ms) => {
                        clock += Duration::from_millis(*ms);
                        if clock >= n.poll_timeout() {
                            n.handle_timeout(clock, &mut out)
                        } else {
                            Step::Waiting(n)
                        }
                    }
                    // The host can ask nothing of a connection that is not ready.
                    _ => Step::Waiting(n),
                };
                match step {
                    Step::Waiting(n) => {
                        wire.check(&mut out, None, false);
                        Phase::Negotiating(Box::new(n))
                    }
                    Step::Failed(_) => {
                        wire.check(&mut out, None, false);
                        Phase::Over
                    }
                    Step::Ready(established) => {
                        let negotiated = established.negotiated.clone();
                        let caps = Value::Object(negotiated.capabilities.raw().clone());
                        assert!(protocol.accepts(negotiated.version));
                        wire.check(&mut out, Some((negotiated.version, &caps)), true);
                        Phase::Ready(Box::new(Connection::new(*established).0))
                    }
                }
            }
            Phase::Ready(mut conn) => {
                let closed = conn.is_closed();
                match action {
                    Action::Server(_) | Action::Answer { .. } => {
                        let line = match action {
                            Action::Answer {
                                caps,
                                proposed,
                                legacy,
                            } => message(&answer(&wire, caps, *proposed, *legacy), &wire),
                            Action::Server(s) => message(s, &wire),
                            _ => unreachable!(),
                        };
                        let event = match Incoming::parse(line.clone()) {
                            Ok(msg) => conn.handle(msg, at(clock), &mut out),
                            Err(e) => conn.handle_unreadable(&line, &e),
                        };
                        if let Event::ServerRequest { id, .. } = event {
                            server_request = Some(id);
                        }
                    }
                    Action::Call(m) => {
                        let method = Method::ALL[*m];
                        let sent = match method {
                            Method::Listen => conn.listen(
                                &capable_core::ListenFilter {
                                    tools_list_changed: true,
                                    ..Default::default()
                                },
                                0,
                                clock,
                                &mut out,
                            ),
                            _ => conn.request(
                                method,
                                &params(method),
                                Timing::new(),
                                0,
                                clock,
                                &mut out,
                            ),
                        };
                        if sent.is_err() {
                            assert!(
                                out.is_empty(),
                                "{method} was not sent, yet something was written"
                            );
                        }
                    }
                    Action::Cancel(i) => {
                        if !wire.ids.is_empty() {
                            let id = wire.ids[i % wire.ids.len()];
                            conn.cancel(id, "the host gave up", &mut out);
                        }
                    }
                    Action::Respond => {
                        if let Some(id) = server_request.take() {
                            conn.respond(&id, &json!({}), &mut out);
                        }
                    }
                    Action::Wait(ms) => {
                        clock += Duration::from_millis(*ms);
                        if conn.poll_timeout().is_some_and(|due| clock >= due) {
                            conn.handle_timeout(clock, &mut out);
                        }
                    }
                    Action::Close => {
                        conn.close();
                    }
                }
                if closed {
                    assert!(
                        out.is_empty(),
                        "written after close: {}",
                        String::from_utf8_lossy(&out)
                    );
                }
                let negotiated = conn.negotiated().clone();
                let caps = Value::Object(negotiated.capabilities.raw().clone());
                wire.check(&mut out, Some((negotiated.version, &caps)), false);
                Phase::Ready(conn)
            }
        };
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn no_sequence_of_server_messages_breaks_the_lifecycle(
        protocol in protocol(),
        actions in proptest::collection::vec(action(), 0..40),
    ) {
        run(protocol, &actions);
    }
}
