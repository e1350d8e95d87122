//! `capable bridge --listen 127.0.0.1:0` and its 2026-07-28 hosts, which have no
//! session: their errors' HTTP statuses, a closed stream cancelling a request (and a
//! POSTed cancellation taken by nobody), the headers held to the body, one server
//! behind per declaration, and what is never guessed between hosts it cannot tell
//! apart.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "listen_support/mod.rs"]
mod listen_support;

use bridge_support::Bridge;
use listen_support::{http, listening, modern_post, post};
use serde_json::{json, Value};

#[test]
fn a_2026_host_without_a_session_gets_its_statuses_and_cancels_by_closing() {
    // A legacy server behind: the bridge speaks 2026-07-28 to the host all the same.
    let (b, port) = listening(&["--trace"], "slow-progress");
    let meta = Bridge::meta(json!({}));
    let discover = modern_post(
        port,
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
    );
    assert_eq!(discover.status, 200);
    assert!(
        discover.header("mcp-session-id").is_none(),
        "no sessions in 2026-07-28"
    );
    assert_eq!(
        discover.json()["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    let bare = modern_post(
        port,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    assert_eq!(
        (bare.status, bare.json()["error"]["code"].clone()),
        (400, json!(-32602))
    );
    let unknown = modern_post(
        port,
        json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/list", "params": {"_meta": meta}}),
    );
    assert_eq!(
        (unknown.status, unknown.json()["error"]["code"].clone()),
        (404, json!(-32601))
    );
    let old = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let old = modern_post(port, old);
    assert_eq!(
        (old.status, old.json()["error"]["code"].clone()),
        (400, json!(-32022))
    );
    assert_eq!(
        http(port, "GET", &[("Accept", "text/event-stream")], "", |_| {
            false
        })
        .status,
        405
    );
    let _ = b;
}

#[test]
fn two_2026_hosts_may_use_the_same_id_at_once_and_never_cancel_each_other() {
    // Every 2026-07-28 host shares the listener's one server behind, and a request id
    // is each host's own: a second host's id 7 while the first's is in flight is no
    // clash, and each answer comes back under the id its host gave.
    let (b, port) = listening(&["--trace"], "slow-progress");
    let meta = Bridge::meta(json!({}));
    let call = |id: i64, message: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": message}, "_meta": meta}})
    };
    let first = {
        let call = call(7, "first");
        std::thread::spawn(move || modern_post(port, call))
    };
    b.until_sent_upstream("tools/call");
    let second = modern_post(port, call(7, "second"));
    assert_eq!(second.status, 200, "{:?}", second.json());
    assert_eq!(second.json()["id"], 7);
    assert_eq!(second.json()["result"]["content"][0]["text"], "second");
    let first = first.join().unwrap();
    assert_eq!(first.json()["id"], 7);
    assert_eq!(first.json()["result"]["content"][0]["text"], "first");

    // 2026-07-28 has no notifications/cancelled over HTTP (closing the stream cancels),
    // and a host without a session is no one in particular: a POSTed cancellation
    // naming id 1 is taken and dropped, and the call of whoever sent id 1 goes on.
    let third = {
        let call = call(1, "third");
        std::thread::spawn(move || modern_post(port, call))
    };
    b.sent_upstream_count_until("tools/call", 3);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "not mine to cancel", "_meta": meta}});
    assert_eq!(modern_post(port, cancel).status, 202);
    b.audit_until(|l| {
        l["notice"]
            .as_str()
            .is_some_and(|n| n.contains("notifications/cancelled"))
    });
    let third = third.join().unwrap();
    assert_eq!(third.json()["result"]["content"][0]["text"], "third");
    assert_eq!(b.sent_upstream_count("notifications/cancelled"), 0);
}

