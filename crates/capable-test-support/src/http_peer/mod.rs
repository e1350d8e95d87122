//! A scripted HTTP/1.1 MCP peer for transport tests: each test decides, request by
//! request, what the server answers (JSON, an SSE stream that ends or stays open, an
//! empty status), and every request is recorded with its headers for assertions.
//! Binds 127.0.0.1 only.

pub mod faults;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One request as the peer received it.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The HTTP method (`POST`, `GET`, `DELETE`).
    pub method: String,
    /// The request target: path and query.
    pub path: String,
    /// Header names lower-cased.
    pub headers: HashMap<String, String>,
    /// The body read as JSON, if it is JSON.
    pub body: Option<Value>,
    /// The body as sent (a form, for a token request).
    pub raw: Vec<u8>,
    /// When the peer read it.
    pub at: Instant,
}

impl Seen {
    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// The JSON-RPC method of a POST body.
    pub fn rpc_method(&self) -> Option<&str> {
        self.body.as_ref()?.get("method")?.as_str()
    }

    /// The JSON-RPC id of a POST body.
    pub fn rpc_id(&self) -> Option<&Value> {
        self.body.as_ref()?.get("id")
    }

    /// The body's `application/x-www-form-urlencoded` fields.
    pub fn form(&self) -> HashMap<String, String> {
        url::form_urlencoded::parse(&self.raw)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    /// The query's fields.
    pub fn query(&self) -> HashMap<String, String> {
        let q = self.path.split_once('?').map(|(_, q)| q).unwrap_or("");
        url::form_urlencoded::parse(q.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }
}

/// What the peer answers.
pub enum Reply {
    /// A JSON body with a status and extra headers.
    Json(u16, Vec<(String, String)>, Value),
    /// A status with no body.
    Status(u16, Vec<(String, String)>),
    /// An SSE stream: these raw events (already formatted, `\n\n`-terminated), then
    /// close, or hold the connection open for `hold` before closing.
    Sse(Vec<(String, String)>, Vec<String>, Duration),
    /// An SSE stream fed by the test: each string received is written as is; the
    /// stream closes when the sender is dropped.
    Stream(tokio::sync::mpsc::UnboundedReceiver<String>),
    /// The connection is closed without an answer (a server that died mid-request).
    Close,
    /// A status, extra headers and a body sent exactly as given (with its length).
    Raw(u16, Vec<(String, String)>, Vec<u8>),
}

/// How a test answers each request.
pub type Handler = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// The running peer; it stops when dropped.
pub struct Peer {
    /// Its MCP endpoint: `http://127.0.0.1:PORT` and the path it was started with.
    pub url: String,
    /// The port it listens on.
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Peer {
    /// Listens on a free port of 127.0.0.1 and answers every request with `handler`.
    pub async fn start(
        path: &str,
        handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Peer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let seen2 = seen.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (h, s) = (handler.clone(), seen2.clone());
                tokio::spawn(async move {
                    let _ = serve(stream, h, s).await;
                });
            }
        });
        Peer {
            url: format!("http://127.0.0.1:{port}{path}"),
            port,
            seen,
            task,
        }
    }

    /// Every request received so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The POSTs whose JSON-RPC method is `method`.
    pub fn posts(&self, method: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == "POST" && s.rpc_method() == Some(method))
            .collect()
    }

    /// The requests whose HTTP method is `http_method`.
    pub fn requests(&self, http_method: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == http_method)
            .collect()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    stream: TcpStream,
    handler: Handler,
    seen: Arc<Mutex<Vec<Seen>>>,
) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).await? == 0 {
            return Ok(());
        }
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or("").to_owned();
        let path = parts.next().unwrap_or("").to_owned();
        let mut headers = HashMap::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).await?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
            }
        }
        let len: usize = headers
            .get("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        reader.read_exact(&mut body).await?;
        let request = Seen {
            method,
            path,
            headers,
            body: serde_json::from_slice(&body).ok(),
            raw: body,
            at: Instant::now(),
        };
        seen.lock().unwrap().push(request.clone());
        match handler(&request) {
            Reply::Json(status, extra, value) => {
                let body = serde_json::to_vec(&value).unwrap();
                let mut head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
                    body.len()
                );
                for (k, v) in extra {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                write.write_all(head.as_bytes()).await?;
                write.write_all(&body).await?;
            }
            Reply::Status(status, extra) => {
                let mut head = format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\n");
                for (k, v) in extra {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                write.write_all(head.as_bytes()).await?;
            }
            Reply::Sse(extra, events, hold) => {
                let mut head =
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n"
                        .to_owned();
                for (k, v) in extra {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                write.write_all(head.as_bytes()).await?;
                for e in events {
                    write.write_all(e.as_bytes()).await?;
                    write.flush().await?;
                }
                tokio::time::sleep(hold).await;
                return Ok(());
            }
            Reply::Close => return Ok(()),
            Reply::Raw(status, extra, body) => {
                let mut head = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\n", body.len());
                for (k, v) in extra {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                write.write_all(head.as_bytes()).await?;
                write.write_all(&body).await?;
            }
            Reply::Stream(mut events) => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                write.write_all(head.as_bytes()).await?;
                write.flush().await?;
                while let Some(e) = events.recv().await {
                    write.write_all(e.as_bytes()).await?;
                    write.flush().await?;
                }
                return Ok(());
            }
        }
    }
}

/// An SSE event carrying a JSON-RPC message.
pub fn event(id: Option<&str>, message: &Value) -> String {
    let mut e = String::new();
    if let Some(id) = id {
        e.push_str(&format!("id: {id}\n"));
    }
    e.push_str(&format!("event: message\ndata: {message}\n\n"));
    e
}

/// A priming event: an id and a retry delay, no data.
pub fn priming(id: &str, retry_ms: u64) -> String {
    format!("id: {id}\nretry: {retry_ms}\ndata: \n\n")
}

/// A legacy `initialize` result.
/// A legacy `initialize` answer to request `id`: `version`, `capabilities`.
pub fn initialize_result(id: &Value, version: &str, capabilities: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": {"name": "http-peer", "version": "1.0.0"}
    }})
}

/// A JSON-RPC result answering request `id`.
pub fn result(id: &Value, result: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result})
}
