use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Notice;

/// Params of a paginated list request.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ListParams<'a> {
    /// Where to continue; absent for the first page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<&'a str>,
}

/// A page of a paginated list: the items under [`Page::ITEMS`] and where to continue.
pub trait Page: for<'de> Deserialize<'de> {
    /// The item type.
    type Item: DeserializeOwned;
    /// The key of the page's items (`tools`, `resources`, `resourceTemplates`, …).
    const ITEMS: &'static str;
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

/// A page that did not decode, without its malformed entries: one tool without a name
/// must not cost a server its whole list. Each entry under [`Page::ITEMS`] is decoded
/// on its own; those that do not decode are taken out, each with a
/// [`Notice::EntryDropped`], and the page is decoded again. `None` when no entry was
/// at fault or the page is still wrong (no items array, a bad cursor): the first
/// error stands. Called only once the page failed: a well-formed page is decoded
/// once, as it came.
pub fn salvage_page<Pg: Page>(method: &str, json: &[u8]) -> Option<(Pg, Vec<Notice>)> {
    let mut page = serde_json::from_slice::<Value>(json).ok()?;
    let entries = page.get_mut(Pg::ITEMS)?.as_array_mut()?;
    let mut notices = Vec::new();
    let mut index = 0;
    entries.retain(|entry| {
        index += 1;
        match Pg::Item::deserialize(entry) {
            Ok(_) => true,
            Err(why) => {
                notices.push(Notice::EntryDropped {
                    method: method.to_owned(),
                    entry: entry_label(entry, index - 1),
                    why: why.to_string(),
                });
                false
            }
        }
    });
    match notices.is_empty() {
        true => None,
        false => Some((Pg::deserialize(page).ok()?, notices)),
    }
}

/// How a dropped entry is named: its `name`, `uri` or `uriTemplate` when it has one
/// (as text), else its place in the page.
fn entry_label(entry: &Value, index: usize) -> String {
    ["name", "uri", "uriTemplate"]
        .iter()
        .find_map(|key| entry.get(key)?.as_str())
        .map_or_else(|| format!("entry {index}"), |name| format!("{name:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ListResourcesResult, ListToolsResult};

    #[test]
    fn a_malformed_entry_is_dropped_with_a_notice_and_the_rest_kept() {
        let json = br#"{"tools":[{"name":"a"},{"description":"no name"},{"name":7},{"name":"b"}]}"#;
        let (page, notices) = salvage_page::<ListToolsResult>("tools/list", json).unwrap();
        let names: Vec<&str> = page.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let dropped: Vec<String> = notices
            .iter()
            .map(|n| match n {
                Notice::EntryDropped { method, entry, .. } => format!("{method} {entry}"),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(dropped, ["tools/list entry 1", "tools/list entry 2"]);
        let json = br#"{"resources":[{"uri":"a://1","name":"one"},{"uri":"a://2"}]}"#;
        let (page, notices) = salvage_page::<ListResourcesResult>("resources/list", json).unwrap();
        assert_eq!(page.resources.len(), 1);
        assert!(
            notices[0].to_string().contains("\"a://2\""),
            "{}",
            notices[0]
        );
    }

    #[test]
    fn a_page_that_is_wrong_as_a_whole_is_not_salvaged() {
        for json in [
            &br#"{"tools":[{"name":"a"}],"nextCursor":5}"#[..],
            br#"{"tools":{"name":"a"}}"#,
            br#"{"tools":[{}],"nextCursor":5}"#,
            br#"[]"#,
            br#"{"tools": [1,"#,
        ] {
            assert!(salvage_page::<ListToolsResult>("tools/list", json).is_none());
        }
    }
}
