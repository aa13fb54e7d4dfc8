//! Host counters over the watch: NFS client retransmits and nfsd pool saturation
//! (docs/studies.md §7), softirq-bound CPUs and the accept thundering herd (§5), a saturated
//! disk, active swapping.
//!
//! Rates come from [`crate::Sample::between`], so every figure here is the one
//! `perflab top` and the experiment monitor show for the same interval (iostat's
//! %util and await for disks, mpstat's per-CPU softirq share).

use super::{
    pct, per_s, thousands, Checked, Context, Finding, Observation, Rule, RuleKind, Severity,
};
use crate::counter::delta;
use crate::disk::DiskFilter;
use crate::sample::Sample;

/// NFS client: retransmitted share of RPC calls, warning / critical, percent.
pub const NFS_RETRANS_WARN_PCT: f64 = 3.0;
pub const NFS_RETRANS_CRITICAL_PCT: f64 = 10.0;
/// Fewer calls (or packets) than this over the watch make no percentage.
pub const NFS_MIN_CALLS: u64 = 20;
/// nfsd: share of arriving requests that found every thread busy, percent.
pub const NFSD_ENQUEUED_WARN_PCT: f64 = 10.0;
/// One CPU's softirq share, warning / critical, percent.
pub const SOFTIRQ_WARN_PCT: f64 = 50.0;
pub const SOFTIRQ_CRITICAL_PCT: f64 = 90.0;
/// Thundering herd: runnable tasks per core and context switches per second per core.
pub const HERD_RUNNABLE_PER_CORE: f64 = 2.0;
pub const HERD_CS_PER_CORE: f64 = 10_000.0;
/// A saturated disk: %util, and await (ms) for a warning / critical.
pub const DISK_UTIL_PCT: f64 = 99.0;
pub const DISK_AWAIT_MS: f64 = 20.0;
pub const DISK_AWAIT_CRITICAL_MS: f64 = 200.0;
/// Pages swapped in or out per second that is active swapping.
pub const SWAP_PAGES_PER_S: f64 = 10.0;

pub const NFS_RETRANS: Rule = Rule {
    id: "nfs-retrans",
    kind: RuleKind::Sampled,
    summary: "NFS client retransmits > 3 % of RPC calls (warn), > 10 % (critical), over ≥ 20 calls",
    check: nfs_retrans,
};

pub const NFSD_THREADS: Rule = Rule {
    id: "nfsd-threads",
    kind: RuleKind::Sampled,
    summary: "≥ 10 % of requests arriving at nfsd found every thread busy (warn)",
    check: nfsd_threads,
};

pub const SOFTIRQ_CPU: Rule = Rule {
    id: "softirq-cpu",
    kind: RuleKind::Sampled,
    summary: "a CPU ≥ 50 % in softirq (warn), ≥ 90 % (critical)",
    check: softirq_cpu,
};

pub const THUNDERING_HERD: Rule = Rule {
    id: "thundering-herd",
    kind: RuleKind::Sampled,
    summary: "run queue > 2× cores with > 10,000 context switches/s per core (warn)",
    check: thundering_herd,
};

pub const DISK_SATURATED: Rule = Rule {
    id: "disk-saturated",
    kind: RuleKind::Sampled,
    summary: "a disk ≥ 99 % util with await ≥ 20 ms (warn), ≥ 200 ms (critical)",
    check: disk_saturated,
};

pub const SWAPPING: Rule = Rule {
    id: "swapping",
    kind: RuleKind::Sampled,
    summary: "≥ 10 pages/s swapped in or out (warn)",
    check: swapping,
};

fn over(b: &Observation, a: &Observation) -> String {
    format!("{:.1} s", a.snap.at - b.snap.at)
}

fn nfs_retrans(b: &Observation, a: &Observation, _: &Context) -> Checked {
    let (Some(x), Some(y)) = (
        b.snap.nfs.as_ref().and_then(|n| n.client),
        a.snap.nfs.as_ref().and_then(|n| n.client),
    ) else {
        return Checked::only_missing("/proc/net/rpc/nfs not present (no NFS client)");
    };
    let mut c = Checked::none();
    let calls = delta(x.calls, y.calls);
    let retrans = delta(x.retrans, y.retrans);
    if calls < NFS_MIN_CALLS {
        return c;
    }
    let p = retrans as f64 / calls as f64 * 100.0;
    if p <= NFS_RETRANS_WARN_PCT {
        return c;
    }
    let sev = if p > NFS_RETRANS_CRITICAL_PCT {
        Severity::Critical
    } else {
        Severity::Warn
    };
    c.push(Finding::new(
        NFS_RETRANS.id,
        sev,
        format!(
            "NFS client retransmitted {} of {} RPC calls in {} ({})",
            thousands(retrans),
            thousands(calls),
            over(b, a),
            pct(p)
        ),
        "more than 3 % of calls retransmitted means the server or the network drops \
         requests: each one waits out the mount's timeo (0.6 s over TCP, less over UDP) \
         before it is sent again, so file operations stall",
        "look at the server first (nfsd-threads there, its disk) and at the path \
         (tcp-retransmits, reasm-fails here); mount over TCP with a longer timeout — in \
         /etc/fstab: `SERVER:/export /mnt nfs proto=tcp,timeo=600,retrans=2 0 0`, then \
         umount and mount again",
    ));
    c
}

