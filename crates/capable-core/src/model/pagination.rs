use serde::{Deserialize, Serialize};

/// Params of a paginated list request.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ListParams<'a> {
    /// Where to continue; absent for the first page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<&'a str>,
}

/// A page of a paginated list: the items under `key` and where to continue.
pub trait Page: for<'de> Deserialize<'de> {
    /// The item type.
    type Item;
    /// Splits the page into its items and the next cursor. An empty-string cursor is a
    /// valid cursor; only absence ends the list.
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>);
}

/// 2026-07-28 caching hints of a list or read result: the result stays fresh for
/// `ttl_ms` milliseconds after it arrived; `private` results must not be shared across
/// authorization contexts. Absent on legacy servers.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheHint {
    /// How long the result stays fresh, in milliseconds (absent or negative: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<f64>,
    /// `public` or `private`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
}
