//! `rmcp-server`: a stdio MCP server built on rmcp (the official Rust SDK), written
//! against its `ServerHandler` trait by hand (no macros), for the interop tests.
//!
//! It declares `resources` (with `subscribe`) and `tools`, serves one resource,
//! `docs://manual/current`, and one tool, `echo {message}`. Everything else — the
//! `initialize` handshake, `server/discover`, the per-request `_meta` of the
//! 2026-07-28 era, result shapes per era — is rmcp's own behaviour.

#![forbid(unsafe_code)]

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;

const MANUAL: &str = "docs://manual/current";
const MANUAL_TEXT: &str = "Acceptance instructions (rmcp): open the current manual, read it, \
                           and confirm each step before you sign off.";

#[derive(Clone, Copy)]
struct Server;

fn echo_tool() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    });
    let serde_json::Value::Object(schema) = schema else {
        unreachable!("the schema is an object")
    };
    Tool::new("echo", "Echoes the message back.", Arc::new(schema))
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_tools()
                .build(),
        )
        .with_server_info(Implementation::new(
            "capable-interop-rmcp",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions("Read docs://manual/current first.")
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![Resource::new(
            MANUAL, "manual",
        )
        .with_mime_type("text/plain")]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != MANUAL {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                Some(json!({"uri": request.uri})),
            ));
        }
        Ok(ReadResourceResult::new(vec![ResourceContents::text(MANUAL_TEXT, MANUAL)]).into())
    }

    // `subscribe: true` is declared, so both eras' subscription methods are served:
    // legacy `resources/subscribe` / `resources/unsubscribe` (accepted, no updates ever
    // follow: the manual never changes) and modern `subscriptions/listen` (rmcp
    // intersects what is accepted here with what the capabilities advertise).
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        _request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![echo_tool()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "echo" {
            return Err(ErrorData::invalid_params(
                format!("no tool {}", request.name),
                None,
            ));
        }
        let message = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("message"))
            .and_then(|m| m.as_str());
        Ok(match message {
            Some(message) => CallToolResult::success(vec![ContentBlock::text(message)]),
            None => {
                CallToolResult::error(vec![ContentBlock::text("echo needs a string `message`")])
            }
        }
        .into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let running = match Server.serve(rmcp::transport::stdio()).await {
        Ok(running) => running,
        Err(e) => {
            eprintln!("rmcp-server: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = running.waiting().await {
        eprintln!("rmcp-server: {e}");
        std::process::exit(1);
    }
}
