//! The bench's only link to perflab's statistics: per-config summaries and the
//! comparison of each command with the baseline, read back from the store exactly as
//! `perflab run` and `perflab compare` compute them (the analysis crate).

use std::collections::BTreeMap;

use perflab_analysis::compare::{against_baseline, Baseline};
use perflab_analysis::{Basis, CompareOptions, Outcome};
use perflab_store::{RunId, Store};
use serde_json::Value;
/// One metric of one config.
#[derive(Debug, Clone)]
pub struct Stat {
    pub unit: String,
    pub n: usize,
    pub mean: f64,
    /// Standard deviation (NaN for n = 1).
    pub sd: f64,
    /// Half-width of the t interval of the mean at `confidence` (NaN for n = 1).
    pub half: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// Summaries by config ordinal, then by metric name.
pub type Summaries = BTreeMap<u32, BTreeMap<String, Stat>>;

/// Every config's metrics summarized (ok trials only).
pub fn summaries(store: &Store, run: RunId, confidence: f64) -> anyhow::Result<Summaries> {
    let s = perflab_analysis::summary::summarize_run(store, run, confidence)?;
    Ok(s.configs
        .iter()
        .map(|c| {
            let metrics = c
                .metrics
                .iter()
                .map(|m| {
                    let st = &m.stats;
                    let stat = Stat {
                        unit: m.unit.clone(),
                        n: st.n,
                        mean: st.mean,
                        sd: st.sd,
                        half: st.ci_half_width(),
                        ci_low: st.ci_low,
                        ci_high: st.ci_high,
                        median: st.median,
                        min: st.min,
                        max: st.max,
                    };
                    (m.name.clone(), stat)
                })
                .collect();
            (c.ordinal, metrics)
        })
        .collect())
}

/// A candidate against the baseline on one metric.
#[derive(Debug, Clone)]
pub struct Versus {
    pub metric: String,
    /// The verdict's ratio (candidate / baseline: paired when the rounds allow, else
    /// the ratio of means) and its interval; NaN when not compared.
    pub ratio: f64,
    pub ratio_ci_low: f64,
    pub ratio_ci_high: f64,
    /// The p-value of the verdict's test (paired t, or Welch's).
    pub p: f64,
    /// `paired (8 rounds)` or `Welch`.
    pub basis: String,
    /// "faster", "slower", "equivalent", "undecided", "too few trials", ...
    pub verdict: String,
    /// The basis with Welch's beside it, the minimum detectable effect, warnings.
    pub notes: Vec<String>,
    /// The entry as `perflab compare --json` writes it.
    pub json: Value,
}

/// Each config (by ordinal) but the baseline, compared with the baseline on `metrics`.
pub fn versus_baseline(
    store: &Store,
    run: RunId,
    baseline: u32,
    metrics: &[String],
    confidence: f64,
    equivalence: Option<f64>,
) -> anyhow::Result<Vec<(u32, Vec<Versus>)>> {
    let mut opts = CompareOptions {
        confidence,
        ..Default::default()
    };
    if let Some(margin) = equivalence {
        opts.equivalence = margin;
    }
    let all = against_baseline(store, run, &Baseline::Ordinal(baseline), metrics, &opts)?;
    let mut out = Vec::new();
    for c in &all.candidates {
        let json = c.report.comparisons_json();
        let rows = c
            .report
            .rows
            .iter()
            .zip(json)
            .map(|(r, json)| {
                let (ratio, lo, hi, p) = match &r.outcome {
                    Outcome::Compared(c) => {
                        let (ratio, lo, hi) = c.basis_ratio();
                        let p = c.paired.filter(|_| c.basis == Basis::Paired);
                        (ratio, lo, hi, p.map_or(c.p_welch, |p| p.p_t))
                    }
                    _ => (f64::NAN, f64::NAN, f64::NAN, f64::NAN),
                };
                Versus {
                    metric: r.name.clone(),
                    ratio,
                    ratio_ci_low: lo,
                    ratio_ci_high: hi,
                    p,
                    basis: r.basis_text(),
                    verdict: r.verdict_text(),
                    notes: r.notes(),
                    json,
                }
            })
            .collect();
        out.push((c.ordinal, rows));
    }
    Ok(out)
}
