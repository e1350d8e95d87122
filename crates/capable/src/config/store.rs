//! The store a gateway's replicas share (the `gateway` section's `store`): what every
//! replica must see at once — each caller's rate-limit counts, a `requestState` spent
//! once — is kept there rather than in each replica's memory. Redis, or any service
//! that speaks its protocol (Valkey, KeyDB, Dragonfly, a managed one).
//!
//! ```json
//! {"gateway": {"store": {"redis": "redis://10.0.0.7:6379/0",
//!                        "passwordEnv": "CAPABLE_REDIS_PASSWORD",
//!                        "timeout": "100ms", "whenDown": "open"},
//!              "rateLimit": {"requests": 600, "per": "1m"}}}
//! ```
//!
//! A password is never written in the file: it is read at start from the environment
//! (`passwordEnv`, a variable's name) or from a file (`passwordFile`); a URL with a
//! password in it is refused, without repeating it.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// How long a call to the store may take by default before the replica goes on
/// without it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(100);

/// The most a call to the store may be given (`timeout`): a request never waits on
/// it longer.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(5);

/// The store the replicas share (`gateway.store`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreConfig {
    /// The Redis URL (`redis://host:port/db`, a user name allowed, no password).
    pub redis: String,
    /// Where its password is read from at start (none: no password).
    pub password: Option<PasswordFrom>,
    /// How long one call may take before the replica goes on without the store.
    pub timeout: Duration,
    /// What a replica does while the store cannot be reached.
    pub when_down: WhenDown,
}

/// Where the store's password is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PasswordFrom {
    /// The environment variable of this name (`passwordEnv`).
    Env(String),
    /// This file, its content less a final newline (`passwordFile`).
    File(PathBuf),
}

/// What a replica does while the store cannot be reached (`whenDown`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WhenDown {
    /// Each replica counts alone, as without a store (`"open"`, the default): a
    /// caller gets up to its limit from each replica meanwhile, never an outage.
    #[default]
    Open,
    /// Requests a limit applies to are refused (`"closed"`, `429` with
    /// `Retry-After`) until the store answers again.
    Closed,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreEntry {
    redis: String,
    #[serde(default, rename = "passwordEnv")]
    password_env: Option<String>,
    #[serde(default, rename = "passwordFile")]
    password_file: Option<PathBuf>,
    #[serde(default)]
    timeout: Option<String>,
    #[serde(default, rename = "whenDown")]
    when_down: Option<String>,
}

/// A `store` object (`{"redis": "redis://127.0.0.1:6379/0"}`).
pub(super) fn store(raw: &Value) -> Result<StoreConfig, String> {
    let entry = StoreEntry::deserialize(raw).map_err(|e| format!("store: {e}"))?;
    let url = url::Url::parse(&entry.redis)
        .map_err(|e| format!("store.redis is not a URL ({e}): redis://host:port/db"))?;
    if url.scheme() != "redis" {
        return Err(format!(
            "store.redis: the scheme {:?} is not served: redis://host:port/db",
            url.scheme()
        ));
    }
    if url.password().is_some() {
        return Err(
            "store.redis has a password in it: name where it is read from instead \
                    (passwordEnv or passwordFile), never in the file"
                .into(),
        );
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("store.redis names no host: redis://host:port/db".into());
    }
    let password = match (entry.password_env, entry.password_file) {
        (Some(_), Some(_)) => return Err("store: passwordEnv or passwordFile, not both".into()),
        (Some(name), None) if name.is_empty() => {
            return Err("store.passwordEnv names no variable".into())
        }
        (Some(name), None) => Some(PasswordFrom::Env(name)),
        (None, Some(path)) => Some(PasswordFrom::File(path)),
        (None, None) => None,
    };
    let timeout = match entry.timeout {
        None => DEFAULT_TIMEOUT,
        Some(text) => capable_core::internal::time::parse_duration(&text)
            .map_err(|e| format!("store.timeout: {e}"))?,
    };
    if timeout.is_zero() || timeout > MAX_TIMEOUT {
        return Err(format!(
            "store.timeout must be more than zero and at most {}s",
            MAX_TIMEOUT.as_secs()
        ));
    }
    let when_down = match entry.when_down.as_deref() {
        None | Some("open") => WhenDown::Open,
        Some("closed") => WhenDown::Closed,
        Some(other) => return Err(format!("store.whenDown {other:?}: \"open\" or \"closed\"")),
    };
    Ok(StoreConfig {
        redis: entry.redis,
        password,
        timeout,
        when_down,
    })
}

