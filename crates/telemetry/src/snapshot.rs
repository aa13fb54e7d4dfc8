//! One read of every file the chosen probes need, at one instant.
//!
//! This is the only module that touches the file system (and, for the live system's
//! TCP sockets, netlink: see [`crate::sock_diag`]). Everything is read relative to a root directory —
//! `/proc` in production, a fixture directory laid out like /proc in tests — so the whole
//! path from files to figures runs on committed snapshots.
//!
//! A file that cannot be read or parsed costs only its own figures: the problem is noted
//! once in [`Notes::warnings`] and the sample goes on. Files that exist only when a
//! feature is loaded (NFS) are noted as not available instead.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::cpu::{self, LoadAvg, ProcStat};
use crate::disk::{self, DiskStats};
use crate::error::ParseError;
use crate::memory::{self, MemInfo, VmCounters};
use crate::net::{self, NetCounters};
use crate::nfs::{self, NfsCounters};
use crate::pressure::{self, PressureSet};
use crate::probe::Probe;
use crate::process::{self, ProcSnapshot};
use crate::sock_diag;
use crate::sockets::{self, SocketCounts};

/// Problems met while sampling, each reported once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notes {
    /// Files that could not be read or parsed (their figures are missing).
    pub warnings: Vec<String>,
    /// Figures this host does not provide (e.g. `nfs: /proc/net/rpc/nfs not present`).
    pub unavailable: Vec<String>,
    seen: BTreeSet<String>,
}

impl Notes {
    fn warn(&mut self, key: &str, msg: String) {
        if self.seen.insert(format!("w:{key}")) {
            self.warnings.push(msg);
        }
    }
    fn unavailable(&mut self, key: &str, msg: String) {
        if self.seen.insert(format!("u:{key}")) {
            self.unavailable.push(msg);
        }
    }
}

/// Everything read at one instant; `None` where the probe is off or the file failed.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Seconds on the sampler's monotonic clock.
    pub at: f64,
    pub stat: Option<ProcStat>,
    pub loadavg: Option<LoadAvg>,
    pub meminfo: Option<MemInfo>,
    pub vmstat: Option<VmCounters>,
    pub disks: Option<Vec<DiskStats>>,
    pub net: Option<NetCounters>,
    pub sockets: Option<SocketCounts>,
    pub nfs: Option<NfsCounters>,
    /// Pressure stall information (None: probe off, or a kernel without PSI).
    pub pressure: Option<PressureSet>,
    /// The followed process tree (root first); empty once the process is gone.
    pub procs: Option<Vec<ProcSnapshot>>,
}

/// What to read.
#[derive(Debug, Clone)]
pub struct ReadSpec<'a> {
    /// Where /proc is (`/proc`, or a fixture directory).
    pub root: &'a Path,
    pub probes: &'a [Probe],
    /// The process to follow (probe `process`; also names its CLOSE_WAIT sockets).
    pub pid: Option<i32>,
}

impl ReadSpec<'_> {
    fn has(&self, p: Probe) -> bool {
        self.probes.contains(&p)
    }
}

/// How reading one file went.
enum Got<T> {
    Ok(T),
    Absent,
    Failed,
}

/// Reads a /proc file with a buffer large enough for the common case. /proc files report
/// size 0, so `fs::read_to_string` would start with a 32-byte probe read — and a read of
/// /proc/net/tcp that needs a new record makes the kernel walk the TCP hash table on
/// from where it stopped (about 2.5 ms for all 262,144 buckets of a 24 GB host).
pub fn read_proc(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut s = String::with_capacity(64 * 1024);
    fs::File::open(path)?.read_to_string(&mut s)?;
    Ok(s)
}

