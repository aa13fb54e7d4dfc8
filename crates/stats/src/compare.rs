//! Comparison of a candidate configuration with a baseline, for one metric.
//!
//! Answers "is B faster than A, by how much, how sure are we" in one value. Two
//! estimates are computed side by side:
//! * **Welch** (trials as independent samples): the ratio of means with a Fieller
//!   interval (bootstrap when Fieller is unbounded), Welch's and Mann–Whitney's
//!   p-values. A difference is significant when Welch's test rejects at `alpha` *and*
//!   the ratio interval excludes 1, so the number and the word can never disagree.
//! * **Paired** (when the caller passes values paired by round, see
//!   [`crate::paired_log_ratio`]): the geometric mean of the per-round ratios with a
//!   paired t interval; it cancels drift that Welch counts as noise.
//!
//! The verdict's **basis** is the paired estimate from [`MIN_PAIRED_ROUNDS`] complete
//! rounds on, else Welch's. Its interval decides: it excludes 1 → better/worse in the
//! metric's direction; it lies inside the equivalence margin → `equivalent`; neither
//! → `undecided` (no significant difference, and too wide to call equivalent). Every
//! comparison also carries its minimum detectable effect ([`crate::mde`]).

use serde::Serialize;

use crate::better::Better;
use crate::bootstrap::{bootstrap_ratio_ci, BOOTSTRAP_RESAMPLES};
use crate::descriptive::{mean, variance};
use crate::error::{check_confidence, check_min_len, StatsError};
use crate::kind::MetricKind;
use crate::mde::{mde_pct, rounds_needed, Design, DEFAULT_POWER};
use crate::mwu::mann_whitney_u;
use crate::paired::{paired_log_ratio, Paired};
use crate::ratio::{fieller_ratio_ci, CiMethod};
use crate::rng::DEFAULT_SEED;
use crate::ttest::{welch_satterthwaite_df, welch_t_test};

/// Complete rounds from which the paired estimate is the verdict's basis.
pub const MIN_PAIRED_ROUNDS: usize = 5;

/// Default equivalence margin: ±2 %.
pub const DEFAULT_EQUIVALENCE: f64 = 0.02;

/// Levels used by [`compare`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareOptions {
    /// Confidence level of the ratio interval (default 0.95).
    pub confidence: f64,
    /// Significance level of the test (default 0.05).
    pub alpha: f64,
    /// Equivalence margin as a fraction (default 0.02: a ratio interval inside
    /// [0.98, 1.02] is `equivalent`).
    pub equivalence: f64,
    /// Power at which the minimum detectable effect is stated (default 0.8).
    pub power: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            confidence: 0.95,
            alpha: 0.05,
            equivalence: DEFAULT_EQUIVALENCE,
            power: DEFAULT_POWER,
        }
    }
}

/// The verdict, aware of the metric's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly better in the metric's direction ("faster" / "better").
    Better,
    /// Significantly worse ("slower" / "worse").
    Worse,
    /// Not significant, and the interval lies inside the equivalence margin.
    Equivalent,
    /// Not significant, and the interval is too wide to call equivalent.
    Undecided,
}

impl Verdict {
    /// The word for a time or a rate: "faster", "slower", "equivalent", "undecided".
    pub fn as_str(&self) -> &'static str {
        self.word(MetricKind::Time)
    }

    /// The word for a metric of this kind: "faster"/"slower" only for times and
    /// rates, "better"/"worse" otherwise.
    pub fn word(&self, kind: MetricKind) -> &'static str {
        match (self, kind.is_speed()) {
            (Verdict::Better, true) => "faster",
            (Verdict::Worse, true) => "slower",
            (Verdict::Better, false) => "better",
            (Verdict::Worse, false) => "worse",
            (Verdict::Equivalent, _) => "equivalent",
            (Verdict::Undecided, _) => "undecided",
        }
    }

    /// Whether the interval excluded 1.
    pub fn is_significant(&self) -> bool {
        matches!(self, Verdict::Better | Verdict::Worse)
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which estimate the verdict rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Ratio of means, Fieller interval, Welch's test (independent trials).
    Welch,
    /// Per-round log-ratios, paired t interval.
    Paired,
}

