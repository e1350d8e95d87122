//! `capable ui` over plain HTTP (no browser): who may talk to the inspector. The token
//! serves the page with an HttpOnly SameSite=Strict cookie and is traded by the page
//! for a secret of its own; the token never appears in the page; without the cookie
//! (or the token as a Bearer) nothing answers, and the API needs the page's secret
//! too (a replayed cookie alone gets nothing); a foreign `Host` (DNS rebinding) or a
//! foreign `Origin` is refused even with both; and no command can start a server that
//! was not given at start.

mod ui_support;

use std::time::Duration;

use serde_json::json;
use ui_support::{alive, bin, children, fixture_entry, Ui};

fn read_only() -> Ui {
    Ui::start(&["--", bin(), "fixture", "--profile", "read-only"])
}

#[test]
fn the_token_serves_the_page_with_an_http_only_cookie_and_never_appears_in_it() {
    let ui = read_only();
    let first = ui.request(
        "GET",
        &format!("/?token={}", ui.token),
        &[("Host", &ui.host())],
        "",
    );
    assert_eq!(first.status, 200);
    assert!(
        !first.body.contains(&ui.token),
        "the page never carries the token"
    );
    let cookie = first.header("set-cookie").unwrap();
    assert!(
        cookie.starts_with(&format!("capable_ui_{}=", ui.port)),
        "named for its port: {cookie}"
    );
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attr), "{cookie}");
    }
    assert!(
        !cookie.contains(&ui.token),
        "the cookie is not the printed token"
    );
    let page = ui.request(
        "GET",
        "/",
        &[("Host", &ui.host()), ("Cookie", &ui.cookie())],
        "",
    );
    assert_eq!(page.status, 200);
    assert!(
        page.header("set-cookie").is_none(),
        "set once, by the token"
    );
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
}

#[test]
fn the_api_needs_the_pages_secret_a_cookie_alone_is_not_enough() {
    let ui = read_only();
    let cookie = ui.cookie();
    let host = ui.host();
    // The cookie alone — what any web server on 127.0.0.1 the browser visits receives
    // (cookies ignore ports) — gets the page's files and nothing of the API.
    let a = ui.request(
        "GET",
        "/app.js",
        &[("Host", &host), ("Cookie", &cookie)],
        "",
    );
    assert_eq!(a.status, 200);
    for path in ["/api/servers", "/api/events"] {
        let a = ui.request("GET", path, &[("Host", &host), ("Cookie", &cookie)], "");
        assert_eq!(a.status, 401, "{path}: {a:?}");
        assert!(a.body.contains("secret"), "{a:?}");
    }
    let replayed = ui.request(
        "POST",
        "/api/read",
        &[
            ("Host", &host),
            ("Cookie", &cookie),
            ("X-Capable-Page", "0000"),
            ("Content-Type", "application/json"),
        ],
        r#"{"server":"capable","uri":"docs://manual/current"}"#,
    );
    assert_eq!(replayed.status, 401, "a guessed secret: {replayed:?}");
    // Nor does the cookie (with or without a page's secret) make a page: only the token.
    let made = ui.request(
        "POST",
        "/api/session",
        &[
            ("Host", &host),
            ("Cookie", &cookie),
            ("X-Capable-Page", ui.page()),
            ("Content-Type", "application/json"),
        ],
        "{}",
    );
    assert_eq!(made.status, 401, "{made:?}");
    // The secret without the cookie is not enough either.
    let alone = ui.request(
        "GET",
        "/api/servers",
        &[("Host", &host), ("X-Capable-Page", ui.page())],
        "",
    );
    assert_eq!(alone.status, 401);
    assert_eq!(ui.api_get(&cookie, "/api/servers").status, 200);
}

