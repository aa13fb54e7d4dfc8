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

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use crate::dispatch::{respond, Env};
use crate::filecache::FileCache;
use crate::files::{FileBody, Source};
use crate::log::AccessLog;
use crate::parse::{self, Version};
use crate::response::{write_error, Wire};
use crate::sys::{self, EV_ERR, EV_IN, EV_OUT};

const INITIAL_BUF: usize = 4096;
const OUT_HIGH_WATER: usize = 256 * 1024;
const OUT_KEEP_CAPACITY: usize = 64 * 1024;
const LINGER: Duration = Duration::from_secs(2);
const SENDFILE_CHUNK: usize = 1 << 20;

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
}

/// What the worker should do with the connection next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    Keep(u32),
    Close,
}

#[derive(Debug)]
pub(crate) struct Conn {
    fd: OwnedFd,
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
    /// The interest currently registered with epoll (kept by the worker).
    pub interest: u32,
}

impl Conn {
    pub fn new(fd: OwnedFd, peer: SocketAddr, deadline: Instant) -> Conn {
        Conn {
            fd,
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
            interest: EV_IN,
        }
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
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
        if events & (EV_IN | EV_ERR) != 0 && self.interest == EV_IN && self.read(io).is_err() {
            return Next::Close;
        }
        self.drive(io)
    }

    /// The deadline of the current phase passed.
    pub fn on_timeout(&mut self, io: &mut Io<'_, '_>) -> Next {
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
            let limit = c.max_header_bytes + c.max_body_bytes + 1;
            if self.buf.len() >= limit {
                return Ok(()); // the parser has refused this request already
            }
            self.buf.resize((self.buf.len() * 2).min(limit), 0);
        }
        match sys::read(self.raw_fd(), &mut self.buf[self.filled..]) {
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
        if phase != self.phase || served_any {
            self.phase = phase;
            let c = io.env.config;
            let t = if phase == Phase::Idle {
                c.idle_timeout
            } else {
                c.request_timeout
            };
            self.deadline = io.now + t;
        }
        Next::Keep(EV_IN)
    }

    /// Answers every complete request in the buffer, in order.
    /// Returns (stalled with more input to answer, answered at least one).
    fn process(&mut self, io: &mut Io<'_, '_>) -> (bool, bool) {
        let mut served = false;
        let max_head = io.env.config.max_header_bytes;
        let max_body = io.env.config.max_body_bytes as u64;
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
        let fd = self.raw_fd();
        while self.out_pos < self.out.len() {
            let head = &self.out[self.out_pos..];
            let sent = match &self.file {
                Some(FileBody {
                    src: Source::Memory(bytes),
                    offset,
                    end,
                }) => sys::send2(fd, head, &bytes[*offset as usize..*end as usize]),
                pending => sys::send(fd, head, pending.is_some()),
            };
            match sent {
                Ok(n) => {
                    let in_head = n.min(head.len());
                    self.out_pos += in_head;
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
                    Source::File(file) => sys::sendfile(fd, file.as_raw_fd(), &mut f.offset, count),
                    Source::Memory(bytes) => {
                        let from = f.offset as usize;
                        sys::send(fd, &bytes[from..from + count], false).inspect(|&n| {
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
        Ok(true)
    }

    fn start_linger(&mut self, now: Instant) -> Next {
        if self.peer_eof {
            return Next::Close;
        }
        sys::shutdown_write(self.raw_fd());
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
