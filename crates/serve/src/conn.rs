//! One client connection: read buffer, request framing, ordered responses, writes.
//!
//! Level-triggered, one `read` per readiness event. Every complete request in the
//! buffer is answered in order into one output buffer, which is sent with one `send`
//! (pipelined answers are batched for free). A file body is sent with `sendfile`
//! after its head; parsing pauses until it is out, which keeps responses in order
//! without a queue. Interest is `EPOLLIN` while nothing waits to be written and
//! `EPOLLOUT` otherwise, so a client that doesn't read can't make us buffer without
//! bound (and parsing also pauses above a high-water mark).
//!
//! Timeouts are phases with one deadline each: a fresh or idle keep-alive connection
//! is closed silently; a request that isn't complete by `request_timeout` after its
//! first byte is answered 408 and closed (the deadline is not pushed back by more
//! bytes, so a slowloris can't hold it); a stalled write is closed. A read of 0 bytes
//! means the peer closed: we answer what is complete, and close as soon as nothing is
//! left to write (no CLOSE_WAIT). Closes after an error are lingering: shut down our
//! side, drain the peer's leftovers for a moment, so the error page isn't lost to RST;
//! a clean `Connection: close` with nothing unread closes at once, as nginx does.
//!
//! Protocol detection, per connection: until its first bytes are in, a connection is
//! undecided. Bytes that are the HTTP/2 client preface (`PRI * HTTP/2.0…`) make it an
//! HTTP/2 connection (h2c with prior knowledge); bytes that are only a prefix of the
//! preface so far wait for more; anything else is HTTP/1.1 — so both share one port,
//! where nginx needs one per protocol. Over TLS, ALPN decides once the handshake is
//! done (`h2` or `http/1.1`), and a client that negotiated nothing is detected by its
//! bytes as on a plain socket. An HTTP/2 connection keeps this struct's socket,
//! buffers, phases and deadlines; the frames are the `h2::Session`'s (see
//! [`Conn::drive_h2`]). Its deadlines differ in one way: only progress (a request
//! answered, response bytes written) sets one anew, a phase change alone never
//! pushes it back ([`Conn::rearm_h2`]), since on HTTP/2 a client can flip phases at
//! will with partial, empty or control frames. All I/O goes through [`Sock`], plain
//! or TLS.

use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use perflab_h2::PREFACE;

use crate::dispatch::{respond, Env};
use crate::filecache::FileCache;
use crate::files::{FileBody, Source};
use crate::h2::{Limits, Scratch, Session};
use crate::log::AccessLog;
use crate::parse::{self, Version};
use crate::response::{write_error, Wire};
use crate::sys::{self, EV_ERR, EV_IN, EV_OUT};
use crate::transport::Sock;

const INITIAL_BUF: usize = 4096;
const OUT_HIGH_WATER: usize = 256 * 1024;
const OUT_KEEP_CAPACITY: usize = 64 * 1024;
const LINGER: Duration = Duration::from_secs(2);
const SENDFILE_CHUNK: usize = 1 << 20;
/// HTTP/2: output bytes a session may queue before it waits for the socket.
const H2_ROOM: usize = 128 * 1024;
/// TLS: extra read rounds for plaintext rustls holds beyond one event's buffer.
const TLS_ROUNDS: usize = 8;

/// Where a connection is in its life; each phase has its own deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Idle,
    Request,
    Writing,
    Lingering,
}

/// What the worker lends a connection for one event.
pub(crate) struct Io<'a, 'e> {
    pub env: &'a Env<'e>,
    pub log: Option<&'a mut AccessLog>,
    pub requests: &'a mut u64,
    pub now: Instant,
    pub draining: bool,
    /// The worker's open-file cache (none when off).
    pub cache: Option<&'a mut FileCache>,
    /// The worker's HTTP/2 buffers.
    pub scratch: &'a mut Scratch,
}

