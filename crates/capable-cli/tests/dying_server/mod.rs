//! A stdio server that dies at start the way a Node server with a missing module does:
//! a fourteen-line trace on stderr whose fifth line names the error, then exit 1. For
//! the tests of what capable shows of such a server (`capable servers`, errors, the UI).
#![allow(dead_code)]

/// What Node prints when its script requires a module that is not there, then exits 1.
pub const NODE_TRACE: &str = "node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '/srv/mcp/dist/index.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:174:12)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.11.0";

pub const CAUSE: &str = "Error: Cannot find module '/srv/mcp/dist/index.js'";

/// A server that prints the trace on stderr and exits 1 before any answer.
pub fn dying_server() -> Vec<String> {
    assert_eq!(NODE_TRACE.lines().count(), 14);
    assert_eq!(NODE_TRACE.lines().nth(4), Some(CAUSE));
    let script = format!("cat >&2 <<'EOF'\n{NODE_TRACE}\nEOF\nexit 1");
    vec!["/bin/sh".into(), "-c".into(), script]
}
