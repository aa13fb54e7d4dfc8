//! The byte stream under an HTTP/1.1 connection: plain TCP, TLS (rustls) over TCP, or
//! a unix-domain socket (`unix_socket`).
//!
//! An enum rather than a type parameter so one worker can serve `http://` and
//! `https://` URLs of one URL file side by side. The plain arm is the socket itself —
//! `read` and `write` go straight to the syscall, with no copy and no buffer in
//! between; the match on the variant is a predictable branch next to a syscall.
//!
//! The TLS arm drives a rustls [`ClientConnection`] non-blockingly over the mio socket,
//! with socket-like semantics so the HTTP/1.1 code above reads and writes plaintext as
//! it would a socket: [`Transport::write`] hands request bytes to rustls' `writer()`
//! and pushes the records with `write_tls` until the socket would block (what is left
//! goes on the next writable edge: [`Transport::wants_write`]); [`Transport::read`]
//! returns buffered plaintext, or pulls records with `read_tls` and
//! `process_new_packets` until there is plaintext, the socket would block, or EOF. The
//! costs of TLS are rustls' own: one copy of the plaintext out of its buffer, and reads
//! of the socket in rustls' chunks — so the short-read "drained" shortcut of the plain
//! socket does not hold for it ([`Transport::short_read_drains`]).
//!
//! The handshake ([`TlsStream::handshake`]) runs before the first request, while the
//! connection still counts as connecting (the connect timeout covers it). A server
//! that closes without `close_notify` is treated as a plain EOF: HTTP/1.1 framing
//! (Content-Length, chunked) already tells a complete response from a truncated one.

use crate::tls::{describe, TlsTarget};
use mio::net::{TcpStream, UnixStream};
use perflab_units::Phrase;
use rustls::ClientConnection;
use std::io::{self, Read, Write};
use std::sync::Arc;

/// A connection's byte stream.
#[derive(Debug)]
pub(crate) enum Transport {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP (boxed: a rustls connection is large, the plain arm stays small).
    Tls(Box<TlsStream>),
    /// A unix-domain stream socket.
    Unix(UnixStream),
}

/// Marks an `io::Error` that stands for a TLS failure (the message is kept by the stream).
#[derive(Debug)]
pub(crate) struct TlsFailure;

impl std::fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TLS failure")
    }
}

impl std::error::Error for TlsFailure {}

/// Whether `e` is a TLS failure raised by [`TlsStream`].
pub(crate) fn is_tls_failure(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<TlsFailure>())
}

impl Transport {
    /// `Ok(true)` once a non-blocking connect has completed, `Ok(false)` while it is in
    /// progress, an error when it failed (`SO_ERROR`, then whether a peer is there).
    pub fn connected(&self) -> io::Result<bool> {
        let (err, peer) = match self {
            Transport::Plain(s) => (s.take_error(), s.peer_addr().map(drop)),
            Transport::Tls(t) => (t.sock.take_error(), t.sock.peer_addr().map(drop)),
            Transport::Unix(s) => (s.take_error(), s.peer_addr().map(drop)),
        };
        match err {
            Ok(Some(e)) | Err(e) => return Err(e),
            Ok(None) => {}
        }
        match peer {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Reads plaintext; `Ok(0)` at end of stream, `WouldBlock` when there is none yet.
    #[inline]
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.read(buf),
            Transport::Tls(t) => t.read(buf),
            Transport::Unix(s) => s.read(buf),
        }
    }