/// What the worker should do with the connection next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    Keep(u32),
    Close,
}

/// What a connection speaks.
#[derive(Debug)]
enum Proto {
    /// Not known yet: waiting for the first bytes (or the TLS handshake).
    Detect,
    Http1,
    Http2(Box<Session>),
}

#[derive(Debug)]
pub(crate) struct Conn {
    sock: Sock,
    proto: Proto,
    peer: SocketAddr,
    buf: Vec<u8>,
    filled: usize,
    start: usize,
    out: Vec<u8>,
    out_pos: usize,
    file: Option<FileBody>,
    close_after: bool,
    /// Close lingering (an error page may be followed by unread input).
    linger: bool,
    peer_eof: bool,
    continue_sent: bool,
    phase: Phase,
    deadline: Instant,
    /// Bytes of `out` written to the socket, ever.
    sent: u64,
    /// HTTP/2: the session's response-frame count when we last wrote.
    h2_mark: u64,
    /// The interest currently registered with epoll (kept by the worker).
    pub interest: u32,
}

impl Conn {
    pub fn new(sock: Sock, peer: SocketAddr, deadline: Instant) -> Conn {
        Conn {
            sock,
            proto: Proto::Detect,
            peer,
            buf: vec![0; INITIAL_BUF],
            filled: 0,
            start: 0,
            out: Vec::new(),
            out_pos: 0,
            file: None,
            close_after: false,
            linger: false,
            peer_eof: false,
            continue_sent: false,
            phase: Phase::Idle,
            deadline,
            sent: 0,
            h2_mark: 0,
            interest: EV_IN,
        }
    }

    pub fn raw_fd(&self) -> RawFd {
        self.sock.raw()
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Nothing received, nothing to send: safe to close at shutdown.
    pub fn is_idle(&self) -> bool {
        self.phase == Phase::Idle && self.start == self.filled && !self.has_output()
    }

    fn has_output(&self) -> bool {
        self.out_pos < self.out.len() || self.file.is_some()
    }

    /// Handles readiness `events` from epoll.
    pub fn on_event(&mut self, events: u32, io: &mut Io<'_, '_>) -> Next {
        if self.phase == Phase::Lingering {
            return self.linger_read();
        }
        let readable = events & (EV_IN | EV_ERR) != 0 && self.interest == EV_IN;
        let mut next = self.step(readable, io);
        // TLS: rustls may hold decrypted bytes that the buffer did not take, which no
        // epoll event will announce.
        for _ in 0..TLS_ROUNDS {
            if next != Next::Keep(EV_IN) || !self.sock.has_plaintext() {
                break;
            }
            next = self.step(true, io);
        }
        next
    }

    fn step(&mut self, readable: bool, io: &mut Io<'_, '_>) -> Next {
        if readable && self.read(io).is_err() {
            return Next::Close;
        }
        if matches!(self.proto, Proto::Detect) {
            self.detect(io);
        }
        if matches!(self.proto, Proto::Http2(_)) {
            return self.drive_h2(io);
        }
        self.drive(io)
    }

    /// Decides the protocol from ALPN or the first bytes (see the module doc).
    fn detect(&mut self, io: &Io<'_, '_>) {
        let h2 = match self.sock.alpn() {
            Some(None) => return, // the TLS handshake is still running
            Some(Some(b"h2")) => true,
            Some(Some(b"http/1.1")) => false,
            _ => {
                let data = &self.buf[self.start..self.filled];
                let n = data.len().min(PREFACE.len());
                if data[..n] != PREFACE[..n] {
                    false
                } else if n < PREFACE.len() {
                    return; // a prefix of the preface so far: wait for more
                } else {
                    true
                }
            }
        };
        self.proto = if h2 {
            let limits = Limits::of(io.env.config);
            Proto::Http2(Box::new(Session::new(limits, &mut self.out)))
        } else {
            Proto::Http1
        };
    }

    /// The deadline of the current phase passed.
    pub fn on_timeout(&mut self, io: &mut Io<'_, '_>) -> Next {
        if let Proto::Http2(s) = &mut self.proto {
            if self.phase != Phase::Writing {
                // Best effort: tell the client why, then close.
                s.goaway(&mut self.out);
                let _ = self.flush();
            }
            return Next::Close;
        }
        if self.phase != Phase::Request || self.close_after {
            return Next::Close;
        }
        self.fail(408, io);
        self.drive(io)
    }

    fn read(&mut self, io: &Io<'_, '_>) -> Result<(), ()> {
        if self.peer_eof {
            return Ok(());
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.filled, 0);
            self.filled -= self.start;
            self.start = 0;
        }
        if self.filled == self.buf.len() {
            let c = io.env.config;
            let mut limit = c.max_header_bytes + c.max_body_bytes + 1;
            if matches!(self.proto, Proto::Http2(_)) {
                // Whatever the HTTP/1.1 limits, a whole frame must fit.
                limit = limit.max(2 * (crate::h2::MAX_FRAME as usize + perflab_h2::HEAD_LEN));
            }
            if self.buf.len() >= limit {
                return Ok(()); // the parser has refused this request already
            }
            self.buf.resize((self.buf.len() * 2).min(limit), 0);
        }
        match self.sock.read(&mut self.buf[self.filled..]) {
            Ok(0) => self.peer_eof = true,
            Ok(n) => self.filled += n,
            Err(e) if sys::would_block(&e) || e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(()),
        }
        Ok(())
    }

