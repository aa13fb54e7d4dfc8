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
//! blocks on it: it polls), with `TCP_NODELAY` set first.
//!
//! Dropping a connection: its operations are cancelled and its socket closed by two
//! queued operations (`ASYNC_CANCEL` on the file, then `CLOSE`), which go to the kernel
//! in order with the rest of the turn's submissions — so a queued operation still names
//! the old socket, never a new one that reused the descriptor number. The connection's
//! generation number changes, so late completions of the old socket are recognised
//! (their buffers go back to the ring) and otherwise ignored.
//!
//! Sent requests are time-stamped with the turn's clock read (see the driver's module
//! doc: the same latency clock as epoll's).

use super::{ud, Op, UringDriver, GEN_MASK};
use crate::conn::{ConnState, Connection, ErrorKind, Progress, Sent};
use crate::http1::{Exchange, INITIAL_BUF};
use crate::parse::Completed;
use crate::request::{Group, Prepared};
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
        if res < 0 {
            return Err(ErrorKind::Connect);
        }
        self.arm_recv(d)?;
        self.state = ConnState::Open;
        Ok(Progress::Connected)
    }

    /// The receive posted `res` (`flags`: of its completion; `more`: it stays armed).
    /// Completed responses go to `done`; returns the progress.
    pub fn on_recv(
        &mut self,
        d: &mut UringDriver,
        res: i32,
        flags: u32,
        done: &mut Vec<(Sent, Completed)>,
    ) -> Result<Progress, ErrorKind> {
        let more = io_uring::cqueue::more(flags);
        if !more {
            self.recv_armed = false;
        }
        let bid = io_uring::cqueue::buffer_select(flags);
        let out = match (res, bid) {
            (r, _) if r == -libc::ENOBUFS => Ok(Progress::Moved),
            (r, _) if r < 0 => Err(errno_kind(-r)),
            (r, Some(bid)) => self.take(d, bid, r as usize, done),
            // A multishot receive reports the end of the stream as an empty payload
            // (`take`); a completion with neither data nor a buffer is one too.
            (_, None) => self.x.on_eof(done, false),
        };
        if let Some(bid) = bid {
            d.rx.give(bid);
        }
        if !self.recv_armed && matches!(out, Ok(Progress::Moved)) && !self.x.closing {
            // The kernel ended the receive (it ran out of buffers): arm it again.
            self.arm_recv(d)?;
        }
        out
    }

    /// Copies the payload of buffer `bid` into the connection's buffer and parses it.
    fn take(
        &mut self,
        d: &UringDriver,
        bid: u16,
        len: usize,
        done: &mut Vec<(Sent, Completed)>,
    ) -> Result<Progress, ErrorKind> {
        let mut payload = d.rx.filled(bid, len);
        if payload.is_empty() {
            return self.x.on_eof(done, false);
        }
        while !payload.is_empty() {
            self.x.make_room(&mut self.buf);
            let n = payload.len().min(self.buf.len() - self.x.end);
            self.buf[self.x.end..self.x.end + n].copy_from_slice(&payload[..n]);
            self.x.end += n;
            payload = &payload[n..];
            self.x.process(&self.buf, done)?;
            if self.x.closing {
                break; // anything after a closing response is ignored
            }
        }
        Ok(Progress::Moved)
    }
}

/// A blocking TCP socket (io_uring polls it) with `TCP_NODELAY`.
fn new_socket(addr: &SocketAddr) -> io::Result<OwnedFd> {
    // socket2 sets close-on-exec.
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(*addr),
        socket2::Type::STREAM,
        None,
    )?;
    socket.set_tcp_nodelay(true)?;
    Ok(OwnedFd::from(socket))
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

    fn each_in_flight(&self, f: &mut dyn FnMut(&Sent)) {
        self.x.in_flight.iter().for_each(f);
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
        self.state = ConnState::Down;
        self.x.reset()
    }

    fn take_failure(&mut self) -> Option<Phrase> {
        None
    }
}
