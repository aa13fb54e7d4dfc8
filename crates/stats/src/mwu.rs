//! Mann–Whitney U test, two-sided, exactly as `scipy.stats.mannwhitneyu` defaults.
//!
//! Reported beside Welch's test because it needs no normality: a difference that
//! only one of the two tests sees is worth a look. scipy's `method="auto"`: the
//! exact null distribution when `min(n1, n2) ≤ 8` (i.e. not both > 8) and there are
//! no ties; otherwise the normal approximation with the tie correction and the
//! continuity correction. U is the statistic of the first sample,
//! U₁ = R₁ − n₁(n₁+1)/2 with average ranks; the p-value uses max(U₁, U₂)
//! (Mann & Whitney 1947; scipy's docs, "Normal approximation and tie correction").
//!
//! The exact distribution is counted in `u128` with the Gaussian-binomial generating
//! function ∏ᵢ (1 − q^{n+i})/(1 − q^i) (Andrews, *The Theory of Partitions*, §3.3),
//! truncated at the degree needed. If C(n₁+n₂, n₁) would not fit in 128 bits
//! (one sample ≤ 8 values, the other tens of thousands) we fall back to the normal
//! approximation, which scipy would not; at those sizes they agree to many digits.

use serde::Serialize;

use crate::error::{check_min_len, StatsError};
use crate::tdist::normal_sf;

/// How the p-value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MwuMethod {
    Exact,
    Asymptotic,
}

/// Result of a two-sided Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MwuResult {
    /// U of the first sample (as scipy returns it).
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    pub method: MwuMethod,
}

/// Average ranks (1-based) of the pooled sample and the sizes of the tie groups
/// (also the signed-rank test's ranks of |d|: `wilcoxon`).
pub(crate) fn average_ranks(pooled: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut order: Vec<usize> = (0..pooled.len()).collect();
    order.sort_by(|&i, &j| pooled[i].total_cmp(&pooled[j]));
    let mut ranks = vec![0.0; pooled.len()];
    let mut ties = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && pooled[order[end]] == pooled[order[start]] {
            end += 1;
        }
        // positions start..end (0-based) share the average rank
        let rank = 0.5 * ((start + 1) + end) as f64;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        ties.push(end - start);
        start = end;
    }
    (ranks, ties)
}

/// C(m + n, m) if it fits in u128.
fn binomial_u128(m: usize, n: usize) -> Option<u128> {
    let mut c: u128 = 1;
    for i in 1..=m as u128 {
        c = c.checked_mul(n as u128 + i)? / i;
    }
    Some(c)
}

/// P(U ≤ k) under H0 for sample sizes m, n (no ties), or None on u128 overflow.
fn exact_cdf(k: usize, m: usize, n: usize) -> Option<f64> {
    let (m, n) = (m.min(n), m.max(n));
    let total = binomial_u128(m, n)?;
    // Coefficients of the Gaussian binomial [m+n choose m]_q up to q^k, built as
    // ∏_{i=1..m} (1 − q^{n+i}) / (1 − q^i). Intermediate coefficients can be
    // negative; wrapping u128 arithmetic is exact modulo 2^128 and the final
    // coefficients are counts ≤ total < 2^128, so the result is exact.
    let mut c = vec![0u128; k + 1];
    c[0] = 1;
    for i in 1..=m {
        let a = n + i;
        for u in (a..=k).rev() {
            c[u] = c[u].wrapping_sub(c[u - a]);
        }
        for u in i..=k {
            c[u] = c[u].wrapping_add(c[u - i]);
        }
    }
    let count = c.iter().fold(0u128, |s, &x| s.wrapping_add(x));
    Some(count as f64 / total as f64)
}

/// Two-sided Mann–Whitney U test with scipy's defaults. Each sample needs ≥ 1 value.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Result<MwuResult, StatsError> {
    check_min_len(a, 1, "the Mann–Whitney U test")?;
    check_min_len(b, 1, "the Mann–Whitney U test")?;
    let (n1, n2) = (a.len(), b.len());
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let (ranks, ties) = average_ranks(&pooled);
    let r1: f64 = ranks[..n1].iter().sum();
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let u1 = r1 - n1f * (n1f + 1.0) / 2.0;
    let u2 = n1f * n2f - u1;
    let u = u1.max(u2);
    let has_ties = ties.iter().any(|&t| t > 1);
    let both_large = n1 > 8 && n2 > 8;
    if !both_large && !has_ties {
        // No ties: U is an integer; P(U ≥ u) = P(U ≤ n1·n2 − u) by symmetry.
        let k = (n1f * n2f - u).round() as usize;
        if let Some(cdf) = exact_cdf(k, n1, n2) {
            return Ok(MwuResult {
                u: u1,
                p: (2.0 * cdf).min(1.0),
                method: MwuMethod::Exact,
            });
        }
    }
    let n = n1f + n2f;
    let tie_term: f64 = ties.iter().map(|&t| (t as f64).powi(3) - t as f64).sum();
    let s = (n1f * n2f / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
    let z = (u - n1f * n2f / 2.0 - 0.5) / s; // −∞ when every value is tied: p = 1
    Ok(MwuResult {
        u: u1,
        p: (2.0 * normal_sf(z)).clamp(0.0, 1.0),
        method: MwuMethod::Asymptotic,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_distribution_sums_to_one_and_is_symmetric() {
        for &(m, n) in &[(1usize, 1usize), (3, 4), (8, 8), (5, 20)] {
            let all = exact_cdf(m * n, m, n).unwrap();
            assert!((all - 1.0).abs() < 1e-15, "{m} {n}");
            // P(U ≤ k) + P(U ≤ mn − k − 1) = 1
            let k = m * n / 3;
            let sum = exact_cdf(k, m, n).unwrap() + exact_cdf(m * n - k - 1, m, n).unwrap();
            assert!((sum - 1.0).abs() < 1e-14);
        }
        assert!(exact_cdf(3, 8, 1_000_000).is_none());
    }

    #[test]
    fn ranks_average_over_ties() {
        let (r, t) = average_ranks(&[3.0, 1.0, 3.0, 2.0]);
        assert_eq!(r, vec![3.5, 1.0, 3.5, 2.0]);
        assert_eq!(t, vec![1, 1, 2]);
    }
}
