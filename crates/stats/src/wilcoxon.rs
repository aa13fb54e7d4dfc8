//! Wilcoxon's signed-rank test, two-sided, for paired differences.
//!
//! Reported beside the paired t interval because it needs no normality of the
//! per-round log-ratios. Conventions follow `scipy.stats.wilcoxon` defaults
//! (`zero_method="wilcox"`, no continuity correction): zero differences are dropped;
//! with no ties among the remaining |dᵢ| and at most [`EXACT_MAX`] of them, the
//! p-value comes from the exact null distribution of W⁺ (each of the 2ⁿ sign
//! patterns equally likely, counted by dynamic programming); otherwise from the
//! normal approximation with average ranks and the tie-corrected variance
//! n(n+1)(2n+1)/24 − Σ(t³ − t)/48. One deliberate difference: where zeros were
//! dropped, recent scipy switches to the normal approximation; here the remaining
//! untied pairs keep their exact distribution (timings are rarely exactly equal, and
//! the exact p is the better answer for the few pairs a run has).
//!
//! The exact two-sided p-value is at least 2/2ⁿ, so with 5 pairs or fewer it
//! can never fall below 0.05: a paired comparison of 5 rounds has its t interval
//! but no rank test that could reject.

use serde::Serialize;

use crate::mwu::average_ranks;
use crate::tdist::normal_sf;

/// Largest number of non-zero differences for the exact distribution (scipy's cut).
pub const EXACT_MAX: usize = 50;

/// How the signed-rank p-value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WilcoxonMethod {
    Exact,
    Asymptotic,
}

/// Result of a two-sided Wilcoxon signed-rank test of "median difference 0".
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WilcoxonResult {
    /// min(W⁺, W⁻), as scipy reports for the two-sided test.
    pub statistic: f64,
    /// Two-sided p-value (1 when every difference is zero).
    pub p: f64,
    /// Differences left after dropping zeros.
    pub n_nonzero: usize,
    pub method: WilcoxonMethod,
}

/// Two-sided signed-rank test of the differences `d` (finite values assumed).
pub fn wilcoxon_signed_rank(d: &[f64]) -> WilcoxonResult {
    let nz: Vec<f64> = d.iter().copied().filter(|&x| x != 0.0).collect();
    let n = nz.len();
    if n == 0 {
        return WilcoxonResult {
            statistic: 0.0,
            p: 1.0,
            n_nonzero: 0,
            method: WilcoxonMethod::Exact,
        };
    }
    let abs: Vec<f64> = nz.iter().map(|x| x.abs()).collect();
    let (ranks, ties) = average_ranks(&abs);
    let w_plus: f64 = nz
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| **x > 0.0)
        .map(|(_, r)| r)
        .sum();
    let total = (n * (n + 1)) as f64 / 2.0;
    let statistic = w_plus.min(total - w_plus);
    let has_ties = ties.iter().any(|&t| t > 1);
    if n <= EXACT_MAX && !has_ties {
        let p = (2.0 * exact_cdf(statistic.round() as usize, n)).min(1.0);
        return WilcoxonResult {
            statistic,
            p,
            n_nonzero: n,
            method: WilcoxonMethod::Exact,
        };
    }
    let nf = n as f64;
    let tie_term: f64 = ties.iter().map(|&t| (t as f64).powi(3) - t as f64).sum();
    let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term / 48.0;
    let z = (statistic - total / 2.0) / var.sqrt();
    WilcoxonResult {
        statistic,
        p: (2.0 * normal_sf(z.abs())).min(1.0),
        n_nonzero: n,
        method: WilcoxonMethod::Asymptotic,
    }
}

/// P(W⁺ ≤ k) under H0 for n non-zero, untied differences: the number of subsets
/// of {1..n} with sum ≤ k, over 2ⁿ (exact in f64 for n ≤ 50: counts < 2⁵³).
fn exact_cdf(k: usize, n: usize) -> f64 {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0u64; max + 1];
    counts[0] = 1;
    for r in 1..=n {
        for s in (r..=max).rev() {
            counts[s] += counts[s - r];
        }
    }
    let below: u64 = counts[..=k.min(max)].iter().sum();
    below as f64 / 2f64.powi(n as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_distribution_is_symmetric_and_sums_to_one() {
        for n in [1usize, 5, 12, 50] {
            let max = n * (n + 1) / 2;
            assert!((exact_cdf(max, n) - 1.0).abs() < 1e-15);
            let k = max / 3;
            let sum = exact_cdf(k, n) + exact_cdf(max - k - 1, n);
            assert!((sum - 1.0).abs() < 1e-12, "{n}");
        }
    }

    #[test]
    fn cannot_reach_five_percent_below_six_pairs() {
        // every difference the same sign: the most extreme outcome there is
        for n in 1..=5 {
            let d: Vec<f64> = (1..=n).map(|i| i as f64).collect();
            let r = wilcoxon_signed_rank(&d);
            assert!(r.p >= 0.0625 - 1e-15, "n = {n}: p = {}", r.p);
        }
        let six: Vec<f64> = (1..=6).map(|i| i as f64).collect();
        let r = wilcoxon_signed_rank(&six);
        assert!((r.p - 2.0 / 64.0).abs() < 1e-15, "{}", r.p);
        assert!(r.p < 0.05);
    }

    #[test]
    fn zeros_are_dropped_and_all_zero_gives_one() {
        assert_eq!(wilcoxon_signed_rank(&[0.0, 0.0]).p, 1.0);
        let with = wilcoxon_signed_rank(&[0.0, 1.0, 2.0, -3.0]);
        let without = wilcoxon_signed_rank(&[1.0, 2.0, -3.0]);
        assert_eq!(with, without);
    }
}
