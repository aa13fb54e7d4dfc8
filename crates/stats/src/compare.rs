//! Comparison of a candidate configuration with a baseline, for one metric.
//!
//! Answers "is B faster than A, by how much, how sure are we" in one value: the
//! ratio of means with a Fieller interval (bootstrap when Fieller is unbounded), the
//! relative difference in %, Welch's and Mann–Whitney's p-values, and a verdict that
//! knows the metric's direction. A difference is called significant only when
//! both Welch's test rejects at `alpha` *and* the ratio interval excludes 1, so the
//! number printed and the word printed can never disagree.

use serde::Serialize;

use crate::better::Better;
use crate::bootstrap::{bootstrap_ratio_ci, BOOTSTRAP_RESAMPLES};
use crate::descriptive::{mean, variance};
use crate::error::{check_confidence, check_min_len, StatsError};
use crate::mwu::mann_whitney_u;
use crate::ratio::{fieller_ratio_ci, CiMethod};
use crate::rng::DEFAULT_SEED;
use crate::ttest::{welch_satterthwaite_df, welch_t_test};

/// Levels used by [`compare`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareOptions {
    /// Confidence level of the ratio interval (default 0.95).
    pub confidence: f64,
    /// Significance level of the test (default 0.05).
    pub alpha: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            confidence: 0.95,
            alpha: 0.05,
        }
    }
}

/// The verdict in words, aware of the metric's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly better in the metric's direction ("faster").
    Better,
    /// Significantly worse ("slower").
    Worse,
    /// Not significant.
    NoDifference,
}

impl Verdict {
    /// "faster", "slower" or "no significant difference".
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Better => "faster",
            Verdict::Worse => "slower",
            Verdict::NoDifference => "no significant difference",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Candidate versus baseline for one metric.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Direction of the metric the verdict refers to.
    pub better: Better,
    pub confidence: f64,
    pub alpha: f64,
    pub n_baseline: usize,
    pub n_candidate: usize,
    pub baseline_mean: f64,
    pub candidate_mean: f64,
    /// mean(candidate) / mean(baseline).
    pub ratio: f64,
    pub ratio_ci_low: f64,
    pub ratio_ci_high: f64,
    pub ci_method: CiMethod,
    /// (ratio − 1)·100 and its interval from the ratio interval.
    pub rel_diff_pct: f64,
    pub rel_diff_ci_low_pct: f64,
    pub rel_diff_ci_high_pct: f64,
    /// Welch's two-sided p-value, its t (candidate − baseline) and unrounded df.
    pub p_welch: f64,
    pub welch_t: f64,
    pub welch_df: f64,
    /// Mann–Whitney two-sided p-value and U of the baseline sample (scipy's order).
    pub p_mwu: f64,
    pub mwu_u: f64,
    /// Delta-method standard error of ln(ratio), √(s²_c/(n_c·m_c²) + s²_b/(n_b·m_b²)),
    /// and its Welch–Satterthwaite df (used by [`crate::geometric_mean_ratio`]).
    pub log_ratio_se: f64,
    pub log_ratio_df: f64,
    /// p_welch < alpha and the ratio interval excludes 1.
    pub significant: bool,
    pub verdict: Verdict,
    /// Size of the change in the bad direction, in % (positive), when significant
    /// and worse; else None.
    pub regression_pct: Option<f64>,
}

/// Compares `candidate` with `baseline` (each ≥ 2 finite values, baseline mean > 0).
pub fn compare(
    baseline: &[f64],
    candidate: &[f64],
    better: Better,
    opts: &CompareOptions,
) -> Result<Comparison, StatsError> {
    check_min_len(baseline, 2, "a comparison")?;
    check_min_len(candidate, 2, "a comparison")?;
    check_confidence(opts.confidence)?;
    if !(opts.alpha > 0.0 && opts.alpha < 1.0) {
        return Err(StatsError::InvalidAlpha(opts.alpha));
    }
    let (mb, mc) = (mean(baseline), mean(candidate));
    if mb <= 0.0 {
        return Err(StatsError::NonPositiveMean {
            what: "a ratio of means (baseline)",
            mean: mb,
        });
    }
    let ratio = mc / mb;
    // Fieller's interval, unless it is unbounded — or reaches below zero although every
    // value is positive (a ratio of two positive quantities cannot be negative; with a
    // very noisy numerator Fieller's set still can), where the bootstrap answers.
    let all_positive = baseline.iter().chain(candidate).all(|&x| x > 0.0);
    let fieller = fieller_ratio_ci(baseline, candidate, opts.confidence)
        .filter(|&(lo, _)| !(all_positive && lo <= 0.0));
    let (ratio_ci_low, ratio_ci_high, ci_method) = match fieller {
        Some((lo, hi)) => (lo, hi, CiMethod::Fieller),
        None => {
            let (lo, hi) = bootstrap_ratio_ci(
                baseline,
                candidate,
                opts.confidence,
                BOOTSTRAP_RESAMPLES,
                DEFAULT_SEED,
            );
            (lo, hi, CiMethod::Bootstrap)
        }
    };
    let welch = welch_t_test(candidate, baseline)?;
    let mwu = mann_whitney_u(baseline, candidate)?;
    let lb = variance(baseline) / (baseline.len() as f64 * mb * mb);
    let lc = variance(candidate) / (candidate.len() as f64 * mc * mc);
    let log_ratio_df = welch_satterthwaite_df(&[
        (lb, (baseline.len() - 1) as f64),
        (lc, (candidate.len() - 1) as f64),
    ]);

    let increased = ratio_ci_low > 1.0;
    let excludes_one = increased || ratio_ci_high < 1.0;
    let significant = welch.p < opts.alpha && excludes_one;
    let verdict = match (significant, better, increased) {
        (false, _, _) => Verdict::NoDifference,
        (true, Better::Higher, true) | (true, Better::Lower, false) => Verdict::Better,
        (true, _, _) => Verdict::Worse,
    };
    let regression_pct = (verdict == Verdict::Worse).then(|| (ratio - 1.0).abs() * 100.0);
    Ok(Comparison {
        better,
        confidence: opts.confidence,
        alpha: opts.alpha,
        n_baseline: baseline.len(),
        n_candidate: candidate.len(),
        baseline_mean: mb,
        candidate_mean: mc,
        ratio,
        ratio_ci_low,
        ratio_ci_high,
        ci_method,
        rel_diff_pct: (ratio - 1.0) * 100.0,
        rel_diff_ci_low_pct: (ratio_ci_low - 1.0) * 100.0,
        rel_diff_ci_high_pct: (ratio_ci_high - 1.0) * 100.0,
        p_welch: welch.p,
        welch_t: welch.t,
        welch_df: welch.df,
        p_mwu: mwu.p,
        mwu_u: mwu.u,
        log_ratio_se: (lb + lc).sqrt(),
        log_ratio_df,
        significant,
        verdict,
        regression_pct,
    })
}
