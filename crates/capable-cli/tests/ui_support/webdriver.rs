//! A small WebDriver client: Debian's `chromedriver` driving its `chromium`, headless,
//! both on 127.0.0.1, both stopped by the PID this test started (the session is
//! deleted first, which quits the browser; then the driver is killed).
//!
//! Only what the tests use: navigate, find by CSS, click, type, read text, run a
//! script, wait for a condition with a deadline, take a screenshot.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{http, tempdir, Answer};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long an action waits for its element.
const WAIT: Duration = Duration::from_secs(15);

/// A running chromedriver.
pub struct Driver {
    child: Child,
    port: u16,
    chromium: PathBuf,
}

fn find(env: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in names {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Whether the driver on `port` answers `/status` with `ready: true`. While it starts
/// it may refuse the connection, or accept and reset it: either is "not yet", never a
/// failure (the test's own HTTP helper treats a reset as one). The driver keeps the
/// connection open after its answer, so the body is read to its `Content-Length`.
fn ready(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&answer);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head.lines().find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())
                    .flatten()
            });
            if length.is_some_and(|n| body.len() >= n) {
                return serde_json::from_str::<Value>(body)
                    .is_ok_and(|v| v["value"]["ready"] == true);
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
        }
    }
}

impl Driver {
    /// Starts chromedriver, or `None` when chromium or its driver is not installed.
    pub fn start() -> Option<Driver> {
        let driver = find("CHROMEDRIVER", &["chromedriver"])?;
        let chromium = find("CHROMIUM", &["chromium", "chromium-browser"])?;
        let port = capable_test_support::free_port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let d = Driver {
            child,
            port,
            chromium,
        };
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            if ready(port) {
                return Some(d);
            }
            assert!(Instant::now() < until, "chromedriver did not get ready");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let text = body.map(Value::to_string).unwrap_or_default();
        let host = format!("127.0.0.1:{}", self.port);
        let mut headers = vec![("Host", host.as_str())];
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        let Answer { status, body, .. } =
            http(("127.0.0.1", self.port), method, path, &headers, &text);
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    /// A headless browser session with a fresh profile.
    pub fn browser(&self, width: u32, height: u32) -> Browser<'_> {
        self.browser_with(width, height, &[])
    }

    /// A session with extra Chromium flags (`--force-dark-mode`).
    pub fn browser_with(&self, width: u32, height: u32, extra: &[&str]) -> Browser<'_> {
        let profile = tempdir::Dir::new("chromium-profile");
        let mut args = vec![
            "--headless=new".to_owned(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--no-first-run".into(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": self.chromium, "args": args}
        }}});
        let (status, v) = self.call("POST", "/session", Some(&caps));
        assert_eq!(status, 200, "no browser session: {v}");
        let id = v["value"]["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        Browser {
            driver: self,
            id,
            _profile: profile,
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One browser session.
pub struct Browser<'d> {
    driver: &'d Driver,
    id: String,
    _profile: tempdir::Dir,
}

/// An element of the page.
#[derive(Clone, Debug)]
pub struct Element(String);

