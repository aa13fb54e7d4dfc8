//! One worker thread: an event loop (mio/epoll) over its share of the connections.
//!
//! [`Core`] owns what every load model needs — the poll instance, the connections, the
//! recorder, reconnect and timeout handling — and [`Worker`] runs the loop and lets the
//! model ([`ClosedLoop`] or [`OpenLoop`]) decide when a request is sent. Generic over
//! [`Connection`] so another protocol plugs in without touching the loop.
//!
//! Waiting: the loop sleeps in `Poll::poll`, whose timeout mio hands to `epoll_wait` in
//! whole milliseconds, rounded up. That is fine for the coarse deadlines — the timeout
//! and back-off scan every [`SCAN_EVERY`], the once-a-second tick, the start of
//! recording and the end — none of which is measured against. It is not fine for the
//! open loop's schedule: latency is measured from each request's intended send time,
//! so every microsecond a send is late is charged to the server, and a rounded timeout
//! sent requests up to ~1 ms late. So an open-loop worker also registers a
//! [`SendTimer`] (a `timerfd` with an absolute, nanosecond deadline) armed for the next
//! intended send, and leaves that deadline out of the poll timeout: the poll wakes
//! when the request is due, within the kernel's wake-up latency (µs), without
//! spinning. The other deadlines stay on the poll timeout rather than moving onto the
//! timer, so the timer is re-armed only when the schedule moves on (once per request),
//! not for every deadline, and the closed loop, which has no schedule, keeps no timer
//! and runs exactly as before.

use crate::closed::ClosedLoop;
use crate::conn::{ConnState, Connection, ErrorKind, Progress, Sent};
use crate::cpu::thread_cpu;
use crate::open::OpenLoop;
use crate::parse::Completed;
use crate::record::{Msg, Recorder};
use crate::request::Prepared;
use crate::timer::SendTimer;
use mio::{Events, Poll, Token};
use std::io;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often connect and request timeouts (and reconnect back-offs) are checked.
const SCAN_EVERY: Duration = Duration::from_millis(10);
/// Longest back-off between connect attempts after repeated connect failures.
const MAX_BACKOFF: Duration = Duration::from_millis(100);
/// The open loop's send timer's token (connections use their slot index).
const TIMER: Token = Token(usize::MAX);

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
}

