//! Reading the files capable is given: regular files only, each kind bounded.
//!
//! Every file capable reads from disk — a config, the token store, a cached tool
//! list, a private key or an assertion, the arguments of a call — goes through
//! [`read`], which reads it only when it is what such a file can be:
//!
//! - **a regular file** (after following symlinks). A FIFO, a socket, a device or a
//!   directory is refused at once, from its metadata, without opening it: `/dev/zero`
//!   would never end and a FIFO would wait for a writer forever. A symlink loop is
//!   refused the same way.
//! - **no larger than its kind's limit** ([`FileKind::limit`]), checked against the
//!   size the file system reports, then again while reading (a file in `/proc` says
//!   it is empty): reading stops one byte past the limit, so memory stays bounded
//!   whatever the file claims.
//! - **private**, for the token store ([`FileKind::Credentials`]): a store whose mode
//!   lets its group or anyone else read or write it is refused, not read and not
//!   repaired — its tokens may already have been read, and a store others can write
//!   may hold tokens they chose. `chmod 600 FILE` (capable writes it so) makes it
//!   usable again.
//!
//! | kind | the files | limit |
//! |---|---|---|
//! | [`Config`](FileKind::Config) | MCP config files (`--config`, `.mcp.json`, …) | 4 MiB |
//! | [`Credentials`](FileKind::Credentials) | the token store (`--token-store`) | 4 MiB, mode `0600` or stricter |
//! | [`Cache`](FileKind::Cache) | a host's cache of a server's answers (the CLI's kept tool lists) | 16 MiB |
//! | [`Secret`](FileKind::Secret) | a private key, a workload assertion, an ID token | 64 KiB |
//! | [`Arguments`](FileKind::Arguments) | the arguments of a call (`--args @FILE`) | 64 MiB |
//!
//! A refusal is a [`Refused`]: it names the file, its kind and why, and nothing was
//! read (so nothing derived from it is written either). Inside an [`io::Error`] (the
//! [`CredentialStore`](crate::auth::CredentialStore) trait speaks `io::Result`), it is
//! found again with [`Refused::within`].
//!
//! ```no_run
//! use capable::file::{self, FileKind};
//!
//! match file::read("/dev/zero".as_ref(), FileKind::Config) {
//!     // "/dev/zero: a character device, not a regular file; a config file must be …"
//!     Err(file::FileError::Refused(why)) => eprintln!("{why}"),
//!     Err(other) => eprintln!("{other}"),
//!     Ok(bytes) => println!("{} bytes", bytes.len()),
//! }
//! ```

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// What a file is for: its size limit, and whether it must be private.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileKind {
    /// An MCP config file: 4 MiB.
    Config,
    /// The token store: 4 MiB, and readable and writable by its owner alone.
    Credentials,
    /// A host's cache of what a server answered: 16 MiB.
    Cache,
    /// A private key, a workload identity assertion, an ID token: 64 KiB.
    Secret,
    /// The arguments of a tool call or a prompt: 64 MiB (the default largest message).
    Arguments,
}

impl FileKind {
    /// The most bytes a file of this kind may hold.
    pub const fn limit(self) -> u64 {
        match self {
            FileKind::Config | FileKind::Credentials => 4 << 20,
            FileKind::Cache => 16 << 20,
            FileKind::Secret => 64 << 10,
            FileKind::Arguments => 64 << 20,
        }
    }

    /// Whether group and others must have no access at all.
    const fn private(self) -> bool {
        matches!(self, FileKind::Credentials)
    }

    fn with_article(self) -> &'static str {
        match self {
            FileKind::Config => "a config file",
            FileKind::Credentials => "the token store",
            FileKind::Cache => "a cache file",
            FileKind::Secret => "a key or token file",
            FileKind::Arguments => "an arguments file",
        }
    }
}

/// Why a file was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// Not a regular file: what it is instead (`a FIFO`, `a directory`, …).
    NotRegular(&'static str),
    /// Its symlinks lead back to themselves.
    SymlinkLoop,
    /// Larger than its kind allows.
    TooLarge {
        /// The kind's limit, in bytes.
        limit: u64,
    },
    /// A file that must be private lets its group or others in (its mode bits).
    OpenToOthers {
        /// The permission bits found.
        mode: u32,
    },
}

