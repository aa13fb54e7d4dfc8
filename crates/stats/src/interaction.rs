//! Ratio of ratios for two-by-two designs (runtime × platform).
//!
//! "Is the C/Java gap larger on x86 than on ARM?" is the interaction contrast
//! (x_num/x_den)/(y_num/y_den). On the log scale it is a linear contrast of four
//! independent log-means, L = ln m₁ − ln m₂ − ln m₃ + ln m₄, whose variance is by
//! the delta method Σ s²ᵢ/(nᵢ·mᵢ²) (Casella & Berger, *Statistical Inference*,
//! §5.5.4), with Welch–Satterthwaite degrees of freedom over the four terms; the
//! interval exp(L ± t·SE) is exponentiated back to a ratio. A stratified percentile
//! bootstrap (each group resampled independently, fixed seed, 10,000 resamples) is
//! reported beside it as a check that needs no normality or delta approximation.
//! The two component ratios get the same interval as `compare` (Fieller, or the
//! bootstrap when Fieller is unbounded).

use serde::Serialize;

use crate::bootstrap::{bootstrap_ratio_ci, percentile_ci, BOOTSTRAP_RESAMPLES};
use crate::descriptive::{mean, variance};
use crate::error::{check_confidence, check_min_len, StatsError};
use crate::ratio::{fieller_ratio_ci, CiMethod, RatioCi};
use crate::rng::DEFAULT_SEED;
use crate::tdist::t_quantile;
use crate::ttest::welch_satterthwaite_df;

/// Ratio of ratios with both intervals.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interaction {
    /// x_num / x_den.
    pub ratio_x: RatioCi,
    /// y_num / y_den.
    pub ratio_y: RatioCi,
    /// ratio_x / ratio_y.
    pub ratio_of_ratios: f64,
    /// Log-scale delta-method interval.
    pub ci_low: f64,
    pub ci_high: f64,
    /// Stratified percentile bootstrap interval.
    pub bootstrap_ci_low: f64,
    pub bootstrap_ci_high: f64,
    /// Standard error of ln(ratio of ratios) and its Welch–Satterthwaite df.
    pub log_se: f64,
    pub df: f64,
}

/// Interval for a ratio of two means as `compare` computes it.
fn ratio_ci(den: &[f64], num: &[f64], confidence: f64) -> RatioCi {
    let ratio = mean(num) / mean(den);
    match fieller_ratio_ci(den, num, confidence) {
        Some((ci_low, ci_high)) => RatioCi {
            ratio,
            ci_low,
            ci_high,
            method: CiMethod::Fieller,
        },
        None => {
            let (ci_low, ci_high) =
                bootstrap_ratio_ci(den, num, confidence, BOOTSTRAP_RESAMPLES, DEFAULT_SEED);
            RatioCi {
                ratio,
                ci_low,
                ci_high,
                method: CiMethod::Bootstrap,
            }
        }
    }
}

/// (x_num/x_den) / (y_num/y_den): e.g. (C on x86 / Java on x86) / (C on ARM / Java on ARM).
///
/// Each group needs ≥ 2 finite values and a positive mean (the contrast is on the
/// log scale).
pub fn ratio_of_ratios(
    x_num: &[f64],
    x_den: &[f64],
    y_num: &[f64],
    y_den: &[f64],
    confidence: f64,
) -> Result<Interaction, StatsError> {
    check_confidence(confidence)?;
    let groups = [x_num, x_den, y_num, y_den];
    let mut means = [0.0; 4];
    let mut terms = [(0.0, 0.0); 4];
    for (i, g) in groups.iter().enumerate() {
        check_min_len(g, 2, "a ratio of ratios")?;
        let m = mean(g);
        if m <= 0.0 {
            return Err(StatsError::NonPositiveMean {
                what: "a ratio of ratios",
                mean: m,
            });
        }
        means[i] = m;
        terms[i] = (variance(g) / (g.len() as f64 * m * m), (g.len() - 1) as f64);
    }
    let log_ror = means[0].ln() - means[1].ln() - means[2].ln() + means[3].ln();
    let var: f64 = terms.iter().map(|t| t.0).sum();
    let df = welch_satterthwaite_df(&terms);
    let half = if var > 0.0 {
        t_quantile(0.5 + 0.5 * confidence, df) * var.sqrt()
    } else {
        0.0
    };
    let (bootstrap_ci_low, bootstrap_ci_high) = percentile_ci(
        &groups,
        |m| (m[0] / m[1]) / (m[2] / m[3]),
        confidence,
        BOOTSTRAP_RESAMPLES,
        DEFAULT_SEED,
    );
    Ok(Interaction {
        ratio_x: ratio_ci(x_den, x_num, confidence),
        ratio_y: ratio_ci(y_den, y_num, confidence),
        ratio_of_ratios: log_ror.exp(),
        ci_low: (log_ror - half).exp(),
        ci_high: (log_ror + half).exp(),
        bootstrap_ci_low,
        bootstrap_ci_high,
        log_se: var.sqrt(),
        df,
    })
}
