//! What people use the MCP Inspector for every day, in this page: the history of
//! calls with their timing and replay, a per-request timeout, a server as an
//! `mcpServers` entry or a `capable` command; and against real peers — a sampling
//! request answered by the person, roots edited, completions as one types, the log
//! level, an OAuth login started from the page (oidc-provider, its redirect received
//! by the inspector, the token in the store `capable auth` reads).

use serde_json::{json, Value};

use crate::common::oauth::{free_port, node, run, Peer};
use crate::ui_support::page::{open, shots, WAIT};
use crate::ui_support::webdriver::Browser;
use crate::ui_support::Ui;

/// oidc-provider guarding a TypeScript SDK server, its login approved at once (the
/// scripted consent of `tests/peers/oidc_guarded.mjs`).
pub fn guarded() -> Peer {
    let (as_port, mcp_port) = (free_port(), free_port());
    Peer::start(
        vec![
            node(),
            "tests/peers/oidc_guarded.mjs".into(),
            as_port.to_string(),
            mcp_port.to_string(),
            "3600".into(),
        ],
        vec![as_port, mcp_port],
        format!("http://127.0.0.1:{mcp_port}/mcp"),
        format!("http://127.0.0.1:{as_port}"),
    )
}

/// Types `text` into the field matching `css` and leaves it (its `change` fires).
fn set(b: &Browser<'_>, css: &str, text: &str) {
    b.type_into(css, text);
    b.type_into_keys(css, "\u{E004}");
}

/// Every call the page made to a server, with its timing; one sent again as it was.
pub fn history_and_replay(b: &Browser<'_>) {
    open(b, "tools", "history");
    let echo = "[data-testid=history-entry][data-method='tools/call'][data-ok=true]";
    b.wait_for(echo, WAIT);
    let ms = b.text(&format!("{echo} [data-testid=history-ms]"), WAIT);
    assert!(ms.ends_with(" ms"), "{ms}");
    let before = b.all("[data-testid=history-entry]").len();
    // Numbered 1, 2, 3 for this server, though other servers' calls came between.
    let numbers = b.execute(
        "return [...document.querySelectorAll('[data-testid=history-n]')].map(e => e.textContent)",
        json!([]),
    );
    let expected: Vec<String> = (1..=before).map(|n| format!("#{n}")).collect();
    assert_eq!(numbers, json!(expected));
    let of = b
        .all(echo)
        .first()
        .map(|_| {
            b.execute(
                &format!("return document.querySelector(\"{echo}\").dataset.n"),
                json!([]),
            )
        })
        .unwrap();
    b.click(&format!("{echo} [data-testid=replay]"));
    // The result comes with the replay's own entry, the newest.
    let replay = format!(
        "[data-testid=history-entry][data-replay-of='{}']",
        of.as_str().unwrap()
    );
    let replayed = b.text(&format!("{replay} [data-testid=replayed]"), WAIT);
    assert!(replayed.contains("\"type\": \"text\""), "{replayed}");
    let n = b.execute(
        &format!("return document.querySelector(\"{replay}\").dataset.n"),
        json!([]),
    );
    assert_eq!(n, json!((before + 1).to_string()));
    b.screenshot(&shots().join("history.png"));

    // A cancelled call is cancelled, not the "200" capable's own API answered; a call
    // capable refused (its arguments do not match the schema) is not offered again.
    open(b, "slow", "history");
    let cancelled = "[data-testid=history-entry][data-outcome=cancelled]";
    let said = b.text(&format!("{cancelled} [data-testid=history-outcome]"), WAIT);
    assert_eq!(said, "cancelled");
    assert!(b.all(&format!("{cancelled} [data-testid=replay]")).len() == 1);
    open(b, "tools", "tools");
    b.click("[data-testid=tool][data-name=echo]");
    b.click("[data-testid=tool-form] [data-testid=toggle-json]");
    b.type_into(
        "[data-testid=tool-form] [data-testid=json-args]",
        r#"{"message": 5}"#,
    );
    b.click("[data-testid=tool-form] [data-testid=call]");
    b.wait_for("[data-testid=tool-form] [data-testid=form-errors]", WAIT);
    open(b, "tools", "history");
    let refused = "[data-testid=history-entry][data-outcome=refused]";
    let said = b.text(&format!("{refused} [data-testid=history-outcome]"), WAIT);
    assert!(said.starts_with("refused, not sent:"), "{said}");
    assert!(b.all(&format!("{refused} [data-testid=replay]")).is_empty());
}

