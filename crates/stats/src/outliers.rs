//! Outlier flags by the modified z-score (median and MAD).
//!
//! Rule (Iglewicz & Hoaglin, *How to Detect and Handle Outliers*, 1993): with
//! M = median and MAD = median |xᵢ − M|, flag xᵢ when |xᵢ − M| / (1.4826·MAD) > 3.5
//! (1.4826 ≈ 1/Φ⁻¹(¾) makes the MAD a consistent estimate of σ for normal data).
//! The median and MAD are robust, so one wild trial cannot hide itself by inflating
//! the spread the way it would with mean ± 3 sd.
//!
//! When MAD = 0 (more than half the values are identical, common with integer
//! counters) the scale is taken from the mean absolute deviation around the median
//! times √(π/2) ≈ 1.2533 (also a consistent σ estimate for normal data; the same
//! fallback IBM SPSS and others use). If that is 0 too, all values are equal and
//! nothing is flagged. Flags are reported, never used to drop data.

/// Threshold on the modified z-score.
pub const MAD_THRESHOLD: f64 = 3.5;
/// 1/Φ⁻¹(0.75): scales the MAD to σ for normal data.
pub const MAD_SCALE: f64 = 1.4826;
/// √(π/2): scales the mean absolute deviation to σ for normal data.
pub const MEAN_AD_SCALE: f64 = 1.253_314_137_315_500_3;

/// Indices (in the caller's order) of the values flagged by the modified z-score rule.
/// `median` is the sample median; the sample must be non-empty and finite.
pub fn mad_outliers(data: &[f64], median: f64) -> Vec<usize> {
    let mut dev: Vec<f64> = data.iter().map(|x| (x - median).abs()).collect();
    dev.sort_by(f64::total_cmp);
    let mad = crate::descriptive::median_sorted(&dev);
    let scale = if mad > 0.0 {
        MAD_SCALE * mad
    } else {
        MEAN_AD_SCALE * crate::descriptive::mean(&dev)
    };
    if scale <= 0.0 || !scale.is_finite() {
        return Vec::new();
    }
    data.iter()
        .enumerate()
        .filter(|(_, x)| (*x - median).abs() / scale > MAD_THRESHOLD)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_a_wild_value_but_not_the_bulk() {
        let d = [10.0, 10.2, 9.9, 10.1, 10.0, 14.0];
        assert_eq!(mad_outliers(&d, 10.05), vec![5]);
    }

    #[test]
    fn zero_mad_uses_mean_absolute_deviation() {
        let d = [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 100.0];
        assert_eq!(mad_outliers(&d, 5.0), vec![6]);
        assert!(mad_outliers(&[3.0; 4], 3.0).is_empty());
    }
}
