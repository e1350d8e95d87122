//! The bridge's HTTP side as an axum `Router` in an application's own server: nested
//! under a path of the application's, it serves hosts in both eras as `serve_listen`
//! does (the gate included), and `run` ends every session's server when the bridge is
//! stopped.

use std::time::Duration;

use capable::{ClientOptions, HttpConfig, ProtocolChoice, ServerCommand};
use capable_bridge::{
    BridgeConfig, BridgeError, Connector, HttpBridge, ListenConfig, Stop, Upstream,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn fixture() -> BridgeConfig {
    let command = ServerCommand::new(
        capable_test_support::fixture_bin().display().to_string(),
        ["--profile", "read-only"],
    );
    let connect = Connector::new(move |options: ClientOptions| {
        let command = command.clone();
        Box::pin(async move { Ok(capable::connect_stdio(&command, options).await?) })
    });
    BridgeConfig::new(Upstream::One {
        name: "fixture".into(),
        connect,
    })
}

#[tokio::test]
async fn a_router_nested_in_an_application_serves_hosts_and_ends_with_the_bridge() {
    let socket = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = socket.local_addr().unwrap();
    let (handle, stop) = Stop::new();
    let bridge = HttpBridge::new(fixture(), ListenConfig::new(addr), stop)
        .await
        .unwrap();
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .nest("/bridge", bridge.router());
    let serving = async move {
        let _ = axum::serve(socket, app).await;
    };
    let running = tokio::spawn(bridge.run(serving));

    let url = format!("http://{addr}/bridge/mcp");
    for era in [ProtocolChoice::Legacy, ProtocolChoice::Modern] {
        let config = HttpConfig::new(url.parse().unwrap());
        let options = ClientOptions::default().with_protocol(era);
        let session = tokio::time::timeout(
            Duration::from_secs(20),
            capable::connect_http(config, options),
        )
        .await
        .expect("connected in time")
        .unwrap();
        assert_eq!(
            session.negotiated().version.era() == capable::Era::Legacy,
            era == ProtocolChoice::Legacy
        );
        let resources = tokio::time::timeout(Duration::from_secs(20), session.list_resources())
            .await
            .expect("listed in time")
            .unwrap();
        assert!(
            resources.iter().any(|r| r.uri == "docs://manual/current"),
            "{resources:?}"
        );
        tokio::time::timeout(Duration::from_secs(20), session.close())
            .await
            .expect("closed in time");
    }
    // The gate holds inside the application's router: another Host is turned away.
    let mut raw = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = "POST /bridge/mcp HTTP/1.1\r\nHost: evil.example\r\n\
                   Content-Type: application/json\r\nContent-Length: 2\r\n\
                   Connection: close\r\n\r\n{}";
    raw.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    raw.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 4"), "{answer}");

    handle.stop(15);
    let ended = tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .expect("run ends once stopped")
        .unwrap();
    assert!(matches!(ended, Err(BridgeError::Stopped(15))), "{ended:?}");
}
