//! The callers' tokens of `user` servers kept across restarts ([`Kept`]): one line a
//! token, each the core's seal ([`SealKind::UserToken`], AES-256-GCM-SIV under the
//! bridge's seal key) of `{"caller": …, "token": …}`. Nothing in the file reads
//! without the key; a line sealed under a key the ring no longer holds, changed, or of
//! another kind is skipped. The file is written whole, to a temporary file renamed over
//! it (owner-only on Unix).

use std::io::Write;
use std::path::PathBuf;

use std::io;
use std::sync::{Arc, OnceLock, Weak};

use capable::auth::store::StoreLock;
use capable::auth::{CredentialKey, CredentialStore, Registration, StoredToken};
use capable::internal::seal::{open, seal, KeyRing, SealKind};
use serde::{Deserialize, Serialize};

/// The most bytes of the file read at start.
const MAX_FILE: u64 = 64 << 20;

/// The most tokens read from it.
const MAX_TOKENS: usize = 100_000;

/// Where the tokens are kept, and the key ring they are sealed with.
pub struct Kept {
    path: PathBuf,
    ring: KeyRing,
    /// One write at a time, each of the latest tokens.
    writing: std::sync::Mutex<()>,
}

#[derive(Serialize, Deserialize)]
struct Line {
    caller: String,
    token: StoredToken,
}

/// What a read of the file found.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The tokens, each with its caller's key.
    pub tokens: Vec<(String, StoredToken)>,
    /// Lines that did not open (another key, changed, not a seal).
    pub skipped: usize,
}

impl Kept {
    /// The file at `path`, sealed with `ring`.
    pub fn new(path: PathBuf, ring: KeyRing) -> Kept {
        Kept {
            path,
            ring,
            writing: std::sync::Mutex::new(()),
        }
    }

    /// The tokens in the file (none when it does not exist yet).
    pub fn load(&self) -> Result<Loaded, String> {
        let file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
            Err(e) => return Err(format!("{}: {e}", self.path.display())),
        };
        let mut text = String::new();
        use std::io::Read;
        file.take(MAX_FILE)
            .read_to_string(&mut text)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        let mut loaded = Loaded::default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            if loaded.tokens.len() >= MAX_TOKENS {
                break;
            }
            let opened = open(&self.ring, SealKind::UserToken, line.trim())
                .ok()
                .and_then(|plain| serde_json::from_slice::<Line>(&plain).ok());
            match opened {
                Some(line) => loaded.tokens.push((line.caller, line.token)),
                None => loaded.skipped += 1,
            }
        }
        Ok(loaded)
    }

    /// Writes `tokens` (each with its caller's key) as the whole file; a token too large
    /// to seal is left out (its caller logs in again after a restart).
    pub fn save(&self, tokens: impl FnOnce() -> Vec<(String, StoredToken)>) -> Result<(), String> {
        let _one = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        let mut text = String::new();
        for (caller, token) in tokens() {
            let Ok(plain) = serde_json::to_vec(&Line { caller, token }) else {
                continue;
            };
            if let Ok(sealed) = seal(&self.ring, SealKind::UserToken, &plain) {
                text.push_str(&sealed);
                text.push('\n');
            }
        }
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let temporary = self
            .path
            .with_file_name(format!(".{}.tmp", name.unwrap_or_else(|| "tokens".into())));
        let said = |e: std::io::Error| format!("{}: {e}", self.path.display());
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&temporary).map_err(said)?;
        file.write_all(text.as_bytes()).map_err(said)?;
        file.sync_all().map_err(said)?;
        std::fs::rename(&temporary, &self.path).map_err(said)
    }
}

/// One caller's tokens in memory; each change (a login, a refresh, a token dropped)
/// written to the file at once, through `flush`, so that a refresh that rotates the
/// refresh token is never lost to a restart.
pub struct CallerStore {
    inner: capable::auth::MemoryStore,
    flush: Arc<Flush>,
}

/// Writes every caller's tokens to the file, once there is one ([`Flush::to`]).
#[derive(Default)]
pub struct Flush(OnceLock<Weak<super::Users>>);

impl Flush {
    /// From now on, `users`' tokens are written on every change.
    pub fn to(&self, users: &Arc<super::Users>) {
        let _ = self.0.set(Arc::downgrade(users));
    }
}

impl CallerStore {
    /// An empty store, written through `flush`.
    pub fn new(flush: Arc<Flush>) -> CallerStore {
        CallerStore {
            inner: capable::auth::MemoryStore::new(),
            flush,
        }
    }

    fn changed(&self) {
        if let Some(users) = self.flush.0.get().and_then(Weak::upgrade) {
            let _ = users.save();
        }
    }
}

impl CredentialStore for CallerStore {
    fn tokens_for(&self, server: &str) -> io::Result<Vec<StoredToken>> {
        self.inner.tokens_for(server)
    }
    fn token(&self, key: &CredentialKey) -> io::Result<Option<StoredToken>> {
        self.inner.token(key)
    }
    fn put_token(&self, token: &StoredToken) -> io::Result<()> {
        self.inner.put_token(token)?;
        self.changed();
        Ok(())
    }
    fn remove_token(&self, key: &CredentialKey) -> io::Result<bool> {
        let removed = self.inner.remove_token(key)?;
        self.changed();
        Ok(removed)
    }
    fn all_tokens(&self) -> io::Result<Vec<StoredToken>> {
        self.inner.all_tokens()
    }
    fn registration(&self, issuer: &str) -> io::Result<Option<Registration>> {
        self.inner.registration(issuer)
    }
    fn put_registration(&self, registration: &Registration) -> io::Result<()> {
        self.inner.put_registration(registration)
    }
    fn remove_registration(&self, issuer: &str) -> io::Result<bool> {
        self.inner.remove_registration(issuer)
    }
    fn lock(&self) -> io::Result<StoreLock> {
        self.inner.lock()
    }
    fn describe(&self) -> String {
        "the gateway's memory, per caller".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capable::internal::seal::SealKey;

    fn token(access: &str) -> StoredToken {
        let text = format!(
            r#"{{"resource":"https://up/mcp","issuer":"https://as","server":"https://up/mcp",
                "client_id":"c","token":{{"access_token":"{access}","token_type":"Bearer","received_at":1}}}}"#
        );
        serde_json::from_str(&text).unwrap()
    }

    fn ring(byte: u8) -> KeyRing {
        KeyRing::new(SealKey::from_bytes(&[byte; 32]), Vec::new())
    }

    #[test]
    fn tokens_are_read_back_only_with_the_key_they_were_sealed_with() {
        let path = std::env::temp_dir().join(format!("capable-kept-{}", std::process::id()));
        let kept = Kept::new(path.clone(), ring(1));
        assert!(kept.load().unwrap().tokens.is_empty(), "no file yet");
        kept.save(|| {
            vec![
                ("alice".into(), token("secret-a")),
                ("bob".into(), token("secret-b")),
            ]
        })
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("secret-a") && !text.contains("alice"));
        let loaded = kept.load().unwrap();
        assert_eq!(loaded.tokens.len(), 2);
        assert_eq!(loaded.tokens[0].0, "alice");
        assert_eq!(loaded.tokens[0].1.token.access_token, "secret-a");
        let key = CredentialKey {
            resource: "https://up/mcp".into(),
            issuer: "https://as".into(),
        };
        assert_eq!(loaded.tokens[1].1.key, key);
        // Another key opens nothing.
        let other = Kept::new(path.clone(), ring(2)).load().unwrap();
        assert!(other.tokens.is_empty());
        assert_eq!(other.skipped, 2);
        let _ = std::fs::remove_file(&path);
    }
}
