//! Network configuration: the accept and SYN queues, the per-CPU input backlog, the
//! local port range and the IP reassembly memory.
//!
//! The values to compare with are the ones the tuning studies used and today's kernel
//! defaults: somaxconn 4096 (the default since Linux 5.4, and what the ARM nginx study
//! raised 128 to), tcp_max_syn_backlog 4096 (from 512), netdev_max_backlog 5000 (from
//! 1000), ipfrag_high_thresh 4 MiB (the default since 4.17; 256 KiB before). A value
//! below the old defaults is a warning; below the current ones only information,
//! unless `--connections N` says the load will need more.

use super::{
    suggest, sysctl_fix, thousands, Checked, Context, Finding, Observation, Rule, RuleKind,
    Severity,
};

/// Below this somaxconn / tcp_max_syn_backlog is a warning (the pre-5.4 default).
pub const QUEUE_LOW: u64 = 128;
/// Below this somaxconn is worth knowing (the 5.4+ default, the studies' value).
pub const SOMAXCONN_GOOD: u64 = 4096;
/// Below this tcp_max_syn_backlog is worth knowing.
pub const SYN_BACKLOG_GOOD: u64 = 1024;
/// The largest queue the fixes suggest.
pub const QUEUE_CAP: u64 = 65_535;
/// netdev_max_backlog's kernel default; below it is a warning.
pub const NETDEV_DEFAULT: u64 = 1000;
/// What the study raised netdev_max_backlog to for 500–700 concurrent clients.
pub const NETDEV_GOOD: u64 = 5000;
/// `--connections` from which a netdev_max_backlog below 5000 is mentioned.
pub const NETDEV_BUSY_CONNECTIONS: u64 = 1000;
/// Share of the local port range that `--outgoing` may use before a warning.
pub const PORTS_WARN: f64 = 0.80;
/// A port range narrower than this is worth knowing (the default has 28,232 ports).
pub const PORTS_NARROW: u64 = 10_000;
/// ipfrag_high_thresh below this (the 4.17+ default, 4 MiB) is worth knowing.
pub const IPFRAG_GOOD: u64 = 4 << 20;

pub const SOMAXCONN: Rule = Rule {
    id: "somaxconn",
    kind: RuleKind::Static,
    summary: "net.core.somaxconn < 128 (warn), < --connections (warn), < 4096 (info)",
    check: somaxconn,
};

pub const LISTEN_BACKLOG: Rule = Rule {
    id: "listen-backlog",
    kind: RuleKind::Static,
    summary: "a listener's own listen() backlog < 128 and below somaxconn (info)",
    check: listen_backlog,
};

pub const SYN_BACKLOG: Rule = Rule {
    id: "syn-backlog",
    kind: RuleKind::Static,
    summary: "net.ipv4.tcp_max_syn_backlog < 128 (warn), < --connections (warn), < 1024 (info)",
    check: syn_backlog,
};

pub const NETDEV_BACKLOG: Rule = Rule {
    id: "netdev-backlog",
    kind: RuleKind::Static,
    summary: "net.core.netdev_max_backlog < 1000 (warn); < 5000 with --connections ≥ 1000 (info)",
    check: netdev_backlog,
};

pub const PORT_RANGE: Rule = Rule {
    id: "port-range",
    kind: RuleKind::Static,
    summary:
        "--outgoing > 80 % of ip_local_port_range (warn), > 100 % (critical); < 10,000 ports (info)",
    check: port_range,
};

pub const IPFRAG: Rule = Rule {
    id: "ipfrag",
    kind: RuleKind::Static,
    summary: "net.ipv4.ipfrag_high_thresh < 4 MiB (info)",
    check: ipfrag,
};

/// Severity of a queue sysctl `v`: warn below `QUEUE_LOW` or below the expected
/// connections, info below `good`.
fn queue_severity(v: u64, ctx: &Context, good: u64) -> Option<Severity> {
    let wanted = ctx.connections.map(|n| n.min(QUEUE_CAP));
    if v < QUEUE_LOW || wanted.is_some_and(|w| v < w) {
        Some(Severity::Warn)
    } else if v < good {
        Some(Severity::Info)
    } else {
        None
    }
}

fn queue_suggestion(ctx: &Context) -> u64 {
    suggest(
        ctx.connections.unwrap_or(0).min(QUEUE_CAP),
        SOMAXCONN_GOOD,
        QUEUE_CAP,
    )
}

fn for_connections(ctx: &Context) -> String {
    match ctx.connections {
        Some(n) => format!(" (--connections {})", thousands(n)),
        None => String::new(),
    }
}

