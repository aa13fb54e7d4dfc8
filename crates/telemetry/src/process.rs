//! `process`: a pid and all its descendants — CPU time, RSS, threads, open fds and
//! context switches — from /proc/PID/stat, /proc/PID/status and /proc/PID/fd.
//!
//! The tree is found by parent pid in every process's stat, at every sample, so children
//! forked during a trial are followed. CPU time needs care because processes come and
//! go between samples:
//!
//! - a process seen twice contributes its own utime/stime growth;
//! - a process first seen now (forked since the last sample) contributes all its time;
//! - a child that exited and was reaped by a parent in the tree shows up as growth of the
//!   parent's cutime/cstime, which holds the child's *whole* life; the part already
//!   counted while the child was alive is subtracted, so nothing counts twice;
//! - short-lived children that never appeared in a sample (CGI, fork-per-request) are
//!   counted the same way, through their parent's cutime/cstime;
//! - what a child did after the last sample is lost only if nothing in the tree reaps it
//!   (it was re-parented, or its parent ignores SIGCHLD).
//!
//! So the cumulative CPU seconds never go down and count each jiffy once. Context
//! switches are summed over the threads of each process (/proc/PID/task/*/status), since
//! /proc/PID/status only counts the main thread; so is the run delay (time runnable but
//! waiting for a CPU, /proc/PID/task/*/schedstat, see [`crate::rundelay`]), counted for
//! processes seen twice or first seen now (a process's waits die with it).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::error::{num, ParseError};

/// What perflab reads of /proc/PID/stat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidStat {
    pub pid: i32,
    pub comm: String,
    pub state: char,
    pub ppid: i32,
    /// Clock ticks (USER_HZ).
    pub utime: u64,
    pub stime: u64,
    /// Reaped children's time, clock ticks.
    pub cutime: u64,
    pub cstime: u64,
    pub num_threads: u64,
    /// Clock ticks after boot; with the pid it identifies a process across pid reuse.
    pub starttime: u64,
}

/// Parses /proc/PID/stat. The command name may hold spaces and parentheses, so the fields
/// are counted from the *last* `)`.
pub fn parse_pid_stat(text: &str) -> Result<PidStat, ParseError> {
    const F: &str = "/proc/PID/stat";
    let open = text
        .find('(')
        .ok_or_else(|| ParseError::new(F, Some(1), "no `(comm)`"))?;
    let close = text
        .rfind(')')
        .ok_or_else(|| ParseError::new(F, Some(1), "no `(comm)`"))?;
    if close < open {
        return Err(ParseError::new(F, Some(1), "no `(comm)`"));
    }
    let pid = text[..open]
        .trim()
        .parse::<i32>()
        .map_err(|_| ParseError::new(F, Some(1), "bad pid"))?;
    let f: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    // f[0] is field 3 (state); field k is f[k - 3].
    if f.len() < 20 {
        return Err(ParseError::new(
            F,
            Some(1),
            format!("expected at least 22 fields, found {}", f.len() + 2),
        ));
    }
    let at = |k: usize| num(F, 1, f[k - 3]);
    Ok(PidStat {
        pid,
        comm: text[open + 1..close].to_string(),
        state: f[0].chars().next().unwrap_or('?'),
        ppid: f[1]
            .parse::<i32>()
            .map_err(|_| ParseError::new(F, Some(1), "bad ppid"))?,
        utime: at(14)?,
        stime: at(15)?,
        cutime: at(16)?,
        cstime: at(17)?,
        num_threads: at(20)?,
        starttime: at(22)?,
    })
}

/// What perflab reads of /proc/PID/status (or /proc/PID/task/TID/status).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PidStatus {
    /// Resident set, kB (absent for kernel threads and zombies: 0).
    pub vm_rss_kb: u64,
    pub voluntary_ctxt_switches: u64,
    pub nonvoluntary_ctxt_switches: u64,
}

