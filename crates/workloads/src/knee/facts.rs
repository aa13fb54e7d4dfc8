//! The facts of one find-max step: what the host's counters did between the step's
//! start and its end, beside the generator's own figures. Two [`Reading`]s (one before,
//! one after) become one [`StepFacts`] ([`StepFacts::between`]); the classifier
//! ([`super::classify`]) is a pure function of that record, so every rule can be
//! tested from recorded counters.
//!
//! What is read, and where from (all relative to one /proc root):
//! - `/proc/stat` per CPU: the CPU with the highest softirq share, and how busy it was;
//! - `/proc/pressure/{cpu,memory,io}`: stall shares from the `total` counters
//!   (absent on a kernel without PSI: the facts say so, nothing fails);
//! - `/proc/net/netstat` ListenOverflows / ListenDrops and `/proc/net/snmp` RetransSegs
//!   / OutSegs: per network namespace, the namespace this process runs in — the
//!   target's when it is local;
//! - `/proc/diskstats`: the busiest disk's utilisation and await (as `iostat -x`);
//! - `/proc/vmstat`: pages swapped in and out;
//! - the service: every process that holds the listening socket of the target's
//!   port (found through `/proc/net/tcp{,6}` inode → `/proc/*/fd`: a service's worker
//!   processes hold it too), each thread's run delay (`/proc/PID/task/*/schedstat`) and
//!   the union of their `Cpus_allowed_list`, and a CPU quota on their cgroup with its
//!   throttling over the step (`perflab_telemetry::cgroup_cpu`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use perflab_telemetry::cgroup_cpu::{self, Throttling};
use perflab_telemetry::pressure::{self, PressureSet};
use perflab_telemetry::rundelay::{self, RunDelay};
use perflab_telemetry::snapshot::{ReadSpec, Snapshot};
use perflab_telemetry::{cpu, disk, sockets, DiskFilter, Notes, Probe};
use serde::{Deserialize, Serialize};

/// What the generator says about itself over the step (the load report's step).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorFacts {
    /// Mean share of wall time its worker threads were on a CPU.
    pub busy: f64,
    /// Mean share of wall time they were runnable but waited for a CPU.
    pub wait: f64,
    /// Requests written more than `LATE_AFTER` after their intended time.
    pub late: u64,
}

/// The service's processes over the step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServiceFacts {
    /// The processes holding the listening socket.
    pub pids: Vec<i32>,
    /// CPUs they may run on (the union of their `Cpus_allowed_list`).
    pub allowed_cpus: usize,
    /// CPUs' worth of time on a CPU (on-CPU seconds / wall seconds).
    pub on_cpu: f64,
    /// CPUs' worth of time runnable but waiting for one.
    pub wait: f64,
    /// The busiest thread's share of wall time on a CPU or waiting for one.
    pub busiest_thread: f64,
    /// A CPU bandwidth limit on their cgroup (a container's `--cpus`, systemd's
    /// `CPUQuota=`), CPUs' worth; None when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_quota: Option<f64>,
    /// Of the cgroup's enforcement periods during the step, how many ran out of quota
    /// (throttled, periods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_periods: Option<(u64, u64)>,
}

/// Stall shares of the step's wall time, from the PSI `total` counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiShares {
    pub cpu_some: f64,
    pub memory_some: f64,
    pub memory_full: f64,
    pub io_some: f64,
    pub io_full: f64,
}

/// The CPU with the highest softirq share over the step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SoftirqCpu {
    pub cpu: u32,
    /// Share of that CPU's time in softirq.
    pub softirq: f64,
    /// Share of that CPU's time not idle (nor iowait).
    pub busy: f64,
}

/// The busiest disk over the step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskFacts {
    pub name: String,
    /// Share of the step with I/O in flight (`iostat -x` %util / 100).
    pub util: f64,
    /// Mean time per request, ms.
    pub await_ms: f64,
}