/// A request past the page's timeout is cancelled: the page says so, and the server
/// is told (`notifications/cancelled`).
pub fn a_request_past_its_timeout_is_cancelled(b: &Browser<'_>) {
    set(b, "#timeout", "0.5");
    open(b, "hang", "resources");
    b.click("[data-testid=resource][data-uri='docs://manual/current'] [data-testid=read]");
    let said = b.text("[data-testid=resource-output] [data-testid=error]", WAIT);
    assert!(
        said.starts_with("timeout:") && said.contains("500 ms"),
        "{said}"
    );
    b.click("[data-testid=tab-log]");
    b.wait_for(
        "[data-testid=log-row][data-dir=sent][data-method='notifications/cancelled']",
        WAIT,
    );
    set(b, "#timeout", "");
}

/// A server as its `mcpServers` entry and as a `capable` command.
pub fn export_as_an_entry_and_a_command(b: &Browser<'_>) {
    open(b, "docs", "overview");
    b.click("[data-testid=export-open]");
    let entry: Value = serde_json::from_str(&b.text("[data-testid=export-entry]", WAIT)).unwrap();
    assert_eq!(
        entry,
        json!({"mcpServers": {"docs": {"command": "capable", "args": ["fixture", "--profile", "read-only"]}}})
    );
    let command = b.text("[data-testid=export-command]", WAIT);
    assert_eq!(
        command,
        "capable inspect -- capable fixture --profile read-only"
    );
    b.screenshot(&shots().join("export.png"));
}

/// Where a server declares no logging, the page offers no level (and sends none).
pub fn no_completion_or_log_level_where_none_is_declared(b: &Browser<'_>) {
    open(b, "docs", "log");
    b.wait_for("[data-testid=no-logging]", WAIT);
    assert!(b.all("[data-testid=log-level]").is_empty());
    assert!(b
        .all("[data-testid=log-row][data-method='logging/setLevel']")
        .is_empty());
}

/// server-everything asks for a model's answer: the person reads the request,
/// writes the answer and approves it; the tool's result carries it.
pub fn sampling_answered_in_the_page(b: &Browser<'_>) {
    open(b, "everything", "tools");
    b.click("[data-testid=tool][data-name=trigger-sampling-request]");
    b.type_into(
        "[data-testid=tool-form] input[name=prompt]",
        "the weather in Oslo",
    );
    b.click("[data-testid=tool-form] [data-testid=call]");
    let asked = b.text(
        "[data-testid=sampling] [data-testid=sampling-messages]",
        WAIT,
    );
    assert!(asked.contains("the weather in Oslo"), "{asked}");
    b.type_into(
        "[data-testid=sampling] [data-testid=sampling-text]",
        "Sunny, from the page",
    );
    b.screenshot(&shots().join("sampling.png"));
    b.click("[data-testid=sampling] [data-testid=sampling-approve]");
    let result = b.text("[data-testid=call-result] [data-testid=content-text]", WAIT);
    assert!(
        result.contains("Sunny, from the page") && result.contains("capable-ui (a person)"),
        "{result}"
    );
    b.wait_until(
        "the request's card is gone",
        "return document.querySelectorAll('[data-testid=sampling]').length === 0",
        WAIT,
    );
}

/// Roots edited in the page reach server-everything (its get-roots-list says so).
pub fn roots_edited_in_the_page(b: &Browser<'_>) {
    open(b, "everything", "roots");
    b.click("[data-testid=add-root]");
    b.type_into("[data-testid=root-uri]", "file:///tmp/capable-ui-scratch");
    b.type_into("[data-testid=root-name]", "scratch");
    b.click("[data-testid=save-roots]");
    b.wait_for("[data-testid=roots-saved]", WAIT);
    b.screenshot(&shots().join("roots.png"));
    b.click("[data-testid=tab-log]");
    b.wait_for(
        "[data-testid=log-row][data-dir=sent][data-method='notifications/roots/list_changed']",
        WAIT,
    );
    b.click("[data-testid=tab-tools]");
    b.click("[data-testid=tool][data-name=get-roots-list]");
    b.click("[data-testid=tool-form] [data-testid=call]");
    let listed = b.text("[data-testid=call-result] [data-testid=content-text]", WAIT);
    assert!(
        listed.contains("scratch") && listed.contains("file:///tmp/capable-ui-scratch"),
        "{listed}"
    );
}

