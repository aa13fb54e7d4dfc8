//! One [`Observation`]: everything the doctor's rules look at, read at one instant.
//!
//! This and [`super::diag`] are the only parts of the doctor that touch the system. All
//! files are read relative to a /proc root and a /sys root ([`Source`]), so a fixture
//! directory laid out like them drives exactly the code the live system does; only the
//! live /proc gets its TCP sockets from netlink (which knows each listener's backlog),
//! a fixture from its `net/tcp` and `net/tcp6` text (which does not).
//!
//! What is absent stays absent (`None`, or missing from a map) and the rule that needs
//! it says so: a container without /proc/sys/fs/nr_open, a VM without cpufreq, a host
//! without NFS. Nothing absent is read as 0.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::diag::{self, DiagSocket, TCP_CLOSE_WAIT, TCP_LISTEN};
use crate::probe::Probe;
use crate::snapshot::{read_proc, Notes, ReadSpec, Snapshot};

/// The sysctls the rules read (/proc/sys/NAME with dots as slashes).
pub const SYSCTLS: &[&str] = &[
    "fs.file-max",
    "fs.file-nr",
    "fs.nr_open",
    "net.core.somaxconn",
    "net.core.netdev_max_backlog",
    "net.core.netdev_budget",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ipfrag_high_thresh",
    "net.ipv4.ipfrag_low_thresh",
    "net.ipv4.ipfrag_time",
    "vm.swappiness",
];

/// The telemetry probes an observation reads.
const PROBES: &[Probe] = &[
    Probe::Cpu,
    Probe::Sched,
    Probe::Memory,
    Probe::Disk,
    Probe::Net,
    Probe::Nfs,
];

/// Where to read from, and the process under examination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub proc_root: PathBuf,
    pub sys_root: PathBuf,
    /// `--pid`: its limits and open fds are read too.
    pub pid: Option<i32>,
}

impl Source {
    /// The running system: /proc and /sys.
    pub fn live(pid: Option<i32>) -> Source {
        Source {
            proc_root: PathBuf::from("/proc"),
            sys_root: PathBuf::from("/sys"),
            pid,
        }
    }

    /// A fixture directory holding `proc/` and `sys/`.
    pub fn fixture(dir: &Path, pid: Option<i32>) -> Source {
        Source {
            proc_root: dir.join("proc"),
            sys_root: dir.join("sys"),
            pid,
        }
    }

    fn is_live(&self) -> bool {
        self.proc_root == Path::new("/proc")
    }
}

/// A listening TCP socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub port: u16,
    pub inode: u64,
    /// Connections waiting for accept() when read.
    pub queue: u64,
    /// The longest queue seen during the watch (see [`TcpTable::absorb`]).
    pub peak_queue: u64,
    /// The backlog: listen()'s argument capped at net.core.somaxconn. `None` when read
    /// from /proc/net/tcp.
    pub backlog: Option<u64>,
    /// Processes holding it (several after fork, or none found).
    pub pids: Vec<i32>,
}

impl Listener {
    /// The accept queue was full at some read (its length reached the backlog; the
    /// kernel admits one more, then drops the next handshakes). An empty queue is never
    /// full, even with `listen(fd, 0)`.
    pub fn was_full(&self) -> bool {
        self.peak_queue > 0 && self.backlog.is_some_and(|b| self.peak_queue >= b)
    }
}

/// A socket whose peer closed and whose owner has not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseWaitSocket {
    pub port: u16,
    pub inode: u64,
    pub pids: Vec<i32>,
}

/// The TCP sockets the rules need.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpTable {
    pub listeners: Vec<Listener>,
    pub close_wait: Vec<CloseWaitSocket>,
    /// Processes whose fd directory could not be read (other users' without root):
    /// their sockets have no owner here.
    pub unreadable_fd_dirs: u64,
}

impl TcpTable {
    /// Folds a later read of the sockets into the listeners' peak queues, so a queue
    /// that filled between the two observations is still seen.
    pub fn absorb(&mut self, rows: &[DiagSocket]) {
        for r in rows.iter().filter(|r| r.state == TCP_LISTEN) {
            if let Some(l) = self.listeners.iter_mut().find(|l| l.inode == r.inode) {
                l.peak_queue = l.peak_queue.max(r.rqueue);
            }
        }
    }

    /// CLOSE_WAIT sockets per owning pid; unattributed ones under pid 0.
    pub fn close_wait_by_pid(&self) -> BTreeMap<i32, Vec<u64>> {
        let mut m: BTreeMap<i32, Vec<u64>> = BTreeMap::new();
        for s in &self.close_wait {
            if s.pids.is_empty() {
                m.entry(0).or_default().push(s.inode);
            }
            for p in &s.pids {
                m.entry(*p).or_default().push(s.inode);
            }
        }
        m
    }
}

/// What the doctor knows about one process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcInfo {
    /// /proc/PID/comm.
    pub comm: String,
    /// RLIMIT_NOFILE (soft, hard) from /proc/PID/limits; `u64::MAX` = unlimited.
    pub nofile: Option<(u64, u64)>,
    /// Open file descriptors (`None`: /proc/PID/fd not readable).
    pub fds: Option<u64>,
}

