//! The connection layer: one client connection, behind the [`Connection`] trait, and
//! the readiness-driven HTTP/1.1 connection of the epoll driver, [`Http1Conn`].
//!
//! The workers' bookkeeping and the load models drive connections only through this
//! trait — start a connect, ask what is in flight, hand it a request, drop it — so an
//! HTTP/2 client (many streams on one connection, the same completions) or another I/O
//! driver can be added without touching them. Each connection type belongs to one
//! driver (the trait's `Driver`), which feeds it I/O progress its own way: readiness
//! events here, completions for the io_uring connection (`uring::conn`). The HTTP/1.1
//! state they share — requests in flight, the parser, the read window — is `http1`.
//!
//! Why a hand-written client rather than hyper/reqwest: a load generator's hot path is
//! one `write` of pre-serialized bytes, one `read` into a reused buffer, an in-place
//! parse and a histogram record. General clients allocate per request (request/response
//! objects, header maps, body buffers, futures) and their executor adds wake-ups; oha,
//! built on hyper, is slower than wrk for that reason. `bench/http-vs-peers.sh` measures
//! the result against wrk, ab and h2load on the same nginx.
//!
//! Sockets are registered once, for read and write, edge-triggered (mio): no
//! `epoll_ctl` per request. A read shorter than the free buffer space means the socket
//! was drained, so the extra read that would only return `EAGAIN` is skipped — unless
//! the event also carried a hang-up or error, which must then be read to the end.
//!
//! The bytes travel over a [`Transport`]: the plain socket for `http://`, rustls over
//! it for `https://` (see `transport`). A TLS connection stays *connecting* through its
//! handshake — the connect timeout covers both, and the load model sees the connection
//! only once it can carry a request; a failed handshake counts as a connect failure of
//! kind [`ErrorKind::Tls`], with the reason kept for the report
//! ([`Connection::take_failure`]).

use crate::epoll::EpollDriver;
use crate::http1::{Exchange, INITIAL_BUF};
use crate::parse::Completed;
use crate::request::{Group, Prepared};
use crate::transport::{is_tls_failure, TlsStream, Transport};
use mio::net::TcpStream;
use mio::{Interest, Token};
use std::io;
use std::time::Instant;

/// Kinds of failed requests, as reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// Connection refused (or another connect failure).
    Connect,
    /// The connect did not complete within the connect timeout.
    ConnectTimeout,
    /// No complete response within the request timeout.
    Timeout,
    /// Connection reset by the peer.
    Reset,
    /// The response broke the HTTP/1.1 grammar.
    Malformed,
    /// The server closed the connection before the response was complete.
    Closed,
    /// The TLS handshake (certificate verification included) or a TLS record failed.
    Tls,
}

/// A request that was written (or is being written) and awaits its response.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sent {
    /// When the load model meant to send it (open loop: the schedule; closed: = written).
    pub intended: Instant,
    /// When it was handed to the socket.
    pub written: Instant,
    /// Counted in the report (false during warm-up).
    pub record: bool,
    /// A HEAD request (its response has no body).
    pub head: bool,
}

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnState {
    /// No socket.
    Down,
    /// Connect in progress.
    Connecting,
    /// Connected.
    Open,
}

/// What an event did to a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    /// The connect completed.
    Connected,
    /// Bytes moved; see the completions.
    Moved,
    /// The peer closed a connection with nothing in flight (not an error).
    ClosedIdle,
}

