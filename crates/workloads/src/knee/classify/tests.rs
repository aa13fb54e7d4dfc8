//! Every rule from recorded facts: counters and PSI values as a step records them
//! (this machine has no sch_netem, no swap and cgroups v1, so retransmits, memory and
//! disk can only be planted here).

use super::*;
use crate::knee::facts::{DiskFacts, GeneratorFacts, PsiShares, ServiceFacts, SoftirqCpu};

/// A quiet step at 24,000 req/s against a local service on :8080: nothing ran out.
fn quiet() -> StepFacts {
    StepFacts {
        rate: 24_000.0,
        achieved: 23_900.0,
        requests: 24_000,
        wall_s: 1.0,
        passed: Some(false),
        generator: GeneratorFacts {
            busy: 0.30,
            wait: 0.05,
            late: 0,
        },
        port: Some(8080),
        local: true,
        service: Some(ServiceFacts {
            pids: vec![42],
            allowed_cpus: 2,
            on_cpu: 0.6,
            wait: 0.02,
            busiest_thread: 0.5,
            cpu_quota: None,
            throttled_periods: None,
        }),
        pressure: Some(PsiShares {
            cpu_some: 0.35,
            memory_some: 0.0,
            memory_full: 0.0,
            io_some: 0.01,
            io_full: 0.0,
        }),
        pressure_unavailable: None,
        softirq: Some(SoftirqCpu {
            cpu: 1,
            softirq: 0.08,
            busy: 0.7,
        }),
        listen_overflows: Some(0),
        listen_drops: Some(0),
        retrans_segs: Some(2),
        out_segs: Some(50_000),
        disk: Some(DiskFacts {
            name: "vda".into(),
            util: 0.05,
            await_ms: 0.4,
        }),
        swap_in: Some(0),
        swap_out: Some(0),
    }
}

fn named(f: &StepFacts) -> (LimitResource, String) {
    let l = classify(f);
    (l.resource, l.evidence)
}

#[test]
fn a_quiet_step_is_unknown_and_says_what_was_measured() {
    let (r, e) = named(&quiet());
    assert_eq!(r, LimitResource::Unknown, "{e}");
    assert!(
        e.contains("nothing measured ran out at 24,000 req/s"),
        "{e}"
    );
    assert!(e.contains("service 0.62 of 2 allowed CPUs"), "{e}");
}

#[test]
fn a_busy_generator_comes_first() {
    let mut f = quiet();
    f.generator.busy = 0.95;
    // Even with everything else out too: the instrument is blamed first.
    f.service.as_mut().unwrap().on_cpu = 2.0;
    f.listen_overflows = Some(5_000);
    assert_eq!(named(&f).0, LimitResource::Generator);
}

#[test]
fn a_generator_that_shares_its_cpu_is_saturated_by_waiting() {
    let mut f = quiet();
    f.generator = GeneratorFacts {
        busy: 0.48,
        wait: 0.47,
        late: 1_234,
    };
    let (r, e) = named(&f);
    assert_eq!(r, LimitResource::Generator);
    assert!(
        e.contains("on a CPU 48 % and waiting for one 47 %") && e.contains("1,234 sends late"),
        "{e}"
    );
    f.generator.wait = 0.3;
    assert_ne!(named(&f).0, LimitResource::Generator);
}

#[test]
fn a_service_at_its_cpuset_is_service_cpu() {
    let mut f = quiet();
    f.rate = 23_100.0;
    let s = f.service.as_mut().unwrap();
    s.allowed_cpus = 1;
    s.on_cpu = 0.96;
    s.wait = 0.02;
    let (r, e) = named(&f);
    assert_eq!(r, LimitResource::ServiceCpu);
    assert_eq!(e, "service used 0.98 of its 1 allowed CPU at 23,100 req/s");
    // Under the mark: not.
    f.service.as_mut().unwrap().on_cpu = 0.8;
    assert_ne!(named(&f).0, LimitResource::ServiceCpu);
}