fn load<T>(
    root: &Path,
    rel: &str,
    parse: impl FnOnce(&str) -> Result<T, ParseError>,
    notes: &mut Notes,
) -> Got<T> {
    let path = root.join(rel);
    match read_proc(&path) {
        Ok(text) => match parse(&text) {
            Ok(v) => Got::Ok(v),
            Err(e) => {
                notes.warn(rel, format!("cannot parse /proc/{rel}: {e}"));
                Got::Failed
            }
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Got::Absent,
        Err(e) => {
            notes.warn(rel, format!("cannot read /proc/{rel}: {e}"));
            Got::Failed
        }
    }
}

/// A file every host has: absent is a warning too.
fn required<T>(
    root: &Path,
    rel: &str,
    parse: impl FnOnce(&str) -> Result<T, ParseError>,
    notes: &mut Notes,
) -> Option<T> {
    match load(root, rel, parse, notes) {
        Got::Ok(v) => Some(v),
        Got::Absent => {
            notes.warn(rel, format!("cannot read /proc/{rel}: not present"));
            None
        }
        Got::Failed => None,
    }
}

/// A file that exists only with some feature: absent is "not available".
fn optional<T>(
    root: &Path,
    rel: &str,
    probe: Probe,
    parse: impl FnOnce(&str) -> Result<T, ParseError>,
    notes: &mut Notes,
) -> Option<T> {
    match load(root, rel, parse, notes) {
        Got::Ok(v) => Some(v),
        Got::Absent => {
            notes.unavailable(rel, format!("{probe}: /proc/{rel} not present"));
            None
        }
        Got::Failed => None,
    }
}

impl Snapshot {
    /// Reads every file `spec` needs; `at` is the caller's clock reading.
    pub fn read(spec: &ReadSpec<'_>, at: f64, notes: &mut Notes) -> Snapshot {
        let root = spec.root;
        let mut s = Snapshot {
            at,
            ..Default::default()
        };
        if spec.has(Probe::Cpu) || spec.has(Probe::Sched) {
            s.stat = required(root, "stat", cpu::parse_stat, notes);
        }
        if spec.has(Probe::Sched) {
            s.loadavg = required(root, "loadavg", cpu::parse_loadavg, notes);
        }
        if spec.has(Probe::Memory) {
            s.meminfo = required(root, "meminfo", memory::parse_meminfo, notes);
            s.vmstat = required(root, "vmstat", memory::parse_vmstat, notes);
        }
        if spec.has(Probe::Disk) {
            s.disks = required(root, "diskstats", disk::parse_diskstats, notes);
        }
        if spec.has(Probe::Net) {
            s.net = read_net(root, notes);
        }
        if spec.has(Probe::Process) {
            s.procs = spec.pid.map(|pid| read_tree(root, pid));
        }
        if spec.has(Probe::Sockets) {
            s.sockets = read_sockets(root, notes);
        }
        if spec.has(Probe::Nfs) {
            let n = NfsCounters {
                client: optional(root, "net/rpc/nfs", Probe::Nfs, nfs::parse_rpc_nfs, notes),
                server: optional(root, "net/rpc/nfsd", Probe::Nfs, nfs::parse_rpc_nfsd, notes),
                pools: optional(
                    root,
                    "fs/nfsd/pool_stats",
                    Probe::Nfs,
                    nfs::parse_pool_stats,
                    notes,
                ),
            };
            s.nfs = Some(n);
        }
        if spec.has(Probe::Pressure) {
            s.pressure = match pressure::read_pressure(root) {
                Ok(p) => Some(p),
                Err(why) => {
                    notes.unavailable("pressure", why);
                    None
                }
            };
        }
        s
    }
}

fn read_net(root: &Path, notes: &mut Notes) -> Option<NetCounters> {
    let mut snmp = required(
        root,
        "net/snmp",
        |t| net::parse_snmp("/proc/net/snmp", t),
        notes,
    )?;
    if let Some(ext) = required(
        root,
        "net/netstat",
        |t| net::parse_snmp("/proc/net/netstat", t),
        notes,
    ) {
        snmp.extend(ext);
    }
    Some(NetCounters {
        snmp,
        softnet: required(root, "net/softnet_stat", net::parse_softnet, notes),
        ifaces: required(root, "net/dev", net::parse_net_dev, notes).unwrap_or_default(),
    })
}

fn read_sockets(root: &Path, notes: &mut Notes) -> Option<SocketCounts> {
    // The live system: one netlink dump instead of two walks of the TCP hash table.
    if root == Path::new("/proc") {
        match sock_diag::dump_tcp() {
            Ok(all) => return Some(count_and_attribute(root, &all)),
            Err(e) => notes.warn(
                "sock_diag",
                format!("sock_diag netlink dump failed ({e}); reading /proc/net/tcp instead"),
            ),
        }
    }
    let v4 = required(
        root,
        "net/tcp",
        |t| sockets::parse_tcp("/proc/net/tcp", t),
        notes,
    )?;
    // No tcp6 when IPv6 is disabled.
    let v6 = optional(
        root,
        "net/tcp6",
        Probe::Sockets,
        |t| sockets::parse_tcp("/proc/net/tcp6", t),
        notes,
    );
    let mut all = v4;
    all.extend(v6.unwrap_or_default());
    Some(count_and_attribute(root, &all))
}

fn count_and_attribute(root: &Path, all: &[sockets::TcpSocket]) -> SocketCounts {
    let (mut counts, close_wait) = sockets::count_states(all);
    if !close_wait.is_empty() {
        sockets::attribute(&mut counts, &close_wait, socket_fds(root));
    }
    counts
}

/// Numeric entries of a directory (pids, tids, fds).
fn numeric_entries(dir: &Path) -> Vec<i32> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

/// (pid, socket inode) for every socket fd of every process whose fds can be read.
fn socket_fds(root: &Path) -> Vec<(i32, u64)> {
    let mut out = Vec::new();
    for pid in numeric_entries(root) {
        let dir = root.join(pid.to_string()).join("fd");
        let Ok(rd) = fs::read_dir(&dir) else { continue };
        for e in rd.flatten() {
            if let Ok(target) = fs::read_link(e.path()) {
                if let Some(inode) = target.to_str().and_then(sockets::socket_inode) {
                    out.push((pid, inode));
                }
            }
        }
    }
    out
}

fn pid_dir(root: &Path, pid: i32) -> PathBuf {
    root.join(pid.to_string())
}

/// Children of `pid` from /proc/PID/task/*/children; `None` when the kernel lacks those
/// files (CONFIG_PROC_CHILDREN off).
fn children(root: &Path, pid: i32) -> Option<Vec<i32>> {
    let tasks = pid_dir(root, pid).join("task");
    let mut out = Vec::new();
    let mut any = false;
    for tid in numeric_entries(&tasks) {
        if let Ok(t) = fs::read_to_string(tasks.join(tid.to_string()).join("children")) {
            any = true;
            out.extend(
                t.split_ascii_whitespace()
                    .filter_map(|s| s.parse::<i32>().ok()),
            );
        }
    }
    any.then_some(out)
}

/// The tree under `pid`, root first. Processes that exit while being read are skipped.
fn read_tree(root: &Path, pid: i32) -> Vec<ProcSnapshot> {
    let stat = |p: i32| {
        fs::read_to_string(pid_dir(root, p).join("stat"))
            .ok()
            .and_then(|t| process::parse_pid_stat(&t).ok())
    };
    let Some(first) = stat(pid) else {
        return Vec::new();
    };
    let mut stats = vec![first];
    if children(root, pid).is_some() {
        let mut i = 0;
        while i < stats.len() {
            for c in children(root, stats[i].pid).unwrap_or_default() {
                if !stats.iter().any(|s| s.pid == c) {
                    if let Some(s) = stat(c) {
                        stats.push(s);
                    }
                }
            }
            i += 1;
        }
    } else {
        let all: Vec<_> = numeric_entries(root).into_iter().filter_map(stat).collect();
        let pairs: Vec<(i32, i32)> = all.iter().map(|s| (s.pid, s.ppid)).collect();
        let tree = process::descendants(pid, &pairs);
        stats = tree
            .iter()
            .filter_map(|p| all.iter().find(|s| s.pid == *p).cloned())
            .collect();
    }
    stats.into_iter().map(|s| proc_snapshot(root, s)).collect()
}

fn proc_snapshot(root: &Path, s: process::PidStat) -> ProcSnapshot {
    let dir = pid_dir(root, s.pid);
    let status = |p: &Path| {
        fs::read_to_string(p)
            .ok()
            .and_then(|t| process::parse_pid_status(&t).ok())
    };
    let main = status(&dir.join("status")).unwrap_or_default();
    let (mut vol, mut invol) = (
        main.voluntary_ctxt_switches,
        main.nonvoluntary_ctxt_switches,
    );
    if s.num_threads > 1 {
        // /proc/PID/status counts the main thread only: add up all threads.
        let tasks = dir.join("task");
        let per_thread: Vec<_> = numeric_entries(&tasks)
            .into_iter()
            .filter_map(|t| status(&tasks.join(t.to_string()).join("status")))
            .collect();
        if !per_thread.is_empty() {
            vol = per_thread.iter().map(|t| t.voluntary_ctxt_switches).sum();
            invol = per_thread
                .iter()
                .map(|t| t.nonvoluntary_ctxt_switches)
                .sum();
        }
    }
    let fds = fs::read_dir(dir.join("fd"))
        .ok()
        .map(|rd| rd.count() as u64);
    ProcSnapshot {
        pid: s.pid,
        ppid: s.ppid,
        starttime: s.starttime,
        utime: s.utime,
        stime: s.stime,
        cutime: s.cutime,
        cstime: s.cstime,
        threads: s.num_threads,
        rss_kb: main.vm_rss_kb,
        fds,
        vol_ctxt: vol,
        invol_ctxt: invol,
        run_wait_ns: crate::rundelay::read_process(root, s.pid).map_or(0, |d| d.wait_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_psi_is_not_available_not_a_warning() {
        let root = std::env::temp_dir().join(format!("perflab-nopsi-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let mut notes = Notes::default();
        let spec = ReadSpec {
            root: &root,
            probes: &[Probe::Pressure],
            pid: None,
        };
        let s = Snapshot::read(&spec, 0.0, &mut notes);
        let _ = std::fs::remove_dir_all(&root);
        assert!(s.pressure.is_none());
        assert!(notes.warnings.is_empty(), "{:?}", notes.warnings);
        assert_eq!(notes.unavailable.len(), 1, "{:?}", notes.unavailable);
        assert!(
            notes.unavailable[0].contains("pressure"),
            "{:?}",
            notes.unavailable
        );
    }
}
