//! The typed methods of a session: lists (every page, bounded), reads (with their
//! revision and the time the answer arrived), tools, prompts, completions, logging,
//! ping and legacy subscriptions. Each is one [`Session::request`] in the right types.

use std::future::Future;

use capable_core::internal::cache::CachePolicy;
use capable_core::internal::jsonrpc::Payload;
use capable_core::model::{
    CallToolResult, CompleteArgument, CompleteContext, CompleteParams, CompleteResult, Empty,
    GetPromptParams, GetPromptResult, JsonObject, ListParams, Page, Prompt, ReadResourceResult,
    Resource, ResourceTemplate, SetLevelParams, Tool, UriParams,
};
use capable_core::{LogLevel, Method};

use crate::error::Error;
use crate::read::ResourceRead;

use super::exchange::{decode, RequestOptions};
use super::tasks::{TaskWait, ToolCall};
use super::Session;

impl Session {
    /// One page of a list (`resources/list`, `resources/templates/list`,
    /// `tools/list`, `prompts/list`), with its `nextCursor` and, from 2026-07-28
    /// servers, its caching hints (`cache.ttl_ms`, `cache.cache_scope`).
    ///
    /// ```no_run
    /// # async fn f(session: &capable::Session) -> Result<(), capable::Error> {
    /// use capable::internal::model::ListToolsResult;
    /// let page: ListToolsResult = session.list_page(capable::Method::ListTools, None).await?;
    /// println!("{} tools, fresh for {:?} ms", page.tools.len(), page.cache.ttl_ms);
    /// # Ok(()) }
    /// ```
    pub async fn list_page<Pg: Page>(
        &self,
        method: Method,
        cursor: Option<&str>,
    ) -> Result<Pg, Error> {
        self.list_page_with(method, cursor, CachePolicy::Use).await
    }

    /// [`Session::list_page`] with a cache policy: `Refresh` asks the server even
    /// when a fresh page is cached, `Bypass` leaves the cache alone.
    pub async fn list_page_with<Pg: Page>(
        &self,
        method: Method,
        cursor: Option<&str>,
        cache: CachePolicy,
    ) -> Result<Pg, Error> {
        let options = RequestOptions {
            cache,
            ..RequestOptions::default()
        };
        let payload = self
            .request_payload(method, &ListParams { cursor }, options)
            .await?;
        self.decode_page(method, &payload)
    }

    /// A page as the server sent it; one whose entries are not all well formed loses
    /// those entries, each with a notice ([`capable_core::model::salvage_page`]).
    fn decode_page<Pg: Page>(&self, method: Method, payload: &Payload) -> Result<Pg, Error> {
        let first = match decode(method, payload) {
            Ok(page) => return Ok(page),
            Err(e) => e,
        };
        let salvaged =
            capable_core::model::salvage_page::<Pg>(method.as_str(), payload.json().as_bytes());
        let (page, notices) = salvaged.ok_or(first)?;
        for notice in notices {
            self.record_notice(notice);
        }
        Ok(page)
    }

    /// Every page of a list, within [`ClientOptions`](crate::ClientOptions)'s bounds
    /// (`max_pages`, `max_list_items`, `max_list_bytes`): an endless or repeating list
    /// stops with an error, never fills memory. A cursor the server gives twice is a
    /// broken pagination, refused at once.
    pub(super) async fn list_all<Pg: Page>(&self, method: Method) -> Result<Vec<Pg::Item>, Error> {
        self.list_all_seeing(method, |_: &Pg| ()).await
    }

