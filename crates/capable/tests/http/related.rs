//! A server's question on a request's POST stream names that request: the handler
//! that answers it reads which request of the client's it is about
//! ([`capable::input::related_request`]), by the id the client sent it with, and the
//! tag the caller gave that request ([`capable::input::related_tag`]).

use capable::input::{related_request, related_tag};
use capable::{InputHandlers, RequestOptions};
use capable_core::Method;
use http_peer::event;

use super::*;

#[tokio::test]
async fn a_question_on_a_requests_stream_names_that_request_to_the_handler() {
    // Each call's stream asks a question naming the tool, then answers the call.
    let peer = legacy_peer(|s| {
        let Some(tool) = tool_name(s) else {
            // The client's answers to the questions.
            return Reply::Status(202, vec![]);
        };
        let ask = json!({"jsonrpc": "2.0", "id": format!("ask-{tool}"),
            "method": "elicitation/create",
            "params": {"message": tool, "requestedSchema": {"type": "object", "properties": {}}}});
        let answer = result(&id(s), json!({"content": [{"type": "text", "text": tool}]}));
        let events = vec![event(None, &ask), event(None, &answer)];
        Reply::Sse(vec![], events, Duration::ZERO)
    })
    .await;
    // The handler notes each question's message and the request it is about.
    let (seen, mut asked) = tokio::sync::mpsc::unbounded_channel();
    let mut options = options();
    options.handlers = InputHandlers {
        elicitation: Some(Arc::new({
            let seen = seen.clone();
            move |params: Value| {
                let about = related_request();
                let message = params["message"].as_str().unwrap_or("").to_owned();
                let _ = seen.send((message, about, related_tag()));
                Box::pin(async { Ok(json!({"action": "decline"})) })
            }
        })),
        ..Default::default()
    };
    let session = capable::connect_http(config(&peer.url), options)
        .await
        .expect("connected");
    // Two calls at once, each on its own stream, each tagged by the caller.
    let call = |name: &'static str, tag: u64| {
        let options = RequestOptions {
            tag: Some(tag),
            ..Default::default()
        };
        let params = json!({"name": name, "arguments": {}});
        let session = &session;
        async move {
            session
                .request::<_, Value>(Method::CallTool, &params, options)
                .await
        }
    };
    let (a, b) = tokio::join!(call("first", 7), call("second", 9));
    assert_eq!(a.expect("first")["content"][0]["text"], "first");
    assert_eq!(b.expect("second")["content"][0]["text"], "second");
    // Each question named the call it came with, by the id the client sent.
    let sent: Vec<(String, Value)> = peer
        .posts("tools/call")
        .iter()
        .map(|p| (tool_name(p).unwrap_or("").to_owned(), id(p)))
        .collect();
    let mut questions: Vec<(String, Option<capable_core::RequestId>, Option<u64>)> = Vec::new();
    while questions.len() < 2 {
        let next = tokio::time::timeout(Duration::from_secs(5), asked.recv()).await;
        questions.push(
            next.ok()
                .flatten()
                .expect("both questions reach the handler"),
        );
    }
    assert_eq!(sent.len(), 2, "{sent:?}");
    for (tool, call_id) in sent {
        let (_, about, tag) = questions
            .iter()
            .find(|(message, _, _)| *message == tool)
            .expect("asked");
        let about = about
            .clone()
            .map(|id| serde_json::to_value(id).expect("an id"));
        assert_eq!(about, Some(call_id), "the question of {tool}");
        // And by the caller's own tag for it: no map from ids kept by the caller.
        let want = if tool == "first" { 7 } else { 9 };
        assert_eq!(*tag, Some(want), "the question of {tool}");
    }
    assert_eq!(related_request(), None, "outside a handler");
    assert_eq!(related_tag(), None, "outside a handler");
    session.close().await;
}