    /// Answers what is complete, writes, and decides the next interest.
    fn drive(&mut self, io: &mut Io<'_, '_>) -> Next {
        let mut served_any = false;
        loop {
            let (stalled, served) = self.process(io);
            served_any |= served;
            let before = (self.out_pos, self.file.as_ref().map(|f| f.offset));
            match self.flush() {
                Err(()) => return Next::Close,
                Ok(false) => {
                    let progressed = before != (self.out_pos, self.file.as_ref().map(|f| f.offset));
                    if self.phase != Phase::Writing || progressed || served_any {
                        self.phase = Phase::Writing;
                        self.deadline = io.now + io.env.config.request_timeout;
                    }
                    return Next::Keep(EV_OUT);
                }
                Ok(true) => {}
            }
            if self.close_after {
                // A clean close after a complete exchange needs no lingering: with
                // nothing unread, close() sends FIN, not RST.
                if self.linger || self.start < self.filled {
                    return self.start_linger(io.now);
                }
                self.sock.close_notify();
                return Next::Close;
            }
            if !stalled {
                break;
            }
        }
        if self.peer_eof {
            return Next::Close;
        }
        let phase = if self.start < self.filled {
            Phase::Request
        } else {
            Phase::Idle
        };
        self.rearm(io, phase, served_any);
        Next::Keep(EV_IN)
    }

    /// The HTTP/2 counterpart of [`Conn::drive`]: frames in, frames out, write; the
    /// session is taken out of `proto` for the call (moving a `Box`).
    fn drive_h2(&mut self, io: &mut Io<'_, '_>) -> Next {
        let Proto::Http2(mut s) = std::mem::replace(&mut self.proto, Proto::Http1) else {
            return self.drive(io);
        };
        let next = self.drive_session(&mut s, io);
        self.proto = Proto::Http2(s);
        next
    }

