//! Simulations of the paired verdict on a drifting, noisy machine (fixed seeds).
//!
//! What issue 29 asks the paired analysis to show: on A/A data (no true effect) with
//! drift and noise its false-positive rate is the nominal 5 %, and under linear
//! drift its interval is at most half as wide as Welch's on the same trials. The
//! machine is modelled on the log scale: value = exp(drift(t) + noise), t the trial's
//! position in time; rounds of two configs whose order alternates (balanced).
//! Sizes are small (10 rounds per run) so the tests stay fast in a debug build.

use crate::compare::{compare_rounds, Basis, CompareOptions, Verdict};
use crate::rng::SeededRng;
use crate::Better;

const ROUNDS: usize = 10;

/// One run of `ROUNDS` rounds: (base, cand) values, base first in even rounds.
/// `drift(slot)` is the log-scale drift at time slot; `noise` the sd of each trial.
fn run(
    rng: &mut SeededRng,
    effect: f64,
    noise: f64,
    drift: &dyn Fn(usize) -> f64,
) -> (Vec<f64>, Vec<f64>) {
    let (mut b, mut c) = (Vec::new(), Vec::new());
    for r in 0..ROUNDS {
        let (sb, sc) = if r % 2 == 0 {
            (2 * r, 2 * r + 1)
        } else {
            (2 * r + 1, 2 * r)
        };
        b.push((drift(sb) + noise * rng.normal()).exp());
        c.push((effect + drift(sc) + noise * rng.normal()).exp());
    }
    (b, c)
}

#[test]
fn paired_a_a_false_positive_rate_is_five_percent_under_drift() {
    let mut rng = SeededRng::new(29);
    let opts = CompareOptions::default();
    let runs = 10_000;
    let mut positives = 0;
    for i in 0..runs {
        // A random walk plus a linear trend, different in every run.
        let slope = 0.0003 * (i % 7) as f64;
        let mut walk = [0.0f64; 2 * ROUNDS];
        for t in 1..walk.len() {
            walk[t] = walk[t - 1] + 0.002 * rng.normal();
        }
        // Drift moves the level by up to 4 % over the run, slowly compared with a round.
        let drift = move |t: usize| slope * t as f64 + walk[t];
        let (b, c) = run(&mut rng, 0.0, 0.01, &drift);
        let cmp = compare_rounds(&b, &c, Some((&b, &c)), Better::Lower, &opts).unwrap();
        assert_eq!(cmp.basis, Basis::Paired);
        positives += usize::from(matches!(cmp.verdict, Verdict::Better | Verdict::Worse));
    }
    let rate = positives as f64 / runs as f64;
    assert!((0.04..=0.06).contains(&rate), "false-positive rate {rate}");
}

#[test]
fn under_linear_drift_the_paired_interval_is_at_most_half_welchs() {
    let mut rng = SeededRng::new(31);
    let opts = CompareOptions::default();
    let (mut paired, mut welch) = (0.0, 0.0);
    for _ in 0..300 {
        let (b, c) = run(&mut rng, 0.03, 0.005, &|t| 0.004 * t as f64);
        let cmp = compare_rounds(&b, &c, Some((&b, &c)), Better::Lower, &opts).unwrap();
        let p = cmp.paired.unwrap();
        paired += p.half_width_log();
        welch += 0.5 * (cmp.ratio_ci_high.ln() - cmp.ratio_ci_low.ln());
    }
    assert!(paired <= 0.5 * welch, "paired {paired} vs Welch {welch}");
}
