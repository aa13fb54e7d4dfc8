//! The connection layer: one client connection, behind the [`Connection`] trait, which
//! the epoll driver's connection (`epoll::conn`, HTTP/1.1 and HTTP/2) and the io_uring
//! one (`uring::conn`, HTTP/1.1) implement.
//!
//! The workers' bookkeeping and the load models drive connections only through this
//! trait — start a connect, ask what is in flight and how many more requests it takes
//! ([`Connection::free`]: one for an idle HTTP/1.1 connection, the free streams of an
//! HTTP/2 one), hand it a request, drop it — so HTTP/2 (`h2`, many streams on one
//! connection, the same completions) and another I/O driver fit without touching them. Each connection type belongs to one
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

use crate::request::{Group, Prepared};
use perflab_units::Phrase;
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
    /// HTTP/2: the server reset the request's stream (RST_STREAM).
    StreamReset,
    /// HTTP/2: the server's GOAWAY left the request unprocessed.
    GoAway,
    /// HTTP/2: a header block (HEADERS and its CONTINUATIONs) over the client's bound,
    /// in bytes or in frames: a connection error.
    HeaderBlockTooLarge,
    /// HTTP/2: the control-frame replies (PING and SETTINGS acknowledgements, window
    /// updates) queued for a socket that does not drain passed their bound.
    OutputQueueFull,
    /// HTTP/2: a WINDOW_UPDATE or SETTINGS took a flow-control window past 2^31-1
    /// (FLOW_CONTROL_ERROR, RFC 9113 §6.9.1, §6.9.2).
    FlowControl,
    /// Still unanswered at the end of the run after far longer than the run's answers
    /// took (see `crate::report::stalled_after`). Counted only at the end.
    Stalled,
}

/// The protocol a connection speaks once connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    Http1,
    Http2,
}

/// A request that was written (or is being written) and awaits its response.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sent {
    /// When the load model meant to send it (open loop: the schedule; closed: = written).
    pub intended: Instant,
    /// When it could first have been written: the later of `intended` and the moment
    /// its connection was free (open loop; = `written` in the closed loop). From here
    /// to `written` the generator was late on its own, which is not the server's time.
    pub sendable: Instant,
    /// When it was handed to the socket.
    pub written: Instant,
    /// Counted in the report (false during warm-up).
    pub record: bool,
    /// A HEAD request (its response has no body).
    pub head: bool,
    /// The prepared target it was sent to (per-target statistics).
    pub target: u32,
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
    /// Calls `f` for every request in flight (the end of a run judges each).
    fn each_in_flight(&self, f: &mut dyn FnMut(&Sent));
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
    fn take_failure(&mut self) -> Option<Phrase>;
    /// How many more requests it can take now: one when an HTTP/1.1 connection is
    /// idle, the free streams of an HTTP/2 one.
    fn free(&self) -> usize {
        usize::from(self.in_flight() == 0)
    }
    /// Writes what [`Connection::send`] queued without writing (HTTP/2 batches the
    /// frames of one turn of the loop into one write).
    fn flush_out(&mut self, _driver: &mut Self::Driver) -> Result<(), ErrorKind> {
        Ok(())
    }
    /// The protocol it speaks (once connected).
    fn protocol(&self) -> Protocol {
        Protocol::Http1
    }
}
