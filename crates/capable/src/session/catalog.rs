//! The tools a session knows: from its own `tools/list`, or told by the host
//! ([`ClientOptions::known_tools`](crate::ClientOptions::known_tools)). Their
//! `outputSchema`s check results ([`crate::output_schema`]); their
//! `execution.taskSupport` says whether a 2025-11-25 call may run as a task.

use std::collections::HashMap;

use capable_core::model::{CallToolResult, TaskSupport, Tool};

use crate::output_schema::OutputSchemas;

use super::Session;

#[derive(Default)]
pub(crate) struct Catalog {
    schemas: OutputSchemas,
    task_support: HashMap<String, TaskSupport>,
}

impl Catalog {
    pub(crate) fn learn(&mut self, tools: &[Tool]) {
        self.schemas.learn(tools);
        for tool in tools {
            self.task_support
                .insert(tool.name.clone(), tool.task_support());
        }
    }
}

impl Session {
    /// Learns tools listed in this session.
    pub(super) fn learn_tools(&self, tools: &[Tool]) {
        self.catalog().learn(tools);
    }

    fn catalog(&self) -> std::sync::MutexGuard<'_, Catalog> {
        self.catalog.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Checks a result of `tool` against its output schema; a mismatch is recorded
    /// as a notice (see [`crate::output_schema`]).
    pub(super) fn check_output(&self, tool: &str, result: &CallToolResult) {
        let notice = self.catalog().schemas.check(tool, result);
        if let Some(notice) = notice {
            tracing::warn!("{notice}");
            self.shared.events.notice(notice);
        }
    }

    /// A tool's `execution.taskSupport`, when this session listed it (or was told of
    /// it); `None` for a tool it does not know.
    pub fn tool_task_support(&self, tool: &str) -> Option<TaskSupport> {
        self.catalog().task_support.get(tool).copied()
    }
}