/// Parses /proc/PID/status by field name.
pub fn parse_pid_status(text: &str) -> Result<PidStatus, ParseError> {
    const F: &str = "/proc/PID/status";
    let mut s = PidStatus::default();
    for (i, line) in text.lines().enumerate() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let slot = match k {
            "VmRSS" => &mut s.vm_rss_kb,
            "voluntary_ctxt_switches" => &mut s.voluntary_ctxt_switches,
            "nonvoluntary_ctxt_switches" => &mut s.nonvoluntary_ctxt_switches,
            _ => continue,
        };
        let v = v.split_ascii_whitespace().next().unwrap_or("");
        *slot = num(F, i + 1, v)?;
    }
    Ok(s)
}

/// `root` and every process below it, from (pid, ppid) pairs. `root` comes first; the
/// list is empty when `root` is not among the pairs.
pub fn descendants(root: i32, pairs: &[(i32, i32)]) -> Vec<i32> {
    if !pairs.iter().any(|(p, _)| *p == root) {
        return Vec::new();
    }
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (pid, ppid) in pairs {
        children.entry(*ppid).or_default().push(*pid);
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        if let Some(c) = children.get(&out[i]) {
            for pid in c {
                if !out.contains(pid) {
                    out.push(*pid);
                }
            }
        }
        i += 1;
    }
    out
}

/// One process of the followed tree at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcSnapshot {
    pub pid: i32,
    pub ppid: i32,
    pub starttime: u64,
    pub utime: u64,
    pub stime: u64,
    pub cutime: u64,
    pub cstime: u64,
    pub threads: u64,
    pub rss_kb: u64,
    /// Open file descriptors; `None` when /proc/PID/fd could not be read.
    pub fds: Option<u64>,
    /// Summed over the process's threads.
    pub vol_ctxt: u64,
    pub invol_ctxt: u64,
    /// Time runnable but waiting for a CPU, ns, summed over the process's threads.
    pub run_wait_ns: u64,
}

/// The `process` figures of one interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ProcessRates {
    /// CPU used by the tree in the interval, % of one core.
    pub cpu_pct: f64,
    /// Cumulative CPU seconds since the monitor started: user, system and both.
    pub user_s: f64,
    pub sys_s: f64,
    pub cpu_s: f64,
    pub rss_kb: f64,
    pub threads: f64,
    pub fds: f64,
    pub procs: f64,
    pub vol_ctxt_per_s: f64,
    pub invol_ctxt_per_s: f64,
    /// Time the tree's threads waited for a CPU in the interval, % of one core.
    pub run_wait_pct: f64,
}

/// Follows one process tree across samples (see the module doc for the CPU rules).
#[derive(Debug, Clone, Default)]
pub struct ProcessTracker {
    prev: HashMap<i32, ProcSnapshot>,
    user_ticks: u64,
    sys_ticks: u64,
    ticks_per_s: f64,
}

impl ProcessTracker {
    /// Starts from the tree as it is now: time spent before this is not counted.
    pub fn new(first: &[ProcSnapshot], ticks_per_s: u64) -> ProcessTracker {
        ProcessTracker {
            prev: first.iter().map(|p| (p.pid, *p)).collect(),
            user_ticks: 0,
            sys_ticks: 0,
            ticks_per_s: ticks_per_s.max(1) as f64,
        }
    }

