//! Network counters over the watch: listen-queue overflows (naming the full port),
//! softnet drops, TCP retransmits, IP reassembly failures, and CLOSE_WAIT sockets held
//! by one process.
//!
//! Counters are compared by name (`TcpExt.ListenOverflows`) with
//! [`crate::counter::delta`], so a wrap or reset is not a huge jump. A counter the
//! running kernel lacks makes its rule "not available", never a silent 0.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    per_s, suggest, sysctl_fix, thousands, Checked, Context, Finding, Listener, Observation, Rule,
    RuleKind, Severity,
};
use crate::counter::delta;

/// Listen overflows per second from which the finding is critical (any is a warning).
pub const OVERFLOWS_CRITICAL_PER_S: f64 = 10.0;
/// time_squeeze events per second (with no drops) worth mentioning.
pub const SQUEEZE_PER_S: f64 = 10.0;
/// Retransmitted share of sent segments: warning / critical, percent.
pub const RETRANS_WARN_PCT: f64 = 1.0;
pub const RETRANS_CRITICAL_PCT: f64 = 5.0;
/// Fewer segments sent than this over the watch make no retransmit percentage.
pub const RETRANS_MIN_SEGS: u64 = 1000;
/// CLOSE_WAIT sockets held by one process: a warning / critical.
pub const CLOSE_WAIT_WARN: u64 = 10;
pub const CLOSE_WAIT_CRITICAL: u64 = 1000;

pub const LISTEN_OVERFLOWS: Rule = Rule {
    id: "listen-overflows",
    kind: RuleKind::Sampled,
    summary: "TcpExt.ListenOverflows or ListenDrops increased (warn; ≥ 10/s critical); names \
              the port whose accept queue was full",
    check: listen_overflows,
};

pub const SOFTNET_DROPS: Rule = Rule {
    id: "softnet-drops",
    kind: RuleKind::Sampled,
    summary: "packets dropped by a full per-CPU backlog (softnet_stat) increased (warn); \
              time_squeeze ≥ 10/s (info)",
    check: softnet_drops,
};

pub const TCP_RETRANSMITS: Rule = Rule {
    id: "tcp-retransmits",
    kind: RuleKind::Sampled,
    summary: "RetransSegs / OutSegs ≥ 1 % (warn), ≥ 5 % (critical), over ≥ 1000 segments",
    check: tcp_retransmits,
};

pub const REASM_FAILS: Rule = Rule {
    id: "reasm-fails",
    kind: RuleKind::Sampled,
    summary: "Ip.ReasmFails increased (warn)",
    check: reasm_fails,
};

pub const CLOSE_WAIT: Rule = Rule {
    id: "close-wait",
    // Runs with --watch 0 too, on the count alone.
    kind: RuleKind::Static,
    summary: "one process holds ≥ 10 CLOSE_WAIT sockets, or any for the whole watch (warn; \
              ≥ 1000 critical)",
    check: close_wait,
};

fn secs(b: &Observation, a: &Observation) -> f64 {
    a.snap.at - b.snap.at
}

/// Δ of an snmp/netstat counter; `None` when either read lacks it.
fn snmp_delta(b: &Observation, a: &Observation, key: &str) -> Option<u64> {
    let x = b.snap.net.as_ref()?.snmp.get(key)?;
    let y = a.snap.net.as_ref()?.snmp.get(key)?;
    Some(delta(*x, *y))
}

fn over(secs: f64) -> String {
    format!("{secs:.1} s")
}

fn listen_overflows(b: &Observation, a: &Observation, _: &Context) -> Checked {
    if b.snap.net.is_none() || a.snap.net.is_none() {
        return Checked::only_missing("/proc/net/snmp and /proc/net/netstat not readable");
    }
    let ov = snmp_delta(b, a, "TcpExt.ListenOverflows");
    let dr = snmp_delta(b, a, "TcpExt.ListenDrops");
    if ov.is_none() && dr.is_none() {
        return Checked::only_missing("this kernel's /proc/net/netstat has no ListenOverflows");
    }
    let (ov, dr) = (ov.unwrap_or(0), dr.unwrap_or(0));
    let mut c = Checked::none();
    if ov == 0 && dr == 0 {
        return c;
    }
    let o = Overflows::new(b, a, ov, dr);
    let mut full: Vec<_> = a
        .sockets
        .iter()
        .flat_map(|t| &t.listeners)
        .filter(|l| l.was_full())
        .collect();
    full.sort_by_key(|l| (l.port, l.inode));
    let mut ports = BTreeSet::new();
    for l in full {
        if ports.insert(l.port) {
            c.push(o.full_port(a, l));
        }
    }
    if c.findings.is_empty() {
        c.push(o.unnamed_port(a));
    }
    c
}

