//! Every parser on every fixture (real 6.18, synthetic 4.9 without NFS and without the
//! newer diskstats fields, synthetic 5.4 NFS client/server), and the figures computed from
//! them checked against values worked out by hand from the files with the formulas of
//! sysstat (iostat.c / common.c) and of the module docs. See tests/fixtures/README.md.

use std::fs;
use std::path::{Path, PathBuf};

use perflab_telemetry::disk::{self, DiskFilter};
use perflab_telemetry::snapshot::{Notes, ReadSpec, Snapshot};
use perflab_telemetry::{cpu, memory, net, nfs, process, sockets, Probe, Sample};

fn dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn read(path: PathBuf) -> String {
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

macro_rules! assert_close {
    ($a:expr, $b:expr) => {{
        let (a, b) = ($a as f64, $b as f64);
        assert!(close(a, b), "{} = {a}, expected {b}", stringify!($a));
    }};
}

const HOSTS: [&str; 3] = ["linux-6.18-kvm", "linux-4.9-old", "linux-5.4-nfs"];

/// Both reads of a fixture and the seconds between them (from `uptime` when captured).
fn pair(host: &str, probes: &[Probe], secs: f64) -> (Snapshot, Snapshot, Notes) {
    let mut notes = Notes::default();
    let a = dir(host).join("a");
    let b = dir(host).join("b");
    let spec_a = ReadSpec {
        root: &a,
        probes,
        pid: None,
    };
    let spec_b = ReadSpec {
        root: &b,
        ..spec_a.clone()
    };
    let sa = Snapshot::read(&spec_a, 0.0, &mut notes);
    let sb = Snapshot::read(&spec_b, secs, &mut notes);
    (sa, sb, notes)
}

fn real_interval() -> f64 {
    let up = |d: &str| -> f64 {
        read(dir("linux-6.18-kvm").join(d).join("uptime"))
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    up("b") - up("a")
}

#[test]
fn every_parser_reads_every_fixture() {
    for host in HOSTS {
        for side in ["a", "b"] {
            let d = dir(host).join(side);
            let f = |rel: &str| read(d.join(rel));
            cpu::parse_stat(&f("stat")).unwrap();
            cpu::parse_loadavg(&f("loadavg")).unwrap();
            memory::parse_meminfo(&f("meminfo")).unwrap();
            memory::parse_vmstat(&f("vmstat")).unwrap();
            assert!(!disk::parse_diskstats(&f("diskstats")).unwrap().is_empty());
            let snmp = net::parse_snmp("snmp", &f("net/snmp")).unwrap();
            assert!(snmp.contains_key("Tcp.OutSegs"), "{host}");
            let ext = net::parse_snmp("netstat", &f("net/netstat")).unwrap();
            assert!(ext.contains_key("TcpExt.ListenOverflows"), "{host}");
            net::parse_softnet(&f("net/softnet_stat")).unwrap();
            assert!(!net::parse_net_dev(&f("net/dev")).unwrap().is_empty());
            sockets::parse_tcp("tcp", &f("net/tcp")).unwrap();
            if d.join("net/tcp6").exists() {
                sockets::parse_tcp("tcp6", &f("net/tcp6")).unwrap();
            }
            if d.join("net/rpc/nfs").exists() {
                nfs::parse_rpc_nfs(&f("net/rpc/nfs")).unwrap();
                nfs::parse_rpc_nfsd(&f("net/rpc/nfsd")).unwrap();
                nfs::parse_pool_stats(&f("fs/nfsd/pool_stats")).unwrap();
            }
        }
    }
}

#[test]
fn diskstats_field_counts_by_kernel() {
    let fields = |host: &str, dev: &str| {
        let v = disk::parse_diskstats(&read(dir(host).join("a/diskstats"))).unwrap();
        v.into_iter().find(|d| d.name == dev).unwrap().fields
    };
    assert_eq!(fields("linux-6.18-kvm", "vda"), 20);
    assert_eq!(fields("linux-5.4-nfs", "nvme0n1"), 18);
    assert_eq!(fields("linux-4.9-old", "sda"), 14);
}

#[test]
fn iostat_on_the_real_6_18_capture() {
    // vda, a -> b (20 fields), over the uptime interval 2549.78 - 2548.45 = 1.33 s:
    //   Δrd_ios 429, Δrd_merges 15, Δrd_sectors 19912, Δrd_ticks 669,
    //   Δwr_ios 64, Δwr_merges 0, Δwr_sectors 131072, Δwr_ticks 27,
    //   Δio_ticks 56, Δtime_in_queue 708, Δdc_ios 3, Δdc_sectors 131072, Δdc_ticks 12.
    let t = real_interval();
    assert_close!(t, 1.33);
    let (a, b, notes) = pair("linux-6.18-kvm", &[Probe::Disk], t);
    assert!(notes.warnings.is_empty(), "{:?}", notes.warnings);
    let s = Sample::between(&a, &b, 0.0, &DiskFilter::default());
    let names: Vec<&str> = s.disks.iter().map(|(n, _)| n.as_str()).collect();
    // loop0..7 dropped by default; zram0 kept.
    assert_eq!(names, ["vda", "zram0"]);
    let d = &s.disks[0].1;
    assert_close!(d.r_s, 429.0 / 1.33);
    assert_close!(d.w_s, 64.0 / 1.33);
    assert_close!(d.rkb_s, 19912.0 / 2.0 / 1.33);
    assert_close!(d.wkb_s, 131072.0 / 2.0 / 1.33); // 64 MiB in 1.33 s
    assert_close!(d.rrqm_s, 15.0 / 1.33);
    assert_close!(d.wrqm_s, 0.0);
    assert_close!(d.r_await, 669.0 / 429.0);
    assert_close!(d.w_await, 27.0 / 64.0);
    // await and areq-sz include discards (sysstat 12), not flushes.
    assert_close!(d.r#await, (669.0 + 27.0 + 12.0) / (429.0 + 64.0 + 3.0));
    assert_close!(d.areq_sz, (19912.0 + 131072.0 + 131072.0) / 496.0 / 2.0);
    assert_close!(d.wareq_sz, 1024.0); // 1 MiB direct writes
    assert_close!(d.aqu_sz, 708.0 / 1330.0);
    assert_close!(d.util, 56.0 / 1330.0 * 100.0);
}

#[test]
fn iostat_on_a_kernel_with_14_fields() {
    // sda, a -> b over 2 s: Δrd_ios 200, Δrd_merges 20, Δrd_sectors 16000, Δrd_ticks 600,
    // Δwr_ios 400, Δwr_merges 100, Δwr_sectors 64000, Δwr_ticks 3400, Δio_ticks 1500,
    // Δtime_in_queue 4000; no discard or flush fields.
    let (a, b, _) = pair("linux-4.9-old", &[Probe::Disk], 2.0);
    let s = Sample::between(&a, &b, 0.0, &DiskFilter::default());
    let names: Vec<&str> = s.disks.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["sda", "sdb", "dm-0"],
        "partitions, loop and ram dropped"
    );
    let d = &s.disks[0].1;
    assert_close!(d.r_s, 100.0);
    assert_close!(d.w_s, 200.0);
    assert_close!(d.rkb_s, 4000.0);
    assert_close!(d.wkb_s, 16000.0);
    assert_close!(d.rrqm_s, 10.0);
    assert_close!(d.wrqm_s, 50.0);
    assert_close!(d.rrqm_pct, 20.0 / 220.0 * 100.0);
    assert_close!(d.wrqm_pct, 20.0);
    assert_close!(d.r_await, 3.0);
    assert_close!(d.w_await, 8.5);
    assert_close!(d.r#await, 4000.0 / 600.0);
    assert_close!(d.areq_sz, 80000.0 / 600.0 / 2.0);
    assert_close!(d.aqu_sz, 2.0);
    assert_close!(d.util, 75.0);
    assert_close!(d.d_s + d.f_s + d.f_await, 0.0);
    // An idle device: all zero, no division by zero.
    let sdb = &s.disks[1].1;
    assert_close!(sdb.r#await + sdb.areq_sz + sdb.util, 0.0);
    // Asked for: partitions and virtual devices too.
    let all = DiskFilter {
        partitions: true,
        virtual_devices: true,
        only: vec![],
    };
    assert_eq!(Sample::between(&a, &b, 0.0, &all).disks.len(), 7);
}

#[test]
fn iostat_on_a_kernel_with_18_fields() {
    // nvme0n1 over 1 s: Δrd_ios 500, Δrd_sectors 128000, Δrd_ticks 250, Δwr_ios 1500,
    // Δwr_merges 500, Δwr_sectors 96000, Δwr_ticks 4500, Δio_ticks 980,
    // Δtime_in_queue 5200, Δdc_ios 10, Δdc_sectors 20480, Δdc_ticks 50.
    let (a, b, _) = pair("linux-5.4-nfs", &[Probe::Disk], 1.0);
    let s = Sample::between(&a, &b, 0.0, &DiskFilter::default());
    assert_eq!(s.disks.len(), 1, "nvme0n1p1/p2 and loop0 dropped");
    let (name, d) = &s.disks[0];
    assert_eq!(name, "nvme0n1");
    assert_close!(d.r_s, 500.0);
    assert_close!(d.w_s, 1500.0);
    assert_close!(d.d_s, 10.0);
    assert_close!(d.rkb_s, 64000.0);
    assert_close!(d.wkb_s, 48000.0);
    assert_close!(d.dkb_s, 10240.0);
    assert_close!(d.wrqm_pct, 25.0);
    assert_close!(d.r_await, 0.5);
    assert_close!(d.w_await, 3.0);
    assert_close!(d.d_await, 5.0);
    assert_close!(d.r#await, 4800.0 / 2010.0);
    assert_close!(d.areq_sz, 244480.0 / 2010.0 / 2.0);
    assert_close!(d.aqu_sz, 5.2);
    assert_close!(d.util, 98.0);
}

#[test]
fn cpu_and_sched() {
    // 4.9 fixture, 2 s, 2 CPUs: Δuser 100, Δsystem 40, Δidle 70, Δiowait 8, Δsoftirq 182
    // of 400 jiffies; cpu0 spends 180 of its 200 in softirq.
    let (a, b, _) = pair("linux-4.9-old", &[Probe::Cpu, Probe::Sched], 2.0);
    let s = Sample::between(&a, &b, 0.0, &DiskFilter::default());
    let c = s.cpu.as_ref().unwrap();
    assert_close!(c.total.user, 25.0);
    assert_close!(c.total.system, 10.0);
    assert_close!(c.total.idle, 17.5);
    assert_close!(c.total.iowait, 2.0);
    assert_close!(c.total.softirq, 45.5);
    assert_eq!(c.per_cpu.len(), 2);
    assert_close!(c.per_cpu[0].1.softirq, 90.0);
    let sc = s.sched.unwrap();
    assert_close!(sc.ctxt_per_s, 15000.0);
    assert_close!(sc.intr_per_s, 10000.0);
    assert_close!(sc.procs_running, 5.0);
    assert_close!(sc.procs_blocked, 2.0);
    assert_close!(sc.loadavg_1, 1.02);

    // The real capture: Δuser 236, Δsystem 30, nothing else; Δctxt 1723 in 1.33 s.
    let t = real_interval();
    let (a, b, _) = pair("linux-6.18-kvm", &[Probe::Cpu, Probe::Sched], t);
    let s = Sample::between(&a, &b, 0.0, &DiskFilter::default());
    let c = s.cpu.unwrap();
    assert_close!(c.total.user, 236.0 / 266.0 * 100.0);
    assert_close!(c.total.system, 30.0 / 266.0 * 100.0);
    assert_close!(s.sched.unwrap().ctxt_per_s, 1723.0 / 1.33);
}

#[test]
fn memory_levels_and_paging() {
    let (a, b, _) = pair("linux-4.9-old", &[Probe::Memory], 2.0);
    let m = Sample::between(&a, &b, 0.0, &DiskFilter::default())
        .memory
        .unwrap();
    assert_close!(m.free_kb, 1942912.0);
    assert_close!(m.dirty_kb, 81204.0);
    assert_close!(m.writeback_kb, 512.0);
    assert_close!(m.swap_used_kb, 4096.0);
    assert_close!(m.page_in_kb_per_s, 4000.0);
    assert_close!(m.page_out_kb_per_s, 16000.0);
    assert_close!(m.swap_in_pages_per_s, 0.0);
    assert_close!(m.swap_out_pages_per_s, 5.0);
}

#[test]
fn net_counters_are_matched_by_name_across_kernels() {
    // ListenOverflows is at a different position in 4.9's TcpExt line than in 6.18's.
    let pos = |host: &str| {
        let t = read(dir(host).join("a/net/netstat"));
        let header = t
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>();
        header.iter().position(|h| *h == "ListenOverflows").unwrap()
    };
    assert_ne!(pos("linux-4.9-old"), pos("linux-6.18-kvm"));

    // 4.9, 2 s: ΔListenOverflows 60, ΔListenDrops 60, ΔTCPBacklogDrop 20,
    // ΔOutSegs 20000, ΔRetransSegs 200, ΔEstabResets 4, ΔPassiveOpens 400;
    // softnet Δdropped 0x20, Δtime_squeeze 0x64; eth0 Δrx_bytes 30e6.
    let (a, b, notes) = pair("linux-4.9-old", &[Probe::Net], 2.0);
    assert!(notes.warnings.is_empty(), "{:?}", notes.warnings);
    let n = Sample::between(&a, &b, 0.0, &DiskFilter::default())
        .net
        .unwrap();
    assert_close!(n.get("listen_overflows_per_s"), 30.0);
    assert_close!(n.get("listen_drops_per_s"), 30.0);
    assert_close!(n.get("backlog_drops_per_s"), 10.0);
    assert_close!(n.get("out_segs_per_s"), 10000.0);
    assert_close!(n.get("retrans_segs_per_s"), 100.0);
    assert_close!(n.retrans_pct.unwrap(), 1.0);
    assert_close!(n.get("estab_resets_per_s"), 2.0);
    assert_close!(n.get("passive_opens_per_s"), 200.0);
    assert_close!(n.get("out_rsts_per_s"), 10.0);
    assert_close!(n.get("reasm_fails_per_s"), 0.0);
    assert_close!(n.softnet_dropped_per_s.unwrap(), 16.0);
    assert_close!(n.softnet_time_squeeze_per_s.unwrap(), 50.0);
    let eth0 = n.ifaces.iter().find(|i| i.name == "eth0").unwrap();
    assert_close!(eth0.rx_bytes_per_s, 15e6);
    assert_close!(eth0.tx_packets_per_s, 10000.0);
    assert_eq!(n.counts["TcpExt.ListenOverflows"], 60);

    // 5.4, 1 s: ΔReasmFails 40, ΔRetransSegs 120 of ΔOutSegs 10000.
    let (a, b, _) = pair("linux-5.4-nfs", &[Probe::Net], 1.0);
    let n = Sample::between(&a, &b, 0.0, &DiskFilter::default())
        .net
        .unwrap();
    assert_close!(n.get("reasm_fails_per_s"), 40.0);
    assert_close!(n.retrans_pct.unwrap(), 1.2);

    // The real capture: a newer Ip line (OutTransmits) changes nothing.
    let t = real_interval();
    let (a, b, _) = pair("linux-6.18-kvm", &[Probe::Net], t);
    let n = Sample::between(&a, &b, 0.0, &DiskFilter::default())
        .net
        .unwrap();
    assert_close!(n.get("in_segs_per_s"), 2.0 / t);
    assert_close!(n.get("out_rsts_per_s"), 1.0 / t);
    assert_close!(n.retrans_pct.unwrap(), 0.0);
    assert_close!(n.softnet_dropped_per_s.unwrap(), 0.0);
}

#[test]
fn tcp_states_and_close_wait_owners_on_the_real_capture() {
    let (_, b, notes) = pair("linux-6.18-kvm", &[Probe::Sockets], 1.0);
    assert!(notes.unavailable.is_empty(), "{:?}", notes.unavailable);
    let c = b.sockets.unwrap();
    assert_eq!(c.close_wait(), 4, "3 IPv4 + 1 IPv6");
    assert_eq!(c.established(), 2);
    assert_eq!(c.listen(), 3);
    assert_eq!(c.time_wait(), 38);
    assert_eq!(c.state("fin_wait2"), 4);

    // Owner lookup with the helper's fd links (`ls -l /proc/PID/fd`).
    let stat = process::parse_pid_stat(&read(dir("linux-6.18-kvm").join("proc-pid/stat"))).unwrap();
    let links = read(dir("linux-6.18-kvm").join("proc-pid/fd.txt"));
    let fds: Vec<(i32, u64)> = links
        .lines()
        .filter_map(|l| sockets::socket_inode(l.rsplit(' ').next()?))
        .map(|inode| (stat.pid, inode))
        .collect();
    let mut all =
        sockets::parse_tcp("tcp", &read(dir("linux-6.18-kvm").join("b/net/tcp"))).unwrap();
    all.extend(
        sockets::parse_tcp("tcp6", &read(dir("linux-6.18-kvm").join("b/net/tcp6"))).unwrap(),
    );
    let (mut counts, cw) = sockets::count_states(&all);
    sockets::attribute(&mut counts, &cw, fds);
    assert_eq!(counts.close_wait_by_pid.get(&stat.pid), Some(&4));
    assert_eq!(counts.close_wait_unattributed, 0);
}

#[test]
fn host_without_ipv6_or_nfs_is_not_an_error() {
    let (a, b, notes) = pair("linux-4.9-old", &[Probe::Sockets, Probe::Nfs], 1.0);
    assert!(notes.warnings.is_empty(), "{:?}", notes.warnings);
    for f in [
        "net/tcp6",
        "net/rpc/nfs",
        "net/rpc/nfsd",
        "fs/nfsd/pool_stats",
    ] {
        assert!(
            notes.unavailable.iter().any(|u| u.contains(f)),
            "{f} not noted: {:?}",
            notes.unavailable
        );
    }
    let s = Sample::between(&a, &b, 0.0, &DiskFilter::default());
    assert_eq!(s.nfs, None);
    let c = s.sockets.unwrap();
    assert_eq!(
        (c.listen(), c.established(), c.close_wait(), c.time_wait()),
        (2, 3, 1, 1)
    );
    // The real host has no NFS either.
    let (_, _, notes) = pair("linux-6.18-kvm", &[Probe::Nfs], 1.0);
    assert!(notes.warnings.is_empty());
    assert_eq!(notes.unavailable.len(), 3);
}

#[test]
fn nfs_client_and_server() {
    // 1 s: client Δcalls 1000, Δretrans 50, Δauthrefresh 1000; server Δcalls 2000,
    // Δbadcalls 2, 16 threads; pools Δarrived 2000, Δenqueued 500, Δwoken 1500, Δtimedout 3.
    let (a, b, notes) = pair("linux-5.4-nfs", &[Probe::Nfs], 1.0);
    assert!(
        notes.warnings.is_empty() && notes.unavailable.is_empty(),
        "{notes:?}"
    );
    let n = Sample::between(&a, &b, 0.0, &DiskFilter::default())
        .nfs
        .unwrap();
    let c = n.client.unwrap();
    assert_close!(c.calls_per_s, 1000.0);
    assert_close!(c.retrans_per_s, 50.0);
    assert_close!(c.retrans_pct, 5.0);
    assert_close!(c.authrefresh_per_s, 1000.0);
    let s = n.server.unwrap();
    assert_close!(s.calls_per_s, 2000.0);
    assert_close!(s.badcalls_per_s, 2.0);
    assert_eq!(s.threads, Some(16.0));
    assert_eq!(s.packets_arrived_per_s, Some(2000.0));
    assert_eq!(s.sockets_enqueued_per_s, Some(500.0));
    assert_eq!(s.enqueued_pct, Some(25.0));
    assert_eq!(s.threads_woken_per_s, Some(1500.0));
    assert_eq!(s.threads_timedout_per_s, Some(3.0));
}

#[test]
fn process_files_of_the_real_capture() {
    let s = process::parse_pid_stat(&read(dir("linux-6.18-kvm").join("proc-pid/stat"))).unwrap();
    assert_eq!(
        (s.pid, s.comm.as_str(), s.state, s.ppid),
        (30579, "python3", 'S', 30575)
    );
    assert_eq!((s.utime, s.stime, s.cutime, s.cstime), (4, 1, 4, 1));
    assert_eq!((s.num_threads, s.starttime), (1, 254740));
    let st =
        process::parse_pid_status(&read(dir("linux-6.18-kvm").join("proc-pid/status"))).unwrap();
    assert_eq!(st.vm_rss_kb, 14512);
    assert_eq!(
        (st.voluntary_ctxt_switches, st.nonvoluntary_ctxt_switches),
        (43, 14)
    );
}

#[test]
fn series_names_from_a_fixture_sample() {
    let probes = [
        Probe::Cpu,
        Probe::Sched,
        Probe::Memory,
        Probe::Disk,
        Probe::Net,
        Probe::Sockets,
        Probe::Nfs,
    ];
    let (a, b, notes) = pair("linux-5.4-nfs", &probes, 1.0);
    assert!(notes.warnings.is_empty(), "{:?}", notes.warnings);
    let s = Sample::between(&a, &b, 0.0, &DiskFilter::default());
    let names: Vec<String> = s.points().into_iter().map(|p| p.name).collect();
    for want in [
        "cpu.softirq_pct",
        "cpu.cpu1.idle_pct",
        "sched.ctxt_per_s",
        "sched.procs_blocked",
        "memory.dirty_kb",
        "memory.page_out_kb_per_s",
        "disk.nvme0n1.aqu_sz",
        "disk.nvme0n1.wrqm_s",
        "net.retrans_pct",
        "net.reasm_fails_per_s",
        "net.listen_overflows_per_s",
        "net.dev.ens3.rx_bytes_per_s",
        "sockets.close_wait",
        "nfs.client.retrans_pct",
        "nfs.server.enqueued_pct",
    ] {
        assert!(names.iter().any(|n| n == want), "no series {want}");
    }
    // Names are unique.
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len());
}
