//! A process's CPU bandwidth limit (a cgroup CPU quota) and how often it was throttled —
//! what a container's `--cpus`, a Kubernetes CPU limit or systemd's `CPUQuota=` set.
//!
//! A process capped at 0.5 CPU cannot go faster once it uses half a CPU, however many
//! CPUs it may run on; while throttled its threads stay runnable, so the scheduler's
//! run delay counts that time as "waiting for a CPU". The quota is what explains both.
//!
//! Where it is read (all below one /proc root):
//! - `/proc/PID/cgroup`: the process's cgroup — `0::/path` on cgroup v2, or the line
//!   whose controller list holds `cpu` on v1 (`4:cpu,cpuacct:/path`);
//! - `/proc/self/mountinfo`: where that hierarchy is mounted (a `cgroup2` mount, or a
//!   `cgroup` mount whose super options hold `cpu`), and its root inside the hierarchy;
//! - v2: `cpu.max` (`max 100000` or `QUOTA PERIOD`, µs) in the cgroup and each ancestor
//!   below the mount, and `cpu.stat` (`nr_periods`, `nr_throttled`, `throttled_usec`);
//! - v1: `cpu.cfs_quota_us` (-1: none) and `cpu.cfs_period_us` likewise, and
//!   `cpu.stat` (`nr_periods`, `nr_throttled`, `throttled_time` in ns).
//!
//! The tightest quota on the path is the limit (a parent's cap holds for its children).
//! A host without the controller, a process that is gone, or files that do not parse
//! give None: no limit is ever invented.

use std::path::{Path, PathBuf};

/// A CPU bandwidth limit.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuQuota {
    /// CPUs' worth of time per period (quota / period).
    pub cpus: f64,
    pub quota_us: u64,
    pub period_us: u64,
    /// The file it was read from, for the evidence.
    pub file: PathBuf,
}

/// A cgroup's cumulative throttling counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throttling {
    /// Enforcement periods that elapsed while the group was runnable.
    pub periods: u64,
    /// Periods in which it ran out of quota.
    pub throttled: u64,
    /// Time its tasks were held back, ns.
    pub throttled_ns: u64,
}

impl Throttling {
    /// What happened between `before` and `self` (a later read), never negative.
    pub fn since(&self, before: &Throttling) -> Throttling {
        Throttling {
            periods: self.periods.saturating_sub(before.periods),
            throttled: self.throttled.saturating_sub(before.throttled),
            throttled_ns: self.throttled_ns.saturating_sub(before.throttled_ns),
        }
    }
}

/// The directory of `pid`'s CPU cgroup, the mount's directory (where the walk up
/// stops) and whether it is cgroup v2.
fn cgroup_dir(root: &Path, pid: i32) -> Option<(PathBuf, PathBuf, bool)> {
    let cg = std::fs::read_to_string(root.join(pid.to_string()).join("cgroup")).ok()?;
    let mounts = std::fs::read_to_string(root.join("self/mountinfo")).ok()?;
    let (v2, path) = cpu_cgroup_path(&cg)?;
    let (mount_root, mount_point) = cpu_mount(&mounts, v2)?;
    // Component by component: /kubepods/pod10 is not under a mount of /kubepods/pod1,
    // and a cgroup outside the mount's root cannot be read through it.
    let rel = Path::new(&path).strip_prefix(&mount_root).ok()?;
    let dir = Path::new(&mount_point).join(rel);
    Some((dir, PathBuf::from(mount_point), v2))
}

/// The cpu controller's line of a /proc/PID/cgroup text: (v2?, path). A v1 `cpu`
/// hierarchy wins over the unified one (on a hybrid host the controller is there).
pub fn cpu_cgroup_path(text: &str) -> Option<(bool, String)> {
    let mut unified = None;
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (_, ctrls, path) = (f.next()?, f.next()?, f.next()?);
        if ctrls.split(',').any(|c| c == "cpu") {
            return Some((false, path.to_string()));
        }
        if ctrls.is_empty() {
            unified = Some((true, path.to_string()));
        }
    }
    unified
}