/// Everything recorded about one step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepFacts {
    /// The step's offered rate, req/s.
    pub rate: f64,
    /// What it achieved, req/s.
    pub achieved: f64,
    pub requests: u64,
    /// Wall time between the two readings, s.
    pub wall_s: f64,
    pub passed: Option<bool>,
    pub generator: GeneratorFacts,
    /// The target's port.
    pub port: Option<u16>,
    /// Something on this host (this network namespace) listens on the port: the
    /// host-wide figures (PSI, disk, memory, listen queue) are the target's.
    pub local: bool,
    pub service: Option<ServiceFacts>,
    /// None: no PSI here (`pressure_unavailable` says why).
    pub pressure: Option<PsiShares>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressure_unavailable: Option<String>,
    pub softirq: Option<SoftirqCpu>,
    pub listen_overflows: Option<u64>,
    pub listen_drops: Option<u64>,
    pub retrans_segs: Option<u64>,
    pub out_segs: Option<u64>,
    pub disk: Option<DiskFacts>,
    pub swap_in: Option<u64>,
    pub swap_out: Option<u64>,
}

/// One reading of the host, at one instant.
#[derive(Debug, Clone)]
pub struct Reading {
    at: Instant,
    host: Snapshot,
    pressure: Result<PressureSet, String>,
    /// (pid, tid) → figures, for the service's threads.
    threads: BTreeMap<(i32, i32), RunDelay>,
    /// pid → its CPU cgroup's throttling counters, for the service's processes.
    throttling: BTreeMap<i32, Throttling>,
}

/// The host probes a reading takes (the files of `cpu`, `memory`, `disk`, `net`).
const PROBES: [Probe; 4] = [Probe::Cpu, Probe::Memory, Probe::Disk, Probe::Net];

impl Reading {
    /// Reads everything now; `pids`: the service's processes.
    pub fn take(root: &Path, pids: &[i32]) -> Reading {
        let mut notes = Notes::default();
        let spec = ReadSpec {
            root,
            probes: &PROBES,
            pid: None,
        };
        let host = Snapshot::read(&spec, 0.0, &mut notes);
        let mut threads = BTreeMap::new();
        let mut throttling = BTreeMap::new();
        for &pid in pids {
            for (tid, d) in rundelay::read_threads(root, pid) {
                threads.insert((pid, tid), d);
            }
            if let Some(t) = cgroup_cpu::read_throttling(root, pid) {
                throttling.insert(pid, t);
            }
        }
        Reading {
            at: Instant::now(),
            host,
            pressure: pressure::read_pressure(root),
            threads,
            throttling,
        }
    }
}