#[test]
fn a_service_at_its_cgroup_quota_is_service_cpu_with_the_quota_named() {
    // Capped at 0.15 CPU on one allowed CPU: on a CPU 0.145, throttled the rest of the
    // time it was runnable (counted by the scheduler as waiting).
    let mut f = quiet();
    f.rate = 15_200.0;
    let s = f.service.as_mut().unwrap();
    (s.allowed_cpus, s.on_cpu, s.wait, s.busiest_thread) = (1, 0.145, 0.84, 0.985);
    s.cpu_quota = Some(0.15);
    s.throttled_periods = Some((190, 200));
    let (r, e) = named(&f);
    assert_eq!(r, LimitResource::ServiceCpu);
    assert_eq!(
        e,
        "service used 0.14 CPU of its cgroup CPU quota of 0.15 at 15,200 req/s, \
         throttled in 190 of 200 periods"
    );
    // Without the quota the same figures read as waiting for a CPU.
    let mut g = f.clone();
    g.service.as_mut().unwrap().cpu_quota = None;
    assert!(named(&g).1.contains("waiting for a CPU"), "{}", named(&g).1);
    // A quota of more CPUs than the service may use is not its limit; nor one it is
    // far from using (on a CPU 0.05 of 0.15: the other rules decide).
    let s = f.service.as_mut().unwrap();
    (s.cpu_quota, s.wait, s.busiest_thread) = (Some(4.0), 0.0, 0.2);
    assert_eq!(named(&f).0, LimitResource::Unknown);
    let s = f.service.as_mut().unwrap();
    (s.cpu_quota, s.on_cpu) = (Some(0.15), 0.05);
    assert_eq!(named(&f).0, LimitResource::Unknown);
    assert!(
        named(&f).1.contains("cgroup CPU quota 0.15"),
        "{}",
        named(&f).1
    );
}

#[test]
fn a_one_threaded_service_on_a_bigger_cpuset_is_service_cpu() {
    let mut f = quiet();
    let s = f.service.as_mut().unwrap();
    s.allowed_cpus = 8;
    s.on_cpu = 1.0;
    s.busiest_thread = 0.97;
    let (r, e) = named(&f);
    assert_eq!(r, LimitResource::ServiceCpu);
    assert!(e.contains("busiest thread") && e.contains("97 %"), "{e}");
}

#[test]
fn a_service_crowded_out_is_cpu_pressure_from_its_run_delay() {
    let mut f = quiet();
    let s = f.service.as_mut().unwrap();
    s.on_cpu = 0.7;
    s.wait = 0.4;
    let (r, e) = named(&f);
    assert_eq!(r, LimitResource::CpuPressure, "{e}");
    assert!(
        e.contains("36 % of their runnable time (0.40 CPUs' worth"),
        "{e}"
    );
    assert!(e.contains("PSI cpu some 35 %"), "{e}");
    // One thread of it, runnable most of the step, queued half of that.
    let s = f.service.as_mut().unwrap();
    s.on_cpu = 0.3;
    s.wait = 0.3;
    s.busiest_thread = 0.6;
    assert_eq!(named(&f).0, LimitResource::CpuPressure);
    // A mostly idle service whose wake-ups queue on a busy host (the slow acceptor of
    // the listen-queue test, recorded): not short of CPU.
    let s = f.service.as_mut().unwrap();
    s.on_cpu = 0.004;
    s.wait = 0.28;
    s.busiest_thread = 0.2;
    assert_ne!(named(&f).0, LimitResource::CpuPressure);
}

#[test]
fn without_a_service_process_only_a_half_stalled_host_is_cpu_pressure() {
    let mut f = quiet();
    f.service = None;
    assert_ne!(named(&f).0, LimitResource::CpuPressure);
    f.pressure.as_mut().unwrap().cpu_some = 0.62;
    let (r, e) = named(&f);
    assert_eq!(r, LimitResource::CpuPressure);
    assert!(e.contains("62 % of the step (PSI cpu some)"), "{e}");
    // A remote target: this host's PSI says nothing about it.
    f.local = false;
    assert_ne!(named(&f).0, LimitResource::CpuPressure);
}

