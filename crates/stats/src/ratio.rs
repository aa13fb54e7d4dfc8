//! Confidence interval for a ratio of two independent means (Fieller's theorem).
//!
//! "B is 1.23× A" needs an interval for mean(B)/mean(A), not two intervals side by
//! side. Fieller (1954) inverts the t statistic of the linear contrast
//! ȳ − θ·x̄, which is exactly normal-theory distributed for every θ, instead of
//! linearising the ratio: the interval is the set of θ with
//! (ȳ − θx̄)² ≤ t²·(v_y + θ²v_x),  v = s²/n, covariance 0 (independent trials).
//! Its degrees of freedom are the Welch–Satterthwaite df of that contrast at θ = the
//! point estimate (the two groups have their own variances; see
//! docs/methodology.md). When g = t²v_x/x̄² ≥ 1 the denominator mean is not
//! significantly different from 0 and the set is unbounded: `None`, and callers
//! fall back to the bootstrap ([`crate::bootstrap_ratio_ci`]).

use serde::Serialize;

use crate::descriptive::{mean, variance};
use crate::tdist::t_quantile;
use crate::ttest::welch_satterthwaite_df;

/// How a ratio interval was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CiMethod {
    /// Fieller's theorem (normal theory, Welch–Satterthwaite df).
    Fieller,
    /// Percentile bootstrap (Fieller unbounded).
    Bootstrap,
}

/// A ratio with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RatioCi {
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub method: CiMethod,
}

/// Fieller interval with the ingredients it was computed from (for tests and docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FiellerParts {
    pub low: f64,
    pub high: f64,
    pub df: f64,
    pub g: f64,
}

/// Fieller's interval for mean(candidate)/mean(baseline); `None` when unbounded
/// (g ≥ 1) or undefined (a sample with fewer than 2 values, a zero baseline mean,
/// a confidence outside (0, 1)).
pub fn fieller_ratio_ci(
    baseline: &[f64],
    candidate: &[f64],
    confidence: f64,
) -> Option<(f64, f64)> {
    fieller_parts(baseline, candidate, confidence).map(|f| (f.low, f.high))
}

pub(crate) fn fieller_parts(
    baseline: &[f64],
    candidate: &[f64],
    confidence: f64,
) -> Option<FiellerParts> {
    if baseline.len() < 2 || candidate.len() < 2 || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let (x, y) = (mean(baseline), mean(candidate));
    if x == 0.0 || !x.is_finite() || !y.is_finite() {
        return None;
    }
    let vx = variance(baseline) / baseline.len() as f64;
    let vy = variance(candidate) / candidate.len() as f64;
    let rho = y / x;
    let contrast_var = vy + rho * rho * vx;
    if contrast_var == 0.0 {
        // Both samples constant: the ratio is known exactly.
        return Some(FiellerParts {
            low: rho,
            high: rho,
            df: f64::NAN,
            g: 0.0,
        });
    }
    let df = welch_satterthwaite_df(&[
        (vy, (candidate.len() - 1) as f64),
        (rho * rho * vx, (baseline.len() - 1) as f64),
    ]);
    let t = t_quantile(0.5 + 0.5 * confidence, df);
    let g = t * t * vx / (x * x);
    if g >= 1.0 || g.is_nan() {
        return None;
    }
    let half = t / x.abs() * (vy * (1.0 - g) + rho * rho * vx).sqrt();
    Some(FiellerParts {
        low: (rho - half) / (1.0 - g),
        high: (rho + half) / (1.0 - g),
        df,
        g,
    })
}