    /// Folds in the tree as it is now, `secs` after the previous call.
    pub fn update(&mut self, cur: &[ProcSnapshot], secs: f64) -> ProcessRates {
        let same = |p: &ProcSnapshot, c: &ProcSnapshot| p.starttime == c.starttime;
        let (mut du, mut ds) = (0u64, 0u64);
        let (mut dvol, mut dinvol, mut dwait) = (0u64, 0u64, 0u64);
        // Last-seen time of children that vanished, by the parent that may have reaped them.
        let mut vanished: HashMap<i32, (u64, u64)> = HashMap::new();
        let alive: HashMap<i32, &ProcSnapshot> = cur.iter().map(|c| (c.pid, c)).collect();
        let gone = |p: &ProcSnapshot| !alive.get(&p.pid).is_some_and(|c| same(p, c));
        for p in self.prev.values() {
            if !gone(p) {
                continue;
            }
            // A grandchild reaped by a child that was itself reaped shows up in the
            // nearest ancestor still alive.
            let mut parent = p.ppid;
            let mut hops = 0;
            while let Some(pp) = self.prev.get(&parent).filter(|pp| gone(pp)) {
                parent = pp.ppid;
                hops += 1;
                if hops > self.prev.len() {
                    break;
                }
            }
            let e = vanished.entry(parent).or_default();
            e.0 += p.utime + p.cutime;
            e.1 += p.stime + p.cstime;
        }
        for c in cur {
            let prev = self.prev.get(&c.pid).filter(|p| same(p, c));
            let base = prev.copied().unwrap_or_default();
            du += c.utime.saturating_sub(base.utime);
            ds += c.stime.saturating_sub(base.stime);
            dvol += c.vol_ctxt.saturating_sub(base.vol_ctxt);
            dinvol += c.invol_ctxt.saturating_sub(base.invol_ctxt);
            dwait += c.run_wait_ns.saturating_sub(base.run_wait_ns);
            let (gone_u, gone_s) = vanished.get(&c.pid).copied().unwrap_or_default();
            let reaped_u = c.cutime.saturating_sub(base.cutime);
            let reaped_s = c.cstime.saturating_sub(base.cstime);
            du += reaped_u.saturating_sub(gone_u);
            ds += reaped_s.saturating_sub(gone_s);
        }
        self.user_ticks += du;
        self.sys_ticks += ds;
        self.prev = cur.iter().map(|c| (c.pid, *c)).collect();
        let t = self.ticks_per_s;
        let per_s = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
        ProcessRates {
            cpu_pct: per_s(du + ds) / t * 100.0,
            user_s: self.user_ticks as f64 / t,
            sys_s: self.sys_ticks as f64 / t,
            cpu_s: (self.user_ticks + self.sys_ticks) as f64 / t,
            rss_kb: cur.iter().map(|c| c.rss_kb).sum::<u64>() as f64,
            threads: cur.iter().map(|c| c.threads).sum::<u64>() as f64,
            fds: cur.iter().filter_map(|c| c.fds).sum::<u64>() as f64,
            procs: cur.len() as f64,
            vol_ctxt_per_s: per_s(dvol),
            invol_ctxt_per_s: per_s(dinvol),
            run_wait_pct: per_s(dwait) / 1e9 * 100.0,
        }
    }
}