#[test]
fn without_the_cookie_or_the_token_nothing_answers() {
    let ui = read_only();
    let host = ui.host();
    for path in ["/", "/app.js", "/api/servers", "/api/events"] {
        let a = ui.request("GET", path, &[("Host", &host)], "");
        assert_eq!(a.status, 401, "{path}: {a:?}");
    }
    let wrong = ui.request("GET", "/?token=0000", &[("Host", &host)], "");
    assert_eq!(wrong.status, 401, "a wrong token is refused");
    let guess = format!("capable_ui_{}=guess", ui.port);
    let forged = ui.request("GET", "/", &[("Host", &host), ("Cookie", &guess)], "");
    assert_eq!(forged.status, 401);
    let command = ui.request(
        "POST",
        "/api/read",
        &[("Host", &host), ("Content-Type", "application/json")],
        r#"{"server":"capable","uri":"docs://manual/current"}"#,
    );
    assert_eq!(command.status, 401);
    // Scripts may use the token as a Bearer.
    let bearer = format!("Bearer {}", ui.token);
    let a = ui.request(
        "GET",
        "/api/servers",
        &[("Host", &host), ("Authorization", &bearer)],
        "",
    );
    assert_eq!(a.status, 200, "{a:?}");
}

#[test]
fn a_foreign_host_is_refused_even_with_the_cookie() {
    let ui = read_only();
    let cookie = ui.cookie();
    let port = ui.port;
    for host in [
        format!("evil.example:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
        "127.0.0.1".to_owned(),
    ] {
        for path in ["/", "/api/servers"] {
            let a = ui.request("GET", path, &[("Host", &host), ("Cookie", &cookie)], "");
            assert_eq!(a.status, 421, "Host {host} {path}: {a:?}");
        }
        // Not even the token is exchanged under a foreign name.
        let a = ui.request(
            "GET",
            &format!("/?token={}", ui.token),
            &[("Host", &host)],
            "",
        );
        assert_eq!(a.status, 421);
        assert!(a.header("set-cookie").is_none());
    }
    for host in [format!("localhost:{port}"), format!("[::1]:{port}")] {
        let a = ui.request(
            "GET",
            "/api/servers",
            &[
                ("Host", &host),
                ("Cookie", &cookie),
                ("X-Capable-Page", ui.page()),
            ],
            "",
        );
        assert_eq!(a.status, 200, "Host {host}");
    }
}

#[test]
fn a_foreign_origin_is_refused_even_with_the_cookie() {
    let ui = read_only();
    let cookie = ui.cookie();
    ui.settled(&cookie, Duration::from_secs(10));
    let host = ui.host();
    for origin in ["http://evil.example", "null", &format!("https://{host}")] {
        let a = ui.request(
            "POST",
            "/api/read",
            &[
                ("Host", &host),
                ("Origin", origin),
                ("Cookie", &cookie),
                ("X-Capable-Page", ui.page()),
                ("Content-Type", "application/json"),
            ],
            r#"{"server":"capable","uri":"docs://manual/current"}"#,
        );
        assert_eq!(a.status, 403, "Origin {origin}: {a:?}");
        let a = ui.request(
            "GET",
            "/api/events",
            &[
                ("Host", &host),
                ("Origin", origin),
                ("Cookie", &cookie),
                ("X-Capable-Page", ui.page()),
            ],
            "",
        );
        assert_eq!(a.status, 403);
    }
    let same = format!("http://{host}");
    let a = ui.request(
        "POST",
        "/api/read",
        &[
            ("Host", &host),
            ("Origin", &same),
            ("Cookie", &cookie),
            ("X-Capable-Page", ui.page()),
            ("Content-Type", "application/json"),
        ],
        r#"{"server":"capable","uri":"docs://manual/current"}"#,
    );
    assert_eq!(a.status, 200, "{a:?}");
    assert!(a.json()["revision"].is_string());
    // A cross-site form post cannot send JSON without a preflight.
    let form = ui.request(
        "POST",
        "/api/read",
        &[
            ("Host", &host),
            ("Cookie", &cookie),
            ("X-Capable-Page", ui.page()),
            ("Content-Type", "text/plain"),
        ],
        r#"{"server":"capable","uri":"docs://manual/current"}"#,
    );
    assert_eq!(form.status, 415);
}

#[test]
fn no_command_starts_a_server_that_was_not_given_at_start() {
    let ui = read_only();
    let cookie = ui.cookie();
    ui.settled(&cookie, Duration::from_secs(10));
    for server in ["sh", "/bin/sh", "../capable"] {
        let a = ui.post(
            &cookie,
            "/api/connect",
            &json!({"server": server, "command": "/bin/sh", "args": ["-c", "touch /tmp/pwned"]}),
        );
        assert_eq!(a.status, 404, "{a:?}");
        assert!(a.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no server named"));
    }
    let servers = ui.settled(&cookie, Duration::from_secs(5));
    let names: Vec<&str> = servers
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["capable"]);
}

#[test]
fn the_api_answers_with_the_json_the_cli_prints() {
    let ui = read_only();
    let cookie = ui.cookie();
    let servers = ui.settled(&cookie, Duration::from_secs(10));
    let s = &servers[0];
    assert_eq!(s["state"], "ready", "{s}");
    // `capable inspect --json`'s shape.
    for key in [
        "era",
        "protocolVersion",
        "serverInfo",
        "capabilities",
        "actions",
        "instructions",
    ] {
        assert!(s["inspect"].get(key).is_some(), "inspect lacks {key}: {s}");
    }
    assert_eq!(s["inspect"]["capabilities"], json!({"resources": {}}));
    let resources = s["matrix"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["capability"] == "resources")
        .unwrap();
    assert_eq!(resources["present"], true);
    assert_eq!(
        resources["subscribe"], false,
        "`resources: {{}}` declares no subscribe"
    );
    // `capable read --json`'s shape.
    let read = ui.post(
        &cookie,
        "/api/read",
        &json!({"server": "capable", "uri": "docs://manual/current"}),
    );
    assert_eq!(read.status, 200, "{read:?}");
    let read = read.json();
    for key in ["uri", "readAt", "revision", "contents"] {
        assert!(read.get(key).is_some(), "read lacks {key}: {read}");
    }
    // Refused locally, nothing sent: the CLI's error shape.
    let watch = ui.post(
        &cookie,
        "/api/watch",
        &json!({"server": "capable", "uri": "docs://manual/current"}),
    );
    assert_eq!(watch.status, 409, "{watch:?}");
    assert_eq!(watch.json()["error"]["kind"], "capability_not_offered");
}

#[test]
fn a_secret_given_at_start_never_reaches_the_page() {
    let secret = "ui-test-secret-0123456789";
    let mut tools = fixture_entry(&["--profile", "no-resources"]);
    tools["env"] = json!({"API_TOKEN": secret});
    let ui = Ui::with_config(&json!({"mcpServers": {"tools": tools}}));
    let cookie = ui.cookie();
    ui.settled(&cookie, Duration::from_secs(10));
    // The server says it back: the page gets `***` in its place.
    let message = format!("hello {secret}");
    let call = ui.post(
        &cookie,
        "/api/call",
        &json!({"server": "tools", "tool": "echo", "arguments": {"message": message}}),
    );
    assert_eq!(call.status, 200, "{call:?}");
    assert!(!call.body.contains(secret), "{}", call.body);
    assert_eq!(call.json()["result"]["content"][0]["text"], "hello ***");
    let servers = ui.api_get(&cookie, "/api/servers");
    assert!(!servers.body.contains(secret), "{}", servers.body);
}

#[test]
fn the_audit_answers_its_report_and_its_markdown() {
    let ui = Ui::start(&["--", bin(), "fixture", "--profile", "lying-subscribe"]);
    let cookie = ui.cookie();
    ui.settled(&cookie, Duration::from_secs(10));
    let audit = ui.post(&cookie, "/api/audit", &json!({"server": "capable"}));
    assert_eq!(audit.status, 200, "{audit:?}");
    let body = audit.json();
    // `capable audit --json`'s report.
    let violations = body["report"]["violations"].as_array().unwrap();
    assert!(
        violations
            .iter()
            .any(|v| v["method"] == "resources/subscribe"
                && v["response"]["error"]["code"] == -32601),
        "{body:#}"
    );
    let md = body["markdown"].as_str().unwrap();
    assert!(
        md.contains("resources/subscribe") && md.contains("-32601"),
        "{md}"
    );
    // The audit had a session of its own: the page's session never sent subscribe.
    let servers = ui.settled(&cookie, Duration::from_secs(5));
    assert_eq!(servers[0]["violations"], json!([]), "{servers:#}");
}

#[test]
fn disconnect_and_ctrl_c_leave_no_server_process_behind() {
    let ui = Ui::with_fixtures(&[
        ("a", &["--profile", "read-only"]),
        ("b", &["--profile", "subscribe"]),
    ]);
    let cookie = ui.cookie();
    ui.all_ready(&cookie, Duration::from_secs(10));
    let started = children(ui.pid());
    assert_eq!(started.len(), 2, "one process per server: {started:?}");
    let gone = |pids: &[u32]| {
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while pids.iter().any(|p| alive(*p)) && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        pids.iter().all(|p| !alive(*p))
    };
    let a = ui.post(&cookie, "/api/disconnect", &json!({"server": "a"}));
    assert_eq!(a.status, 200, "{a:?}");
    let left = children(ui.pid());
    assert_eq!(left.len(), 1, "disconnect stopped one server: {left:?}");
    assert!(gone(
        &started
            .iter()
            .copied()
            .filter(|p| !left.contains(p))
            .collect::<Vec<_>>()
    ));
    assert_eq!(ui.interrupt(), Some(0), "Ctrl-C ends the inspector with 0");
    assert!(gone(&left), "Ctrl-C stopped the other server too");
}

#[test]
fn an_app_view_is_framed_only_by_the_page_in_a_sandbox_of_its_own() {
    let ui = Ui::start(&["--", bin(), "fixture", "--profile", "app"]);
    let cookie = ui.cookie();
    ui.settled(&cookie, Duration::from_secs(10));
    let not_ui = ui.post(
        &cookie,
        "/api/app",
        &json!({"server": "capable", "uri": "docs://manual/current"}),
    );
    assert_eq!(
        not_ui.status, 400,
        "only ui:// resources are views: {not_ui:?}"
    );
    let view = ui.post(
        &cookie,
        "/api/app",
        &json!({"server": "capable", "uri": "ui://weather/view"}),
    );
    assert_eq!(view.status, 200, "{view:?}");
    let id = view.json()["id"].as_str().unwrap().to_owned();
    let path = format!("/app/{id}");
    let framed = ui.request(
        "GET",
        &path,
        &[("Host", &ui.host()), ("Cookie", &cookie)],
        "",
    );
    assert_eq!(framed.status, 200);
    let csp = framed.header("content-security-policy").unwrap();
    for part in [
        "sandbox allow-scripts",
        "frame-ancestors 'self'",
        "connect-src 'none'",
        "default-src 'none'",
    ] {
        assert!(csp.contains(part), "{part}: {csp}");
    }
    assert_eq!(framed.header("x-frame-options"), Some("SAMEORIGIN"));
    assert!(framed.body.contains("ui/initialize"));
    let without = ui.request("GET", &path, &[("Host", &ui.host())], "");
    assert_eq!(without.status, 401, "the view too needs the cookie");
    let guessed = ui.request(
        "GET",
        "/app/0000",
        &[("Host", &ui.host()), ("Cookie", &cookie)],
        "",
    );
    assert_eq!(guessed.status, 404);
}
