//! Every doctor rule at its threshold: an inline /proc text (or socket table) just past
//! it sets the rule off, one just short of it does not. The rest of each observation is
//! the healthy fixture (the real 6.18 capture with tuned sysctls), which sets off
//! nothing by itself (doctor_fixtures.rs). Observations are one second apart, so counter
//! deltas are rates.

use std::path::Path;

use perflab_telemetry::doctor::{
    rule, CloseWaitSocket, Context, Finding, Listener, Observation, Severity, Source,
};
use perflab_telemetry::{cpu, disk, memory, net, nfs, Notes};

fn healthy(side: &str, at: f64) -> Observation {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/doctor/healthy")
        .join(side);
    let mut notes = Notes::default();
    Observation::read(&Source::fixture(&dir, Some(4242)), at, &mut notes)
}

/// The healthy host read twice, one second apart.
fn host() -> (Observation, Observation) {
    (healthy("before", 0.0), healthy("after", 1.0))
}

fn ctx() -> Context {
    Context {
        is_root: true,
        ..Context::default()
    }
}

/// What rule `id` finds.
fn run(id: &str, b: &Observation, a: &Observation, ctx: &Context) -> Vec<Finding> {
    let r = rule(id).unwrap_or_else(|| panic!("no rule {id}"));
    (r.check)(b, a, ctx).findings
}

/// The one finding of `id`, with its severity.
fn one(id: &str, b: &Observation, a: &Observation, ctx: &Context) -> Finding {
    let f = run(id, b, a, ctx);
    assert_eq!(f.len(), 1, "{id}: {f:#?}");
    f.into_iter().next().unwrap()
}

fn quiet(id: &str, b: &Observation, a: &Observation, ctx: &Context) {
    let f = run(id, b, a, ctx);
    assert!(f.is_empty(), "{id} should be quiet: {f:#?}");
}

fn sysctl(o: &mut Observation, name: &str, value: &str) {
    o.sysctl.insert(name.into(), value.into());
}

/// Both observations get the same sysctl (it is configuration, not a counter).
fn sysctl2(b: &mut Observation, a: &mut Observation, name: &str, value: &str) {
    sysctl(b, name, value);
    sysctl(a, name, value);
}

/// Merges /proc/net/snmp or /proc/net/netstat text into an observation's counters.
fn snmp(o: &mut Observation, text: &str) {
    let m = net::parse_snmp("/proc/net/snmp", text).unwrap();
    o.snap.net.as_mut().unwrap().snmp.extend(m);
}

// ---------------------------------------------------------------- limits

#[test]
fn nofile_limit_against_connections() {
    let (b, mut a) = host();
    let c = Context {
        pid: Some(4242),
        connections: Some(100_000),
        ..ctx()
    };
    a.procs.get_mut(&4242).unwrap().nofile = Some((100_063, 100_063));
    let f = one("nofile-limit", &b, &a, &c);
    assert_eq!((f.severity, f.pid), (Severity::Warn, Some(4242)));
    assert_eq!(f.program.as_deref(), Some("server"));
    assert!(
        f.fix.contains("prlimit --pid 4242 --nofile=131072:131072"),
        "{}",
        f.fix
    );
    assert!(f.fix.contains("LimitNOFILE=131072"), "{}", f.fix);
    a.procs.get_mut(&4242).unwrap().nofile = Some((100_064, 100_064));
    quiet("nofile-limit", &b, &a, &c);
}

#[test]
fn nofile_limit_without_pid_checks_the_inherited_limit() {
    let (b, a) = host();
    let c = Context {
        connections: Some(2000),
        inherited_nofile: Some((1024, 1024)),
        ..ctx()
    };
    let f = one("nofile-limit", &b, &a, &c);
    assert_eq!(f.pid, None);
    assert!(f.fix.contains("ulimit -n 65536"), "{}", f.fix);
    let c = Context {
        inherited_nofile: Some((2064, 2064)),
        ..c
    };
    quiet("nofile-limit", &b, &a, &c);
    // Without --connections or --pid there is nothing to compare with.
    let c = Context {
        inherited_nofile: Some((16, 16)),
        ..ctx()
    };
    quiet("nofile-limit", &b, &a, &c);
}

