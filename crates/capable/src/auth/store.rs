//! Where credentials live between runs.
//!
//! A [`CredentialStore`] keeps tokens keyed by (resource, issuer) — a token is only
//! ever presented to the resource it was issued for, by the server that issued it —
//! and client registrations keyed by issuer (a registration is never offered to
//! another authorization server). Hosts bring their own (a keyring, a database) by
//! implementing the trait; [`FileStore`] is the default and [`MemoryStore`] keeps
//! nothing past the process.
//!
//! [`FileStore`] is one JSON file, mode 0600 in a 0700 directory, written atomically
//! (a temporary file in the same directory, synced, then renamed over the old one),
//! read as a [`FileKind::Credentials`](crate::file::FileKind::Credentials): a store
//! that is not a regular file, is too large, or that others may open is refused.
//! [`CredentialStore::lock`] takes an exclusive `flock` on a sibling lock file, held
//! across reload → refresh → save, so two processes never both spend a rotating
//! refresh token.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use capable_core::internal::auth::{AuthMethod, Registration, Token};
use serde::{Deserialize, Serialize};

/// The key of a stored token.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CredentialKey {
    /// The protected resource (RFC 8707) the token is for.
    pub resource: String,
    /// The authorization server that issued it.
    pub issuer: String,
}

/// A token as stored: what it is for and how it was obtained.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredToken {
    /// Its key.
    #[serde(flatten)]
    pub key: CredentialKey,
    /// The MCP server URL it was obtained for (how a later run finds it).
    pub server: String,
    /// The client id it was issued to.
    pub client_id: String,
    /// The token.
    pub token: Token,
    /// The DPoP key it is bound to (PKCS#8, base64), for a DPoP token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<String>,
    /// Where it is refreshed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// How the client authenticated when it got the token (a refresh does the same;
    /// a dynamic registration keeps its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_auth: Option<AuthMethod>,
    /// Where it is revoked at logout (RFC 7009), when the server offers that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
}

impl std::fmt::Debug for StoredToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredToken")
            .field("key", &self.key)
            .field("server", &self.server)
            .field("client_id", &self.client_id)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

/// An exclusive hold on a store, released when dropped.
pub type StoreLock = Box<dyn Send + Sync>;

/// Storage for tokens and client registrations. Every method is quick and blocking
/// except [`CredentialStore::lock`], which may wait for another process (it is called
/// off the async threads).
pub trait CredentialStore: Send + Sync + 'static {
    /// The tokens obtained for MCP server `server`, newest last.
    fn tokens_for(&self, server: &str) -> io::Result<Vec<StoredToken>>;
    /// The token stored under `key`.
    fn token(&self, key: &CredentialKey) -> io::Result<Option<StoredToken>>;
    /// Stores a token (replacing the one under its key).
    fn put_token(&self, token: &StoredToken) -> io::Result<()>;
    /// Removes the token under `key`; whether there was one.
    fn remove_token(&self, key: &CredentialKey) -> io::Result<bool>;
    /// Every stored token.
    fn all_tokens(&self) -> io::Result<Vec<StoredToken>>;
    /// The registration kept for `issuer`.
    fn registration(&self, issuer: &str) -> io::Result<Option<Registration>>;
    /// Keeps a registration (replacing the one for its issuer).
    fn put_registration(&self, registration: &Registration) -> io::Result<()>;
    /// Forgets the registration for `issuer`.
    fn remove_registration(&self, issuer: &str) -> io::Result<bool>;
    /// An exclusive hold across processes (see the module documentation).
    fn lock(&self) -> io::Result<StoreLock>;
    /// Where it is, in words (`status` shows it).
    fn describe(&self) -> String;
}

#[derive(Clone, Default, Serialize, Deserialize)]
struct Document {
    #[serde(default)]
    version: u32,
    #[serde(default)]
    tokens: Vec<StoredToken>,
    #[serde(default)]
    clients: Vec<Registration>,
}

