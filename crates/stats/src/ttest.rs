//! Welch's unequal-variance t-test (`scipy.stats.ttest_ind(a, b, equal_var=False)`).
//!
//! Welch (1947) with the Welch–Satterthwaite degrees of freedom (Satterthwaite 1946),
//! kept unrounded: trials of two configurations rarely have equal variances, and the
//! Student pooled test is anti-conservative when they do not and the sizes differ.

use serde::Serialize;

use crate::descriptive::{mean, variance};
use crate::error::{check_min_len, StatsError};
use crate::tdist::t_two_sided_p;

/// Result of a two-sided Welch test of mean(a) = mean(b).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WelchResult {
    /// (mean(a) − mean(b)) / se; same sign convention as scipy.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (unrounded).
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// mean(a) − mean(b).
    pub mean_diff: f64,
    /// Standard error of the difference, √(s²_a/n_a + s²_b/n_b).
    pub se: f64,
}

/// Welch–Satterthwaite degrees of freedom of a sum of independent variance terms
/// `vᵢ = s²ᵢ/nᵢ` with `dfᵢ = nᵢ − 1`: (Σvᵢ)² / Σ(vᵢ²/dfᵢ). Terms with vᵢ = 0 add
/// nothing; NaN when all are 0.
pub fn welch_satterthwaite_df(terms: &[(f64, f64)]) -> f64 {
    let total: f64 = terms.iter().map(|&(v, _)| v).sum();
    let denom: f64 = terms
        .iter()
        .filter(|&&(v, _)| v > 0.0)
        .map(|&(v, df)| v * v / df)
        .sum();
    if denom > 0.0 {
        total * total / denom
    } else {
        f64::NAN
    }
}

/// Two-sided Welch t-test. Each sample needs at least 2 finite values.
///
/// When both samples have zero variance, scipy's conventions are kept: df = 1,
/// t = ±∞ and p = 0 if the means differ, t = p = NaN if they are equal.
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Result<WelchResult, StatsError> {
    check_min_len(a, 2, "Welch's t-test")?;
    check_min_len(b, 2, "Welch's t-test")?;
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (variance(a) / na, variance(b) / nb);
    let mean_diff = mean(a) - mean(b);
    let se = (va + vb).sqrt();
    let df = welch_satterthwaite_df(&[(va, na - 1.0), (vb, nb - 1.0)]);
    let df = if df.is_nan() { 1.0 } else { df };
    let t = mean_diff / se;
    Ok(WelchResult {
        t,
        df,
        p: t_two_sided_p(t, df),
        mean_diff,
        se,
    })
}
