use serde::Serialize;

use crate::gating::ListenFilter;

/// `subscriptions/listen` params (2026-07-28).
#[derive(Clone, Debug, Serialize)]
pub struct ListenParams<'a> {
    /// The filter: only what is asked for is delivered.
    pub notifications: ListenFilterWire<'a>,
}

/// The wire form of a [`ListenFilter`]: fields not asked for are left out.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenFilterWire<'a> {
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    tools_list_changed: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    prompts_list_changed: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    resources_list_changed: bool,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    resource_subscriptions: &'a [String],
}

impl<'a> From<&'a ListenFilter> for ListenFilterWire<'a> {
    fn from(f: &'a ListenFilter) -> Self {
        ListenFilterWire {
            tools_list_changed: f.tools_list_changed,
            prompts_list_changed: f.prompts_list_changed,
            resources_list_changed: f.resources_list_changed,
            resource_subscriptions: &f.resource_subscriptions,
        }
    }
}
