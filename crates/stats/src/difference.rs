//! The difference of two means with its confidence interval and p-value, as the
//! "why" block judges every quantity: counters, telemetry, a function's time per
//! operation.
//!
//! Unlike [`crate::compare`] (a ratio, which needs positive means), a difference works
//! for quantities that are 0 on one side (no retransmits in A, some in B) or can be
//! negative. Independent trials use Welch's interval, mean(c) − mean(b) ±
//! t_{1−α/2, ν}·√(s²_b/n_b + s²_c/n_c) with the Welch–Satterthwaite ν; trials paired
//! by round use the paired t interval on the per-round differences, so drift of the
//! machine cancels. The relative change is the difference over the baseline mean, and
//! its interval the difference's interval over the same mean: the baseline mean's own
//! uncertainty is not in it (it is in the p-value, which is the one judged).
//!
//! Degenerate samples follow scipy: no spread on either side gives p = 0 when the
//! means differ and p = 1 when they are equal (nothing to explain), with a point
//! interval.

use serde::Serialize;

use crate::descriptive::{mean, variance};
use crate::error::{check_confidence, check_min_len, StatsError};
use crate::tdist::{t_quantile, t_two_sided_p};
use crate::ttest::welch_satterthwaite_df;

/// mean(candidate) − mean(baseline), its interval and its two-sided p-value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Difference {
    pub baseline_mean: f64,
    pub candidate_mean: f64,
    /// mean(candidate) − mean(baseline).
    pub abs: f64,
    pub lo: f64,
    pub hi: f64,
    /// `abs` / |baseline mean| (NaN when the baseline mean is 0).
    pub rel: f64,
    pub rel_lo: f64,
    pub rel_hi: f64,
    pub p: f64,
    /// Whether the trials were paired by round.
    pub paired: bool,
}

/// Welch's difference of two independent samples (each at least 2 finite values).
pub fn mean_difference(
    base: &[f64],
    cand: &[f64],
    confidence: f64,
) -> Result<Difference, StatsError> {
    check_confidence(confidence)?;
    check_min_len(base, 2, "a difference of means")?;
    check_min_len(cand, 2, "a difference of means")?;
    let (nb, nc) = (base.len() as f64, cand.len() as f64);
    let (vb, vc) = (variance(base) / nb, variance(cand) / nc);
    let df = welch_satterthwaite_df(&[(vb, nb - 1.0), (vc, nc - 1.0)]);
    let (mb, mc) = (mean(base), mean(cand));
    Ok(finish(mb, mc, (vb + vc).sqrt(), df, confidence, false))
}

/// The paired difference: `base[i]` and `cand[i]` come from the same round (equal
/// lengths, at least 2 pairs).
pub fn paired_difference(
    base: &[f64],
    cand: &[f64],
    confidence: f64,
) -> Result<Difference, StatsError> {
    check_confidence(confidence)?;
    check_min_len(base, 2, "a paired difference")?;
    check_min_len(cand, 2, "a paired difference")?;
    if base.len() != cand.len() {
        return Err(StatsError::LengthMismatch {
            what: "a paired difference",
            left: base.len(),
            right: cand.len(),
        });
    }
    let d: Vec<f64> = base.iter().zip(cand).map(|(b, c)| c - b).collect();
    let n = d.len() as f64;
    let se = (variance(&d) / n).sqrt();
    let (mb, mc) = (mean(base), mean(cand));
    Ok(finish(mb, mc, se, n - 1.0, confidence, true))
}

fn finish(mb: f64, mc: f64, se: f64, df: f64, confidence: f64, paired: bool) -> Difference {
    let abs = mc - mb;
    let (lo, hi, p) = if se > 0.0 && df.is_finite() {
        let half = t_quantile(0.5 + 0.5 * confidence, df) * se;
        (abs - half, abs + half, t_two_sided_p(abs / se, df))
    } else {
        (abs, abs, if abs == 0.0 { 1.0 } else { 0.0 })
    };
    let scale = mb.abs();
    let rel = |x: f64| if scale > 0.0 { x / scale } else { f64::NAN };
    Difference {
        baseline_mean: mb,
        candidate_mean: mc,
        abs,
        lo,
        hi,
        rel: rel(abs),
        rel_lo: rel(lo),
        rel_hi: rel(hi),
        p,
        paired,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::welch_t_test;

    #[test]
    fn welch_difference_agrees_with_welchs_test() {
        let b = [10.0, 10.5, 9.8, 10.2, 10.1];
        let c = [11.0, 11.4, 10.9, 11.2, 11.3, 10.8];
        let d = mean_difference(&b, &c, 0.95).unwrap();
        let w = welch_t_test(&c, &b).unwrap();
        assert!((d.abs - w.mean_diff).abs() < 1e-12);
        assert!((d.p - w.p).abs() < 1e-12);
        let half = t_quantile(0.975, w.df) * w.se;
        assert!((d.hi - d.abs - half).abs() < 1e-12 && d.lo > 0.0);
        assert!((d.rel - d.abs / 10.12).abs() < 1e-12);
    }

    #[test]
    fn pairing_removes_what_the_rounds_share() {
        // A shared drift of ±5 hides a constant +1 from Welch, not from pairing.
        let b = [10.0, 15.0, 20.0, 25.0, 30.0];
        let c = [11.1, 15.9, 21.0, 26.1, 30.9];
        assert!(mean_difference(&b, &c, 0.95).unwrap().p > 0.5);
        let d = paired_difference(&b, &c, 0.95).unwrap();
        assert!(d.p < 1e-4 && d.lo > 0.8 && d.hi < 1.2, "{d:?}");
    }

    #[test]
    fn no_spread_gives_a_point_and_a_decided_p() {
        let same = mean_difference(&[0.0, 0.0], &[0.0, 0.0], 0.95).unwrap();
        assert_eq!((same.p, same.lo, same.hi), (1.0, 0.0, 0.0));
        assert!(same.rel.is_nan());
        let differ = mean_difference(&[0.0, 0.0], &[2.0, 2.0], 0.95).unwrap();
        assert_eq!(differ.p, 0.0);
        assert!(paired_difference(&[1.0, 2.0], &[1.0], 0.95).is_err());
    }
}
