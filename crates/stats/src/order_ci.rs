//! Distribution-free confidence interval for the median from order statistics.
//!
//! The number of observations below the true median is Binomial(n, ½) whatever the
//! distribution (continuous data assumed), so the interval (x₍ₖ₎, x₍ₙ₋ₖ₊₁₎) covers
//! the median with probability P(k ≤ B ≤ n−k) = 1 − 2·P(B ≤ k−1) exactly
//! (Conover, *Practical Nonparametric Statistics*, 3rd ed., §3.2; Hahn & Meeker 1991).
//! We take the largest k (narrowest symmetric pair) whose coverage is still at least
//! the requested level and report that actual coverage, because it is always above
//! the nominal level and jumps with n. When even (min, max) falls short — n too
//! small, e.g. n ≤ 5 at 95 % — we return (min, max) with its coverage 1 − 2·0.5ⁿ.

use statrs::function::beta::beta_reg;

/// Interval for the median and its exact coverage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MedianCi {
    pub low: f64,
    pub high: f64,
    /// Exact coverage probability of the interval (≥ the requested level unless n is too small).
    pub coverage: f64,
    /// 1-based rank k of the lower order statistic; the upper one is n − k + 1.
    pub k: usize,
}

/// P(B ≤ j) for B ~ Binomial(n, ½).
pub fn binom_half_cdf(j: usize, n: usize) -> f64 {
    if j >= n {
        return 1.0;
    }
    if n <= 1000 {
        // Direct summation: 0.5ⁿ does not underflow here, and each step is exact to
        // a few ulps, so the sum keeps ~1e-14 relative accuracy.
        let mut pmf = 0.5f64.powi(n as i32);
        let mut sum = pmf;
        for i in 0..j {
            pmf *= (n - i) as f64 / (i + 1) as f64;
            sum += pmf;
        }
        sum
    } else {
        // P(B ≤ j) = I_{1/2}(n − j, j + 1)
        beta_reg((n - j) as f64, (j + 1) as f64, 0.5)
    }
}

/// Coverage of (x₍ₖ₎, x₍ₙ₋ₖ₊₁₎) for the median, 1 ≤ k ≤ n/2 (k = 0 would be ±∞).
pub fn order_stat_coverage(k: usize, n: usize) -> f64 {
    debug_assert!(k >= 1);
    1.0 - 2.0 * binom_half_cdf(k - 1, n)
}

/// Order-statistic CI for the median of a **sorted**, non-empty sample.
pub fn median_ci_sorted(sorted: &[f64], confidence: f64) -> MedianCi {
    let n = sorted.len();
    let k_max = n / 2; // largest k with x₍ₖ₎ strictly below x₍ₙ₋ₖ₊₁₎ in rank
    let cov1 = if n >= 2 {
        order_stat_coverage(1, n)
    } else {
        0.0
    };
    if k_max == 0 || cov1 < confidence {
        return MedianCi {
            low: sorted[0],
            high: sorted[n - 1],
            coverage: cov1.max(0.0),
            k: 1,
        };
    }
    // Coverage decreases in k: binary search for the largest k with coverage ≥ level.
    let (mut lo, mut hi) = (1usize, k_max); // invariant: coverage(lo) ≥ level
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if order_stat_coverage(mid, n) >= confidence {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    MedianCi {
        low: sorted[lo - 1],
        high: sorted[n - lo],
        coverage: order_stat_coverage(lo, n),
        k: lo,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summation_and_beta_paths_agree() {
        // Just below and above the switch-over, same quantity two ways.
        for &(j, n) in &[(480usize, 1000usize), (10, 30), (0, 7)] {
            let direct = binom_half_cdf(j, n);
            let beta = beta_reg((n - j) as f64, (j + 1) as f64, 0.5);
            assert!((direct - beta).abs() <= 1e-12 * direct, "{j} {n}");
        }
    }

    #[test]
    fn tiny_samples_fall_back_to_min_max() {
        let ci = median_ci_sorted(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95);
        assert_eq!((ci.low, ci.high, ci.k), (1.0, 5.0, 1));
        assert!((ci.coverage - (1.0 - 2.0 * 0.5f64.powi(5))).abs() < 1e-15);
        let one = median_ci_sorted(&[7.0], 0.95);
        assert_eq!((one.low, one.high, one.coverage), (7.0, 7.0, 0.0));
    }
}