/// The processes holding a listening TCP socket on `port` in this network namespace,
/// and whether there is one at all (a local target).
pub fn listening_owners(root: &Path, port: u16) -> (bool, Vec<i32>) {
    let mut inodes = Vec::new();
    for file in ["net/tcp", "net/tcp6"] {
        let Ok(text) = perflab_telemetry::snapshot::read_proc(&root.join(file)) else {
            continue;
        };
        let Ok(all) = sockets::parse_tcp(file, &text) else {
            continue;
        };
        // State 10 is LISTEN.
        inodes.extend(
            all.iter()
                .filter(|s| s.state == 10 && s.local_port == port)
                .map(|s| s.inode),
        );
    }
    if inodes.is_empty() {
        return (false, Vec::new());
    }
    let mut pids = Vec::new();
    let me = std::process::id() as i32;
    let Ok(rd) = std::fs::read_dir(root) else {
        return (true, pids);
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(e.path().join("fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .ok()
                .and_then(|t| t.to_str().and_then(sockets::socket_inode))
                .is_some_and(|i| inodes.contains(&i))
        });
        if holds {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    (true, pids)
}

impl StepFacts {
    /// The facts of the step `step` between two readings. `root`: where the allowed
    /// CPUs of `pids` are read.
    pub fn between(
        before: &Reading,
        after: &Reading,
        step: &perflab_load::Step,
        target: (Option<u16>, bool, &[i32]),
        root: &Path,
    ) -> StepFacts {
        let (port, local, pids) = target;
        let wall_s = after.at.duration_since(before.at).as_secs_f64();
        let (b, a) = (&before.host, &after.host);
        let counter = |name: &str| -> Option<u64> {
            let x = b.net.as_ref()?.snmp.get(name)?;
            let y = a.net.as_ref()?.snmp.get(name)?;
            Some(y.saturating_sub(*x))
        };
        let swap = |f: fn(&perflab_telemetry::memory::VmCounters) -> u64| {
            Some(f(a.vmstat.as_ref()?).saturating_sub(f(b.vmstat.as_ref()?)))
        };
        let (pressure, pressure_unavailable) = match (&before.pressure, &after.pressure) {
            (Ok(x), Ok(y)) => (Some(psi_shares(x, y, wall_s)), None),
            (Err(why), _) | (_, Err(why)) => (None, Some(why.clone())),
        };
        StepFacts {
            rate: step.target,
            achieved: step.rps,
            requests: step.requests,
            wall_s,
            passed: step.passed,
            generator: GeneratorFacts {
                busy: step.client_busy,
                wait: step.client_wait,
                late: step.late,
            },
            port,
            local,
            service: (!pids.is_empty()).then(|| service(before, after, pids, wall_s, root)),
            pressure,
            pressure_unavailable,
            softirq: busiest_softirq(b, a),
            listen_overflows: counter("TcpExt.ListenOverflows"),
            listen_drops: counter("TcpExt.ListenDrops"),
            retrans_segs: counter("Tcp.RetransSegs"),
            out_segs: counter("Tcp.OutSegs"),
            disk: busiest_disk(b, a, wall_s),
            swap_in: swap(|v| v.pswpin),
            swap_out: swap(|v| v.pswpout),
        }
    }
}

fn psi_shares(b: &PressureSet, a: &PressureSet, secs: f64) -> PsiShares {
    let full = |x: &pressure::Pressure, y: &pressure::Pressure| match (x.full, y.full) {
        (Some(p), Some(q)) => pressure::stall_share(&p, &q, secs),
        _ => 0.0,
    };
    PsiShares {
        cpu_some: pressure::stall_share(&b.cpu.some, &a.cpu.some, secs),
        memory_some: pressure::stall_share(&b.memory.some, &a.memory.some, secs),
        memory_full: full(&b.memory, &a.memory),
        io_some: pressure::stall_share(&b.io.some, &a.io.some, secs),
        io_full: full(&b.io, &a.io),
    }
}

fn service(
    before: &Reading,
    after: &Reading,
    pids: &[i32],
    secs: f64,
    root: &Path,
) -> ServiceFacts {
    let mut sum = RunDelay::default();
    let mut busiest = 0u64;
    for (key, now) in &after.threads {
        // A thread born during the step did all it did inside it.
        let d = now.since(&before.threads.get(key).copied().unwrap_or_default());
        sum.add(&d);
        busiest = busiest.max(d.on_cpu_ns + d.wait_ns);
    }
    let mut allowed: Vec<u32> = pids
        .iter()
        .filter_map(|p| rundelay::read_allowed_cpus(root, *p))
        .flatten()
        .collect();
    allowed.sort_unstable();
    allowed.dedup();
    let per_s = |ns: u64| {
        if secs > 0.0 {
            ns as f64 / 1e9 / secs
        } else {
            0.0
        }
    };
    // The service's quota: the first of its processes that has one (workers share
    // their parent's cgroup), and that process's throttling over the step.
    let quota = pids
        .iter()
        .find_map(|&p| cgroup_cpu::read_quota(root, p).map(|q| (p, q)));
    let throttled_periods = quota.as_ref().and_then(|(p, _)| {
        let d = after.throttling.get(p)?.since(before.throttling.get(p)?);
        Some((d.throttled, d.periods))
    });
    ServiceFacts {
        pids: pids.to_vec(),
        allowed_cpus: allowed.len(),
        on_cpu: per_s(sum.on_cpu_ns),
        wait: per_s(sum.wait_ns),
        busiest_thread: per_s(busiest),
        cpu_quota: quota.map(|(_, q)| q.cpus),
        throttled_periods,
    }
}

fn busiest_softirq(b: &Snapshot, a: &Snapshot) -> Option<SoftirqCpu> {
    let (b, a) = (b.stat.as_ref()?, a.stat.as_ref()?);
    a.per_cpu
        .iter()
        .filter_map(|(n, cur)| {
            let (_, prev) = b.per_cpu.iter().find(|(m, _)| m == n)?;
            let p = cpu::cpu_pct(prev, cur);
            Some(SoftirqCpu {
                cpu: *n,
                softirq: p.softirq / 100.0,
                busy: (100.0 - p.idle - p.iowait).max(0.0) / 100.0,
            })
        })
        .max_by(|x, y| x.softirq.total_cmp(&y.softirq))
}

fn busiest_disk(b: &Snapshot, a: &Snapshot, secs: f64) -> Option<DiskFacts> {
    let (b, a) = (b.disks.as_ref()?, a.disks.as_ref()?);
    DiskFilter::default()
        .select(a)
        .into_iter()
        .filter_map(|cur| {
            let prev = b.iter().find(|d| d.name == cur.name)?;
            let r = disk::iostat(prev, cur, secs);
            Some(DiskFacts {
                name: cur.name.clone(),
                util: (r.util / 100.0).clamp(0.0, 1.0),
                await_ms: r.r#await,
            })
        })
        .max_by(|x, y| x.util.total_cmp(&y.util))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_between_two_readings_of_this_host() {
        let root = Path::new("/proc");
        let me = std::process::id() as i32;
        let before = Reading::take(root, &[me]);
        // Burn 50 ms of CPU (not of wall time: the host may be busy), at most 10 s.
        let on_cpu = || rundelay::read_process(root, me).map_or(0, |d| d.on_cpu_ns);
        let (start, t) = (on_cpu(), Instant::now());
        let mut x = 0u64;
        while on_cpu() < start + 50_000_000 && t.elapsed() < std::time::Duration::from_secs(10) {
            for _ in 0..10_000 {
                x = x.wrapping_mul(31).wrapping_add(7);
            }
        }
        std::hint::black_box(x);
        let after = Reading::take(root, &[me]);
        let step = perflab_load::Step {
            target: 100.0,
            rps: 99.0,
            latency_ms: Default::default(),
            error_rate: 0.0,
            requests: 5,
            duration_s: 0.05,
            passed: Some(false),
            client_busy: 0.5,
            client_wait: 0.1,
            late: 3,
            repetition: None,
            retest: false,
        };
        let f = StepFacts::between(&before, &after, &step, (Some(1), false, &[me]), root);
        assert_eq!((f.rate, f.generator.late), (100.0, 3));
        let s = f.service.expect("this process read as the service");
        assert!(s.on_cpu * f.wall_s >= 0.045, "{s:?} over {} s", f.wall_s);
        assert!(s.allowed_cpus >= 1);
        assert!(f.softirq.is_some() && f.retrans_segs.is_some());
        assert!(f.pressure.is_some() || f.pressure_unavailable.is_some());
    }

    #[test]
    fn nobody_listens_on_an_unused_port() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        // This process holds it, and is never its own service.
        let (local, pids) = listening_owners(Path::new("/proc"), port);
        assert!(local);
        assert!(pids.is_empty(), "{pids:?}");
        drop(l);
        assert_eq!(listening_owners(Path::new("/proc"), port), (false, vec![]));
    }
}
