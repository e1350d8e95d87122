//! The host's ends of stdio, on the runtime's reactor: a pipe (what most hosts give
//! their servers) or a socket (Node's child processes) is read and written without
//! blocking, where tokio's own `stdin()`/`stdout()` hand every read and every write to
//! a thread of the blocking pool and wait for it — a thread hand-off per message, both
//! ways. Anything else (a terminal, a file, `/dev/null`) goes through tokio's stdio as
//! before: those are not pollable, and nobody pipelines through them.
//!
//! Non-blocking is a flag of the open pipe or socket, which another process may share
//! (a shell's pipeline hands the same pipe to what runs after the bridge): the bridge
//! sets it only while it serves, and [`Stdio`] puts back the blocking mode it found
//! when it is dropped.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::FileTypeExt;

use tokio::io::{AsyncRead, AsyncWrite};

/// The host's messages come from here.
pub type Input = Box<dyn AsyncRead + Unpin + Send>;
/// The bridge's messages for the host go here.
pub type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// Stdin and stdout for the host, on the reactor where they can be; dropped, it puts
/// their blocking mode back as it found it.
pub struct Stdio {
    /// Stdin.
    pub input: Input,
    /// Stdout.
    pub output: Output,
    /// The standard streams made non-blocking here.
    made_nonblocking: Vec<RawFd>,
}

impl Stdio {
    /// Stdin and stdout, each on the reactor when it is a pipe or a socket.
    pub fn open() -> Stdio {
        let mut made_nonblocking = Vec::new();
        let stdin = std::io::stdin();
        let input = match polled(stdin.as_fd(), &mut made_nonblocking, |fd| match fd {
            Kind::Pipe(fd) => {
                tokio::net::unix::pipe::Receiver::from_owned_fd(fd).map(|p| Box::new(p) as _)
            }
            Kind::Socket(fd) => socket(fd).map(|s| Box::new(s) as _),
        }) {
            Some(input) => input,
            None => Box::new(tokio::io::stdin()) as Input,
        };
        let stdout = std::io::stdout();
        let output = match polled(stdout.as_fd(), &mut made_nonblocking, |fd| match fd {
            Kind::Pipe(fd) => {
                tokio::net::unix::pipe::Sender::from_owned_fd(fd).map(|p| Box::new(p) as _)
            }
            Kind::Socket(fd) => socket(fd).map(|s| Box::new(s) as _),
        }) {
            Some(output) => output,
            None => Box::new(tokio::io::stdout()) as Output,
        };
        Stdio {
            input,
            output,
            made_nonblocking,
        }
    }
}

impl Drop for Stdio {
    fn drop(&mut self) {
        for &fd in &self.made_nonblocking {
            make_blocking(fd);
        }
    }
}

/// A pollable standard stream.
enum Kind {
    Pipe(OwnedFd),
    Socket(OwnedFd),
}

/// `fd` made into what `open` makes of it when it is a pipe or a socket that was
/// blocking (noted in `made`); `None` for anything else, or when that fails.
fn polled<T>(
    fd: BorrowedFd<'_>,
    made: &mut Vec<RawFd>,
    open: impl FnOnce(Kind) -> std::io::Result<T>,
) -> Option<T> {
    let raw = fd.as_raw_fd();
    let was_blocking = flags(raw)? & libc::O_NONBLOCK == 0;
    let file = File::from(fd.try_clone_to_owned().ok()?);
    let kind = match file.metadata().ok()?.file_type() {
        t if t.is_fifo() => Kind::Pipe(file.into()),
        t if t.is_socket() => Kind::Socket(file.into()),
        _ => return None,
    };
    let opened = open(kind);
    let set_here = was_blocking && flags(raw).is_some_and(|f| f & libc::O_NONBLOCK != 0);
    match opened {
        Ok(stream) => {
            if set_here {
                made.push(raw);
            }
            Some(stream)
        }
        // tokio's stdio, which takes over, reads and writes in blocking mode.
        Err(_) => {
            if set_here {
                make_blocking(raw);
            }
            None
        }
    }
}

/// A socket, non-blocking, on the reactor (a Unix stream: reads and writes are all the
/// bridge does with it, whatever its family).
fn socket(fd: OwnedFd) -> std::io::Result<tokio::net::UnixStream> {
    let socket = std::os::unix::net::UnixStream::from(fd);
    socket.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(socket)
}

/// The file status flags of `fd`.
fn flags(fd: RawFd) -> Option<libc::c_int> {
    // SAFETY: F_GETFL reads the flags of a descriptor this process has open (a
    // standard stream); it touches no memory.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    (flags >= 0).then_some(flags)
}

/// Clears `O_NONBLOCK` on `fd`.
fn make_blocking(fd: RawFd) {
    if let Some(flags) = flags(fd) {
        // SAFETY: F_SETFL on a standard stream this process has open, with the flags
        // it has less O_NONBLOCK; it touches no memory.
        unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) };
    }
}