    /// Writes plaintext; returns how much was taken (`WouldBlock` when nothing was).
    #[inline]
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.write(buf),
            Transport::Tls(t) => t.write(buf),
            Transport::Unix(s) => s.write(buf),
        }
    }

    /// Bytes taken by `write` still wait for the socket (TLS records rustls holds).
    #[inline]
    pub fn wants_write(&self) -> bool {
        match self {
            Transport::Plain(_) | Transport::Unix(_) => false,
            Transport::Tls(t) => t.conn.wants_write(),
        }
    }

    /// Pushes what `wants_write`; `Ok` also when the socket would block again.
    pub fn push_pending(&mut self) -> io::Result<()> {
        match self {
            Transport::Plain(_) | Transport::Unix(_) => Ok(()),
            Transport::Tls(t) => match t.push() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
                other => other,
            },
        }
    }

    /// A read that returned less than the buffer's space means the socket is drained.
    #[inline]
    pub fn short_read_drains(&self) -> bool {
        matches!(self, Transport::Plain(_) | Transport::Unix(_))
    }

    /// Why the last TLS operation failed.
    pub fn failure(&mut self) -> Option<Phrase> {
        match self {
            Transport::Plain(_) | Transport::Unix(_) => None,
            Transport::Tls(t) => t.failure.take(),
        }
    }
}

/// A rustls client connection over a non-blocking socket.
#[derive(Debug)]
pub(crate) struct TlsStream {
    conn: ClientConnection,
    sock: TcpStream,
    target: Arc<TlsTarget>,
    failure: Option<Phrase>,
}

impl TlsStream {
    /// Starts a client session (nothing is sent until the socket is connected).
    pub fn new(target: &Arc<TlsTarget>, sock: TcpStream) -> io::Result<TlsStream> {
        let conn = ClientConnection::new(Arc::clone(&target.config), target.name.clone())
            .map_err(io::Error::other)?;
        Ok(TlsStream {
            conn,
            sock,
            target: Arc::clone(target),
            failure: None,
        })
    }

    /// Records why the session failed; returns the marker error.
    fn fail(&mut self, message: Phrase) -> io::Error {
        self.failure.get_or_insert(message);
        io::Error::new(io::ErrorKind::InvalidData, TlsFailure)
    }

    /// Decrypts what `read_tls` buffered. On a TLS error, sends the alert rustls queued
    /// (best effort) and fails.
    fn process(&mut self) -> io::Result<()> {
        if let Err(e) = self.conn.process_new_packets() {
            let _ = self.push();
            let message = describe(&e, &self.target.hint);
            return Err(self.fail(message));
        }
        if self.conn.wants_write() {
            // A key update or an alert to answer; what does not fit goes on the next edge.
            let _ = self.push();
        }
        Ok(())
    }

    /// Writes queued TLS records to the socket until none is left or it would block.
    fn push(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.sock) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Advances the handshake: `Ok(true)` once it is complete, `Ok(false)` while it
    /// waits for the socket. Reads until the socket would block (edge-triggered).
    pub fn handshake(&mut self) -> io::Result<bool> {
        loop {
            match self.push() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(self.fail(format!("TLS handshake failed: {e}").into())),
            }
            if !self.conn.is_handshaking() {
                return Ok(true);
            }
            match self.conn.read_tls(&mut self.sock) {
                Ok(0) => {
                    return Err(self.fail(
                        "TLS handshake failed: the server closed the connection (does it \
                         speak TLS on this port?)"
                            .into(),
                    ))
                }
                Ok(_) => self.process()?,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.fail(format!("TLS handshake failed: {e}").into())),
            }
        }
    }

    /// The protocol the server chose by ALPN, once the handshake is complete.
    pub fn alpn(&self) -> Option<&[u8]> {
        self.conn.alpn_protocol()
    }

    /// Socket-like read of plaintext.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(buf) {
                Ok(n) => return Ok(n), // 0: the server sent close_notify
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // TCP EOF without close_notify: an EOF like any other (see the module doc).
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            match self.conn.read_tls(&mut self.sock) {
                // EOF is now recorded by rustls: the reader returns what is left, then EOF.
                Ok(_) => self.process()?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Socket-like write of plaintext.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut taken = self.conn.writer().write(buf)?;
        let mut pushed = self.push();
        if taken == 0 && pushed.is_ok() {
            // rustls' send buffer was full and is now drained: try once more.
            taken = self.conn.writer().write(buf)?;
            pushed = self.push();
        }
        match pushed {
            Ok(()) => Ok(taken),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && taken > 0 => Ok(taken),
            Err(e) => Err(e),
        }
    }
}