#[test]
fn nofile_limit_in_use() {
    let (b, mut a) = host();
    let c = Context {
        pid: Some(4242),
        ..ctx()
    };
    let p = a.procs.get_mut(&4242).unwrap();
    p.nofile = Some((1000, 4096));
    p.fds = Some(799);
    quiet("nofile-limit", &b, &a, &c);
    a.procs.get_mut(&4242).unwrap().fds = Some(800);
    let f = one("nofile-limit", &b, &a, &c);
    assert_eq!(f.severity, Severity::Warn);
    assert!(
        f.evidence
            .contains("has 800 files open: 80 % of its soft limit 1,000"),
        "{}",
        f.evidence
    );
    a.procs.get_mut(&4242).unwrap().fds = Some(950);
    assert_eq!(one("nofile-limit", &b, &a, &c).severity, Severity::Critical);
}

#[test]
fn file_max_against_connections_and_use() {
    let (b, mut a) = host();
    let c = Context {
        connections: Some(100_000),
        ..ctx()
    };
    sysctl(&mut a, "fs.file-max", "100064");
    sysctl(&mut a, "fs.file-nr", "1000\t0\t100064");
    quiet("file-max", &b, &a, &c);
    sysctl(&mut a, "fs.file-max", "100063");
    let f = one("file-max", &b, &a, &c);
    assert!(
        f.fix.starts_with("sysctl -w fs.file-max=262144"),
        "{}",
        f.fix
    );
    assert!(f.fix.contains("/etc/sysctl.d/"), "{}", f.fix);
    // Allocated handles: 79.9 % quiet, 80 % warn, 95 % critical.
    sysctl(&mut a, "fs.file-max", "10000");
    sysctl(&mut a, "fs.file-nr", "7990\t0\t10000");
    quiet("file-max", &b, &a, &ctx());
    sysctl(&mut a, "fs.file-nr", "8000\t0\t10000");
    assert_eq!(one("file-max", &b, &a, &ctx()).severity, Severity::Warn);
    sysctl(&mut a, "fs.file-nr", "9500\t0\t10000");
    assert_eq!(one("file-max", &b, &a, &ctx()).severity, Severity::Critical);
}

#[test]
fn nr_open_against_connections() {
    let (b, mut a) = host();
    let c = Context {
        connections: Some(100_000),
        ..ctx()
    };
    sysctl(&mut a, "fs.nr_open", "100064");
    quiet("nr-open", &b, &a, &c);
    quiet("nr-open", &b, &a, &ctx());
    sysctl(&mut a, "fs.nr_open", "100063");
    let f = one("nr-open", &b, &a, &c);
    assert!(
        f.fix.starts_with("sysctl -w fs.nr_open=1048576"),
        "{}",
        f.fix
    );
}

// ---------------------------------------------------------------- network config

#[test]
fn somaxconn_levels() {
    let (b, mut a) = host();
    sysctl(&mut a, "net.core.somaxconn", "127");
    let f = one("somaxconn", &b, &a, &ctx());
    assert_eq!(f.severity, Severity::Warn);
    assert!(
        f.fix.contains("sysctl -w net.core.somaxconn=4096"),
        "{}",
        f.fix
    );
    sysctl(&mut a, "net.core.somaxconn", "128");
    assert_eq!(one("somaxconn", &b, &a, &ctx()).severity, Severity::Info);
    sysctl(&mut a, "net.core.somaxconn", "4096");
    quiet("somaxconn", &b, &a, &ctx());
    let c = Context {
        connections: Some(5000),
        ..ctx()
    };
    let f = one("somaxconn", &b, &a, &c);
    assert_eq!(f.severity, Severity::Warn);
    assert!(f.fix.contains("net.core.somaxconn=8192"), "{}", f.fix);
    sysctl(&mut a, "net.core.somaxconn", "5000");
    quiet("somaxconn", &b, &a, &c);
}

