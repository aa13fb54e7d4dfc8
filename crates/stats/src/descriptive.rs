//! Elementary descriptive statistics shared by the other modules.
//!
//! Kept separate so that every procedure computes the mean, the sample variance and
//! the quantiles in exactly one way (two-pass variance, numpy's linear quantile).

/// Arithmetic mean (the caller guarantees a non-empty sample).
pub(crate) fn mean(data: &[f64]) -> f64 {
    data.iter().sum::<f64>() / data.len() as f64
}

/// Sample variance with n − 1 in the denominator (two-pass, so it does not lose
/// precision on data with a large mean and a small spread). NaN when n < 2.
pub(crate) fn variance(data: &[f64]) -> f64 {
    if data.len() < 2 {
        return f64::NAN;
    }
    let m = mean(data);
    let ss: f64 = data.iter().map(|x| (x - m) * (x - m)).sum();
    ss / (data.len() - 1) as f64
}

/// A sorted copy (the caller guarantees finite values).
pub(crate) fn sorted(data: &[f64]) -> Vec<f64> {
    let mut v = data.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// Median of an already sorted, non-empty slice.
pub(crate) fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
    }
}

/// Quantile of a sorted, non-empty slice, linear interpolation between order
/// statistics (numpy's default `method="linear"`, Hyndman & Fan type 7).
pub(crate) fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    let frac = h - lo as f64;
    sorted[lo] + frac * (sorted[hi] - sorted[lo])
}