/// Two 2026-07-28 hosts that declare differently share nothing: each is served by a
/// server behind connected with its own declaration and name, so the server asks
/// only the host that can answer, and a host is never asked what it did not declare.
#[test]
fn two_2026_hosts_that_declare_differently_are_each_served_as_they_declared() {
    let (b, port) = listening(&["--trace"], "elicit");
    let meta = |caps: Value, name: &str| {
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps,
            "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"}})
    };
    let confirm = |id: i64, meta: &Value, more: Value| {
        let mut params = json!({"name": "confirm", "arguments": {}, "_meta": meta});
        for (k, v) in more.as_object().unwrap() {
            params[k] = v.clone();
        }
        modern_post(
            port,
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
        )
    };
    let eliciting = meta(json!({"elicitation": {}}), "eliciting-host");
    let sampling = meta(json!({"sampling": {}}), "sampling-host");
    // The host that declared elicitation first: its call gets a round with the question.
    let round = confirm(1, &eliciting, json!({})).json();
    let questions = round["result"]["inputRequests"]
        .as_object()
        .expect("a round");
    assert_eq!(questions.len(), 1, "{round}");
    let (key, question) = questions.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create", "{round}");
    // Then one that declared only sampling: the server behind it knows it cannot be
    // asked, and says so; it is asked nothing.
    let plain = confirm(1, &sampling, json!({})).json();
    assert!(plain["result"].get("inputRequests").is_none(), "{plain}");
    assert_eq!(plain["result"]["isError"], true, "{plain}");
    assert_eq!(
        plain["result"]["content"][0]["text"],
        "this client cannot be asked for input"
    );
    // The eliciting host's retry still completes its own call.
    let answers = json!({ key.clone(): {"action": "accept", "content": {"approve": true}} });
    let more = json!({"requestState": round["result"]["requestState"], "inputResponses": answers});
    let done = confirm(2, &eliciting, more).json();
    assert_eq!(
        done["result"]["content"][0]["text"],
        r#"confirmed: action=accept content={"approve":true}"#,
        "{done}"
    );
    // Behind: one connection per declaration, each with the host's own.
    b.sent_upstream_count_until("initialize", 2);
    let inits: Vec<Value> = b
        .sent_upstream()
        .into_iter()
        .filter(|m| m["method"] == "initialize")
        .collect();
    assert_eq!(inits.len(), 2, "{inits:?}");
    let by_name = |name: &str| {
        inits
            .iter()
            .find(|i| i["params"]["clientInfo"]["name"] == name)
            .unwrap_or_else(|| panic!("no initialize as {name}: {inits:?}"))
            .clone()
    };
    let caps = by_name("eliciting-host")["params"]["capabilities"].clone();
    assert!(
        caps.get("elicitation").is_some() && caps.get("sampling").is_none(),
        "{caps}"
    );
    let caps = by_name("sampling-host")["params"]["capabilities"].clone();
    assert!(
        caps.get("sampling").is_some() && caps.get("elicitation").is_none(),
        "{caps}"
    );
}

/// Two 2026-07-28 hosts that declare the same share a server behind, and have no
/// session to tell them apart: a legacy server's question that could be either's is
/// put to neither (the server is told it cannot ask), never to whoever waits.
#[test]
fn a_question_that_could_be_either_of_two_hosts_is_put_to_neither() {
    let (b, port) = listening(&["--trace"], "elicit");
    let meta = Bridge::meta(json!({"elicitation": {}}));
    let confirm = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "confirm", "arguments": {}, "_meta": meta}})
    };
    // One request in flight: the question is its own.
    let first = modern_post(port, confirm(1)).json();
    assert!(first["result"]["inputRequests"].is_object(), "{first}");
    // A second while the first holds its round: the server's next question could be
    // the first's as well as the second's.
    let second = modern_post(port, confirm(1)).json();
    assert!(second["result"].get("inputRequests").is_none(), "{second}");
    assert_eq!(second["result"]["isError"], true, "{second}");
    let said = second["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(said.contains("cannot tell apart"), "{second}");
    b.audit_until(|l| {
        l["notice"]
            .as_str()
            .is_some_and(|n| n.contains("cannot tell apart"))
    });
}