fn listener(port: u16, queue: u64, backlog: Option<u64>, pid: i32) -> Listener {
    Listener {
        port,
        inode: 90_000 + u64::from(port),
        queue,
        peak_queue: queue,
        backlog,
        pids: vec![pid],
    }
}

#[test]
fn listen_backlog_of_the_program() {
    let (b, mut a) = host();
    sysctl(&mut a, "net.core.somaxconn", "4096");
    a.sockets.as_mut().unwrap().listeners = vec![listener(8080, 0, Some(128), 4242)];
    quiet("listen-backlog", &b, &a, &ctx());
    a.sockets.as_mut().unwrap().listeners = vec![listener(8080, 0, Some(127), 4242)];
    let f = one("listen-backlog", &b, &a, &ctx());
    assert_eq!(
        (f.severity, f.port, f.pid),
        (Severity::Info, Some(8080), Some(4242))
    );
    assert!(f.fix.contains("listen 8080 backlog=4096;"), "{}", f.fix);
    // Capped by somaxconn, not the program's choice: somaxconn's finding, not this one.
    sysctl(&mut a, "net.core.somaxconn", "64");
    a.sockets.as_mut().unwrap().listeners = vec![listener(8080, 0, Some(64), 4242)];
    quiet("listen-backlog", &b, &a, &ctx());
    // With --pid, only that process's listeners.
    sysctl(&mut a, "net.core.somaxconn", "4096");
    a.sockets.as_mut().unwrap().listeners = vec![listener(22, 0, Some(5), 1)];
    let c = Context {
        pid: Some(4242),
        ..ctx()
    };
    quiet("listen-backlog", &b, &a, &c);
    assert_eq!(run("listen-backlog", &b, &a, &ctx()).len(), 1);
}

#[test]
fn syn_backlog_levels() {
    let (b, mut a) = host();
    sysctl(&mut a, "net.ipv4.tcp_max_syn_backlog", "127");
    assert_eq!(one("syn-backlog", &b, &a, &ctx()).severity, Severity::Warn);
    sysctl(&mut a, "net.ipv4.tcp_max_syn_backlog", "1023");
    sysctl(&mut a, "net.ipv4.tcp_syncookies", "0");
    let f = one("syn-backlog", &b, &a, &ctx());
    assert_eq!(f.severity, Severity::Info);
    assert!(f.evidence.contains("SYN cookies are off"), "{}", f.evidence);
    sysctl(&mut a, "net.ipv4.tcp_max_syn_backlog", "1024");
    quiet("syn-backlog", &b, &a, &ctx());
}

#[test]
fn netdev_backlog_levels() {
    let (b, mut a) = host();
    sysctl(&mut a, "net.core.netdev_max_backlog", "999");
    assert_eq!(
        one("netdev-backlog", &b, &a, &ctx()).severity,
        Severity::Warn
    );
    sysctl(&mut a, "net.core.netdev_max_backlog", "1000");
    quiet("netdev-backlog", &b, &a, &ctx());
    let busy = Context {
        connections: Some(1000),
        ..ctx()
    };
    let f = one("netdev-backlog", &b, &a, &busy);
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.fix
            .starts_with("sysctl -w net.core.netdev_max_backlog=5000"),
        "{}",
        f.fix
    );
    sysctl(&mut a, "net.core.netdev_max_backlog", "5000");
    quiet("netdev-backlog", &b, &a, &busy);
}

