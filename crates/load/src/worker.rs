//! One worker thread: an event loop over its share of the connections.
//!
//! [`Core`] owns what every load model and every I/O driver needs — the connections,
//! the recorder, the driver, reconnects with back-off, failure accounting — and
//! [`Worker`] runs the loop: the coarse deadlines (record start, the once-a-second
//! tick, the timeout and back-off scan every [`SCAN_EVERY`], the end), the load model
//! ([`ClosedLoop`] or [`OpenLoop`]) that decides when a request is sent, and what a
//! connection's progress means ([`Worker::progress`]). The I/O itself is a [`Driver`]:
//! it sleeps until something happens (or the nearest deadline) and hands each
//! connection's progress back. Two exist — `epoll` (readiness, every load model,
//! plain and TLS) and `uring` (completions, plain-http closed loop) — and `io` picks
//! one per run; the bookkeeping here is theirs in common, so timeouts, reconnects,
//! back-off and error kinds cannot drift apart between them.

use crate::closed::ClosedLoop;
use crate::conn::{ConnState, Connection, ErrorKind, Progress, Sent};
use crate::cpu::{thread_cpu, thread_run_wait};
use crate::open::OpenLoop;
use crate::parse::Completed;
use crate::record::{micros, Msg, Recorder};
use crate::request::Prepared;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often connect and request timeouts (and reconnect back-offs) are checked.
pub(crate) const SCAN_EVERY: Duration = Duration::from_millis(10);
/// Longest back-off between connect attempts after repeated connect failures.
const MAX_BACKOFF: Duration = Duration::from_millis(100);

/// What a worker is told to do.
pub(crate) struct WorkerConfig {
    pub thread: usize,
    pub prepared: Arc<Prepared>,
    pub connections: usize,
    pub record_start: Instant,
    pub end: Option<Instant>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub tx: Sender<Msg>,
    /// Set from outside (Ctrl-C): end the phase now.
    pub stop: Arc<AtomicBool>,
}

/// The load model of a worker.
pub(crate) enum Model {
    Closed(ClosedLoop),
    Open(OpenLoop),
}

/// An I/O driver: how a worker waits for and learns about its connections' I/O.
pub(crate) trait Driver: Sized {
    /// The connection type the driver moves bytes for.
    type Conn: Connection<Driver = Self>;
    /// Sets the driver up for a worker (`open_loop`: the model has a send schedule).
    fn new(cfg: &WorkerConfig, open_loop: bool) -> io::Result<Self>;
    /// The open loop's next intended send time: wake up for it, precisely.
    fn wake_at(&mut self, at: Instant) -> io::Result<()>;
    /// One turn of the loop (`now`: read at its start): sleeps until I/O progresses or
    /// `deadline` passes, then hands every connection's progress to the worker
    /// ([`Core::record_done`], [`Worker::progress`]).
    fn turn(w: &mut Worker<Self>, now: Instant, deadline: Instant) -> io::Result<()>;
}

/// One connection and its bookkeeping.
pub(crate) struct Slot<C> {
    pub conn: C,
    group: usize,
    cursor: usize,
    retry_at: Option<Instant>,
    streak: u32,
    ever_connected: bool,
    /// A response completed on the current socket (for `--no-keepalive`).
    served: bool,
    pub idle: bool,
}

/// The model-independent part of a worker.
pub(crate) struct Core<D: Driver> {
    /// First field: dropped first, so a driver that lends memory to the kernel can take
    /// it back before anything else goes.
    pub driver: D,
    pub slots: Vec<Slot<D::Conn>>,
    pub cfg: WorkerConfig,
    pub rec: Recorder,
    /// Responses completed by the connection being handled, before they are recorded.
    pub done: Vec<(Sent, Completed)>,
    /// Requests that failed alone (an HTTP/2 stream reset, or refused by GOAWAY) on
    /// the connection being handled, before they are counted.
    pub failed: Vec<(Sent, ErrorKind)>,
    pub recording: bool,
    pub connecting: usize,
    rng: u64,
    cpu_start: Duration,
    wait_start: Duration,
}

impl<D: Driver> Core<D> {
    /// Adds a connection and starts connecting it; returns its index and an immediate
    /// connect failure, if any.
    pub fn add_conn(&mut self, now: Instant) -> (usize, Option<ErrorKind>) {
        let i = self.slots.len();
        let groups = self.cfg.prepared.groups.len();
        self.slots.push(Slot {
            conn: D::Conn::new(self.cfg.prepared.pipeline),
            group: (i + self.cfg.thread) % groups,
            cursor: 0,
            retry_at: None,
            streak: 0,
            ever_connected: false,
            served: false,
            idle: false,
        });
        (i, self.start_connect(i, now))
    }

