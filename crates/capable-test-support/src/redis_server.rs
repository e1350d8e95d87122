//! Debian's `redis-server`, started by a test on a free loopback port with nothing
//! saved to disk (`--save ""`, `--appendonly no`), stopped by its PID when dropped.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` of the test's own.
pub struct RedisServer {
    child: Option<Child>,
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: std::path::PathBuf,
}

/// The `redis-server` binary, if installed. Without it a test says it skipped — unless
/// `CAPABLE_REQUIRE_REDIS` is set, when it fails.
pub fn redis_binary() -> Option<&'static str> {
    let found = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    if found.is_none() {
        assert!(
            std::env::var_os("CAPABLE_REQUIRE_REDIS").is_none(),
            "CAPABLE_REQUIRE_REDIS is set but redis-server is not installed"
        );
        eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
    }
    found
}

impl RedisServer {
    /// Started and answering `PING`, or `None` when `redis-server` is not installed.
    pub fn start() -> Option<RedisServer> {
        redis_binary()?;
        let port = crate::free_port();
        let dir = std::env::temp_dir().join(format!("capable-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let mut server = RedisServer {
            child: None,
            port,
            dir,
        };
        server.restart();
        Some(server)
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Stops it (by its PID); [`restart`](Self::restart) brings it back on the same
    /// port, empty.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on its port (stopped first if it runs), answering `PING`.
    pub fn restart(&mut self) {
        self.stop();
        let binary = redis_binary().expect("redis-server");
        let child = Command::new(binary)
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.command("PING").as_deref() != Some("+PONG") {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// One inline command's first reply line (`None`: not reachable).
    pub fn command(&self, command: &str) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        stream.write_all(format!("{command}\r\n").as_bytes()).ok()?;
        let mut reply = [0u8; 512];
        let n = stream.read(&mut reply).ok()?;
        let text = String::from_utf8_lossy(&reply[..n]);
        Some(text.lines().next().unwrap_or("").to_owned())
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
