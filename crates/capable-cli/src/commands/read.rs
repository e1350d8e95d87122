//! `capable read URI`: the text, its revision and the time it was read.

use capable::{ResourceRead, Session};

use super::{with_session, Context};
use crate::exit::CliError;
use crate::flags::ServerArgs;
use crate::output;

pub async fn run(ctx: &Context, uri: &str, args: &ServerArgs) -> Result<(), CliError> {
    let session = ctx.connect(args).await?;
    with_session(ctx, session, async |s: &Session| {
        let read = s.read_resource(uri).await?;
        if ctx.global.json {
            output::json(&read)?;
        } else {
            output::print(&human(&read))?;
        }
        Ok(())
    })
    .await
}

/// The read for people: a header with revision and time, then the text.
pub fn human(read: &ResourceRead) -> String {
    let mut out = format!(
        "{}\nrevision  {}\nread at   {}\n",
        read.uri,
        read.revision(),
        read.read_at_rfc3339()
    );
    if let Some(ttl) = read.ttl_ms {
        out.push_str(&format!("fresh for {ttl} ms\n"));
    }
    out.push('\n');
    for c in &read.contents {
        match (&c.text, &c.blob) {
            (Some(text), _) => {
                out.push_str(text);
                if !text.ends_with('\n') {
                    out.push('\n');
                }
            }
            (None, Some(blob)) => out.push_str(&format!(
                "[binary {} , {} base64 characters]\n",
                c.mime_type.as_deref().unwrap_or("content"),
                blob.len()
            )),
            (None, None) => out.push_str("[empty]\n"),
        }
    }
    out
}