fn somaxconn(_: &Observation, a: &Observation, ctx: &Context) -> Checked {
    let Some(v) = a.sysctl_u64("net.core.somaxconn") else {
        return Checked::only_missing("/proc/sys/net/core/somaxconn not present");
    };
    let mut c = Checked::none();
    let Some(sev) = queue_severity(v, ctx, SOMAXCONN_GOOD) else {
        return c;
    };
    let capped: Vec<String> = a
        .sockets
        .iter()
        .flat_map(|t| &t.listeners)
        .filter(|l| l.backlog == Some(v))
        .map(|l| l.port.to_string())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let capped = if capped.is_empty() {
        String::new()
    } else {
        format!(
            "; the backlog of port {} is capped at it",
            capped.join(", port ")
        )
    };
    let s = queue_suggestion(ctx);
    c.push(Finding::new(
        SOMAXCONN.id,
        sev,
        format!("net.core.somaxconn is {v}{}{capped}", for_connections(ctx)),
        "somaxconn caps every listen() backlog: the queue of connections that finished the \
         handshake and wait for accept(). When a burst fills it, the kernel drops the \
         handshakes that complete next (TcpExt.ListenOverflows) and clients see \
         retransmitted SYNs, 1–3 s stalls and resets",
        format!(
            "{}; then raise the program's own backlog to match (nginx: `listen 80 \
             backlog={s};`)",
            sysctl_fix("net.core.somaxconn", &s.to_string())
        ),
    ));
    c
}

fn listen_backlog(_: &Observation, a: &Observation, ctx: &Context) -> Checked {
    let Some(t) = &a.sockets else {
        return Checked::only_missing("no TCP socket table (netlink and /proc/net/tcp unreadable)");
    };
    let mut c = Checked::none();
    let somaxconn = a.sysctl_u64("net.core.somaxconn");
    let mut seen = std::collections::BTreeSet::new();
    let mut unknown = false;
    for l in &t.listeners {
        if ctx.pid.is_some_and(|p| !l.pids.contains(&p)) {
            continue;
        }
        let Some(b) = l.backlog else {
            unknown = true;
            continue;
        };
        let own_choice = !matches!(somaxconn, Some(m) if b >= m);
        if b >= QUEUE_LOW || !own_choice || !seen.insert((l.port, b)) {
            continue;
        }
        let pid = l.pids.first().copied();
        let who = pid
            .map(|p| format!(" held by {}", a.who(p)))
            .unwrap_or_default();
        let cap = somaxconn
            .map(|m| format!(" (net.core.somaxconn allows {m})"))
            .unwrap_or_default();
        c.push(
            Finding::new(
                LISTEN_BACKLOG.id,
                Severity::Info,
                format!(
                    "the listener on port {}{who} asked listen() for a backlog of only {b}{cap}",
                    l.port
                ),
                "the program's own backlog, not somaxconn, is the limit here: a burst of \
                 more than that many connections arriving faster than the program accepts \
                 them overflows the queue (ListenOverflows) and the extra clients stall",
                format!(
                    "raise the backlog in the program's configuration: nginx `listen {} \
                     backlog=4096;`, Apache `ListenBacklog 4096`, HAProxy `backlog 4096`, \
                     Python socketserver `request_queue_size = 4096`, or the listen(fd, \
                     4096) call itself",
                    l.port
                ),
            )
            .with_pid(pid, pid.and_then(|p| a.comm(p)))
            .with_port(l.port),
        );
    }
    if unknown {
        c.missing(
            "listener backlogs are known only from netlink sock_diag; /proc/net/tcp does not show them",
        );
    }
    c
}

fn syn_backlog(_: &Observation, a: &Observation, ctx: &Context) -> Checked {
    let Some(v) = a.sysctl_u64("net.ipv4.tcp_max_syn_backlog") else {
        return Checked::only_missing("/proc/sys/net/ipv4/tcp_max_syn_backlog not present");
    };
    let mut c = Checked::none();
    let Some(sev) = queue_severity(v, ctx, SYN_BACKLOG_GOOD) else {
        return c;
    };
    let cookies = match a.sysctl_u64("net.ipv4.tcp_syncookies") {
        Some(0) => "; SYN cookies are off (net.ipv4.tcp_syncookies = 0)",
        _ => "",
    };
    let s = queue_suggestion(ctx);
    c.push(Finding::new(
        SYN_BACKLOG.id,
        sev,
        format!(
            "net.ipv4.tcp_max_syn_backlog is {v}{}{cookies}",
            for_connections(ctx)
        ),
        "tcp_max_syn_backlog bounds the half-open connections (SYN received, handshake \
         not finished) per listener; beyond it new SYNs are dropped or answered with SYN \
         cookies, and clients connecting in a burst wait for their SYN retransmit (1 s, \
         then 3 s)",
        sysctl_fix("net.ipv4.tcp_max_syn_backlog", &s.to_string()),
    ));
    c
}