#[test]
fn listen_queue_overflows_name_the_port() {
    let mut f = quiet();
    f.listen_overflows = Some(1_427);
    let (r, e) = named(&f);
    assert_eq!(r, LimitResource::ListenQueue);
    assert_eq!(
        e,
        "1,427 listen-queue overflows on :8080 during the step at 24,000 req/s"
    );
    // A stray few, or a share under one in a thousand: not.
    f.listen_overflows = Some(9);
    assert_ne!(named(&f).0, LimitResource::ListenQueue);
    f.listen_overflows = Some(20);
    f.requests = 100_000;
    assert_ne!(named(&f).0, LimitResource::ListenQueue);
    // Another host's queue is not counted here.
    f.listen_overflows = Some(5_000);
    f.local = false;
    assert_ne!(named(&f).0, LimitResource::ListenQueue);
}

#[test]
fn a_softirq_bound_cpu() {
    let mut f = quiet();
    f.softirq = Some(SoftirqCpu {
        cpu: 0,
        softirq: 0.45,
        busy: 0.98,
    });
    let (r, e) = named(&f);
    assert_eq!(r, LimitResource::Softirq);
    assert!(
        e.starts_with("CPU 0 spent 45 % of the step in softirq (98 % busy)"),
        "{e}"
    );
    f.softirq.as_mut().unwrap().busy = 0.7;
    assert_ne!(named(&f).0, LimitResource::Softirq);
}

#[test]
fn retransmits_from_recorded_counters() {
    let mut f = quiet();
    f.retrans_segs = Some(1_234);
    f.out_segs = Some(53_000);
    let (r, e) = named(&f);
    assert_eq!(r, LimitResource::Retransmits);
    assert!(
        e.contains("1,234 TCP segments retransmitted (2.3 % of 53,000 sent)"),
        "{e}"
    );
    f.retrans_segs = Some(400);
    assert_ne!(named(&f).0, LimitResource::Retransmits);
}

#[test]
fn disk_from_utilisation_or_io_stall() {
    let mut f = quiet();
    f.disk = Some(DiskFacts {
        name: "vda".into(),
        util: 0.97,
        await_ms: 12.34,
    });
    let (r, e) = named(&f);
    assert_eq!(r, LimitResource::Disk);
    assert!(
        e.contains("disk vda busy 97 % of the step (await 12.3 ms)"),
        "{e}"
    );
    f.disk.as_mut().unwrap().util = 0.3;
    assert_ne!(named(&f).0, LimitResource::Disk);
    f.pressure.as_mut().unwrap().io_full = 0.14;
    let (r, e) = named(&f);
    assert_eq!(r, LimitResource::Disk);
    assert!(e.contains("PSI io full 14 %"), "{e}");
}

#[test]
fn memory_from_swapping_or_memory_stall() {
    let mut f = quiet();
    f.swap_in = Some(1_200);
    f.swap_out = Some(3_400);
    let (r, e) = named(&f);
    assert_eq!(r, LimitResource::Memory);
    assert!(e.contains("1,200 pages swapped in and 3,400 out"), "{e}");
    f.swap_in = Some(10);
    f.swap_out = Some(20);
    assert_ne!(named(&f).0, LimitResource::Memory);
    f.pressure.as_mut().unwrap().memory_some = 0.23;
    let (r, e) = named(&f);
    assert_eq!(r, LimitResource::Memory);
    assert!(e.contains("PSI memory some 23 %"), "{e}");
}

#[test]
fn missing_figures_never_make_a_rule_hold() {
    let mut f = quiet();
    f.service = None;
    f.pressure = None;
    f.pressure_unavailable = Some("pressure: /proc/pressure/cpu not present".into());
    f.softirq = None;
    f.listen_overflows = None;
    f.retrans_segs = None;
    f.disk = None;
    f.swap_in = None;
    f.swap_out = None;
    let (r, e) = named(&f);
    assert_eq!(r, LimitResource::Unknown);
    assert!(e.contains("no service process found"), "{e}");
}

#[test]
fn thousands_separators() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1_427), "1,427");
    assert_eq!(thousands(1_234_567), "1,234,567");
    assert_eq!(rate(87.5), "87.5 req/s");
}
