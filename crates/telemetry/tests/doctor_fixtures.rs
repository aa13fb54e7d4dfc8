//! The doctor end to end on two /proc + /sys fixture directories (see
//! tests/fixtures/doctor/README.md): `troubled/` sets off every rule that a /proc text
//! fixture can show (all but `listen-backlog`, whose backlogs only netlink gives: it is
//! covered in doctor_rules.rs), `healthy/` — the real 6.18 capture with tuned sysctls —
//! sets off none, with the same flags.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use perflab_telemetry::doctor::{
    diagnose, Context, Diagnosis, Observation, Severity, Source, RULES,
};
use perflab_telemetry::Notes;

fn dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/doctor")
        .join(name)
}

/// The same flags for both hosts: pid 4242 must take 100,000 connections and open
/// 30,000 to one upstream.
fn ctx() -> Context {
    Context {
        pid: Some(4242),
        connections: Some(100_000),
        outgoing: Some(30_000),
        inherited_nofile: None,
        is_root: true,
    }
}

fn run(host: &str, secs: f64) -> (Diagnosis, Notes, Observation) {
    let mut notes = Notes::default();
    let before = Observation::read(
        &Source::fixture(&dir(host).join("before"), Some(4242)),
        0.0,
        &mut notes,
    );
    let after = Observation::read(
        &Source::fixture(&dir(host).join("after"), Some(4242)),
        secs,
        &mut notes,
    );
    (diagnose(&before, &after, &ctx()), notes, after)
}

fn ids(d: &Diagnosis) -> BTreeSet<&'static str> {
    d.findings.iter().map(|f| f.id).collect()
}

#[test]
fn healthy_host_has_no_findings_and_every_input() {
    // The capture's a/ and b/ were 1.33 s apart (their `uptime`).
    let (d, notes, after) = run("healthy", 1.33);
    assert!(d.findings.is_empty(), "{:#?}", d.findings);
    assert!(d.not_available.is_empty(), "{:#?}", d.not_available);
    assert!(notes.warnings.is_empty(), "{:?}", notes.warnings);
    assert_eq!(after.sysctl_u64("net.core.somaxconn"), Some(65535));
    assert_eq!(
        after.sysctl_nums("net.ipv4.ip_local_port_range"),
        Some(vec![1024, 65535])
    );
    assert_eq!(after.procs[&4242].nofile, Some((1_048_576, 1_048_576)));
    assert_eq!(after.procs[&4242].fds, Some(3));
    assert_eq!(after.cpufreq.len(), 2);
    let t = after.sockets.as_ref().unwrap();
    assert!(t.close_wait.is_empty());
    assert!(!t.listeners.is_empty());
    assert!(t.listeners.iter().all(|l| l.backlog.is_none()));
}

#[test]
fn troubled_host_sets_off_every_rule_but_listen_backlog() {
    let (d, notes, after) = run("troubled", 2.0);
    assert!(notes.warnings.is_empty(), "{:?}", notes.warnings);
    let all: BTreeSet<&str> = RULES
        .iter()
        .map(|r| r.id)
        .filter(|i| *i != "listen-backlog")
        .collect();
    assert_eq!(ids(&d), all, "{:#?}", d.findings);
    // listen-backlog says why it could not look.
    assert!(d
        .not_available
        .iter()
        .any(|n| n.rule == "listen-backlog" && n.reason.contains("netlink")));
    // The owner of the CLOSE_WAIT sockets is read from its fd links.
    let cw = d.findings.iter().find(|f| f.id == "close-wait").unwrap();
    assert_eq!(cw.pid, Some(4242));
    assert_eq!(cw.program.as_deref(), Some("leaky-server"));
    assert_eq!(cw.port, Some(8080));
    assert!(
        cw.evidence.contains("holds 12 CLOSE_WAIT sockets"),
        "{}",
        cw.evidence
    );
    assert!(
        cw.evidence
            .contains("12 of them were already in CLOSE_WAIT"),
        "{}",
        cw.evidence
    );
    assert!(cw
        .why
        .contains("recv() returned 0 and the socket was never closed"));
    let l = &after.sockets.as_ref().unwrap().listeners[0];
    assert_eq!(
        (l.port, l.queue, l.pids.as_slice()),
        (8080, 129, &[4242][..])
    );
    // Worst first; the exit status follows the first finding.
    assert_eq!(d.findings[0].severity, Severity::Critical);
    assert_eq!(d.worst(), Some(Severity::Critical));
    for f in &d.findings {
        assert_eq!(f.doc, format!("docs/doctor.md#{}", f.id));
        assert!(!f.evidence.is_empty() && !f.why.is_empty() && !f.fix.is_empty());
    }
}

