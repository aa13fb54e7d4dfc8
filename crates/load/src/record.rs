//! Per-thread recording: latencies go into a thread-local HdrHistogram for the current
//! second (no locks, no allocation per request); once a second the worker hands that
//! interval histogram and the second's counters to the coordinator, which merges them
//! into the run's totals, the per-second series and the interval log. Memory therefore
//! stays bounded whatever the duration: a few histograms per thread, and three numbers
//! per second of series.

use crate::conn::{ErrorKind, Sent};
use crate::parse::Completed;
use hdrhistogram::Histogram;
use perflab_units::Phrase;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

/// Highest latency the histograms resolve (larger values saturate): one hour, in µs.
pub(crate) const MAX_LATENCY_US: u64 = 3_600_000_000;

/// A latency histogram in microseconds, 3 significant digits.
pub(crate) fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("constant bounds are valid")
}

pub(crate) fn micros(d: Duration) -> u64 {
    d.as_micros().min(u128::from(MAX_LATENCY_US)) as u64
}

/// Number of error kinds (index = `ErrorKind as usize`).
pub(crate) const ERROR_KINDS: usize = 13;
/// Status codes counted individually (0..=599); anything else goes to 0.
pub(crate) const STATUS_SLOTS: usize = 600;

/// One second of one worker.
#[derive(Debug)]
pub(crate) struct Tick {
    pub thread: usize,
    pub second: u64,
    pub len: Duration,
    pub hist: Histogram<u64>,
    pub hist_uncorrected: Option<Histogram<u64>>,
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
}

/// Everything a worker counted over the recorded part of a run.
#[derive(Debug, Clone)]
pub(crate) struct Totals {
    pub requests: u64,
    pub bytes: u64,
    pub status: Vec<u64>,
    pub errors: [u64; ERROR_KINDS],
    pub cancelled_at_end: u64,
    /// How long each of the `cancelled_at_end` requests had waited when the run ended
    /// (µs, from its intended send, as latency is measured): the report counts those
    /// past the stalled bound as errors (`report::stalled_after`).
    pub end_ages: Histogram<u64>,
    /// How long each connection still connecting when the run ended had been at it
    /// (µs): past the stalled bound it counts as one stalled request (a server that
    /// accepted and never finished the TLS or HTTP/2 opening).
    pub connect_ages: Histogram<u64>,
    pub late: u64,
    /// Open loop: how late the generator wrote each recorded request that had a free
    /// connection (µs, `written − sendable`: its own lateness, not the server's).
    pub generator_late: Histogram<u64>,
    pub reconnects: u64,
    pub connections_opened: u64,
    /// Connections opened per protocol: HTTP/1.1, HTTP/2.
    pub protocols: [u64; 2],
    pub cpu: Duration,
    /// Time runnable but waiting for a CPU (schedstat), over the recorded part.
    pub wait: Duration,
    pub wall: Duration,
    /// Why the first TLS failure happened (the others are only counted).
    pub tls_failure: Option<Phrase>,
    /// Why the first connect failure that has a reason happened (an HTTP/2 preface
    /// that got no SETTINGS).
    pub connect_failure: Option<Phrase>,
    /// Per target, when the run has more than one (empty otherwise).
    pub per_target: Vec<TargetTotals>,
}

/// What one target's responses came to, for the per-target report.
#[derive(Debug, Clone)]
pub(crate) struct TargetTotals {
    pub requests: u64,
    /// Responses with a status of 400 or more.
    pub failed: u64,
    /// (status, count), in first-seen order: a handful per target.
    pub status: Vec<(u16, u64)>,
    /// Latency in µs, as the run's (corrected in the open loop).
    pub hist: Histogram<u64>,
}

impl TargetTotals {
    fn new() -> Self {
        TargetTotals {
            requests: 0,
            failed: 0,
            status: Vec::new(),
            hist: new_histogram(),
        }
    }

    fn merge(&mut self, o: &TargetTotals) {
        self.requests += o.requests;
        self.failed += o.failed;
        for &(code, n) in &o.status {
            match self.status.iter_mut().find(|(c, _)| *c == code) {
                Some((_, m)) => *m += n,
                None => self.status.push((code, n)),
            }
        }
        let _ = self.hist.add(&o.hist);
    }
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            requests: 0,
            bytes: 0,
            status: vec![0; STATUS_SLOTS],
            errors: [0; ERROR_KINDS],
            cancelled_at_end: 0,
            end_ages: new_histogram(),
            connect_ages: new_histogram(),
            late: 0,
            generator_late: new_histogram(),
            reconnects: 0,
            connections_opened: 0,
            protocols: [0; 2],
            cpu: Duration::ZERO,
            wait: Duration::ZERO,
            wall: Duration::ZERO,
            tls_failure: None,
            connect_failure: None,
            per_target: Vec::new(),
        }
    }
}

