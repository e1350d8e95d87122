//! An HTTP server that breaks on purpose, for the fault matrices of the library and
//! the CLI: each fault is one way a server fails mid-conversation.

use std::io::Write;
use std::time::Duration;

use serde_json::{json, Value};

use super::{event, initialize_result, priming, result, Peer, Reply, Seen};

/// The document the server serves.
pub const MANUAL: &str = "docs://manual/current";

/// The peer on a runtime of its own: its tasks are not the client's.
pub struct OwnRuntimePeer {
    peer: Option<Peer>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl OwnRuntimePeer {
    /// Starts a peer at `/mcp` answering with `handler`, on a runtime of its own.
    pub fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> OwnRuntimePeer {
        // Built on a thread of its own: a runtime cannot be entered from inside another.
        let (runtime, peer) = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("a runtime for the peer");
            let peer = runtime.block_on(Peer::start("/mcp", handler));
            (runtime, peer)
        })
        .join()
        .expect("the peer started");
        OwnRuntimePeer {
            peer: Some(peer),
            runtime: Some(runtime),
        }
    }

    /// The peer's MCP endpoint.
    pub fn url(&self) -> String {
        self.peer
            .as_ref()
            .map(|p| p.url.clone())
            .unwrap_or_default()
    }
}

impl Drop for OwnRuntimePeer {
    fn drop(&mut self) {
        drop(self.peer.take());
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn id(s: &Seen) -> Value {
    s.rpc_id().cloned().unwrap_or(Value::Null)
}

fn manual(s: &Seen) -> Value {
    result(
        &id(s),
        json!({"contents": [{"uri": MANUAL, "mimeType": "text/plain", "text": "Acceptance instructions (revision 1)"}]}),
    )
}

/// A legacy (2025-06-18) server: `fault` decides the answers it breaks (the first
/// `resources/read` only, unless the fault is in the handshake):
/// `exit-in-handshake`, `exit-mid-request`, `exit-mid-stream`, `truncated-answer`,
/// `answers-notifications`, `compressed-past-limit`, `server-error`; anything else
/// serves normally.
pub fn fault_server(fault: &'static str) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    let reads = std::sync::atomic::AtomicU32::new(0);
    // Made before the server starts: compressing 64 MiB takes a while.
    let bomb = (fault == "compressed-past-limit").then(bomb);
    move |s: &Seen| {
        let json = |v: Value| Reply::Json(200, vec![], v);
        match (s.method.as_str(), s.rpc_method()) {
            ("POST", Some("server/discover")) => Reply::Status(400, vec![]),
            ("POST", Some("initialize")) if fault == "exit-in-handshake" => Reply::Close,
            ("POST", Some("initialize")) => json(initialize_result(
                &id(s),
                "2025-06-18",
                json!({"resources": {}}),
            )),
            ("POST", Some(m)) if m.starts_with("notifications/") => {
                if fault == "answers-notifications" {
                    json(json!({"jsonrpc": "2.0", "id": null, "result": {}}))
                } else {
                    Reply::Status(202, vec![])
                }
            }
            ("POST", Some("resources/read")) => {
                let n = reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                // Only the first read breaks; the server answers the next one whole.
                if n > 0 {
                    return json(manual(s));
                }
                match fault {
                    "exit-mid-request" => Reply::Close,
                    "exit-mid-stream" => {
                        let whole = event(Some("e1"), &manual(s));
                        let half = whole[..whole.len() / 2].to_owned();
                        Reply::Sse(vec![], vec![priming("p1", 10), half], Duration::ZERO)
                    }
                    "truncated-answer" => {
                        let body = serde_json::to_vec(&manual(s)).unwrap();
                        Reply::Raw(
                            200,
                            vec![("content-type".into(), "application/json".into())],
                            body[..body.len() / 2].to_vec(),
                        )
                    }
                    "compressed-past-limit" => Reply::Raw(
                        200,
                        vec![
                            ("content-type".into(), "application/json".into()),
                            ("content-encoding".into(), "gzip".into()),
                        ],
                        bomb.clone().unwrap_or_default(),
                    ),
                    "server-error" => Reply::Raw(
                        500,
                        vec![("content-type".into(), "text/html".into())],
                        b"<html><body>Internal Server Error</body></html>".to_vec(),
                    ),
                    _ => json(manual(s)),
                }
            }
            // No resumption: the stream that broke cannot be picked up again.
            ("GET", _) => Reply::Status(405, vec![]),
            ("DELETE", _) => Reply::Status(200, vec![]),
            _ => Reply::Status(404, vec![]),
        }
    }
}

/// A gzip body of a few hundred KiB that inflates to a 64 MiB answer (its id does not
/// matter: the size limit stops it long before).
fn bomb() -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let head =
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"contents":[{{"uri":"{MANUAL}","text":""#);
    gz.write_all(head.as_bytes()).unwrap();
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..64 {
        gz.write_all(&chunk).unwrap();
    }
    gz.write_all(br#""}]}}"#).unwrap();
    gz.finish().unwrap()
}