/// A client connection, whatever the protocol and whatever moves its bytes: the part
/// the load models and the worker's bookkeeping see. How I/O progress reaches a
/// connection (readiness events, completions) is its driver's business
/// (`epoll`, `uring`).
pub(crate) trait Connection {
    /// The I/O driver whose operations this connection goes through.
    type Driver;
    /// A new, unconnected connection.
    fn new(pipeline: usize) -> Self;
    /// Starts a non-blocking connect of slot `slot` to `group` (the run's group number
    /// `group_index`), with TLS when the group has it.
    fn connect(
        &mut self,
        driver: &mut Self::Driver,
        slot: usize,
        group: &Group,
        group_index: usize,
        now: Instant,
    ) -> io::Result<()>;
    /// Current state.
    fn state(&self) -> ConnState;
    /// When the current connect started.
    fn connect_started(&self) -> Instant;
    /// Requests written and not yet answered.
    fn in_flight(&self) -> usize;
    /// The oldest request in flight.
    fn oldest(&self) -> Option<&Sent>;
    /// The server announced it will close after the last response.
    fn closing(&self) -> bool;
    /// Writes request `target` (`batch`: the pipelined batch of `count` requests).
    fn send(
        &mut self,
        driver: &mut Self::Driver,
        prepared: &Prepared,
        target: usize,
        batch: bool,
        sent: Sent,
    ) -> Result<(), ErrorKind>;
    /// Drops the socket; returns the requests that were in flight.
    fn drop_socket(&mut self, driver: &mut Self::Driver) -> usize;
    /// Why the connection failed, when it said [`ErrorKind::Tls`] (taken once).
    fn take_failure(&mut self) -> Option<String>;
}

/// A pending partial write.
#[derive(Debug, Clone, Copy)]
struct PendingWrite {
    target: usize,
    batch: bool,
    offset: usize,
}

/// An HTTP/1.1 connection with optional pipelining, driven by readiness (epoll).
#[derive(Debug)]
pub(crate) struct Http1Conn {
    stream: Option<Transport>,
    state: ConnState,
    /// Connected at the TCP level, TLS handshake in progress.
    handshaking: bool,
    connect_started: Instant,
    buf: Vec<u8>,
    x: Exchange,
    write: Option<PendingWrite>,
}

fn io_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::TimedOut => ErrorKind::Timeout,
        io::ErrorKind::UnexpectedEof => ErrorKind::Closed,
        _ if is_tls_failure(e) => ErrorKind::Tls,
        _ => ErrorKind::Reset,
    }
}