#[test]
fn port_range_against_outgoing() {
    let (b, mut a) = host();
    sysctl(&mut a, "net.ipv4.ip_local_port_range", "32768\t60999");
    let out = |n| Context {
        outgoing: Some(n),
        ..ctx()
    };
    // 28,232 ports; 80 % is 22,585.6.
    quiet("port-range", &b, &a, &out(22_585));
    assert_eq!(
        one("port-range", &b, &a, &out(22_586)).severity,
        Severity::Warn
    );
    let f = one("port-range", &b, &a, &out(28_233));
    assert_eq!(f.severity, Severity::Critical);
    assert!(
        f.fix
            .contains("sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\""),
        "{}",
        f.fix
    );
    assert!(
        f.fix
            .contains("'net.ipv4.ip_local_port_range = 1024 65535'"),
        "{}",
        f.fix
    );
    quiet("port-range", &b, &a, &ctx());
    // A narrowed range is worth knowing even without --outgoing.
    sysctl(&mut a, "net.ipv4.ip_local_port_range", "60000\t65535");
    assert_eq!(one("port-range", &b, &a, &ctx()).severity, Severity::Info);
    sysctl(&mut a, "net.ipv4.ip_local_port_range", "55536\t65535");
    quiet("port-range", &b, &a, &ctx());
}

#[test]
fn ipfrag_memory() {
    let (b, mut a) = host();
    sysctl(&mut a, "net.ipv4.ipfrag_high_thresh", "4194303");
    assert_eq!(one("ipfrag", &b, &a, &ctx()).severity, Severity::Info);
    sysctl(&mut a, "net.ipv4.ipfrag_high_thresh", "4194304");
    quiet("ipfrag", &b, &a, &ctx());
}

// ---------------------------------------------------------------- host config

fn meminfo(swap_total: u64, swap_free: u64) -> memory::MemInfo {
    memory::parse_meminfo(&format!(
        "MemTotal: 4000000 kB\nMemFree: 1000000 kB\nMemAvailable: 2000000 kB\nCached: 1000 kB\n\
         SwapTotal: {swap_total} kB\nSwapFree: {swap_free} kB\n"
    ))
    .unwrap()
}

#[test]
fn swap_in_use() {
    let (b, mut a) = host();
    a.snap.meminfo = Some(meminfo(1_048_576, 1_048_576 - 65_535));
    quiet("swap", &b, &a, &ctx());
    a.snap.meminfo = Some(meminfo(1_048_576, 1_048_576 - 65_536));
    let f = one("swap", &b, &a, &ctx());
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.evidence
            .starts_with("64 MiB of swap in use (6 % of 1,024 MiB)"),
        "{}",
        f.evidence
    );
}

#[test]
fn cpu_governor_settings() {
    let (b, mut a) = host();
    quiet("cpu-governor", &b, &a, &ctx());
    a.cpufreq[1].governor = "schedutil".into();
    let f = one("cpu-governor", &b, &a, &ctx());
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.evidence.contains("CPU 1 on the `schedutil` governor"),
        "{}",
        f.evidence
    );
    // powersave is a dynamic policy under intel_pstate, the lowest clock elsewhere.
    a.cpufreq[1].governor = "powersave".into();
    assert_eq!(one("cpu-governor", &b, &a, &ctx()).severity, Severity::Info);
    a.cpufreq[1].driver = "acpi-cpufreq".into();
    assert_eq!(one("cpu-governor", &b, &a, &ctx()).severity, Severity::Warn);
    a.cpufreq.clear();
    let r = (rule("cpu-governor").unwrap().check)(&b, &a, &ctx());
    assert!(r.findings.is_empty());
    assert!(
        r.not_available[0].contains("cpufreq"),
        "{:?}",
        r.not_available
    );
}

// ---------------------------------------------------------------- network counters

fn overflows(b: &mut Observation, a: &mut Observation, before: u64, after: u64) {
    snmp(
        b,
        &format!("TcpExt: ListenOverflows ListenDrops\nTcpExt: {before} {before}\n"),
    );
    snmp(
        a,
        &format!("TcpExt: ListenOverflows ListenDrops\nTcpExt: {after} {after}\n"),
    );
}

