//! The stateful sampler: keeps the previous snapshot and the process tracker, and turns
//! each new snapshot into a [`Sample`]. `perflab top` drives one directly; [`crate::Monitor`]
//! drives one on its own thread.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::disk::DiskFilter;
use crate::error::TelemetryError;
use crate::probe::Probe;
use crate::process::ProcessTracker;
use crate::sample::Sample;
use crate::snapshot::{Notes, ReadSpec, Snapshot};

/// The shortest sampling interval: below it, the kernel's tick-granular counters
/// (jiffies, diskstats milliseconds) make rates meaningless.
pub const MIN_INTERVAL: Duration = Duration::from_millis(50);

/// Parses a sampling interval (`1s`, `250ms`, `1m30s`) and checks it is at least
/// [`MIN_INTERVAL`]: the one rule for `[monitor] interval` and `perflab top --interval`.
pub fn parse_interval(s: &str) -> Result<Duration, TelemetryError> {
    // perflab's one duration grammar (crates/units).
    let d =
        perflab_units::parse_duration(s).map_err(|_| TelemetryError::BadInterval(s.to_string()))?;
    if d < MIN_INTERVAL {
        return Err(TelemetryError::IntervalTooShort(d));
    }
    Ok(d)
}

/// What a [`Sampler`] reads.
#[derive(Debug, Clone)]
pub struct SamplerSpec {
    pub probes: Vec<Probe>,
    /// The process to follow with its descendants (probe `process`); with probe
    /// `sockets`, its CLOSE_WAIT sockets are also counted apart.
    pub pid: Option<i32>,
    pub disks: DiskFilter,
    /// Where /proc is mounted (`/proc`; a fixture directory in tests).
    pub proc_root: PathBuf,
}

impl SamplerSpec {
    /// All probes but `process`, no pid, default disk filter, /proc.
    pub fn system() -> SamplerSpec {
        SamplerSpec {
            probes: Probe::ALL
                .iter()
                .copied()
                .filter(|p| *p != Probe::Process)
                .collect(),
            pid: None,
            disks: DiskFilter::default(),
            proc_root: PathBuf::from("/proc"),
        }
    }
}

/// Reads snapshots and computes the figures between consecutive ones.
#[derive(Debug)]
pub struct Sampler {
    spec: SamplerSpec,
    clock: Instant,
    first: Snapshot,
    prev: Snapshot,
    tracker: Option<ProcessTracker>,
    notes: Notes,
}

impl Sampler {
    /// Checks the spec and takes the first snapshot (figures start from here).
    pub fn new(spec: SamplerSpec) -> Result<Sampler, TelemetryError> {
        if spec.probes.contains(&Probe::Process) && spec.pid.is_none() {
            return Err(TelemetryError::ProcessProbeWithoutPid);
        }
        if let Some(pid) = spec.pid {
            if !spec.proc_root.join(pid.to_string()).join("stat").exists() {
                return Err(TelemetryError::NoSuchProcess(pid));
            }
        }
        if spec
            .probes
            .iter()
            .any(|p| matches!(p, Probe::Cpu | Probe::Sched))
        {
            // /proc itself missing is an error, not a warning per sample.
            let path = spec.proc_root.join("stat");
            std::fs::metadata(&path).map_err(|source| TelemetryError::Io {
                path: path.display().to_string(),
                source,
            })?;
        }
        let clock = Instant::now();
        let mut notes = Notes::default();
        let first = Snapshot::read(&read_spec(&spec), 0.0, &mut notes);
        let tracker = first
            .procs
            .as_ref()
            .map(|p| ProcessTracker::new(p, clock_ticks()));
        Ok(Sampler {
            spec,
            clock,
            prev: first.clone(),
            first,
            tracker,
            notes,
        })
    }

    /// Reads a new snapshot and returns the figures since the previous one.
    pub fn sample(&mut self) -> Sample {
        let at = self.clock.elapsed().as_secs_f64();
        let cur = Snapshot::read(&read_spec(&self.spec), at, &mut self.notes);
        let mut s = Sample::between(&self.prev, &cur, 0.0, &self.spec.disks);
        if let (Some(t), Some(procs)) = (self.tracker.as_mut(), cur.procs.as_ref()) {
            s.process = Some(t.update(procs, s.secs));
        }
        if let (Some(pid), Some(sock)) = (self.spec.pid, &cur.sockets) {
            let pids: Vec<i32> = match &cur.procs {
                Some(p) if !p.is_empty() => p.iter().map(|p| p.pid).collect(),
                _ => vec![pid],
            };
            s.process_close_wait = Some(sock.close_wait_of(&pids));
        }
        self.prev = cur;
        s
    }

    /// Figures over everything since the first snapshot (no `process` part: that one
    /// only exists interval by interval, see [`crate::process`]).
    pub fn since_start(&self) -> Sample {
        Sample::between(&self.first, &self.prev, 0.0, &self.spec.disks)
    }

    /// Seconds since the first snapshot.
    pub fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    /// Seconds between the first snapshot and the latest one.
    pub fn last_at(&self) -> f64 {
        self.prev.at
    }

    /// Problems met so far (unreadable files, features this host lacks).
    pub fn notes(&self) -> &Notes {
        &self.notes
    }

    pub fn spec(&self) -> &SamplerSpec {
        &self.spec
    }
}

fn read_spec(spec: &SamplerSpec) -> ReadSpec<'_> {
    ReadSpec {
        root: &spec.proc_root,
        probes: &spec.probes,
        pid: spec.pid,
    }
}

/// USER_HZ: the unit of /proc/PID/stat times.
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_interval(" 50ms").unwrap(), Duration::from_millis(50));
        assert_eq!(parse_interval("1m30s").unwrap(), Duration::from_secs(90));
        let e = parse_interval("10ms").unwrap_err();
        assert!(e.to_string().contains("shortest is 50ms"), "{e}");
        let e = parse_interval("fast").unwrap_err();
        assert!(e.to_string().contains("invalid interval `fast`"), "{e}");
        // The one grammar: a bare number is seconds, as for every other duration.
        assert_eq!(parse_interval("1").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_interval("2.5s").unwrap(), Duration::from_millis(2500));
    }
}
