//! The HTTP/1.1 connection of the io_uring driver: completion-driven.
//!
//! A request is one `IORING_OP_SEND` (with `MSG_WAITALL`, so a short send is retried by
//! the kernel, and `CQE_SKIP_SUCCESS`, so a send that succeeds posts no completion:
//! only failures come back). Responses arrive through the connection's multishot
//! receive (see `rx`), armed once the connect completes and kept armed while the socket
//! is open — so, as on epoll, a server that closes an idle connection is seen at once
//! (not an error) — and re-armed if the kernel ends it (out of provided buffers). The
//! bytes are copied into the connection's own buffer and parsed there.
//!
//! The connect is `IORING_OP_CONNECT` on a fresh blocking socket (io_uring never
//! blocks on it: it polls), with `TCP_NODELAY` and `SO_TIMESTAMPNS` set first.
//!
//! Dropping a connection: its operations are cancelled and its socket closed by two
//! queued operations (`ASYNC_CANCEL` on the file, then `CLOSE`), which go to the kernel
//! in order with the rest of the turn's submissions — so a queued operation still names
//! the old socket, never a new one that reused the descriptor number. The connection's
//! generation number changes, so late completions of the old socket are recognised
//! (their buffers go back to the ring) and otherwise ignored.
//!
//! Sent requests are time-stamped when the turn's submissions go to the kernel, not when
//! they were queued ([`UringConn::stamp`]): latency runs from the submitting
//! `io_uring_enter` to the receive timestamp of the response's last segment.

use super::rx::{timestamp, Clock};
use super::{ud, Op, UringDriver, GEN_MASK};
use crate::conn::{ConnState, Connection, ErrorKind, Progress, Sent};
use crate::http1::{Exchange, INITIAL_BUF};
use crate::parse::Completed;
use crate::request::{Group, Prepared};
use io_uring::types::RecvMsgOut;
use perflab_units::Phrase;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

/// An HTTP/1.1 connection on io_uring.
pub(crate) struct UringConn {
    fd: Option<OwnedFd>,
    slot: u32,
    /// Changes each time the socket is dropped: completions of older sockets are stale.
    gen: u32,
    state: ConnState,
    connect_started: Instant,
    buf: Vec<u8>,
    x: Exchange,
    /// The multishot receive is armed.
    recv_armed: bool,
    connect_armed: bool,
    /// Counted in the driver's `awaiting`: a connect or a response is expected.
    awaited: bool,
    /// Requests at the back of `x.in_flight` queued since the last submission.
    unstamped: usize,
}

/// A send or receive error, by kind.
pub(super) fn errno_kind(errno: i32) -> ErrorKind {
    match errno {
        libc::ETIMEDOUT => ErrorKind::Timeout,
        _ => ErrorKind::Reset,
    }
}

impl UringConn {
    /// Whether a completion of generation `gen` belongs to the current socket.
    pub fn is_current(&self, gen: u32) -> bool {
        self.gen == gen && self.fd.is_some()
    }

    /// Whether a completion of generation `gen` for a connect is this socket's connect.
    pub fn awaits_connect(&self, gen: u32) -> bool {
        self.is_current(gen) && self.connect_armed
    }

    /// The requests queued since the last submission were submitted at `t`.
    pub fn stamp(&mut self, t: Instant) {
        let n = std::mem::take(&mut self.unstamped);
        let len = self.x.in_flight.len();
        for s in self.x.in_flight.range_mut(len.saturating_sub(n)..) {
            if s.intended == s.written {
                s.intended = t; // closed loop: no schedule, latency runs from the write
            }
            s.written = t;
        }
    }

    /// Keeps the driver's count of connections that expect a completion in step.
    fn set_awaited(&mut self, d: &mut UringDriver) {
        let awaited = self.connect_armed || !self.x.in_flight.is_empty();
        if awaited != self.awaited {
            self.awaited = awaited;
            if awaited {
                d.awaiting += 1;
            } else {
                d.awaiting -= 1;
            }
        }
    }

    /// Arms the multishot receive.
    fn arm_recv(&mut self, d: &mut UringDriver) -> Result<(), ErrorKind> {
        let Some(fd) = &self.fd else {
            return Err(ErrorKind::Closed);
        };
        d.push_recv(fd.as_raw_fd(), ud(Op::Recv, self.slot, self.gen))
            .map_err(|_| ErrorKind::Reset)?;
        self.recv_armed = true;
        Ok(())
    }

    /// The connect completed with `res`; the receive is armed.
    pub fn on_connect(&mut self, d: &mut UringDriver, res: i32) -> Result<Progress, ErrorKind> {
        self.connect_armed = false;
        self.set_awaited(d);
        if res < 0 {
            return Err(ErrorKind::Connect);
        }
        self.arm_recv(d)?;
        self.state = ConnState::Open;
        Ok(Progress::Connected)
    }

    /// The receive posted `res` (`flags`: of its completion; `more`: it stays armed).
    /// Completed responses go to `done`; returns the progress and when they completed
    /// (the receive timestamp of the data, else the clock read after the wait).
    pub fn on_recv(
        &mut self,
        d: &mut UringDriver,
        res: i32,
        flags: u32,
        clock: &Clock,
        done: &mut Vec<(Sent, Completed)>,
    ) -> (Result<Progress, ErrorKind>, Instant) {
        let more = io_uring::cqueue::more(flags);
        if !more {
            self.recv_armed = false;
        }
        let bid = io_uring::cqueue::buffer_select(flags);
        let out = match (res, bid) {
            (r, _) if r == -libc::ENOBUFS => (Ok(Progress::Moved), clock.now),
            (r, _) if r < 0 => (Err(errno_kind(-r)), clock.now),
            (r, Some(bid)) => self.take(d, bid, r as usize, clock, done),
            // A multishot receive reports the end of the stream as an empty payload
            // (`take`); a completion with neither data nor a buffer is one too.
            (_, None) => (self.x.on_eof(done, false), clock.now),
        };
        if let Some(bid) = bid {
            d.rx.give(bid);
        }
        self.set_awaited(d);
        if !self.recv_armed && matches!(out.0, Ok(Progress::Moved)) && !self.x.closing {
            // The kernel ended the receive (it ran out of buffers): arm it again.
            if let Err(kind) = self.arm_recv(d) {
                return (Err(kind), out.1);
            }
        }
        out
    }

