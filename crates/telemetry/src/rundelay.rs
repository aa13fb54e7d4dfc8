//! Per-task run delay: `/proc/PID/task/TID/schedstat`, summed over a process's threads,
//! and the CPUs a process may use (`Cpus_allowed_list` in /proc/PID/status).
//!
//! A schedstat file is one line of three numbers (CONFIG_SCHED_INFO, on in every
//! distribution kernel):
//!
//! ```text
//! 1234567 89012 345
//! ```
//!
//! time on a CPU (ns), time runnable but waiting on a run queue (ns), and timeslices
//! run. `/proc/PID/schedstat` alone is the main thread only, so a multi-threaded
//! server is read thread by thread. The wait is what a CPU-time figure cannot show: a
//! task that shares its CPU with another is on CPU half the time and still cannot go
//! faster. The figures are cumulative; the caller subtracts two reads (threads that
//! start or end in between count only for what they did while both reads saw them).

use std::path::Path;

use crate::error::ParseError;

/// One task's (or the sum over tasks') scheduler figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunDelay {
    /// Time on a CPU, ns.
    pub on_cpu_ns: u64,
    /// Time runnable, waiting on a run queue, ns.
    pub wait_ns: u64,
    /// Timeslices run.
    pub slices: u64,
}

impl RunDelay {
    /// Adds another task's figures.
    pub fn add(&mut self, o: &RunDelay) {
        self.on_cpu_ns += o.on_cpu_ns;
        self.wait_ns += o.wait_ns;
        self.slices += o.slices;
    }

    /// What happened between `before` and `self` (a later read), never negative.
    pub fn since(&self, before: &RunDelay) -> RunDelay {
        RunDelay {
            on_cpu_ns: self.on_cpu_ns.saturating_sub(before.on_cpu_ns),
            wait_ns: self.wait_ns.saturating_sub(before.wait_ns),
            slices: self.slices.saturating_sub(before.slices),
        }
    }
}

/// Parses one schedstat file.
pub fn parse_schedstat(text: &str) -> Result<RunDelay, ParseError> {
    const F: &str = "/proc/PID/schedstat";
    let f: Vec<&str> = text.split_ascii_whitespace().collect();
    if f.len() < 3 {
        return Err(ParseError::new(
            F,
            Some(1),
            format!("expected 3 numbers, found {}", f.len()),
        ));
    }
    let n = |s: &str| {
        s.parse::<u64>()
            .map_err(|_| ParseError::new(F, Some(1), format!("`{s}` is not a number")))
    };
    Ok(RunDelay {
        on_cpu_ns: n(f[0])?,
        wait_ns: n(f[1])?,
        slices: n(f[2])?,
    })
}

/// Each thread of `pid` (tid, figures), read under `root` (`/proc`); empty when the
/// process is gone or the kernel has no schedstat.
pub fn read_threads(root: &Path, pid: i32) -> Vec<(i32, RunDelay)> {
    let tasks = root.join(pid.to_string()).join("task");
    let Ok(rd) = std::fs::read_dir(&tasks) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let Some(tid) = e.file_name().to_str().and_then(|t| t.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(d) = std::fs::read_to_string(e.path().join("schedstat"))
            .map_err(|_| ())
            .and_then(|t| parse_schedstat(&t).map_err(|_| ()))
        {
            out.push((tid, d));
        }
    }
    out
}

/// The sum over `pid`'s threads; None when nothing could be read.
pub fn read_process(root: &Path, pid: i32) -> Option<RunDelay> {
    let threads = read_threads(root, pid);
    if threads.is_empty() {
        return None;
    }
    let mut sum = RunDelay::default();
    for (_, d) in &threads {
        sum.add(d);
    }
    Some(sum)
}

/// The CPUs of a CPU list (`0-3,8,10-11` → 0,1,2,3,8,10,11); None when it does not
/// parse or is empty.
pub fn cpu_list(list: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?);
                if b < a || b - a > 65_536 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse::<u32>().ok()?),
        }
    }
    (!out.is_empty()).then_some(out)
}

/// `Cpus_allowed_list` of a /proc/PID/status text.
pub fn allowed_cpus(status: &str) -> Option<Vec<u32>> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(cpu_list)
}

/// The CPUs `pid` may run on, read under `root`.
pub fn read_allowed_cpus(root: &Path, pid: i32) -> Option<Vec<u32>> {
    let t = std::fs::read_to_string(root.join(pid.to_string()).join("status")).ok()?;
    allowed_cpus(&t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_numbers() {
        let d = parse_schedstat("1234567 89012 345\n").unwrap();
        assert_eq!((d.on_cpu_ns, d.wait_ns, d.slices), (1_234_567, 89_012, 345));
        assert!(parse_schedstat("1 2").is_err());
        assert!(parse_schedstat("1 x 3")
            .unwrap_err()
            .to_string()
            .contains("`x`"));
    }

    #[test]
    fn deltas_add_up_and_never_go_negative() {
        let mut a = RunDelay {
            on_cpu_ns: 10,
            wait_ns: 5,
            slices: 1,
        };
        a.add(&a.clone());
        assert_eq!(a.on_cpu_ns, 20);
        let b = RunDelay {
            on_cpu_ns: 25,
            wait_ns: 4,
            slices: 3,
        };
        assert_eq!(
            b.since(&a),
            RunDelay {
                on_cpu_ns: 5,
                wait_ns: 0,
                slices: 1
            }
        );
    }

    #[test]
    fn cpu_lists_are_read() {
        assert_eq!(cpu_list("0-3,8,10-11").map(|l| l.len()), Some(7));
        assert_eq!(cpu_list("1\n"), Some(vec![1]));
        assert_eq!(cpu_list("3-1"), None);
        assert_eq!(cpu_list("0-4294967295"), None);
        assert_eq!(cpu_list(""), None);
        let status = "Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n";
        assert_eq!(allowed_cpus(status), Some(vec![0, 1]));
    }

    #[test]
    fn this_process_is_read_thread_by_thread() {
        let me = std::process::id() as i32;
        let d = read_process(Path::new("/proc"), me).expect("schedstat of this process");
        assert!(d.on_cpu_ns > 0);
        assert!(!read_allowed_cpus(Path::new("/proc"), me)
            .unwrap_or_default()
            .is_empty());
        assert!(read_process(Path::new("/proc"), i32::MAX).is_none());
    }
}