    /// Starts (re)connecting slot `i`; an immediate failure counts as a connect error.
    pub fn start_connect(&mut self, i: usize, now: Instant) -> Option<ErrorKind> {
        let slot = &mut self.slots[i];
        let gi = slot.group;
        let group = &self.cfg.prepared.groups[gi];
        match slot.conn.connect(&mut self.driver, i, group, gi, now) {
            Ok(()) => {
                self.connecting += 1;
                None
            }
            Err(_) => Some(ErrorKind::Connect),
        }
    }

    /// Drops slot `i`'s socket; returns the requests that were in flight.
    fn drop_conn(&mut self, i: usize) -> u64 {
        let slot = &mut self.slots[i];
        if slot.conn.state() == ConnState::Connecting {
            self.connecting -= 1;
        }
        slot.idle = false;
        slot.served = false;
        slot.conn.drop_socket(&mut self.driver) as u64
    }

    /// Picks the next URL for slot `i` (round-robin or random within its group).
    fn pick_target(&mut self, i: usize) -> usize {
        let prepared = &self.cfg.prepared;
        let slot = &mut self.slots[i];
        let targets = &prepared.groups[slot.group].targets;
        if targets.len() == 1 {
            return targets[0];
        }
        let k = if prepared.random || prepared.weighted {
            // xorshift64: uniform enough for URL choice, no allocation, no locking.
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            if prepared.weighted {
                let cum = &prepared.groups[slot.group].cum;
                let x = self.rng % cum.last().copied().unwrap_or(1).max(1);
                cum.partition_point(|&c| c <= x)
            } else {
                (self.rng % targets.len() as u64) as usize
            }
        } else {
            // In file order from the first target on.
            let k = slot.cursor % targets.len();
            slot.cursor = slot.cursor.wrapping_add(1);
            k
        };
        targets[k]
    }

    /// Sends one request (or a pipelined batch) on slot `i`: meant for `intended`, it
    /// could go from `sendable` (its connection free too) and goes `now`.
    pub fn send(
        &mut self,
        i: usize,
        intended: Instant,
        sendable: Instant,
        now: Instant,
        batch: bool,
        record: bool,
    ) -> Result<(), ErrorKind> {
        let t = self.pick_target(i);
        let prepared = &self.cfg.prepared;
        let sent = Sent {
            intended,
            sendable: sendable.clamp(intended, now.max(intended)),
            written: now,
            record,
            head: prepared.targets[t].head,
            target: t as u32,
        };
        self.slots[i]
            .conn
            .send(&mut self.driver, prepared, t, batch, sent)
    }

    /// Records the responses slot `i` just completed (in `done`) as completed at `at`.
    #[inline]
    pub fn record_done(&mut self, i: usize, at: Instant) {
        for (sent, kind) in self.failed.drain(..) {
            if self.recording && sent.record {
                self.rec.error(kind, 1);
            }
        }
        if self.done.is_empty() {
            return;
        }
        self.slots[i].served = true;
        for (sent, c) in self.done.drain(..) {
            self.rec.response(&sent, at, &c);
        }
    }

    /// Handles a failure of slot `i`. Returns the kind of a connect failure, which the
    /// caller counts once the model has accounted for the request it could not send (a
    /// request-count run with no request left counts none). A failed TLS handshake is
    /// one; a TLS failure on an open connection fails its requests like a reset.
    fn fail(
        &mut self,
        i: usize,
        kind: ErrorKind,
        now: Instant,
        reconnect: bool,
    ) -> Option<ErrorKind> {
        let handshake = self.slots[i].conn.state() == ConnState::Connecting;
        let failure = match kind {
            ErrorKind::Tls | ErrorKind::Connect => self.slots[i].conn.take_failure(),
            _ => None,
        };
        let in_flight = self.drop_conn(i);
        let connect = match kind {
            ErrorKind::Connect | ErrorKind::ConnectTimeout => true,
            ErrorKind::Tls => handshake,
            _ => false,
        };
        if self.recording && (connect || in_flight > 0) {
            // The first reason is kept for the report; later ones are only counted.
            let first = match kind {
                ErrorKind::Tls => &mut self.rec.totals.tls_failure,
                _ => &mut self.rec.totals.connect_failure,
            };
            if first.is_none() {
                *first = failure;
            }
        }
        if connect {
            let slot = &mut self.slots[i];
            slot.streak = slot.streak.saturating_add(1);
            let backoff = Duration::from_millis(1 << slot.streak.min(7)).min(MAX_BACKOFF);
            slot.retry_at = reconnect.then_some(now + backoff);
            Some(kind)
        } else {
            if self.recording && in_flight > 0 {
                self.rec.error(kind, in_flight);
            }
            if reconnect {
                if let Some(k) = self.start_connect(i, now) {
                    return self.fail(i, k, now, reconnect);
                }
            }
            None
        }
    }