fn netdev_backlog(_: &Observation, a: &Observation, ctx: &Context) -> Checked {
    let Some(v) = a.sysctl_u64("net.core.netdev_max_backlog") else {
        // Host-wide: only the initial network namespace shows it.
        return Checked::only_missing(
            "/proc/sys/net/core/netdev_max_backlog not present: it is host-wide and only \
             the host's network namespace shows it (run the doctor there to check it)",
        );
    };
    let mut c = Checked::none();
    let busy = ctx
        .connections
        .is_some_and(|n| n >= NETDEV_BUSY_CONNECTIONS);
    let sev = if v < NETDEV_DEFAULT {
        Severity::Warn
    } else if busy && v < NETDEV_GOOD {
        Severity::Info
    } else {
        return c;
    };
    c.push(Finding::new(
        NETDEV_BACKLOG.id,
        sev,
        format!(
            "net.core.netdev_max_backlog is {v}{} (kernel default {NETDEV_DEFAULT})",
            for_connections(ctx)
        ),
        "netdev_max_backlog is the per-CPU queue of received packets waiting for the \
         softirq; when it is full packets are dropped before TCP sees them (the second \
         column of /proc/net/softnet_stat), which clients see as retransmits and stalls",
        sysctl_fix("net.core.netdev_max_backlog", &NETDEV_GOOD.to_string()),
    ));
    c
}

fn port_range(_: &Observation, a: &Observation, ctx: &Context) -> Checked {
    let Some(v) = a.sysctl_nums("net.ipv4.ip_local_port_range") else {
        return Checked::only_missing("/proc/sys/net/ipv4/ip_local_port_range not present");
    };
    let mut c = Checked::none();
    let (lo, hi) = match v.as_slice() {
        [lo, hi] if lo <= hi => (*lo, *hi),
        _ => return Checked::only_missing("ip_local_port_range is not `LOW HIGH`"),
    };
    let ports = hi - lo + 1;
    let fix = sysctl_fix("net.ipv4.ip_local_port_range", "\"1024 65535\"")
        + "; and let TIME_WAIT ports be reused for new outgoing connections: sysctl -w \
           net.ipv4.tcp_tw_reuse=1";
    let why = "every outgoing connection to the same destination address and port needs \
               its own local port from this range, and keeps it for 60 s in TIME_WAIT \
               after closing: when the range is used up connect() fails with \
               EADDRNOTAVAIL (\"Cannot assign requested address\")";
    match ctx.outgoing {
        Some(n) if n as f64 > ports as f64 * PORTS_WARN => {
            let sev = if n > ports {
                Severity::Critical
            } else {
                Severity::Warn
            };
            c.push(Finding::new(
                PORT_RANGE.id,
                sev,
                format!(
                    "--outgoing {} needs {:.0} % of the {} local ports of \
                     net.ipv4.ip_local_port_range ({lo}–{hi})",
                    thousands(n),
                    n as f64 / ports as f64 * 100.0,
                    thousands(ports)
                ),
                why,
                fix,
            ));
        }
        None if ports < PORTS_NARROW => c.push(Finding::new(
            PORT_RANGE.id,
            Severity::Info,
            format!(
                "net.ipv4.ip_local_port_range ({lo}–{hi}) has only {} ports",
                thousands(ports)
            ),
            why,
            fix,
        )),
        _ => {}
    }
    c
}

fn ipfrag(_: &Observation, a: &Observation, _: &Context) -> Checked {
    let Some(high) = a.sysctl_u64("net.ipv4.ipfrag_high_thresh") else {
        return Checked::only_missing("/proc/sys/net/ipv4/ipfrag_high_thresh not present");
    };
    let mut c = Checked::none();
    if high < IPFRAG_GOOD {
        let low = a
            .sysctl_u64("net.ipv4.ipfrag_low_thresh")
            .map(|l| format!(", ipfrag_low_thresh {}", thousands(l)))
            .unwrap_or_default();
        c.push(Finding::new(
            IPFRAG.id,
            Severity::Info,
            format!(
                "net.ipv4.ipfrag_high_thresh is {} bytes{low} (the default since Linux 4.17 \
                 is 4 MiB)",
                thousands(high)
            ),
            "fragments waiting for reassembly may use at most ipfrag_high_thresh bytes; \
             beyond it whole datagrams are dropped (Ip.ReasmFails). NFS over UDP and other \
             large-datagram traffic then stalls on retransmits",
            "sysctl -w net.ipv4.ipfrag_high_thresh=4194304 net.ipv4.ipfrag_low_thresh=3145728  \
             (persist both in /etc/sysctl.d/90-perflab.conf; low must stay below high)",
        ));
    }
    c
}
