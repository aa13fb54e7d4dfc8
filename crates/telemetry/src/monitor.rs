//! The background monitor an experiment runs beside each trial: [`Monitor::start`] spawns
//! a thread that samples at a fixed interval, [`MonitorHandle::stop`] takes a last sample
//! (so a trial shorter than one interval is still covered), joins the thread and returns
//! the [`Recording`]: every series plus per-trial summary metrics.
//!
//! Samples are taken on a fixed grid (start + k × interval), not "interval after the last
//! one", so the sampler's own cost does not stretch the period; a sample that ran late
//! skips the grid points it missed instead of bunching up.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::disk::DiskFilter;
use crate::error::TelemetryError;
use crate::probe::Probe;
use crate::sample::{Better, Kind, Point, Sample};
use crate::sampler::{Sampler, SamplerSpec, MIN_INTERVAL};

/// What to monitor during a trial.
#[derive(Debug, Clone)]
pub struct MonitorSpec {
    /// Sampling period; at least [`MIN_INTERVAL`] (50 ms).
    pub interval: Duration,
    pub probes: Vec<Probe>,
    /// The service under test, followed with its descendants by probe `process`.
    pub pid: Option<i32>,
    /// Which block devices probe `disk` reports.
    pub disks: DiskFilter,
}

impl MonitorSpec {
    /// `interval` and `probes`, no pid, the default disk filter.
    pub fn new(interval: Duration, probes: Vec<Probe>) -> MonitorSpec {
        MonitorSpec {
            interval,
            probes,
            pid: None,
            disks: DiskFilter::default(),
        }
    }
}

/// Starts monitors.
pub struct Monitor;

impl Monitor {
    /// Checks the spec, takes the first snapshot and starts sampling on a new thread.
    pub fn start(spec: MonitorSpec) -> Result<MonitorHandle, TelemetryError> {
        if spec.interval < MIN_INTERVAL {
            return Err(TelemetryError::IntervalTooShort(spec.interval));
        }
        let sampler = Sampler::new(SamplerSpec {
            probes: spec.probes.clone(),
            pid: spec.pid,
            disks: spec.disks.clone(),
            proc_root: "/proc".into(),
        })?;
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let flag = stop.clone();
        let interval = spec.interval;
        let thread = std::thread::Builder::new()
            .name("perflab-monitor".into())
            .spawn(move || run(sampler, interval, &flag))
            .map_err(TelemetryError::Thread)?;
        Ok(MonitorHandle {
            stop,
            thread: Some(thread),
        })
    }
}

/// A running monitor. Dropping it without [`MonitorHandle::stop`] stops the sampling
/// thread too (and throws its recording away).
pub struct MonitorHandle {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<Recording>>,
}

impl MonitorHandle {
    /// Stops sampling (after one last sample) and returns what was recorded.
    pub fn stop(mut self) -> Recording {
        self.signal();
        let thread = self.thread.take().expect("joined only here");
        thread.join().unwrap_or_else(|_| Recording {
            warnings: vec!["the sampling thread panicked; nothing was recorded".into()],
            ..Default::default()
        })
    }

    fn signal(&self) {
        let (lock, cv) = &*self.stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }
}

impl Drop for MonitorHandle {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.signal();
        }
    }
}

fn run(mut sampler: Sampler, interval: Duration, stop: &(Mutex<bool>, Condvar)) -> Recording {
    let mut rec = Recorder::default();
    let (lock, cv) = stop;
    let mut k: u32 = 1;
    loop {
        let deadline = interval * k;
        let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
        while !*stopped {
            let now = sampler.elapsed();
            if now >= deadline {
                break;
            }
            stopped = cv
                .wait_timeout(stopped, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let stopping = *stopped;
        drop(stopped);
        // A last sample at stop, unless one was taken a moment ago.
        let since_last = sampler.elapsed().as_secs_f64() - sampler.last_at();
        if !stopping || rec.samples == 0 || since_last >= 0.02 {
            rec.add(&sampler.sample());
        }
        if stopping {
            break;
        }
        let behind = (sampler.elapsed().as_secs_f64() / interval.as_secs_f64()).floor() as u32;
        k = (k + 1).max(behind + 1);
    }
    rec.finish(&sampler)
}

/// One time series of a trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub unit: String,
    /// (seconds since the monitor started, value), at the end of each interval.
    pub points: Vec<(f64, f64)>,
}

/// One per-trial figure, ready to be stored as a metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryMetric {
    pub name: String,
    pub unit: String,
    pub value: f64,
    pub better: Better,
}

/// What a monitor recorded over a trial (it crosses from a remote worker as JSON:
/// `[monitor] host = "b"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    pub series: Vec<Series>,
    pub summaries: Vec<SummaryMetric>,
    /// Seconds between the first and the last snapshot.
    pub duration_s: f64,
    /// Number of intervals sampled.
    pub samples: usize,
    /// Files that could not be read or parsed (their figures are missing).
    pub warnings: Vec<String>,
    /// Figures this host does not provide (e.g. no NFS).
    pub unavailable: Vec<String>,
}

impl Recording {
    /// A series by name.
    pub fn series(&self, name: &str) -> Option<&Series> {
        self.series.iter().find(|s| s.name == name)
    }
    /// A summary metric by name.
    pub fn summary(&self, name: &str) -> Option<&SummaryMetric> {
        self.summaries.iter().find(|s| s.name == name)
    }
}

