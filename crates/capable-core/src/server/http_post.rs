//! A POST without a session, as a server on Streamable HTTP must judge it before its
//! body is served: which era it is, and whether its headers agree with its body.
//!
//! 2026-07-28 moves what a gateway routes by into headers, and the server must hold a
//! request to them (the transport's "Server Validation"), else a proxy that read the
//! headers and a server that read the body act on different requests:
//!
//! | the POST | the verdict |
//! |---|---|
//! | `initialize`, no `MCP-Protocol-Version` or a legacy one | [`Verdict::Legacy`]: a new session |
//! | `initialize` under a 2026-07-28 header, or with the 2026-07-28 `_meta` envelope | `404`, `-32601`: not a method of that revision; no session is opened |
//! | any other request without `MCP-Protocol-Version` | `400`, `-32020` |
//! | its `_meta` version not the header's | `400`, `-32020` |
//! | `Mcp-Method` missing, or not the body's `method` (values compare exactly: `TOOLS/LIST` is not `tools/list`) | `400`, `-32020` |
//! | `Mcp-Name` missing while the body names a tool, prompt, URI or task (`tools/call`, `prompts/get`, `resources/read`, `tasks/*`), or naming another | `400`, `-32020` |
//! | a notification | [`Verdict::Modern`], unchecked (2026-07-28 defines none a client POSTs; the engine takes what it knows) |
//! | otherwise | [`Verdict::Modern`]: the engine checks the envelope itself (`-32602` without one, `-32022` for a version it does not speak) |
//!
//! A header value is read as HTTP reads field values — spaces and tabs around it left
//! out — and in the spec's base64 form `=?base64?…?=` when sent so. Header *names* are
//! the caller's to match case-insensitively (any HTTP library does).

use std::borrow::Cow;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::jsonrpc::{codes, Incoming, RpcError};
use crate::method::Method;
use crate::version::{Era, ProtocolVersion};

/// The headers of a POST that the rules read (`None`: not sent).
#[derive(Clone, Copy, Debug, Default)]
pub struct PostHeaders<'a> {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<&'a str>,
    /// `Mcp-Method`.
    pub method: Option<&'a str>,
    /// `Mcp-Name`.
    pub name: Option<&'a str>,
}

/// What a POST without a session is (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Verdict {
    /// A legacy `initialize`: it opens a session.
    Legacy,
    /// A 2026-07-28 message, to serve statelessly.
    Modern,
    /// Refused before it is served: this HTTP status, this JSON-RPC error.
    Refused {
        /// The HTTP status (`400`, `404`).
        status: u16,
        /// The error, under the request's id.
        error: RpcError,
    },
}

/// Judges `message`, POSTed without a session with `headers`.
pub fn judge_post(headers: &PostHeaders<'_>, message: &Incoming) -> Verdict {
    judge_post_declared(headers, message).0
}

/// [`judge_post`], and what the message declares of its client, from the same one read
/// of its params: its `_meta` version, `clientCapabilities` and `clientInfo` exactly as
/// sent, as one key (`""` without the envelope). Clients that declare the same have the
/// same key — what a server behind a bridge may be shared by.
pub fn judge_post_declared(headers: &PostHeaders<'_>, message: &Incoming) -> (Verdict, String) {
    let (Incoming::Request { params, .. } | Incoming::Notification { params, .. }) = message else {
        return (Verdict::Modern, String::new());
    };
    let body: Body<'_> = params
        .raw_value()
        .ok()
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default();
    let declared = body.declaration();
    let verdict = match message {
        Incoming::Request { method, .. } => judge(headers, method, &body),
        _ => Verdict::Modern,
    };
    (verdict, declared)
}