/// One CPU's frequency scaling setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuFreq {
    pub cpu: u32,
    pub governor: String,
    /// `intel_pstate`, `acpi-cpufreq`, ... (empty when not readable).
    pub driver: String,
}

/// Everything read at one instant.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// The telemetry snapshot (cpu, sched, memory, disk, net, nfs); `at` in seconds.
    pub snap: Snapshot,
    /// Sysctl values by dotted name, as the file holds them (trimmed).
    pub sysctl: BTreeMap<String, String>,
    /// `None` when neither netlink nor /proc/net/tcp could be read.
    pub sockets: Option<TcpTable>,
    /// The `--pid` target and every owner of a listener or CLOSE_WAIT socket.
    pub procs: BTreeMap<i32, ProcInfo>,
    /// Per CPU; empty without cpufreq (most VMs and containers).
    pub cpufreq: Vec<CpuFreq>,
}

impl Observation {
    /// Reads everything at clock reading `at`; problems go to `notes`.
    pub fn read(src: &Source, at: f64, notes: &mut Notes) -> Observation {
        let spec = ReadSpec {
            root: &src.proc_root,
            probes: PROBES,
            pid: None,
        };
        let snap = Snapshot::read(&spec, at, notes);
        let mut o = Observation {
            snap,
            sysctl: read_sysctls(&src.proc_root, notes),
            cpufreq: read_cpufreq(&src.sys_root),
            ..Observation::default()
        };
        let mut owners: BTreeSet<i32> = src.pid.into_iter().collect();
        match read_sockets(src, notes) {
            Some(rows) => {
                let t = attribute(&src.proc_root, &rows);
                for l in &t.listeners {
                    owners.extend(&l.pids);
                }
                for c in &t.close_wait {
                    owners.extend(&c.pids);
                }
                o.sockets = Some(t);
            }
            None => o.sockets = None,
        }
        for pid in owners {
            if let Some(p) = read_proc_info(&src.proc_root, pid) {
                o.procs.insert(pid, p);
            }
        }
        o
    }

    /// A sysctl as a number.
    pub fn sysctl_u64(&self, name: &str) -> Option<u64> {
        self.sysctl.get(name)?.parse().ok()
    }

    /// A sysctl holding several numbers (`ip_local_port_range`, `file-nr`).
    pub fn sysctl_nums(&self, name: &str) -> Option<Vec<u64>> {
        self.sysctl
            .get(name)?
            .split_ascii_whitespace()
            .map(|s| s.parse().ok())
            .collect()
    }

    /// Online CPUs (the `cpuN` lines of /proc/stat).
    pub fn cpus(&self) -> Option<usize> {
        self.snap
            .stat
            .as_ref()
            .map(|s| s.per_cpu.len())
            .filter(|n| *n > 0)
    }

    /// `pid (comm)` or `pid` when the name is unknown.
    pub fn who(&self, pid: i32) -> String {
        match self.procs.get(&pid) {
            Some(p) if !p.comm.is_empty() => format!("pid {pid} ({})", p.comm),
            _ => format!("pid {pid}"),
        }
    }

    /// The program name of `pid`, if known.
    pub fn comm(&self, pid: i32) -> Option<String> {
        self.procs
            .get(&pid)
            .map(|p| p.comm.clone())
            .filter(|c| !c.is_empty())
    }
}

/// Reads every sysctl of [`SYSCTLS`] that exists.
fn read_sysctls(proc_root: &Path, notes: &mut Notes) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for name in SYSCTLS {
        let path = proc_root.join("sys").join(name.replace('.', "/"));
        match read_proc(&path) {
            Ok(t) => {
                m.insert(name.to_string(), t.trim().to_string());
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => notes
                .warnings
                .push(format!("cannot read {}: {e}", path.display())),
        }
    }
    m
}

fn numeric_entries(dir: &Path) -> Vec<i32> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<i32> = rd
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .collect();
    v.sort_unstable();
    v
}

fn read_cpufreq(sys_root: &Path) -> Vec<CpuFreq> {
    let base = sys_root.join("devices/system/cpu");
    let Ok(rd) = fs::read_dir(&base) else {
        return Vec::new();
    };
    let mut out: Vec<CpuFreq> = rd
        .filter_map(|e| {
            let name = e.ok()?.file_name();
            let cpu = name.to_str()?.strip_prefix("cpu")?.parse::<u32>().ok()?;
            let dir = base.join(name).join("cpufreq");
            let governor = fs::read_to_string(dir.join("scaling_governor")).ok()?;
            let driver = fs::read_to_string(dir.join("scaling_driver")).unwrap_or_default();
            Some(CpuFreq {
                cpu,
                governor: governor.trim().to_string(),
                driver: driver.trim().to_string(),
            })
        })
        .collect();
    out.sort_by_key(|c| c.cpu);
    out
}