/// Accumulates samples into series and the data for the summaries.
#[derive(Default)]
struct Recorder {
    series: Vec<Acc>,
    index: HashMap<String, usize>,
    samples: usize,
}

struct Acc {
    meta: Point,
    points: Vec<(f64, f64)>,
    weighted: f64,
    weight: f64,
    max: f64,
}

impl Recorder {
    fn add(&mut self, s: &Sample) {
        if s.secs <= 0.0 {
            return;
        }
        self.samples += 1;
        for p in s.points() {
            let i = match self.index.get(&p.name) {
                Some(i) => *i,
                None => {
                    self.index.insert(p.name.clone(), self.series.len());
                    self.series.push(Acc {
                        meta: p.clone(),
                        points: Vec::new(),
                        weighted: 0.0,
                        weight: 0.0,
                        max: f64::NEG_INFINITY,
                    });
                    self.series.len() - 1
                }
            };
            let a = &mut self.series[i];
            a.points.push((round_t(s.t), p.value));
            a.weighted += p.value * s.secs;
            a.weight += s.secs;
            a.max = a.max.max(p.value);
            a.meta.value = p.value;
        }
    }

    fn finish(self, sampler: &Sampler) -> Recording {
        let whole = sampler.since_start();
        let exact: HashMap<String, f64> = whole
            .points()
            .into_iter()
            .filter(|p| p.kind == Kind::Rate)
            .map(|p| (p.name, p.value))
            .collect();
        let mut summaries = Vec::new();
        for a in &self.series {
            let m = &a.meta;
            if !m.summarize || a.weight <= 0.0 {
                continue;
            }
            let mean = a.weighted / a.weight;
            let value = match m.kind {
                Kind::Rate => exact.get(&m.name).copied().unwrap_or(mean),
                Kind::Gauge => mean,
                Kind::Cumulative => m.value,
            };
            summaries.push(metric(&m.name, m.unit, value, m.better));
            if m.max {
                summaries.push(metric(&format!("{}_max", m.name), m.unit, a.max, m.better));
            }
        }
        summaries.extend(extra_summaries(&whole));
        let notes = sampler.notes();
        Recording {
            series: self
                .series
                .into_iter()
                .map(|a| Series {
                    name: a.meta.name,
                    unit: a.meta.unit.to_string(),
                    points: a.points,
                })
                .collect(),
            summaries,
            duration_s: sampler.last_at(),
            samples: self.samples,
            warnings: notes.warnings.clone(),
            unavailable: notes.unavailable.clone(),
        }
    }
}

fn round_t(t: f64) -> f64 {
    (t * 1000.0).round() / 1000.0
}

fn metric(name: &str, unit: &str, value: f64, better: Better) -> SummaryMetric {
    SummaryMetric {
        name: name.to_string(),
        unit: unit.to_string(),
        value,
        better,
    }
}

/// Trial totals of rare events, and the busiest CPU (softirq often piles up on one).
fn extra_summaries(whole: &Sample) -> Vec<SummaryMetric> {
    let mut out = Vec::new();
    if let Some(n) = &whole.net {
        for (name, key) in [
            ("net.retrans_segs", "Tcp.RetransSegs"),
            ("net.estab_resets", "Tcp.EstabResets"),
            ("net.listen_overflows", "TcpExt.ListenOverflows"),
            ("net.listen_drops", "TcpExt.ListenDrops"),
            ("net.backlog_drops", "TcpExt.TCPBacklogDrop"),
            ("net.reasm_fails", "Ip.ReasmFails"),
        ] {
            if let Some(c) = n.counts.get(key) {
                out.push(metric(name, "count", *c as f64, Better::Lower));
            }
        }
    }
    if let Some(c) = &whole.cpu {
        let busiest = |f: fn(&crate::cpu::CpuPct) -> f64| {
            c.per_cpu.iter().map(|(_, p)| f(p)).fold(f64::NAN, f64::max)
        };
        let softirq = busiest(|p| p.softirq);
        if !softirq.is_nan() {
            out.push(metric(
                "cpu.busiest_softirq_pct",
                "%",
                softirq,
                Better::Lower,
            ));
            let busy = busiest(|p| 100.0 - p.idle - p.iowait);
            out.push(metric("cpu.busiest_busy_pct", "%", busy, Better::Lower));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_short_an_interval_is_refused() {
        let spec = MonitorSpec::new(Duration::from_millis(10), vec![Probe::Cpu]);
        let e = Monitor::start(spec).err().expect("refused");
        assert!(e.to_string().contains("too short"), "{e}");
    }

    #[test]
    fn process_probe_needs_a_pid() {
        let spec = MonitorSpec::new(Duration::from_secs(1), vec![Probe::Process]);
        assert!(matches!(
            Monitor::start(spec),
            Err(TelemetryError::ProcessProbeWithoutPid)
        ));
        let mut spec = MonitorSpec::new(Duration::from_secs(1), vec![Probe::Process]);
        spec.pid = Some(i32::MAX);
        assert!(matches!(
            Monitor::start(spec),
            Err(TelemetryError::NoSuchProcess(_))
        ));
    }
}