#[test]
fn listen_overflows_name_the_full_port() {
    let (mut b, mut a) = host();
    sysctl2(&mut b, &mut a, "net.core.somaxconn", "64");
    a.sockets.as_mut().unwrap().listeners = vec![
        listener(22, 0, Some(64), 1),
        listener(8080, 65, Some(64), 4242),
    ];
    overflows(&mut b, &mut a, 7, 7);
    quiet("listen-overflows", &b, &a, &ctx());
    overflows(&mut b, &mut a, 7, 8);
    let f = one("listen-overflows", &b, &a, &ctx());
    assert_eq!(f.severity, Severity::Warn);
    assert_eq!((f.port, f.pid), (Some(8080), Some(4242)));
    assert_eq!(f.program.as_deref(), Some("server"));
    assert!(
        f.evidence.contains("the accept queue of port 8080, pid 4242 (server) was full: 65 waiting, backlog 64 (= net.core.somaxconn)"),
        "{}",
        f.evidence
    );
    assert!(
        f.fix.starts_with("sysctl -w net.core.somaxconn=4096"),
        "{}",
        f.fix
    );
    overflows(&mut b, &mut a, 7, 17);
    assert_eq!(
        one("listen-overflows", &b, &a, &ctx()).severity,
        Severity::Critical
    );
}

#[test]
fn listen_overflows_with_the_programs_own_small_backlog() {
    let (mut b, mut a) = host();
    sysctl2(&mut b, &mut a, "net.core.somaxconn", "4096");
    let mut l = listener(9000, 3, Some(16), 4242);
    l.peak_queue = 17; // full between the two reads, seen by the polls
    a.sockets.as_mut().unwrap().listeners = vec![l];
    overflows(&mut b, &mut a, 0, 3);
    let f = one("listen-overflows", &b, &a, &ctx());
    assert_eq!(f.port, Some(9000));
    assert!(
        f.fix
            .starts_with("raise the program's own backlog (nginx `listen 9000 backlog=8192;`"),
        "{}",
        f.fix
    );
}

#[test]
fn listen_overflows_without_a_full_listener() {
    let (mut b, mut a) = host();
    a.sockets.as_mut().unwrap().listeners = vec![listener(8080, 3, Some(128), 4242)];
    overflows(&mut b, &mut a, 0, 2);
    let f = one("listen-overflows", &b, &a, &ctx());
    assert_eq!(f.port, None);
    assert!(
        f.evidence.contains("no listener's queue was full"),
        "{}",
        f.evidence
    );
}

fn softnet(dropped: u64, squeezed: u64) -> net::Softnet {
    net::parse_softnet(&format!(
        "00001000 {dropped:08x} {squeezed:08x} 0 0 0 0 0 0 0 0\n"
    ))
    .unwrap()
}

#[test]
fn softnet_drops_and_squeezes() {
    let (mut b, mut a) = host();
    sysctl(&mut a, "net.core.netdev_max_backlog", "1000");
    b.snap.net.as_mut().unwrap().softnet = Some(softnet(5, 100));
    a.snap.net.as_mut().unwrap().softnet = Some(softnet(5, 109));
    quiet("softnet-drops", &b, &a, &ctx());
    a.snap.net.as_mut().unwrap().softnet = Some(softnet(5, 110));
    let f = one("softnet-drops", &b, &a, &ctx());
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.fix.starts_with("sysctl -w net.core.netdev_budget=600"),
        "{}",
        f.fix
    );
    a.snap.net.as_mut().unwrap().softnet = Some(softnet(6, 100));
    let f = one("softnet-drops", &b, &a, &ctx());
    assert_eq!(f.severity, Severity::Warn);
    assert!(
        f.fix
            .starts_with("sysctl -w net.core.netdev_max_backlog=5000"),
        "{}",
        f.fix
    );
}

fn segs(b: &mut Observation, a: &mut Observation, out: u64, retrans: u64) {
    snmp(b, "Tcp: OutSegs RetransSegs\nTcp: 5000 50\n");
    snmp(
        a,
        &format!(
            "Tcp: OutSegs RetransSegs\nTcp: {} {}\n",
            5000 + out,
            50 + retrans
        ),
    );
}

