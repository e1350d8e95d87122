//! `capable auth login|status|logout|token` for `--url` or `--server`.

use capable::auth::{CredentialStore, TokenInfo};

use super::Context;
use crate::exit::CliError;
use crate::flags::AuthAction;
use crate::output::{self, Table};

pub async fn run(ctx: &Context, action: &AuthAction) -> Result<(), CliError> {
    match action {
        AuthAction::Login => login(ctx).await,
        AuthAction::Status => status(ctx),
        AuthAction::Logout => logout(ctx).await,
        AuthAction::Token => token(ctx).await,
    }
}

fn named(ctx: &Context) -> bool {
    ctx.global.url.is_some() || ctx.global.server.is_some()
}

async fn login(ctx: &Context) -> Result<(), CliError> {
    let (url, entry) = ctx.http_target()?;
    let oauth = ctx.oauth(&url, entry.as_ref(), ctx.login_mode(true))?;
    let info = oauth.login().await?;
    if ctx.global.json {
        output::json(&info)?;
    } else {
        output::eprint_line(&format!(
            "Logged in to {} (issuer {}{}, {}); stored in {}",
            capable::core::http::redact::redact_text(&info.server),
            info.issuer,
            info.scope
                .as_deref()
                .map(|s| format!(", scopes {s}"))
                .unwrap_or_default(),
            expiry(&info),
            info.store
        ));
    }
    Ok(())
}

fn status(ctx: &Context) -> Result<(), CliError> {
    let store = ctx.token_store();
    let infos: Vec<TokenInfo> = if named(ctx) {
        let (url, entry) = ctx.http_target()?;
        ctx.oauth(&url, entry.as_ref(), ctx.login_mode(false))?
            .status()?
    } else {
        all(store.as_ref())?
    };
    if ctx.global.json {
        output::json(&serde_json::json!({"store": store.describe(), "tokens": infos}))?;
        return Ok(());
    }
    if infos.is_empty() {
        output::print(&format!("no stored tokens (store: {})\n", store.describe()))?;
        return Ok(());
    }
    let mut t = Table::new(&["server", "issuer", "scopes", "expires", "refresh"]);
    for i in &infos {
        t.row(vec![
            capable::core::http::redact::redact_text(&i.server),
            i.issuer.clone(),
            i.scope.clone().unwrap_or_else(|| "-".into()),
            expiry(i),
            if i.refreshable { "yes" } else { "no" }.into(),
        ]);
    }
    output::print(&format!("{}stored in {}\n", t.render(), store.describe()))?;
    Ok(())
}

fn all(store: &dyn CredentialStore) -> Result<Vec<TokenInfo>, CliError> {
    let tokens = store.all_tokens().map_err(|e| CliError::store(store, e))?;
    Ok(tokens
        .into_iter()
        .map(|t| TokenInfo {
            server: t.server,
            resource: t.key.resource,
            issuer: t.key.issuer,
            client_id: t.client_id,
            token_type: t.token.token_type,
            scope: t.token.scope,
            expires_at: t.token.expires_at,
            refreshable: t.token.refresh_token.is_some(),
            store: store.describe(),
        })
        .collect())
}

async fn logout(ctx: &Context) -> Result<(), CliError> {
    let (url, entry) = ctx.http_target()?;
    let removed = ctx
        .oauth(&url, entry.as_ref(), ctx.login_mode(false))?
        .logout()
        .await?;
    if ctx.global.json {
        output::json(
            &serde_json::json!({"server": capable::core::http::redact::redact(&url), "removed": removed}),
        )?;
    } else {
        output::eprint_line(&format!(
            "removed {removed} stored token(s) for {}",
            capable::core::http::redact::redact(&url)
        ));
    }
    Ok(())
}

async fn token(ctx: &Context) -> Result<(), CliError> {
    let (url, entry) = ctx.http_target()?;
    let oauth = ctx.oauth(&url, entry.as_ref(), ctx.login_mode(false))?;
    let token = oauth.access_token().await?;
    // The one place a token is printed: on request, to stdout, for a script.
    output::raw(format!("{token}\n").as_bytes())?;
    Ok(())
}

/// `in 59m`, `expired`, `no expiry`.
fn expiry(info: &TokenInfo) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    match info.expires_at {
        None => "no expiry".into(),
        Some(at) if at <= now => "expired".into(),
        Some(at) => format!(
            "expires in {}",
            capable::core::time::humanize(std::time::Duration::from_secs(at - now))
        ),
    }
}
