//! The noise check: before a run, a short fixed CPU loop is timed a few times; when
//! its coefficient of variation is high, the machine is busy or throttling and small
//! differences between configs will drown. Costs about 0.2 s.
//!
//! The verdict is a value ([`Noisy`]), told through the runner's observer, not a
//! sentence: lab does not know how the command at hand pins CPUs (`cpus = "1"` in a
//! file, `--cpus 1` for `perflab bench` and `suite`), so whoever shows it says.

use std::hint::black_box;
use std::time::Instant;

/// The check found the machine noisy: the warning as data, so that whoever shows it
/// can name the way to pin CPUs that its command has (a file's `cpus`, a flag).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noisy {
    /// The loop's coefficient of variation.
    pub cv: f64,
    /// The threshold it exceeded.
    pub limit: f64,
}

impl Noisy {
    /// The warning; `pin` says how to pin CPUs where it is shown (`cpus = "1"` in an
    /// experiment file, `--cpus 1` on a command line).
    pub fn message(&self, pin: &str) -> String {
        format!(
            "this machine is noisy right now: a fixed CPU loop varied by {:.1}% (CV) between runs (> {:.0}%); widen repetitions, pin CPUs ({pin}) or stop other work",
            self.cv * 100.0,
            self.limit * 100.0
        )
    }
}

/// CV above which the run is warned about.
pub const THRESHOLD: f64 = 0.03;

/// The threshold in force: [`THRESHOLD`], or `PERFLAB_NOISE_THRESHOLD` (a fraction,
/// e.g. `0.05`) for machines known to be noisier.
pub fn threshold() -> f64 {
    std::env::var("PERFLAB_NOISE_THRESHOLD")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .unwrap_or(THRESHOLD)
}

fn spin(iterations: u64) -> u64 {
    // xorshift64: cheap, branch-free, not optimisable away through black_box.
    let mut x = black_box(0x2545_F491_4F6C_DD1D_u64);
    for _ in 0..iterations {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    black_box(x)
}

/// Coefficient of variation of 8 timings of a ~20 ms loop (the first, warming, dropped).
pub fn measure() -> f64 {
    let iterations = 4_000_000;
    let mut times = Vec::with_capacity(8);
    spin(iterations);
    for _ in 0..8 {
        let t = Instant::now();
        spin(iterations);
        times.push(t.elapsed().as_secs_f64());
    }
    match perflab_stats::summarize(&times, 0.95) {
        Ok(s) if s.cv.is_finite() => s.cv,
        _ => 0.0,
    }
}