#[test]
fn tcp_retransmit_share() {
    let (mut b, mut a) = host();
    segs(&mut b, &mut a, 1000, 9);
    quiet("tcp-retransmits", &b, &a, &ctx());
    segs(&mut b, &mut a, 1000, 10);
    let f = one("tcp-retransmits", &b, &a, &ctx());
    assert_eq!(f.severity, Severity::Warn);
    assert!(
        f.evidence
            .contains("10 of 1,000 TCP segments retransmitted in 1.0 s (1.00 %)"),
        "{}",
        f.evidence
    );
    segs(&mut b, &mut a, 1000, 50);
    assert_eq!(
        one("tcp-retransmits", &b, &a, &ctx()).severity,
        Severity::Critical
    );
    // Too little traffic for a share to mean anything.
    segs(&mut b, &mut a, 999, 500);
    quiet("tcp-retransmits", &b, &a, &ctx());
}

#[test]
fn reasm_failures() {
    let (mut b, mut a) = host();
    snmp(&mut b, "Ip: ReasmReqds ReasmFails\nIp: 100 3\n");
    snmp(&mut a, "Ip: ReasmReqds ReasmFails\nIp: 200 3\n");
    quiet("reasm-fails", &b, &a, &ctx());
    snmp(&mut a, "Ip: ReasmReqds ReasmFails\nIp: 200 4\n");
    let f = one("reasm-fails", &b, &a, &ctx());
    assert!(
        f.evidence.starts_with("Ip.ReasmFails +1 of 100 fragments"),
        "{}",
        f.evidence
    );
    assert!(
        f.fix.contains("net.ipv4.ipfrag_high_thresh=8388608"),
        "{}",
        f.fix
    );
}

fn close_wait(n: u64, first_inode: u64, pids: &[i32]) -> Vec<CloseWaitSocket> {
    (0..n)
        .map(|i| CloseWaitSocket {
            port: 8080,
            inode: first_inode + i,
            pids: pids.to_vec(),
        })
        .collect()
}

#[test]
fn close_wait_held_by_one_process() {
    let (mut b, mut a) = host();
    // Nine new ones (none seen before): a server between recv() == 0 and close().
    a.sockets.as_mut().unwrap().close_wait = close_wait(9, 100, &[4242]);
    quiet("close-wait", &b, &a, &ctx());
    // Ten: a leak.
    a.sockets.as_mut().unwrap().close_wait = close_wait(10, 100, &[4242]);
    let f = one("close-wait", &b, &a, &ctx());
    assert_eq!(
        (f.severity, f.pid, f.port),
        (Severity::Warn, Some(4242), Some(8080))
    );
    assert_eq!(f.program.as_deref(), Some("server"));
    assert!(
        f.evidence
            .starts_with("pid 4242 (server) holds 10 CLOSE_WAIT sockets (port 8080 ×10)"),
        "{}",
        f.evidence
    );
    assert!(f
        .why
        .starts_with("recv() returned 0 and the socket was never closed"));
    // One socket still in CLOSE_WAIT from the start of the watch to its end: a leak too.
    b.sockets.as_mut().unwrap().close_wait = close_wait(1, 100, &[4242]);
    a.sockets.as_mut().unwrap().close_wait = close_wait(1, 100, &[4242]);
    let f = one("close-wait", &b, &a, &ctx());
    assert!(
        f.evidence
            .contains("1 of them were already in CLOSE_WAIT 1.0 s earlier"),
        "{}",
        f.evidence
    );
    // ... but not with --watch 0 (the same observation twice).
    quiet("close-wait", &a, &a, &ctx());
    a.sockets.as_mut().unwrap().close_wait = close_wait(1000, 100, &[4242]);
    assert_eq!(
        one("close-wait", &b, &a, &ctx()).severity,
        Severity::Critical
    );
}

