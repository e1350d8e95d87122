//! A minimal, fast stdio MCP server for benchmarks.
//!
//! It behaves like a legacy (2025-11-25) server: `server/discover` is answered with
//! -32601, `initialize` normally. It declares `resources` and `tools`, lists one
//! resource (`bench://1k`) whose `resources/read` result carries 1 KiB of text, and one
//! tool (`echo`). Responses are buffered and flushed when no more input is waiting, so
//! pipelined requests are answered in batches.

use std::io::{BufRead, BufReader, BufWriter, Write};

use serde_json::value::RawValue;

#[path = "../answers.rs"]
mod answers;
#[path = "../placement.rs"]
#[allow(dead_code)]
mod placement;

use answers::{Answers, Message};

fn main() {
    placement::pin_from_env(placement::SERVER_CPU);
    let answers = Answers::new("capable-bench-server");
    let stdin = std::io::stdin().lock();
    let mut input = BufReader::with_capacity(256 * 1024, stdin);
    let mut out = BufWriter::with_capacity(256 * 1024, std::io::stdout().lock());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if let Ok(msg) = serde_json::from_slice::<Message<'_>>(&line) {
            if let (Some(id), Some(method)) = (msg.id, msg.method) {
                answer(&mut out, &answers, id, method, msg.params);
            }
        }
        if input.buffer().is_empty() && out.flush().is_err() {
            break;
        }
    }
    let _ = out.flush();
}

/// Writes the answer to one request as one line.
fn answer(
    out: &mut impl Write,
    answers: &Answers,
    id: &RawValue,
    method: &str,
    params: Option<&RawValue>,
) {
    let id = id.get();
    let _ = match answers.result(method, params) {
        Some(body) => writeln!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":{body}}}"#),
        None => writeln!(out, "{}", answers::method_not_found(id, method)),
    };
}