/// The rules of the module documentation, for a request of `method` whose params are
/// `body`.
fn judge(headers: &PostHeaders<'_>, method: &str, body: &Body<'_>) -> Verdict {
    let header_version = headers.protocol_version.map(str::trim);
    let body_version = body.meta.as_ref().and_then(|m| m.version.as_deref());
    if method == "initialize" {
        let modern_header = header_version.is_some_and(|v| !is_legacy(v));
        return match modern_header || body_version.is_some() {
            true => refused(
                404,
                codes::METHOD_NOT_FOUND,
                "initialize is not a method of 2026-07-28: send requests with the _meta \
                 envelope, or initialize without the 2026-07-28 header and envelope for a \
                 legacy session"
                    .into(),
            ),
            false => Verdict::Legacy,
        };
    }
    let Some(header_version) = header_version else {
        return mismatch("the MCP-Protocol-Version header is missing".into());
    };
    if let Some(body_version) = body_version {
        if body_version != header_version {
            return mismatch(format!(
                "the MCP-Protocol-Version header ({header_version}) is not the version in \
                 _meta ({body_version})"
            ));
        }
    }
    match headers.method.map(str::trim) {
        None => return mismatch("the Mcp-Method header is missing".into()),
        Some(m) if decoded(m).as_deref() != Some(method) => {
            return mismatch(format!(
                "the Mcp-Method header ({m}) is not the body's method ({method})"
            ));
        }
        Some(_) => {}
    }
    let named = Method::from_name(method)
        .and_then(Method::target_member)
        .and_then(|member| Some((member, body.member(member)?)));
    if let Some((member, value)) = named {
        match headers.name.map(str::trim) {
            None => {
                return mismatch(format!(
                    "the Mcp-Name header is missing (the body's params.{member} is {value:?})"
                ))
            }
            Some(n) if decoded(n).as_deref() != Some(&*value) => {
                return mismatch(format!(
                    "the Mcp-Name header ({n}) is not the body's params.{member} ({value:?})"
                ))
            }
            Some(_) => {}
        }
    }
    Verdict::Modern
}

/// Whether `version` names a legacy revision (every one of them is known; anything
/// else, a later revision included, is not legacy).
fn is_legacy(version: &str) -> bool {
    version
        .parse::<ProtocolVersion>()
        .is_ok_and(|v| v.era() == Era::Legacy)
}

/// A header value as text: the spec's base64 form decoded (`None` when it is not valid
/// base64 of UTF-8), any other value as it is.
pub fn decoded(value: &str) -> Option<Cow<'_, str>> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(b64) => {
            let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
            String::from_utf8(bytes).ok().map(Cow::Owned)
        }
        None => Some(Cow::Borrowed(value)),
    }
}

fn mismatch(message: String) -> Verdict {
    refused(400, codes::HEADER_MISMATCH, message)
}

fn refused(status: u16, code: i64, message: String) -> Verdict {
    Verdict::Refused {
        status,
        error: RpcError {
            code,
            message,
            data: None,
        },
    }
}

/// What the rules read of a request's params (the rest is skipped, not kept).
#[derive(Default, Deserialize)]
struct Body<'a> {
    #[serde(default, rename = "_meta", borrow)]
    meta: Option<Meta<'a>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    uri: Option<Cow<'a, str>>,
    #[serde(default, rename = "taskId", borrow)]
    task_id: Option<Cow<'a, str>>,
}

impl Body<'_> {
    /// The client's declaration as one key (see [`judge_post_declared`]).
    fn declaration(&self) -> String {
        let Some(meta) = &self.meta else {
            return String::new();
        };
        fn raw(v: Option<&RawValue>) -> &str {
            v.map_or("", RawValue::get)
        }
        [
            meta.version.as_deref().unwrap_or(""),
            raw(meta.capabilities),
            raw(meta.client_info),
        ]
        .join("\n")
    }

    /// The string at `member` (one of [`Method::target_member`]'s).
    fn member(&self, member: &str) -> Option<Cow<'_, str>> {
        let value = match member {
            "name" => self.name.as_ref(),
            "uri" => self.uri.as_ref(),
            "taskId" => self.task_id.as_ref(),
            _ => None,
        }?;
        Some(Cow::Borrowed(value.as_ref()))
    }
}