/// The load model of a worker.
pub(crate) enum Model {
    Closed(ClosedLoop),
    Open(OpenLoop),
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
pub(crate) struct Core<C> {
    pub cfg: WorkerConfig,
    poll: Poll,
    pub slots: Vec<Slot<C>>,
    pub rec: Recorder,
    done: Vec<(Sent, Completed)>,
    pub recording: bool,
    pub connecting: usize,
    rng: u64,
    cpu_start: Duration,
}

impl<C: Connection> Core<C> {
    /// Adds a connection and starts connecting it; returns its index and an immediate
    /// connect failure, if any.
    pub fn add_conn(&mut self, now: Instant) -> (usize, Option<ErrorKind>) {
        let i = self.slots.len();
        let groups = self.cfg.prepared.groups.len();
        self.slots.push(Slot {
            conn: C::new(self.cfg.prepared.pipeline),
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
        let group = &self.cfg.prepared.groups[slot.group];
        match slot
            .conn
            .connect(self.poll.registry(), Token(i), group, now)
        {
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
        slot.conn.drop_socket() as u64
    }

    /// Picks the next URL for slot `i` (round-robin or random within its group).
    fn pick_target(&mut self, i: usize) -> usize {
        let prepared = &self.cfg.prepared;
        let slot = &mut self.slots[i];
        let targets = &prepared.groups[slot.group].targets;
        if targets.len() == 1 {
            return targets[0];
        }
        let k = if prepared.random {
            // xorshift64: uniform enough for URL choice, no allocation, no locking.
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            (self.rng % targets.len() as u64) as usize
        } else {
            slot.cursor = slot.cursor.wrapping_add(1);
            slot.cursor % targets.len()
        };
        targets[k]
    }

    /// Sends one request (or a pipelined batch) on slot `i`.
    pub fn send(
        &mut self,
        i: usize,
        intended: Instant,
        now: Instant,
        batch: bool,
        record: bool,
    ) -> Result<(), ErrorKind> {
        let t = self.pick_target(i);
        let prepared = &self.cfg.prepared;
        let sent = Sent {
            intended,
            written: now,
            record,
            head: prepared.targets[t].head,
        };
        self.slots[i].conn.send(prepared, t, batch, sent)
    }

    /// Handles a failure of slot `i`. Returns whether it was a connect failure (the
    /// model then accounts for the request it could not send). A failed TLS handshake
    /// is one; a TLS failure on an open connection fails its requests like a reset.
    fn fail(&mut self, i: usize, kind: ErrorKind, now: Instant, reconnect: bool) -> bool {
        let handshake = self.slots[i].conn.state() == ConnState::Connecting;
        let tls_failure = match kind {
            ErrorKind::Tls => self.slots[i].conn.take_failure(),
            _ => None,
        };
        let in_flight = self.drop_conn(i);
        let connect = match kind {
            ErrorKind::Connect | ErrorKind::ConnectTimeout => true,
            ErrorKind::Tls => handshake,
            _ => false,
        };
        if self.recording && (connect || in_flight > 0) && self.rec.totals.tls_failure.is_none() {
            // The first reason is kept for the report; later ones are only counted.
            self.rec.totals.tls_failure = tls_failure;
        }
        if connect {
            if self.recording {
                self.rec.error(kind, 1);
            }
            let slot = &mut self.slots[i];
            slot.streak = slot.streak.saturating_add(1);
            let backoff = Duration::from_millis(1 << slot.streak.min(7)).min(MAX_BACKOFF);
            slot.retry_at = reconnect.then_some(now + backoff);
        } else {
            if self.recording && in_flight > 0 {
                self.rec.error(kind, in_flight);
            }
            if reconnect {
                if let Some(k) = self.start_connect(i, now) {
                    return self.fail(i, k, now, reconnect);
                }
            }
        }
        connect
    }

    /// Requests in flight on all connections.
    pub fn in_flight(&self) -> u64 {
        self.slots.iter().map(|s| s.conn.in_flight() as u64).sum()
    }
}

/// A worker thread's state.
pub(crate) struct Worker<C> {
    core: Core<C>,
    model: Model,
    /// The open loop's send timer (none in the closed loop).
    timer: Option<SendTimer>,
    events: Events,
    ready: Vec<(usize, bool, bool, bool)>,
}

impl<C: Connection> Worker<C> {
    pub fn new(cfg: WorkerConfig, model: Model) -> io::Result<Self> {
        let open = matches!(model, Model::Open(_));
        let rec = Recorder::new(cfg.thread, cfg.tx.clone(), open, cfg.record_start);
        let rng =
            0x9E37_79B9_7F4A_7C15 ^ (cfg.thread as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D);
        let poll = Poll::new()?;
        let timer = if open {
            let t = SendTimer::new()?;
            t.register(poll.registry(), TIMER)?;
            Some(t)
        } else {
            None
        };
        Ok(Worker {
            core: Core {
                poll,
                slots: Vec::with_capacity(cfg.connections),
                rec,
                done: Vec::with_capacity(64),
                recording: false,
                connecting: 0,
                rng,
                cpu_start: Duration::ZERO,
                cfg,
            },
            model,
            timer,
            events: Events::with_capacity(1024),
            ready: Vec::with_capacity(1024),
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
            }
            if self.core.cfg.end.is_some_and(|e| now >= e) || self.finished() {
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
                if let (Model::Open(ol), Some(t)) = (&self.model, &mut self.timer) {
                    t.arm(ol.next_send())?;
                }
            }
            let timeout = self.poll_timeout(now, next_scan);
            if let Err(e) = self.core.poll.poll(&mut self.events, Some(timeout)) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            self.ready.clear();
            for ev in self.events.iter() {
                if ev.token() == TIMER {
                    if let Some(t) = &mut self.timer {
                        t.fired();
                    }
                    continue;
                }
                let hangup = ev.is_read_closed() || ev.is_error();
                let writable = ev.is_writable() || ev.is_error();
                self.ready
                    .push((ev.token().0, ev.is_readable(), writable, hangup));
            }
            for k in 0..self.ready.len() {
                let (i, r, w, h) = self.ready[k];
                self.handle(i, r, w, h);
            }
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

    /// How long the poll may sleep: until the nearest coarse deadline. The open loop's
    /// next send is not one of them: its [`SendTimer`] wakes the poll.
    fn poll_timeout(&self, now: Instant, next_scan: Instant) -> Duration {
        let c = &self.core;
        let mut deadline = next_scan;
        if let Some(e) = c.cfg.end {
            deadline = deadline.min(e);
        }
        deadline = deadline.min(if c.recording {
            c.rec.next_tick()
        } else {
            c.cfg.record_start
        });
        deadline.saturating_duration_since(now)
    }

    fn handle(&mut self, i: usize, readable: bool, writable: bool, hangup: bool) {
        let core = &mut self.core;
        let Some(slot) = core.slots.get_mut(i) else {
            return;
        };
        let res = slot.conn.on_event(
            readable,
            writable,
            hangup,
            &core.cfg.prepared,
            &mut core.done,
        );
        // One clock read serves the completions and the next send.
        let now = Instant::now();
        if !core.done.is_empty() {
            slot.served = true;
            for (sent, c) in core.done.drain(..) {
                core.rec.response(&sent, now, &c);
            }
        }
        let slot = &mut core.slots[i];
        match res {
            Ok(Progress::Connected) => {
                core.connecting -= 1;
                slot.streak = 0;
                core.rec.totals.connections_opened += 1;
                if slot.ever_connected {
                    core.rec.totals.reconnects += 1;
                }
                slot.ever_connected = true;
                self.on_ready(i, now);
            }
            Ok(Progress::Moved) => {
                if slot.conn.state() == ConnState::Open && slot.conn.in_flight() == 0 {
                    self.on_ready(i, now);
                }
            }
            Ok(Progress::ClosedIdle) => self.reconnect(i),
            Err(kind) => self.fail(i, kind),
        }
    }

    /// Slot `i` is connected with nothing in flight: the model decides what to send.
    fn on_ready(&mut self, i: usize, now: Instant) {
        let slot = &self.core.slots[i];
        if slot.conn.closing() || (slot.served && !self.core.cfg.prepared.keepalive) {
            return self.reconnect(i);
        }
        let result = match &mut self.model {
            Model::Closed(cl) => cl.on_ready(&mut self.core, i, now),
            Model::Open(ol) => {
                ol.on_ready(&mut self.core, i);
                Ok(())
            }
        };
        if let Err(kind) = result {
            self.fail(i, kind);
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
        if self.core.fail(i, kind, Instant::now(), reconnect) && recording {
            match &mut self.model {
                Model::Closed(cl) => cl.consume_failed(),
                Model::Open(ol) => ol.consume_failed(),
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
        let Worker {
            mut core, model, ..
        } = self;
        let now = Instant::now();
        if core.recording {
            let in_flight: u64 = core
                .slots
                .iter()
                .filter(|s| s.conn.oldest().is_some_and(|o| o.record))
                .map(|s| s.conn.in_flight() as u64)
                .sum();
            core.rec.totals.cancelled_at_end += in_flight;
            if let Model::Open(ol) = &model {
                core.rec.totals.cancelled_at_end += ol.pending_recorded(core.cfg.record_start);
                core.rec.totals.late += ol.late();
            }
            core.rec.totals.cpu = thread_cpu().saturating_sub(core.cpu_start);
            core.rec.totals.wall = now.saturating_duration_since(core.cfg.record_start);
        }
        let end = core.cfg.end.map_or(now, |e| e.min(now));
        drop(core.slots);
        core.rec.finish(end.max(core.cfg.record_start));
    }
}
