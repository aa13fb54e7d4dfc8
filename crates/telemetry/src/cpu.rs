//! `cpu` and `sched`: /proc/stat and /proc/loadavg.
//!
//! /proc/stat's `cpu` lines are cumulative jiffies per state; a percentage is the share of
//! one state in the sum of all states over an interval, as top, vmstat and mpstat compute
//! it. The sum is user + nice + system + idle + iowait + irq + softirq + steal: guest and
//! guest_nice are left out because the kernel already counts them inside user and nice.
//! Older kernels print fewer columns (no steal before 2.6.11, no guest before 2.6.24);
//! the missing ones read as 0. `ctxt`, `intr` (its first number, the total),
//! `procs_running` and `procs_blocked` are the `sched` figures (vmstat's cs, in, r, b).

use serde::Serialize;

use crate::counter::{delta, rate};
use crate::error::{num, ParseError};

const STAT: &str = "/proc/stat";
const LOADAVG: &str = "/proc/loadavg";

/// Cumulative time per CPU state, in jiffies (USER_HZ ticks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    pub guest: u64,
    pub guest_nice: u64,
}

impl CpuTimes {
    /// All time, each jiffy once (guest time is already inside user and nice).
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
}

/// What one read of /proc/stat gives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcStat {
    /// The `cpu` line: all CPUs together.
    pub total: CpuTimes,
    /// The `cpuN` lines, by CPU number (offline CPUs have no line).
    pub per_cpu: Vec<(u32, CpuTimes)>,
    /// Context switches since boot.
    pub ctxt: Option<u64>,
    /// Interrupts serviced since boot (the first number of the `intr` line).
    pub intr: Option<u64>,
    /// Runnable tasks now (vmstat's `r`).
    pub procs_running: Option<u64>,
    /// Tasks blocked on I/O now (vmstat's `b`).
    pub procs_blocked: Option<u64>,
}

/// Parses /proc/stat.
pub fn parse_stat(text: &str) -> Result<ProcStat, ParseError> {
    let mut out = ProcStat::default();
    let mut saw_total = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let mut it = line.split_ascii_whitespace();
        let Some(key) = it.next() else { continue };
        if let Some(id) = key.strip_prefix("cpu") {
            let times = parse_cpu_times(n, it)?;
            if id.is_empty() {
                out.total = times;
                saw_total = true;
            } else {
                let id = id.parse::<u32>().map_err(|_| {
                    ParseError::new(STAT, Some(n), format!("unexpected line key `{key}`"))
                })?;
                out.per_cpu.push((id, times));
            }
            continue;
        }
        let first = it.next();
        let value = |v: Option<&str>| -> Result<Option<u64>, ParseError> {
            match v {
                Some(v) => Ok(Some(num(STAT, n, v)?)),
                None => Err(ParseError::new(
                    STAT,
                    Some(n),
                    format!("`{key}` has no value"),
                )),
            }
        };
        match key {
            "ctxt" => out.ctxt = value(first)?,
            "intr" => out.intr = value(first)?,
            "procs_running" => out.procs_running = value(first)?,
            "procs_blocked" => out.procs_blocked = value(first)?,
            _ => {}
        }
    }
    if !saw_total {
        return Err(ParseError::new(STAT, None, "no `cpu` line"));
    }
    Ok(out)
}

fn parse_cpu_times<'a>(
    line: usize,
    it: impl Iterator<Item = &'a str>,
) -> Result<CpuTimes, ParseError> {
    let v = it
        .map(|s| num(STAT, line, s))
        .collect::<Result<Vec<u64>, _>>()?;
    if v.len() < 4 {
        return Err(ParseError::new(
            STAT,
            Some(line),
            format!("a cpu line needs at least 4 numbers, found {}", v.len()),
        ));
    }
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    Ok(CpuTimes {
        user: at(0),
        nice: at(1),
        system: at(2),
        idle: at(3),
        iowait: at(4),
        irq: at(5),
        softirq: at(6),
        steal: at(7),
        guest: at(8),
        guest_nice: at(9),
    })
}

/// Share of each state over an interval, in percent; the eight add up to 100.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CpuPct {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub idle: f64,
    pub iowait: f64,
    pub irq: f64,
    pub softirq: f64,
    pub steal: f64,
}

/// Percentages between two reads of the same CPU. A state whose counter went backwards
/// (idle and iowait do on some kernels) counts as 0, like top does.
pub fn cpu_pct(prev: &CpuTimes, cur: &CpuTimes) -> CpuPct {
    let d = |a: u64, b: u64| b.saturating_sub(a) as f64;
    let parts = [
        d(prev.user, cur.user),
        d(prev.nice, cur.nice),
        d(prev.system, cur.system),
        d(prev.idle, cur.idle),
        d(prev.iowait, cur.iowait),
        d(prev.irq, cur.irq),
        d(prev.softirq, cur.softirq),
        d(prev.steal, cur.steal),
    ];
    let total: f64 = parts.iter().sum();
    if total <= 0.0 {
        return CpuPct::default();
    }
    let p = |x: f64| x / total * 100.0;
    CpuPct {
        user: p(parts[0]),
        nice: p(parts[1]),
        system: p(parts[2]),
        idle: p(parts[3]),
        iowait: p(parts[4]),
        irq: p(parts[5]),
        softirq: p(parts[6]),
        steal: p(parts[7]),
    }
}