/// A prompt's arguments completed as they are typed, the second narrowed by the first.
pub fn completions_as_you_type(b: &Browser<'_>) {
    open(b, "everything", "prompts");
    b.click("[data-testid=prompt][data-name=completable-prompt]");
    let department = "[data-testid=prompt-form] input[name=department]";
    b.type_into(department, "Eng");
    b.wait_for(
        "datalist[data-argument=department] option[value=Engineering]",
        WAIT,
    );
    b.type_into(department, "Engineering");
    b.click("[data-testid=prompt-form] input[name=name]");
    let names = b.wait_until(
        "the names of Engineering",
        "const o = [...document.querySelectorAll('datalist[data-argument=name] option')].map(o => o.value); return o.length && o.join(',')",
        WAIT,
    );
    assert_eq!(names, "Alice,Bob,Charlie");
    b.type_into("[data-testid=prompt-form] input[name=name]", "Alice");
    b.screenshot(&shots().join("completions.png"));
    b.click("[data-testid=prompt-form] [data-testid=get-prompt]");
    let prompt = b.text("[data-testid=prompt-result]", WAIT);
    assert!(
        prompt.contains("Please promote Alice to the head of the Engineering team."),
        "{prompt}"
    );
}

/// The server's log level set from the page; its log messages shown by level.
pub fn the_log_level(b: &Browser<'_>) {
    open(b, "everything", "log");
    b.click("[data-testid=log-level] option[value=debug]");
    let said = b.text("[data-testid=log-level-set]", WAIT);
    assert_eq!(said, "asked for debug and above");
    b.wait_for(
        "[data-testid=log-row][data-dir=sent][data-method='logging/setLevel']",
        WAIT,
    );
    let line = b.text("[data-testid=server-log]", WAIT);
    assert!(line.contains("Roots updated"), "{line}");
    b.type_into("[data-testid=log-method]", "notifications/message");
    b.screenshot(&shots().join("messages.png"));
    b.type_into("[data-testid=log-method]", "");
}

/// A server refused for want of authorization, logged in to from the page: the
/// authorization server's page opens, sends the browser back to the inspector, the
/// token is stored where `capable auth` finds it, and the server connects.
pub fn an_oauth_login_from_the_page(b: &Browser<'_>, ui: &Ui) {
    b.click("[data-testid=server][data-name=guarded]");
    let why = b.text("[data-testid=reason]", WAIT);
    assert!(why.contains("authorization"), "{why}");
    b.click("[data-testid=login]");
    let windows = b.window_count();
    b.click("[data-testid=login-link]");
    b.wait_for_windows(windows + 1);
    b.wait_until(
        "guarded connected with its token",
        "const s = document.querySelector('[data-testid=server][data-name=guarded] [data-testid=server-state]'); return s && s.textContent === 'ready'",
        WAIT,
    );
    open(b, "guarded", "overview");
    b.screenshot(&shots().join("login.png"));
    b.click("[data-testid=tab-tools]");
    b.wait_for("[data-testid=tool][data-name=echo]", WAIT);
    let url = b
        .execute(
            "return document.querySelector('[data-testid=server-head] .mono').textContent",
            json!([]),
        )
        .as_str()
        .unwrap()
        .trim_start_matches("http: ")
        .to_owned();
    let status = run(
        &[
            "--token-store",
            &ui.token_store(),
            "auth",
            "status",
            "--json",
            "--url",
            &url,
        ],
        &[],
    );
    let tokens: Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(
        tokens["tokens"].as_array().map(Vec::len),
        Some(1),
        "`capable auth status` finds the token: {}",
        status.stdout
    );
}