/// What every listen-overflow finding of one watch shares: the counters, how bad,
/// why it matters, and the somaxconn to suggest.
struct Overflows {
    sev: Severity,
    somaxconn: Option<u64>,
    /// The backlog to suggest.
    suggested: u64,
    counters: String,
    somaxconn_fix: String,
}

/// Why a full accept queue matters.
const OVERFLOWS_WHY: &str = "the accept queue of a listener was full: the program accepts \
     connections more slowly than they arrive, or its backlog is too small for the bursts. \
     The kernel then drops the handshakes that complete (and new SYNs), and clients wait \
     for retransmits after 1 s, 3 s, 7 s or give up with a reset — the connection \
     failures of the nginx study at ~400 clients";

impl Overflows {
    fn new(b: &Observation, a: &Observation, ov: u64, dr: u64) -> Overflows {
        let t = secs(b, a);
        let rate = ov.max(dr) as f64 / t;
        let sev = if rate >= OVERFLOWS_CRITICAL_PER_S {
            Severity::Critical
        } else {
            Severity::Warn
        };
        let somaxconn = a.sysctl_u64("net.core.somaxconn");
        let suggested = suggest(somaxconn.unwrap_or(0).saturating_mul(2), 4096, 65_535);
        let counters = format!(
            "TcpExt.ListenOverflows +{} and ListenDrops +{} in {} ({})",
            thousands(ov),
            thousands(dr),
            over(t),
            per_s(rate)
        );
        let somaxconn_fix = sysctl_fix("net.core.somaxconn", &suggested.to_string());
        Overflows {
            sev,
            somaxconn,
            suggested,
            counters,
            somaxconn_fix,
        }
    }

    /// The finding for a listener seen full: its port, its program, and the backlog to
    /// raise (the program's, and somaxconn when it caps it).
    fn full_port(&self, a: &Observation, l: &Listener) -> Finding {
        let (s, somaxconn, somaxconn_fix) = (self.suggested, self.somaxconn, &self.somaxconn_fix);
        let backlog = l.backlog.unwrap_or(0);
        let capped = somaxconn == Some(backlog);
        let pid = l.pids.first().copied();
        let who = pid.map(|p| format!(", {}", a.who(p))).unwrap_or_default();
        let fix = if capped {
            format!(
                "{somaxconn_fix}; the listener's backlog ({backlog}) is capped by \
                 net.core.somaxconn, so raise both: the program's own backlog too (nginx \
                 `listen {} backlog={s};`), then restart it so listen() runs again",
                l.port
            )
        } else {
            format!(
                "raise the program's own backlog (nginx `listen {} backlog={s};`, Apache \
                 `ListenBacklog {s}`, or listen(fd, {s})) and accept faster (more workers or \
                 threads); if the new backlog is above net.core.somaxconn ({}): {somaxconn_fix}",
                l.port,
                somaxconn
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "?".into())
            )
        };
        Finding::new(
            LISTEN_OVERFLOWS.id,
            self.sev,
            format!(
                "{}; the accept queue of port {}{who} was full: {} waiting, \
                 backlog {backlog}{}",
                self.counters,
                l.port,
                l.peak_queue,
                if capped {
                    " (= net.core.somaxconn)"
                } else {
                    ""
                }
            ),
            OVERFLOWS_WHY,
            fix,
        )
        .with_pid(pid, pid.and_then(|p| a.comm(p)))
        .with_port(l.port)
    }

    /// The finding when no listener was seen full: the counters, and why no port.
    fn unnamed_port(&self, a: &Observation) -> Finding {
        let backlogs_known = a
            .sockets
            .as_ref()
            .is_some_and(|t| t.listeners.iter().all(|l| l.backlog.is_some()));
        let note = if backlogs_known {
            "no listener's queue was full at the moments it was read (the bursts were short)"
        } else {
            "which port is unknown: listener backlogs need netlink sock_diag"
        };
        Finding::new(
            LISTEN_OVERFLOWS.id,
            self.sev,
            format!("{}; {note}", self.counters),
            OVERFLOWS_WHY,
            format!(
                "{}; and raise the backlog of the busy listener (`ss -lnt`: \
                 Recv-Q is its queue, Send-Q its backlog)",
                self.somaxconn_fix
            ),
        )
    }
}

