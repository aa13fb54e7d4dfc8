//! The byte stream under a connection: the socket itself, or TLS (a rustls
//! [`ServerConnection`]) over it — with the same socket-like calls either way, so the
//! HTTP/1.1 and HTTP/2 code above never asks which.
//!
//! The plain arm is the system call (`read`, `send` with `MSG_MORE`, `sendmsg` of two
//! buffers, `sendfile`): the branch on `tls` is predictable and sits next to a syscall,
//! so the benchmarked HTTP/1.1 path pays nothing for TLS existing.
//!
//! The TLS arm drives rustls non-blockingly, the way the load engine's `transport`
//! does on the client side: [`Sock::send`] hands plaintext to rustls' `writer()` (it
//! takes up to its 64 KiB buffer limit) and pushes records with `write_tls` until the
//! socket would block; records still held are pushed by [`Sock::flush_tls`], which the
//! connection calls before it considers its output written (and keeps `EPOLLOUT`
//! interest until it is). [`Sock::read`] returns buffered plaintext, or pulls records
//! with `read_tls` + `process_new_packets` until there is plaintext, the socket would
//! block, or EOF; handshake messages rustls produces on the way are pushed at once.
//! Since rustls may hold more plaintext than the caller's buffer took, and a
//! level-triggered epoll says nothing about bytes already read from the socket,
//! [`Sock::has_plaintext`] tells the connection to read again. `sendfile` can't
//! encrypt: over TLS a file body is read with `pread` into a 16 KiB buffer and sent.
//! A peer closing without `close_notify` is a plain EOF (HTTP framing tells a
//! truncated request anyway); closing our side sends `close_notify` first.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;

use rustls::ServerConnection;

use crate::sys;

/// `io::Read`/`io::Write` over a borrowed non-blocking descriptor, for rustls.
struct FdIo(RawFd);

impl Read for FdIo {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        sys::read(self.0, buf)
    }
}

impl Write for FdIo {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        sys::send(self.0, buf, false)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A connection's socket, with TLS when the server has a certificate.
pub(crate) struct Sock {
    fd: OwnedFd,
    /// Boxed: a rustls session is large, plain connections stay small.
    tls: Option<Box<ServerConnection>>,
}

impl std::fmt::Debug for Sock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sock")
            .field("fd", &self.fd)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// The chunk a file body is read in over TLS (a TLS record's worth).
const TLS_FILE_CHUNK: usize = 16 << 10;

impl Sock {
    pub fn plain(fd: OwnedFd) -> Sock {
        Sock { fd, tls: None }
    }

    pub fn tls(fd: OwnedFd, session: ServerConnection) -> Sock {
        Sock {
            fd,
            tls: Some(Box::new(session)),
        }
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Reads plaintext: `Ok(0)` at end of stream, `WouldBlock` when there is none.
    #[inline]
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = self.raw();
        match &mut self.tls {
            None => sys::read(fd, buf),
            Some(tls) => tls_read(tls, fd, buf),
        }
    }

    /// Sends plaintext; `more`: a body follows at once (`MSG_MORE` on a plain socket).
    #[inline]
    pub fn send(&mut self, buf: &[u8], more: bool) -> io::Result<usize> {
        let fd = self.raw();
        match &mut self.tls {
            None => sys::send(fd, buf, more),
            Some(tls) => tls_write(tls, fd, &[buf]),
        }
    }

    /// Sends two buffers in one call (a head and a body kept elsewhere).
    #[inline]
    pub fn send2(&mut self, a: &[u8], b: &[u8]) -> io::Result<usize> {
        let fd = self.raw();
        match &mut self.tls {
            None => sys::send2(fd, a, b),
            Some(tls) => tls_write(tls, fd, &[a, b]),
        }
    }

    /// Sends up to `count` bytes of `file` from `*offset`, advancing it.
    pub fn sendfile(&mut self, file: &File, offset: &mut u64, count: usize) -> io::Result<usize> {
        let fd = self.raw();
        let Some(tls) = &mut self.tls else {
            return sys::sendfile(fd, file.as_raw_fd(), offset, count);
        };
        let mut chunk = [0u8; TLS_FILE_CHUNK];
        let want = count.min(TLS_FILE_CHUNK);
        let n = file.read_at(&mut chunk[..want], *offset)?;
        if n == 0 {
            return Ok(0);
        }
        let taken = tls_write(tls, fd, &[&chunk[..n]])?;
        *offset += taken as u64;
        Ok(taken)
    }