fn nfsd_threads(b: &Observation, a: &Observation, _: &Context) -> Checked {
    let (Some(nb), Some(na)) = (&b.snap.nfs, &a.snap.nfs) else {
        return Checked::only_missing("NFS counters not read");
    };
    if na.server.is_none() {
        return Checked::only_missing("/proc/net/rpc/nfsd not present (no NFS server)");
    }
    let (Some(pb), Some(pa)) = (nb.pools, na.pools) else {
        return Checked::only_missing(
            "/proc/fs/nfsd/pool_stats not present (the nfsd filesystem is not mounted)",
        );
    };
    let (Some(arr_b), Some(arr_a), Some(enq_b), Some(enq_a)) = (
        pb.packets_arrived,
        pa.packets_arrived,
        pb.sockets_enqueued,
        pa.sockets_enqueued,
    ) else {
        return Checked::only_missing("pool_stats lacks packets-arrived or sockets-enqueued");
    };
    let mut c = Checked::none();
    let arrived = delta(arr_b, arr_a);
    let enqueued = delta(enq_b, enq_a);
    if arrived < NFS_MIN_CALLS {
        return c;
    }
    let p = enqueued as f64 / arrived as f64 * 100.0;
    if p < NFSD_ENQUEUED_WARN_PCT {
        return c;
    }
    let threads = na.server.and_then(|s| s.threads);
    let more = threads.map(|t| (t * 2).max(16)).unwrap_or(32);
    let shown = threads
        .map(|t| format!("; {t} nfsd threads"))
        .unwrap_or_default();
    c.push(Finding::new(
        NFSD_THREADS.id,
        Severity::Warn,
        format!(
            "{} of {} requests arriving at nfsd in {} found every thread busy ({}, \
             pool_stats sockets-enqueued){shown}",
            thousands(enqueued),
            thousands(arrived),
            over(b, a),
            pct(p)
        ),
        "a request that finds all nfsd threads busy waits in the socket queue: clients \
         see slow calls and, past their timeout, retransmit (nfs-retrans on the clients)",
        format!(
            "now: rpc.nfsd {more}; for good: `threads={more}` in the [nfsd] section of \
             /etc/nfs.conf (older Debian: RPCNFSDCOUNT={more} in \
             /etc/default/nfs-kernel-server)"
        ),
    ));
    c
}

fn cpu_mask(n: usize) -> String {
    if n >= 64 {
        return "ffffffff,ffffffff".into();
    }
    format!("{:x}", (1u64 << n) - 1)
}

fn softirq_cpu(b: &Observation, a: &Observation, _: &Context) -> Checked {
    let s = Sample::between(&b.snap, &a.snap, b.snap.at, &DiskFilter::default());
    let Some(cpu) = s.cpu else {
        return Checked::only_missing("/proc/stat not readable");
    };
    let mut c = Checked::none();
    let hot: Vec<(u32, f64)> = cpu
        .per_cpu
        .iter()
        .filter(|(_, p)| p.softirq >= SOFTIRQ_WARN_PCT)
        .map(|(id, p)| (*id, p.softirq))
        .collect();
    if hot.is_empty() {
        return c;
    }
    let worst = hot.iter().map(|h| h.1).fold(0.0, f64::max);
    let sev = if worst >= SOFTIRQ_CRITICAL_PCT {
        Severity::Critical
    } else {
        Severity::Warn
    };
    let list = hot
        .iter()
        .map(|(id, p)| format!("CPU{id} {}", pct(*p)))
        .collect::<Vec<_>>()
        .join(", ");
    let mask = cpu_mask(cpu.per_cpu.len().max(1));
    c.push(Finding::new(
        SOFTIRQ_CPU.id,
        sev,
        format!(
            "softirq share over {}: {list} (all CPUs together: {})",
            over(b, a),
            pct(cpu.total.softirq)
        ),
        "one CPU doing the network (or block) softirq work for the whole host becomes the \
         bottleneck while the others idle: the 55 % softirq of the nginx study, where \
         __do_softirq topped the profile",
        format!(
            "spread the work: enable irqbalance (systemctl enable --now irqbalance), use \
             more NIC queues (ethtool -L IFACE combined N), or steer packets with RPS: echo \
             {mask} > /sys/class/net/IFACE/queues/rx-0/rps_cpus"
        ),
    ));
    c
}