fn softnet_drops(b: &Observation, a: &Observation, _: &Context) -> Checked {
    let (Some(x), Some(y)) = (
        b.snap.net.as_ref().and_then(|n| n.softnet),
        a.snap.net.as_ref().and_then(|n| n.softnet),
    ) else {
        return Checked::only_missing("/proc/net/softnet_stat not readable");
    };
    let mut c = Checked::none();
    let t = secs(b, a);
    let dropped = delta(x.dropped, y.dropped);
    let squeezed = delta(x.time_squeeze, y.time_squeeze);
    let cur = a.sysctl_u64("net.core.netdev_max_backlog");
    let shown = cur.map(|v| v.to_string()).unwrap_or_else(|| "?".into());
    if dropped > 0 {
        // The study's 5000, or twice the current value when that is already more.
        let v = cur.unwrap_or(0).saturating_mul(2).max(5000);
        c.push(Finding::new(
            SOFTNET_DROPS.id,
            Severity::Warn,
            format!(
                "{} packets dropped by a full per-CPU input backlog in {} ({}; time_squeeze \
                 +{}); net.core.netdev_max_backlog is {shown}",
                thousands(dropped),
                over(t),
                per_s(dropped as f64 / t),
                thousands(squeezed)
            ),
            "received packets wait in a per-CPU queue for the network softirq; when it is \
             full they are dropped before TCP sees them, and senders retransmit",
            sysctl_fix("net.core.netdev_max_backlog", &v.to_string()),
        ));
    } else if squeezed as f64 / t >= SQUEEZE_PER_S {
        let budget = a.sysctl_u64("net.core.netdev_budget").unwrap_or(300);
        c.push(Finding::new(
            SOFTNET_DROPS.id,
            Severity::Info,
            format!(
                "the network softirq ran out of budget {} times in {} ({}; \
                 softnet_stat time_squeeze), with no drops yet",
                thousands(squeezed),
                over(t),
                per_s(squeezed as f64 / t)
            ),
            "packets are left for the next softirq round: added latency now, drops when \
             the backlog fills",
            sysctl_fix("net.core.netdev_budget", &(budget * 2).to_string()),
        ));
    }
    c
}

fn tcp_retransmits(b: &Observation, a: &Observation, _: &Context) -> Checked {
    let (Some(re), Some(out)) = (
        snmp_delta(b, a, "Tcp.RetransSegs"),
        snmp_delta(b, a, "Tcp.OutSegs"),
    ) else {
        return Checked::only_missing("Tcp.RetransSegs / Tcp.OutSegs not readable");
    };
    let mut c = Checked::none();
    if out < RETRANS_MIN_SEGS {
        return c;
    }
    let p = re as f64 / out as f64 * 100.0;
    if p < RETRANS_WARN_PCT {
        return c;
    }
    let sev = if p >= RETRANS_CRITICAL_PCT {
        Severity::Critical
    } else {
        Severity::Warn
    };
    c.push(Finding::new(
        TCP_RETRANSMITS.id,
        sev,
        format!(
            "{} of {} TCP segments retransmitted in {} ({:.2} %)",
            thousands(re),
            thousands(out),
            over(secs(b, a)),
            p
        ),
        "each retransmit is a lost segment and a stall of at least one round trip (200 ms \
         or more on a timeout); above about 1 % throughput falls and tail latency grows",
        "find where segments are lost: `ss -ti` (retrans per connection), `ip -s link` and \
         `ethtool -S IFACE` (drops and errors on this host), softnet-drops for the input \
         backlog; fix the lossy link (cable, duplex, MTU) or raise \
         net.core.netdev_max_backlog when this host drops",
    ));
    c
}

