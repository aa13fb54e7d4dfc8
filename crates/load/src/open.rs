//! Open-loop load: requests arrive on a constant schedule whatever the server does,
//! as real users do, so a stalling server cannot slow the arrivals down ("coordinated
//! omission"). Latency is measured from each request's *intended* send time (corrected)
//! and, beside it, from the actual write (uncorrected, what a closed-loop tool would
//! report). When every connection is busy, more are opened up to the worker's share of
//! `--max-connections`; requests that still wait are queued and, if written more than
//! [`LATE_AFTER`] after their intended time, counted as `late`. Queued requests older than
//! the request timeout are dropped and counted as timeouts, which bounds the queue.
//! The worker wakes for each intended send time on a nanosecond timer (`timer`), not on
//! a millisecond poll timeout, so the generator's timer resolution does not show up as
//! server latency.
//!
//! What the correction charges to the server, and what it does not: for a request
//! intended at I, whose connection became free at F (a response read, a connect
//! completed; F ≤ I when it was free already), written at S and answered at R, the
//! corrected latency is (max(I, F) − I) + (R − S). Waiting for a busy connection
//! (F − I, when F > I) is the server's: that is what the correction is for. The rest of
//! S − I — the generator's own timer waking late, or its loop busy with other
//! connections while this one was free — is the generator's: it is kept out of the
//! latency and recorded apart as *generator lateness* (S − max(I, F), the report's
//! `generator_late_ms`), so a slow or descheduled generator at a low rate does not turn
//! its own slack into server latency. F is the reading taken when the connection's
//! progress was handled (the same clock read that timed the response it freed), and
//! the k-th request a dispatch sends takes the k-th earliest F among the idle
//! connections, not the F of the slot the idle stack hands it: after a late wake-up
//! the stack's top is the connection freed just now, while others were free all along.
use crate::conn::{ConnState, Connection, ErrorKind};
use crate::worker::{Core, Driver};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A request written later than this after its intended time is `late`.
pub const LATE_AFTER: Duration = Duration::from_millis(5);

/// Open-loop state of one worker.
pub(crate) struct OpenLoop {
    base: Instant,
    interval: f64,
    k: u64,
    next: Instant,
    pending: VecDeque<Instant>,
    idle: Vec<usize>,
    /// Per slot: when it last became free (valid while it is idle).
    free_since: Vec<Instant>,
    /// The idle slots' `free_since`, earliest first (rebuilt by each dispatch that
    /// sends).
    free_order: Vec<Instant>,
    max_connections: usize,
    late: u64,
    failed: Vec<(usize, ErrorKind)>,
}

impl OpenLoop {
    /// `rate`: this worker's share (requests/s); `base`: its first intended send time.
    pub fn new(rate: f64, base: Instant, max_connections: usize) -> Self {
        OpenLoop {
            base,
            interval: 1.0 / rate,
            k: 0,
            next: base,
            pending: VecDeque::with_capacity(1024),
            idle: Vec::with_capacity(max_connections),
            free_since: Vec::with_capacity(max_connections),
            free_order: Vec::with_capacity(max_connections),
            max_connections,
            late: 0,
            failed: Vec::new(),
        }
    }

    /// A send or connect that failed during [`OpenLoop::dispatch`], for the worker to handle.
    pub fn take_failure(&mut self) -> Option<(usize, ErrorKind)> {
        self.failed.pop()
    }

    /// The next intended send time.
    pub fn next_send(&self) -> Instant {
        self.next
    }

    /// Requests counted late.
    pub fn late(&self) -> u64 {
        self.late
    }

    /// Queued requests that belong to the recorded part (cancelled by the end).
    pub fn pending_recorded(&self, record_start: Instant) -> u64 {
        self.pending.iter().filter(|t| **t >= record_start).count() as u64
    }

    /// A connect failed: the oldest queued request is the one that failed.
    pub fn consume_failed(&mut self) {
        self.pending.pop_front();
    }

    /// Slot `i` is connected and free (found so at `now`).
    pub fn on_ready<D: Driver>(&mut self, core: &mut Core<D>, i: usize, now: Instant) {
        let slot = &mut core.slots[i];
        if !slot.idle {
            slot.idle = true;
            self.idle.push(i);
            if self.free_since.len() <= i {
                self.free_since.resize(i + 1, now);
            }
            self.free_since[i] = now;
        }
    }

    /// Sorts the idle slots' free-since times, earliest first, when a request waits.
    fn order_free<D: Driver>(&mut self, core: &Core<D>) {
        self.free_order.clear();
        if self.pending.is_empty() {
            return;
        }
        for &i in &self.idle {
            if core.slots.get(i).is_some_and(|s| s.idle) {
                if let Some(&f) = self.free_since.get(i) {
                    self.free_order.push(f);
                }
            }
        }
        self.free_order.sort_unstable();
    }

    /// Queues what is due, expires what waited too long, sends on free connections,
    /// and opens connections while requests wait.
    pub fn dispatch<D: Driver>(&mut self, core: &mut Core<D>, now: Instant) {
        while self.next <= now {
            self.pending.push_back(self.next);
            self.k += 1;
            self.next = self.base + Duration::from_secs_f64(self.k as f64 * self.interval);
        }
        let record_start = core.cfg.record_start;
        while let Some(&t) = self.pending.front() {
            if now.saturating_duration_since(t) < core.cfg.timeout {
                break;
            }
            self.pending.pop_front();
            if t >= record_start && core.recording {
                core.rec.error(ErrorKind::Timeout, 1);
            }
        }
        self.order_free(core);
        let mut k = 0;
        while let Some(&intended) = self.pending.front() {
            let Some(i) = self.idle.pop() else { break };
            let slot = &mut core.slots[i];
            if !slot.idle
                || slot.conn.state() != ConnState::Open
                || slot.conn.free() == 0
                || slot.conn.closing()
            {
                slot.idle = false;
                continue;
            }
            self.pending.pop_front();
            let record = intended >= record_start;
            if record && now.saturating_duration_since(intended) > LATE_AFTER {
                self.late += 1;
            }
            // The k-th request sent now could have gone on the k-th connection to
            // become free, whichever slot the stack hands it.
            let free = self.free_order.get(k).copied();
            let free = free.or(self.free_since.get(i).copied()).unwrap_or(intended);
            k += 1;
            match core.send(i, intended, free.max(intended), now, false, record) {
                Err(kind) => {
                    core.slots[i].idle = false;
                    self.failed.push((i, kind));
                }
                Ok(()) => {
                    // An HTTP/2 connection with streams left stays a free slot.
                    let slot = &mut core.slots[i];
                    if slot.conn.free() > 0 {
                        self.idle.push(i);
                    } else {
                        slot.idle = false;
                    }
                    if let Err(kind) = slot.conn.flush_out(&mut core.driver) {
                        slot.idle = false;
                        self.failed.push((i, kind));
                    }
                }
            }
        }
        let want = self.pending.len().saturating_sub(core.connecting);
        for _ in 0..want {
            if core.slots.len() >= self.max_connections {
                break;
            }
            if let (i, Some(kind)) = core.add_conn(now) {
                self.failed.push((i, kind));
            }
        }
    }
}