impl Totals {
    /// Adds another worker's totals (CPU and wall add up too: wall is thread-seconds).
    pub fn merge(&mut self, o: &Totals) {
        self.requests += o.requests;
        self.bytes += o.bytes;
        for (a, b) in self.status.iter_mut().zip(&o.status) {
            *a += b;
        }
        for (a, b) in self.errors.iter_mut().zip(&o.errors) {
            *a += b;
        }
        self.cancelled_at_end += o.cancelled_at_end;
        let _ = self.end_ages.add(&o.end_ages);
        let _ = self.connect_ages.add(&o.connect_ages);
        self.late += o.late;
        let _ = self.generator_late.add(&o.generator_late);
        self.reconnects += o.reconnects;
        self.connections_opened += o.connections_opened;
        self.protocols[0] += o.protocols[0];
        self.protocols[1] += o.protocols[1];
        self.cpu += o.cpu;
        self.wait += o.wait;
        self.wall += o.wall;
        if self.tls_failure.is_none() {
            self.tls_failure.clone_from(&o.tls_failure);
        }
        if self.connect_failure.is_none() {
            self.connect_failure.clone_from(&o.connect_failure);
        }
        if self.per_target.len() < o.per_target.len() {
            self.per_target
                .resize_with(o.per_target.len(), TargetTotals::new);
        }
        for (a, b) in self.per_target.iter_mut().zip(&o.per_target) {
            a.merge(b);
        }
    }
}

/// What workers tell the coordinator.
#[derive(Debug)]
pub(crate) enum Msg {
    Tick(Box<Tick>),
    Done(usize, Box<Totals>),
}

/// The recording side of one worker.
pub(crate) struct Recorder {
    thread: usize,
    tx: Sender<Msg>,
    interval: Histogram<u64>,
    interval_unc: Option<Histogram<u64>>,
    sec_requests: u64,
    sec_errors: u64,
    sec_bytes: u64,
    second: u64,
    second_start: Instant,
    pub totals: Totals,
}

impl Recorder {
    pub fn new(
        thread: usize,
        tx: Sender<Msg>,
        open_loop: bool,
        record_start: Instant,
        targets: usize,
    ) -> Self {
        let mut totals = Totals::default();
        if targets > 1 {
            totals.per_target = (0..targets).map(|_| TargetTotals::new()).collect();
        }
        Recorder {
            thread,
            tx,
            interval: new_histogram(),
            interval_unc: open_loop.then(new_histogram),
            sec_requests: 0,
            sec_errors: 0,
            sec_bytes: 0,
            second: 0,
            second_start: record_start,
            totals,
        }
    }

    /// When the current second ends.
    pub fn next_tick(&self) -> Instant {
        self.second_start + Duration::from_secs(1)
    }

    /// Records a completed response.
    #[inline]
    pub fn response(&mut self, sent: &Sent, now: Instant, c: &Completed) {
        if !sent.record {
            return;
        }
        self.totals.requests += 1;
        self.totals.bytes += c.bytes;
        self.sec_requests += 1;
        self.sec_bytes += c.bytes;
        let slot = usize::from(c.status);
        self.totals.status[if slot < STATUS_SLOTS { slot } else { 0 }] += 1;
        // Open loop: the wait for a free connection is the server's, the generator's
        // own lateness after that is not (module `open`); closed loop: all three equal.
        let waited = sent.sendable.saturating_duration_since(sent.intended);
        let latency = micros(waited + now.saturating_duration_since(sent.written));
        self.interval.saturating_record(latency);
        if let Some(t) = self.totals.per_target.get_mut(sent.target as usize) {
            t.requests += 1;
            t.failed += u64::from(c.status >= 400);
            match t.status.iter_mut().find(|(s, _)| *s == c.status) {
                Some((_, n)) => *n += 1,
                None => t.status.push((c.status, 1)),
            }
            t.hist.saturating_record(latency);
        }
        if let Some(h) = &mut self.interval_unc {
            h.saturating_record(micros(now.saturating_duration_since(sent.written)));
            let late = sent.written.saturating_duration_since(sent.sendable);
            self.totals.generator_late.saturating_record(micros(late));
        }
    }

    /// Records `n` failed requests of one kind.
    pub fn error(&mut self, kind: ErrorKind, n: u64) {
        self.totals.errors[kind as usize] += n;
        self.sec_errors += n;
    }

    /// Hands every second that ended by `now` to the coordinator.
    pub fn tick(&mut self, now: Instant) {
        while now >= self.next_tick() {
            self.flush(Duration::from_secs(1));
            self.second += 1;
            self.second_start += Duration::from_secs(1);
        }
    }

    fn flush(&mut self, len: Duration) {
        let hist = std::mem::replace(&mut self.interval, new_histogram());
        let hist_uncorrected = self
            .interval_unc
            .as_mut()
            .map(|h| std::mem::replace(h, new_histogram()));
        let tick = Tick {
            thread: self.thread,
            second: self.second,
            len,
            hist,
            hist_uncorrected,
            requests: std::mem::take(&mut self.sec_requests),
            errors: std::mem::take(&mut self.sec_errors),
            bytes: std::mem::take(&mut self.sec_bytes),
        };
        // The coordinator outlives the workers; a send can only fail if it panicked.
        let _ = self.tx.send(Msg::Tick(Box::new(tick)));
    }

    /// Flushes the last, partial second and the totals.
    pub fn finish(mut self, end: Instant) {
        self.tick(end);
        let len = end.saturating_duration_since(self.second_start);
        if !len.is_zero() || self.sec_requests > 0 || self.sec_errors > 0 {
            self.flush(len);
        }
        let _ = self.tx.send(Msg::Done(self.thread, Box::new(self.totals)));
    }
}