/// A file refused for what it is, before anything of it was used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {}", path.display(), self.explain())]
pub struct Refused {
    /// The file, as it was named.
    pub path: PathBuf,
    /// What it was to be read as.
    pub kind: FileKind,
    /// Why it was refused.
    pub reason: Reason,
}

impl Refused {
    fn explain(&self) -> String {
        let a_kind = self.kind.with_article();
        match &self.reason {
            Reason::NotRegular(what) => {
                format!("{what}, not a regular file; {a_kind} must be a regular file (nothing was read)")
            }
            Reason::SymlinkLoop => format!("a loop of symbolic links; {a_kind} must be a regular file"),
            Reason::TooLarge { limit } => format!(
                "larger than {a_kind} may be ({}); refused, nothing of it used",
                human_size(*limit)
            ),
            Reason::OpenToOthers { mode } => format!(
                "mode {mode:04o} lets others read or change it, and {a_kind} must be private; refused without reading it (`chmod 600` it)"
            ),
        }
    }

    /// The refusal inside an [`io::Error`] made from a [`FileError`], if that is what it
    /// carries.
    pub fn within(error: &io::Error) -> Option<&Refused> {
        error.get_ref()?.downcast_ref::<Refused>()
    }
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// Refused for what it is (nothing was read).
    #[error(transparent)]
    Refused(#[from] Refused),
    /// The file system's error (not found, no permission, …) or text that is not
    /// UTF-8 ([`read_to_string`]).
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl FileError {
    /// Whether the file does not exist (callers with a default treat it as empty).
    pub fn is_not_found(&self) -> bool {
        matches!(self, FileError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

/// An [`io::Error`] of the same kind: a refusal as `InvalidInput` carrying the
/// [`Refused`] (see [`Refused::within`]), a file system error as it was.
impl From<FileError> for io::Error {
    fn from(e: FileError) -> io::Error {
        match e {
            FileError::Refused(r) => io::Error::new(io::ErrorKind::InvalidInput, r),
            FileError::Io { source, .. } => source,
        }
    }
}

/// Reads the file at `path` as a `kind` (see the module documentation for what is
/// refused).
pub fn read(path: &Path, kind: FileKind) -> Result<Vec<u8>, FileError> {
    let io_error = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    // What the path names, from its metadata alone: a FIFO or a device is never opened.
    accept(
        path,
        kind,
        &std::fs::metadata(path).map_err(|e| io_or_loop(path, kind, e))?,
    )?;
    let mut file = open(path).map_err(|e| io_or_loop(path, kind, e))?;
    // The file opened may not be the one looked at (it was replaced meanwhile).
    let meta = file.metadata().map_err(io_error)?;
    accept(path, kind, &meta)?;
    let limit = kind.limit();
    let mut bytes = Vec::with_capacity(meta.len().min(limit) as usize);
    (&mut file)
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > limit {
        return Err(refused(path, kind, Reason::TooLarge { limit }));
    }
    Ok(bytes)
}

/// [`read`], as UTF-8 text.
pub fn read_to_string(path: &Path, kind: FileKind) -> Result<String, FileError> {
    String::from_utf8(read(path, kind)?).map_err(|e| FileError::Io {
        path: path.to_path_buf(),
        source: io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()),
    })
}

/// Checks, from its metadata alone, what [`read`] would refuse: `Ok(false)` when there
/// is no file, `Ok(true)` when there is an acceptable one. For a writer that must not
/// create anything beside a file it would refuse (a lock next to the token store).
pub fn check(path: &Path, kind: FileKind) -> Result<bool, FileError> {
    match std::fs::metadata(path) {
        Ok(meta) => accept(path, kind, &meta).map(|()| true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_or_loop(path, kind, e)),
    }
}

fn refused(path: &Path, kind: FileKind, reason: Reason) -> FileError {
    FileError::Refused(Refused {
        path: path.to_path_buf(),
        kind,
        reason,
    })
}

/// Whether `meta` is what a `kind` can be.
fn accept(path: &Path, kind: FileKind, meta: &Metadata) -> Result<(), FileError> {
    if let Some(what) = not_regular(meta) {
        return Err(refused(path, kind, Reason::NotRegular(what)));
    }
    if meta.len() > kind.limit() {
        return Err(refused(
            path,
            kind,
            Reason::TooLarge {
                limit: kind.limit(),
            },
        ));
    }
    #[cfg(unix)]
    if kind.private() {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(refused(path, kind, Reason::OpenToOthers { mode }));
        }
    }
    Ok(())
}

/// What a non-regular file is, in words.
fn not_regular(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
    }
    Some("not a regular file")
}

/// A symlink loop as a refusal; any other error as it is.
fn io_or_loop(path: &Path, kind: FileKind, e: io::Error) -> FileError {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return refused(path, kind, Reason::SymlinkLoop);
    }
    FileError::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

/// Opens for reading without waiting: should a FIFO take the file's place between the
/// look and the open, the open returns at once (and the second look refuses it).
fn open(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options.open(path)
}

fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "capable-file-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn reason(r: Result<Vec<u8>, FileError>) -> Reason {
        match r {
            Err(FileError::Refused(r)) => r.reason,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn a_regular_file_within_its_limit_is_read() {
        let d = dir();
        let path = d.join("mcp.json");
        std::fs::write(&path, b"{\"mcpServers\": {}}").unwrap();
        assert_eq!(
            read(&path, FileKind::Config).unwrap(),
            b"{\"mcpServers\": {}}"
        );
        // Through a symlink too.
        std::os::unix::fs::symlink(&path, d.join("link.json")).unwrap();
        assert_eq!(
            read_to_string(&d.join("link.json"), FileKind::Config)
                .unwrap()
                .len(),
            18
        );
    }

    #[test]
    fn devices_fifos_directories_and_loops_are_refused_at_once() {
        let d = dir();
        assert_eq!(
            reason(read(Path::new("/dev/zero"), FileKind::Config)),
            Reason::NotRegular("a character device")
        );
        assert_eq!(
            reason(read(&d, FileKind::Config)),
            Reason::NotRegular("a directory")
        );
        let fifo = d.join("fifo");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        // No writer: a plain open would wait forever.
        assert_eq!(
            reason(read(&fifo, FileKind::Secret)),
            Reason::NotRegular("a FIFO (named pipe)")
        );
        std::os::unix::fs::symlink(d.join("b"), d.join("a")).unwrap();
        std::os::unix::fs::symlink(d.join("a"), d.join("b")).unwrap();
        assert_eq!(
            reason(read(&d.join("a"), FileKind::Config)),
            Reason::SymlinkLoop
        );
        assert!(read(&d.join("missing"), FileKind::Config)
            .unwrap_err()
            .is_not_found());
        assert!(!check(&d.join("missing"), FileKind::Credentials).unwrap());
    }

    #[test]
    fn a_file_larger_than_its_kind_is_refused_and_a_lying_size_is_cut_short() {
        let d = dir();
        let path = d.join("key.pem");
        std::fs::write(&path, vec![b'k'; (FileKind::Secret.limit() + 1) as usize]).unwrap();
        assert_eq!(
            reason(read(&path, FileKind::Secret)),
            Reason::TooLarge { limit: 64 << 10 }
        );
        assert_eq!(read(&path, FileKind::Config).unwrap().len(), (64 << 10) + 1);
        // /proc files report a size of 0: the read itself stops at the limit.
        let status = read(Path::new("/proc/self/status"), FileKind::Config).unwrap();
        assert!(!status.is_empty());
    }

    #[test]
    fn a_token_store_others_can_open_is_refused_and_the_refusal_survives_io_error() {
        let d = dir();
        let path = d.join("credentials.json");
        std::fs::write(&path, b"{}").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            reason(read(&path, FileKind::Credentials)),
            Reason::OpenToOthers { mode: 0o644 }
        );
        // The same file is fine as a config: only the token store must be private.
        assert!(read(&path, FileKind::Config).is_ok());
        let err: io::Error = read(&path, FileKind::Credentials).unwrap_err().into();
        let refused = Refused::within(&err).expect("the refusal is kept");
        assert!(
            refused.to_string().contains("credentials.json"),
            "{refused}"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(check(&path, FileKind::Credentials).unwrap());
    }
}