/// The 2026-07-28 transport's server validation: the headers a gateway routes by
/// must say what the body says, or the request is refused before anything is served.
#[test]
fn a_2026_post_whose_headers_disagree_with_its_body_is_refused_before_it_is_served() {
    let (b, port) = listening(&["--trace"], "slow-progress");
    let meta = Bridge::meta(json!({}));
    let list =
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": meta}});
    let call = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "m"}, "_meta": meta}});
    let refused = |headers: &[(&str, &str)], message: &Value| {
        let answer = post(port, headers, message.clone());
        let json = answer.json();
        assert_eq!(json["id"], message["id"], "{json}");
        (answer.status, json["error"]["code"].as_i64())
    };
    let v = ("MCP-Protocol-Version", "2026-07-28");
    let mismatch = (400, Some(-32020));
    assert_eq!(refused(&[("Mcp-Method", "tools/list")], &list), mismatch);
    assert_eq!(
        refused(
            &[
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Mcp-Method", "tools/list")
            ],
            &list
        ),
        mismatch
    );
    assert_eq!(refused(&[v], &list), mismatch, "no Mcp-Method");
    assert_eq!(
        refused(&[v, ("Mcp-Method", "prompts/list")], &list),
        mismatch
    );
    assert_eq!(refused(&[v, ("Mcp-Method", "TOOLS/LIST")], &list), mismatch);
    let m = ("Mcp-Method", "tools/call");
    assert_eq!(refused(&[v, m], &call), mismatch, "no Mcp-Name");
    assert_eq!(
        refused(&[v, m, ("Mcp-Name", "wrong_tool_name")], &call),
        mismatch
    );
    // Header names in any case; values with spaces around them.
    let ok = post(
        port,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("MCP-METHOD", "tools/call"),
            ("mcp-name", "  echo  "),
        ],
        call.clone(),
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.json()["result"]["content"][0]["text"], "m");
    // Nothing refused went behind: the one call that passed is the only one.
    assert_eq!(b.sent_upstream_count("tools/call"), 1);

    // initialize under the 2026-07-28 header (or with its envelope) is no method of
    // that revision: 404 / -32601, and no session is opened.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "h", "version": "1"}, "_meta": meta}});
    let answer = post(port, &[v, ("Mcp-Method", "initialize")], init.clone());
    assert_eq!(answer.status, 404, "{}", answer.body);
    assert_eq!(answer.json()["error"]["code"], -32601);
    assert!(answer.header("mcp-session-id").is_none());
    let enveloped = post(port, &[], init);
    assert_eq!(enveloped.status, 404, "{}", enveloped.body);
    assert!(enveloped.header("mcp-session-id").is_none());
    assert_eq!(
        b.sent_upstream_count("initialize"),
        1,
        "the server's own, once"
    );
}

#[test]
fn a_2026_tools_call_is_held_to_its_mcp_param_headers_even_before_any_listing() {
    let (b, port) = listening(&["--trace"], "conformance");
    let meta = Bridge::meta(json!({}));
    let call = |id: u64, args: Value, params: &[(&str, &str)]| {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "test_custom_headers", "arguments": args, "_meta": meta}});
        let mut headers = vec![
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "test_custom_headers"),
        ];
        headers.extend_from_slice(params);
        let answer = post(port, &headers, message);
        (answer.status, answer.json())
    };
    let mismatch = |(status, json): (u16, Value)| {
        assert_eq!(status, 400, "{json}");
        assert_eq!(json["error"]["code"], -32020, "{json}");
        json["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    // No host has listed the tools yet: the bridge learns their annotations itself.
    let why = mismatch(call(
        1,
        json!({"region": "Hello"}),
        &[("Mcp-Param-Region", "Goodbye")],
    ));
    assert!(
        why.contains("Mcp-Param-Region") && !why.contains("Hello"),
        "{why}"
    );
    // Left out while the body has it; base64 with bad padding or foreign characters.
    mismatch(call(2, json!({"region": "Hello"}), &[]));
    mismatch(call(
        3,
        json!({"region": "Hello"}),
        &[("Mcp-Param-Region", "=?base64?SGVsbG8?=")],
    ));
    mismatch(call(
        4,
        json!({"region": "Hello"}),
        &[("Mcp-Param-Region", "=?base64?SGVs!!!bG8=?=")],
    ));
    // An integer header that is not the body's integer; one sent for no argument.
    mismatch(call(
        5,
        json!({"region": "x", "priority": 3}),
        &[("Mcp-Param-Region", "x"), ("Mcp-Param-Priority", "4")],
    ));
    mismatch(call(
        6,
        json!({"region": "x"}),
        &[("Mcp-Param-Region", "x"), ("Mcp-Param-Verbose", "true")],
    ));
    assert_eq!(
        b.sent_upstream_count("tools/call"),
        0,
        "nothing refused went behind"
    );
    // Headers that agree, plain or as base64 (a name in any case), are served.
    let (status, json) = call(
        7,
        json!({"region": "Hello", "priority": 3, "verbose": false, "query": "q"}),
        &[
            ("mcp-param-region", " =?base64?SGVsbG8=?= "),
            ("Mcp-Param-Priority", "3"),
            ("MCP-PARAM-VERBOSE", "false"),
        ],
    );
    assert_eq!(status, 200, "{json}");
    assert!(json["result"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("Hello")));
    // (`--trace` may write the line after the answer left.)
    assert_eq!(b.sent_upstream_count_until("tools/call", 1), 1);
}