impl Http1Conn {
    fn flush(&mut self, prepared: &Prepared) -> Result<(), ErrorKind> {
        let Some(mut w) = self.write else {
            // TLS records of a request whose plaintext was all taken may still wait.
            return match &mut self.stream {
                Some(s) => s.push_pending().map_err(|e| io_kind(&e)),
                None => Ok(()),
            };
        };
        let t = &prepared.targets[w.target];
        let bytes: &[u8] = if w.batch { &t.batch } else { &t.request };
        let stream = self.stream.as_mut().ok_or(ErrorKind::Closed)?;
        while w.offset < bytes.len() {
            match stream.write(&bytes[w.offset..]) {
                Ok(0) => return Err(ErrorKind::Closed),
                Ok(n) => w.offset += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.write = Some(w);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_kind(&e)),
            }
        }
        self.write = None;
        Ok(())
    }

    fn read_available(
        &mut self,
        done: &mut Vec<(Sent, Completed)>,
        hangup: bool,
    ) -> Result<Progress, ErrorKind> {
        loop {
            self.x.make_room(&mut self.buf);
            let space = self.buf.len() - self.x.end;
            let stream = self.stream.as_mut().ok_or(ErrorKind::Closed)?;
            match stream.read(&mut self.buf[self.x.end..]) {
                Ok(0) => return self.x.on_eof(done, self.write.is_some()),
                Ok(n) => {
                    self.x.end += n;
                    self.x.process(&self.buf, done)?;
                    if self.x.closing {
                        return Ok(Progress::Moved);
                    }
                    if n < space
                        && !hangup
                        && self
                            .stream
                            .as_ref()
                            .is_some_and(Transport::short_read_drains)
                    {
                        // Drained: skip the read that would only say EAGAIN. A close or
                        // reset already pending was flagged in the event (`hangup`); one
                        // arriving later raises a new edge. (Plain sockets only: a TLS
                        // read that comes out of rustls' buffer says nothing of the socket.)
                        return Ok(Progress::Moved);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Progress::Moved),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_kind(&e)),
            }
        }
    }

    /// Advances the TLS handshake of a TCP-connected socket.
    fn handshake(&mut self) -> Result<Progress, ErrorKind> {
        let Some(Transport::Tls(tls)) = &mut self.stream else {
            return Err(ErrorKind::Connect);
        };
        match tls.handshake() {
            Ok(true) => {
                self.handshaking = false;
                self.state = ConnState::Open;
                Ok(Progress::Connected)
            }
            Ok(false) => Ok(Progress::Moved),
            Err(_) => Err(ErrorKind::Tls),
        }
    }

    /// Handles readiness; completed responses are pushed to `done`. `hangup`: the
    /// event also reported the peer's close or an error (read to the end).
    pub fn on_event(
        &mut self,
        readable: bool,
        writable: bool,
        hangup: bool,
        prepared: &Prepared,
        done: &mut Vec<(Sent, Completed)>,
    ) -> Result<Progress, ErrorKind> {
        match self.state {
            ConnState::Down => Ok(Progress::Moved),
            ConnState::Connecting => {
                if self.handshaking {
                    return self.handshake();
                }
                let stream = self.stream.as_ref().ok_or(ErrorKind::Connect)?;
                let socket = stream.socket();
                if let Ok(Some(_)) | Err(_) = socket.take_error() {
                    return Err(ErrorKind::Connect);
                }
                match socket.peer_addr() {
                    Ok(_) if matches!(stream, Transport::Tls(_)) => {
                        self.handshaking = true;
                        self.handshake()
                    }
                    Ok(_) => {
                        self.state = ConnState::Open;
                        Ok(Progress::Connected)
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotConnected && !readable => {
                        Ok(Progress::Moved)
                    }
                    Err(_) => Err(ErrorKind::Connect),
                }
            }
            ConnState::Open => {
                if writable
                    && (self.write.is_some()
                        || self.stream.as_ref().is_some_and(|s| s.wants_write()))
                {
                    self.flush(prepared)?;
                }
                if readable || hangup {
                    return self.read_available(done, hangup);
                }
                Ok(Progress::Moved)
            }
        }
    }
}

impl Connection for Http1Conn {
    type Driver = EpollDriver;

    fn new(pipeline: usize) -> Self {
        Http1Conn {
            stream: None,
            state: ConnState::Down,
            handshaking: false,
            connect_started: Instant::now(),
            buf: Vec::new(),
            x: Exchange::new(pipeline),
            write: None,
        }
    }

    fn connect(
        &mut self,
        driver: &mut EpollDriver,
        slot: usize,
        group: &Group,
        _group_index: usize,
        now: Instant,
    ) -> io::Result<()> {
        self.drop_socket(driver);
        if self.buf.is_empty() {
            self.buf = vec![0; INITIAL_BUF];
        }
        let mut stream = TcpStream::connect(group.addr)?;
        stream.set_nodelay(true)?;
        driver.poll.registry().register(
            &mut stream,
            Token(slot),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        self.stream = Some(match &group.tls {
            None => Transport::Plain(stream),
            Some(tls) => Transport::Tls(Box::new(TlsStream::new(tls, stream)?)),
        });
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
        _driver: &mut EpollDriver,
        prepared: &Prepared,
        target: usize,
        batch: bool,
        sent: Sent,
    ) -> Result<(), ErrorKind> {
        self.x.push(sent, if batch { prepared.pipeline } else { 1 });
        self.write = Some(PendingWrite {
            target,
            batch,
            offset: 0,
        });
        self.flush(prepared)
    }

    fn drop_socket(&mut self, _driver: &mut EpollDriver) -> usize {
        self.stream = None; // closing the fd also removes it from the epoll set
        self.state = ConnState::Down;
        self.handshaking = false;
        self.write = None;
        self.x.reset()
    }

    fn take_failure(&mut self) -> Option<String> {
        self.stream.as_mut().and_then(Transport::failure)
    }
}
