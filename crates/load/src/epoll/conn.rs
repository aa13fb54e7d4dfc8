//! The epoll driver's connection: HTTP/1.1 or HTTP/2 over a non-blocking mio socket
//! (plain, TLS or unix-domain), moved by readiness events. The seam it implements —
//! [`Connection`], the states and error kinds every driver shares — is `crate::conn`;
//! the protocols' own state is `crate::http1` and `crate::h2`.
//!
//! Connecting goes through phases, all within the connect timeout and all before the
//! load model sees the connection: the TCP connect, the TLS handshake (`https://`),
//! and for HTTP/2 the preface exchange — the connection is ready once the server's
//! SETTINGS arrived, so its stream limit is known before the first request. Which
//! protocol it speaks is decided once the bytes can flow: HTTP/2 when the server chose
//! `h2` by ALPN, or with `--http2` on a plain socket (h2c, prior knowledge);
//! `--http2` over TLS fails a server that did not choose `h2`.

use super::EpollDriver;
use crate::conn::{ConnState, Connection, ErrorKind, Progress, Protocol, Sent};
use crate::h2::{self, H2};
use crate::http1::{Exchange, INITIAL_BUF};
use crate::parse::Completed;
use crate::request::{Group, Prepared};
use crate::spec::HttpVersion;
use crate::transport::{is_tls_failure, TlsStream, Transport};
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Token};
use perflab_units::Phrase;
use std::io;
use std::time::Instant;

/// A pending partial write.
#[derive(Debug, Clone, Copy)]
struct PendingWrite {
    target: usize,
    batch: bool,
    offset: usize,
}

/// Where a connect stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Tcp,
    Tls,
    /// HTTP/2 preface sent, waiting for the server's SETTINGS.
    H2,
}

/// A client connection driven by readiness (epoll).
#[derive(Debug)]
pub(crate) struct EpollConn {
    stream: Option<Transport>,
    state: ConnState,
    phase: Phase,
    http: HttpVersion,
    connect_started: Instant,
    buf: Vec<u8>,
    x: Exchange,
    write: Option<PendingWrite>,
    /// Set when the connection speaks HTTP/2.
    h2: Option<Box<H2>>,
    streams: usize,
    h2_window: u32,
    /// Why the connect failed, for the report.
    failure: Option<Phrase>,
    /// The last event stopped reading at [`READS_PER_EVENT`] with bytes still coming:
    /// the driver reads again next turn without waiting for an edge.
    pub read_again: bool,
}

/// The most reads one readiness event makes on one connection. A server that sends
/// without pause (a flood of PINGs or of body bytes, read as fast as it comes) would
/// otherwise keep the loop on its socket forever: past the end of the run, with the
/// other connections starved.
const READS_PER_EVENT: usize = 32;

fn io_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::TimedOut => ErrorKind::Timeout,
        io::ErrorKind::UnexpectedEof => ErrorKind::Closed,
        _ if is_tls_failure(e) => ErrorKind::Tls,
        _ => ErrorKind::Reset,
    }
}

impl EpollConn {
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

    /// Writes the HTTP/2 frames waiting (and TLS records rustls holds).
    fn flush_h2(&mut self) -> Result<(), ErrorKind> {
        let (Some(h2), Some(stream)) = (&mut self.h2, &mut self.stream) else {
            return Ok(());
        };
        write_h2(h2, stream)
    }