/// Candidate versus baseline for one metric.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Direction of the metric the verdict refers to.
    pub better: Better,
    /// What the metric measures (picks the verdict's word); [`MetricKind::Time`]
    /// unless the caller knows the unit ([`crate::compare_metric`] does).
    pub kind: MetricKind,
    pub confidence: f64,
    pub alpha: f64,
    pub n_baseline: usize,
    pub n_candidate: usize,
    pub baseline_mean: f64,
    pub candidate_mean: f64,
    /// mean(candidate) / mean(baseline) (Welch's estimate).
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
    /// The per-round comparison, when the caller paired the trials (≥ 2 rounds).
    pub paired: Option<Paired>,
    /// The estimate the verdict rests on.
    pub basis: Basis,
    /// The basis interval excludes 1 (and, for Welch, p_welch < alpha).
    pub significant: bool,
    pub verdict: Verdict,
    /// Size of the change in the bad direction, in % (positive), when significant
    /// and worse; else None.
    pub regression_pct: Option<f64>,
    /// Equivalence margin in % (the `equivalent` verdict's bound).
    pub equivalence_pct: f64,
    /// Effect (±%) the basis could have detected at [`CompareOptions::power`]; NaN when
    /// the spread is unknown.
    pub mde_pct: f64,
    /// Rounds (per config) a ±1 % effect would need; None when out of reach.
    pub rounds_for_1pct: Option<u64>,
}

impl Comparison {
    /// The verdict's estimate: (ratio, low, high) of the basis.
    pub fn basis_ratio(&self) -> (f64, f64, f64) {
        match (self.basis, &self.paired) {
            (Basis::Paired, Some(p)) => (p.ratio, p.lo, p.hi),
            _ => (self.ratio, self.ratio_ci_low, self.ratio_ci_high),
        }
    }

    /// The verdict in the metric's words.
    pub fn verdict_word(&self) -> &'static str {
        self.verdict.word(self.kind)
    }

    /// Why the figure says little, when it does: fewer than 3 values on a side, no
    /// interval at all, or an interval wider than the ratio itself.
    pub fn says_little(&self) -> Option<String> {
        let n = self.n_baseline.min(self.n_candidate);
        let (r, lo, hi) = self.basis_ratio();
        if n < 3 {
            Some(format!(
                "only {n} values per side: the interval says little (use at least 3, better 10)"
            ))
        } else if !(lo.is_finite() && hi.is_finite()) {
            Some("no interval could be computed: the figure says little".into())
        } else if hi - lo > r {
            Some("the interval is wider than the ratio itself: the figure says little".into())
        } else {
            None
        }
    }
}

/// Compares `candidate` with `baseline` (each ≥ 2 finite values, baseline mean > 0)
/// as independent samples.
pub fn compare(
    baseline: &[f64],
    candidate: &[f64],
    better: Better,
    opts: &CompareOptions,
) -> Result<Comparison, StatsError> {
    compare_rounds(baseline, candidate, None, better, opts)
}

/// As [`compare`], and with `rounds` — the values of both sides paired by round
/// (`(base, cand)`, same length) — the paired estimate, the verdict's basis from
/// [`MIN_PAIRED_ROUNDS`] on. Pairs that the paired analysis refuses (a value ≤ 0)
/// leave the comparison on Welch's basis.
pub fn compare_rounds(
    baseline: &[f64],
    candidate: &[f64],
    rounds: Option<(&[f64], &[f64])>,
    better: Better,
    opts: &CompareOptions,
) -> Result<Comparison, StatsError> {
    check_options(opts)?;
    let w = welch_part(baseline, candidate, opts)?;
    let paired = rounds
        .filter(|(b, _)| b.len() >= 2)
        .and_then(|(b, c)| paired_log_ratio(b, c, opts.confidence).ok());
    let basis = match &paired {
        Some(p) if p.n_pairs >= MIN_PAIRED_ROUNDS => Basis::Paired,
        _ => Basis::Welch,
    };
    let (mde, rounds_for_1pct) =
        detectable(&w, paired.as_ref().filter(|_| basis == Basis::Paired), opts);
    let mut c = Comparison {
        better,
        kind: MetricKind::Time,
        confidence: opts.confidence,
        alpha: opts.alpha,
        n_baseline: baseline.len(),
        n_candidate: candidate.len(),
        baseline_mean: w.mb,
        candidate_mean: w.mc,
        ratio: w.mc / w.mb,
        ratio_ci_low: w.lo,
        ratio_ci_high: w.hi,
        ci_method: w.method,
        rel_diff_pct: (w.mc / w.mb - 1.0) * 100.0,
        rel_diff_ci_low_pct: (w.lo - 1.0) * 100.0,
        rel_diff_ci_high_pct: (w.hi - 1.0) * 100.0,
        p_welch: w.p,
        welch_t: w.t,
        welch_df: w.df,
        p_mwu: w.p_mwu,
        mwu_u: w.mwu_u,
        log_ratio_se: w.log_se,
        log_ratio_df: w.log_df,
        paired,
        basis,
        significant: false,
        verdict: Verdict::Undecided,
        regression_pct: None,
        equivalence_pct: opts.equivalence * 100.0,
        mde_pct: mde,
        rounds_for_1pct,
    };
    decide(&mut c, opts);
    Ok(c)
}

