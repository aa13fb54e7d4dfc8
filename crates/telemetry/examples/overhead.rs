//! What sampling costs: CPU time of the sampler with every probe, per sample and as a
//! share of one core at a 1 s interval (the target is < 1 %).
//!
//! ```text
//! cargo run --release -p perflab-telemetry --example overhead [SECONDS]
//! ```
//!
//! Two measurements, both from getrusage(2) of this process, whose main thread only
//! sleeps meanwhile:
//! 1. back to back: 200 samples as fast as possible → CPU per sample (precise);
//! 2. the real thing: a [`Monitor`] at 1 s for SECONDS (default 10) → CPU per second.
//!
//! The `process` probe follows this process, so the fd walk and the tree code run too;
//! the `sockets` probe's CLOSE_WAIT owner walk only runs when the host has CLOSE_WAIT
//! sockets (this example opens none of its own).

use std::time::{Duration, Instant};

use perflab_telemetry::{Monitor, MonitorSpec, Probe, Sampler, SamplerSpec};

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let me = std::process::id() as i32;

    let mut sampler = Sampler::new(SamplerSpec {
        probes: Probe::ALL.to_vec(),
        pid: Some(me),
        ..SamplerSpec::system()
    })
    .expect("sampler");
    let n = 200;
    let (c0, t0) = (cpu_seconds(), Instant::now());
    for _ in 0..n {
        std::hint::black_box(sampler.sample());
    }
    let per_sample = (cpu_seconds() - c0) / n as f64;
    let wall = t0.elapsed().as_secs_f64() / n as f64;
    println!(
        "back to back: {:.3} ms CPU per sample ({:.3} ms wall), all {} probes",
        per_sample * 1e3,
        wall * 1e3,
        Probe::ALL.len()
    );
    println!(
        "  => at a 1 s interval: {:.3} % of one core",
        per_sample * 100.0
    );

    for p in Probe::ALL {
        let mut one = Sampler::new(SamplerSpec {
            probes: vec![p],
            pid: Some(me),
            ..SamplerSpec::system()
        })
        .expect("sampler");
        let c0 = cpu_seconds();
        for _ in 0..50 {
            std::hint::black_box(one.sample());
        }
        println!(
            "  {:8} {:.3} ms CPU per sample",
            p.name(),
            (cpu_seconds() - c0) / 50.0 * 1e3
        );
    }

    let mut spec = MonitorSpec::new(Duration::from_secs(1), Probe::ALL.to_vec());
    spec.pid = Some(me);
    let c0 = cpu_seconds();
    let t0 = Instant::now();
    let handle = Monitor::start(spec).expect("monitor");
    std::thread::sleep(Duration::from_secs(secs));
    let rec = handle.stop();
    let cpu = cpu_seconds() - c0;
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "monitor at 1 s for {wall:.1} s: {} samples, {} series, {} summaries; {:.1} ms CPU = {:.3} % of one core",
        rec.samples,
        rec.series.len(),
        rec.summaries.len(),
        cpu * 1e3,
        cpu / wall * 100.0
    );
    for w in rec.warnings.iter().chain(&rec.unavailable) {
        println!("  note: {w}");
    }
}