/// Per-pid view of a [`ProcSnapshot`] list, for callers that want one process's figures.
pub fn by_pid(snaps: &[ProcSnapshot]) -> BTreeMap<i32, ProcSnapshot> {
    snaps.iter().map(|s| (s.pid, *s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, ppid: i32, utime: u64, cutime: u64) -> ProcSnapshot {
        ProcSnapshot {
            pid,
            ppid,
            starttime: pid as u64,
            utime,
            cutime,
            ..Default::default()
        }
    }

    #[test]
    fn comm_with_spaces_and_parens() {
        let s = parse_pid_stat(
            "42 (my (odd) name) S 1 42 42 0 -1 4194560 1 0 0 0 7 3 2 1 20 0 4 0 12345 1000 50 0",
        )
        .unwrap();
        assert_eq!(s.comm, "my (odd) name");
        assert_eq!(
            (s.ppid, s.utime, s.stime, s.cutime, s.cstime),
            (1, 7, 3, 2, 1)
        );
        assert_eq!((s.num_threads, s.starttime), (4, 12345));
        assert!(parse_pid_stat("42 (x) S 1 2").is_err());
        assert!(parse_pid_stat("garbage").is_err());
    }

    #[test]
    fn tree_from_pairs() {
        let pairs = [(1, 0), (10, 1), (11, 10), (12, 11), (13, 1), (14, 10)];
        assert_eq!(descendants(10, &pairs), vec![10, 11, 14, 12]);
        assert!(descendants(99, &pairs).is_empty());
    }

    #[test]
    fn reaped_child_counts_once() {
        // Parent 10 and child 11; child has 50 ticks at the first update.
        let mut t = ProcessTracker::new(&[p(10, 1, 100, 0), p(11, 10, 0, 0)], 100);
        let r = t.update(&[p(10, 1, 110, 0), p(11, 10, 50, 0)], 1.0);
        assert_eq!(r.cpu_s, 0.6);
        // Child exits after 20 more ticks and is reaped: parent's cutime += 70.
        let r = t.update(&[p(10, 1, 115, 70)], 1.0);
        assert!((r.cpu_s - 0.85).abs() < 1e-9, "{}", r.cpu_s);
        assert!((r.cpu_pct - 25.0).abs() < 1e-9);
    }

    #[test]
    fn unseen_short_lived_children_count_through_cutime() {
        let mut t = ProcessTracker::new(&[p(10, 1, 0, 0)], 100);
        let r = t.update(&[p(10, 1, 5, 40)], 0.5);
        assert!((r.cpu_s - 0.45).abs() < 1e-9);
        assert!((r.cpu_pct - 90.0).abs() < 1e-9);
    }

    #[test]
    fn unreaped_exit_never_goes_backwards() {
        let mut t = ProcessTracker::new(&[p(10, 1, 0, 0), p(11, 10, 0, 0)], 100);
        t.update(&[p(10, 1, 0, 0), p(11, 10, 30, 0)], 1.0);
        // Child vanished but the parent ignores SIGCHLD: no cutime growth.
        let r = t.update(&[p(10, 1, 0, 0)], 1.0);
        assert!((r.cpu_s - 0.3).abs() < 1e-9);
        assert_eq!(r.cpu_pct, 0.0);
    }

    #[test]
    fn grandchild_reaped_through_a_reaped_child_counts_once() {
        let mut t = ProcessTracker::new(&[p(1, 0, 0, 0), p(2, 1, 0, 0), p(3, 2, 0, 0)], 100);
        let r = t.update(&[p(1, 0, 0, 0), p(2, 1, 5, 0), p(3, 2, 10, 0)], 1.0);
        assert!((r.cpu_s - 0.15).abs() < 1e-9);
        // 3 ran 2 more ticks and was reaped by 2 (cutime 12); 2 ran 1 more and was
        // reaped by 1 (cutime 6 + 12).
        let r = t.update(&[p(1, 0, 0, 18)], 1.0);
        assert!((r.cpu_s - 0.18).abs() < 1e-9, "{}", r.cpu_s);
    }

    #[test]
    fn pid_reuse_is_a_new_process() {
        let mut t = ProcessTracker::new(&[p(10, 1, 500, 0)], 100);
        let mut reused = p(10, 1, 5, 0);
        reused.starttime = 999;
        let r = t.update(&[reused], 1.0);
        assert!((r.cpu_s - 0.05).abs() < 1e-9);
    }

    #[test]
    fn run_wait_is_the_tree_s_growth_as_a_share_of_one_core() {
        let w = |pid: i32, ns: u64| ProcSnapshot {
            run_wait_ns: ns,
            ..p(pid, 1, 0, 0)
        };
        let mut t = ProcessTracker::new(&[w(10, 1_000_000_000)], 100);
        // 10 waited 0.2 s more; 11 (new) waited 0.1 s, all of it inside the interval.
        let r = t.update(&[w(10, 1_200_000_000), w(11, 100_000_000)], 0.5);
        assert!((r.run_wait_pct - 60.0).abs() < 1e-9, "{}", r.run_wait_pct);
        // No growth, no wait.
        let r = t.update(&[w(10, 1_200_000_000)], 1.0);
        assert_eq!(r.run_wait_pct, 0.0);
    }
}