#[derive(Default, Deserialize)]
struct Meta<'a> {
    #[serde(default, rename = "io.modelcontextprotocol/protocolVersion", borrow)]
    version: Option<Cow<'a, str>>,
    #[serde(default, rename = "io.modelcontextprotocol/clientCapabilities", borrow)]
    capabilities: Option<&'a RawValue>,
    #[serde(default, rename = "io.modelcontextprotocol/clientInfo", borrow)]
    client_info: Option<&'a RawValue>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(method: &str, params: serde_json::Value) -> Incoming {
        let line = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        Incoming::parse(line.to_string().into_bytes()).unwrap()
    }

    fn modern(extra: serde_json::Value) -> serde_json::Value {
        let mut params = json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        params
    }

    fn headers<'a>(method: &'a str, name: Option<&'a str>) -> PostHeaders<'a> {
        PostHeaders {
            protocol_version: Some("2026-07-28"),
            method: Some(method),
            name,
        }
    }

    fn code(verdict: &Verdict) -> Option<(u16, i64)> {
        match verdict {
            Verdict::Refused { status, error } => Some((*status, error.code)),
            _ => None,
        }
    }

    #[test]
    fn a_request_whose_headers_agree_with_its_body_is_served() {
        let list = request("tools/list", modern(json!({})));
        assert_eq!(
            judge_post(&headers("tools/list", None), &list),
            Verdict::Modern
        );
        let call = request("tools/call", modern(json!({"name": "echo"})));
        let h = headers("tools/call", Some("  echo\t"));
        assert_eq!(
            judge_post(&h, &call),
            Verdict::Modern,
            "spaces around a value"
        );
        let read = request("resources/read", modern(json!({"uri": "docs://ü"})));
        let h = headers("resources/read", Some("=?base64?ZG9jczovL8O8?="));
        assert_eq!(judge_post(&h, &read), Verdict::Modern, "the base64 form");
    }

    #[test]
    fn headers_that_disagree_with_the_body_are_400_header_mismatch() {
        let list = request("tools/list", modern(json!({})));
        let call = request("tools/call", modern(json!({"name": "echo"})));
        let mismatch = Some((400, codes::HEADER_MISMATCH));
        let no_version = PostHeaders {
            protocol_version: None,
            ..headers("tools/list", None)
        };
        assert_eq!(code(&judge_post(&no_version, &list)), mismatch);
        let other_version = PostHeaders {
            protocol_version: Some("2025-11-25"),
            ..headers("tools/list", None)
        };
        assert_eq!(code(&judge_post(&other_version, &list)), mismatch);
        for method in [None, Some("prompts/list"), Some("TOOLS/LIST")] {
            let h = PostHeaders {
                method,
                ..headers("tools/list", None)
            };
            assert_eq!(code(&judge_post(&h, &list)), mismatch, "{method:?}");
        }
        for name in [None, Some("wrong_tool_name"), Some("=?base64?!!?=")] {
            let h = headers("tools/call", name);
            assert_eq!(code(&judge_post(&h, &call)), mismatch, "{name:?}");
        }
    }

    #[test]
    fn a_2026_initialize_is_404_method_not_found_and_a_legacy_one_opens_a_session() {
        let legacy = request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "h", "version": "1"}}),
        );
        assert_eq!(
            judge_post(&PostHeaders::default(), &legacy),
            Verdict::Legacy
        );
        let old_header = PostHeaders {
            protocol_version: Some("2025-06-18"),
            ..PostHeaders::default()
        };
        assert_eq!(judge_post(&old_header, &legacy), Verdict::Legacy);
        let not_found = Some((404, codes::METHOD_NOT_FOUND));
        let h = headers("initialize", None);
        assert_eq!(code(&judge_post(&h, &legacy)), not_found, "the header");
        let enveloped = request("initialize", modern(json!({"capabilities": {}})));
        assert_eq!(
            code(&judge_post(&PostHeaders::default(), &enveloped)),
            not_found,
            "the envelope"
        );
    }

    #[test]
    fn declarations_differ_by_version_capabilities_and_client_info() {
        let declaration =
            |message: &Incoming| judge_post_declared(&PostHeaders::default(), message).1;
        let request = |meta: serde_json::Value| request("tools/list", json!({"_meta": meta}));
        let meta = |caps: serde_json::Value, name: &str| {
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps,
                "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"}})
        };
        let sampling = declaration(&request(meta(json!({"sampling": {}}), "a")));
        let elicit = declaration(&request(meta(json!({"elicitation": {}}), "a")));
        let other_name = declaration(&request(meta(json!({"sampling": {}}), "b")));
        assert_ne!(sampling, elicit);
        assert_ne!(sampling, other_name);
        let again = declaration(&request(meta(json!({"sampling": {}}), "a")));
        assert_eq!(sampling, again);
        assert_eq!(declaration(&request(json!(null))), "");
    }

    #[test]
    fn a_version_the_headers_agree_on_is_left_to_the_engine() {
        // Unsupported, but the same in both places: the engine answers -32022 with
        // the versions it speaks.
        let mut params = modern(json!({}));
        params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
        let list = request("tools/list", params);
        let h = PostHeaders {
            protocol_version: Some("2099-01-01"),
            ..headers("tools/list", None)
        };
        assert_eq!(judge_post(&h, &list), Verdict::Modern);
        let note = Incoming::parse(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#
                .to_vec(),
        )
        .unwrap();
        assert_eq!(judge_post(&PostHeaders::default(), &note), Verdict::Modern);
    }
}
