//! The monitor on the live system: a short trial with every probe, following a shell
//! whose subshells burn CPU and are reaped by it, checked against the kernel's own
//! accounting of that shell (wait4's rusage).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use perflab_telemetry::{Monitor, MonitorSpec, Probe};

fn wait_for(path: &Path, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn monitor_follows_a_process_tree_and_summarizes() {
    let dir = std::env::temp_dir().join(format!("perflab-telemetry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let done = dir.join("done");
    let _ = std::fs::remove_file(&done);
    // Three subshells that burn CPU, reaped by the shell; then the shell signals and
    // waits for stdin to close so the monitor's last sample still sees it.
    let script = format!(
        "for k in 1 2 3; do (i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done); done; : > '{}'; read _",
        done.display()
    );
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;

    let mut spec = MonitorSpec::new(Duration::from_millis(100), Probe::ALL.to_vec());
    spec.pid = Some(pid);
    let handle = Monitor::start(spec).unwrap();
    wait_for(&done, Duration::from_secs(60));
    let rec = handle.stop();

    drop(child.stdin.take());
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: plain wait4 on our own child, with valid out-pointers.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid);
    let _ = child.try_wait();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let kernel_cpu_s = tv(ru.ru_utime) + tv(ru.ru_stime);

    eprintln!(
        "process.cpu_s vs rusage: {:?} {kernel_cpu_s}",
        rec.summary("process.cpu_s")
    );
    assert!(rec.samples >= 1, "{rec:?}");
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    let cpu_s = rec.summary("process.cpu_s").expect("process.cpu_s").value;
    // /proc counts whole clock ticks; rusage is exact. Allow a few ticks and 10 %.
    assert!(
        (cpu_s - kernel_cpu_s).abs() <= 0.05 + 0.1 * kernel_cpu_s,
        "process.cpu_s {cpu_s} vs rusage {kernel_cpu_s}"
    );
    let user = rec.summary("process.user_s").unwrap().value;
    let sys = rec.summary("process.sys_s").unwrap().value;
    assert!((user + sys - cpu_s).abs() < 1e-9);
    assert!(
        rec.summary("process.procs_max").unwrap().value >= 2.0,
        "subshells seen"
    );

    for name in [
        "cpu.softirq_pct",
        "cpu.idle_pct",
        "cpu.busiest_softirq_pct",
        "sched.ctxt_per_s",
        "sched.ctxt_per_s_max",
        "sched.procs_running",
        "memory.dirty_kb_max",
        "net.retrans_pct",
        "net.listen_overflows",
        "sockets.close_wait_max",
        "sockets.process_close_wait_max",
        "process.cpu_pct",
        "process.rss_kb_max",
    ] {
        let m = rec
            .summary(name)
            .unwrap_or_else(|| panic!("no summary {name}"));
        assert!(m.value.is_finite(), "{name} = {}", m.value);
    }
    assert!(rec
        .summaries
        .iter()
        .any(|m| m.name.starts_with("disk.") && m.name.ends_with(".aqu_sz_max")));
    let total: f64 = [
        "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
    ]
    .iter()
    .map(|k| rec.summary(&format!("cpu.{k}_pct")).unwrap().value)
    .sum();
    assert!((total - 100.0).abs() < 1e-6, "cpu shares add up to {total}");

    // Series: one point per sample, times increasing, within the trial.
    let s = rec.series("sched.ctxt_per_s").unwrap();
    assert_eq!(s.points.len(), rec.samples);
    assert!(s.points.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(s.points.last().unwrap().0 <= rec.duration_s + 1e-3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_trial_shorter_than_one_interval_still_has_a_sample() {
    let handle =
        Monitor::start(MonitorSpec::new(Duration::from_secs(60), vec![Probe::Cpu])).unwrap();
    let started = Instant::now();
    let rec = handle.stop();
    // Far below the 60 s interval, with room for a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "stop does not wait for the interval"
    );
    assert_eq!(rec.samples, 1);
    assert!(rec.summary("cpu.user_pct").is_some());
}
