//! The per-second time series: workers send one [`Tick`] per second each; the
//! [`SecondMerger`] waits until every live worker has reported a second, merges the
//! interval histograms, and hands out the finished second (for the series, the live
//! line and the interval log). Only unfinished seconds are held, so memory is bounded.

use crate::record::{new_histogram, Tick, Totals};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// One second of the recorded run (all threads together).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondPoint {
    /// Seconds since the recorded part began (ramps continue counting across steps).
    pub second: u64,
    /// Length of this interval in seconds (the last one may be partial).
    pub duration_s: f64,
    /// Responses completed in this second.
    pub requests: u64,
    /// Failed requests in this second.
    pub errors: u64,
    /// Responses per second over the interval.
    pub rps: f64,
    /// 99th percentile latency in this second, ms (corrected in open loop).
    pub p99_ms: f64,
}

/// A second that every worker has reported.
pub(crate) struct MergedSecond {
    pub second: u64,
    pub len: Duration,
    pub hist: Histogram<u64>,
    pub hist_uncorrected: Option<Histogram<u64>>,
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
}

impl MergedSecond {
    pub fn point(&self, offset: u64) -> SecondPoint {
        let secs = self.len.as_secs_f64();
        SecondPoint {
            second: self.second + offset,
            duration_s: secs,
            requests: self.requests,
            errors: self.errors,
            rps: if secs > 0.0 {
                self.requests as f64 / secs
            } else {
                0.0
            },
            p99_ms: if self.hist.is_empty() {
                0.0
            } else {
                self.hist.value_at_quantile(0.99) as f64 / 1e3
            },
        }
    }
}

/// Merges workers' ticks into whole seconds.
pub(crate) struct SecondMerger {
    reported: Vec<Option<u64>>,
    done: Vec<bool>,
    pending: BTreeMap<u64, MergedSecond>,
    next: u64,
}

impl SecondMerger {
    pub fn new(threads: usize) -> Self {
        SecondMerger {
            reported: vec![None; threads],
            done: vec![false; threads],
            pending: BTreeMap::new(),
            next: 0,
        }
    }

    pub fn add(&mut self, t: Tick) {
        self.reported[t.thread] = Some(t.second);
        let m = self
            .pending
            .entry(t.second)
            .or_insert_with(|| MergedSecond {
                second: t.second,
                len: Duration::ZERO,
                hist: new_histogram(),
                hist_uncorrected: t.hist_uncorrected.as_ref().map(|_| new_histogram()),
                requests: 0,
                errors: 0,
                bytes: 0,
            });
        m.len = m.len.max(t.len);
        // Same bounds everywhere, so adding cannot fail.
        let _ = m.hist.add(&t.hist);
        if let (Some(a), Some(b)) = (&mut m.hist_uncorrected, &t.hist_uncorrected) {
            let _ = a.add(b);
        }
        m.requests += t.requests;
        m.errors += t.errors;
        m.bytes += t.bytes;
    }

    pub fn done(&mut self, thread: usize) {
        self.done[thread] = true;
    }

    /// The next second that every worker has reported (or finished before), if any.
    pub fn pop_ready(&mut self) -> Option<MergedSecond> {
        loop {
            let next = self.next;
            let complete = self
                .reported
                .iter()
                .zip(&self.done)
                .all(|(r, d)| *d || r.is_some_and(|s| s >= next));
            if !complete {
                return None;
            }
            let all_done = self.done.iter().all(|d| *d);
            match self.pending.remove(&next) {
                Some(m) => {
                    self.next += 1;
                    return Some(m);
                }
                None if all_done && self.pending.is_empty() => return None,
                None => self.next += 1,
            }
        }
    }
}

/// What a phase measured.
#[derive(Debug)]
pub(crate) struct PhaseResult {
    pub hist: Histogram<u64>,
    pub hist_uncorrected: Option<Histogram<u64>>,
    pub series: Vec<SecondPoint>,
    pub totals: Totals,
    /// Recorded wall time.
    pub elapsed: Duration,
}

impl PhaseResult {
    /// Adds a later phase into this one, as a report over both would merge them (a
    /// knee search keeps one running sum, not every step's histograms).
    pub fn absorb(&mut self, o: PhaseResult) {
        let _ = self.hist.add(&o.hist);
        match (&mut self.hist_uncorrected, &o.hist_uncorrected) {
            (Some(a), Some(b)) => {
                let _ = a.add(b);
            }
            (None, Some(_)) => self.hist_uncorrected = o.hist_uncorrected,
            _ => {}
        }
        self.totals.merge(&o.totals);
        self.series.extend(o.series);
        self.elapsed += o.elapsed;
    }
}
