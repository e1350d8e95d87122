//! A server's roots (`roots/list`), read and changed from the page: a legacy server
//! is told of a change (`notifications/roots/list_changed`) and asks again; a modern
//! one gets the new list with its next request that asks for it.

use std::path::Path;
use std::sync::Arc;

use axum::extract::State;
use capable::Root;
use serde::Deserialize;
use serde_json::json;

use crate::error::ApiError;
use crate::extract::{Answer, Command, Reply};
use crate::state::AppState;

/// `{server, roots?}`.
#[derive(Deserialize)]
pub struct RootsCommand {
    server: String,
    /// The new roots; none: only read them.
    roots: Option<Vec<Root>>,
}

/// `POST /api/roots {server, roots?}`: the server's roots, after setting them when
/// given — each a `file://` URI or a plain path, as `capable --root PATH` takes it
/// (made absolute, links resolved when it exists), with an optional name (the
/// directory's own when none is given for a path).
pub async fn roots(State(app): State<Arc<AppState>>, Command(c): Command<RootsCommand>) -> Answer {
    let roots = app.servers.roots(&c.server)?;
    if let Some(new) = c.roots {
        let new = new
            .into_iter()
            .map(as_root)
            .collect::<Result<Vec<_>, _>>()?;
        roots.set(new);
    }
    Ok(Reply(json!({"server": c.server, "roots": roots.get()})))
}

/// A root as given: a `file://` URI as it is, a plain path as the `file://` URI of
/// its absolute form; any other URI refused.
fn as_root(root: Root) -> Result<Root, ApiError> {
    if root.uri.starts_with("file://") {
        return Ok(root);
    }
    let scheme = root.uri.split_once(':').is_some_and(|(s, _)| {
        s.len() > 1
            && s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if scheme || root.uri.trim().is_empty() {
        return Err(ApiError::usage(format!(
            "a root is a file:// URI or a path, not {:?}",
            root.uri
        )));
    }
    let path = Path::new(&root.uri);
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    });
    let name = root
        .name
        .or_else(|| abs.file_name().map(|n| n.to_string_lossy().into_owned()));
    Ok(Root {
        uri: format!("file://{}", abs.display()),
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(uri: &str) -> Root {
        Root {
            uri: uri.into(),
            name: None,
        }
    }

    #[test]
    fn a_plain_path_is_a_root_as_the_command_line_takes_it() {
        let dir = std::env::temp_dir().canonicalize().unwrap();
        let given = as_root(root(dir.to_str().unwrap())).unwrap();
        assert_eq!(given.uri, format!("file://{}", dir.display()));
        assert_eq!(
            given.name.as_deref(),
            dir.file_name().and_then(|n| n.to_str())
        );
        let uri = as_root(root("file:///srv/data")).unwrap();
        assert_eq!((uri.uri.as_str(), uri.name), ("file:///srv/data", None));
        assert!(as_root(root("https://example.org/")).is_err());
        assert!(as_root(root("  ")).is_err());
    }
}