#[test]
fn close_wait_without_an_owner_says_root_is_needed() {
    let (b, mut a) = host();
    let t = a.sockets.as_mut().unwrap();
    t.close_wait = close_wait(10, 100, &[]);
    t.unreadable_fd_dirs = 3;
    let user = Context::default();
    let r = (rule("close-wait").unwrap().check)(&b, &a, &user);
    assert_eq!(r.findings.len(), 1);
    assert_eq!(r.findings[0].pid, None);
    assert!(
        r.not_available[0].contains("needs root"),
        "{:?}",
        r.not_available
    );
}

// ---------------------------------------------------------------- host counters

fn nfs_client(o: &mut Observation, calls: u64, retrans: u64) {
    let c = nfs::parse_rpc_nfs(&format!("net 0 0 0 0\nrpc {calls} {retrans} 0\n")).unwrap();
    o.snap.nfs.as_mut().unwrap().client = Some(c);
}

#[test]
fn nfs_client_retransmits() {
    let (mut b, mut a) = host();
    nfs_client(&mut b, 1000, 10);
    nfs_client(&mut a, 2000, 40); // 30 of 1,000: exactly 3 %
    quiet("nfs-retrans", &b, &a, &ctx());
    nfs_client(&mut a, 2000, 41);
    let f = one("nfs-retrans", &b, &a, &ctx());
    assert_eq!(f.severity, Severity::Warn);
    assert!(
        f.evidence
            .contains("31 of 1,000 RPC calls in 1.0 s (3.1 %)"),
        "{}",
        f.evidence
    );
    nfs_client(&mut a, 2000, 111);
    assert_eq!(
        one("nfs-retrans", &b, &a, &ctx()).severity,
        Severity::Critical
    );
    nfs_client(&mut a, 1019, 19); // too few calls
    quiet("nfs-retrans", &b, &a, &ctx());
}

fn pools(o: &mut Observation, arrived: u64, enqueued: u64) {
    let p = nfs::parse_pool_stats(&format!(
        "# pool packets-arrived sockets-enqueued threads-woken threads-timedout\n0 {arrived} {enqueued} 0 0\n"
    ))
    .unwrap();
    o.snap.nfs.as_mut().unwrap().pools = Some(p);
}

#[test]
fn nfsd_pool_saturation() {
    let (mut b, mut a) = host();
    pools(&mut b, 1000, 10);
    pools(&mut a, 2000, 109);
    quiet("nfsd-threads", &b, &a, &ctx());
    pools(&mut a, 2000, 110);
    let f = one("nfsd-threads", &b, &a, &ctx());
    assert!(
        f.evidence.contains("100 of 1,000 requests"),
        "{}",
        f.evidence
    );
    assert!(f.evidence.contains("8 nfsd threads"), "{}", f.evidence);
    assert!(f.fix.starts_with("now: rpc.nfsd 16"), "{}", f.fix);
}

/// /proc/stat of 2 CPUs after `jiffies` per CPU since boot: cpu0 idle, cpu1 `si` of
/// them in softirq and the rest idle.
fn stat(jiffies: u64, si: u64, ctxt: u64, running: u64) -> cpu::ProcStat {
    let idle1 = jiffies - si;
    cpu::parse_stat(&format!(
        "cpu  0 0 0 {} 0 0 {si} 0 0 0\ncpu0 0 0 0 {jiffies} 0 0 0 0 0 0\ncpu1 0 0 0 {idle1} 0 0 {si} 0 0 0\n\
         ctxt {ctxt}\nprocs_running {running}\nprocs_blocked 0\n",
        jiffies + idle1
    ))
    .unwrap()
}

