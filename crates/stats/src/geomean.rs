//! Geometric mean of several ratios (one per metric or benchmark) with a CI.
//!
//! The geometric mean is the only mean of ratios that does not depend on which
//! configuration is called the baseline (Fleming & Wallace, "How not to lie with
//! statistics: the correct way to summarize benchmark results", CACM 1986). Its
//! interval is computed on the log scale as a *fixed-effects* combination: the
//! question is "is B faster on this suite", so the uncertainty is the measurement
//! uncertainty of each ratio (delta-method SE of ln ratio), not the spread between
//! benchmarks. ln G = mean(ln rᵢ), SE² = Σ SEᵢ² / k², df by Welch–Satterthwaite,
//! CI = exp(ln G ± t·SE). It treats the metrics as independent, which they are not
//! when measured in the same trials; read it as indicative.

use serde::Serialize;

use crate::compare::Comparison;
use crate::tdist::t_quantile;
use crate::ttest::welch_satterthwaite_df;

/// Geometric mean ratio with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GeoMean {
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub n_metrics: usize,
    /// Welch–Satterthwaite degrees of freedom used for the t quantile.
    pub df: f64,
}

/// Geometric mean of the comparisons' ratios with a `confidence` interval.
///
/// `None` when the slice is empty, the confidence is outside (0, 1), a ratio is not
/// positive and finite, or the comparisons mix metric directions (a geometric mean
/// of "higher is better" and "lower is better" ratios means nothing).
pub fn geometric_mean_ratio(comparisons: &[&Comparison], confidence: f64) -> Option<GeoMean> {
    let first = comparisons.first()?;
    if !(confidence > 0.0 && confidence < 1.0)
        || comparisons
            .iter()
            .any(|c| c.better != first.better || !(c.ratio > 0.0 && c.ratio.is_finite()))
    {
        return None;
    }
    let k = comparisons.len() as f64;
    let log_mean = comparisons.iter().map(|c| c.ratio.ln()).sum::<f64>() / k;
    let terms: Vec<(f64, f64)> = comparisons
        .iter()
        .map(|c| (c.log_ratio_se * c.log_ratio_se / (k * k), c.log_ratio_df))
        .collect();
    let var: f64 = terms.iter().map(|t| t.0).sum();
    if !var.is_finite() {
        return None;
    }
    let ratio = log_mean.exp();
    if var == 0.0 {
        return Some(GeoMean {
            ratio,
            ci_low: ratio,
            ci_high: ratio,
            n_metrics: comparisons.len(),
            df: f64::NAN,
        });
    }
    let df = welch_satterthwaite_df(&terms);
    let half = t_quantile(0.5 + 0.5 * confidence, df) * var.sqrt();
    Some(GeoMean {
        ratio,
        ci_low: (log_mean - half).exp(),
        ci_high: (log_mean + half).exp(),
        n_metrics: comparisons.len(),
        df,
    })
}
