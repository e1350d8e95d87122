//! `capable auth login|status|logout|token` for `--url` or `--server`. A signal
//! stops any of them where it is (a login waiting for the user included), with the
//! signal's exit code.

use capable::auth::{CredentialStore, Login, TokenInfo};

use super::Context;
use crate::exit::CliError;
use crate::flags::AuthAction;
use crate::output::{self, Table};

pub async fn run(ctx: &Context, action: &AuthAction) -> Result<(), CliError> {
    let work = async {
        match action {
            AuthAction::Login => login(ctx).await,
            AuthAction::Status => status(ctx),
            AuthAction::Logout => logout(ctx).await,
            AuthAction::Token => token(ctx).await,
        }
    };
    tokio::select! {
        done = work => done,
        signal = ctx.signals.received() => Err(CliError::Stopped(signal)),
    }
}

fn named(ctx: &Context) -> bool {
    ctx.global.url.is_some() || ctx.global.server.is_some()
}

async fn login(ctx: &Context) -> Result<(), CliError> {
    let (url, entry) = ctx.http_target()?;
    let oauth = ctx.oauth(&url, entry.as_ref(), ctx.login_mode(true))?;
    let server = capable::internal::http::redact::redact(&url);
    let info = match oauth.login().await? {
        Login::Authorized(info) => info,
        Login::NotRequired => {
            if ctx.global.json {
                output::json(
                    &serde_json::json!({"server": server, "authorization": "not_required"}),
                )?;
            } else {
                output::eprint_line(&format!(
                    "{server} does not ask for authorization: nothing to log in to"
                ));
            }
            return Ok(());
        }
        _ => return Err(CliError::Usage("the login came to an unknown end".into())),
    };
    if ctx.global.json {
        output::json(&info)?;
    } else {
        output::eprint_line(&format!(
            "Logged in to {} (issuer {}{}, {}); stored in {}",
            capable::internal::http::redact::redact_text(&info.server),
            info.issuer,
            scopes(&info)
                .map(|s| format!(", scopes {s}"))
                .unwrap_or_default(),
            expiry(&info),
            info.store
        ));
    }
    Ok(())
}

/// The granted scopes, when there are any.
fn scopes(info: &TokenInfo) -> Option<&str> {
    info.scope.as_deref().filter(|s| !s.trim().is_empty())
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
            capable::internal::http::redact::redact_text(&i.server),
            i.issuer.clone(),
            scopes(i).unwrap_or("-").to_owned(),
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
            &serde_json::json!({"server": capable::internal::http::redact::redact(&url), "removed": removed}),
        )?;
    } else {
        output::eprint_line(&format!(
            "removed {removed} stored token(s) for {}",
            capable::internal::http::redact::redact(&url)
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
            capable::internal::time::humanize(std::time::Duration::from_secs(at - now))
        ),
    }
}
