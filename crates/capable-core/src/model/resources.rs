use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{JsonObject, Page, SharedStr};
use crate::jsonrpc::{Params, Payload};

/// A resource as listed by `resources/list`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Human-friendly name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Everything else (`size`, `annotations`, `icons`, `_meta`, …).
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One page of `resources/list`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// The resources on this page.
    pub resources: Vec<Resource>,
    /// Where to continue.
    #[serde(default)]
    pub next_cursor: Option<String>,
    /// 2026-07-28 caching hints.
    #[serde(flatten)]
    pub cache: super::CacheHint,
}

impl Page for ListResourcesResult {
    type Item = Resource;
    const ITEMS: &'static str = "resources";
    fn into_parts(self) -> (Vec<Resource>, Option<String>) {
        (self.resources, self.next_cursor)
    }
}

/// A resource template as listed by `resources/templates/list`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// RFC 6570 URI template.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// Human-friendly name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One page of `resources/templates/list`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// The templates on this page.
    pub resource_templates: Vec<ResourceTemplate>,
    /// Where to continue.
    #[serde(default)]
    pub next_cursor: Option<String>,
    /// 2026-07-28 caching hints.
    #[serde(flatten)]
    pub cache: super::CacheHint,
}

impl Page for ListResourceTemplatesResult {
    type Item = ResourceTemplate;
    const ITEMS: &'static str = "resourceTemplates";
    fn into_parts(self) -> (Vec<ResourceTemplate>, Option<String>) {
        (self.resource_templates, self.next_cursor)
    }
}

/// Params naming one resource (`resources/read`, `resources/subscribe`, …):
/// `{"uri":…}`, written without serde (see [`Params`]).
#[derive(Clone, Debug)]
pub struct UriParams<'a> {
    /// The resource's URI.
    pub uri: &'a str,
}

impl Params for UriParams<'_> {
    fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"uri\":");
        crate::jsonrpc::write_name(out, self.uri);
        out.push(b'}');
    }

    fn to_value(&self) -> serde_json::Result<Value> {
        Ok(serde_json::json!({ "uri": self.uri }))
    }

    /// The URI, without making a value of the params.
    fn target(&self, _: crate::Method) -> crate::outbox::Target {
        crate::outbox::Target {
            name: Some(self.uri.into()),
            arguments: None,
        }
    }

    /// The one member, written as above: already canonical.
    fn cache_key(&self) -> Option<String> {
        let mut out = Vec::with_capacity(self.uri.len() + 10);
        self.write_json(&mut out);
        String::from_utf8(out).ok()
    }
}

/// One item of a `resources/read` result: text or base64 blob. Its strings are
/// [`SharedStr`]s: ranges of one copy of the result, cloned without copying.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// The URI of this content (may be a sub-resource of the one read).
    pub uri: SharedStr,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<SharedStr>,
    /// Text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<SharedStr>,
    /// Binary content, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<SharedStr>,
    /// Annotations (`lastModified`, `audience`, `priority`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// `resources/read` result.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// The contents.
    pub contents: Vec<ResourceContents>,
    /// `resultType` (2026-07-28); absent means `complete`.
    #[serde(default)]
    pub result_type: Option<String>,
    /// 2026-07-28: how long the content stays fresh, in milliseconds.
    #[serde(default)]
    pub ttl_ms: Option<f64>,
    /// 2026-07-28: `public` or `private`.
    #[serde(default)]
    pub cache_scope: Option<String>,
    /// `_meta`.
    #[serde(default, rename = "_meta")]
    pub meta: Option<Value>,
}

impl ReadResourceResult {
    /// Decodes a `resources/read` result: in the layout servers write (one flat
    /// content of strings) by the crate's reader of it, anything else through serde —
    /// the same value either way, and serde's verdict on whatever the reader does not
    /// take.
    pub fn from_payload(payload: &Payload) -> Result<Self, serde_json::Error> {
        Self::from_payload_map_err(payload, |e| e)
    }

    /// [`ReadResourceResult::from_payload`], serde's error turned into the caller's by
    /// `error`. The result is built where the caller receives it: a `map_err` after
    /// the decode would move it (some 160 bytes) from one `Result` into the other. In
    /// the usual layout only its contents come back from the reader, and the rest is
    /// written here (every other member absent); serde's decode is left to a function
    /// of its own, so that this one stays the few instructions it is.
    pub fn from_payload_map_err<E>(
        payload: &Payload,
        error: impl FnOnce(serde_json::Error) -> E,
    ) -> Result<Self, E> {
        match crate::json::read_contents(payload.raw()) {
            Some(contents) => Ok(Self::of_contents(contents)),
            None => Self::by_serde(payload).map_err(error),
        }
    }

    /// A result of `contents` alone, every other member absent.
    #[inline(always)]
    pub(crate) fn of_contents(contents: Vec<ResourceContents>) -> Self {
        ReadResourceResult {
            contents,
            result_type: None,
            ttl_ms: None,
            cache_scope: None,
            meta: None,
        }
    }

    /// The rest of [`ReadResourceResult::from_payload_map_err`], out of its way.
    #[cold]
    fn by_serde(payload: &Payload) -> Result<Self, serde_json::Error> {
        payload.decode()
    }
}

/// Whether `uri` is `subscribed` or a sub-resource of it (`…/part`, `…#frag`,
/// `…?query`, or anything under a `subscribed` that ends in `/`): a server's update may
/// name a sub-resource of the URI the host subscribed to.
pub fn is_same_or_sub_resource(uri: &str, subscribed: &str) -> bool {
    match uri.strip_prefix(subscribed) {
        Some("") => true,
        Some(rest) => rest.starts_with(['/', '#', '?']) || subscribed.ends_with('/'),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::UriParams;
    use crate::jsonrpc::Params;

    #[test]
    fn uri_params_are_written_as_serde_would_write_them() {
        for uri in [
            "bench://1k",
            "",
            "file:///a b/é.md",
            "q\"uote\\",
            "ctl\u{1}\n",
            "🦀",
        ] {
            let mut out = b"x".to_vec();
            UriParams { uri }.write_json(&mut out);
            let serde = serde_json::json!({ "uri": uri });
            assert_eq!(&out[1..], serde.to_string().as_bytes(), "{uri:?}");
            assert_eq!(UriParams { uri }.to_value().unwrap(), serde);
            // Its cache key is the one any other params of the same value get.
            assert_eq!(UriParams { uri }.cache_key(), serde.cache_key());
        }
    }
}