#[test]
fn softirq_bound_cpu() {
    let (mut b, mut a) = host();
    b.snap.stat = Some(stat(0, 0, 0, 1));
    a.snap.stat = Some(stat(1000, 499, 0, 1));
    quiet("softirq-cpu", &b, &a, &ctx());
    a.snap.stat = Some(stat(1000, 500, 0, 1));
    let f = one("softirq-cpu", &b, &a, &ctx());
    assert_eq!(f.severity, Severity::Warn);
    assert!(
        f.evidence.contains("CPU1 50 % (all CPUs together: 25 %)"),
        "{}",
        f.evidence
    );
    assert!(
        f.fix
            .contains("echo 3 > /sys/class/net/IFACE/queues/rx-0/rps_cpus"),
        "{}",
        f.fix
    );
    a.snap.stat = Some(stat(1000, 900, 0, 1));
    assert_eq!(
        one("softirq-cpu", &b, &a, &ctx()).severity,
        Severity::Critical
    );
}

#[test]
fn thundering_herd_needs_both_conditions() {
    let (mut b, mut a) = host();
    // 2 CPUs, 1 s: > 4 runnable and > 20,000 switches.
    b.snap.stat = Some(stat(0, 0, 1_000_000, 5));
    a.snap.stat = Some(stat(100, 0, 1_020_002, 5));
    let f = one("thundering-herd", &b, &a, &ctx());
    assert!(
        f.evidence.starts_with("5 runnable tasks on 2 CPUs"),
        "{}",
        f.evidence
    );
    assert!(f.fix.contains("accept_mutex on;"), "{}", f.fix);
    a.snap.stat = Some(stat(100, 0, 1_020_000, 5));
    quiet("thundering-herd", &b, &a, &ctx());
    b.snap.stat = Some(stat(0, 0, 1_000_000, 4));
    a.snap.stat = Some(stat(100, 0, 1_100_000, 4));
    quiet("thundering-herd", &b, &a, &ctx());
}

/// One 20-field /proc/diskstats line for `sdb`: `ios` writes taking `ticks` ms in all,
/// the device busy `busy` ms.
fn diskstats(ios: u64, ticks: u64, busy: u64) -> Vec<disk::DiskStats> {
    disk::parse_diskstats(&format!(
        "   8      16 sdb 0 0 0 0 {ios} 0 {} {ticks} 0 {busy} {ticks} 0 0 0 0 0 0\n",
        ios * 8
    ))
    .unwrap()
}

#[test]
fn disk_saturation() {
    let (mut b, mut a) = host();
    b.snap.disks = Some(diskstats(0, 0, 0));
    a.snap.disks = Some(diskstats(100, 2000, 990)); // 99 %, 20 ms
    let f = one("disk-saturated", &b, &a, &ctx());
    assert_eq!(f.severity, Severity::Warn);
    assert!(
        f.evidence
            .starts_with("sdb was busy 99 % of 1.0 s with await 20.0 ms"),
        "{}",
        f.evidence
    );
    a.snap.disks = Some(diskstats(100, 2000, 989));
    quiet("disk-saturated", &b, &a, &ctx());
    a.snap.disks = Some(diskstats(100, 1999, 1000));
    quiet("disk-saturated", &b, &a, &ctx());
    a.snap.disks = Some(diskstats(100, 20_000, 1000));
    assert_eq!(
        one("disk-saturated", &b, &a, &ctx()).severity,
        Severity::Critical
    );
}

fn vmstat(pswpin: u64, pswpout: u64) -> memory::VmCounters {
    memory::parse_vmstat(&format!(
        "pgpgin 0\npgpgout 0\npswpin {pswpin}\npswpout {pswpout}\n"
    ))
    .unwrap()
}

#[test]
fn active_swapping() {
    let (mut b, mut a) = host();
    b.snap.vmstat = Some(vmstat(100, 100));
    a.snap.vmstat = Some(vmstat(109, 109));
    quiet("swapping", &b, &a, &ctx());
    a.snap.vmstat = Some(vmstat(100, 110));
    let f = one("swapping", &b, &a, &ctx());
    assert!(
        f.evidence.contains("0.0/s pages in, 10.0/s pages out"),
        "{}",
        f.evidence
    );
}
