//! Paired comparison of two configurations measured in the same rounds.
//!
//! When trials run in rounds (each round measures every configuration once, in a
//! shuffled order), the round is a block: slow drift of a noisy machine moves both
//! trials of a round together, so the per-round log-ratio dᵢ = ln(cᵢ/bᵢ) cancels it
//! where Welch's test, which treats the trials as independent, counts it as noise.
//! The estimate is the geometric mean ratio exp(mean d) with the paired t interval
//! exp(mean d ± t_{1−α/2, n−1}·sd(d)/√n) (Student 1908 on the log scale), and the
//! p-values of the paired t-test and of Wilcoxon's signed-rank test on d (which
//! needs no normality; see [`crate::wilcoxon_signed_rank`]).
//!
//! The log scale makes the ratio symmetric (A/B = 1/(B/A)) and keeps the interval
//! positive; it needs every value > 0, which times and rates are.

use serde::Serialize;

use crate::descriptive::{mean, variance};
use crate::error::{check_confidence, check_min_len, StatsError};
use crate::tdist::{t_quantile, t_two_sided_p};
use crate::wilcoxon::wilcoxon_signed_rank;

/// The per-round comparison of a candidate with a baseline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Paired {
    /// Rounds in which both configurations have a value.
    pub n_pairs: usize,
    /// Confidence level of [`Paired::lo`]..[`Paired::hi`].
    pub confidence: f64,
    /// exp(mean of ln(cand/base)): the geometric mean of the per-round ratios.
    pub ratio: f64,
    /// Paired t interval of the ratio.
    pub lo: f64,
    pub hi: f64,
    /// Mean and sample standard deviation (n − 1) of the per-round log-ratios.
    pub mean_log: f64,
    pub sd_log: f64,
    /// Standard error of `mean_log`, sd_log/√n, with n − 1 degrees of freedom.
    pub se_log: f64,
    /// Two-sided p-value of the paired t-test of mean_log = 0.
    pub p_t: f64,
    /// Two-sided p-value of Wilcoxon's signed-rank test on the log-ratios.
    pub p_wilcoxon: f64,
}

impl Paired {
    /// Degrees of freedom of the t interval (n − 1).
    pub fn df(&self) -> f64 {
        (self.n_pairs - 1) as f64
    }

    /// Half-width of the interval on the log scale, t·se.
    pub fn half_width_log(&self) -> f64 {
        0.5 * (self.hi.ln() - self.lo.ln())
    }
}

/// Pairs `base[i]` with `cand[i]` (the same round) and compares them on the log scale.
///
/// Both slices need the same length, at least 2 pairs, and every value finite and > 0.
pub fn paired_log_ratio(base: &[f64], cand: &[f64], confidence: f64) -> Result<Paired, StatsError> {
    check_confidence(confidence)?;
    check_min_len(base, 2, "a paired comparison")?;
    check_min_len(cand, 2, "a paired comparison")?;
    if base.len() != cand.len() {
        return Err(StatsError::LengthMismatch {
            what: "a paired comparison",
            left: base.len(),
            right: cand.len(),
        });
    }
    if let Some((index, &value)) = base.iter().chain(cand).enumerate().find(|(_, &v)| v <= 0.0) {
        return Err(StatsError::NonPositiveValue {
            what: "a paired log-ratio",
            index: index % base.len(),
            value,
        });
    }
    let d: Vec<f64> = base.iter().zip(cand).map(|(b, c)| (c / b).ln()).collect();
    let n = d.len();
    let mean_log = mean(&d);
    let sd_log = variance(&d).sqrt();
    let se_log = sd_log / (n as f64).sqrt();
    let df = (n - 1) as f64;
    let (lo_log, hi_log, p_t) = if se_log > 0.0 {
        let half = t_quantile(0.5 + 0.5 * confidence, df) * se_log;
        let p = t_two_sided_p(mean_log / se_log, df);
        (mean_log - half, mean_log + half, p)
    } else {
        // Every round gave the same ratio: no spread, the interval is a point.
        let p = if mean_log == 0.0 { 1.0 } else { 0.0 };
        (mean_log, mean_log, p)
    };
    Ok(Paired {
        n_pairs: n,
        confidence,
        ratio: mean_log.exp(),
        lo: lo_log.exp(),
        hi: hi_log.exp(),
        mean_log,
        sd_log,
        se_log,
        p_t,
        p_wilcoxon: wilcoxon_signed_rank(&d).p,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_ratio_gives_a_point_interval() {
        let b = [1.0, 2.0, 4.0];
        let c = [1.1, 2.2, 4.4];
        let p = paired_log_ratio(&b, &c, 0.95).unwrap();
        assert!((p.ratio - 1.1).abs() < 1e-12);
        assert!((p.lo - p.ratio).abs() < 1e-12 && (p.hi - p.ratio).abs() < 1e-12);
        assert_eq!(p.p_t, 0.0);
    }

    #[test]
    fn refuses_what_cannot_be_paired() {
        assert!(matches!(
            paired_log_ratio(&[1.0, 2.0], &[1.0, 2.0, 3.0], 0.95),
            Err(StatsError::LengthMismatch {
                left: 2,
                right: 3,
                ..
            })
        ));
        assert!(matches!(
            paired_log_ratio(&[1.0, 2.0], &[1.0, 0.0], 0.95),
            Err(StatsError::NonPositiveValue { index: 1, .. })
        ));
        assert!(matches!(
            paired_log_ratio(&[1.0], &[1.0], 0.95),
            Err(StatsError::TooFew { .. })
        ));
        assert!(paired_log_ratio(&[1.0, 2.0], &[1.0, 2.0], 1.0).is_err());
    }
}
