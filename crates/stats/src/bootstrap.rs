//! Percentile bootstrap intervals for a ratio of means and a ratio of ratios.
//!
//! Used where the normal-theory interval does not exist (Fieller unbounded, g ≥ 1)
//! and beside the delta-method ratio-of-ratios interval as a check that needs no
//! normality. Each group is resampled independently with replacement (a stratified
//! bootstrap: the group sizes stay fixed), the statistic is recomputed, and the
//! interval is the (1 ± c)/2 percentiles of the replicates (Efron & Tibshirani,
//! *An Introduction to the Bootstrap*, 1993, ch. 13), interpolated as numpy's
//! default quantile. The generator is seeded, so results are reproducible.

use crate::descriptive::{quantile_sorted, sorted};
use crate::rng::SeededRng;

/// Number of resamples used by `compare` and `ratio_of_ratios`.
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;

/// Mean of a resample of `data` drawn with replacement.
fn resampled_mean(data: &[f64], rng: &mut SeededRng) -> f64 {
    let n = data.len();
    (0..n).map(|_| data[rng.index(n)]).sum::<f64>() / n as f64
}

/// Percentile interval of bootstrap replicates of `statistic(means of resampled groups)`.
/// NaN when a group is empty or `resamples` is 0.
pub(crate) fn percentile_ci(
    groups: &[&[f64]],
    statistic: impl Fn(&[f64]) -> f64,
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> (f64, f64) {
    if resamples == 0 || groups.iter().any(|g| g.is_empty()) {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = SeededRng::new(seed);
    let mut means = vec![0.0; groups.len()];
    let mut reps = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for (m, g) in means.iter_mut().zip(groups) {
            *m = resampled_mean(g, &mut rng);
        }
        reps.push(statistic(&means));
    }
    let reps = sorted(&reps);
    let tail = 0.5 * (1.0 - confidence);
    (
        quantile_sorted(&reps, tail),
        quantile_sorted(&reps, 1.0 - tail),
    )
}

/// Percentile bootstrap interval for mean(candidate)/mean(baseline).
///
/// Resamples both groups independently `resamples` times from a ChaCha8 stream
/// seeded with `seed`. NaN bounds if a sample is empty; a replicate whose baseline
/// mean is 0 counts as ±∞ (it sorts to the end, as it should).
pub fn bootstrap_ratio_ci(
    baseline: &[f64],
    candidate: &[f64],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> (f64, f64) {
    percentile_ci(
        &[baseline, candidate],
        |m| m[1] / m[0],
        confidence,
        resamples,
        seed,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_interval() {
        let b = [10.0, 11.0, 9.5, 10.2, 10.8];
        let c = [12.0, 12.5, 11.0, 13.0, 12.2];
        let one = bootstrap_ratio_ci(&b, &c, 0.95, 2000, 7);
        assert_eq!(one, bootstrap_ratio_ci(&b, &c, 0.95, 2000, 7));
        assert_ne!(one, bootstrap_ratio_ci(&b, &c, 0.95, 2000, 8));
        assert!(one.0 < 1.2 && 1.2 < one.1, "{one:?}");
    }

    #[test]
    fn empty_sample_gives_nan() {
        let (lo, hi) = bootstrap_ratio_ci(&[], &[1.0], 0.95, 100, 1);
        assert!(lo.is_nan() && hi.is_nan());
    }
}