    fn drive_session(&mut self, s: &mut Session, io: &mut Io<'_, '_>) -> Next {
        if io.draining {
            s.goaway(&mut self.out);
        }
        let served_before = *io.requests;
        let mut progress = false;
        loop {
            let room = self.out_pos + H2_ROOM;
            let mut full = false;
            if !s.failed() && self.start < self.filled && self.out.len() < room {
                let input = &self.buf[self.start..self.filled];
                self.start += s.recv(input, &mut self.out, room, io, self.peer);
                full = self.out.len() >= room;
            }
            s.fill(&mut self.out, room);
            let (mark, sending) = s.sending_mark();
            let sent_before = self.sent;
            let flushed = self.flush();
            // Response bytes the client accepted are progress; PING ACKs are not.
            if self.sent != sent_before && (sending || mark != self.h2_mark) {
                progress = true;
            }
            self.h2_mark = mark;
            match flushed {
                Err(()) => return Next::Close,
                Ok(false) => {
                    progress |= *io.requests != served_before;
                    self.rearm_h2(io, Phase::Writing, progress);
                    return Next::Keep(EV_OUT);
                }
                Ok(true) => {}
            }
            // Written out: go on while frames wait that `room` held back, or queued
            // bodies may go.
            if !(s.can_send() || full && self.start < self.filled) {
                break;
            }
        }
        if s.failed() {
            // GOAWAY with an error: linger, so it isn't lost to a reset.
            return self.start_linger(io.now);
        }
        if s.done() {
            self.sock.close_notify();
            return Next::Close;
        }
        if self.peer_eof {
            return Next::Close;
        }
        let phase = if s.active() > 0 || self.start < self.filled {
            Phase::Request
        } else {
            Phase::Idle
        };
        progress |= *io.requests != served_before;
        self.rearm_h2(io, phase, progress);
        Next::Keep(EV_IN)
    }

    /// HTTP/2's deadline: only progress — a request answered, response bytes the
    /// client accepted — sets it anew; a phase change without progress (a frame cut
    /// in the middle, then completed; an empty or control frame) may bring it closer,
    /// never push it back. So a client that keeps the connection busy with anything
    /// but requests is closed on time (slowloris over HTTP/2).
    fn rearm_h2(&mut self, io: &Io<'_, '_>, phase: Phase, progress: bool) {
        let c = io.env.config;
        let t = if phase == Phase::Idle {
            c.idle_timeout
        } else {
            c.request_timeout
        };
        let due = io.now + t;
        self.deadline = if progress {
            due
        } else {
            self.deadline.min(due)
        };
        self.phase = phase;
    }

    /// Restarts the idle or request timeout when the phase changed or a request was
    /// served.
    fn rearm(&mut self, io: &Io<'_, '_>, phase: Phase, served: bool) {
        if phase != self.phase || served {
            self.phase = phase;
            let c = io.env.config;
            let t = if phase == Phase::Idle {
                c.idle_timeout
            } else {
                c.request_timeout
            };
            self.deadline = io.now + t;
        }
    }

    /// Answers every complete request in the buffer, in order.
    /// Returns (stalled with more input to answer, answered at least one).
    fn process(&mut self, io: &mut Io<'_, '_>) -> (bool, bool) {
        let mut served = false;
        let max_head = io.env.config.max_header_bytes;
        let max_body = io.env.config.max_body_bytes as u64;
        if matches!(self.proto, Proto::Detect) {
            return (false, served); // not known to be HTTP/1.1 yet
        }
        loop {
            if self.close_after {
                return (false, served);
            }
            if self.file.is_some() || self.out.len() - self.out_pos > OUT_HIGH_WATER {
                return (self.start < self.filled, served);
            }
            let data = &self.buf[self.start..self.filled];
            if data.is_empty() {
                return (false, served);
            }
            let head = match parse::parse(data, max_head) {
                Ok(Some(h)) => h,
                Ok(None) => return (false, served),
                Err(e) => {
                    self.fail(e.status(), io);
                    return (false, served);
                }
            };
            if head.content_length > max_body {
                self.fail(413, io);
                return (false, served);
            }
            let need = head.len + head.content_length as usize;
            if data.len() < need {
                if head.expect_continue && !self.continue_sent {
                    self.out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                    self.continue_sent = true;
                }
                return (false, served);
            }
            let keep = head.keep_alive && !io.draining;
            let body = &data[head.len..need];
            let reply = respond(
                io.env,
                &head,
                body,
                self.peer,
                keep,
                io.now,
                io.cache.as_deref_mut(),
                &mut self.out,
            );
            if let Some(log) = io.log.as_deref_mut() {
                log.record(
                    self.peer,
                    io.env.date,
                    Some(&head),
                    reply.status,
                    reply.bytes,
                );
            }
            *io.requests += 1;
            served = true;
            self.start += need;
            self.continue_sent = false;
            self.close_after = !keep;
            self.file = reply.file;
        }
    }