/// /proc/loadavg.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LoadAvg {
    pub one: f64,
    pub five: f64,
    pub fifteen: f64,
    /// Runnable scheduling entities now (the `6` of `6/135`).
    pub runnable: u64,
    /// Scheduling entities (threads) that exist (the `135` of `6/135`).
    pub threads: u64,
}

/// Parses /proc/loadavg: `0.50 0.40 0.30 2/345 6789`.
pub fn parse_loadavg(text: &str) -> Result<LoadAvg, ParseError> {
    let f: Vec<&str> = text.split_ascii_whitespace().collect();
    if f.len() < 4 {
        return Err(ParseError::new(
            LOADAVG,
            Some(1),
            "expected `L1 L5 L15 R/T PID`",
        ));
    }
    let load = |s: &str| {
        s.parse::<f64>()
            .map_err(|_| ParseError::new(LOADAVG, Some(1), format!("bad load average `{s}`")))
    };
    let (r, t) = f[3]
        .split_once('/')
        .ok_or_else(|| ParseError::new(LOADAVG, Some(1), format!("bad `R/T` field `{}`", f[3])))?;
    Ok(LoadAvg {
        one: load(f[0])?,
        five: load(f[1])?,
        fifteen: load(f[2])?,
        runnable: num(LOADAVG, 1, r)?,
        threads: num(LOADAVG, 1, t)?,
    })
}

/// The `sched` figures of one interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SchedRates {
    pub ctxt_per_s: f64,
    pub intr_per_s: f64,
    pub procs_running: f64,
    pub procs_blocked: f64,
    pub loadavg_1: f64,
    pub loadavg_5: f64,
    pub loadavg_15: f64,
}

/// Rates from two reads of /proc/stat, gauges from the second, load from /proc/loadavg.
pub fn sched_rates(
    prev: &ProcStat,
    cur: &ProcStat,
    load: Option<&LoadAvg>,
    secs: f64,
) -> SchedRates {
    let r = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => rate(a, b, secs),
        _ => 0.0,
    };
    let load = load.copied().unwrap_or_default();
    SchedRates {
        ctxt_per_s: r(prev.ctxt, cur.ctxt),
        intr_per_s: r(prev.intr, cur.intr),
        procs_running: cur.procs_running.unwrap_or(0) as f64,
        procs_blocked: cur.procs_blocked.unwrap_or(0) as f64,
        loadavg_1: load.one,
        loadavg_5: load.five,
        loadavg_15: load.fifteen,
    }
}

/// Context switches between two reads (for whole-trial totals).
pub fn ctxt_delta(prev: &ProcStat, cur: &ProcStat) -> u64 {
    match (prev.ctxt, cur.ctxt) {
        (Some(a), Some(b)) => delta(a, b),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_add_up_and_skip_guest() {
        let a = CpuTimes {
            user: 100,
            guest: 40,
            ..Default::default()
        };
        let b = CpuTimes {
            user: 150,
            system: 20,
            idle: 20,
            softirq: 10,
            guest: 90,
            ..Default::default()
        };
        let p = cpu_pct(&a, &b);
        assert_eq!(p.user, 50.0);
        assert_eq!(p.system, 20.0);
        assert_eq!(p.softirq, 10.0);
        let sum = p.user + p.nice + p.system + p.idle + p.iowait + p.irq + p.softirq + p.steal;
        assert!((sum - 100.0).abs() < 1e-9);
    }

    #[test]
    fn idle_going_backwards_counts_as_zero() {
        let a = CpuTimes {
            idle: 100,
            user: 0,
            ..Default::default()
        };
        let b = CpuTimes {
            idle: 99,
            user: 10,
            ..Default::default()
        };
        assert_eq!(cpu_pct(&a, &b).user, 100.0);
    }

    #[test]
    fn short_cpu_lines_of_old_kernels() {
        let s = parse_stat("cpu 1 2 3 4\ncpu0 1 2 3 4\nctxt 5\n").unwrap();
        assert_eq!(s.total.idle, 4);
        assert_eq!(s.total.steal, 0);
        assert_eq!(s.ctxt, Some(5));
        assert_eq!(s.procs_running, None);
    }

    #[test]
    fn garbage_is_an_error_with_the_line() {
        let e = parse_stat("cpu 1 2 x 4\n").unwrap_err();
        assert_eq!(e.line, Some(1));
        assert!(e.to_string().contains("/proc/stat line 1"), "{e}");
        assert!(parse_stat("ctxt 5\n").is_err());
        assert!(parse_loadavg("0.1 0.2\n").is_err());
    }
}