/// The (root in the hierarchy, mount point) of the cpu hierarchy in a mountinfo text.
pub fn cpu_mount(text: &str, v2: bool) -> Option<(String, String)> {
    text.lines().find_map(|line| {
        let (pre, post) = line.split_once(" - ")?;
        let pre: Vec<&str> = pre.split(' ').collect();
        let mut post = post.split(' ');
        let (fstype, _source, opts) = (post.next()?, post.next()?, post.next().unwrap_or(""));
        let wanted = if v2 {
            fstype == "cgroup2"
        } else {
            fstype == "cgroup" && opts.split(',').any(|o| o == "cpu")
        };
        (wanted && pre.len() >= 5).then(|| (unescape(pre[3]), unescape(pre[4])))
    })
}

/// mountinfo escapes spaces, tabs, newlines and backslashes as octal (`\040`).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], oct) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One directory's quota, if it has one: v2 `cpu.max`, v1 `cpu.cfs_quota_us` and
/// `cpu.cfs_period_us`.
fn quota_in(dir: &Path, v2: bool) -> Option<CpuQuota> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let (q, p, file) = if v2 {
        let t = read("cpu.max")?;
        let (q, p) = parse_cpu_max(&t)?;
        (q, p, dir.join("cpu.max"))
    } else {
        let q: i64 = read("cpu.cfs_quota_us")?.trim().parse().ok()?;
        let p: u64 = read("cpu.cfs_period_us")?.trim().parse().ok()?;
        (u64::try_from(q).ok()?, p, dir.join("cpu.cfs_quota_us"))
    };
    (p > 0 && q > 0).then(|| CpuQuota {
        cpus: q as f64 / p as f64,
        quota_us: q,
        period_us: p,
        file,
    })
}

/// `cpu.max`: `QUOTA PERIOD` → Some; `max PERIOD` (no limit) or garbage → None.
pub fn parse_cpu_max(text: &str) -> Option<(u64, u64)> {
    let mut f = text.split_ascii_whitespace();
    let q = f.next()?.parse().ok()?;
    let p = f.next().map_or(Some(100_000), |p| p.parse().ok())?;
    Some((q, p))
}

/// The tightest CPU quota on `pid`'s cgroup path (its cgroup and every ancestor up to
/// the hierarchy's mount), read under `root` (`/proc`); None when there is none.
pub fn read_quota(root: &Path, pid: i32) -> Option<CpuQuota> {
    let (dir, top, v2) = cgroup_dir(root, pid)?;
    let mut best: Option<CpuQuota> = None;
    let mut at = Some(dir.as_path());
    while let Some(d) = at {
        if let Some(q) = quota_in(d, v2) {
            if best.as_ref().is_none_or(|b| q.cpus < b.cpus) {
                best = Some(q);
            }
        }
        if d == top {
            break;
        }
        at = d.parent().filter(|p| p.starts_with(&top));
    }
    best
}

/// `cpu.stat`'s throttling counters (v2 `throttled_usec`, v1 `throttled_time` in ns).
pub fn parse_cpu_stat(text: &str) -> Option<Throttling> {
    let mut t = Throttling::default();
    let mut seen = false;
    for line in text.lines() {
        let Some((k, v)) = line.split_once(' ') else {
            continue;
        };
        let Ok(v) = v.trim().parse::<u64>() else {
            continue;
        };
        match k {
            "nr_periods" => t.periods = v,
            "nr_throttled" => t.throttled = v,
            "throttled_usec" => t.throttled_ns = v.saturating_mul(1000),
            "throttled_time" => t.throttled_ns = v,
            _ => continue,
        }
        seen = true;
    }
    seen.then_some(t)
}

/// The throttling counters of `pid`'s own CPU cgroup, read under `root`.
pub fn read_throttling(root: &Path, pid: i32) -> Option<Throttling> {
    let (dir, _, _) = cgroup_dir(root, pid)?;
    parse_cpu_stat(&std::fs::read_to_string(dir.join("cpu.stat")).ok()?)
}

#[cfg(test)]
mod tests;