impl StoreConfig {
    /// The password, read from where the config says (`None`: the config names none).
    /// The error says where it looked, never what it found.
    pub fn read_password(&self) -> Result<Option<String>, String> {
        match &self.password {
            None => Ok(None),
            Some(PasswordFrom::Env(name)) => match std::env::var(name) {
                Ok(value) if !value.is_empty() => Ok(Some(value)),
                _ => Err(format!(
                    "gateway.store.passwordEnv: the variable {name} is not set"
                )),
            },
            Some(PasswordFrom::File(path)) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("gateway.store.passwordFile {}: {e}", path.display()))?;
                let text = text.strip_suffix('\n').unwrap_or(&text);
                let text = text.strip_suffix('\r').unwrap_or(text);
                if text.is_empty() {
                    return Err(format!(
                        "gateway.store.passwordFile {} is empty",
                        path.display()
                    ));
                }
                Ok(Some(text.to_owned()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_store_names_redis_its_password_source_timeout_and_what_holds_when_it_is_down() {
        let s = store(
            &json!({"redis": "redis://10.0.0.7:6379/2", "passwordEnv": "PW",
            "timeout": "250ms", "whenDown": "closed"}),
        )
        .unwrap();
        assert_eq!(s.redis, "redis://10.0.0.7:6379/2");
        assert_eq!(s.password, Some(PasswordFrom::Env("PW".into())));
        assert_eq!(s.timeout, Duration::from_millis(250));
        assert_eq!(s.when_down, WhenDown::Closed);
        let plain = store(&json!({"redis": "redis://127.0.0.1"})).unwrap();
        assert_eq!(
            (plain.timeout, plain.when_down, plain.password),
            (DEFAULT_TIMEOUT, WhenDown::Open, None)
        );
    }

    #[test]
    fn a_password_in_the_url_is_refused_without_being_repeated() {
        let why = store(&json!({"redis": "redis://app:hunter2@10.0.0.7/0"})).unwrap_err();
        assert!(why.contains("passwordEnv"), "{why}");
        assert!(!why.contains("hunter2"), "{why}");
        for bad in [
            json!({"redis": "http://10.0.0.7"}),
            json!({"redis": "not a url"}),
            json!({"redis": "redis://x", "passwordEnv": "A", "passwordFile": "/b"}),
            json!({"redis": "redis://x", "timeout": "0s"}),
            json!({"redis": "redis://x", "timeout": "1m"}),
            json!({"redis": "redis://x", "whenDown": "maybe"}),
            json!({"redis": "redis://x", "url": "redis://y"}),
            json!({}),
        ] {
            assert!(store(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_password_is_read_from_its_file_or_variable_and_never_shown() {
        let dir = std::env::temp_dir().join(format!("capable-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("pw");
        std::fs::write(&file, "s3cret-word\n").unwrap();
        let mut s = store(&json!({"redis": "redis://x"})).unwrap();
        s.password = Some(PasswordFrom::File(file.clone()));
        assert_eq!(s.read_password().unwrap().as_deref(), Some("s3cret-word"));
        std::fs::write(&file, "").unwrap();
        assert!(s.read_password().unwrap_err().contains("empty"));
        s.password = Some(PasswordFrom::Env("CAPABLE_TEST_STORE_PW_UNSET".into()));
        let why = s.read_password().unwrap_err();
        assert!(why.contains("CAPABLE_TEST_STORE_PW_UNSET"), "{why}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