    /// Copies the payload of buffer `bid` into the connection's buffer and parses it.
    fn take(
        &mut self,
        d: &UringDriver,
        bid: u16,
        len: usize,
        clock: &Clock,
        done: &mut Vec<(Sent, Completed)>,
    ) -> (Result<Progress, ErrorKind>, Instant) {
        let Ok(msg) = RecvMsgOut::parse(d.rx.filled(bid, len), &d.rx.template) else {
            return (Err(ErrorKind::Reset), clock.now);
        };
        let mut payload = msg.payload_data();
        if payload.is_empty() {
            return (self.x.on_eof(done, false), clock.now);
        }
        let at = timestamp(msg.control_data()).map_or(clock.now, |ts| clock.instant(ts));
        while !payload.is_empty() {
            self.x.make_room(&mut self.buf);
            let n = payload.len().min(self.buf.len() - self.x.end);
            self.buf[self.x.end..self.x.end + n].copy_from_slice(&payload[..n]);
            self.x.end += n;
            payload = &payload[n..];
            if let Err(kind) = self.x.process(&self.buf, done) {
                return (Err(kind), at);
            }
            if self.x.closing {
                break; // anything after a closing response is ignored
            }
        }
        (Ok(Progress::Moved), at)
    }
}

/// A blocking TCP socket (io_uring polls it) with `TCP_NODELAY` and receive timestamps.
fn new_socket(addr: &SocketAddr) -> io::Result<OwnedFd> {
    // socket2 sets close-on-exec; it has no call for SO_TIMESTAMPNS.
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(*addr),
        socket2::Type::STREAM,
        None,
    )?;
    socket.set_tcp_nodelay(true)?;
    let fd = OwnedFd::from(socket);
    set_option(&fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS)?;
    Ok(fd)
}

/// Turns a boolean socket option on.
pub(super) fn set_option(fd: &OwnedFd, level: i32, name: i32) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: a valid descriptor, and a pointer to a live c_int with its exact size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Connection for UringConn {
    type Driver = UringDriver;

    fn new(pipeline: usize) -> Self {
        UringConn {
            fd: None,
            slot: 0,
            gen: 0,
            state: ConnState::Down,
            connect_started: Instant::now(),
            buf: Vec::new(),
            x: Exchange::new(pipeline),
            recv_armed: false,
            connect_armed: false,
            awaited: false,
            unstamped: 0,
        }
    }

    fn connect(
        &mut self,
        d: &mut UringDriver,
        slot: usize,
        group: &Group,
        group_index: usize,
        now: Instant,
    ) -> io::Result<()> {
        self.drop_socket(d);
        self.slot = slot as u32;
        if self.buf.is_empty() {
            self.buf = vec![0; INITIAL_BUF];
        }
        let fd = new_socket(&group.addr)?;
        let user_data = ud(Op::Connect, self.slot, self.gen);
        d.push_connect(fd.as_raw_fd(), group_index, user_data)?;
        self.fd = Some(fd);
        self.connect_armed = true;
        self.set_awaited(d);
        self.state = ConnState::Connecting;
        self.connect_started = now;
        Ok(())
    }

    fn state(&self) -> ConnState {
        self.state
    }

    fn connect_started(&self) -> Instant {
        self.connect_started
    }

    fn in_flight(&self) -> usize {
        self.x.in_flight.len()
    }

    fn oldest(&self) -> Option<&Sent> {
        self.x.in_flight.front()
    }

    fn closing(&self) -> bool {
        self.x.closing
    }

    fn send(
        &mut self,
        d: &mut UringDriver,
        prepared: &Prepared,
        target: usize,
        batch: bool,
        sent: Sent,
    ) -> Result<(), ErrorKind> {
        let Some(fd) = self.fd.as_ref().map(AsRawFd::as_raw_fd) else {
            return Err(ErrorKind::Closed);
        };
        let t = &prepared.targets[target];
        let (bytes, n): (&[u8], usize) = if batch {
            (&t.batch, prepared.pipeline)
        } else {
            (&t.request, 1)
        };
        self.x.push(sent, n);
        if self.unstamped == 0 {
            d.unstamped.push(self.slot as usize);
        }
        self.unstamped += n;
        self.set_awaited(d);
        // SAFETY: the bytes belong to the run's `Prepared`, which the driver holds (an
        // `Arc`) until its ring is closed, so they outlive the send.
        unsafe { d.push_send(fd, bytes, ud(Op::Send, self.slot, self.gen)) }
            .map_err(|_| ErrorKind::Reset)
    }

    fn drop_socket(&mut self, d: &mut UringDriver) -> usize {
        if let Some(fd) = self.fd.take() {
            d.cancel_and_close(fd);
        }
        self.recv_armed = false;
        self.connect_armed = false;
        self.gen = self.gen.wrapping_add(1) & GEN_MASK;
        self.unstamped = 0;
        self.state = ConnState::Down;
        let n = self.x.reset();
        self.set_awaited(d);
        n
    }

    fn take_failure(&mut self) -> Option<Phrase> {
        None
    }
}