fn reasm_fails(b: &Observation, a: &Observation, _: &Context) -> Checked {
    let Some(f) = snmp_delta(b, a, "Ip.ReasmFails") else {
        return Checked::only_missing("Ip.ReasmFails not readable");
    };
    let mut c = Checked::none();
    if f == 0 {
        return c;
    }
    let reqds = snmp_delta(b, a, "Ip.ReasmReqds")
        .map(|r| format!(" of {} fragments needing reassembly", thousands(r)))
        .unwrap_or_default();
    let high = a.sysctl_u64("net.ipv4.ipfrag_high_thresh").unwrap_or(0);
    let v = suggest(high.saturating_mul(2), 4 << 20, 1 << 30);
    c.push(Finding::new(
        REASM_FAILS.id,
        Severity::Warn,
        format!(
            "Ip.ReasmFails +{}{reqds} in {}; net.ipv4.ipfrag_high_thresh is {}",
            thousands(f),
            over(secs(b, a)),
            thousands(high)
        ),
        "a datagram whose fragments cannot all be reassembled (lost, timed out, or the \
         reassembly memory full) is dropped whole; NFS over UDP then waits for an RPC \
         retransmit (see nfs-retrans)",
        format!(
            "sysctl -w net.ipv4.ipfrag_high_thresh={v} net.ipv4.ipfrag_low_thresh={}  \
             (persist in /etc/sysctl.d/90-perflab.conf); for NFS, mount with proto=tcp",
            v / 4 * 3
        ),
    ));
    c
}

/// `port 8080 ×12, port 9000 ×1` and the most frequent port.
fn ports_of(a: &Observation, inodes: &[u64]) -> (String, Option<u16>) {
    let mut by: BTreeMap<u16, u64> = BTreeMap::new();
    for s in a.sockets.iter().flat_map(|t| &t.close_wait) {
        if inodes.contains(&s.inode) {
            *by.entry(s.port).or_default() += 1;
        }
    }
    let top = by.iter().max_by_key(|(_, n)| **n).map(|(p, _)| *p);
    let text = by
        .iter()
        .map(|(p, n)| format!("port {p} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    (text, top)
}

fn close_wait(b: &Observation, a: &Observation, ctx: &Context) -> Checked {
    let Some(ta) = &a.sockets else {
        return Checked::only_missing("no TCP socket table (netlink and /proc/net/tcp unreadable)");
    };
    let mut c = Checked::none();
    let t = secs(b, a);
    let earlier: BTreeSet<u64> = if t > 0.0 {
        b.sockets
            .iter()
            .flat_map(|t| &t.close_wait)
            .map(|s| s.inode)
            .collect()
    } else {
        BTreeSet::new()
    };
    for (pid, inodes) in ta.close_wait_by_pid() {
        let n = inodes.len() as u64;
        let held = inodes.iter().filter(|i| earlier.contains(i)).count() as u64;
        if n < CLOSE_WAIT_WARN && held == 0 {
            continue;
        }
        let sev = if n >= CLOSE_WAIT_CRITICAL {
            Severity::Critical
        } else {
            Severity::Warn
        };
        let (ports, top) = ports_of(a, &inodes);
        let held = if held > 0 {
            format!(
                "; {held} of them were already in CLOSE_WAIT {} earlier",
                over(t)
            )
        } else {
            String::new()
        };
        let why = "recv() returned 0 and the socket was never closed: the peer hung up, \
                   the program did not notice (or forgot close() on that path), and each \
                   socket keeps a file descriptor and kernel memory until the process \
                   exits, until RLIMIT_NOFILE is reached and accept() fails";
        let mut f = if pid == 0 {
            let unreadable = ta.unreadable_fd_dirs;
            if !ctx.is_root && unreadable > 0 {
                c.missing(format!(
                    "naming the owner of {n} CLOSE_WAIT sockets needs root: {unreadable} \
                     processes' /proc/PID/fd could not be read (run with sudo)"
                ));
            }
            Finding::new(
                CLOSE_WAIT.id,
                sev,
                format!(
                    "{} CLOSE_WAIT sockets ({ports}) whose owner could not be found{held}",
                    thousands(n)
                ),
                why,
                "find the owner (`ss -tnp state close-wait` as root) and fix its read path: \
                 when recv()/read() returns 0, close() the socket",
            )
        } else {
            Finding::new(
                CLOSE_WAIT.id,
                sev,
                format!(
                    "{} holds {} CLOSE_WAIT sockets ({ports}){held}",
                    a.who(pid),
                    thousands(n)
                ),
                why,
                format!(
                    "in the program, close() the socket when recv()/read() returns 0 (the \
                     peer closed) and on every error path; restarting pid {pid} releases the \
                     ones held now"
                ),
            )
            .with_pid(Some(pid), a.comm(pid))
        };
        f.port = top;
        c.push(f);
    }
    c
}