    /// [`Session::list_all`], showing each page to `see` before its items are taken.
    async fn list_all_seeing<Pg: Page>(
        &self,
        method: Method,
        mut see: impl FnMut(&Pg),
    ) -> Result<Vec<Pg::Item>, Error> {
        let limits = &self.options;
        let mut items = Vec::new();
        let mut bytes = 0usize;
        let mut seen = std::collections::HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..limits.max_pages.max(1) {
            let params = ListParams {
                cursor: cursor.as_deref(),
            };
            let answer = self
                .request_answer(method, &params, RequestOptions::default())
                .await?;
            bytes = bytes.saturating_add(answer.payload.message().len());
            let page: Pg = self.decode_page(method, &answer.payload)?;
            see(&page);
            let (mut page_items, next) = page.into_parts();
            items.append(&mut page_items);
            if items.len() > limits.max_list_items {
                return Err(Error::ListTooLong {
                    method,
                    reached: format!("more than {} items", limits.max_list_items),
                });
            }
            if bytes > limits.max_list_bytes {
                return Err(Error::ListTooLong {
                    method,
                    reached: format!(
                        "more than {} in all",
                        capable_core::internal::text::size(limits.max_list_bytes)
                    ),
                });
            }
            match next {
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(Error::MalformedResult {
                        method,
                        detail: format!("the server gave the cursor {next:?} a second time; the list would never end"),
                    });
                }
                Some(next) => cursor = Some(next),
                None => return Ok(items),
            }
        }
        Err(Error::ListTooLong {
            method,
            reached: format!("more than {} pages", limits.max_pages),
        })
    }

    /// `server/discover` (2026-07-28): the server's current answer, served from the
    /// cache while the last one is fresh (the handshake's own answer is not re-used:
    /// this asks when the host wants to know again). What the session negotiated
    /// stays as it was.
    pub async fn discover(&self) -> Result<capable_core::model::DiscoverResult, Error> {
        self.request(
            Method::Discover,
            &serde_json::json!({}),
            RequestOptions::default(),
        )
        .await
    }

    /// `resources/list`, every page.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        self.list_all::<capable_core::model::ListResourcesResult>(Method::ListResources)
            .await
    }

    /// `resources/templates/list`, every page.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        self.list_all::<capable_core::model::ListResourceTemplatesResult>(
            Method::ListResourceTemplates,
        )
        .await
    }

    /// `resources/read`: the contents, their revision and the time the answer
    /// arrived.
    ///
    /// It is [`Session::read_resource_with`]'s future itself, not one that awaits it:
    /// a layer of future of its own would move every read's result through it.
    pub fn read_resource<'a>(
        &'a self,
        uri: &'a str,
    ) -> impl Future<Output = Result<ResourceRead, Error>> + 'a {
        self.read_resource_with(uri, CachePolicy::Use)
    }

    /// `resources/read` with a cache policy: `Refresh` reads from the server even when
    /// a fresh copy is cached (and keeps the new one), `Bypass` leaves the cache alone.
    /// A read served from the cache keeps the time it was read.
    pub async fn read_resource_with(
        &self,
        uri: &str,
        cache: CachePolicy,
    ) -> Result<ResourceRead, Error> {
        let method = Method::ReadResource;
        let options = RequestOptions {
            cache,
            ..RequestOptions::default()
        };
        let answer = self
            .request_answer(method, &UriParams { uri }, options)
            .await?;
        // Decoded straight into the read: the decoded result (160 bytes) is not moved
        // through a `Result` of its own on the way, nor whole out of this one: the
        // members the read keeps are taken out where the decode left them.
        match ReadResourceResult::from_payload(&answer.payload) {
            Ok(ReadResourceResult {
                contents,
                ttl_ms,
                cache_scope,
                ..
            }) => Ok(ResourceRead::new(
                uri,
                contents,
                ttl_ms,
                cache_scope,
                answer.arrived,
            )),
            Err(e) => Err(Error::MalformedResult {
                method,
                detail: e.to_string(),
            }),
        }
    }

    /// `tools/list`, every page (served from the cache while fresh). The session
    /// learns each tool's `outputSchema` and task support from it.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        let tools = self
            .list_all::<capable_core::model::ListToolsResult>(Method::ListTools)
            .await?;
        self.learn_tools(&tools);
        Ok(tools)
    }

    /// `tools/list`, every page, with how long the whole list stays fresh: as long as
    /// its stalest page (`ttlMs` absent on any page: not at all), `private` when any
    /// page says so. For a host that keeps the list between sessions.
    pub async fn list_tools_with_hint(
        &self,
    ) -> Result<(Vec<Tool>, capable_core::model::CacheHint), Error> {
        let mut hint: Option<capable_core::model::CacheHint> = None;
        let tools = self
            .list_all_seeing(
                Method::ListTools,
                |page: &capable_core::model::ListToolsResult| {
                    let page_hint = &page.cache;
                    hint = Some(match hint.take() {
                        None => page_hint.clone(),
                        Some(h) => capable_core::model::CacheHint {
                            ttl_ms: match (h.ttl_ms, page_hint.ttl_ms) {
                                (Some(a), Some(b)) => Some(a.min(b)),
                                _ => None,
                            },
                            cache_scope: match (h.cache_scope, &page_hint.cache_scope) {
                                (Some(a), _) if a == "private" => Some(a),
                                (_, Some(b)) => Some(b.clone()),
                                (a, None) => a,
                            },
                        },
                    });
                },
            )
            .await?;
        self.learn_tools(&tools);
        Ok((tools, hint.unwrap_or_default()))
    }

    /// One page of `tools/list` (served from the cache while fresh), with its caching
    /// hints; the session learns its tools as [`Session::list_tools`] does.
    pub async fn list_tools_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<capable_core::model::ListToolsResult, Error> {
        let page: capable_core::model::ListToolsResult =
            self.list_page(Method::ListTools, cursor).await?;
        self.learn_tools(&page.tools);
        Ok(page)
    }

    /// `tools/call`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
    ) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, RequestOptions::default())
            .await
    }

    /// `tools/call` with per-request options (timeout, progress).
    ///
    /// The result is checked against the tool's `outputSchema` when the session
    /// knows it (a mismatch is a [notice](Session::notices), never an error). Should
    /// the call become a task (a modern server may, for a client that declared
    /// [tasks](crate::ClientOptions::with_tasks); a 2025-11-25 tool may require it),
    /// this waits for it and returns its result; see [`Session::start_tool_call`] to
    /// handle the task yourself.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
        options: RequestOptions,
    ) -> Result<CallToolResult, Error> {
        match self
            .call_tool_or_task(name, arguments, options, false)
            .await?
        {
            ToolCall::Complete(result) => Ok(result),
            ToolCall::Task(task) => {
                let result = self.await_task(*task, TaskWait::default()).await?;
                self.check_output(name, &result);
                Ok(result)
            }
        }
    }

    /// `prompts/list`, every page.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        self.list_all::<capable_core::model::ListPromptsResult>(Method::ListPrompts)
            .await
    }

    /// `prompts/get`.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
    ) -> Result<GetPromptResult, Error> {
        self.request(
            Method::GetPrompt,
            &GetPromptParams { name, arguments },
            RequestOptions::default(),
        )
        .await
    }

    /// `completion/complete` for an argument of a prompt or resource template.
    /// `reference` is `{"type":"ref/prompt","name":…}` or
    /// `{"type":"ref/resource","uri":…}`.
    pub async fn complete(
        &self,
        reference: &serde_json::Value,
        argument: &str,
        value: &str,
    ) -> Result<CompleteResult, Error> {
        self.complete_in_context(reference, argument, value, &JsonObject::new())
            .await
    }

    /// [`Session::complete`], with the values of the other arguments already given
    /// (`context.arguments`: a server may narrow one argument's values by another's).
    /// A version before 2025-06-18 has no context: it is left out there.
    pub async fn complete_in_context(
        &self,
        reference: &serde_json::Value,
        argument: &str,
        value: &str,
        given: &JsonObject,
    ) -> Result<CompleteResult, Error> {
        let context = (self.protocol_version().has_completion_context() && !given.is_empty())
            .then_some(CompleteContext { arguments: given });
        let params = CompleteParams {
            reference,
            argument: CompleteArgument {
                name: argument,
                value,
            },
            context,
        };
        self.request(Method::Complete, &params, RequestOptions::default())
            .await
    }

    /// Asks for the server's log messages at `level` and above (`debug`, `info`,
    /// `notice`, `warning`, `error`, …), delivered as `notifications/message`. Needs
    /// the server's `logging` capability.
    ///
    /// Legacy: `logging/setLevel`. Modern (2026-07-28, where that method is gone): the
    /// level travels in every later request's `_meta`
    /// (`io.modelcontextprotocol/logLevel`); nothing is sent now.
    pub async fn set_logging_level(&self, level: &str) -> Result<(), Error> {
        let asked = self.shared.lock().conn.ask_log_level(level);
        if asked.map_err(Error::Refused)? == LogLevel::InMeta {
            return Ok(());
        }
        let _: serde_json::Value = self
            .request(
                Method::SetLoggingLevel,
                &SetLevelParams { level },
                RequestOptions::default(),
            )
            .await?;
        Ok(())
    }

    /// Modern: stops asking for log messages (legacy servers have no way back but a
    /// higher level).
    pub fn clear_logging_level(&self) {
        self.shared.lock().conn.set_modern_log_level(None);
    }

    /// `ping` (legacy).
    pub async fn ping(&self) -> Result<(), Error> {
        let _: serde_json::Value = self
            .request(Method::Ping, &Empty {}, RequestOptions::default())
            .await?;
        Ok(())
    }

    /// `resources/subscribe` (legacy; needs `resources.subscribe`).
    pub async fn subscribe(&self, uri: &str) -> Result<(), Error> {
        let _: serde_json::Value = self
            .request(
                Method::Subscribe,
                &UriParams { uri },
                RequestOptions::default(),
            )
            .await?;
        Ok(())
    }

    /// `resources/unsubscribe` (legacy; needs `resources.subscribe`).
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), Error> {
        let _: serde_json::Value = self
            .request(
                Method::Unsubscribe,
                &UriParams { uri },
                RequestOptions::default(),
            )
            .await?;
        Ok(())
    }
}
