//! The epoll driver's connection: HTTP/1.1 over a non-blocking mio socket (plain or
//! TLS), moved by readiness events. The seam it implements — [`Connection`], the
//! states and error kinds every driver shares — is `crate::conn`.

use super::EpollDriver;
use crate::conn::{ConnState, Connection, ErrorKind, Progress, Sent};
use crate::http1::{Exchange, INITIAL_BUF};
use crate::parse::Completed;
use crate::request::{Group, Prepared};
use crate::transport::{is_tls_failure, TlsStream, Transport};
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Token};
use std::io;
use std::time::Instant;

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
                match stream.connected() {
                    Ok(true) if matches!(stream, Transport::Tls(_)) => {
                        self.handshaking = true;
                        self.handshake()
                    }
                    Ok(true) => {
                        self.state = ConnState::Open;
                        Ok(Progress::Connected)
                    }
                    Ok(false) if !readable => Ok(Progress::Moved),
                    Ok(false) | Err(_) => Err(ErrorKind::Connect),
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
        let interest = Interest::READABLE | Interest::WRITABLE;
        self.stream = Some(match (&group.unix, &group.tls) {
            (Some(path), _) => {
                let mut stream = UnixStream::connect(path)?;
                driver
                    .poll
                    .registry()
                    .register(&mut stream, Token(slot), interest)?;
                Transport::Unix(stream)
            }
            (None, tls) => {
                let mut stream = TcpStream::connect(group.addr)?;
                stream.set_nodelay(true)?;
                driver
                    .poll
                    .registry()
                    .register(&mut stream, Token(slot), interest)?;
                match tls {
                    None => Transport::Plain(stream),
                    Some(tls) => Transport::Tls(Box::new(TlsStream::new(tls, stream)?)),
                }
            }
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
