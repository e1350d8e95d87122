//! Running `capable ui` in a test: the real binary on a random port, its URL read from
//! stdout, stopped by its PID; and a plain HTTP/1.1 client over a socket, so a test
//! can send exactly the `Host`, `Origin` and `Cookie` it means to.
#![allow(dead_code)]

pub mod page;
pub mod webdriver;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `capable` binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_capable")
}

/// A config entry that starts `capable fixture ARGS`, by name, found on the PATH
/// [`Ui`] sets: the page (and its screenshots) shows `capable fixture …`, as a user's
/// config would say.
pub fn fixture_entry(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["fixture".to_owned()];
    all.extend(args.iter().map(|a| a.to_string()));
    serde_json::json!({"command": "capable", "args": all})
}

/// A running `capable ui`.
pub struct Ui {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    pub port: u16,
    pub token: String,
    /// A page's secret, made once on first use ([`Ui::page`]).
    page: std::sync::OnceLock<String>,
    _config: Option<tempdir::Dir>,
}

impl Ui {
    /// `capable ui --no-open` with `args` (a server after `--`, or `--config FILE`).
    pub fn start(args: &[&str]) -> Ui {
        Ui::start_in(args, None)
    }

    /// `capable ui --no-open --config FILE` over a config of `(name, fixture args)`.
    pub fn with_fixtures(servers: &[(&str, &[&str])]) -> Ui {
        let mut entries = serde_json::Map::new();
        for (name, args) in servers {
            entries.insert((*name).to_owned(), fixture_entry(args));
        }
        Ui::with_config(&serde_json::json!({ "mcpServers": entries }))
    }

    /// `capable ui --no-open --config FILE` over this config.
    pub fn with_config(config: &serde_json::Value) -> Ui {
        Ui::with_config_and(config, &[])
    }

    /// `capable ui --no-open --config FILE ARGS` over this config (the token store of
    /// the run is in the config's directory).
    pub fn with_config_and(config: &serde_json::Value, args: &[&str]) -> Ui {
        let dir = tempdir::Dir::new("ui-config");
        let path = dir.path().join("mcp.json");
        std::fs::write(&path, config.to_string()).unwrap();
        let path = path.to_string_lossy().into_owned();
        let store = dir.path().join("credentials.json");
        let store = store.to_string_lossy().into_owned();
        let mut all = vec!["--config", &path, "--token-store", &store];
        all.extend_from_slice(args);
        Ui::start_in(&all, Some(dir))
    }

