//! Whole-process-tree measurement: wall, user and system CPU, and peak memory of a
//! command *and everything it starts*, daemonized grandchildren included.
//!
//! Why it is shaped so: `getrusage(RUSAGE_CHILDREN)` misses processes nobody waited
//! for and cannot isolate one trial, and `/proc` sampling misses short-lived peaks. So
//! each trial runs in its own cgroup when the machine allows it — created *beneath
//! perflab's own cgroup* in each hierarchy (read from `/proc/self/cgroup`, so limits set
//! above perflab keep applying), removed after the trial:
//!
//! * cgroup v2: `cpu.stat` (`user_usec`, `system_usec`) and `memory.peak`
//!   (`memory.peak` needs the memory controller delegated; without it peak memory
//!   comes from `/proc` sampling and the method says `cgroup-v2+proc`);
//! * cgroup v1: `cpuacct.usage_user` / `cpuacct.usage_sys` and
//!   `memory.max_usage_in_bytes`.
//!
//! Cgroup memory figures include page cache charged to the group; that is what the
//! kernel would reclaim or OOM-kill for, so it is the honest "memory this trial needed".
//!
//! Otherwise perflab is a child subreaper (`PR_SET_CHILD_SUBREAPER`): orphaned
//! descendants are re-parented to perflab, which reaps each with `wait4` (summing their
//! rusage, which already includes everything *they* reaped) and samples the resident
//! set of the live tree from `/proc` every few milliseconds. Only specific pids are ever
//! waited for, so other children of the process (services, `Command::output`) are not
//! disturbed; a child of this process in this process's own group (`perf record` of a
//! `[profile]`) is never taken for an orphan of the tree ([`tree_of`]).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How a tree was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    CgroupV2,
    CgroupV2Proc,
    CgroupV1,
    Subreaper,
}

impl Method {
    pub fn as_str(&self) -> &'static str {
        match self {
            Method::CgroupV2 => "cgroup-v2",
            Method::CgroupV2Proc => "cgroup-v2+proc",
            Method::CgroupV1 => "cgroup-v1",
            Method::Subreaper => "subreaper+proc",
        }
    }
}

/// Totals for a finished tree.
#[derive(Debug, Clone, Copy)]
pub struct TreeUsage {
    pub user_s: f64,
    pub sys_s: f64,
    pub peak_rss_bytes: u64,
}

