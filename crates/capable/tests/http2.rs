//! HTTP/2 over TLS, as a hosted server speaks it: the client offers `h2` by ALPN and
//! verifies the server's certificate against the platform's roots (here a test CA,
//! named by `SSL_CERT_FILE`, which the roots honour); a request the server refuses
//! (`REFUSED_STREAM`, which says it was not processed) is sent again; a compressed
//! answer is inflated. The roots are read once per process, so this file is a test
//! binary of its own, with one test that names them before any client exists. The
//! server binds 127.0.0.1 only.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use capable::{ClientOptions, HttpConfig};
use serde_json::{json, Value};
use tokio::net::TcpListener;

/// What the server saw.
#[derive(Default)]
struct Seen {
    pings: AtomicUsize,
    /// `Accept-Encoding` of every request.
    encodings: Mutex<Vec<String>>,
}

/// A CA, and a certificate for 127.0.0.1 it signed with its key: (CA PEM, chain, key).
fn certificates() -> (
    String,
    Vec<rustls::pki_types::CertificateDer<'static>>,
    rustls::pki_types::PrivateKeyDer<'static>,
) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der());
    (ca.pem(), vec![leaf.der().clone()], key.into())
}

/// A legacy (2025-11-25) server over HTTP/2 and TLS, one connection at a time: it
/// refuses the first `ping` and answers `resources/read` compressed with gzip.
async fn serve(listener: TcpListener, tls: tokio_rustls::TlsAcceptor, seen: Arc<Seen>) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            return;
        };
        let (tls, seen) = (tls.clone(), seen.clone());
        tokio::spawn(async move {
            let Ok(stream) = tls.accept(tcp).await else {
                return;
            };
            let Ok(mut connection) = h2::server::handshake(stream).await else {
                return;
            };
            while let Some(Ok((request, respond))) = connection.accept().await {
                tokio::spawn(answer(request, respond, seen.clone()));
            }
        });
    }
}

async fn answer(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    seen: Arc<Seen>,
) {
    let encoding = request
        .headers()
        .get("accept-encoding")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    seen.encodings.lock().unwrap().push(encoding);
    let method = request.method().clone();
    let mut body = request.into_body();
    let mut bytes = Vec::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    let message: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let rpc = message.get("method").and_then(Value::as_str).unwrap_or("");
    let (status, encoding, body) = match (method.as_str(), rpc) {
        ("POST", "server/discover") => (400, None, Vec::new()),
        ("POST", "initialize") => (
            200,
            None,
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"resources": {}},
                "serverInfo": {"name": "h2", "version": "1"},
            }}))
            .unwrap(),
        ),
        ("POST", "ping") if seen.pings.fetch_add(1, Ordering::SeqCst) == 0 => {
            respond.send_reset(h2::Reason::REFUSED_STREAM);
            return;
        }
        ("POST", "ping") => (
            200,
            None,
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": {}})).unwrap(),
        ),
        ("POST", "resources/read") => {
            use std::io::Write;
            let text = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": {
                "contents": [{"uri": "docs://h2", "mimeType": "text/plain", "text": "over h2"}],
            }}))
            .unwrap();
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&text).unwrap();
            (200, Some("gzip"), gz.finish().unwrap())
        }
        ("POST", _) => (202, None, Vec::new()),
        ("GET", _) => (405, None, Vec::new()),
        _ => (200, None, Vec::new()),
    };
    let mut head = http::Response::builder()
        .status(status)
        .header("content-type", "application/json");
    if let Some(encoding) = encoding {
        head = head.header("content-encoding", encoding);
    }
    let Ok(mut send) = respond.send_response(head.body(()).unwrap(), body.is_empty()) else {
        return;
    };
    if !body.is_empty() {
        let _ = send.send_data(Bytes::from(body), true);
    }
}

#[tokio::test]
async fn over_http2_and_tls_a_refused_request_is_sent_again_and_answers_are_inflated() {
    let (ca, chain, key) = certificates();
    let dir = std::env::temp_dir().join(format!("capable-h2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let roots = dir.join("ca.pem");
    std::fs::write(&roots, ca).unwrap();
    // Set before this process builds any TLS configuration, in the only test of this
    // binary: the client trusts the test CA alone.
    std::env::set_var("SSL_CERT_FILE", &roots);
    std::env::remove_var("SSL_CERT_DIR");

    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    // HTTP/2 only: a client that did not offer it by ALPN gets no connection.
    config.alpn_protocols = vec![b"h2".to_vec()];
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Seen::default());
    let server = tokio::spawn(serve(
        listener,
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        seen.clone(),
    ));

    let url = format!("https://127.0.0.1:{port}/mcp");
    let options = ClientOptions::default().with_request_timeout(Duration::from_secs(10));
    let session = tokio::time::timeout(
        Duration::from_secs(15),
        capable::connect_http(HttpConfig::new(url.parse().unwrap()), options),
    )
    .await
    .expect("connected in time")
    .expect("connected over HTTP/2 and TLS");

    session.ping().await.expect("the refused ping, sent again");
    assert_eq!(
        seen.pings.load(Ordering::SeqCst),
        2,
        "refused once, then answered"
    );
    let read = session.read_resource("docs://h2").await.expect("a read");
    assert_eq!(read.text(), "over h2");
    assert!(
        seen.encodings
            .lock()
            .unwrap()
            .iter()
            .all(|e| e.contains("gzip")),
        "every request offers gzip: {:?}",
        seen.encodings.lock().unwrap()
    );
    session.close().await;
    server.abort();
    let _ = std::fs::remove_dir_all(&dir);
}
