//! `capable ui` over plain HTTP (no browser): a page that goes without a word (its tab
//! crashed, the browser was killed) leaves no watch polling its server — its watches
//! stop once its event stream has been gone for the grace (10 s); a script's watch
//! (the token, no page) and the watch of a page still open go on.

mod ui_support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use ui_support::{bin, Ui};

/// `GET /api/events` with `headers`, held open (its status read).
fn open_events(ui: &Ui, headers: &[(&str, String)]) -> BufReader<TcpStream> {
    let mut stream = TcpStream::connect(("127.0.0.1", ui.port)).unwrap();
    let mut request = format!("GET /api/events HTTP/1.1\r\nHost: {}\r\n", ui.host());
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    reader
}

/// `GET /api/events` with `headers`, read on a thread: its `watch` events' data.
fn events(ui: &Ui, headers: &[(&str, String)]) -> mpsc::Receiver<Value> {
    let reader = open_events(ui, headers);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut event = String::new();
        for line in reader.lines().map_while(Result::ok) {
            if let Some(name) = line.strip_prefix("event:") {
                event = name.trim().to_owned();
            } else if let Some(data) = line.strip_prefix("data:") {
                if event == "watch" {
                    if let Ok(v) = serde_json::from_str::<Value>(data.trim()) {
                        let _ = tx.send(v);
                    }
                }
            }
        }
    });
    rx
}

/// The next `end` of watch `id` seen on `rx` within `wait`.
fn ended(rx: &mpsc::Receiver<Value>, id: &Value, wait: Duration) -> bool {
    let until = Instant::now() + wait;
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(v) if v["watch"] == *id && v["line"]["event"] == "end" => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

#[test]
fn a_page_gone_without_a_word_leaves_no_watch_polling() {
    let ui = Ui::start(&["--", bin(), "fixture", "--profile", "read-only"]);
    let cookie = ui.cookie();
    ui.settled(&cookie, Duration::from_secs(10));
    let bearer = format!("Bearer {}", ui.token);
    // An observer: the token's stream, which owns no watch.
    let seen = events(&ui, &[("Authorization", bearer.clone())]);
    // The page's own stream, as the page holds it.
    let page = ui.page().to_owned();
    let page_stream = open_events(&ui, &[("Cookie", cookie.clone()), ("X-Capable-Page", page)]);
    let watch = |body: Value, as_page: bool| {
        let answer = match as_page {
            true => ui.post(&cookie, "/api/watch", &body),
            false => ui.request(
                "POST",
                "/api/watch",
                &[
                    ("Host", &ui.host()),
                    ("Authorization", &bearer),
                    ("Content-Type", "application/json"),
                ],
                &body.to_string(),
            ),
        };
        assert_eq!(answer.status, 200, "{answer:?}");
        answer.json()["watch"].clone()
    };
    let body = json!({"server": "capable", "uri": "docs://manual/current", "pollMs": 200});
    let pages = watch(body.clone(), true);
    let scripts = watch(body, false);
    // The page is there: its watch goes on (well past the grace).
    assert!(
        !ended(&seen, &pages, Duration::from_secs(12)),
        "stopped while the page was open"
    );
    // The page goes without a word: its stream simply closes.
    drop(page_stream);
    assert!(
        ended(&seen, &pages, Duration::from_secs(20)),
        "the gone page's watch kept polling"
    );
    // A script's watch is nobody's page's: it goes on until stopped.
    assert!(!ended(&seen, &scripts, Duration::from_secs(2)));
    let stopped = ui.post(&cookie, "/api/unwatch", &json!({"watch": scripts}));
    assert_eq!(stopped.json()["stopped"], true, "{stopped:?}");
}