fn thundering_herd(b: &Observation, a: &Observation, _: &Context) -> Checked {
    let (Some(sb), Some(sa)) = (&b.snap.stat, &a.snap.stat) else {
        return Checked::only_missing("/proc/stat not readable");
    };
    let (Some(cs_b), Some(cs_a)) = (sb.ctxt, sa.ctxt) else {
        return Checked::only_missing("/proc/stat has no ctxt line");
    };
    let Some(cpus) = a.cpus() else {
        return Checked::only_missing("/proc/stat has no per-CPU lines");
    };
    let mut c = Checked::none();
    let t = a.snap.at - b.snap.at;
    let running = sb
        .procs_running
        .unwrap_or(0)
        .max(sa.procs_running.unwrap_or(0));
    let cs_core = delta(cs_b, cs_a) as f64 / t / cpus as f64;
    if (running as f64) <= HERD_RUNNABLE_PER_CORE * cpus as f64 || cs_core <= HERD_CS_PER_CORE {
        return c;
    }
    c.push(Finding::new(
        THUNDERING_HERD.id,
        Severity::Warn,
        format!(
            "{running} runnable tasks on {cpus} CPUs (> {:.0}× cores) and {} context \
             switches per core over {}",
            HERD_RUNNABLE_PER_CORE,
            per_s(cs_core),
            over(b, a)
        ),
        "many processes or threads woken for each event that only one can take — the \
         accept() thundering herd of pre-fork servers: each new connection wakes every \
         worker, all but one go back to sleep, and the CPU goes to context switches",
        "wake one worker per connection: nginx `accept_mutex on;` or `listen 80 reuseport;`; \
         Apache event MPM; in your own code SO_REUSEPORT with one listener per worker, or \
         EPOLLEXCLUSIVE on a shared listener",
    ));
    c
}

fn disk_saturated(b: &Observation, a: &Observation, _: &Context) -> Checked {
    if b.snap.disks.is_none() || a.snap.disks.is_none() {
        return Checked::only_missing("/proc/diskstats not readable");
    }
    let s = Sample::between(&b.snap, &a.snap, b.snap.at, &DiskFilter::default());
    let mut c = Checked::none();
    for (dev, d) in &s.disks {
        if d.util < DISK_UTIL_PCT || d.r#await < DISK_AWAIT_MS {
            continue;
        }
        let sev = if d.r#await >= DISK_AWAIT_CRITICAL_MS {
            Severity::Critical
        } else {
            Severity::Warn
        };
        c.push(Finding::new(
            DISK_SATURATED.id,
            sev,
            format!(
                "{dev} was busy {} of {} with await {:.1} ms, aqu-sz {:.1} ({:.0} r/s, {:.0} \
                 w/s, {:.0} kB/s)",
                pct(d.util),
                over(b, a),
                d.r#await,
                d.aqu_sz,
                d.r_s,
                d.w_s,
                d.rkb_s + d.wkb_s
            ),
            "the device always had I/O in flight and each request waited that long: \
             everything that reads or writes there (page faults, logging, fsync) waits in \
             the same queue",
            format!(
                "find who does the I/O (`pidstat -d 1`, `iotop -o`) and move it or spread it \
                 over more devices; for bursts of page-cache writeback start it earlier: \
                 sysctl -w vm.dirty_background_bytes=67108864; check the scheduler: cat \
                 /sys/block/{dev}/queue/scheduler"
            ),
        ));
    }
    c
}

fn swapping(b: &Observation, a: &Observation, _: &Context) -> Checked {
    let (Some(x), Some(y)) = (&b.snap.vmstat, &a.snap.vmstat) else {
        return Checked::only_missing("/proc/vmstat not readable");
    };
    let mut c = Checked::none();
    let t = a.snap.at - b.snap.at;
    let si = delta(x.pswpin, y.pswpin) as f64 / t;
    let so = delta(x.pswpout, y.pswpout) as f64 / t;
    if si < SWAP_PAGES_PER_S && so < SWAP_PAGES_PER_S {
        return c;
    }
    c.push(Finding::new(
        SWAPPING.id,
        Severity::Warn,
        format!(
            "swapping over {}: {} pages in, {} pages out",
            over(b, a),
            per_s(si),
            per_s(so)
        ),
        "memory is short: pages go to disk and come back when touched, and every process \
         that touches one waits for a disk read — latency measured now is mostly swap",
        "find what grew (`ps -eo pid,comm,rss --sort=-rss | head`), lower its memory or add \
         RAM; prefer dropping page cache to swapping: sysctl -w vm.swappiness=10",
    ));
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rps_masks() {
        assert_eq!(cpu_mask(4), "f");
        assert_eq!(cpu_mask(2), "3");
        assert_eq!(cpu_mask(12), "fff");
    }
}