    /// Queues an error page and marks the connection to close after it.
    fn fail(&mut self, status: u16, io: &mut Io<'_, '_>) {
        let w = Wire {
            date: io.env.date,
            keep_alive: false,
            version: Version::Http11,
        };
        let bytes = write_error(&mut self.out, status, false, &w);
        if let Some(log) = io.log.as_deref_mut() {
            log.record(self.peer, io.env.date, None, status, bytes);
        }
        self.close_after = true;
        self.linger = true;
        self.start = self.filled;
    }

    /// Writes buffered bytes, then the pending body: from memory in the same call as
    /// the head's last bytes, from a file with `sendfile`. `Ok(true)`: all sent.
    fn flush(&mut self) -> Result<bool, ()> {
        while self.out_pos < self.out.len() {
            let head = &self.out[self.out_pos..];
            let sent = match &self.file {
                Some(FileBody {
                    src: Source::Memory(bytes),
                    offset,
                    end,
                }) => self
                    .sock
                    .send2(head, &bytes[*offset as usize..*end as usize]),
                pending => self.sock.send(head, pending.is_some()),
            };
            match sent {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    let in_head = n.min(head.len());
                    self.out_pos += in_head;
                    self.sent += n as u64;
                    if let Some(f) = &mut self.file {
                        f.offset += (n - in_head) as u64;
                    }
                }
                Err(e) if sys::would_block(&e) => return Ok(false),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Err(()),
            }
        }
        self.out.clear();
        self.out_pos = 0;
        if self.out.capacity() > 4 * OUT_KEEP_CAPACITY {
            self.out.shrink_to(OUT_KEEP_CAPACITY);
        }
        if let Some(f) = &mut self.file {
            while f.offset < f.end {
                let count = (f.end - f.offset).min(SENDFILE_CHUNK as u64) as usize;
                let sent = match &f.src {
                    Source::File(file) => self.sock.sendfile(file, &mut f.offset, count),
                    Source::Memory(bytes) => {
                        let from = f.offset as usize;
                        self.sock
                            .send(&bytes[from..from + count], false)
                            .inspect(|&n| {
                                f.offset += n as u64;
                            })
                    }
                };
                match sent {
                    Ok(0) => return Err(()), // file shrank: framing can't be kept
                    Ok(_) => {}
                    Err(e) if sys::would_block(&e) => return Ok(false),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => return Err(()),
                }
            }
            self.file = None;
        }
        // Over TLS, records rustls still holds must reach the socket too.
        self.sock.flush_tls().map_err(drop)
    }

    fn start_linger(&mut self, now: Instant) -> Next {
        if self.peer_eof {
            return Next::Close;
        }
        self.sock.shutdown_write();
        self.phase = Phase::Lingering;
        self.deadline = now + LINGER;
        self.start = 0;
        self.filled = 0;
        Next::Keep(EV_IN)
    }

    /// After our side is shut: discard input until the peer closes or time is up.
    fn linger_read(&mut self) -> Next {
        match sys::read(self.raw_fd(), &mut self.buf) {
            Ok(0) => Next::Close,
            Ok(_) => Next::Keep(EV_IN),
            Err(e) if sys::would_block(&e) => Next::Keep(EV_IN),
            Err(_) => Next::Close,
        }
    }
}