impl Document {
    fn put_token(&mut self, token: &StoredToken) {
        self.tokens.retain(|t| t.key != token.key);
        self.tokens.push(token.clone());
    }

    fn remove_token(&mut self, key: &CredentialKey) -> bool {
        let before = self.tokens.len();
        self.tokens.retain(|t| &t.key != key);
        before != self.tokens.len()
    }

    fn put_registration(&mut self, r: &Registration) {
        self.clients.retain(|c| c.issuer != r.issuer);
        self.clients.push(r.clone());
    }

    fn remove_registration(&mut self, issuer: &str) -> bool {
        let before = self.clients.len();
        self.clients.retain(|c| c.issuer != issuer);
        before != self.clients.len()
    }
}

/// Keeps credentials in memory only.
#[derive(Default)]
pub struct MemoryStore {
    doc: Mutex<Document>,
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn doc(&self) -> std::sync::MutexGuard<'_, Document> {
        self.doc.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl CredentialStore for MemoryStore {
    fn tokens_for(&self, server: &str) -> io::Result<Vec<StoredToken>> {
        Ok(self
            .doc()
            .tokens
            .iter()
            .filter(|t| t.server == server)
            .cloned()
            .collect())
    }
    fn token(&self, key: &CredentialKey) -> io::Result<Option<StoredToken>> {
        Ok(self.doc().tokens.iter().find(|t| &t.key == key).cloned())
    }
    fn put_token(&self, token: &StoredToken) -> io::Result<()> {
        self.doc().put_token(token);
        Ok(())
    }
    fn remove_token(&self, key: &CredentialKey) -> io::Result<bool> {
        Ok(self.doc().remove_token(key))
    }
    fn all_tokens(&self) -> io::Result<Vec<StoredToken>> {
        Ok(self.doc().tokens.clone())
    }
    fn registration(&self, issuer: &str) -> io::Result<Option<Registration>> {
        Ok(self
            .doc()
            .clients
            .iter()
            .find(|c| c.issuer == issuer)
            .cloned())
    }
    fn put_registration(&self, registration: &Registration) -> io::Result<()> {
        self.doc().put_registration(registration);
        Ok(())
    }
    fn remove_registration(&self, issuer: &str) -> io::Result<bool> {
        Ok(self.doc().remove_registration(issuer))
    }
    fn lock(&self) -> io::Result<StoreLock> {
        let guard = loop {
            if let Ok(g) = self.lock.clone().try_lock_owned() {
                break g;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        Ok(Box::new(guard))
    }
    fn describe(&self) -> String {
        "memory (not kept)".into()
    }
}

/// Credentials in one JSON file (see the module documentation).
pub struct FileStore {
    path: PathBuf,
}

impl FileStore {
    /// A store in `path` (created on first write, with its directory).
    pub fn new(path: impl Into<PathBuf>) -> FileStore {
        FileStore { path: path.into() }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> io::Result<Document> {
        match crate::file::read(&self.path, crate::file::FileKind::Credentials) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(Document::default()),
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} is not a credential file: {e}", self.path.display()),
                )
            }),
            Err(e) if e.is_not_found() => Ok(Document::default()),
            Err(e) => Err(e.into()),
        }
    }

    fn write(&self, doc: &Document) -> io::Result<()> {
        use std::io::Write;
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        create_private_dir(dir)?;
        let mut doc = doc.clone();
        doc.version = 1;
        let bytes = serde_json::to_vec_pretty(&doc).map_err(io::Error::other)?;
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("credentials");
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let mut file = private_file(&tmp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, &self.path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }

    fn update<T>(&self, f: impl FnOnce(&mut Document) -> T) -> io::Result<T> {
        let mut doc = self.read()?;
        let out = f(&mut doc);
        self.write(&doc)?;
        Ok(out)
    }
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

fn private_file(path: &Path) -> io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

impl CredentialStore for FileStore {
    fn tokens_for(&self, server: &str) -> io::Result<Vec<StoredToken>> {
        Ok(self
            .read()?
            .tokens
            .into_iter()
            .filter(|t| t.server == server)
            .collect())
    }
    fn token(&self, key: &CredentialKey) -> io::Result<Option<StoredToken>> {
        Ok(self.read()?.tokens.into_iter().find(|t| &t.key == key))
    }
    fn put_token(&self, token: &StoredToken) -> io::Result<()> {
        self.update(|d| d.put_token(token))
    }
    fn remove_token(&self, key: &CredentialKey) -> io::Result<bool> {
        self.update(|d| d.remove_token(key))
    }
    fn all_tokens(&self) -> io::Result<Vec<StoredToken>> {
        Ok(self.read()?.tokens)
    }
    fn registration(&self, issuer: &str) -> io::Result<Option<Registration>> {
        Ok(self
            .read()?
            .clients
            .into_iter()
            .find(|c| c.issuer == issuer))
    }
    fn put_registration(&self, registration: &Registration) -> io::Result<()> {
        self.update(|d| d.put_registration(registration))
    }
    fn remove_registration(&self, issuer: &str) -> io::Result<bool> {
        self.update(|d| d.remove_registration(issuer))
    }
    fn lock(&self) -> io::Result<StoreLock> {
        // A store that would be refused gets no lock file beside it either.
        crate::file::check(&self.path, crate::file::FileKind::Credentials)?;
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        create_private_dir(dir)?;
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(".lock");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(name))?;
        flock(&file)?;
        Ok(Box::new(file))
    }
    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

/// An exclusive `flock`, released when the file is closed.
#[cfg(unix)]
fn flock(file: &std::fs::File) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    loop {
        // SAFETY: a valid, open descriptor owned by `file`.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(not(unix))]
fn flock(_file: &std::fs::File) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use capable_core::internal::auth::RegistrationSource;

    fn token(resource: &str, issuer: &str, access: &str) -> StoredToken {
        StoredToken {
            key: CredentialKey {
                resource: resource.into(),
                issuer: issuer.into(),
            },
            server: "https://mcp.test/mcp".into(),
            client_id: "c".into(),
            token: Token {
                access_token: access.into(),
                token_type: "Bearer".into(),
                refresh_token: Some("refresh-secret".into()),
                expires_at: Some(10),
                scope: None,
                requested_scope: None,
                received_at: 1,
            },
            dpop_key: None,
            token_endpoint: None,
            client_auth: None,
            revocation_endpoint: None,
        }
    }

    #[test]
    fn a_file_store_is_private_atomic_and_keyed() {
        let dir = std::env::temp_dir().join(format!("capable-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = FileStore::new(dir.join("sub/credentials.json"));
        assert!(store.tokens_for("https://mcp.test/mcp").unwrap().is_empty());
        store.put_token(&token("r", "i1", "a1")).unwrap();
        store.put_token(&token("r", "i2", "a2")).unwrap();
        store.put_token(&token("r", "i1", "a3")).unwrap();
        let all = store.tokens_for("https://mcp.test/mcp").unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].token.access_token, "a3", "newest last");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
            let dir_mode = std::fs::metadata(dir.join("sub"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(dir_mode & 0o777, 0o700);
        }
        let reg = Registration {
            issuer: "i1".into(),
            client_id: "c".into(),
            client_secret: Some("s".into()),
            auth_method: AuthMethod::ClientSecretBasic,
            redirect_uris: vec![],
            grant_types: vec![],
            scope: None,
            source: RegistrationSource::Dynamic,
        };
        store.put_registration(&reg).unwrap();
        assert_eq!(store.registration("i1").unwrap(), Some(reg));
        assert_eq!(store.registration("i2").unwrap(), None);
        assert!(store.remove_token(&all[0].key).unwrap());
        assert!(!store.remove_token(&all[0].key).unwrap());
        assert!(!format!("{:?}", all[1]).contains("refresh-secret"));
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            names.iter().all(|n| !n.to_string_lossy().ends_with(".tmp")),
            "{names:?}"
        );
        let _guard = store.lock().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