impl Browser<'_> {
    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.id);
        let (status, v) = self.driver.call(method, &path, body.as_ref());
        assert_eq!(status, 200, "{method} {path}: {v}");
        v["value"].clone()
    }

    pub fn goto(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({"url": url})));
    }

    pub fn current_url(&self) -> String {
        self.cmd("GET", "/url", None)
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Every element matching `css`, in document order.
    pub fn all(&self, css: &str) -> Vec<Element> {
        let v = self.cmd(
            "POST",
            "/elements",
            Some(json!({"using": "css selector", "value": css})),
        );
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e[ELEMENT].as_str().map(|s| Element(s.to_owned())))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits until an element matches `css` and returns the first.
    #[track_caller]
    pub fn wait_for(&self, css: &str, deadline: Duration) -> Element {
        let until = Instant::now() + deadline;
        loop {
            if let Some(e) = self.all(css).into_iter().next() {
                return e;
            }
            assert!(
                Instant::now() < until,
                "no element {css:?} within {deadline:?}\npage: {}",
                self.text_of_page()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the script (a function body returning a value) returns something
    /// truthy, and returns it.
    #[track_caller]
    pub fn wait_until(&self, what: &str, script: &str, deadline: Duration) -> Value {
        let until = Instant::now() + deadline;
        loop {
            let v = self.execute(script, json!([]));
            let truthy =
                !matches!(&v, Value::Null | Value::Bool(false)) && v != json!("") && v != json!(0);
            if truthy {
                return v;
            }
            assert!(
                Instant::now() < until,
                "{what}: not within {deadline:?}\npage: {}",
                self.text_of_page()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn execute(&self, script: &str, args: Value) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
    }

    /// Does `act` on the first element matching `css`, waiting for one; an element the
    /// page replaced meanwhile (a live update re-renders) is found again.
    #[track_caller]
    fn on(&self, css: &str, deadline: Duration, act: &[(&str, &str, Option<Value>)]) -> Value {
        let until = Instant::now() + deadline;
        'again: loop {
            let e = self.wait_for(css, until.saturating_duration_since(Instant::now()));
            let mut last = Value::Null;
            for (method, verb, body) in act {
                let path = format!("/session/{}/element/{}/{verb}", self.id, e.0);
                let (status, v) = self.driver.call(method, &path, body.as_ref());
                if status == 404
                    && v["value"]["error"] == "stale element reference"
                    && Instant::now() < until
                {
                    continue 'again;
                }
                assert_eq!(status, 200, "{method} {path} on {css:?}: {v}");
                last = v["value"].clone();
            }
            return last;
        }
    }

    /// Clicks the first element matching `css`.
    #[track_caller]
    pub fn click(&self, css: &str) {
        self.on(css, WAIT, &[("POST", "click", Some(json!({})))]);
    }

    /// Replaces the text of the field matching `css`.
    #[track_caller]
    pub fn type_into(&self, css: &str, text: &str) {
        self.on(
            css,
            WAIT,
            &[
                ("POST", "clear", Some(json!({}))),
                ("POST", "value", Some(json!({"text": text}))),
            ],
        );
    }

    /// Sends keys (WebDriver key codes such as `\u{E014}`, the right arrow) to the
    /// element matching `css`, without clearing it.
    #[track_caller]
    pub fn type_into_keys(&self, css: &str, keys: &str) {
        self.on(css, WAIT, &[("POST", "value", Some(json!({"text": keys})))]);
    }

    /// The visible text of the first element matching `css`, waiting for one.
    #[track_caller]
    pub fn text(&self, css: &str, deadline: Duration) -> String {
        self.on(css, deadline, &[("GET", "text", None)])
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn text_of_page(&self) -> String {
        let (_, v) = self.driver.call(
            "POST",
            &format!("/session/{}/execute/sync", self.id),
            Some(&json!({"script": "return document.body ? document.body.innerText.slice(0, 3000) : ''", "args": []})),
        );
        v["value"].as_str().unwrap_or_default().to_owned()
    }

    /// Commands go to the iframe matching `css` (waited for) until [`Self::leave_frame`].
    #[track_caller]
    pub fn enter_frame(&self, css: &str) {
        let e = self.wait_for(css, WAIT);
        self.cmd("POST", "/frame", Some(json!({"id": {ELEMENT: e.0}})));
    }

    /// Commands go to the page again.
    pub fn leave_frame(&self) {
        self.cmd("POST", "/frame/parent", Some(json!({})));
    }

    /// How many windows (tabs) the browser has open.
    pub fn window_count(&self) -> usize {
        self.cmd("GET", "/window/handles", None)
            .as_array()
            .map_or(0, Vec::len)
    }

    /// Waits until the browser has `n` windows open.
    #[track_caller]
    pub fn wait_for_windows(&self, n: usize) {
        let until = Instant::now() + WAIT;
        while self.window_count() != n {
            assert!(Instant::now() < until, "not {n} windows within {WAIT:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Scrolls the element matching `css` to the top of the window (for a screenshot
    /// that shows it).
    #[track_caller]
    pub fn scroll_to(&self, css: &str) {
        self.wait_for(css, WAIT);
        self.execute(
            "document.querySelector(arguments[0]).scrollIntoView({block: 'start'}); return true",
            json!([css]),
        );
    }

    /// Resizes the window (its outer size).
    pub fn resize(&self, width: u32, height: u32) {
        self.cmd(
            "POST",
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        );
    }

    /// Makes the page see `prefers-color-scheme: dark` (or light) from now on, as a
    /// change of the system's setting (Chromium's DevTools protocol, through the
    /// driver).
    pub fn prefer_dark(&self, dark: bool) {
        let value = if dark { "dark" } else { "light" };
        self.cmd(
            "POST",
            "/goog/cdp/execute",
            Some(json!({"cmd": "Emulation.setEmulatedMedia", "params": {
                "features": [{"name": "prefers-color-scheme", "value": value}]
            }})),
        );
    }

    /// The mean brightness (0 black … 255 white) of what the element matching `css`
    /// shows on the screen — its pixels, frames included: the driver's screenshot of
    /// it, decoded by the page itself (a `data:` image on a canvas).
    #[track_caller]
    pub fn brightness(&self, css: &str) -> f64 {
        let e = self.wait_for(css, WAIT);
        let png = self.cmd("GET", &format!("/element/{}/screenshot", e.0), None);
        let mean = self.execute(
            "return new Promise((done) => { const img = new Image(); img.onload = () => { \
               const c = document.createElement('canvas'); c.width = img.width; c.height = img.height; \
               const g = c.getContext('2d'); g.drawImage(img, 0, 0); \
               const d = g.getImageData(0, 0, c.width, c.height).data; let sum = 0; \
               for (let i = 0; i < d.length; i += 4) sum += (d[i] + d[i + 1] + d[i + 2]) / 3; \
               done(sum / (d.length / 4)); }; img.onerror = () => done(-1); \
               img.src = 'data:image/png;base64,' + arguments[0]; })",
            json!([png]),
        );
        mean.as_f64().expect("a brightness")
    }

    /// A PNG of the viewport, written to `path`.
    pub fn screenshot(&self, path: &Path) {
        use base64::Engine;
        let v = self.cmd("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .expect("a base64 PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser<'_> {
    fn drop(&mut self) {
        // Quits the browser (and its processes) before the driver is killed.
        let _ = self
            .driver
            .call("DELETE", &format!("/session/{}", self.id), None);
    }
}