    /// Requests in flight on all connections.
    pub fn in_flight(&self) -> u64 {
        self.slots.iter().map(|s| s.conn.in_flight() as u64).sum()
    }
}

/// A worker thread's state.
pub(crate) struct Worker<D: Driver> {
    pub core: Core<D>,
    model: Model,
}

impl<D: Driver> Worker<D> {
    pub fn new(cfg: WorkerConfig, model: Model) -> io::Result<Self> {
        let open = matches!(model, Model::Open(_));
        let rec = Recorder::new(
            cfg.thread,
            cfg.tx.clone(),
            open,
            cfg.record_start,
            cfg.prepared.targets.len(),
        );
        let rng =
            0x9E37_79B9_7F4A_7C15 ^ (cfg.thread as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D);
        Ok(Worker {
            core: Core {
                driver: D::new(&cfg, open)?,
                slots: Vec::with_capacity(cfg.connections),
                rec,
                done: Vec::with_capacity(64),
                failed: Vec::new(),
                recording: false,
                connecting: 0,
                rng,
                cpu_start: Duration::ZERO,
                wait_start: Duration::ZERO,
                cfg,
            },
            model,
        })
    }

    /// Runs until the end of the phase, then reports to the coordinator.
    pub fn run(mut self) -> io::Result<()> {
        let now = Instant::now();
        for _ in 0..self.core.cfg.connections {
            if let (i, Some(kind)) = self.core.add_conn(now) {
                self.fail(i, kind);
            }
        }
        let mut next_scan = now + SCAN_EVERY;
        loop {
            let now = Instant::now();
            if !self.core.recording && now >= self.core.cfg.record_start {
                self.core.recording = true;
                self.core.cpu_start = thread_cpu();
                self.core.wait_start = thread_run_wait();
            }
            if self.core.cfg.end.is_some_and(|e| now >= e)
                || self.finished()
                || self.core.cfg.stop.load(Ordering::Relaxed)
            {
                break;
            }
            if self.core.recording {
                self.core.rec.tick(now);
            }
            if now >= next_scan {
                self.scan(now);
                next_scan = now + SCAN_EVERY;
            }
            if let Model::Open(ol) = &mut self.model {
                ol.dispatch(&mut self.core, now);
                while let Some((i, kind)) = self.open_failure() {
                    self.fail(i, kind);
                }
                if let Model::Open(ol) = &self.model {
                    self.core.driver.wake_at(ol.next_send())?;
                }
            }
            let deadline = self.deadline(next_scan);
            D::turn(&mut self, now, deadline)?;
        }
        self.finish();
        Ok(())
    }

    fn open_failure(&mut self) -> Option<(usize, ErrorKind)> {
        match &mut self.model {
            Model::Open(ol) => ol.take_failure(),
            Model::Closed(_) => None,
        }
    }

    /// A request-count run is over once the tickets are gone and nothing is in flight.
    fn finished(&self) -> bool {
        match &self.model {
            Model::Closed(cl) => cl.exhausted() && self.core.in_flight() == 0,
            Model::Open(_) => false,
        }
    }

    /// Until when the driver may sleep: the nearest coarse deadline. The open loop's
    /// next send is not one of them: the driver wakes for it ([`Driver::wake_at`]).
    fn deadline(&self, next_scan: Instant) -> Instant {
        let c = &self.core;
        let mut deadline = next_scan;
        if let Some(e) = c.cfg.end {
            deadline = deadline.min(e);
        }
        deadline.min(if c.recording {
            c.rec.next_tick()
        } else {
            c.cfg.record_start
        })
    }

    /// What the I/O on slot `i` came to (its completions already recorded): a connect
    /// completed, bytes moved, the idle socket was closed by the peer, or a failure.
    pub fn progress(&mut self, i: usize, res: Result<Progress, ErrorKind>, now: Instant) {
        let core = &mut self.core;
        let slot = &mut core.slots[i];
        match res {
            Ok(Progress::Connected) => {
                core.connecting -= 1;
                slot.streak = 0;
                core.rec.totals.connections_opened += 1;
                core.rec.totals.protocols[slot.conn.protocol() as usize] += 1;
                if slot.ever_connected {
                    core.rec.totals.reconnects += 1;
                }
                slot.ever_connected = true;
                self.on_ready(i, now);
            }
            Ok(Progress::Moved) => {
                let closed = slot.conn.closing() && slot.conn.in_flight() == 0;
                if slot.conn.state() == ConnState::Open && (slot.conn.free() > 0 || closed) {
                    self.on_ready(i, now);
                }
            }
            Ok(Progress::ClosedIdle) => self.reconnect(i),
            Err(kind) => self.fail(i, kind),
        }
    }