    fn start_in(args: &[&str], config: Option<tempdir::Dir>) -> Ui {
        let dir = std::path::Path::new(bin())
            .parent()
            .expect("the binary's directory");
        let path = std::env::join_paths(std::iter::once(dir.to_path_buf()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .expect("a PATH");
        let mut child = Command::new(bin())
            .env("PATH", path)
            .args(["ui", "--no-open", "--timeout", "10s"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start capable ui");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("read the URL");
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_owned();
        let (base, token) = url.split_once("/?token=").expect("a token in the URL");
        let port = base.rsplit(':').next().unwrap().parse().unwrap();
        Ui {
            child,
            base: base.to_owned(),
            port,
            token: token.to_owned(),
            page: std::sync::OnceLock::new(),
            _config: config,
        }
    }

    /// The token store of a run over a config ([`Ui::with_config_and`]).
    pub fn token_store(&self) -> String {
        let dir = self._config.as_ref().expect("a run over a config");
        dir.path()
            .join("credentials.json")
            .to_string_lossy()
            .into_owned()
    }

    /// The config file of a run over a config ([`Ui::with_config`]).
    pub fn config_path(&self) -> std::path::PathBuf {
        let dir = self._config.as_ref().expect("a run over a config");
        dir.path().join("mcp.json")
    }

    /// Every event of `GET /api/events` (the token's stream, from the start of the
    /// ring), as `(event, data)`, read on a thread.
    pub fn events(&self) -> std::sync::mpsc::Receiver<(String, serde_json::Value)> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        let request = format!(
            "GET /api/events HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n",
            self.host(),
            self.token
        );
        stream.write_all(request.as_bytes()).expect("send");
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).expect("status line");
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut event = String::new();
            for line in reader.lines().map_while(Result::ok) {
                if let Some(name) = line.strip_prefix("event:") {
                    event = name.trim().to_owned();
                } else if let Some(data) = line.strip_prefix("data:") {
                    if let Ok(v) = serde_json::from_str(data.trim()) {
                        if tx.send((event.clone(), v)).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        rx
    }

    /// The PID of the inspector.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the inspector as Ctrl-C does, and waits for it: its exit status.
    pub fn interrupt(mut self) -> Option<i32> {
        // SAFETY: kill(2) takes plain integers and touches no memory of ours; the PID
        // is our child's, not reaped yet (this consumes the handle that would).
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGINT);
        }
        let until = Instant::now() + Duration::from_secs(15);
        while Instant::now() < until {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The URL with the token, as printed.
    pub fn url(&self) -> String {
        format!("{}/?token={}", self.base, self.token)
    }

    /// `Host: 127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The cookie a first load with the token sets (`capable_ui_PORT=…`).
    pub fn cookie(&self) -> String {
        let answer = self.request(
            "GET",
            &format!("/?token={}", self.token),
            &[("Host", &self.host())],
            "",
        );
        assert_eq!(answer.status, 200, "{answer:?}");
        let set = answer.header("set-cookie").expect("a cookie");
        set.split(';').next().unwrap().to_owned()
    }

    /// A page's secret, as the page gets it: the token traded on `POST /api/session`
    /// (made once, then kept).
    pub fn page(&self) -> &str {
        self.page.get_or_init(|| {
            let bearer = format!("Bearer {}", self.token);
            let answer = self.request(
                "POST",
                "/api/session",
                &[
                    ("Host", &self.host()),
                    ("Authorization", &bearer),
                    ("Content-Type", "application/json"),
                ],
                "{}",
            );
            assert_eq!(answer.status, 200, "{answer:?}");
            answer.json()["page"].as_str().unwrap().to_owned()
        })
    }

    /// A GET of the API as the page makes it: the cookie and the page's secret.
    pub fn api_get(&self, cookie: &str, path: &str) -> Answer {
        self.request(
            "GET",
            path,
            &[
                ("Host", &self.host()),
                ("Cookie", cookie),
                ("X-Capable-Page", self.page()),
            ],
            "",
        )
    }

    /// One request with exactly these headers.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        http(("127.0.0.1", self.port), method, path, headers, body)
    }

    /// A JSON command as the page sends it: the cookie and the page's secret.
    pub fn post(&self, cookie: &str, path: &str, body: &serde_json::Value) -> Answer {
        self.request(
            "POST",
            path,
            &[
                ("Host", &self.host()),
                ("Cookie", cookie),
                ("X-Capable-Page", self.page()),
                ("Content-Type", "application/json"),
            ],
            &body.to_string(),
        )
    }

    /// Waits until `/api/servers` says every server has settled (not `starting`).
    pub fn settled(&self, cookie: &str, deadline: Duration) -> serde_json::Value {
        let until = Instant::now() + deadline;
        loop {
            let answer = self.api_get(cookie, "/api/servers");
            let servers: serde_json::Value = serde_json::from_str(&answer.body).unwrap_or_default();
            let done = servers
                .as_array()
                .is_some_and(|a| a.iter().all(|s| s["state"] != "starting"));
            if done || Instant::now() > until {
                return servers;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits as [`settled`](Self::settled) does, and asserts that every server came out
    /// `ready`.
    pub fn all_ready(&self, cookie: &str, deadline: Duration) -> serde_json::Value {
        let servers = self.settled(cookie, deadline);
        let ready = servers
            .as_array()
            .is_some_and(|a| a.iter().all(|s| s["state"] == "ready"));
        assert!(ready, "{servers:#}");
        servers
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        // Already ended (and reaped): its PID may belong to someone else now.
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        // By PID: SIGINT, the inspector's own clean stop (its servers with it).
        // SAFETY: kill(2) takes plain integers and touches no memory of ours; the child
        // was not reaped (checked above), so its PID is still its own.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGINT);
        }
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }
}

/// The status of one HTTP/1.1 request, the rest of the answer left unread (an event
/// stream that answers never ends).
pub fn http_status(addr: (&str, u16), method: &str, path: &str, headers: &[(&str, &str)]) -> u16 {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("Content-Length: 0\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).expect("send");
    let mut status_line = String::new();
    BufReader::new(stream)
        .read_line(&mut status_line)
        .expect("status line");
    status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"))
}

/// One HTTP/1.1 request (`Connection: close`), the answer read to its end.
pub fn http(
    addr: (&str, u16),
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(request.as_bytes()).expect("send");
    let mut raw = Vec::new();
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("status line");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("header");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((n, v)) = line.split_once(':') {
            headers.push((n.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok());
    match length {
        Some(n) => {
            raw.resize(n, 0);
            reader.read_exact(&mut raw).expect("body");
        }
        None => {
            let chunked = headers
                .iter()
                .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
            if chunked {
                loop {
                    let mut size = String::new();
                    reader.read_line(&mut size).expect("chunk size");
                    let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    let mut chunk = vec![0; n + 2];
                    reader.read_exact(&mut chunk).expect("chunk");
                    raw.extend_from_slice(&chunk[..n]);
                }
            } else {
                let _ = reader.read_to_end(&mut raw);
            }
        }
    }
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&raw).into_owned(),
    }
}

/// A temporary directory, removed when dropped.
pub mod tempdir {
    use std::path::{Path, PathBuf};

    pub struct Dir(PathBuf);

    impl Dir {
        pub fn new(what: &str) -> Dir {
            use std::sync::atomic::{AtomicU32, Ordering};
            static N: AtomicU32 = AtomicU32::new(0);
            let path = std::env::temp_dir().join(format!(
                "capable-{what}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&path).unwrap();
            Dir(path)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The PIDs whose parent is `parent` (Linux: from /proc).
pub fn children(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces, so split after its `)`.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

/// Whether process `pid` is still there (a zombie counts as gone).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .is_some_and(|zombie| !zombie)
}

/// Another web server on 127.0.0.1, on a port of its own, that answers every request
/// with a small page and hands over each request's headers: what the browser sends
/// to any local server it visits.
pub struct OtherServer {
    pub port: u16,
    heard: std::sync::mpsc::Receiver<Vec<(String, String)>>,
}

impl OtherServer {
    pub fn start() -> OtherServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, heard) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(&stream);
                let mut headers = Vec::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                        break;
                    }
                    if let Some((n, v)) = line.trim_end().split_once(':') {
                        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
                    }
                }
                let body =
                    "<!doctype html><title>another local server</title><p>another local server</p>";
                let _ = (&stream).write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                );
                if tx.send(headers).is_err() {
                    return;
                }
            }
        });
        OtherServer { port, heard }
    }

    /// The headers of the next request it got (waiting for one).
    pub fn next_request(&self) -> Vec<(String, String)> {
        self.heard
            .recv_timeout(Duration::from_secs(15))
            .expect("a request to the other server")
    }
}
