//! One legacy JSON-RPC POST to a gateway, as the benches that time single requests send
//! it (a new token's first request, a restored session's first read).

use serde_json::Value;

/// POSTs `body` to `url` (with `session`'s id and version headers, and `token` as a
/// bearer, when given): the session id the answer named and the answer's length in
/// bytes; a status other than 200 or 202 is an error naming it.
pub async fn post(
    http: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: &Value,
) -> Result<(Option<String>, usize), String> {
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let answer = request.send().await.map_err(|e| e.to_string())?;
    let status = answer.status().as_u16();
    let session = answer
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = answer.bytes().await.map_err(|e| e.to_string())?;
    match status {
        200 | 202 => Ok((session, body.len())),
        other => Err(format!("{url} answered {other}")),
    }
}