    /// Slot `i` is connected and can take requests (or is closing): the model decides
    /// what to send.
    fn on_ready(&mut self, i: usize, now: Instant) {
        let slot = &self.core.slots[i];
        if slot.conn.closing() || (slot.served && !self.core.cfg.prepared.keepalive) {
            // HTTP/2 streams still in flight finish first.
            if slot.conn.in_flight() == 0 {
                self.reconnect(i);
            }
            return;
        }
        let result = match &mut self.model {
            Model::Closed(cl) => cl.on_ready(&mut self.core, i, now),
            Model::Open(ol) => {
                ol.on_ready(&mut self.core, i, now);
                Ok(())
            }
        };
        if let Err(kind) = result {
            self.fail(i, kind);
        }
    }

    /// Writes what slot `i` queued this turn (HTTP/2 frames); a failure fails it.
    pub fn flush_out(&mut self, i: usize) {
        let core = &mut self.core;
        if let Some(slot) = core.slots.get_mut(i) {
            if let Err(kind) = slot.conn.flush_out(&mut core.driver) {
                self.fail(i, kind);
            }
        }
    }

    fn wants_connections(&self) -> bool {
        match &self.model {
            Model::Closed(cl) => !cl.exhausted(),
            Model::Open(_) => true,
        }
    }

    fn reconnect(&mut self, i: usize) {
        self.core.drop_conn(i);
        if self.wants_connections() {
            if let Some(kind) = self.core.start_connect(i, Instant::now()) {
                self.fail(i, kind);
            }
        }
    }

    fn fail(&mut self, i: usize, kind: ErrorKind) {
        let reconnect = self.wants_connections();
        let recording = self.core.recording;
        if let Some(kind) = self.core.fail(i, kind, Instant::now(), reconnect) {
            if recording {
                let counted = match &mut self.model {
                    Model::Closed(cl) => cl.consume_failed(),
                    Model::Open(ol) => {
                        ol.consume_failed();
                        true
                    }
                };
                if counted {
                    self.core.rec.error(kind, 1);
                }
            }
        }
    }

    /// Connect and request timeouts, reconnect back-offs.
    fn scan(&mut self, now: Instant) {
        let (timeout, connect_timeout) = (self.core.cfg.timeout, self.core.cfg.connect_timeout);
        for i in 0..self.core.slots.len() {
            let slot = &mut self.core.slots[i];
            match slot.conn.state() {
                ConnState::Connecting
                    if now.saturating_duration_since(slot.conn.connect_started())
                        >= connect_timeout =>
                {
                    self.fail(i, ErrorKind::ConnectTimeout)
                }
                ConnState::Open
                    if slot
                        .conn
                        .oldest()
                        .is_some_and(|o| now.saturating_duration_since(o.written) >= timeout) =>
                {
                    self.fail(i, ErrorKind::Timeout)
                }
                ConnState::Down if slot.retry_at.is_some_and(|t| now >= t) => {
                    slot.retry_at = None;
                    if self.wants_connections() {
                        if let Some(kind) = self.core.start_connect(i, now) {
                            self.fail(i, kind);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Counts what is cut off by the end, measures CPU, reports.
    fn finish(self) {
        let Worker { mut core, model } = self;
        let now = Instant::now();
        if core.recording {
            // Each recorded request still in flight is cut off by the end; how long it
            // had waited decides, once the run's p99 is known, whether it stalled.
            let totals = &mut core.rec.totals;
            for s in &core.slots {
                if s.conn.state() == ConnState::Connecting {
                    let age = now.saturating_duration_since(s.conn.connect_started());
                    totals.connect_ages.saturating_record(micros(age));
                }
                s.conn.each_in_flight(&mut |sent| {
                    if sent.record {
                        totals.cancelled_at_end += 1;
                        let age = micros(now.saturating_duration_since(sent.intended));
                        totals.end_ages.saturating_record(age);
                    }
                });
            }
            if let Model::Open(ol) = &model {
                core.rec.totals.cancelled_at_end += ol.pending_recorded(core.cfg.record_start);
                core.rec.totals.late += ol.late();
            }
            core.rec.totals.cpu = thread_cpu().saturating_sub(core.cpu_start);
            core.rec.totals.wait = thread_run_wait().saturating_sub(core.wait_start);
            core.rec.totals.wall = now.saturating_duration_since(core.cfg.record_start);
        }
        let end = core.cfg.end.map_or(now, |e| e.min(now));
        // The driver goes first: it takes back what it lent the kernel, then the sockets
        // close.
        drop(core.driver);
        drop(core.slots);
        core.rec.finish(end.max(core.cfg.record_start));
    }
}