    /// Pushes TLS records rustls still holds: `Ok(true)` when none is left.
    #[inline]
    pub fn flush_tls(&mut self) -> io::Result<bool> {
        let fd = self.raw();
        match &mut self.tls {
            None => Ok(true),
            Some(tls) => match push(tls, fd) {
                Ok(()) => Ok(true),
                Err(e) if sys::would_block(&e) => Ok(false),
                Err(e) => Err(e),
            },
        }
    }

    /// Whether rustls holds decrypted bytes that a `read` has not taken yet.
    pub fn has_plaintext(&mut self) -> bool {
        match &mut self.tls {
            None => false,
            Some(tls) => tls
                .process_new_packets()
                .is_ok_and(|s| s.plaintext_bytes_to_read() > 0),
        }
    }

    /// `None` on a plain socket; over TLS, `Some(None)` while the handshake runs, then
    /// `Some(Some(protocol))` with the protocol chosen by ALPN (empty: none was).
    pub fn alpn(&self) -> Option<Option<&[u8]>> {
        let tls = self.tls.as_ref()?;
        if tls.is_handshaking() {
            return Some(None);
        }
        Some(Some(tls.alpn_protocol().unwrap_or_default()))
    }

    /// Shuts our sending side (after `close_notify` over TLS), for a lingering close.
    pub fn shutdown_write(&mut self) {
        let fd = self.raw();
        if let Some(tls) = &mut self.tls {
            tls.send_close_notify();
            let _ = push(tls, fd);
        }
        sys::shutdown_write(fd);
    }

    /// Best effort `close_notify` before a clean close (nothing else is waiting).
    pub fn close_notify(&mut self) {
        let fd = self.raw();
        if let Some(tls) = &mut self.tls {
            if !tls.is_handshaking() {
                tls.send_close_notify();
                let _ = push(tls, fd);
            }
        }
    }
}

/// Writes queued TLS records until none is left or the socket would block.
fn push(tls: &mut ServerConnection, fd: RawFd) -> io::Result<()> {
    while tls.wants_write() {
        match tls.write_tls(&mut FdIo(fd)) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Decrypts what `read_tls` buffered; on a TLS error, sends rustls' alert (best
/// effort) and fails.
fn process(tls: &mut ServerConnection, fd: RawFd) -> io::Result<()> {
    if let Err(e) = tls.process_new_packets() {
        let _ = push(tls, fd);
        return Err(io::Error::new(io::ErrorKind::InvalidData, e));
    }
    if tls.wants_write() {
        // Handshake messages, a key update: what does not fit now goes with the
        // connection's next flush.
        match push(tls, fd) {
            Err(e) if !sys::would_block(&e) => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

fn tls_read(tls: &mut ServerConnection, fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match tls.reader().read(buf) {
            Ok(n) => return Ok(n), // 0: the peer sent close_notify
            Err(e) if sys::would_block(&e) => {}
            // TCP EOF without close_notify: an EOF like any other (see the module doc).
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
            Err(e) => return Err(e),
        }
        match tls.read_tls(&mut FdIo(fd)) {
            // On EOF rustls records it: the reader returns what is left, then EOF.
            Ok(_) => process(tls, fd)?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Hands `bufs` to rustls in order until it stops taking; returns how much it took.
fn take(tls: &mut ServerConnection, bufs: &[&[u8]]) -> io::Result<usize> {
    let mut taken = 0;
    for b in bufs {
        let n = tls.writer().write(b)?;
        taken += n;
        if n < b.len() {
            break;
        }
    }
    Ok(taken)
}

fn tls_write(tls: &mut ServerConnection, fd: RawFd, bufs: &[&[u8]]) -> io::Result<usize> {
    let mut taken = take(tls, bufs)?;
    let mut pushed = push(tls, fd);
    if taken == 0 && pushed.is_ok() {
        // rustls' buffer was full and is now drained: try once more.
        taken = take(tls, bufs)?;
        pushed = push(tls, fd);
    }
    match pushed {
        Ok(()) => Ok(taken),
        Err(e) if sys::would_block(&e) && taken > 0 => Ok(taken),
        Err(e) => Err(e),
    }
}
