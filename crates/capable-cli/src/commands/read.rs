//! `capable read URI [--save DIR]`: the text, its revision and the time it was read;
//! a binary item (a `blob`) as a summary line, written to a file with `--save`.

use std::path::Path;

use capable::{ResourceRead, Session};

use super::{with_session, Context};
use crate::exit::CliError;
use crate::flags::ServerArgs;
use crate::media::{self, Binary};
use crate::output;

pub async fn run(
    ctx: &Context,
    uri: &str,
    save: Option<&Path>,
    args: &ServerArgs,
) -> Result<(), CliError> {
    let session = ctx.connect(args).await?;
    with_session(ctx, session, async |s: &Session| {
        let read = s.read_resource(uri).await?;
        let failed = if ctx.global.json {
            output::json(&read)?;
            save.and_then(|dir| media::save_quietly(blobs(&read), dir))
        } else {
            let (text, failed) = human(&read, save);
            output::print(&text)?;
            failed
        };
        failed.map_or(Ok(()), |why| Err(media::save_failed(why)))
    })
    .await
}

/// The blobs among the contents, each with its place (from 1).
fn blobs(read: &ResourceRead) -> impl Iterator<Item = Binary<'_>> {
    read.contents.iter().enumerate().filter_map(|(i, c)| {
        let blob = c.blob.as_deref()?;
        Some(Binary::from_blob(i + 1, c.mime_type.as_deref(), blob))
    })
}

/// The read for people: a header with revision and time, then the text, each blob as
/// a summary line (saved in `save` first). Also returns the first failure to save.
fn human(read: &ResourceRead, save: Option<&Path>) -> (String, Option<String>) {
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
    let mut failed = None;
    for (i, c) in read.contents.iter().enumerate() {
        match (&c.text, &c.blob) {
            (Some(text), _) => {
                out.push_str(text);
                if !text.ends_with('\n') {
                    out.push('\n');
                }
            }
            (None, Some(blob)) => {
                let item = Binary::from_blob(i + 1, c.mime_type.as_deref(), blob);
                let shown = media::show(&item, save);
                out.push_str(&shown.line);
                out.push('\n');
                failed = failed.or(shown.failed);
            }
            (None, None) => out.push_str("[empty]\n"),
        }
    }
    (out, failed)
}