fn check_options(opts: &CompareOptions) -> Result<(), StatsError> {
    check_confidence(opts.confidence)?;
    if !(opts.alpha > 0.0 && opts.alpha < 1.0) {
        return Err(StatsError::InvalidAlpha(opts.alpha));
    }
    if !(opts.power > 0.0 && opts.power < 1.0) {
        return Err(StatsError::InvalidPower(opts.power));
    }
    Ok(())
}

/// Welch's side of a comparison: means, ratio interval, tests, log-ratio se.
struct WelchPart {
    mb: f64,
    mc: f64,
    lo: f64,
    hi: f64,
    method: CiMethod,
    p: f64,
    t: f64,
    df: f64,
    p_mwu: f64,
    mwu_u: f64,
    log_se: f64,
    log_df: f64,
    /// √(s²_b/m_b² + s²_c/m_c²): the log-ratio spread one more value per side adds.
    sd_round: f64,
}

fn welch_part(
    baseline: &[f64],
    candidate: &[f64],
    opts: &CompareOptions,
) -> Result<WelchPart, StatsError> {
    check_min_len(baseline, 2, "a comparison")?;
    check_min_len(candidate, 2, "a comparison")?;
    let (mb, mc) = (mean(baseline), mean(candidate));
    if mb <= 0.0 {
        return Err(StatsError::NonPositiveMean {
            what: "a ratio of means (baseline)",
            mean: mb,
        });
    }
    // Fieller's interval, unless it is unbounded — or reaches below zero although every
    // value is positive (a ratio of two positive quantities cannot be negative; with a
    // very noisy numerator Fieller's set still can), where the bootstrap answers.
    let all_positive = baseline.iter().chain(candidate).all(|&x| x > 0.0);
    let fieller = fieller_ratio_ci(baseline, candidate, opts.confidence)
        .filter(|&(lo, _)| !(all_positive && lo <= 0.0));
    let (lo, hi, method) = match fieller {
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
    let log_df = welch_satterthwaite_df(&[
        (lb, (baseline.len() - 1) as f64),
        (lc, (candidate.len() - 1) as f64),
    ]);
    Ok(WelchPart {
        mb,
        mc,
        lo,
        hi,
        method,
        p: welch.p,
        t: welch.t,
        df: welch.df,
        p_mwu: mwu.p,
        mwu_u: mwu.u,
        log_se: (lb + lc).sqrt(),
        log_df,
        sd_round: (lb * baseline.len() as f64 + lc * candidate.len() as f64).sqrt(),
    })
}

/// The MDE of the basis and the rounds a ±1 % effect would need.
fn detectable(w: &WelchPart, paired: Option<&Paired>, opts: &CompareOptions) -> (f64, Option<u64>) {
    let (alpha, power) = (opts.alpha, opts.power);
    match paired {
        Some(p) => (
            mde_pct(p.se_log, p.df(), alpha, power),
            rounds_needed(p.sd_log, 1.0, Design::Paired, alpha, power),
        ),
        None => {
            // Welch: both sides grow together; one round adds a value to each.
            let df = if w.log_df.is_nan() { 1.0 } else { w.log_df };
            (
                mde_pct(w.log_se, df, alpha, power),
                rounds_needed(w.sd_round, 1.0, Design::Independent, alpha, power),
            )
        }
    }
}

/// Significance, verdict and regression size from the basis interval.
fn decide(c: &mut Comparison, opts: &CompareOptions) {
    let (r, lo, hi) = c.basis_ratio();
    let increased = lo > 1.0;
    let excludes_one = increased || hi < 1.0;
    let test_rejects = match (c.basis, &c.paired) {
        (Basis::Paired, Some(p)) => p.p_t < opts.alpha,
        _ => c.p_welch < opts.alpha,
    };
    c.significant = test_rejects && excludes_one;
    let inside_margin = lo >= 1.0 - opts.equivalence && hi <= 1.0 + opts.equivalence;
    c.verdict = match (c.significant, c.better, increased) {
        (false, _, _) if inside_margin => Verdict::Equivalent,
        (false, _, _) => Verdict::Undecided,
        (true, Better::Higher, true) | (true, Better::Lower, false) => Verdict::Better,
        (true, _, _) => Verdict::Worse,
    };
    c.regression_pct = (c.verdict == Verdict::Worse).then(|| (r - 1.0).abs() * 100.0);
}
