//! A server that says back a secret it was given — an HTTP error body echoing the
//! request's headers and URL, a crash report printing its environment — reaches the
//! host's errors with `***` in its place.

mod common;
use capable_test_support::http_peer;

use std::time::Duration;

use capable::{connect_stdio, ClientOptions, Error, HttpConfig, ServerCommand};
use common::within;
use http_peer::{initialize_result, Peer, Reply, Seen};
use serde_json::json;

const TOKEN: &str = "tok-5ecret-31ad";
const KEY: &str = "key-5ecret-8c2e";

#[tokio::test]
async fn a_crash_report_that_prints_the_environment_is_scrubbed() {
    within(Duration::from_secs(20), async {
        let mut command = ServerCommand::new(
            "sh",
            ["-c", "echo \"starting with $API_TOKEN\" >&2; exit 3"],
        );
        command.env.insert("API_TOKEN".into(), TOKEN.into());
        let e = connect_stdio(&command, ClientOptions::default())
            .await
            .err()
            .expect("the server exits");
        let Error::ServerExited { stderr, .. } = &e else {
            panic!("{e:?}")
        };
        assert!(stderr.contains("starting with ***"), "{stderr}");
        assert!(!e.to_string().contains(TOKEN), "{e}");
    })
    .await
}

#[tokio::test]
async fn an_error_body_echoing_the_request_is_scrubbed() {
    within(Duration::from_secs(20), async {
        let peer = Peer::start("/mcp", |s: &Seen| match s.rpc_method() {
            Some("server/discover") => Reply::Status(400, vec![]),
            Some("initialize") => Reply::Json(
                200,
                vec![],
                initialize_result(s.rpc_id().unwrap(), "2025-06-18", json!({"resources": {}})),
            ),
            Some(m) if m.starts_with("notifications/") => Reply::Status(202, vec![]),
            _ if s.method == "GET" => Reply::Status(405, vec![]),
            _ => Reply::Raw(
                500,
                vec![],
                format!("bad request {:?} {}", s.headers, s.path).into_bytes(),
            ),
        })
        .await;
        let url = format!("{}?key={KEY}", peer.url);
        let mut config = HttpConfig::new(url.parse().unwrap());
        config.headers = vec![("Authorization".into(), format!("Bearer {TOKEN}"))];
        let session = capable::connect_http(config, ClientOptions::default())
            .await
            .expect("connected");
        let e = session.list_resources().await.expect_err("a 500");
        let Error::Http { body, status, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(*status, 500);
        assert!(body.contains("bad request"), "{body}");
        for secret in [TOKEN, KEY] {
            assert!(!body.contains(secret), "{secret} in {body}");
            assert!(!e.to_string().contains(secret), "{secret} in {e}");
        }
        session.close().await;
    })
    .await
}