/// LISTEN and CLOSE_WAIT sockets: netlink on the live system, else the text tables.
fn read_sockets(src: &Source, notes: &mut Notes) -> Option<Vec<DiagSocket>> {
    if src.is_live() {
        match diag::dump() {
            Ok(v) => return Some(v),
            Err(e) => notes.warnings.push(format!(
                "sock_diag netlink dump failed ({e}); reading /proc/net/tcp instead (no listener backlogs)"
            )),
        }
    }
    let mut all = Vec::new();
    let mut any = false;
    for f in ["net/tcp", "net/tcp6"] {
        let path = src.proc_root.join(f);
        match read_proc(&path) {
            Ok(t) => match diag::parse_proc_tcp(&format!("/proc/{f}"), &t) {
                Ok(v) => {
                    any = true;
                    all.extend(v);
                }
                Err(e) => notes.warnings.push(format!("cannot parse /proc/{f}: {e}")),
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => notes.warnings.push(format!("cannot read /proc/{f}: {e}")),
        }
    }
    any.then_some(all)
}

/// Finds the owners of the sockets in /proc/*/fd and builds the table.
fn attribute(proc_root: &Path, rows: &[DiagSocket]) -> TcpTable {
    let wanted: BTreeSet<u64> = rows.iter().map(|r| r.inode).filter(|i| *i != 0).collect();
    let mut owners: HashMap<u64, Vec<i32>> = HashMap::new();
    let mut unreadable = 0;
    if !wanted.is_empty() {
        for pid in numeric_entries(proc_root) {
            let Ok(rd) = fs::read_dir(proc_root.join(pid.to_string()).join("fd")) else {
                unreadable += 1;
                continue;
            };
            for e in rd.flatten() {
                let Ok(target) = fs::read_link(e.path()) else {
                    continue;
                };
                let Some(inode) = target.to_str().and_then(crate::sockets::socket_inode) else {
                    continue;
                };
                if wanted.contains(&inode) {
                    let v = owners.entry(inode).or_default();
                    if !v.contains(&pid) {
                        v.push(pid);
                    }
                }
            }
        }
    }
    let pids = |inode: u64| owners.get(&inode).cloned().unwrap_or_default();
    let mut t = TcpTable {
        unreadable_fd_dirs: unreadable,
        ..TcpTable::default()
    };
    for r in rows {
        match r.state {
            TCP_LISTEN => t.listeners.push(Listener {
                port: r.local_port,
                inode: r.inode,
                queue: r.rqueue,
                peak_queue: r.rqueue,
                backlog: r.wqueue,
                pids: pids(r.inode),
            }),
            TCP_CLOSE_WAIT => t.close_wait.push(CloseWaitSocket {
                port: r.local_port,
                inode: r.inode,
                pids: pids(r.inode),
            }),
            _ => {}
        }
    }
    t
}

/// `Max open files  1024  524288  files` of /proc/PID/limits.
pub fn parse_nofile(limits: &str) -> Option<(u64, u64)> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let mut it = line["Max open files".len()..].split_ascii_whitespace();
    let lim = |s: &str| {
        if s == "unlimited" {
            Some(u64::MAX)
        } else {
            s.parse().ok()
        }
    };
    Some((lim(it.next()?)?, lim(it.next()?)?))
}

fn read_proc_info(proc_root: &Path, pid: i32) -> Option<ProcInfo> {
    let dir = proc_root.join(pid.to_string());
    if !dir.exists() {
        return None;
    }
    let comm = fs::read_to_string(dir.join("comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let nofile = fs::read_to_string(dir.join("limits"))
        .ok()
        .and_then(|t| parse_nofile(&t));
    let fds = fs::read_dir(dir.join("fd"))
        .ok()
        .map(|rd| rd.count() as u64);
    Some(ProcInfo { comm, nofile, fds })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nofile_from_limits() {
        let t = "Limit                     Soft Limit           Hard Limit           Units     \n\
Max cpu time              unlimited            unlimited            seconds   \n\
Max open files            1024                 524288               files     \n";
        assert_eq!(parse_nofile(t), Some((1024, 524288)));
        let u = "Max open files            unlimited            unlimited            files\n";
        assert_eq!(parse_nofile(u), Some((u64::MAX, u64::MAX)));
        assert_eq!(parse_nofile("Max processes 1 2\n"), None);
    }

    #[test]
    fn absorb_keeps_the_peak() {
        let mut t = TcpTable {
            listeners: vec![Listener {
                port: 80,
                inode: 5,
                queue: 1,
                peak_queue: 1,
                backlog: Some(4),
                pids: vec![],
            }],
            ..TcpTable::default()
        };
        let row = |q| DiagSocket {
            state: TCP_LISTEN,
            local_port: 80,
            inode: 5,
            rqueue: q,
            wqueue: Some(4),
        };
        t.absorb(&[row(4)]);
        t.absorb(&[row(2)]);
        assert_eq!(t.listeners[0].peak_queue, 4);
        assert!(t.listeners[0].was_full());
    }
}