    fn read_available(
        &mut self,
        done: &mut Vec<(Sent, Completed)>,
        hangup: bool,
    ) -> Result<Progress, ErrorKind> {
        self.read_again = false;
        for _ in 0..READS_PER_EVENT {
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
                    if n < space && !hangup && stream_drains(&self.stream) {
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
        self.read_again = true;
        Ok(Progress::Moved)
    }

    /// Reads and handles HTTP/2 frames until the socket is drained (or
    /// [`READS_PER_EVENT`] reads).
    fn read_h2(
        &mut self,
        prepared: &Prepared,
        done: &mut Vec<(Sent, Completed)>,
        failed: &mut Vec<(Sent, ErrorKind)>,
        hangup: bool,
    ) -> Result<Progress, ErrorKind> {
        let drains = stream_drains(&self.stream);
        self.read_again = false;
        let (Some(h2), Some(stream)) = (&mut self.h2, &mut self.stream) else {
            return Err(ErrorKind::Closed);
        };
        for _ in 0..READS_PER_EVENT {
            h2.make_room(&mut self.buf);
            let space = self.buf.len() - h2.end;
            match stream.read(&mut self.buf[h2.end..]) {
                Ok(0) => return h2.on_eof(done),
                Ok(n) => {
                    h2.end += n;
                    process_h2(h2, stream, &self.buf, prepared, done, failed)?;
                    if n < space && !hangup && drains {
                        return Ok(Progress::Moved);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Progress::Moved),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_kind(&e)),
            }
        }
        self.read_again = true;
        Ok(Progress::Moved)
    }

    /// The bytes can flow: HTTP/1.1 is ready now; HTTP/2 sends its preface and waits.
    fn transport_ready(&mut self, alpn_h2: Option<bool>) -> Result<Progress, ErrorKind> {
        let h2 = match alpn_h2 {
            None => self.http == HttpVersion::Http2,
            Some(true) => true,
            Some(false) if self.http == HttpVersion::Http2 => {
                self.failure = Some(
                    Phrase::text("the server did not choose HTTP/2 by ALPN (")
                        .and_setting("http", "2")
                        .then(" offers only `h2`; drop it to fall back to HTTP/1.1)"),
                );
                return Err(ErrorKind::Tls);
            }
            Some(false) => false,
        };
        if !h2 {
            self.state = ConnState::Open;
            return Ok(Progress::Connected);
        }
        if self.buf.len() < h2::READ_BUF {
            self.buf = vec![0; h2::READ_BUF];
        }
        self.h2 = Some(Box::new(H2::new(self.streams, self.h2_window)));
        self.phase = Phase::H2;
        self.flush_h2()?;
        Ok(Progress::Moved)
    }

    /// Advances a connect through its phases.
    fn advance_connect(
        &mut self,
        readable: bool,
        hangup: bool,
        prepared: &Prepared,
        done: &mut Vec<(Sent, Completed)>,
        failed: &mut Vec<(Sent, ErrorKind)>,
    ) -> Result<Progress, ErrorKind> {
        match self.phase {
            Phase::Tcp => {
                let stream = self.stream.as_ref().ok_or(ErrorKind::Connect)?;
                match stream.connected() {
                    Ok(true) if matches!(stream, Transport::Tls(_)) => {
                        self.phase = Phase::Tls;
                        self.advance_connect(readable, hangup, prepared, done, failed)
                    }
                    Ok(true) => {
                        let p = self.transport_ready(None)?;
                        if self.phase == Phase::H2 && (readable || hangup) {
                            return self.advance_connect(readable, hangup, prepared, done, failed);
                        }
                        Ok(p)
                    }
                    Ok(false) if !readable => Ok(Progress::Moved),
                    Ok(false) | Err(_) => Err(ErrorKind::Connect),
                }
            }
            Phase::Tls => {
                let Some(Transport::Tls(tls)) = &mut self.stream else {
                    return Err(ErrorKind::Connect);
                };
                match tls.handshake() {
                    Ok(true) => {
                        let alpn_h2 = tls.alpn() == Some(b"h2");
                        let p = self.transport_ready(Some(alpn_h2))?;
                        if self.phase == Phase::H2 {
                            // The server's SETTINGS may already sit in rustls' buffer.
                            return self.advance_connect(true, hangup, prepared, done, failed);
                        }
                        Ok(p)
                    }
                    Ok(false) => Ok(Progress::Moved),
                    Err(_) => Err(ErrorKind::Tls),
                }
            }
            Phase::H2 => {
                let r = self.read_h2(prepared, done, failed, hangup);
                let settled = self.h2.as_ref().is_some_and(|h| h.settled());
                match r {
                    Err(_) | Ok(Progress::ClosedIdle) if !settled => {
                        self.failure = Some(
                            Phrase::text(
                                "the server did not answer the HTTP/2 preface with SETTINGS \
                                 (does it speak h2c with prior knowledge on this port? drop ",
                            )
                            .and_setting("http", "2")
                            .then(" for HTTP/1.1)"),
                        );
                        Err(ErrorKind::Connect)
                    }
                    Err(k) => Err(k),
                    Ok(_) if settled => {
                        self.flush_h2()?;
                        self.state = ConnState::Open;
                        Ok(Progress::Connected)
                    }
                    Ok(p) => {
                        self.flush_h2()?;
                        Ok(p)
                    }
                }
            }
        }
    }

    /// Handles readiness; completed responses are pushed to `done`, requests that
    /// failed alone (an HTTP/2 stream) to `failed`. `hangup`: the event also reported
    /// the peer's close or an error (read to the end).
    pub fn on_event(
        &mut self,
        readable: bool,
        writable: bool,
        hangup: bool,
        prepared: &Prepared,
        done: &mut Vec<(Sent, Completed)>,
        failed: &mut Vec<(Sent, ErrorKind)>,
    ) -> Result<Progress, ErrorKind> {
        match self.state {
            ConnState::Down => Ok(Progress::Moved),
            ConnState::Connecting => {
                if writable && self.phase == Phase::H2 {
                    self.flush_h2()?;
                }
                self.advance_connect(readable, hangup, prepared, done, failed)
            }
            ConnState::Open if self.h2.is_some() => {
                if writable {
                    self.flush_h2()?;
                }
                if readable || hangup {
                    return self.read_h2(prepared, done, failed, hangup);
                }
                Ok(Progress::Moved)
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

/// Writes `h2`'s frames waiting on `stream` (and TLS records rustls holds) until done
/// or the socket would block.
fn write_h2(h2: &mut H2, stream: &mut Transport) -> Result<(), ErrorKind> {
    match h2.flush(|b| stream.write(b)) {
        Ok(()) => stream.push_pending().map_err(|e| io_kind(&e)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
        Err(e) => Err(io_kind(&e)),
    }
}

/// Handles the frames read into `buf`. When the control replies they make pass their
/// bound, writes them before going on; a socket that does not take enough of them
/// fails the connection ([`ErrorKind::OutputQueueFull`]). A connection error's GOAWAY
/// is written if the socket takes it.
fn process_h2(
    h2: &mut H2,
    stream: &mut Transport,
    buf: &[u8],
    prepared: &Prepared,
    done: &mut Vec<(Sent, Completed)>,
    failed: &mut Vec<(Sent, ErrorKind)>,
) -> Result<(), ErrorKind> {
    loop {
        if let Err(k) = h2.process(buf, prepared, done, failed) {
            let _ = write_h2(h2, stream);
            return Err(k);
        }
        if !h2.control_over_bound() {
            return Ok(());
        }
        write_h2(h2, stream)?;
        if h2.control_over_bound() {
            return Err(ErrorKind::OutputQueueFull);
        }
    }
}

/// Whether a short read means the socket is drained (plain sockets only).
fn stream_drains(s: &Option<Transport>) -> bool {
    s.as_ref().is_some_and(Transport::short_read_drains)
}

impl Connection for EpollConn {
    type Driver = EpollDriver;

    fn new(pipeline: usize) -> Self {
        EpollConn {
            stream: None,
            state: ConnState::Down,
            phase: Phase::Tcp,
            http: HttpVersion::Auto,
            connect_started: Instant::now(),
            buf: Vec::new(),
            x: Exchange::new(pipeline),
            write: None,
            h2: None,
            streams: 1,
            h2_window: crate::spec::DEFAULT_H2_WINDOW,
            failure: None,
            read_again: false,
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
        self.http = group.http;
        self.streams = group.streams;
        self.h2_window = group.h2_window;
        self.state = ConnState::Connecting;
        self.phase = Phase::Tcp;
        self.connect_started = now;
        self.read_again = false;
        Ok(())
    }

    fn state(&self) -> ConnState {
        self.state
    }

    fn connect_started(&self) -> Instant {
        self.connect_started
    }

    fn in_flight(&self) -> usize {
        match &self.h2 {
            Some(h) => h.in_flight(),
            None => self.x.in_flight.len(),
        }
    }

    fn oldest(&self) -> Option<&Sent> {
        match &self.h2 {
            Some(h) => h.oldest(),
            None => self.x.in_flight.front(),
        }
    }

    fn each_in_flight(&self, f: &mut dyn FnMut(&Sent)) {
        match &self.h2 {
            Some(h) => h.each_in_flight(f),
            None => self.x.in_flight.iter().for_each(f),
        }
    }

    fn closing(&self) -> bool {
        match &self.h2 {
            Some(h) => h.closing,
            None => self.x.closing,
        }
    }

    fn send(
        &mut self,
        _driver: &mut EpollDriver,
        prepared: &Prepared,
        target: usize,
        batch: bool,
        sent: Sent,
    ) -> Result<(), ErrorKind> {
        if let Some(h2) = &mut self.h2 {
            // Written by `flush_out`, with the other frames of this turn.
            h2.send(prepared, target, sent);
            return Ok(());
        }
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
        self.phase = Phase::Tcp;
        self.write = None;
        self.read_again = false;
        let h2 = self.h2.take().map_or(0, |h| h.in_flight());
        h2 + self.x.reset()
    }

    fn take_failure(&mut self) -> Option<Phrase> {
        self.failure
            .take()
            .or_else(|| self.stream.as_mut().and_then(Transport::failure))
    }

    fn free(&self) -> usize {
        match &self.h2 {
            Some(h) => h.free(),
            None => usize::from(self.x.in_flight.is_empty()),
        }
    }

    fn flush_out(&mut self, _driver: &mut EpollDriver) -> Result<(), ErrorKind> {
        if self.state == ConnState::Open && self.h2.as_ref().is_some_and(|h| h.has_output()) {
            return self.flush_h2();
        }
        Ok(())
    }

    fn protocol(&self) -> Protocol {
        match self.h2 {
            Some(_) => Protocol::Http2,
            None => Protocol::Http1,
        }
    }
}