/// Each finding's evidence holds the numbers worked out by hand from the files.
#[test]
fn troubled_evidence_numbers() {
    let (d, _, _) = run("troubled", 2.0);
    let get = |id: &str| {
        d.findings
            .iter()
            .find(|f| f.id == id)
            .unwrap_or_else(|| panic!("no {id}"))
    };
    let has = |id: &str, text: &str| {
        let _ = get(id);
        let mine: Vec<_> = d.findings.iter().filter(|f| f.id == id).collect();
        assert!(
            mine.iter()
                .any(|f| f.evidence.contains(text) || f.fix.contains(text)),
            "{id}: `{text}` not in {mine:#?}"
        );
    };
    // ListenOverflows 500 -> 600 over 2 s: 50/s, critical; the port is unknown from
    // /proc/net/tcp (no backlog), the fix still names somaxconn.
    has(
        "listen-overflows",
        "TcpExt.ListenOverflows +100 and ListenDrops +100 in 2.0 s (50.0/s)",
    );
    has("listen-overflows", "sysctl -w net.core.somaxconn=4096");
    assert_eq!(get("listen-overflows").severity, Severity::Critical);
    // softnet: 0x10 -> 0x30 dropped.
    has("softnet-drops", "32 packets dropped");
    has("softnet-drops", "net.core.netdev_max_backlog=5000");
    // 300 of 10,000 segments: 3.00 %.
    has(
        "tcp-retransmits",
        "300 of 10,000 TCP segments retransmitted in 2.0 s (3.00 %)",
    );
    has(
        "reasm-fails",
        "Ip.ReasmFails +40 of 300 fragments needing reassembly",
    );
    // 50 of 1,000 calls: 5.0 %.
    has(
        "nfs-retrans",
        "retransmitted 50 of 1,000 RPC calls in 2.0 s (5.0 %)",
    );
    // 300 of 1,000 packets enqueued: 30 %; 8 threads -> 16.
    has("nfsd-threads", "300 of 1,000 requests");
    has("nfsd-threads", "rpc.nfsd 16");
    // cpu1: 140 of 200 jiffies in softirq.
    has("softirq-cpu", "CPU1 70 %");
    // 60,000 switches / 2 s / 2 CPUs.
    has("thundering-herd", "9 runnable tasks on 2 CPUs");
    has("thundering-herd", "15000/s");
    // sda: 2,000 ms busy of 2 s; 10,000 ms over 200 I/Os; sda1 is a partition, left out.
    has(
        "disk-saturated",
        "sda was busy 100 % of 2.0 s with await 50.0 ms, aqu-sz 10.0",
    );
    assert_eq!(
        d.findings
            .iter()
            .filter(|f| f.id == "disk-saturated")
            .count(),
        1
    );
    // 100 pages in and out over 2 s.
    has("swapping", "50.0/s pages in, 50.0/s pages out");
    has("swap", "1,024 MiB of swap in use (50 % of 2,048 MiB)");
    has(
        "nofile-limit",
        "RLIMIT_NOFILE soft limit 1,024 (hard 4,096)",
    );
    has("nofile-limit", "prlimit --pid 4242 --nofile=131072:131072");
    has("file-max", "fs.file-max is 80,615");
    has("file-max", "70,000 file handles allocated: 87 %");
    has("nr-open", "fs.nr_open is 65,536");
    has("somaxconn", "net.core.somaxconn is 128");
    has("syn-backlog", "tcp_max_syn_backlog is 512");
    has("netdev-backlog", "netdev_max_backlog is 500");
    has(
        "port-range",
        "--outgoing 30,000 needs 106 % of the 28,232 local ports",
    );
    assert_eq!(get("port-range").severity, Severity::Critical);
    has("ipfrag", "ipfrag_high_thresh is 262,144 bytes");
    has(
        "cpu-governor",
        "CPUs 0–1 on the `powersave` governor (driver acpi-cpufreq)",
    );
    assert_eq!(get("cpu-governor").severity, Severity::Warn);
}

#[test]
fn static_only_skips_the_counters() {
    let mut notes = Notes::default();
    let o = Observation::read(
        &Source::fixture(&dir("troubled").join("after"), Some(4242)),
        0.0,
        &mut notes,
    );
    let d = diagnose(&o, &o, &ctx());
    assert_eq!(d.watch_s, 0.0);
    let sampled: BTreeSet<&str> = RULES
        .iter()
        .filter(|r| r.kind == perflab_telemetry::doctor::RuleKind::Sampled)
        .map(|r| r.id)
        .collect();
    assert!(ids(&d).is_disjoint(&sampled), "{:?}", ids(&d));
    // close-wait runs on the count alone (12 ≥ 10).
    assert!(ids(&d).contains("close-wait"));
    assert!(d.not_available.iter().any(|n| n.rule == "sampled"));
}

#[test]
fn a_host_without_the_files_says_what_is_missing() {
    let empty = std::env::temp_dir().join(format!("perflab-doctor-empty-{}", std::process::id()));
    std::fs::create_dir_all(empty.join("proc")).unwrap();
    let mut notes = Notes::default();
    let o = Observation::read(&Source::fixture(&empty, None), 0.0, &mut notes);
    let mut later = o.clone();
    later.snap.at = 1.0;
    let d = diagnose(&o, &later, &Context::default());
    std::fs::remove_dir_all(&empty).unwrap();
    assert!(d.findings.is_empty(), "{:#?}", d.findings);
    let rules: BTreeSet<&str> = d.not_available.iter().map(|n| n.rule).collect();
    for id in [
        "somaxconn",
        "file-max",
        "cpu-governor",
        "nfs-retrans",
        "listen-overflows",
        "close-wait",
        "swap",
    ] {
        assert!(rules.contains(id), "{id} not in {rules:?}");
    }
}

/// Every finding links to `docs/doctor.md#ID`: that section must exist.
#[test]
fn every_rule_has_a_docs_section() {
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/doctor.md"))
            .unwrap();
    for r in RULES {
        assert!(
            docs.lines().any(|l| l == format!("## {}", r.id)),
            "docs/doctor.md has no `## {}` section",
            r.id
        );
    }
}