/// Makes the calling process a child subreaper. Call once at start-up.
pub fn become_subreaper() -> std::io::Result<()> {
    // SAFETY: prctl with integer arguments.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The cgroup (or its absence) that holds one trial's process tree.
#[derive(Debug)]
pub struct TreeGroup {
    kind: GroupKind,
    /// `cgroup.procs` of each created group, opened before fork so the child can
    /// join with a bare `write(2)`.
    procs: Vec<fs::File>,
}

#[derive(Debug)]
enum GroupKind {
    V2 {
        dir: PathBuf,
        has_memory: bool,
    },
    V1 {
        cpuacct: PathBuf,
        memory: Option<PathBuf>,
    },
    None,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

impl TreeGroup {
    /// Creates a fresh group for a trial, the best the machine allows. Setting
    /// `PERFLAB_NO_CGROUP=1` forces the subreaper method (tests use it).
    pub fn create() -> TreeGroup {
        let none = TreeGroup {
            kind: GroupKind::None,
            procs: Vec::new(),
        };
        if std::env::var_os("PERFLAB_NO_CGROUP").is_some_and(|v| v == "1") {
            return none;
        }
        let name = format!(
            "perflab-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let Ok(table) = CgroupTable::read() else {
            return none;
        };
        if let Some(g) = table.create_v1(&name) {
            return g;
        }
        if let Some(g) = table.create_v2(&name) {
            return g;
        }
        none
    }

    /// The measurement method this group gives.
    pub fn method(&self) -> Method {
        match &self.kind {
            GroupKind::V2 {
                has_memory: true, ..
            } => Method::CgroupV2,
            GroupKind::V2 { .. } => Method::CgroupV2Proc,
            GroupKind::V1 {
                memory: Some(_), ..
            } => Method::CgroupV1,
            GroupKind::V1 { memory: None, .. } => Method::CgroupV2Proc,
            GroupKind::None => Method::Subreaper,
        }
    }

    /// Whether peak memory must come from /proc sampling.
    pub fn needs_rss_sampling(&self) -> bool {
        !matches!(
            self.kind,
            GroupKind::V2 {
                has_memory: true,
                ..
            } | GroupKind::V1 {
                memory: Some(_),
                ..
            }
        )
    }

    /// Whether CPU time comes from the group (else from reaped rusage).
    pub fn has_cpu(&self) -> bool {
        !matches!(self.kind, GroupKind::None)
    }

    /// Raw fds to write the child's pid into, for `pre_exec`.
    pub fn join_fds(&self) -> Vec<i32> {
        self.procs.iter().map(|f| f.as_raw_fd()).collect()
    }

    /// Pids in the group now (empty when there is no group).
    pub fn pids(&self) -> Vec<i32> {
        let file = match &self.kind {
            GroupKind::V2 { dir, .. } => dir.join("cgroup.procs"),
            GroupKind::V1 { cpuacct, .. } => cpuacct.join("cgroup.procs"),
            GroupKind::None => return Vec::new(),
        };
        fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// CPU and memory totals from the group's counters.
    pub fn usage(&self) -> Option<(f64, f64, Option<u64>)> {
        match &self.kind {
            GroupKind::V2 { dir, has_memory } => {
                let stat = fs::read_to_string(dir.join("cpu.stat")).ok()?;
                let field = |k: &str| {
                    stat.lines()
                        .find_map(|l| l.strip_prefix(k)?.trim().parse::<f64>().ok())
                };
                let user = field("user_usec ")? / 1e6;
                let sys = field("system_usec ")? / 1e6;
                let peak = if *has_memory {
                    read_u64(&dir.join("memory.peak"))
                } else {
                    None
                };
                Some((user, sys, peak))
            }
            GroupKind::V1 { cpuacct, memory } => {
                let user = read_u64(&cpuacct.join("cpuacct.usage_user"))? as f64 / 1e9;
                let sys = read_u64(&cpuacct.join("cpuacct.usage_sys"))? as f64 / 1e9;
                let peak = memory
                    .as_ref()
                    .and_then(|m| read_u64(&m.join("memory.max_usage_in_bytes")));
                Some((user, sys, peak))
            }
            GroupKind::None => None,
        }
    }

    /// Sends SIGKILL to every process in the group.
    pub fn kill_all(&self) {
        if let GroupKind::V2 { dir, .. } = &self.kind {
            if fs::write(dir.join("cgroup.kill"), "1").is_ok() {
                return;
            }
        }
        for pid in self.pids() {
            // SAFETY: kill with a pid read from the group.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

impl Drop for TreeGroup {
    fn drop(&mut self) {
        self.procs.clear();
        let dirs: Vec<PathBuf> = match &self.kind {
            GroupKind::V2 { dir, .. } => vec![dir.clone()],
            GroupKind::V1 { cpuacct, memory } => {
                let mut v = vec![cpuacct.clone()];
                v.extend(memory.clone());
                v
            }
            GroupKind::None => vec![],
        };
        for d in dirs {
            // A group can only be removed once empty; processes may take a moment to
            // leave after SIGKILL.
            let deadline = Instant::now() + Duration::from_secs(2);
            while fs::remove_dir(&d).is_err() && Instant::now() < deadline && d.exists() {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

fn read_u64(p: &Path) -> Option<u64> {
    fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// Where this process sits in each cgroup hierarchy, and where those are mounted.
struct CgroupTable {
    /// controller (or "" for v2) → path of our group relative to the hierarchy root.
    membership: HashMap<String, String>,
    /// controller (or "" for v2) → mount point of the hierarchy.
    mounts: HashMap<String, PathBuf>,
}

impl CgroupTable {
    fn read() -> std::io::Result<CgroupTable> {
        let mut membership = HashMap::new();
        for line in fs::read_to_string("/proc/self/cgroup")?.lines() {
            let mut it = line.splitn(3, ':');
            let (_, ctrls, path) = (it.next(), it.next(), it.next());
            let (Some(ctrls), Some(path)) = (ctrls, path) else {
                continue;
            };
            if ctrls.is_empty() {
                membership.insert(String::new(), path.to_string());
            }
            for c in ctrls.split(',').filter(|c| !c.is_empty()) {
                membership.insert(c.to_string(), path.to_string());
            }
        }
        let mut mounts = HashMap::new();
        for line in fs::read_to_string("/proc/self/mountinfo")?.lines() {
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let mut r = right.split(' ');
            let fstype = r.next().unwrap_or("");
            let _source = r.next();
            let opts = r.next().unwrap_or("");
            let Some(mount_point) = left.split(' ').nth(4) else {
                continue;
            };
            let mp = PathBuf::from(mount_point);
            match fstype {
                "cgroup2" => {
                    mounts.entry(String::new()).or_insert(mp);
                }
                "cgroup" => {
                    for o in opts.split(',') {
                        if matches!(o, "cpuacct" | "memory") {
                            mounts.entry(o.to_string()).or_insert(mp.clone());
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(CgroupTable { membership, mounts })
    }

    fn dir_for(&self, key: &str, name: &str) -> Option<PathBuf> {
        let mount = self.mounts.get(key)?;
        let rel = self.membership.get(key)?;
        let parent = mount.join(rel.trim_start_matches('/'));
        parent.is_dir().then(|| parent.join(name))
    }

    fn create_v1(&self, name: &str) -> Option<TreeGroup> {
        let cpu = self.dir_for("cpuacct", name)?;
        fs::create_dir(&cpu).ok()?;
        let mut procs = vec![open_procs(&cpu)?];
        let memory = self.dir_for("memory", name).and_then(|m| {
            fs::create_dir(&m).ok()?;
            match open_procs(&m) {
                Some(f) => {
                    procs.push(f);
                    Some(m)
                }
                None => {
                    let _ = fs::remove_dir(&m);
                    None
                }
            }
        });
        Some(TreeGroup {
            kind: GroupKind::V1 {
                cpuacct: cpu,
                memory,
            },
            procs,
        })
    }

    fn create_v2(&self, name: &str) -> Option<TreeGroup> {
        let dir = self.dir_for("", name)?;
        fs::create_dir(&dir).ok()?;
        let Some(f) = open_procs(&dir) else {
            let _ = fs::remove_dir(&dir);
            return None;
        };
        let has_memory = dir.join("memory.peak").exists();
        Some(TreeGroup {
            kind: GroupKind::V2 { dir, has_memory },
            procs: vec![f],
        })
    }
}

fn open_procs(dir: &Path) -> Option<fs::File> {
    let f = fs::OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.procs"))
        .ok()?;
    // Probe that we may move processes here: writing our own pid would move *us*, so
    // only check write permission was granted by open().
    let _ = (&f).flush();
    Some(f)
}

/// Writes the calling process's pid into each fd. Async-signal-safe (for `pre_exec`).
pub fn join_raw(fds: &[i32]) -> std::io::Result<()> {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let mut buf = [0u8; 16];
    let mut n = pid as u32;
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &fd in fds {
        let digits = &buf[i..];
        // SAFETY: fd is an open descriptor, digits a valid buffer.
        let rc = unsafe { libc::write(fd, digits.as_ptr().cast(), digits.len()) };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A process as seen in `/proc/PID/stat`.
#[derive(Debug, Clone, Copy)]
pub struct ProcInfo {
    pub pid: i32,
    pub ppid: i32,
    /// Process group: a process this one started for itself (perf, a helper) stays in
    /// its group; the measured tree has a group of its own (see [`tree_of`]).
    pub pgid: i32,
    pub zombie: bool,
    pub rss_bytes: u64,
}

/// Every process on the machine (best effort: processes vanish while we read).
pub fn all_processes() -> Vec<ProcInfo> {
    let page = page_size();
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The command name may hold spaces and parentheses: fields start after the last ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() < 22 {
            continue;
        }
        let rss_pages: u64 = f[21].parse().unwrap_or(0);
        out.push(ProcInfo {
            pid,
            ppid: f[1].parse().unwrap_or(0),
            pgid: f[2].parse().unwrap_or(0),
            zombie: f[0] == "Z",
            rss_bytes: rss_pages * page,
        });
    }
    out
}

fn page_size() -> u64 {
    // SAFETY: sysconf with a valid name.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// The pids of the tree rooted at `root`, plus descendants of orphans re-parented to
/// `me` that are not in `exclude` (other children of this process, e.g. services).
///
/// A child of `me` in `me`'s own process group is never an orphan of the tree: the
/// root starts a group of its own (`setpgid` before `exec`) which its descendants
/// inherit, while what this process starts for itself — `perf record` of a
/// `[profile]`, a helper command — stays in this process's group. Taking such a child
/// for a leftover of the tree made the trial wait for a perf that runs until the trial
/// ends, and reap it, so perf's owner lost it ("cannot wait for perf: No child
/// processes").
pub fn tree_of(procs: &[ProcInfo], root: i32, me: i32, exclude: &HashSet<i32>) -> Vec<ProcInfo> {
    let mut children: HashMap<i32, Vec<usize>> = HashMap::new();
    for (i, p) in procs.iter().enumerate() {
        children.entry(p.ppid).or_default().push(i);
    }
    let my_group = procs.iter().find(|p| p.pid == me).map(|p| p.pgid);
    let mut out = Vec::new();
    let mut stack = vec![root];
    for p in procs {
        if p.ppid == me && p.pid != root && !exclude.contains(&p.pid) && Some(p.pgid) != my_group {
            stack.push(p.pid);
        }
    }
    let mut seen = HashSet::new();
    while let Some(pid) = stack.pop() {
        if !seen.insert(pid) {
            continue;
        }
        if let Some(p) = procs.iter().find(|p| p.pid == pid) {
            out.push(*p);
        }
        if let Some(kids) = children.get(&pid) {
            stack.extend(kids.iter().map(|&i| procs[i].pid));
        }
    }
    out
}

/// `wait4` on one pid without blocking; returns the rusage CPU seconds (user, sys)
/// and max RSS in bytes when the pid was reaped.
pub fn try_reap(pid: i32) -> Option<(libc::c_int, f64, f64, u64)> {
    let mut status = 0;
    // SAFETY: zeroed rusage is valid; wait4 writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers.
    let rc = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
    (rc == pid).then(|| {
        let (u, s, m) = rusage_parts(&ru);
        (status, u, s, m)
    })
}

/// (user s, sys s, max RSS bytes) of an rusage.
pub fn rusage_parts(ru: &libc::rusage) -> (f64, f64, u64) {
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime), ru.ru_maxrss as u64 * 1024)
}

#[cfg(test)]
mod tree_of_tests {
    use super::*;

    fn p(pid: i32, ppid: i32, pgid: i32) -> ProcInfo {
        ProcInfo {
            pid,
            ppid,
            pgid,
            zombie: false,
            rss_bytes: 0,
        }
    }

    #[test]
    fn a_child_in_our_own_group_is_not_an_orphan_of_the_tree() {
        // me = 10 (group 10); root 20 (its own group); 30 = perf, our child in our
        // group; 40 = an orphan of the tree re-parented to us (group 20); 50 = a
        // daemon of the tree that started its own session (group 50).
        let procs = [
            p(10, 1, 10),
            p(20, 10, 20),
            p(21, 20, 20),
            p(30, 10, 10),
            p(40, 10, 20),
            p(50, 10, 50),
        ];
        let mut pids: Vec<i32> = tree_of(&procs, 20, 10, &HashSet::new())
            .iter()
            .map(|p| p.pid)
            .collect();
        pids.sort();
        assert_eq!(pids, [20, 21, 40, 50]);
    }
}
